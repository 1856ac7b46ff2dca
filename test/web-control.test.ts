// Conversation control in the thread pages through app.handle, as plain form posts (the pages without JavaScript):
// regenerate and its `‹ 2/2 ›`, switching versions, editing on a page of its own (refusals shown with the text),
// Retry on a failed answer, the thread's instructions in its menu, and the model named under each answer. The
// browser's side (in place, by keyboard, streaming without a reload) is web-control-browser.test.ts.
import { describe, expect, test } from 'bun:test'
import { type Harness, harness, ScriptedRunner, sharedInspector } from './support/helpers'
import { type Browser, hiddenField, signedIn } from './support/oauth-helpers'
import { form, upload } from './support/uploads'

// The inspect processes that check an uploaded file, for the edit that keeps its message's files.
const inspector = sharedInspector()

async function csrfOf(browser: Browser): Promise<string> {
  return hiddenField(await (await browser.get('/threads')).text(), 'csrf')
}

interface Thread {
  h: Harness
  runner: ScriptedRunner
  browser: Browser
  csrf: string
  id: string
  /** The first user message. */
  question: string
  token: string
}

/** Lets the scripted answer to this user message finish with `text`, and waits until it is stored. */
async function answer(runner: ScriptedRunner, h: Harness, messageId: string, text: string): Promise<void> {
  const job = await runner.started(messageId)
  job.token(text)
  job.done()
  // A regenerated answer runs under the same user message's ID: the next `started` must wait for its new job.
  runner.jobs.delete(messageId)
  await h.app.decorator.engine.idle()
}

async function fail(runner: ScriptedRunner, h: Harness, messageId: string, error: string): Promise<void> {
  const job = await runner.started(messageId)
  job.error(error)
  runner.jobs.delete(messageId)
  await h.app.decorator.engine.idle()
}

async function threadWithAnswer(h: Harness, runner: ScriptedRunner, text = 'Name a colour'): Promise<Thread> {
  const { browser, user } = await signedIn(h)
  const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { name: 'Colours', text } })
  await answer(runner, h, created.body.message_id, 'Blue.')
  return {
    h,
    runner,
    browser,
    csrf: await csrfOf(browser),
    id: created.body.thread_id,
    question: created.body.message_id,
    token: user.token,
  }
}

async function page(thread: Thread): Promise<string> {
  const response = await thread.browser.get(`/threads/${thread.id}`)
  expect(response.status).toBe(200)
  return response.text()
}

async function messages(thread: Thread): Promise<{ id: string; role: string; contents: { text?: string }[] }[]> {
  return (await thread.h.call('GET', `/api/v1/threads/${thread.id}/messages`, { token: thread.token })).body.data
}

function post(thread: Thread, path: string, fields: Record<string, string> = {}): Promise<Response> {
  return thread.browser.postForm(`/threads/${thread.id}${path}`, { csrf: thread.csrf, ...fields })
}

describe('regenerate and versions', () => {
  test('Regenerate posts a new answer that streams in; ‹ › switches between the two, by plain forms', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const thread = await threadWithAnswer(h, runner)
    const first = await page(thread)
    // One answer: Regenerate, and no versions yet.
    expect(first).toContain(`action="/threads/${thread.id}/messages/${thread.question}/regenerate" class="regenerate"`)
    expect(first).toContain('title="Regenerate the answer"')
    expect(first).not.toContain('class="versions"')

    const regenerated = await post(thread, `/messages/${thread.question}/regenerate`)
    expect(regenerated.status).toBe(303)
    expect(regenerated.headers.get('location')).toBe(`/threads/${thread.id}#live-answer`)
    // While the new answer is written the page follows it, and offers no change.
    const running = await page(thread)
    expect(running).toContain(`data-stream-url="/threads/${thread.id}/messages/${thread.question}/stream"`)
    expect(running).not.toContain('/regenerate"')
    expect(running).not.toContain('class="icon-link message-edit"')
    await answer(runner, h, thread.question, 'Green.')

    const [, newAnswer] = await messages(thread)
    expect(newAnswer?.contents[0]?.text).toBe('Green.')
    const after = await page(thread)
    expect(after).toContain('<legend class="visually-hidden">Version 2 of 2</legend>')
    expect(after).toContain('<span class="version-count" aria-hidden="true">2/2</span>')
    // The earlier answer is one form away; there is nothing after the newest.
    const previous = /action="\/threads\/[0-9a-f-]+\/messages\/([0-9a-f-]+)\/activate"/.exec(after)?.[1] ?? ''
    expect(previous).not.toBe('')
    expect(after).toContain('id="versions-1-next" aria-disabled="true"')

    const switched = await post(thread, `/messages/${previous}/activate`)
    expect(switched.status).toBe(303)
    expect(switched.headers.get('location')).toBe(`/threads/${thread.id}#message-${previous}`)
    const back = await page(thread)
    expect(back).toContain('<p>Blue.</p>')
    expect(back).not.toContain('<p>Green.</p>')
    expect(back).toContain('<span class="version-count" aria-hidden="true">1/2</span>')
    expect(back).toContain('id="versions-1-previous" aria-disabled="true"')
    expect((await messages(thread)).map((message) => message.contents[0]?.text)).toEqual(['Name a colour', 'Blue.'])
  })

  test('a reader who is not the owner sees the count but no arrows, Edit or Regenerate; their posts are refused', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const thread = await threadWithAnswer(h, runner)
    await post(thread, `/messages/${thread.question}/regenerate`)
    await answer(runner, h, thread.question, 'Green.')
    const other = await signedIn(h)
    const html = await (await other.browser.get(`/threads/${thread.id}`)).text()
    expect(html).toContain('<span class="version-count" aria-hidden="true">2/2</span>')
    expect(html).not.toContain('/activate"')
    expect(html).not.toContain('/regenerate"')
    expect(html).not.toContain('message-edit')
    const refused = await other.browser.postForm(`/threads/${thread.id}/messages/${thread.question}/regenerate`, {
      csrf: await csrfOf(other.browser),
    })
    expect(refused.status).toBe(403)
    expect(refused.headers.get('content-type')).toStartWith('text/html')
  })
})

describe('edit', () => {
  test('the edit page holds the text; saving sends it as a new version whose answer starts', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const thread = await threadWithAnswer(h, runner)
    const html = await page(thread)
    const editHref = `/threads/${thread.id}/messages/${thread.question}/edit`
    expect(html).toContain(`href="${editHref}"`)
    const editPage = await thread.browser.get(editHref)
    expect(editPage.status).toBe(200)
    const form = await editPage.text()
    expect(form).toContain('<h1 id="edit-title">Edit your message</h1>')
    expect(form).toContain(`<form method="post" action="${editHref}">`)
    expect(form).toContain('<textarea id="edit-text" name="text" rows="8" required>Name a colour</textarea>')

    const saved = await thread.browser.postForm(editHref, { csrf: thread.csrf, text: 'Name a fruit' })
    expect(saved.status).toBe(303)
    expect(saved.headers.get('location')).toBe(`/threads/${thread.id}#live-answer`)
    const listed = await messages(thread)
    expect(listed.map((message) => message.contents[0]?.text)).toEqual(['Name a fruit'])
    const edited = listed[0]?.id ?? ''
    expect(edited).not.toBe(thread.question)
    await answer(runner, h, edited, 'Pear.')
    const after = await page(thread)
    expect(after).toContain('<p>Name a fruit</p>')
    expect(after).toContain('<p>Pear.</p>')
    // The user message has two versions now; the first brings its own answer back.
    expect(after).toContain('id="versions-0-previous"')
    expect((await post(thread, `/messages/${thread.question}/activate`)).status).toBe(303)
    expect((await messages(thread)).map((message) => message.contents[0]?.text)).toEqual(['Name a colour', 'Blue.'])
  })

  test("the new version keeps the edited message's files, named on the edit page", async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner, inspector })
    const { browser, user } = await signedIn(h)
    const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: {} })
    const id = created.body.thread_id
    const uploaded = await upload(h, user.token, id, form({ name: 'notes.md', bytes: '# Notes' }))
    expect(uploaded.status).toBe(201)
    const fileId = uploaded.body[0].id
    const sent = await h.call('POST', `/api/v1/threads/${id}/messages`, {
      token: user.token,
      body: { text: 'Read this', attachment_ids: [fileId] },
    })
    await answer(runner, h, sent.body.message_id, 'Read.')
    const editHref = `/threads/${id}/messages/${sent.body.message_id}/edit`
    expect(await (await browser.get(editHref)).text()).toContain('Its files go with it: <span>notes.md</span>.')
    const saved = await browser.postForm(editHref, { csrf: await csrfOf(browser), text: 'Summarise this' })
    expect(saved.status).toBe(303)
    const [edited] = (await h.call('GET', `/api/v1/threads/${id}/messages`, { token: user.token })).body.data
    expect(edited.contents).toEqual([
      { type: 'text', text: 'Summarise this' },
      { type: 'document', attachment_id: fileId },
    ])
    await answer(runner, h, edited.id, 'Summarised.')
  })

  test('a refused edit is the edit page again with the reason and the text; other messages are not found', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const thread = await threadWithAnswer(h, runner)
    const editHref = `/threads/${thread.id}/messages/${thread.question}/edit`
    const empty = await thread.browser.postForm(editHref, { csrf: thread.csrf, text: '   ' })
    expect(empty.status).toBe(400)
    const body = await empty.text()
    expect(body).toContain('<p class="alert" role="alert">Write a message first.</p>')
    expect(body).toContain('<textarea id="edit-text" name="text" rows="8" required>   </textarea>')
    // An answer is no message to edit.
    const [, reply] = await messages(thread)
    expect((await thread.browser.get(`/threads/${thread.id}/messages/${reply?.id}/edit`)).status).toBe(404)
    // While an answer is written, an edit waits: refused with the text kept.
    await post(thread, `/messages/${thread.question}/regenerate`)
    const busy = await thread.browser.postForm(editHref, { csrf: thread.csrf, text: 'Too soon' })
    expect(busy.status).toBe(409)
    expect(await busy.text()).toContain('>Too soon</textarea>')
    await answer(runner, h, thread.question, 'Green.')
  })
})

describe('a failed answer', () => {
  test('says what happened in plain words and Retry regenerates it; the thread goes on', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const { browser, user } = await signedIn(h)
    const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'Tell me' } })
    await fail(
      runner,
      h,
      created.body.message_id,
      'Could not reach the AI provider. An administrator should check that LLM_BASE_URL is right.',
    )
    const id = created.body.thread_id
    const html = await (await browser.get(`/threads/${id}`)).text()
    expect(html).toContain('<h2 id="failure-title">The answer failed</h2>')
    expect(html).toContain('<p>Could not reach the AI provider.</p>')
    expect(html).toContain(`action="/threads/${id}/messages/${created.body.message_id}/regenerate"`)
    expect(html).toContain('id="retry"')
    // The question can be edited too; no composer while the thread is in error.
    expect(html).toContain(`href="/threads/${id}/messages/${created.body.message_id}/edit"`)
    expect(html).not.toContain('id="composer-text"')
    const csrf = hiddenField(html, 'csrf')
    const retried = await browser.postForm(`/threads/${id}/messages/${created.body.message_id}/regenerate`, { csrf })
    expect(retried.status).toBe(303)
    await answer(runner, h, created.body.message_id, 'Here it is.')
    const after = await (await browser.get(`/threads/${id}`)).text()
    expect(after).not.toContain('failure-title')
    expect(after).toContain('<p>Here it is.</p>')
    expect(after).toContain('id="composer-text"')
  })
})

describe('instructions', () => {
  test("the thread's menu saves instructions, empties them, and refuses too many characters with the text kept", async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const thread = await threadWithAnswer(h, runner)
    expect(await page(thread)).toContain(
      `<form method="post" action="/threads/${thread.id}/settings" class="instructions">`,
    )
    const saved = await post(thread, '/settings', { instructions: 'Answer in French.' })
    expect(saved.status).toBe(303)
    const settings = await h.call('GET', `/api/v1/threads/${thread.id}/settings`, { token: thread.token })
    expect(settings.body.instructions).toBe('Answer in French.')
    expect(await page(thread)).toContain('aria-describedby="thread-instructions-hint">Answer in French.</textarea>')
    const long = 'x'.repeat(8001)
    const refused = await post(thread, '/settings', { instructions: long })
    expect(refused.status).toBe(400)
    const body = await refused.text()
    expect(body).toContain('<details class="thread-tools" open>')
    expect(body).toContain('id="thread-instructions-error" class="alert" role="alert"')
    expect(body).toContain(`>${long}</textarea>`)
    expect((await post(thread, '/settings', { instructions: '' })).status).toBe(303)
    const cleared = await h.call('GET', `/api/v1/threads/${thread.id}/settings`, { token: thread.token })
    expect(cleared.body.instructions).toBeNull()
  })
})

describe('models', () => {
  const twoModels = JSON.stringify([
    { id: 'swift', name: 'Swift <Echo>', provider: 'echo' },
    { id: 'steady', name: 'Steady Echo', provider: 'echo', default: true },
  ])

  test('the composer offers the models; a new thread takes the chosen one, a message posted with another changes it', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner, config: { LLM_MODELS: twoModels } })
    const { browser, user } = await signedIn(h)
    const home = await (await browser.get('/')).text()
    expect(home).toContain('<select id="composer-model" name="model" title="The model that answers">')
    expect(home).toContain('<option value="steady" selected>Steady Echo</option>')
    // Names are text.
    expect(home).toContain('<option value="swift">Swift &lt;Echo&gt;</option>')
    const csrf = await csrfOf(browser)
    const form = new FormData()
    for (const [name, value] of Object.entries({ csrf, text: 'Hello', model: 'swift' })) form.set(name, value)
    const started = await browser.request('POST', '/threads', { body: form })
    expect(started.status).toBe(303)
    const location = started.headers.get('location') ?? ''
    const id = location.slice('/threads/'.length, location.indexOf('#'))
    const settings = async () =>
      (await h.call('GET', `/api/v1/threads/${id}/settings`, { token: user.token })).body as { model: string | null }
    expect((await settings()).model).toBe('swift')
    const [question] = (await h.call('GET', `/api/v1/threads/${id}/messages`, { token: user.token })).body.data
    await answer(runner, h, question.id, 'Hi.')
    const page = await (await browser.get(`/threads/${id}`)).text()
    expect(page).toContain('<option value="swift" selected>Swift &lt;Echo&gt;</option>')
    expect(page).toContain(`data-action="/threads/${id}/settings"`)
    // The answer names the model that wrote it.
    expect(page).toContain(
      '<span class="answer-model" title="The model that wrote this answer">Swift &lt;Echo&gt;</span>',
    )

    // Without the script the picker goes with the next message.
    const reply = new FormData()
    for (const [name, value] of Object.entries({ csrf, text: 'Again', model: 'steady' })) reply.set(name, value)
    expect((await browser.request('POST', `/threads/${id}/messages`, { body: reply })).status).toBe(303)
    expect((await settings()).model).toBe('steady')
    // A model the organization may not use is refused, on the thread as on a new one.
    const refused = await browser.postForm(`/threads/${id}/settings`, { csrf, model: 'nonesuch' })
    expect(refused.status).toBe(400)
    const other = new FormData()
    for (const [name, value] of Object.entries({ csrf, text: 'Hello', model: 'nonesuch' })) other.set(name, value)
    const refusedStart = await browser.request('POST', '/threads', { body: other })
    expect(refusedStart.status).toBe(400)
    expect(await refusedStart.text()).toContain('Choose one of the models offered.')
  })

  test("a thread's model no longer offered is said beside the picker, the default chosen", async () => {
    await using h = await harness({ config: { LLM_MODELS: twoModels } })
    const { browser, user } = await signedIn(h)
    const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { name: 'Old' } })
    const id = created.body.thread_id
    // As if the model had been configured when it was chosen, and removed since.
    await h.store.models.saveThreadSettings(id, { model: 'retired' })
    const page = await (await browser.get(`/threads/${id}`)).text()
    expect(page).toContain('<option value="steady" selected>Steady Echo</option>')
    expect(page).toContain(
      '<span id="composer-model-note" class="model-note">retired is no longer available: Steady Echo answers instead.</span>',
    )
  })

  test('with one model there is nothing to pick', async () => {
    await using h = await harness()
    const { browser } = await signedIn(h)
    expect(await (await browser.get('/')).text()).not.toContain('composer-model')
  })
})
