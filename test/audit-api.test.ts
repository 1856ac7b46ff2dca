// Reading the audit log: GET /api/v1/audit (the `audit:read` scope, owners and admins only, filters, keyset pages as
// the thread list's), OAuth clients asking for the scope, and Administration → Audit with its downloads and retention
// form, on whichever backend THREADHOUSE_TEST_BACKEND names.
import { expect, test } from 'bun:test'
import { createPersonalAccessToken } from '../src/auth/personal-access-tokens'
import { type AuditAction, auditActions, auditEntry, noOrganization, sessionActor, target } from '../src/shared/audit'
import { hashSecret } from '../src/shared/security'
import { eventsNamed, testOrigin, tokenHolder } from './support/audit'
import { type Harness, harness, ManualClock } from './support/helpers'
import { approve, authorizeUrl, decide, postOAuth, register, signedIn } from './support/oauth-helpers'
import { expectPageHeaders, submit } from './support/web-helpers'

async function organizationOf(h: Harness, userId: number): Promise<number> {
  return (await h.store.users.findMemberById(userId))?.organizationId ?? 0
}

/** A token with `audit:read` for an owner or admin, made as the settings page makes it. */
async function auditToken(h: Harness, userId: number): Promise<string> {
  return createPersonalAccessToken(
    h.store.accessTokens,
    { user: await tokenHolder(h.store, userId), name: 'siem', scopes: ['audit:read'] },
    h.clock.now(),
    testOrigin,
  )
}

/** An event by `userId` in the organization, at the clock's time, which then moves a minute on. */
async function act(h: Harness, clock: ManualClock, organizationId: number, action: AuditAction, userId: number) {
  await h.store.audit.append(
    auditEntry({ ...testOrigin, actor: sessionActor(1, userId) }, clock.now(), {
      organizationId,
      action,
      target: target('user', userId),
    }),
  )
  clock.advance(60_000)
}

test('audit:read, owners and admins of the organization only; nothing of another organization', async () => {
  await using h = await harness()
  const owner = await h.user({ role: 'owner' })
  const admin = await h.user({ role: 'admin' })
  const member = await h.user({ role: 'member' })
  const outsider = await h.user({ org: 'globex', role: 'owner' })

  const ownerToken = await auditToken(h, owner.id)
  const read = await h.call('GET', '/api/v1/audit', { token: ownerToken })
  expect(read.status).toBe(200)
  // Each user's token and the audit token itself were recorded in this organization; globex's are not here.
  const organizationId = await organizationOf(h, owner.id)
  expect(read.body.data.every((event: { organization_id: number }) => event.organization_id === organizationId)).toBe(
    true,
  )
  expect(read.body.data[0]).toMatchObject({ action: 'token.created', detail: { scopes: ['audit:read'] } })
  expect((await h.call('GET', '/api/v1/audit', { token: await auditToken(h, admin.id) })).status).toBe(200)

  expect((await h.call('GET', '/api/v1/audit')).status).toBe(401)
  const withoutScope = await h.call('GET', '/api/v1/audit', { token: owner.token })
  expect(withoutScope).toMatchObject({
    status: 403,
    body: { error: 'insufficient_scope', required_scope: 'audit:read' },
  })
  // A member holding the scope (an admin's token, kept after they were made a member) is refused by role.
  const kept = 'thp_kept_from_when_they_were_admin'
  await h.store.accessTokens.create(
    { userId: member.id, name: 'old', tokenHash: hashSecret(kept), scopes: ['audit:read'], expiresAt: null },
    h.clock.now(),
    () => auditEntry(testOrigin, h.clock.now(), { organizationId, action: 'token.created', target: null }),
  )
  expect(await h.call('GET', '/api/v1/audit', { token: kept })).toMatchObject({
    status: 403,
    body: { error: 'forbidden' },
  })
  const theirs = await h.call('GET', '/api/v1/audit', { token: await auditToken(h, outsider.id) })
  expect(theirs.body.data.map((event: { action: string }) => event.action)).toEqual(['token.created', 'token.created'])
  // An event of another organization is not a cursor here.
  const foreign = theirs.body.data[0].id
  expect((await h.call('GET', `/api/v1/audit?after=${foreign}`, { token: ownerToken })).status).toBe(400)
})

test('filters by actor, action, target and time; keyset pages newest first, as the thread list pages', async () => {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'))
  await using h = await harness({ clock })
  const owner = await h.user({ role: 'owner' })
  const colleague = await h.user({ role: 'member' })
  const token = await auditToken(h, owner.id)
  const organizationId = await organizationOf(h, owner.id)
  const list = async (query: string) => (await h.call('GET', `/api/v1/audit?${query}`, { token })).body

  clock.ms = Date.parse('2026-03-02T00:00:00Z')
  const actions: AuditAction[] = ['member.added', 'member.role_changed', 'signout', 'thread.exported', 'member.removed']
  for (const action of actions) await act(h, clock, organizationId, action, colleague.id)
  clock.ms = Date.parse('2026-03-05T12:00:00Z')
  await act(h, clock, organizationId, 'settings.models_changed', owner.id)

  expect((await list(`actor=${colleague.id}`)).data.map((event: { action: string }) => event.action)).toEqual(
    [...actions].reverse(),
  )
  expect((await list(`actor=${encodeURIComponent(colleague.email)}`)).data).toHaveLength(actions.length)
  expect((await list('actor=system')).data.map((event: { action: string }) => event.action)).toEqual([
    'token.created',
    'token.created',
    'token.created',
  ])
  expect((await list('actor=nobody%40elsewhere.example')).data).toEqual([])
  expect((await list('action=member.*')).data.map((event: { action: string }) => event.action)).toEqual([
    'member.removed',
    'member.role_changed',
    'member.added',
  ])
  expect((await list('action=signout')).data).toHaveLength(1)
  expect((await list(`target=user:${owner.id}`)).data.map((event: { action: string }) => event.action)).toEqual([
    'settings.models_changed',
  ])
  expect((await list('target=personal_access_token')).data).toHaveLength(3)
  expect((await list('from=2026-03-03&to=2026-03-05')).data.map((event: { action: string }) => event.action)).toEqual([
    'settings.models_changed',
  ])
  expect((await list('from=2026-03-02&to=2026-03-02')).data).toHaveLength(actions.length)
  expect((await list('from=2026-03-02T00:00:00Z&to=2026-03-02T00:02:00Z')).data).toHaveLength(2)
  for (const bad of [
    'action=nope',
    'action=nope.*',
    'target=planet:1',
    'actor=me',
    'from=2026-02-30',
    'from=2026-03-05&to=2026-03-04',
  ]) {
    const refused = await h.call('GET', `/api/v1/audit?${bad}`, { token })
    expect([bad, refused.status, refused.body.error]).toEqual([bad, 400, 'invalid_request'])
  }

  // Pages of two, newest first, following `last_id`; an event added between pages neither repeats nor hides one.
  const seen: string[] = []
  let page = await list('limit=2')
  expect(page).toMatchObject({ limit: 2, has_more: true })
  await act(h, clock, organizationId, 'signout', owner.id)
  for (;;) {
    seen.push(...page.data.map((event: { id: string }) => event.id))
    expect(page.first_id).toBe(page.data[0]?.id ?? null)
    expect(page.last_id).toBe(page.data.at(-1)?.id ?? null)
    if (!page.has_more) break
    page = await list(`limit=2&after=${page.last_id}`)
  }
  const all = await list('limit=500')
  expect(all.limit).toBe(200)
  expect(seen).toEqual(all.data.slice(1).map((event: { id: string }) => event.id))
  const places = all.data.map((event: { seq: number }) => event.seq)
  expect(places).toEqual([...places].sort((a, b) => b - a))
})

test('OAuth clients may ask for audit:read: the consent page says so, and only an owner or admin grants it', async () => {
  await using h = await harness()
  const app = await register(h, { scope: 'threads:read audit:read' })
  const redirectUri = 'http://127.0.0.1:53682/callback'
  const admin = await signedIn(h, { role: 'admin' })
  const consent = await admin.browser.get(
    authorizeUrl({
      response_type: 'code',
      client_id: app.client_id,
      redirect_uri: redirectUri,
      scope: 'threads:read audit:read',
      state: 's',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    }),
  )
  const words = await consent.text()
  expect(words).toContain('Read your organization&#x27;s audit log')
  expect(words).not.toContain('Not granted')

  const exchange = async (browser: typeof admin.browser) => {
    const { code, verifier } = await approve(browser, {
      clientId: app.client_id,
      redirectUri,
      scope: 'threads:read audit:read',
    })
    return postOAuth(h, '/oauth/token', {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      client_id: app.client_id,
      code_verifier: verifier ?? '',
    })
  }
  const granted = await exchange(admin.browser)
  expect(granted.body.scope).toBe('threads:read audit:read')
  expect((await h.call('GET', '/api/v1/audit', { token: granted.body.access_token })).status).toBe(200)

  // A member's approval grants what they may hold only, and the page told them so.
  const member = await signedIn(h, { role: 'member' })
  const memberPage = await (
    await member.browser.get(
      authorizeUrl({
        response_type: 'code',
        client_id: app.client_id,
        redirect_uri: redirectUri,
        scope: 'audit:read threads:read',
        state: 's',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      }),
    )
  ).text()
  expect(memberPage).toContain('Not granted: only owners and admins of your organization may give it.')
  const narrowed = await exchange(member.browser)
  expect(narrowed.body.scope).toBe('threads:read')
  expect((await h.call('GET', '/api/v1/audit', { token: narrowed.body.access_token })).status).toBe(403)
  const consents = await eventsNamed(h, await organizationOf(h, member.user.id), 'oauth.consent_given')
  expect(JSON.parse(consents.at(-1)?.detail ?? '{}').scopes).toEqual(['threads:read'])
  // Asking for nothing else, a member's approval is a denial.
  const only = await decide(
    member.browser,
    authorizeUrl({
      response_type: 'code',
      client_id: app.client_id,
      redirect_uri: redirectUri,
      scope: 'audit:read',
      state: 's',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    }),
    'approve',
  )
  expect(new URL(only.headers.get('location') ?? '').searchParams.get('error')).toBe('access_denied')
  expect((await h.call('GET', '/.well-known/oauth-authorization-server')).body.scopes_supported).toContain('audit:read')
})

test('Administration → Audit: filtered pages, CSV and JSON Lines downloads, and its own retention', async () => {
  await using h = await harness()
  const { browser, user: owner } = await signedIn(h, { role: 'owner' })
  const organizationId = await organizationOf(h, owner.id)
  // A user agent chosen to run as a formula in a spreadsheet: the CSV must not let it.
  await h.store.audit.append(
    auditEntry(
      { actor: { kind: 'anonymous', id: null, userId: null }, address: '203.0.113.9', userAgent: '=HYPERLINK("x")' },
      h.clock.now(),
      { organizationId, action: 'signin.failed', outcome: 'failure', target: target('user', owner.id), detail: {} },
    ),
  )
  await h.store.audit.append(
    auditEntry(testOrigin, h.clock.now(), { organizationId: noOrganization, action: 'signin.failed', target: null }),
  )

  const page = await browser.get('/admin/audit')
  expect(page.status).toBe(200)
  expectPageHeaders(page)
  const html = await page.text()
  expect(html).toContain('<code>signin.failed</code>')
  expect(html).toContain('203.0.113.9')
  const filtered = await (await browser.get('/admin/audit?action=signin.failed&actor=&target=&from=&to=')).text()
  expect(filtered).toContain('<code>signin.failed</code>')
  expect(filtered).not.toContain('<code>signin.succeeded</code>')
  expect(filtered).toContain('<option value="signin.failed" selected>')
  const refused = await browser.get('/admin/audit?action=nonsense')
  expect(refused.status).toBe(400)
  expect(await refused.text()).toContain('Unknown action nonsense')

  const csv = await browser.get('/admin/audit.csv?action=signin.*')
  expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8')
  expect(csv.headers.get('content-disposition')).toMatch(
    /^attachment; filename="audit-default-\d{4}-\d{2}-\d{2}\.csv"$/,
  )
  const rows = (await csv.text()).trimEnd().split('\r\n')
  expect(rows[0]).toBe(
    'id,seq,at,action,outcome,actor_kind,actor_id,actor_user_id,address,user_agent,target_kind,target_id,detail,prev_hash,hash',
  )
  expect(rows.slice(1).map((row) => row.split(',')[3])).toEqual(['signin.failed', 'signin.succeeded'])
  expect(rows[1]).toContain(`,"'=HYPERLINK(""x"")",`)
  const lines = (await (await browser.get('/admin/audit.jsonl')).text()).trimEnd().split('\n')
  const events = lines.map((line) => JSON.parse(line))
  expect(events[0]).toMatchObject({
    action: 'signin.failed',
    user_agent: '=HYPERLINK("x")',
    organization_id: organizationId,
  })
  expect(events.every((event) => event.organization_id === organizationId)).toBe(true)

  // Retention: at least 30 days, recorded with the change; a member sees none of this.
  expect(await (await browser.get('/admin/audit')).text()).toContain('(400 now)')
  const tooShort = await submit(browser, '/admin/audit/retention', { days: '7' })
  expect(tooShort.status).toBe(400)
  expect(await tooShort.text()).toContain('from 30 to 3650')
  expect((await submit(browser, '/admin/audit/retention', { days: '90' })).status).toBe(303)
  expect(await h.store.audit.retentionOf(organizationId)).toBe(90)
  const change = await eventsNamed(h, organizationId, 'settings.audit_retention_changed')
  expect(JSON.parse(change[0]?.detail ?? '{}')).toEqual({ days: 90 })
  const member = await signedIn(h, { role: 'member' })
  expect((await member.browser.get('/admin/audit')).status).toBe(403)
  expect((await member.browser.get('/admin/audit.csv')).status).toBe(403)
})

test('docs/audit.md lists every action the log records, and no other', async () => {
  const page = await Bun.file(new URL('../docs/audit.md', import.meta.url)).text()
  const table = page.slice(page.indexOf('## Actions'), page.indexOf('## In the act'))
  const documented = [...table.matchAll(/^\| `([a-z_.]+)` +\|/gm)].map((match) => match[1])
  expect(documented).toEqual(Object.keys(auditActions))
})
