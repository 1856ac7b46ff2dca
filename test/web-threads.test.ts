// The thread pages through app.handle: sign-in redirects, the list with its filters and paging, the thread page
// (404 exactly like the API), every form with its CSRF and origin checks, streaming, downloads, and escaping.
import { describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import {
  collect,
  type Harness,
  harness,
  parseEvents,
  ScriptedRunner,
  sharedInspector,
  tokensOf,
} from './support/helpers'
import { type Browser, hiddenField, signedIn } from './support/oauth-helpers'
import { storedFiles } from './support/uploads'

// One pool of inspect processes for the tests that send files.
const inspector = sharedInspector()

const xss = '<img src=x onerror=alert(1)><script>alert(2)</script>'

async function png(): Promise<Uint8Array<ArrayBuffer>> {
  return new Uint8Array(
    await sharp({ create: { width: 8, height: 6, channels: 3, background: '#36c' } })
      .png()
      .toBuffer(),
  )
}

async function csrfOf(browser: Browser): Promise<string> {
  return hiddenField(await (await browser.get('/threads')).text(), 'csrf')
}

/** Posts a multipart form the way the pages' forms do. */
async function postMultipart(
  browser: Browser,
  path: string,
  fields: Record<string, string>,
  files: File[] = [],
  headers: Record<string, string> = {},
): Promise<Response> {
  const form = new FormData()
  for (const [name, value] of Object.entries(fields)) form.set(name, value)
  for (const file of files) form.append('attachments', file)
  return browser.request('POST', path, { body: form, headers })
}

async function startThread(
  h: Harness,
  browser: Browser,
  fields: Record<string, string>,
  files: File[] = [],
): Promise<string> {
  const response = await postMultipart(browser, '/threads', { csrf: await csrfOf(browser), ...fields }, files)
  expect(response.status).toBe(303)
  const location = response.headers.get('location') ?? ''
  expect(location).toMatch(/^\/threads\/[0-9a-f-]{36}#live-answer$/)
  await h.app.decorator.engine.idle()
  return location.slice('/threads/'.length, location.indexOf('#'))
}

describe('navigation and sign-in', () => {
  test('/ is a new conversation when signed in, else sign-in; pages need a session', async () => {
    await using h = await harness()
    const anonymous = await h.call('GET', '/')
    expect(anonymous.status).toBe(303)
    expect(anonymous.headers.get('location')).toBe('/login')
    const page = await h.call('GET', '/threads/01234567-89ab-7def-8123-456789abcdef')
    expect(page.headers.get('location')).toBe('/login?next=%2Fthreads%2F01234567-89ab-7def-8123-456789abcdef')
    expect((await h.call('GET', '/threads?q=a')).headers.get('location')).toBe('/login?next=%2Fthreads%3Fq%3Da')
    const { browser } = await signedIn(h)
    const root = await browser.get('/')
    expect(root.status).toBe(200)
    const home = await root.text()
    expect(home).toContain('<form id="composer" class="composer" method="post" action="/threads"')
    expect(home).toContain('<textarea id="composer-text" name="text"')
    expect(home).toContain('<input id="composer-files" class="file-input" name="attachments" type="file" multiple')
    // Resource routes answer 401 rather than redirect.
    expect((await h.call('GET', '/threads/01234567-89ab-7def-8123-456789abcdef/attachments/x')).status).toBe(401)
  })

  test('pages carry a strict policy: own scripts only, no framing, no caching', async () => {
    await using h = await harness()
    const { browser } = await signedIn(h)
    const response = await browser.get('/threads')
    expect(response.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' blob:; " +
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )
    expect(response.headers.get('x-frame-options')).toBe('DENY')
    expect(response.headers.get('cache-control')).toBe('no-store')
    const html = await response.text()
    expect(html).not.toMatch(/(src|href)="https?:/)
    // Only the two bundled scripts, named after a hash of their bytes.
    const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((match) => match[1])
    expect(scripts).toEqual([
      expect.stringMatching(/^ src="\/assets\/client\/theme-[0-9a-f]{16}\.js"$/),
      expect.stringMatching(/^ src="\/assets\/client\/chat-[0-9a-f]{16}\.js" defer$/),
    ])
    const chatPath = /src="(\/assets\/client\/chat-[0-9a-f]+\.js)"/.exec(html)?.[1] ?? ''
    const script = await browser.get(chatPath)
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    const bytes = new Uint8Array(await script.arrayBuffer())
    expect(chatPath).toContain(new Bun.CryptoHasher('sha256').update(bytes).digest('hex').slice(0, 16))
    expect(new TextDecoder().decode(bytes)).toContain('EventSource')
    expect((await browser.get('/assets/client/chat-0000000000000000.js')).status).toBe(404)
  })
})

describe('the threads list', () => {
  test('starting a thread names it after its message, answers it, and lists it', async () => {
    await using h = await harness()
    const { browser } = await signedIn(h)
    const id = await startThread(h, browser, { text: 'Plan a weekend\nin Lyon', name: '' })
    const html = await (await browser.get('/threads')).text()
    expect(html).toContain(
      `<a class="thread-link" href="/threads/${id}" title="Plan a weekend"><span class="thread-name">Plan a weekend</span>`,
    )
    const page = await (await browser.get(`/threads/${id}`)).text()
    expect(page).toContain('<span class="badge state-ready">Ready</span>')
    expect(page).toContain(
      '<p>You said, in turn 1:</p>\n<blockquote>\n<p>Plan a weekend<br>\nin Lyon</p>\n</blockquote>',
    )
  })

  test('a search shows each thread with its passage escaped and the words marked, linked to the message', async () => {
    await using h = await harness()
    const { browser, user } = await signedIn(h)
    const sent = await h.call('POST', '/api/v1/threads', {
      token: user.token,
      body: { name: 'Trip', text: `Dinner in Lyon & ${xss} "quoted"` },
    })
    await h.app.decorator.engine.idle()
    const answer = (await h.call('GET', `/api/v1/threads/${sent.body.thread_id}/messages`, { token: user.token })).body
      .data[1]
    const page = await (await browser.get('/threads?q=lyon')).text()
    const passage = /<span class="thread-snippet">(.*?)<\/span>/s.exec(page)?.[1] ?? 'no passage'
    expect(passage).toBe(
      'You said, in turn 1: &gt; Dinner in <mark>Lyon</mark> &amp; &lt;img src=x onerror=alert(1)&gt;&lt;script&gt;' +
        'alert(2)&lt;/script&gt; &quot;quoted&quot;',
    )
    expect(page).toContain(`href="/threads/${sent.body.thread_id}?q=lyon#message-${answer.id}"`)
    // The list alone, as the search as you type reads it, is the same rendering.
    const list = await (await browser.get(`/threads/list?q=lyon`)).text()
    expect(list).toContain(passage)
    // The thread's page keeps the search in its sidebar.
    expect(await (await browser.get(`/threads/${sent.body.thread_id}?q=lyon`)).text()).toContain(passage)
  })

  test('search, owner, visibility and archived filters, and keyset paging with the filters kept', async () => {
    await using h = await harness({ runner: new ScriptedRunner() })
    const owner = await h.user()
    const { browser, user } = await signedIn(h)
    for (let index = 0; index < 27; index += 1) {
      await h.call('POST', '/api/v1/threads', { token: user.token, body: { name: `Mine ${index}` } })
    }
    await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: 'Theirs lyon' } })
    const secret = await h.call('POST', '/api/v1/threads', {
      token: user.token,
      body: { name: 'Secret lyon', is_private: true },
    })
    await h.call('PATCH', `/api/v1/threads/${secret.body.thread_id}`, { token: user.token, body: { archived: true } })

    // A name that matched the search has its words marked: the name is its text without the marks.
    const names = (html: string) =>
      [...html.matchAll(/class="thread-name">(.*?)<\/span>/g)].map((m) => m[1]?.replace(/<\/?mark>/g, ''))
    expect(names(await (await browser.get('/threads?q=lyon')).text())).toEqual(['Theirs lyon'])
    expect(names(await (await browser.get('/threads?q=lyon&archived=true')).text())).toEqual([
      'Secret lyon',
      'Theirs lyon',
    ])
    expect(names(await (await browser.get('/threads?owned=false')).text())).toEqual(['Theirs lyon'])
    expect(names(await (await browser.get('/threads?private=true&archived=true')).text())).toEqual(['Secret lyon'])

    const first = await (await browser.get('/threads?owned=true')).text()
    expect(names(first)).toHaveLength(25)
    const next = /<a href="([^"]+)" rel="next">/.exec(first)?.[1]?.replaceAll('&amp;', '&') ?? ''
    expect(next).toMatch(/^\/threads\?owned=true&after=[0-9a-f-]{36}$/)
    const second = await (await browser.get(next)).text()
    expect(names(second)).toEqual(['Mine 1', 'Mine 0'])
    expect(second).toContain('<a href="/threads?owned=true">First page</a>')
    expect(second).not.toContain('rel="next"')
    // The selected filters are shown as chosen.
    expect(second).toContain('<option value="true" selected>Me</option>')
  })

  test('a refused file leaves no thread behind and keeps what was typed', async () => {
    await using h = await harness({ inspector })
    const { browser, user } = await signedIn(h)
    const response = await postMultipart(
      browser,
      '/threads',
      { csrf: await csrfOf(browser), text: 'Look at this', name: 'Pictures' },
      [new File(['not an image'], 'photo.png', { type: 'image/png' })],
    )
    expect(response.status).toBe(422)
    const html = await response.text()
    expect(html).toContain(
      '<p id="composer-error" class="alert composer-error" role="alert">photo.png isn&#x27;t a PNG image: its contents are text.</p>',
    )
    expect(html).toContain('>Look at this</textarea>')
    expect(html).toContain('value="Pictures"')
    const listed = await h.call('GET', '/api/v1/threads', { token: user.token })
    expect(listed.body.data).toEqual([])
  })
})

describe('the thread page', () => {
  test('404 exactly like the API for a private thread of someone else, an unknown one and a malformed ID', async () => {
    await using h = await harness({ runner: new ScriptedRunner() })
    const owner = await h.user()
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { is_private: true } })
    const { browser } = await signedIn(h)
    const pages = await Promise.all(
      [created.body.thread_id, '01234567-89ab-7def-8123-456789abcdef', 'not-a-uuid'].map(async (id) => {
        const response = await browser.get(`/threads/${id}`)
        return { status: response.status, main: (await response.text()).replace(/value="[^"]+"/, '') }
      }),
    )
    expect(pages[0]?.status).toBe(404)
    expect(pages[0]?.main).toContain('Thread not found')
    expect(pages[1]).toEqual(pages[0] as (typeof pages)[0])
    expect(pages[2]).toEqual(pages[0] as (typeof pages)[0])
    // The same goes for everything under it.
    const csrf = await csrfOf(browser)
    const posted = await browser.postForm(`/threads/${created.body.thread_id}/update`, { csrf, archived: 'true' })
    expect(posted.status).toBe(404)
  })

  test('images show and documents link through the session download route; feedback is kept and shown', async () => {
    await using h = await harness({ inspector })
    const { browser, user } = await signedIn(h)
    const image = await png()
    const id = await startThread(h, browser, { text: 'See **these**', name: 'Files' }, [
      new File([image], 'photo.png', { type: 'image/png' }),
      new File(['a,b\n1,2\n'], 'table.csv', { type: 'text/csv' }),
    ])
    const messages = (await h.call('GET', `/api/v1/threads/${id}/messages`, { token: user.token })).body.data
    const [question, answer] = messages
    const [, picture, table] = question.contents
    const html = await (await browser.get(`/threads/${id}`)).text()
    expect(html).toContain(
      `<img src="/threads/${id}/attachments/${picture.attachment_id}" alt="photo.png" loading="lazy"/>`,
    )
    expect(html).toContain(`<a href="/threads/${id}/attachments/${table.attachment_id}" download="table.csv">`)
    expect(html).toContain('Attached: photo.png (image/png), table.csv (text/csv).')

    const download = await browser.get(`/threads/${id}/attachments/${table.attachment_id}`)
    expect(download.status).toBe(200)
    expect(await download.text()).toBe('a,b\n1,2\n')
    expect(download.headers.get('content-disposition')).toStartWith('attachment; filename="table.csv"')
    expect(download.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'; sandbox")
    expect(download.headers.get('x-content-type-options')).toBe('nosniff')
    const shown = await browser.get(`/threads/${id}/attachments/${picture.attachment_id}`)
    expect(shown.headers.get('content-type')).toBe('image/png')
    expect(shown.headers.get('content-disposition')).toStartWith('inline;')

    const csrf = hiddenField(html, 'csrf')
    const rated = await browser.postForm(`/threads/${id}/messages/${answer.id}/feedback`, {
      csrf,
      positive: 'false',
      feedback_text: 'Too short',
    })
    expect(rated.status).toBe(303)
    expect(rated.headers.get('location')).toBe(`/threads/${id}#message-${answer.id}`)
    const after = await (await browser.get(`/threads/${id}`)).text()
    expect(after).toMatch(/value="false" class="icon" title="Bad answer" aria-pressed="true"/)
    expect(after).toContain('>Too short</textarea>')
    const refused = await browser.postForm(`/threads/${id}/messages/${answer.id}/feedback`, { csrf, positive: 'x' })
    expect(refused.status).toBe(400)
  })

  test('a follow-up is sent from the composer; a busy thread refuses it and keeps the text', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const { browser, user } = await signedIn(h)
    const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'first' } })
    const id = created.body.thread_id
    const csrf = await csrfOf(browser)
    const busyPage = await (await browser.get(`/threads/${id}`)).text()
    expect(busyPage).toContain(`data-stream-url="/threads/${id}/messages/${created.body.message_id}/stream"`)
    // The composer stays while the answer is written, with Stop in it.
    expect(busyPage).toContain(`formaction="/threads/${id}/stop" formnovalidate title="Stop the answer">`)
    expect(busyPage).toContain('data-running="true"')
    expect(busyPage).toContain('id="composer-text"')
    const busy = await postMultipart(browser, `/threads/${id}/messages`, { csrf, text: 'too soon' })
    expect(busy.status).toBe(409)
    expect(await busy.text()).toContain('>too soon</textarea>')

    const job = await runner.started(created.body.message_id)
    job.token('Done.')
    job.done()
    await h.app.decorator.engine.idle()
    const sent = await postMultipart(browser, `/threads/${id}/messages`, { csrf, text: 'And then?' })
    expect(sent.status).toBe(303)
    expect(sent.headers.get('location')).toBe(`/threads/${id}#live-answer`)
    const messages = (await h.call('GET', `/api/v1/threads/${id}/messages`, { token: user.token })).body.data
    expect(messages.map((message: { contents: { text: string }[] }) => message.contents[0]?.text)).toEqual([
      'first',
      'Done.',
      'And then?',
    ])
  })

  test('a form sent twice at once sends one message; the refused copy keeps none of its files', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner, inspector })
    const { browser, user } = await signedIn(h)
    const id = (await h.call('POST', '/api/v1/threads', { token: user.token, body: {} })).body.thread_id
    const csrf = await csrfOf(browser)
    const send = async () =>
      (
        await postMultipart(browser, `/threads/${id}/messages`, { csrf, text: 'See this' }, [
          new File([await png()], 'photo.png', { type: 'image/png' }),
        ])
      ).status
    // Both pass the ready check before either has its file checked, so both store a file before sending.
    expect((await Promise.all([send(), send()])).sort()).toEqual([303, 409])
    const messages = (await h.call('GET', `/api/v1/threads/${id}/messages`, { token: user.token })).body.data
    expect(messages).toHaveLength(1)
    const rows = await h.orm.select({ id: h.tables.attachments.id }).from(h.tables.attachments)
    expect(rows.map((row) => row.id)).toEqual([messages[0].contents[1].attachment_id])
    expect(await storedFiles(h)).toEqual(rows.map((row) => row.id))
  })

  test('the session stream route serves the answer as server-sent events', async () => {
    await using h = await harness({ echoDelayMs: 0 })
    const { browser, user } = await signedIn(h)
    const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'stream me' } })
    const response = await browser.get(`/threads/${created.body.thread_id}/messages/${created.body.message_id}/stream`)
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    const events = await collect(parseEvents(response))
    expect(tokensOf(events)).toBe('You said, in turn 1:\n\n> stream me')
    expect(events.at(-1)?.event).toBe('done')
  })

  test('choice buttons answer the open question with the chosen option', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const { browser, user } = await signedIn(h)
    const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'Pick one' } })
    const job = await runner.started(created.body.message_id)
    job.block({ type: 'user_get_choice', tool_use_id: 't1', question: 'Which city?', choices: ['Lyon', `Nice ${xss}`] })
    job.done()
    await h.app.decorator.engine.idle()
    const id = created.body.thread_id
    const html = await (await browser.get(`/threads/${id}`)).text()
    expect(html).toContain('<p class="choice-question">Which city?</p>')
    expect(html).toContain('<button type="submit" name="text" value="Lyon">Lyon</button>')
    expect(html).toContain('value="Nice &lt;img src=x onerror=alert(1)&gt;&lt;script&gt;alert(2)&lt;/script&gt;"')
    expect(html).not.toContain(xss)
    const chosen = await browser.postForm(`/threads/${id}/messages`, { csrf: hiddenField(html, 'csrf'), text: 'Lyon' })
    expect(chosen.status).toBe(303)
    const messages = (await h.call('GET', `/api/v1/threads/${id}/messages`, { token: user.token })).body.data
    expect(messages.at(-1).contents).toEqual([{ type: 'text', text: 'Lyon' }])
    // Once answered, the question is no longer open: its options are a plain list.
    const later = await (await browser.get(`/threads/${id}`)).text()
    expect(later).toContain('<ul class="choice-list"><li>Lyon</li>')
  })

  test('rename, archive, privacy and stop; members see the thread but none of the owner’s controls', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const { browser, user } = await signedIn(h)
    const { browser: member } = await signedIn(h)
    const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'long one' } })
    const id = created.body.thread_id
    await runner.started(created.body.message_id)
    const csrf = await csrfOf(browser)
    expect((await browser.postForm(`/threads/${id}/stop`, { csrf })).status).toBe(303)
    // The stopped answer is stored once the generator lets go (at once here; on PostgreSQL a moment later).
    await h.app.decorator.engine.idle()
    expect((await h.call('GET', `/api/v1/threads/${id}`, { token: user.token })).body.state).toBe('ready')
    // Pressing Stop after the end is no error.
    expect((await browser.postForm(`/threads/${id}/stop`, { csrf })).status).toBe(303)

    const memberPage = await (await member.get(`/threads/${id}`)).text()
    expect(memberPage).not.toContain('/update')
    expect(memberPage).not.toContain('id="composer-text"')
    const memberCsrf = hiddenField(memberPage, 'csrf')
    const forbidden = await member.postForm(`/threads/${id}/update`, { csrf: memberCsrf, name: 'Mine now' })
    expect(forbidden.status).toBe(403)
    expect(await forbidden.text()).toContain('Only the owner of a thread can change it')

    expect((await browser.postForm(`/threads/${id}/update`, { csrf, name: `  ${xss}  ` })).status).toBe(303)
    expect((await browser.postForm(`/threads/${id}/update`, { csrf, archived: 'true' })).status).toBe(303)
    expect((await browser.postForm(`/threads/${id}/update`, { csrf, is_private: 'true' })).status).toBe(303)
    const thread = (await h.call('GET', `/api/v1/threads/${id}`, { token: user.token })).body
    expect(thread).toMatchObject({ name: xss, archived: true, is_private: true })
    const page = await (await browser.get(`/threads/${id}`)).text()
    expect(page).toContain(
      '<h1 class="chat-title">&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;alert(2)&lt;/script&gt;</h1>',
    )
    expect(page).toContain('>Unarchive</button>')
    expect(page).toContain('>Make public</button>')
    expect(page).not.toContain(xss)
    expect((await member.get(`/threads/${id}`)).status).toBe(404)
    expect((await browser.postForm(`/threads/${id}/update`, { csrf, name: '' })).status).toBe(303)
    expect((await h.call('GET', `/api/v1/threads/${id}`, { token: user.token })).body.name).toBeNull()
    expect((await browser.postForm(`/threads/${id}/update`, { csrf })).status).toBe(400)
  })

  test('a thread in error offers to continue in a new thread seeded with its summary', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const { browser, user } = await signedIn(h)
    const created = await h.call('POST', '/api/v1/threads', {
      token: user.token,
      body: { name: 'Broken', text: 'Tell me' },
    })
    const failure =
      'Could not reach the AI provider. An administrator should check that it is running and that the model’s base URL is right.'
    ;(await runner.started(created.body.message_id)).error(failure)
    await h.app.decorator.engine.idle()
    const id = created.body.thread_id
    const html = await (await browser.get(`/threads/${id}`)).text()
    expect(html).toContain('<h2 id="failure-title">The answer failed</h2>')
    // In a person's words; the operator's sentence only for administrators.
    expect(html).toContain('<p>Could not reach the AI provider.</p>')
    expect(html).not.toContain('LLM_BASE_URL')
    const admin = await signedIn(h, { role: 'admin' })
    const adminView = await (await admin.browser.get(`/threads/${id}`)).text()
    expect(adminView).toContain(`<strong>For administrators:</strong> <span>${failure}</span>`)
    expect(html).toContain('>Continue in a new thread</button>')
    expect(html).not.toContain('id="composer-text"')
    const continued = await browser.postForm(`/threads/${id}/continue`, { csrf: hiddenField(html, 'csrf') })
    expect(continued.status).toBe(303)
    const next = continued.headers.get('location') ?? ''
    const page = await (await browser.get(next.split('#')[0] ?? '')).text()
    expect(page).toContain('<h1 class="chat-title">Broken (continued)</h1>')
    expect(page).toContain('<h3 id="message-')
    expect(page).toContain('class="message message-summary"')
    expect(page).toContain('<strong>Continued from “Broken”, which stopped with an error:</strong>')
    expect(page).toContain('<blockquote>\n<p>Tell me</p>\n</blockquote>')
    expect(page).toContain('id="composer-text"')
    expect(page).toContain('id="live-answer"')
    // The unanswered question is asked again in the new thread, and its answer is on its way.
    expect(next).toMatch(/^\/threads\/[0-9a-f-]{36}#live-answer$/)
    const newId = next.slice('/threads/'.length, next.indexOf('#'))
    const carried = (await h.call('GET', `/api/v1/threads/${newId}/messages`, { token: user.token })).body.data
    expect(carried.map((message: { role: string }) => message.role)).toEqual(['summary', 'user'])
    expect(carried[1].contents).toEqual([{ type: 'text', text: 'Tell me' }])
    const job = await runner.started(carried[1].id)
    job.token('Here it is.')
    job.done()
    await h.app.decorator.engine.idle()
    expect((await h.call('GET', `/api/v1/threads/${newId}`, { token: user.token })).body.state).toBe('ready')
  })
})

describe('export and delete', () => {
  test('the menu offers both exports to readers, which download what the API exports, with the session', async () => {
    await using h = await harness()
    const { browser, user } = await signedIn(h)
    const { browser: member } = await signedIn(h)
    const { browser: stranger } = await signedIn(h, { org: 'elsewhere' })
    const id = await startThread(h, browser, { text: 'Export **me**', name: 'Kept' })
    for (const page of [
      await (await browser.get(`/threads/${id}`)).text(),
      await (await member.get(`/threads/${id}`)).text(),
    ]) {
      expect(page).toContain(
        `<a class="tool-link" href="/threads/${id}/export?format=markdown" download="">Export as Markdown</a>`,
      )
      expect(page).toContain(
        `<a class="tool-link" href="/threads/${id}/export?format=json" download="">Export as JSON</a>`,
      )
    }
    const markdown = await browser.get(`/threads/${id}/export?format=markdown`)
    expect({
      status: markdown.status,
      type: markdown.headers.get('content-type'),
      disposition: markdown.headers.get('content-disposition'),
    }).toEqual({
      status: 200,
      type: 'text/markdown; charset=utf-8',
      disposition: `attachment; filename="thread-${id}.md"`,
    })
    const text = await markdown.text()
    expect(text.startsWith('# Kept\n')).toBe(true)
    expect(text).toContain('Export **me**')
    const json = await member.get(`/threads/${id}/export`)
    expect(json.headers.get('content-disposition')).toBe(`attachment; filename="thread-${id}.json"`)
    const exported = (await json.json()) as Record<string, unknown>
    const api = (await h.call('GET', `/api/v1/threads/${id}/export?format=json`, { token: user.token })).body
    expect({ ...exported, exported_at: null }).toEqual({ ...api, exported_at: null })
    expect((await browser.get(`/threads/${id}/export?format=pdf`)).status).toBe(400)
    expect((await stranger.get(`/threads/${id}/export`)).status).toBe(404)
    expect((await h.call('GET', `/threads/${id}/export`)).status).toBe(401)
  })

  test('the owner deletes after a confirmation page and lands on /; others are refused', async () => {
    await using h = await harness({ inspector })
    const { browser, user } = await signedIn(h)
    const { browser: member } = await signedIn(h)
    const id = await startThread(h, browser, { text: 'with a picture' }, [new File([await png()], 'p.png')])
    expect((await storedFiles(h)).length).toBeGreaterThan(0)
    const ownerPage = await (await browser.get(`/threads/${id}`)).text()
    expect(ownerPage).toContain(`<a class="tool-link danger-link" href="/threads/${id}/delete">Delete thread…</a>`)
    const memberPage = await (await member.get(`/threads/${id}`)).text()
    expect(memberPage).not.toContain(`/threads/${id}/delete`)
    const refusedPage = await member.get(`/threads/${id}/delete`)
    expect(refusedPage.status).toBe(403)
    const refused = await member.postForm(`/threads/${id}/delete`, { csrf: hiddenField(memberPage, 'csrf') })
    expect(refused.status).toBe(403)
    expect(await refused.text()).toContain('Only the owner of a thread can delete it')

    const confirm = await browser.get(`/threads/${id}/delete`)
    expect(confirm.status).toBe(200)
    const confirmation = await confirm.text()
    expect(confirmation).toContain(`<form method="post" action="/threads/${id}/delete">`)
    expect(confirmation).toContain('>Delete thread</button>')
    const deleted = await browser.postForm(`/threads/${id}/delete`, { csrf: hiddenField(confirmation, 'csrf') })
    expect({ status: deleted.status, location: deleted.headers.get('location') }).toEqual({
      status: 303,
      location: '/',
    })
    expect((await h.call('GET', `/api/v1/threads/${id}`, { token: user.token })).status).toBe(404)
    expect((await browser.get(`/threads/${id}`)).status).toBe(404)
    expect((await browser.get(`/threads/${id}/delete`)).status).toBe(404)
    expect(await h.orm.select().from(h.tables.attachments)).toEqual([])
    expect(await storedFiles(h)).toEqual([])
  })
})

describe('CSRF', () => {
  test('every form is refused without its token, with another session’s token, or from another site', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const { browser, user } = await signedIn(h)
    const { browser: other } = await signedIn(h)
    const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: {} })
    const id = created.body.thread_id
    const csrf = await csrfOf(browser)
    const otherCsrf = await csrfOf(other)
    const posts: [string, Record<string, string>][] = [
      ['/threads', { text: 'hello' }],
      [`/threads/${id}/messages`, { text: 'hello' }],
      [`/threads/${id}/update`, { name: 'x' }],
      [`/threads/${id}/stop`, {}],
      [`/threads/${id}/continue`, {}],
      [`/threads/${id}/messages/01234567-89ab-7def-8123-456789abcdef/feedback`, { positive: 'true' }],
      [`/threads/${id}/delete`, {}],
    ]
    for (const [path, fields] of posts) {
      expect((await browser.postForm(path, fields)).status).toBe(403)
      expect((await browser.postForm(path, { ...fields, csrf: otherCsrf })).status).toBe(403)
      const crossSite = await browser.postForm(
        path,
        { ...fields, csrf },
        { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      )
      expect(crossSite.status).toBe(403)
      expect(await crossSite.text()).toContain('did not come from a Threadhouse page')
    }
    const threads = (await h.call('GET', '/api/v1/threads', { token: user.token })).body.data
    expect(threads).toHaveLength(1)
    expect(threads[0].name).toBeNull()
  })
})

describe('escaping', () => {
  test('thread names, messages, filenames, comments and the search box never inject markup', async () => {
    await using h = await harness({ inspector })
    const { browser, user } = await signedIn(h)
    const id = await startThread(h, browser, { text: `${xss} [x](javascript:alert(3))`, name: xss }, [
      new File(['text'], `"><svg onload=alert(4)>.txt`, { type: 'text/plain' }),
    ])
    const answer = (await h.call('GET', `/api/v1/threads/${id}/messages`, { token: user.token })).body.data[1]
    const csrf = await csrfOf(browser)
    await browser.postForm(`/threads/${id}/messages/${answer.id}/feedback`, {
      csrf,
      positive: 'true',
      feedback_text: `</textarea>${xss}`,
    })
    const pages = [
      await (await browser.get(`/threads/${id}`)).text(),
      await (await browser.get(`/threads?q=${encodeURIComponent(`"><script>alert(5)</script>`)}`)).text(),
      await (await browser.get('/threads')).text(),
    ]
    for (const html of pages) {
      expect(html).not.toContain('<img src=x')
      expect(html).not.toContain('<script>')
      expect(html).not.toContain('<svg onload')
      expect(html).not.toContain('href="javascript:')
      expect(html).not.toMatch(/<\/textarea>&lt;img/)
    }
    // Browsers (and FormData) send a file name's quote as %22.
    expect(pages[0]).toContain('<span>%22&gt;&lt;svg onload=alert(4)&gt;.txt</span>')
    expect(pages[0]).toContain('[x](javascript:alert(3))</p>')
    expect(pages[0]).toContain('&lt;/textarea&gt;&lt;img src=x onerror=alert(1)&gt;')
    expect(pages[1]).toContain('value="&quot;&gt;&lt;script&gt;alert(5)&lt;/script&gt;"')
  })
})
