// Settings → API tokens: create a personal access token with chosen scopes and expiry (shown once), list
// the ones that still exist, revoke them.
import { escapeHtml } from '@kitajs/html'
import { adminOnlyScopes, type Scope, scopes } from '../../auth/model'
import type { PersonalAccessTokenSummary } from '../../auth/personal-access-tokens'
import { scopeDescriptions } from '../../oauth/model'
import { CsrfField, ErrorAlert, Notice, OneTimeSecret, TableRegion, Time } from '../../web/components'
import { SettingsFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'

/** Expiry choices offered by the form, in days; an empty value means the token never expires. */
export const tokenLifetimeChoices = [
  { days: 7, label: '7 days' },
  { days: 30, label: '30 days' },
  { days: 90, label: '90 days' },
  { days: 365, label: '1 year' },
] as const

export interface TokenFormValues {
  name: string
  scopes: Scope[]
  expiresInDays: string
}

export const emptyTokenForm: TokenFormValues = { name: '', scopes: [], expiresInDays: '30' }

export interface TokensPageProps {
  viewer: Viewer
  tokens: PersonalAccessTokenSummary[]
  now: number
  notice?: string | null
  error?: string | null
  form?: TokenFormValues
  created?: { name: string; token: string } | null
}

function CreateTokenForm({ viewer, form }: { viewer: Viewer; form: TokenFormValues }): JSX.Element {
  return (
    <form method="post" action="/settings/tokens" class="card stack">
      <CsrfField token={viewer.csrf} />
      <h2 id="create-token">Create a token</h2>
      <div class="field">
        <label for="token-name">Name</label>
        <input
          id="token-name"
          name="name"
          type="text"
          required
          maxlength="100"
          value={escapeHtml(form.name)}
          aria-describedby="token-name-help"
        />
        <span id="token-name-help" class="muted">
          What the token is for, such as “Laptop scripts”.
        </span>
      </div>
      <fieldset>
        <legend>Scopes</legend>
        {scopes
          .filter((scope) => viewer.isAdmin || !adminOnlyScopes.includes(scope))
          .map((scope) => (
            <div class="check">
              <input
                id={escapeHtml(`scope-${scope}`)}
                name="scope"
                type="checkbox"
                value={escapeHtml(scope)}
                checked={form.scopes.includes(scope)}
              />
              <label for={escapeHtml(`scope-${scope}`)}>
                <code>{scope}</code>{' '}
                <span class="muted" safe>
                  {scopeDescriptions[scope]}
                </span>
              </label>
            </div>
          ))}
      </fieldset>
      <div class="field">
        <label for="token-expiry">Expires after</label>
        <select id="token-expiry" name="expires_in_days">
          {tokenLifetimeChoices.map((choice) => (
            <option value={String(choice.days)} selected={form.expiresInDays === String(choice.days)}>
              {choice.label}
            </option>
          ))}
          <option value="" selected={form.expiresInDays === ''}>
            Never
          </option>
        </select>
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Create token
        </button>
      </div>
    </form>
  )
}

function Expiry({ token, now }: { token: PersonalAccessTokenSummary; now: number }): JSX.Element {
  if (token.expiresAt !== null && token.expiresAt <= now) {
    return (
      <>
        <span class="badge">Expired</span> <Time at={token.expiresAt} />
      </>
    )
  }
  return <Time at={token.expiresAt} never="Never" />
}

function TokenTable({ viewer, tokens, now }: { viewer: Viewer; tokens: PersonalAccessTokenSummary[]; now: number }) {
  if (tokens.length === 0) return <p class="muted">You have no API tokens yet.</p>
  return (
    <TableRegion label="Your API tokens">
      <table>
        <caption class="visually-hidden">Your API tokens</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Scopes</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Expires</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {tokens.map((token) => (
            <tr>
              <th scope="row" safe>
                {token.name}
              </th>
              <td>
                {token.scopes.map((scope) => (
                  <code class="scope">{scope}</code>
                ))}
              </td>
              <td>
                <Time at={token.createdAt} />
              </td>
              <td>
                <Time at={token.lastUsedAt} never="Never used" />
              </td>
              <td>
                <Expiry token={token} now={now} />
              </td>
              <td>
                <form method="post" action={escapeHtml(`/settings/tokens/${token.id}/revoke`)} class="inline">
                  <CsrfField token={viewer.csrf} />
                  <button type="submit" class="danger" aria-label={escapeHtml(`Revoke token ${token.name}`)}>
                    Revoke
                  </button>
                </form>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  )
}

export function TokensPage(props: TokensPageProps): JSX.Element {
  return (
    <SettingsFrame viewer={props.viewer} current="/settings/tokens" title="API tokens">
      <section aria-labelledby="tokens-title">
        <h2 id="tokens-title" class="visually-hidden">
          API tokens
        </h2>
        <p class="muted">
          Personal access tokens let scripts and tools call the Threadhouse API as you, with the scopes you choose. Send
          one as <code>Authorization: Bearer …</code>.
        </p>
        <Notice text={props.notice ?? null} />
        {props.created ? (
          <OneTimeSecret id="new-token" title={`New token “${props.created.name}”`} value={props.created.token} />
        ) : null}
        <ErrorAlert text={props.error} />
        <CreateTokenForm viewer={props.viewer} form={props.form ?? emptyTokenForm} />
        <h2>Your tokens</h2>
        <TokenTable viewer={props.viewer} tokens={props.tokens} now={props.now} />
      </section>
    </SettingsFrame>
  )
}
