// The settings feature: its pages over HTTP, API tokens, connected apps, OAuth clients, registration tokens and
// the password, for any signed-in member. The behaviour is auth's and oauth's (personal-access-tokens.ts,
// passwords.ts, management.ts, registration.ts). Every write is a form post through the `trustedForm` guard;
// writes that create a secret answer with the page showing it (once, never in a URL or cookie), the others
// redirect back (POST-redirect-GET).

import { Elysia } from 'elysia'
import { signInRetryAfter } from '../auth/attempts'
import { isScope } from '../auth/model'
import { changePassword } from '../auth/passwords'
import {
  createPersonalAccessToken,
  listPersonalAccessTokens,
  revokePersonalAccessToken,
} from '../auth/personal-access-tokens'
import type { AccessTokenRepository } from '../auth/tokens.repository'
import type { UserRepository } from '../auth/users.repository'
import type { ClientRepository } from '../oauth/clients.repository'
import type { GrantRepository } from '../oauth/grants.repository'
import { createConfidentialClient, listConnectedApps, listOwnClients, revokeConnectedApp } from '../oauth/management'
import { createRegistrationToken } from '../oauth/registration'
import { clientIpOf } from '../shared/http'
import type { Limiter } from '../shared/rate-limit'
import { dayMs } from '../shared/time'
import { account, noticeFor, refusalOf } from '../web/account'
import { type PageSession, pageHeaders, pageOrigin, safeNextPath, type WebDeps } from '../web/index'
import { viewerOf } from '../web/layout'
import { field, fieldValues, type PostedForm } from '../web/trusted-form'
import { AppsPage } from './views/apps'
import { type ClientFormValues, ClientsPage } from './views/clients'
import { PasswordPage } from './views/password'
import { SettingsRegistrationPage } from './views/registration'
import { type TokenFormValues, TokensPage, tokenLifetimeChoices } from './views/tokens'

/** Confirmations after a redirect, chosen by a fixed key so a URL can never put words on the page. */
export const settingsNotices: Record<string, string> = {
  'token-revoked': 'The token was revoked. It no longer works.',
  'app-revoked': 'The app was disconnected. Every token it held for you stopped working.',
  'password-changed': 'Your password was changed, and your other sessions were signed out.',
}

/** Reads the create-token form, or says in one sentence what is wrong with it. */
function parseTokenForm(form: PostedForm): { values: TokenFormValues; error: string | null } {
  const requested = fieldValues(form, 'scope')
  const values: TokenFormValues = {
    name: (field(form, 'name') ?? '').trim(),
    scopes: requested.filter(isScope),
    expiresInDays: field(form, 'expires_in_days') ?? '',
  }
  const lifetimes = tokenLifetimeChoices.map((choice) => String(choice.days))
  if (values.name === '') return { values, error: 'Give the token a name.' }
  if (values.name.length > 100) return { values, error: 'The name must be at most 100 characters.' }
  if (values.scopes.length !== requested.length) return { values, error: 'Choose scopes from the list.' }
  if (values.scopes.length === 0) return { values, error: 'Choose at least one scope.' }
  if (values.expiresInDays !== '' && !lifetimes.includes(values.expiresInDays)) {
    return { values, error: 'Choose an expiry from the list.' }
  }
  return { values, error: null }
}

function expiryOf(values: TokenFormValues, now: number): number | null {
  return values.expiresInDays === '' ? null : now + Number(values.expiresInDays) * dayMs
}

function redirectUrisOf(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean)
}

export interface SettingsDeps extends WebDeps {
  users: UserRepository
  accessTokens: AccessTokenRepository
  /** The apps a person connected and the clients they own: the authorization server's storage. */
  oauthGrants: GrantRepository
  oauthClients: ClientRepository
  /** Password changes prove the current password: they share sign-in's attempt limits (absent when off). */
  authLimiter?: Limiter
}

export const settingsPages = (deps: SettingsDeps) => {
  const now = (): number => deps.clock.now()

  async function tokensPage(
    member: PageSession,
    extra: Partial<Parameters<typeof TokensPage>[0]> = {},
  ): Promise<JSX.Element> {
    const tokens = await listPersonalAccessTokens(deps.accessTokens, member.user.id)
    return <TokensPage viewer={viewerOf(member)} tokens={tokens} now={now()} {...extra} />
  }

  async function appsPage(
    member: PageSession,
    extra: Partial<Parameters<typeof AppsPage>[0]> = {},
  ): Promise<JSX.Element> {
    const apps = await listConnectedApps(deps.oauthGrants, member.user.id, now())
    return <AppsPage viewer={viewerOf(member)} apps={apps} {...extra} />
  }

  async function clientsPage(
    member: PageSession,
    extra: Partial<Parameters<typeof ClientsPage>[0]> = {},
  ): Promise<JSX.Element> {
    const clients = await listOwnClients(deps.oauthClients, member.user)
    return <ClientsPage viewer={viewerOf(member)} clients={clients} {...extra} />
  }

  return new Elysia({ name: 'settings-pages' })
    .use(account(deps))
    .onBeforeHandle(({ set }) => {
      Object.assign(set.headers, pageHeaders)
    })
    .get('/settings', ({ redirect }) => redirect('/settings/tokens', 303), { member: true, detail: { hide: true } })
    .get(
      '/settings/tokens',
      async ({ member, query, html }) =>
        html(await tokensPage(member, { notice: noticeFor(settingsNotices, query.notice) })),
      {
        member: true,
        detail: { hide: true },
      },
    )
    .post(
      '/settings/tokens',
      async ({ member, form, request, html, set }) => {
        const { values, error } = parseTokenForm(form)
        if (error) {
          set.status = 400
          return html(await tokensPage(member, { error, form: values }))
        }
        let token: string
        try {
          token = await createPersonalAccessToken(
            deps.accessTokens,
            { user: member.user, name: values.name, scopes: values.scopes, expiresAt: expiryOf(values, now()) },
            now(),
            pageOrigin(request, member),
          )
        } catch (error) {
          // A member choosing a scope only owners and admins may hold (the form does not offer it to them).
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await tokensPage(member, { error: refusal.message, form: values }))
        }
        return html(await tokensPage(member, { created: { name: values.name, token } }))
      },
      { member: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
    .post(
      '/settings/tokens/:id/revoke',
      async ({ member, params, request, html, redirect, set }) => {
        const id = Number(params.id)
        if (
          !Number.isSafeInteger(id) ||
          !(await revokePersonalAccessToken(deps.accessTokens, member.user, id, now(), pageOrigin(request, member)))
        ) {
          set.status = 404
          return html(await tokensPage(member, { error: 'That token does not exist or was already revoked.' }))
        }
        return redirect('/settings/tokens?notice=token-revoked', 303)
      },
      { member: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
    .get(
      '/settings/apps',
      async ({ member, query, html }) =>
        html(await appsPage(member, { notice: noticeFor(settingsNotices, query.notice) })),
      {
        member: true,
        detail: { hide: true },
      },
    )
    .post(
      '/settings/apps/:clientId/revoke',
      async ({ member, params, request, html, redirect, set }) => {
        try {
          await revokeConnectedApp(deps.oauthGrants, member.user, params.clientId, now(), pageOrigin(request, member))
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await appsPage(member, { error: 'That app holds no tokens for you.' }))
        }
        return redirect('/settings/apps?notice=app-revoked', 303)
      },
      { member: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
    .get('/settings/clients', async ({ member, html }) => html(await clientsPage(member)), {
      member: true,
      detail: { hide: true },
    })
    .post(
      '/settings/clients',
      async ({ member, form, request, html, set }) => {
        const values: ClientFormValues = {
          name: field(form, 'client_name') ?? '',
          redirectUris: field(form, 'redirect_uris') ?? '',
        }
        try {
          const created = await createConfidentialClient(
            deps.oauthClients,
            member.user,
            { client_name: values.name, redirect_uris: redirectUrisOf(values.redirectUris) },
            now(),
            pageOrigin(request, member),
          )
          return html(
            await clientsPage(member, {
              created: {
                clientId: created.client_id,
                clientSecret: created.client_secret ?? '',
                name: created.client_name,
              },
            }),
          )
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await clientsPage(member, { error: refusal.message, form: values }))
        }
      },
      { member: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
    .get(
      '/settings/registration-token',
      ({ member, html }) => html(<SettingsRegistrationPage viewer={viewerOf(member)} />),
      {
        member: true,
        detail: { hide: true },
      },
    )
    .post(
      '/settings/registration-token',
      async ({ member, request, html }) => {
        const created = await createRegistrationToken(
          deps.oauthClients,
          member.user,
          now(),
          pageOrigin(request, member),
        )
        return html(<SettingsRegistrationPage viewer={viewerOf(member)} created={created} />)
      },
      { member: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
    .get(
      '/settings/password',
      ({ member, query, html }) =>
        html(
          <PasswordPage
            viewer={viewerOf(member)}
            required={member.user.mustChangePassword}
            next={safeNextPath(query.next, deps.publicUrl)}
            notice={noticeFor(settingsNotices, query.notice)}
          />,
        ),
      { member: true, detail: { hide: true } },
    )
    .post(
      '/settings/password',
      async ({ member, form, request, html, redirect, set }) => {
        const next = safeNextPath(field(form, 'next'), deps.publicUrl)
        const newPassword = field(form, 'new_password') ?? ''
        const page = (error: string): JSX.Element => (
          <PasswordPage viewer={viewerOf(member)} required={member.user.mustChangePassword} next={next} error={error} />
        )
        if (newPassword !== (field(form, 'confirm_password') ?? '')) {
          set.status = 400
          return html(page('The two new passwords do not match.'))
        }
        const retryAfter = await signInRetryAfter(deps.authLimiter, clientIpOf(request), member.user.email)
        if (retryAfter !== null) {
          set.status = 429
          set.headers['retry-after'] = String(retryAfter)
          return html(page(`Too many attempts. Wait ${retryAfter} seconds, then try again.`))
        }
        try {
          await changePassword(
            deps.users,
            {
              userId: member.user.id,
              organizationId: member.user.organizationId,
              currentPassword: field(form, 'current_password') ?? '',
              newPassword,
              keepSessionToken: member.token,
            },
            now(),
            pageOrigin(request, member),
          )
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(page(refusal.message))
        }
        return redirect(member.user.mustChangePassword ? next : '/settings/password?notice=password-changed', 303)
      },
      { member: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
}
