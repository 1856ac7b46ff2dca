// Small pieces the settings and administration pages share: the CSRF field, notices and alerts, one-time
// secrets with their copy button, timestamps, section navigation and safe links and images. Every dynamic
// value is escaped here, so pages can pass user text straight in.
import { escapeHtml, type PropsWithChildren } from '@kitajs/html'

/** The one script of the pages (CSP `script-src 'self'`), included only where a secret can be copied. */
export const copyScriptPath = '/assets/copy.js'

export function CsrfField({ token }: { token: string }): JSX.Element {
  return <input type="hidden" name="csrf" value={escapeHtml(token)} />
}

/** A confirmation of what just happened, announced politely to screen readers. */
export function Notice({ text }: { text: string | null }): JSX.Element {
  if (!text) return ''
  return (
    <p class="notice" role="status" safe>
      {text}
    </p>
  )
}

/** What went wrong with the last form, announced at once. */
export function ErrorAlert({ text }: { text: string | null | undefined }): JSX.Element {
  if (!text) return ''
  return (
    <p class="alert" role="alert" safe>
      {text}
    </p>
  )
}

export interface OneTimeSecretProps {
  /** Unique on the page: the copy button finds the secret by it. */
  id: string
  title: string
  value: string
}

/**
 * A secret shown once. Without JavaScript one click selects the whole value (CSS `user-select: all`); with it,
 * the local copy script reveals the Copy button. The value never goes into a URL or a cookie.
 */
export function OneTimeSecret({ id, title, value, children }: PropsWithChildren<OneTimeSecretProps>): JSX.Element {
  const labelId = `${id}-label`
  return (
    <section class="secret-panel" aria-labelledby={escapeHtml(labelId)}>
      <h2 id={escapeHtml(labelId)} safe>
        {title}
      </h2>
      <p>Copy it now: it is shown only this once and cannot be recovered.</p>
      <div class="secret-row">
        <code id={escapeHtml(id)} class="secret" tabindex="0" safe>
          {value}
        </code>
        <button type="button" class="copy" data-copy={escapeHtml(id)} hidden>
          Copy
        </button>
      </div>
      {children}
      <script src={copyScriptPath} defer></script>
    </section>
  )
}

const dateTime = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' })

/** In UTC, to the minute: the server cannot know the reader's time zone; the datetime attribute is exact. */
export function formatTime(ms: number): string {
  return `${dateTime.format(new Date(ms))} UTC`
}

/** A moment as epoch milliseconds or an ISO string (as the settings services return it); null shows `never`. */
export function Time({ at, never = 'Never' }: { at: number | string | null; never?: string }): JSX.Element {
  if (at === null)
    return (
      <span class="muted" safe>
        {never}
      </span>
    )
  const ms = typeof at === 'string' ? Date.parse(at) : at
  return (
    <time datetime={new Date(ms).toISOString()} safe>
      {formatTime(ms)}
    </time>
  )
}

export interface NavItem {
  href: string
  label: string
}

/** The tabs of a settings or administration area; the current one is marked for screen readers. */
export function SectionNav({ label, items, current }: { label: string; items: NavItem[]; current: string }) {
  return (
    <nav class="section-nav" aria-label={escapeHtml(label)}>
      <ul>
        {items.map((item) => (
          <li>
            <a href={escapeHtml(item.href)} aria-current={item.href === current ? 'page' : undefined} safe>
              {item.label}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  )
}

/** A table that scrolls sideways on a narrow screen, reachable and named for keyboard and screen readers. */
export function TableRegion({ label, children }: PropsWithChildren<{ label: string }>): JSX.Element {
  return (
    <section class="table-scroll" aria-label={escapeHtml(label)} tabindex="0">
      {children}
    </section>
  )
}

/**
 * Only https images and images from this server are ever shown, whatever a client registered: other schemes
 * (`javascript:`, `data:`, plain http) are dropped rather than trusted to the Content-Security-Policy alone.
 */
export function safeImageSource(uri: string | null, publicUrl: string): string | null {
  if (!uri || !URL.canParse(uri, publicUrl)) return null
  const url = new URL(uri, publicUrl)
  if (url.protocol === 'https:') return url.href
  return url.origin === new URL(publicUrl).origin ? url.pathname + url.search : null
}

/** Links to a client's pages: web pages only. */
export function safeLinkHref(uri: string | null): string | null {
  if (!uri || !URL.canParse(uri)) return null
  const url = new URL(uri)
  return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null
}
