// Small pieces the thread pages share: state badges, icons and the file picker.
import type { PropsWithChildren } from '@kitajs/html'
import { filesPerRequest, imageLimits, mib, pdfLimits, textLimits } from '../../attachments/limits'
import type { ThreadsModel } from '../model'

const stateLabels: Record<ThreadsModel.thread['state'], string> = {
  ready: 'Ready',
  waiting: 'Waiting',
  active: 'Answering',
  error: 'Error',
  interrupted: 'Stopping',
}

export function StateBadge({ state }: { state: ThreadsModel.thread['state'] }): JSX.Element {
  return (
    <span class={`badge state-${state}`} safe>
      {stateLabels[state]}
    </span>
  )
}

export function threadTitle(thread: Pick<ThreadsModel.thread, 'name'>): string {
  return thread.name?.trim() ? thread.name : 'Untitled thread'
}

// Feather's thumbs icons (MIT), inline so that the page loads nothing else and they follow the text colour.
export function ThumbIcon({ direction }: { direction: 'up' | 'down' }): JSX.Element {
  const path =
    direction === 'up'
      ? 'M14 9V5a3 3 0 0 0-3-3l-4 9v11h11.28a2 2 0 0 0 2-1.7l1.38-9a2 2 0 0 0-2-2.3zM7 22H4a2 2 0 0 1-2-2v-7a2 2 0 0 1 2-2h3'
      : 'M10 15v4a3 3 0 0 0 3 3l4-9V2H5.72a2 2 0 0 0-2 1.7l-1.38 9a2 2 0 0 0 2 2.3zm7-13h2.67A2.31 2.31 0 0 1 22 4v7a2.31 2.31 0 0 1-2.33 2H17'
  return (
    <Icon size={18}>
      <path d={path} />
    </Icon>
  )
}

/** Feather's icons (MIT), inline so that the page loads nothing else and they follow the text colour. */
export function Icon({ children, size = 20 }: PropsWithChildren<{ size?: number }>): JSX.Element {
  return (
    <svg
      aria-hidden="true"
      width={String(size)}
      height={String(size)}
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      stroke-width="2"
      stroke-linecap="round"
      stroke-linejoin="round"
    >
      {children}
    </svg>
  )
}

// Feather's edit-2 and rotate-ccw (MIT).
export function EditIcon(): JSX.Element {
  return (
    <Icon size={18}>
      <path d="M17 3a2.83 2.83 0 1 1 4 4L7.5 20.5 2 22l1.5-5.5L17 3z" />
    </Icon>
  )
}

export function RegenerateIcon(): JSX.Element {
  return (
    <Icon size={18}>
      <path d="M1 4v6h6" />
      <path d="M3.51 15a9 9 0 1 0 2.13-9.36L1 10" />
    </Icon>
  )
}

/** What the file inputs accept, as the upload rules say (the server decides from the bytes all the same). */
export const acceptedFiles = [
  ...imageLimits.mediaTypes,
  ...pdfLimits.mediaTypes,
  ...textLimits.mediaTypes,
  '.md',
  '.markdown',
  '.csv',
  '.txt',
].join(',')

export const filesHint =
  `Up to ${filesPerRequest} files: JPEG, PNG, GIF or WebP images up to ${mib(imageLimits.maxBytes)}, ` +
  `PDFs up to ${mib(pdfLimits.maxBytes)} and ${pdfLimits.maxPages} pages, ` +
  `text, Markdown or CSV up to ${mib(textLimits.maxBytes)}.`

/**
 * Said wherever a conversation starts while the development echo responder answers: it repeats messages back,
 * and an administrator is told what connects a real model.
 */
export function EchoNotice({ model, isAdmin }: { model: { provider: string }; isAdmin: boolean }): JSX.Element {
  if (model.provider !== 'echo') return ''
  return (
    <p class="echo-notice" role="note">
      No model is connected: answers come from the development <strong>echo responder</strong>, which repeats your
      message back.{' '}
      {isAdmin ? (
        <>
          To connect one, set <code>LLM_PROVIDER</code> (<code>openai</code> or <code>anthropic</code>),{' '}
          <code>LLM_MODEL</code> and <code>LLM_API_KEY</code> or <code>LLM_BASE_URL</code>, then restart; see the
          configuration reference.
        </>
      ) : (
        'An administrator can connect one.'
      )}
    </p>
  )
}
