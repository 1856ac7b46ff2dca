// Administration → Retention: how long the organization keeps threads after their last update (off by default).
import { escapeHtml } from '@kitajs/html'
import { retentionDaysRange } from '../../threads/retention'
import { CsrfField, ErrorAlert, Notice } from '../../web/components'
import { AdminFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'

export interface RetentionPageProps {
  viewer: Viewer
  /** The period in force: null keeps threads for good. */
  days: number | null
  notice?: string | null
  error?: string | null
  /** What was typed, when it was refused. */
  entered?: string
}

export function RetentionPage(props: RetentionPageProps): JSX.Element {
  const action = '/admin/retention'
  const { min, max } = retentionDaysRange
  const value = props.entered ?? (props.days === null ? '' : String(props.days))
  return (
    <AdminFrame viewer={props.viewer} current={action} title="Retention">
      <section aria-labelledby="retention-title" class="stack">
        <h2 id="retention-title">Retention</h2>
        <Notice text={props.notice ?? null} />
        <ErrorAlert text={props.error} />
        <p safe>
          {props.days === null
            ? 'Threads are kept until someone deletes them.'
            : `Threads not updated for ${props.days} ${props.days === 1 ? 'day' : 'days'} are deleted, with their messages and files.`}
        </p>
        <form method="post" action={action} class="card stack">
          <CsrfField token={props.viewer.csrf} />
          <div class="field">
            <label for="retention-days">Delete threads not updated for (days)</label>
            <input
              id="retention-days"
              name="days"
              type="number"
              inputmode="numeric"
              min={String(min)}
              max={String(max)}
              value={escapeHtml(value)}
              aria-describedby="retention-help"
            />
            <p id="retention-help" class="muted" safe>
              {`From ${min} to ${max} days; leave empty to keep threads for good. The hourly upkeep deletes them for everyone in the organization, skipping threads with an answer under way. Deleted threads cannot be brought back.`}
            </p>
          </div>
          <div class="actions start">
            <button type="submit" class="primary">
              Save
            </button>
          </div>
        </form>
      </section>
    </AdminFrame>
  )
}
