// Administration → Models: which of the server's configured models the organization may use, and its default.
import { escapeHtml } from '@kitajs/html'
import type { ChoiceView } from '../../models/service'
import { CsrfField, ErrorAlert, Notice } from '../../web/components'
import { AdminFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'

/** What the form holds: as stored, or as posted when it was refused. */
export interface ModelsFormValues {
  allowAll: boolean
  allowed: string[]
  /** '' follows the server's default. */
  defaultModel: string
}

export interface ModelsPageProps {
  viewer: Viewer
  view: ChoiceView
  notice?: string | null
  error?: string | null
  entered?: ModelsFormValues
}

export function ModelsPage(props: ModelsPageProps): JSX.Element {
  const action = '/admin/models'
  const { view } = props
  const form: ModelsFormValues = props.entered ?? {
    allowAll: view.allowAll,
    allowed: view.models.filter((model) => model.allowed).map((model) => model.id),
    defaultModel: view.storedDefault ?? '',
  }
  const inEffect = view.models.find((model) => model.id === view.defaultId)
  return (
    <AdminFrame viewer={props.viewer} current={action} title="Models">
      <section aria-labelledby="models-title" class="stack">
        <h2 id="models-title">Models</h2>
        <Notice text={props.notice ?? null} />
        <ErrorAlert text={props.error} />
        <p safe>
          {`New threads use ${inEffect?.name ?? view.defaultId} unless their owner picks another model. A thread whose model is no longer allowed uses the default.`}
        </p>
        <form method="post" action={action} class="card stack">
          <CsrfField token={props.viewer.csrf} />
          <fieldset class="field">
            <legend>Models members may use</legend>
            <label>
              <input type="radio" name="scope" value="all" checked={form.allowAll} /> Every model the server offers,
              including ones added later
            </label>
            <label>
              <input type="radio" name="scope" value="some" checked={!form.allowAll} /> Only the models checked below
            </label>
            {view.models.map((model) => (
              <label>
                <input
                  type="checkbox"
                  name="allowed"
                  value={escapeHtml(model.id)}
                  checked={form.allowed.includes(model.id)}
                />{' '}
                <span safe>{model.name}</span> <code safe>{model.id}</code>
              </label>
            ))}
          </fieldset>
          <div class="field">
            <label for="models-default">Default model</label>
            <select id="models-default" name="default" aria-describedby="models-default-help">
              <option value="" selected={form.defaultModel === ''}>
                The server's default
              </option>
              {view.models.map((model) => (
                <option value={escapeHtml(model.id)} selected={form.defaultModel === model.id} safe>
                  {model.name}
                </option>
              ))}
            </select>
            <p id="models-default-help" class="muted">
              The default must be one of the models members may use.
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
