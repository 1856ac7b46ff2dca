// Member management as plain services: the role rules, removal locking a person out of every door (sign-in,
// sessions, personal and OAuth tokens), and a one-time password holding the session on the change-password page.
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { type Actor, addMember, changeMemberRole, removeMember } from '../src/auth/members'
import { changePassword, generateOneTimePassword } from '../src/auth/passwords'
import { createPersonalAccessToken } from '../src/auth/personal-access-tokens'
import { signIn } from '../src/auth/sessions'
import { signInOrigin, testOrigin, tokenHolder } from './support/audit'
import { type Harness, harness } from './support/helpers'
import { Browser, password, publicGrant, register, settings, signedIn } from './support/oauth-helpers'

// Tests sign in and create users, hashing passwords with argon2 on purpose: slow on a busy machine.

/** The user as an acting member, with the public ID others name them by. */
async function actor(h: Harness, id: number): Promise<Actor & { sub: string }> {
  const { users } = h.tables
  const [row] = await h.orm.select().from(users).where(eq(users.id, id))
  if (!row) throw new Error('no such user')
  return {
    id: row.id,
    role: row.role,
    organizationId: row.organizationId,
    organizationSlug: 'default',
    sub: row.sub,
    origin: testOrigin,
  }
}

async function refusal(run: () => unknown): Promise<number> {
  try {
    await run()
  } catch (error) {
    return (error as { status: number }).status
  }
  return 200
}

test('one-time passwords are 80 random bits in four readable groups', () => {
  const seen = new Set(Array.from({ length: 50 }, generateOneTimePassword))
  expect(seen.size).toBe(50)
  for (const value of seen) expect(value).toMatch(/^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$/)
})

test('role rules: owners do anything, admins never touch or make owners, the last owner stays', async () => {
  await using h = await harness()
  const owner = await actor(h, (await h.user({ role: 'owner' })).id)
  const admin = await actor(h, (await h.user({ role: 'admin' })).id)
  const memberUser = await h.user()
  const member = await actor(h, memberUser.id)
  const subOf = (a: { sub: string }) => a.sub
  const now = Date.now()

  expect(
    await refusal(() => addMember(h.store.users, member, { email: 'a@example.com', name: null, role: 'member' }, now)),
  ).toBe(403)
  expect(
    await refusal(() => addMember(h.store.users, admin, { email: 'b@example.com', name: null, role: 'owner' }, now)),
  ).toBe(403)
  expect(await refusal(() => changeMemberRole(h.store.users, admin, subOf(owner), 'member', now))).toBe(403)
  expect(await refusal(() => changeMemberRole(h.store.users, admin, subOf(member), 'owner', now))).toBe(403)
  expect(await refusal(() => removeMember(h.store.users, admin, subOf(owner), now))).toBe(403)
  expect(await refusal(() => changeMemberRole(h.store.users, owner, subOf(owner), 'admin', now))).toBe(409)
  expect(await refusal(() => removeMember(h.store.users, owner, subOf(owner), now))).toBe(409)
  expect(await refusal(() => removeMember(h.store.users, admin, subOf(admin), now))).toBe(409)
  expect((await changeMemberRole(h.store.users, admin, subOf(member), 'admin', now)).role).toBe('admin')
  expect((await changeMemberRole(h.store.users, owner, subOf(admin), 'owner', now)).role).toBe('owner')
  // With a second owner, the first may step down, and may then be removed by the other.
  expect((await changeMemberRole(h.store.users, owner, subOf(owner), 'member', now)).role).toBe('member')
  expect((await removeMember(h.store.users, { ...admin, role: 'owner' }, subOf(owner), now)).id).toBe(owner.id)
  // People of other organizations are not found.
  const stranger = await actor(h, (await h.user({ org: 'globex', role: 'owner' })).id)
  expect(await refusal(() => changeMemberRole(h.store.users, stranger, subOf(member), 'member', now))).toBe(404)
})

test('a removed member is locked out of every door, and nobody else is touched', async () => {
  await using h = await harness()
  const owner = await actor(h, (await h.user({ role: 'owner' })).id)
  const { browser, user } = await signedIn(h)
  const colleague = await signedIn(h)
  const app = await register(h)
  const grant = (await publicGrant(h, browser, app.client_id)).body
  const theirs = (await publicGrant(h, colleague.browser, app.client_id)).body
  await removeMember(h.store.users, owner, user.sub, Date.now())

  expect((await browser.get('/login?next=/x')).status).toBe(200)
  expect(await signIn(h.store, user.email, password, Date.now(), signInOrigin)).toBeNull()
  for (const token of [user.token, grant.access_token]) {
    expect((await h.call('GET', '/api/v1/me', { token })).status).toBe(401)
  }
  // A token made afterwards by hand (the CLI) does not work either.
  const late = await createPersonalAccessToken(
    h.store.accessTokens,
    { user: await tokenHolder(h.store, user.id), name: 'late', scopes: ['threads:read'] },
    Date.now(),
    testOrigin,
  )
  expect((await h.call('GET', '/api/v1/me', { token: late })).status).toBe(401)
  expect((await h.call('GET', '/api/v1/me', { token: theirs.access_token })).status).toBe(200)
  expect((await h.call('GET', '/api/v1/me', { token: colleague.user.token })).status).toBe(200)
})

test('a one-time password keeps the session on the change-password page until it is replaced', async () => {
  await using h = await harness()
  const owner = await actor(h, (await h.user({ role: 'owner' })).id)
  const added = await addMember(
    h.store.users,
    owner,
    { email: 'New@Example.com', name: ' Nia ', role: 'member' },
    Date.now(),
  )
  expect(added.member).toMatchObject({ email: 'new@example.com', name: 'Nia', mustChangePassword: true })
  const browser = Browser.inProcess(h)
  const signedInAt = await browser.signIn('new@example.com', added.oneTimePassword, '/somewhere')
  expect(signedInAt.headers.get('location')).toBe(`/settings/password?next=${encodeURIComponent('/somewhere')}`)
  const visit = await browser.get('/login?next=/x')
  expect(visit.status).toBe(303)
  expect(visit.headers.get('location')).toBe(`/settings/password?next=${encodeURIComponent('/login?next=/x')}`)
  const json = await settings(browser, 'GET', '/connected-apps')
  expect(json.body.error).toBe('password_change_required')

  const row = await h.store.users.findByEmail('new@example.com')
  await changePassword(
    h.store.users,
    {
      userId: row?.id ?? 0,
      organizationId: row?.organizationId ?? 0,
      currentPassword: added.oneTimePassword,
      newPassword: 'chosen by me',
      keepSessionToken: browser.cookies.get('threadhouse_session') ?? '',
    },
    Date.now(),
    testOrigin,
  )
  expect((await browser.get('/login?next=/x')).headers.get('location')).toBe('/x')
  expect((await settings(browser, 'GET', '/connected-apps')).status).toBe(200)
})
