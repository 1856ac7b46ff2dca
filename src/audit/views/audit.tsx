// Administration → Audit: the organization's audit log, newest first, filtered by a GET form (actor, action, target,
// time) and paged as the API is; the same filters download every matching event as CSV or JSON Lines. Below it, how
// long the events are kept.
import { escapeHtml } from '@kitajs/html'
import { auditActions } from '../../shared/audit'
import { CsrfField, ErrorAlert, Notice, TableRegion, Time } from '../../web/components'
import { AdminFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'
import type { AuditModel } from '../model'
import { auditRetentionRange, type FilterQuery } from '../service'

export const adminAuditPath = '/admin/audit'

/** Actions grouped by family for the filter's list: "every sign-in event" and then each one. */
function actionOptions(): { family: string; actions: string[] }[] {
  const families = new Map<string, string[]>()
  for (const action of Object.keys(auditActions)) {
    const family = action.includes('.') ? action.slice(0, action.indexOf('.')) : action
    families.set(family, [...(families.get(family) ?? []), action])
  }
  return [...families].map(([family, actions]) => ({ family, actions }))
}

export interface AuditPageProps {
  viewer: Viewer
  /** The filters as typed, for the form and the links. */
  query: FilterQuery
  /** The page of events, or null when the filters were refused (`error` says why). */
  page: AuditModel.eventList | null
  /** Whether this page started after another (a link back to the newest is shown). */
  paged: boolean
  /** A person's email by their user ID, for actors and targets; undefined for someone no longer a member. */
  emailOf: (userId: number) => string | undefined
  retentionDays: number
  notice?: string | null
  error?: string | null
  /** The retention form's own refusal, with what was typed. */
  retention?: { error: string; entered: string }
}

/** The filters as a query string, with `extra` (the page's cursor), for links that keep them. */
function withFilters(query: FilterQuery, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries({ ...query, ...extra })) if (value) params.set(name, value)
  const text = params.toString()
  return text ? `?${text}` : ''
}

function ActorCell({ event, emailOf }: { event: AuditModel.event; emailOf: AuditPageProps['emailOf'] }) {
  const { actor } = event
  if (actor.user_id === null) {
    return (
      <span safe>
        {actor.kind === 'oauth_client' ? `OAuth client ${actor.id ?? ''}` : actor.kind.replace('_', ' ')}
      </span>
    )
  }
  const who = emailOf(actor.user_id) ?? `Former member ${actor.user_id}`
  return (
    <>
      <span safe>{who}</span>
      <br />
      <span class="muted" safe>{`${actor.kind.replaceAll('_', ' ')}${actor.id === null ? '' : ` ${actor.id}`}`}</span>
    </>
  )
}

function targetText(event: AuditModel.event, emailOf: AuditPageProps['emailOf']): string {
  const { target } = event
  if (!target) return ''
  if (target.kind === 'user') return emailOf(Number(target.id)) ?? `user ${target.id}`
  return `${target.kind.replaceAll('_', ' ')} ${target.id}`
}

function detailText(detail: Record<string, unknown>): string {
  return Object.entries(detail)
    .map(([key, value]) => `${key}: ${Array.isArray(value) ? value.join(' ') : String(value)}`)
    .join('; ')
}

function Filters({ query }: { query: FilterQuery }): JSX.Element {
  return (
    <form method="get" action={adminAuditPath} class="card audit-filters">
      <div class="field">
        <label for="audit-actor">Actor</label>
        <input
          id="audit-actor"
          name="actor"
          type="text"
          value={escapeHtml(query.actor ?? '')}
          placeholder="email, ID, system"
          aria-describedby="audit-actor-help"
        />
        <span id="audit-actor-help" class="visually-hidden">
          A member's email or user ID, system for the operator and the upkeep, or anonymous.
        </span>
      </div>
      <div class="field">
        <label for="audit-action">Action</label>
        <select id="audit-action" name="action">
          <option value="" selected={!query.action}>
            Every action
          </option>
          {actionOptions().map(({ family, actions }) => (
            <optgroup label={escapeHtml(family)}>
              {actions.length > 1 ? (
                <option value={escapeHtml(`${family}.*`)} selected={query.action === `${family}.*`} safe>
                  {`Every ${family} action`}
                </option>
              ) : (
                ''
              )}
              {actions.map((action) => (
                <option value={escapeHtml(action)} selected={query.action === action} safe>
                  {action}
                </option>
              ))}
            </optgroup>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="audit-target">Target</label>
        <input
          id="audit-target"
          name="target"
          type="text"
          value={escapeHtml(query.target ?? '')}
          placeholder="thread, user:12"
        />
      </div>
      <div class="field">
        <label for="audit-from">From</label>
        <input id="audit-from" name="from" type="date" value={escapeHtml(query.from ?? '')} />
      </div>
      <div class="field">
        <label for="audit-to">To (included)</label>
        <input id="audit-to" name="to" type="date" value={escapeHtml(query.to ?? '')} />
      </div>
      <button type="submit" class="primary">
        Show
      </button>
    </form>
  )
}

function Events({ page, emailOf }: { page: AuditModel.eventList; emailOf: AuditPageProps['emailOf'] }) {
  if (page.data.length === 0) return <p class="muted">No event matches these filters.</p>
  return (
    <TableRegion label="Audit events">
      <table class="audit-events">
        <caption class="visually-hidden">Audit events, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">Actor</th>
            <th scope="col">Target</th>
            <th scope="col">From</th>
            <th scope="col">Detail</th>
          </tr>
        </thead>
        <tbody>
          {page.data.map((event) => (
            <tr>
              <td>
                <code>{event.action}</code>
                {event.outcome === 'failure' ? <span class="badge state-error">failed</span> : ''}
                <br />
                <span class="muted audit-time">
                  <Time at={event.at} />
                </span>
              </td>
              <td>
                <ActorCell event={event} emailOf={emailOf} />
              </td>
              <td safe>{targetText(event, emailOf)}</td>
              <td>
                <span safe>{event.address ?? ''}</span>
                {event.user_agent ? (
                  <>
                    <br />
                    <span class="muted audit-agent" safe>
                      {event.user_agent}
                    </span>
                  </>
                ) : (
                  ''
                )}
              </td>
              <td class="audit-detail" safe>
                {detailText(event.detail)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  )
}

function Retention(props: AuditPageProps): JSX.Element {
  const { min, max } = auditRetentionRange
  const value = props.retention?.entered ?? String(props.retentionDays)
  return (
    <section aria-labelledby="audit-retention-title" class="stack">
      <h2 id="audit-retention-title">Keeping events</h2>
      <ErrorAlert text={props.retention?.error} />
      <form method="post" action={`${adminAuditPath}/retention`} class="card stack">
        <CsrfField token={props.viewer.csrf} />
        <div class="field">
          <label for="audit-retention-days">Keep audit events for (days)</label>
          <input
            id="audit-retention-days"
            name="days"
            type="number"
            inputmode="numeric"
            required
            min={String(min)}
            max={String(max)}
            value={escapeHtml(value)}
            aria-describedby="audit-retention-help"
          />
          <p id="audit-retention-help" class="muted" safe>
            {`From ${min} to ${max} days (${props.retentionDays} now), whatever the threads' retention. The hourly upkeep deletes older events; the chain of hashes goes on from the first event kept, and the change itself is recorded.`}
          </p>
        </div>
        <div class="actions start">
          <button type="submit" class="primary">
            Save
          </button>
        </div>
      </form>
    </section>
  )
}

export function AuditPage(props: AuditPageProps): JSX.Element {
  const { page, query } = props
  return (
    <AdminFrame viewer={props.viewer} current={adminAuditPath} title="Audit">
      <section aria-labelledby="audit-title" class="stack">
        <h2 id="audit-title">Audit log</h2>
        <Notice text={props.notice ?? null} />
        <p>
          Sign-ins, members, tokens, apps, webhooks, MCP servers, settings, and threads deleted, exported or shared,
          newest first. Each event is chained to the one before it by a hash, so a changed or removed event shows.
        </p>
        <Filters query={query} />
        <ErrorAlert text={props.error} />
        {page ? (
          <>
            <p>
              Download every matching event:{' '}
              <a href={escapeHtml(`${adminAuditPath}.csv${withFilters(query)}`)} download="">
                CSV
              </a>
              ,{' '}
              <a href={escapeHtml(`${adminAuditPath}.jsonl${withFilters(query)}`)} download="">
                JSON Lines
              </a>
              .
            </p>
            <Events page={page} emailOf={props.emailOf} />
            <nav class="pager" aria-label="Audit pages">
              {props.paged ? (
                <a href={escapeHtml(`${adminAuditPath}${withFilters(query)}`)}>Newest events</a>
              ) : (
                <span />
              )}
              {page.has_more && page.last_id ? (
                <a href={escapeHtml(`${adminAuditPath}${withFilters(query, { after: page.last_id })}`)}>Older events</a>
              ) : (
                ''
              )}
            </nav>
          </>
        ) : (
          ''
        )}
      </section>
      <Retention {...props} />
    </AdminFrame>
  )
}
