// Share links in the web app through app.handle, with real form posts through the trusted-form guard: the thread's ⋯
// menu leads its owner to a confirmation that says anyone with the link can read the thread, the link is shown once,
// Settings → Share links lists and revokes one's own links, and Administration → Sharing turns sharing off and on and
// lists (and revokes) every live link of the organization.
import { describe, expect, test } from 'bun:test'
import { harness } from './support/helpers'
import { Browser, signedIn } from './support/oauth-helpers'
import { expectPageHeaders, post, secretOn, submit } from './support/web-helpers'

// Tests sign in and create users, hashing passwords with argon2 on purpose: slow on a busy machine.

async function world() {
  const h = await harness()
  const owner = await signedIn(h, { name: 'Ada' })
  const started = await h.call('POST', '/api/v1/threads', {
    token: owner.user.token,
    body: { name: 'Trip to Lyon', text: 'Plan a *walking* tour' },
  })
  await h.app.decorator.engine.idle()
  const threadId: string = started.body.thread_id
  return { h, owner, threadId, [Symbol.asyncDispose]: () => h[Symbol.asyncDispose]() }
}

/** Makes a link through the confirmation page's form; the link's path, read from the page as a person copies it. */
async function shareByForm(browser: Browser, threadId: string, fields: Record<string, string> = {}) {
  const response = await submit(browser, `/threads/${threadId}/share`, fields)
  expect(response.status).toBe(200)
  const html = await response.text()
  expect(html).toContain('Anyone with the link can read this thread')
  return { html, path: new URL(secretOn(html, 'share-url')).pathname }
}

async function status(h: Awaited<ReturnType<typeof world>>['h'], path: string): Promise<number> {
  return (await Browser.inProcess(h).get(path)).status
}

describe.concurrent('share links on the web', () => {
  test('the menu leads the owner to a confirmation; the link is shown once and opens without signing in', async () => {
    await using w = await world()
    const { h, owner, threadId } = w
    const thread = await (await owner.browser.get(`/threads/${threadId}`)).text()
    expect(thread).toContain(`<a class="tool-link" href="/threads/${threadId}/share">Share a link…</a>`)

    const confirmation = await owner.browser.get(`/threads/${threadId}/share`)
    expect(confirmation.status).toBe(200)
    expectPageHeaders(confirmation)
    const html = await confirmation.text()
    expect(html).toContain(
      'Anyone with the link can read this thread, without signing in, including people outside your organization.',
    )
    expect(html).toContain('name="include_files" type="checkbox" value="true"')

    const made = await shareByForm(owner.browser, threadId, { include_files: 'true' })
    expect(made.html).toContain('Its images and files are shown too.')
    expect(await status(h, made.path)).toBe(200)
    const listed = await h.call('GET', `/api/v1/threads/${threadId}/shares`, { token: owner.user.token })
    expect(listed.body.data).toEqual([{ id: expect.any(String), created_at: expect.any(String), include_files: true }])

    // Not without the form's token, nor from another site.
    expect((await post(owner.browser, `/threads/${threadId}/share`, {})).status).toBe(403)
    // Other members see no entry and get the error page.
    const member = await signedIn(h)
    expect(await (await member.browser.get(`/threads/${threadId}`)).text()).not.toContain('Share a link')
    expect((await member.browser.get(`/threads/${threadId}/share`)).status).toBe(403)
    expect((await submit(member.browser, `/threads/${threadId}/share`)).status).toBe(403)
    // Visitors sign in first.
    expect((await Browser.inProcess(h).get(`/threads/${threadId}/share`)).headers.get('location')).toBe(
      `/login?next=${encodeURIComponent(`/threads/${threadId}/share`)}`,
    )
  })

  test('Settings → Share links lists one’s own links and revokes them', async () => {
    await using w = await world()
    const { h, owner, threadId } = w
    const made = await shareByForm(owner.browser, threadId)
    const other = await signedIn(h)
    const theirThread = await h.call('POST', '/api/v1/threads', { token: other.user.token, body: { name: 'Theirs' } })
    const theirs = await shareByForm(other.browser, theirThread.body.thread_id)

    const settings = await owner.browser.get('/settings/shares')
    expectPageHeaders(settings)
    const html = await settings.text()
    expect(html).toContain('Trip to Lyon')
    expect(html).not.toContain('Theirs')
    const id = (await h.call('GET', `/api/v1/threads/${threadId}/shares`, { token: owner.user.token })).body.data[0].id
    expect(html).toContain(`action="/settings/shares/${id}/revoke"`)

    // Someone else's link is not found from one's own settings.
    const theirId = (
      await h.call('GET', `/api/v1/threads/${theirThread.body.thread_id}/shares`, { token: other.user.token })
    ).body.data[0].id
    expect((await submit(owner.browser, `/settings/shares/${theirId}/revoke`)).status).toBe(404)
    expect(await status(h, theirs.path)).toBe(200)

    expect((await post(owner.browser, `/settings/shares/${id}/revoke`, {})).status).toBe(403)
    const revoked = await submit(owner.browser, `/settings/shares/${id}/revoke`)
    expect({ status: revoked.status, location: revoked.headers.get('location') }).toEqual({
      status: 303,
      location: '/settings/shares?notice=share-revoked',
    })
    expect(await status(h, made.path)).toBe(404)
    const after = await (await owner.browser.get('/settings/shares?notice=share-revoked')).text()
    expect(after).toContain('The link was revoked. It no longer works.')
    expect(after).toContain('You have no share links.')
  })

  test('Administration → Sharing: owners and admins turn sharing off and on and see every live link', async () => {
    await using w = await world()
    const { h, owner, threadId } = w
    const made = await shareByForm(owner.browser, threadId)
    const member = await signedIn(h)
    expect((await member.browser.get('/admin/shares')).status).toBe(403)
    expect((await submit(member.browser, '/admin/shares', { enabled: 'false' })).status).toBe(403)

    const admin = await signedIn(h, { role: 'admin' })
    const page = await admin.browser.get('/admin/shares')
    expectPageHeaders(page)
    const html = await page.text()
    expect(html).toContain('Trip to Lyon')
    expect(html).toContain('<td>Ada</td>')
    expect(html).toContain('Turn sharing off')

    expect((await post(admin.browser, '/admin/shares', { enabled: 'false' })).status).toBe(403)
    const off = await submit(admin.browser, '/admin/shares', { enabled: 'false' })
    expect(off.headers.get('location')).toBe('/admin/shares?notice=sharing-off')
    expect(await status(h, made.path)).toBe(404)
    // No new link, and the confirmation says why.
    expect(await (await owner.browser.get(`/threads/${threadId}/share`)).text()).toContain(
      'Sharing links is turned off for your organization.',
    )
    const refused = await submit(owner.browser, `/threads/${threadId}/share`)
    expect(refused.status).toBe(403)
    expect(await (await owner.browser.get('/settings/shares')).text()).toContain('Sharing is turned off')

    const on = await submit(admin.browser, '/admin/shares', { enabled: 'true' })
    expect(on.headers.get('location')).toBe('/admin/shares?notice=sharing-on')
    expect(await status(h, made.path)).toBe(200)

    // Another organization's admin sees none of it and revokes nothing.
    const elsewhere = await signedIn(h, { org: 'elsewhere', role: 'owner' })
    const id = (await h.call('GET', `/api/v1/threads/${threadId}/shares`, { token: owner.user.token })).body.data[0].id
    expect(await (await elsewhere.browser.get('/admin/shares')).text()).not.toContain('Trip to Lyon')
    expect((await submit(elsewhere.browser, `/admin/shares/${id}/revoke`)).status).toBe(404)
    expect(await status(h, made.path)).toBe(200)

    const revoked = await submit(admin.browser, `/admin/shares/${id}/revoke`)
    expect(revoked.headers.get('location')).toBe('/admin/shares?notice=share-revoked')
    expect(await status(h, made.path)).toBe(404)
  })
})
