// Share links through app.handle, on the run's backend: the API (owner only, scopes, 404 as for threads), the
// snapshot (later messages and renames never reach it), the token (stored only as its hash), the shared page (Markdown,
// no navigation, noindex, the pages' CSP, the organization's name, files only when included) and every way a link
// stops answering at once: revoked, thread deleted, sharing turned off, sharer removed.
import { describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { removeMember } from '../src/auth/members'
import { themeScript } from '../src/web/client-assets'
import { pageHeaders } from '../src/web/index'
import { testEvent, testOrigin } from './support/audit'
import { type Harness, harness, publicUrl, sharedInspector, type TestUser } from './support/helpers'
import { form, png, upload } from './support/uploads'

const inspector = sharedInspector()

interface World extends AsyncDisposable {
  h: Harness
  owner: TestUser
  threadId: string
}

/** A harness, an owner and their public thread with one answered message (Markdown in both). */
async function world(): Promise<World> {
  const h = await harness({ inspector })
  const owner = await h.user({ name: 'Ada Lovelace' })
  const created = await h.call('POST', '/api/v1/threads', {
    token: owner.token,
    body: { name: 'Trip to Lyon', text: 'Plan a **walking tour** of Lyon' },
  })
  await h.app.decorator.engine.idle()
  return { h, owner, threadId: created.body.thread_id, [Symbol.asyncDispose]: () => h[Symbol.asyncDispose]() }
}

function share(w: World, body: unknown = {}, token = w.owner.token) {
  return w.h.call('POST', `/api/v1/threads/${w.threadId}/shares`, { token, body })
}

/** The link's path on this server, from the URL the API answered with. */
function pathOf(url: string): string {
  expect(url.startsWith(`${publicUrl}/s/`)).toBe(true)
  return url.slice(publicUrl.length)
}

async function page(h: Harness, path: string, headers: Record<string, string> = {}) {
  const response = await h.app.handle(new Request(`${publicUrl}${path}`, { headers }))
  return { status: response.status, headers: response.headers, html: await response.text() }
}

describe.concurrent('share links', () => {
  test('the owner makes, lists and revokes links; the token is 192 random bits, stored only as its hash', async () => {
    await using w = await world()
    const created = await share(w)
    expect({
      status: created.status,
      fields: Object.keys(created.body),
      include_files: created.body.include_files,
    }).toEqual({
      status: 201,
      fields: ['id', 'url', 'created_at', 'include_files'],
      include_files: false,
    })
    const token = pathOf(created.body.url).slice('/s/'.length)
    // `ths_` and 24 bytes in base32: 39 characters of 5 bits.
    expect(token).toMatch(/^ths_[a-z2-7]{39}$/)
    const second = await share(w, { include_files: true })
    expect(second.body.url).not.toBe(created.body.url)

    const listed = await w.h.call('GET', `/api/v1/threads/${w.threadId}/shares`, { token: w.owner.token })
    expect(listed).toMatchObject({
      status: 200,
      body: {
        data: [
          { id: second.body.id, created_at: second.body.created_at, include_files: true },
          { id: created.body.id, created_at: created.body.created_at, include_files: false },
        ],
      },
    })
    expect(JSON.stringify(listed.body)).not.toContain('ths_')

    // The database holds the hash and never the token, in any column.
    const rows = await w.h.orm.select().from(w.h.tables.shares)
    expect(rows.map((row) => row.tokenHash).sort()).toEqual(
      [token, pathOf(second.body.url).slice(3)].map((t) => createHash('sha256').update(t).digest('hex')).sort(),
    )
    expect(JSON.stringify(rows)).not.toContain(token)

    expect((await page(w.h, pathOf(created.body.url))).status).toBe(200)
    const revoked = await w.h.call('DELETE', `/api/v1/threads/${w.threadId}/shares/${created.body.id}`, {
      token: w.owner.token,
    })
    expect(revoked.status).toBe(204)
    expect((await page(w.h, pathOf(created.body.url))).status).toBe(404)
    expect((await page(w.h, pathOf(second.body.url))).status).toBe(200)
    const again = await w.h.call('DELETE', `/api/v1/threads/${w.threadId}/shares/${created.body.id}`, {
      token: w.owner.token,
    })
    expect(again).toMatchObject({ status: 404, body: { error: 'not_found' } })
    const listedAfter = await w.h.call('GET', `/api/v1/threads/${w.threadId}/shares`, { token: w.owner.token })
    expect(listedAfter.body.data.map((s: { id: string }) => s.id)).toEqual([second.body.id])
  })

  test('only the owner: 403 for members who see the thread, 404 for those who do not; scopes as for threads', async () => {
    await using w = await world()
    const { h, threadId } = w
    const member = await h.user()
    const outsider = await h.user({ org: 'elsewhere' })
    const made = await share(w)
    const paths = {
      create: ['POST', `/api/v1/threads/${threadId}/shares`],
      list: ['GET', `/api/v1/threads/${threadId}/shares`],
      revoke: ['DELETE', `/api/v1/threads/${threadId}/shares/${made.body.id}`],
    } as const
    const statuses = async (token: string) => {
      const out: Record<string, [number, string]> = {}
      for (const [name, [method, path]] of Object.entries(paths)) {
        const reply = await h.call(method, path, { token, body: method === 'POST' ? {} : undefined })
        out[name] = [reply.status, reply.body?.error]
      }
      return out
    }
    expect(await statuses(member.token)).toEqual({
      create: [403, 'forbidden'],
      list: [403, 'forbidden'],
      revoke: [403, 'forbidden'],
    })
    expect(await statuses(outsider.token)).toEqual({
      create: [404, 'not_found'],
      list: [404, 'not_found'],
      revoke: [404, 'not_found'],
    })
    // A private thread does not exist for the other members.
    await h.call('PATCH', `/api/v1/threads/${threadId}`, { token: w.owner.token, body: { is_private: true } })
    expect((await statuses(member.token)).create).toEqual([404, 'not_found'])

    // Reading the list takes threads:read; making and revoking take threads:write.
    const readOnly = await h.user({ scopes: ['threads:read'] })
    const own = await h.call('POST', '/api/v1/threads', { token: w.owner.token, body: {} })
    expect(own.status).toBe(201)
    const theirs = await h.call('POST', '/api/v1/threads', { token: (await h.user()).token, body: {} })
    const readOnlyCreate = await h.call('POST', `/api/v1/threads/${theirs.body.thread_id}/shares`, {
      token: readOnly.token,
      body: {},
    })
    expect(readOnlyCreate).toMatchObject({ status: 403, body: { error: 'insufficient_scope' } })
    const writeOnly = await h.user({ scopes: ['threads:write'] })
    const writerThread = await h.call('POST', '/api/v1/threads', { token: writeOnly.token, body: {} })
    expect(
      await h.call('GET', `/api/v1/threads/${writerThread.body.thread_id}/shares`, { token: writeOnly.token }),
    ).toMatchObject({ status: 403, body: { error: 'insufficient_scope' } })
    expect(
      (
        await h.call('POST', `/api/v1/threads/${writerThread.body.thread_id}/shares`, {
          token: writeOnly.token,
          body: {},
        })
      ).status,
    ).toBe(201)

    // A link of another thread is not this thread's to revoke; bodies are JSON objects with known fields only.
    const otherShare = await h.call('POST', `/api/v1/threads/${own.body.thread_id}/shares`, {
      token: w.owner.token,
      body: {},
    })
    expect(
      (await h.call('DELETE', `/api/v1/threads/${threadId}/shares/${otherShare.body.id}`, { token: w.owner.token }))
        .status,
    ).toBe(404)
    expect((await share(w, { include_files: 'yes' })).status).toBe(400)
    expect((await share(w, { public: true })).status).toBe(400)
    expect((await h.call('POST', `/api/v1/threads/${threadId}/shares`, { token: w.owner.token })).status).toBe(400)
  })

  test('the page is the snapshot: later messages and renames never reach it', async () => {
    await using w = await world()
    const { h } = w
    const made = await share(w)
    await h.call('POST', `/api/v1/threads/${w.threadId}/messages`, {
      token: w.owner.token,
      body: { text: 'A later secret about the budget' },
    })
    await h.app.decorator.engine.idle()
    await h.call('PATCH', `/api/v1/threads/${w.threadId}`, { token: w.owner.token, body: { name: 'Renamed' } })
    const shown = await page(h, pathOf(made.body.url))
    expect(shown.status).toBe(200)
    expect(shown.html).toContain('Trip to Lyon')
    expect(shown.html).not.toContain('Renamed')
    expect(shown.html).toContain('Plan a <strong>walking tour</strong> of Lyon')
    expect(shown.html).not.toContain('later secret')
    // The answer written before the link was made is there, as Markdown.
    expect(shown.html).toContain('class="message message-assistant"')
    // A link made now shows the later message.
    const later = await page(h, pathOf((await share(w)).body.url))
    expect(later.html).toContain('A later secret about the budget')
  })

  test('the page: no navigation or session, noindex, the pages’ CSP, no referrer, the organization’s name', async () => {
    await using w = await world()
    const { h } = w
    const made = await share(w)
    // Even a signed-in member's cookie changes nothing: the page reads no session.
    const shown = await page(h, pathOf(made.body.url), { cookie: 'threadhouse_session=whatever' })
    expect({
      status: shown.status,
      type: shown.headers.get('content-type'),
      csp: shown.headers.get('content-security-policy'),
      robots: shown.headers.get('x-robots-tag'),
      referrer: shown.headers.get('referrer-policy'),
      frame: shown.headers.get('x-frame-options'),
      cache: shown.headers.get('cache-control'),
    }).toEqual({
      status: 200,
      type: 'text/html; charset=utf-8',
      csp: pageHeaders['content-security-policy'],
      robots: 'noindex, nofollow',
      referrer: 'no-referrer',
      frame: 'DENY',
      cache: 'no-store',
    })
    expect(shown.html).toContain('<meta name="robots" content="noindex, nofollow"/>')
    expect(shown.html).toContain('<meta name="referrer" content="no-referrer"/>')
    expect(shown.html).toContain('Shared from <strong>default</strong>')
    expect(shown.html).toContain('Ada Lovelace')
    // No sidebar, navigation, sign-out form, composer or script but the theme every page applies.
    expect(shown.html.match(/<script[^>]*>/g)).toEqual([`<script src="${themeScript.path}">`])
    for (const absent of ['sidebar', 'aria-label="Main"', '/logout', 'composer', '/threads/']) {
      expect({ absent, found: shown.html.includes(absent) }).toEqual({ absent, found: false })
    }
    // Tokens that are not links answer the same plain 404 page.
    for (const path of ['/s/nope', '/s/ths_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa']) {
      const missing = await page(h, path)
      expect(missing.status).toBe(404)
      expect(missing.html).toContain('This link does not work')
      expect(missing.html).not.toContain('aria-label="Main"')
    }
  })

  test('a link stops at once when revoked, its thread is deleted, sharing is turned off or its sharer removed', async () => {
    await using w = await world()
    const { h, owner } = w
    const path = pathOf((await share(w)).body.url)
    const organizationId = (await h.store.users.findByEmail(owner.email))?.organizationId ?? 0

    await h.store.shares.setSharing(organizationId, false, testEvent('settings.sharing_changed'))
    expect((await page(h, path)).status).toBe(404)
    expect(await share(w)).toMatchObject({ status: 403, body: { error: 'sharing_disabled' } })
    // Turned back on, the links made before answer again (revoking is what ends a link for good).
    await h.store.shares.setSharing(organizationId, true, testEvent('settings.sharing_changed'))
    expect((await page(h, path)).status).toBe(200)

    const admin = await h.user({ role: 'owner' })
    await removeMember(
      h.store.users,
      { id: admin.id, role: 'owner', organizationId, organizationSlug: 'default', origin: testOrigin },
      owner.sub,
      h.clock.now(),
    )
    expect((await page(h, path)).status).toBe(404)
    await h.orm.update(h.tables.users).set({ removedAt: null }).where(eq(h.tables.users.id, owner.id))
    expect((await page(h, path)).status).toBe(200)

    const fresh = await h.user()
    const thread = await h.call('POST', '/api/v1/threads', { token: fresh.token, body: { text: 'Bonjour' } })
    await h.app.decorator.engine.idle()
    const freshPath = pathOf(
      (await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/shares`, { token: fresh.token, body: {} })).body
        .url,
    )
    expect((await page(h, freshPath)).status).toBe(200)
    expect((await h.call('DELETE', `/api/v1/threads/${thread.body.thread_id}`, { token: fresh.token })).status).toBe(
      204,
    )
    expect((await page(h, freshPath)).status).toBe(404)
    expect(
      await h.orm.select().from(h.tables.shares).where(eq(h.tables.shares.threadId, thread.body.thread_id)),
    ).toEqual([])
  })

  test('files are shown and served only when included, and only the snapshot’s', async () => {
    await using w = await world()
    const { h, owner } = w
    const thread = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: 'Pictures' } })
    const threadId = thread.body.thread_id
    const uploaded = await upload(
      h,
      owner.token,
      threadId,
      form(
        { name: 'skyline.png', bytes: await png() },
        { name: 'notes.txt', bytes: 'Bring an umbrella', type: 'text/plain' },
      ),
    )
    expect(uploaded.status).toBe(201)
    const [image, text] = uploaded.body as { id: string }[]
    if (!image || !text) throw new Error('no upload')
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, {
      token: owner.token,
      body: { text: 'Here they are', attachment_ids: [image.id, text.id] },
    })
    await h.app.decorator.engine.idle()
    const shareOf = async (includeFiles: boolean) =>
      pathOf(
        (
          await h.call('POST', `/api/v1/threads/${threadId}/shares`, {
            token: owner.token,
            body: { include_files: includeFiles },
          })
        ).body.url,
      )

    const without = await shareOf(false)
    const plain = await page(h, without)
    expect(plain.html).toContain('A file (not shared)')
    // (The echo answer names the files in its text; no file is shown or linked.)
    expect(plain.html).not.toContain('alt="skyline.png"')
    expect(plain.html).not.toContain('/files/')
    expect((await page(h, `${without}/files/${image.id}`)).status).toBe(404)

    const withFiles = await shareOf(true)
    const shown = await page(h, withFiles)
    expect(shown.html).toContain(`<img src="${withFiles}/files/${image.id}" alt="skyline.png"`)
    expect(shown.html).toContain(`href="${withFiles}/files/${text.id}" download="notes.txt"`)
    const file = await h.app.handle(new Request(`${publicUrl}${withFiles}/files/${text.id}`))
    expect({
      status: file.status,
      type: file.headers.get('content-type'),
      cache: file.headers.get('cache-control'),
      robots: file.headers.get('x-robots-tag'),
      csp: file.headers.get('content-security-policy'),
      body: await file.text(),
    }).toEqual({
      status: 200,
      type: 'text/plain; charset=utf-8',
      cache: 'no-store',
      robots: 'noindex',
      csp: "default-src 'none'; frame-ancestors 'none'; sandbox",
      body: 'Bring an umbrella',
    })
    expect((await h.app.handle(new Request(`${publicUrl}${withFiles}/files/${image.id}`))).status).toBe(200)

    // A file uploaded after the link was made is not the snapshot's, even in the same thread.
    const later = await upload(
      h,
      owner.token,
      threadId,
      form({ name: 'later.txt', bytes: 'later', type: 'text/plain' }),
    )
    expect((await page(h, `${withFiles}/files/${later.body[0].id}`)).status).toBe(404)
    // Nor is another thread's.
    expect((await page(h, `${withFiles}/files/${w.threadId}`)).status).toBe(404)

    const id = (await h.call('GET', `/api/v1/threads/${threadId}/shares`, { token: owner.token })).body.data[0].id
    await h.call('DELETE', `/api/v1/threads/${threadId}/shares/${id}`, { token: owner.token })
    expect((await page(h, `${withFiles}/files/${text.id}`)).status).toBe(404)
  })

  test('a link to a thread deleted since its snapshot was read is not stored, and the caller gets 404', async () => {
    await using w = await world()
    const { h, owner } = w
    const organizationId = (await h.store.users.findByEmail(owner.email))?.organizationId ?? 0
    const stored = await h.store.shares.create(
      {
        id: Bun.randomUUIDv7(),
        threadId: Bun.randomUUIDv7(),
        organizationId,
        createdBy: owner.id,
        tokenHash: 'a'.repeat(64),
        includeFiles: false,
        snapshot: { name: null, ownerName: null, messages: [], files: [] },
        now: h.clock.now(),
      },
      testEvent('thread.shared'),
    )
    expect(stored).toBe(false)
    expect(await h.orm.select().from(h.tables.shares)).toEqual([])
  })
})
