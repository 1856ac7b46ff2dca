// The chat in the browser, over pages that work without it: Enter sends (Shift+Enter adds a line, an IME's
// composition is left alone, a touch screen's Enter adds a line), the sent message shows at once and its answer streams in place as Markdown
// (the server's own configuration, markdown-setup.ts), files become removable chips (picker, drop, paste), and
// every form of the conversation posts in the background, the page's parts swapped for the server's new rendering:
// an edit (made in place, edit.ts), a regenerated answer and a switch of versions stream and show without a reload.
import { createMarkdown } from '../markdown-setup'
import { claimDrafts, clearDraft, forgetDrafts, leaveForSignIn, restoreDraft, saveDraft } from './drafts'
import {
  autosize as autosizeEditor,
  cancelEditing,
  closeAfterSave,
  editKeys,
  showEditError,
  startEditing,
} from './edit'
import { checkFiles, type Limits } from './files'
import { highlight, highlightBlocks } from './highlight'
import { live, readList } from './live'
import { closeMenusLikeMenus } from './menus'
import { searchAsYouType } from './search'
import { rewriteTimes } from './times'

const markdown = createMarkdown(highlight)
document.documentElement.classList.add('js')

const byId = <T extends HTMLElement>(id: string): T | null => document.getElementById(id) as T | null

function announce(text: string): void {
  const status = byId('thread-status')
  if (status) status.textContent = text
}

// ---- Following the conversation's end ----

/** Whether the view stays on the newest text: true until the person scrolls up, true again at the bottom. */
let following = true
const nearBottom = (): boolean => document.documentElement.scrollHeight - window.scrollY - window.innerHeight < 80

window.addEventListener('scroll', () => {
  following = nearBottom()
})

function toBottom(): void {
  window.scrollTo({ top: document.documentElement.scrollHeight })
  following = true
}

function keepFollowing(): void {
  if (following) window.scrollTo({ top: document.documentElement.scrollHeight })
}

// ---- Enhancements of server-rendered parts (run again after each swap) ----

function enhance(root: ParentNode): void {
  rewriteTimes(root)
  highlightBlocks(root)
}

// ---- Swapping in the server's rendering ----

/**
 * A control to focus once a later swap brings it back: a message's Regenerate or Edit, replaced by the answer being
 * written until it ends. Taken only while the focus has gone nowhere else.
 */
let pendingFocus: string | null = null

// Back and forward between pages this script swapped in load them again; a change of the fragment alone (the
// phone's sidebar link, a message's link) is no page change.
let shownPath = location.pathname

/** Fetches a page of ours and returns it parsed; null when it is not one. */
async function fetchPage(url: string, init?: RequestInit): Promise<{ doc: Document; response: Response } | null> {
  const response = await fetch(url, { credentials: 'same-origin', headers: { accept: 'text/html' }, ...init })
  // The page is leaving for the sign-in page: nothing of this answer is shown.
  if (leaveForSignIn(response)) return new Promise<never>(() => {})
  if (!(response.headers.get('content-type') ?? '').startsWith('text/html')) return null
  const doc = new DOMParser().parseFromString(await response.text(), 'text/html')
  return { doc, response }
}

function replaceFrom(doc: Document, selector: string): void {
  const fresh = doc.querySelector(selector)
  const current = document.querySelector(selector)
  if (!fresh || !current) return
  keepTyped(current, fresh)
  keepOpen(current, fresh)
  // Enhanced before it is shown, so the new rendering never flashes plain code or UTC times.
  enhance(fresh)
  current.replaceWith(document.adoptNode(fresh))
}

/**
 * Carries what the person has typed into `current`'s fields (a new name in the thread's menu, a comment) over to
 * the same fields of its new rendering: an answer that ends, or a change made elsewhere, swaps the part in mid-typing.
 */
function keepTyped(current: Element, fresh: Element): void {
  for (const field of current.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>('input[name], textarea[name]')) {
    if (['hidden', 'checkbox', 'radio', 'file'].includes(field.type) || field.value === field.defaultValue) continue
    const action = field.form?.getAttribute('action')
    const twin = [
      ...fresh.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>(`[name="${CSS.escape(field.name)}"]`),
    ].find((candidate) => candidate.form?.getAttribute('action') === action)
    if (twin) twin.value = field.value
  }
}

/** A tool call the person opened stays open in the new rendering (an answer that ends swaps the conversation). */
function keepOpen(current: Element, fresh: Element): void {
  for (const opened of current.querySelectorAll<HTMLDetailsElement>('details.tool-call[open][id]')) {
    const twin = fresh.querySelector<HTMLDetailsElement>(`#${CSS.escape(opened.id)}`)
    if (twin) twin.open = true
  }
}

/**
 * Finds, after a swap, what had the focus before it: by ID; a named field by its name and its form's action (as
 * keepTyped matches it); a menu's button by its menu's class. A rendering that ends mid-typing in the thread's menu,
 * or with the menu's button focused, must not drop the person's focus on the page.
 */
function focusFinder(): (() => HTMLElement | null) | null {
  const active = document.activeElement as HTMLElement | null
  if (!active || active === document.body) return null
  if (active.id) return () => document.getElementById(active.id)
  if (active instanceof HTMLInputElement || active instanceof HTMLTextAreaElement) {
    const { name, selectionStart, selectionEnd } = active
    const action = active.form?.getAttribute('action')
    if (!name) return null
    return () => {
      const twin = [
        ...document.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>(`[name="${CSS.escape(name)}"]`),
      ].find((candidate) => candidate.form?.getAttribute('action') === action)
      if (twin && selectionStart !== null && selectionEnd !== null) twin.setSelectionRange(selectionStart, selectionEnd)
      return twin ?? null
    }
  }
  const menu = active.tagName === 'SUMMARY' ? active.parentElement?.classList[0] : undefined
  return menu ? () => document.querySelector<HTMLElement>(`details.${CSS.escape(menu)} > summary`) : null
}

/**
 * Puts the server's new rendering of this page in place: the bar, the conversation and the sidebar's list, keeping
 * the composer (its text and chips) unless the page itself changed (a new thread, a continued one).
 */
function swap(doc: Document, url: string): void {
  const samePage = new URL(url).pathname === location.pathname
  const focused = focusFinder()
  if (samePage && document.getElementById('composer') && doc.getElementById('composer')) {
    // The thread's menu stays open over its own change (archive, privacy), so the person sees it take effect.
    const menuOpen = document.querySelector<HTMLDetailsElement>('.thread-tools')?.open === true
    const freshMenu = doc.querySelector<HTMLDetailsElement>('.thread-tools')
    if (freshMenu) freshMenu.open = menuOpen
    replaceFrom(doc, '.chat-top')
    replaceFrom(doc, '#thread-view')
    const running = doc.getElementById('composer')?.dataset.running === 'true'
    setRunning(running)
  } else {
    replaceFrom(doc, '#main')
    if (!samePage) {
      history.pushState(null, '', new URL(url).pathname)
      shownPath = location.pathname
    }
    chips = []
    renderChips()
    showDraft()
  }
  // The fresh page's list is for its own address's filters; one the person is searching in is read again instead.
  const listOf = (nav: Element | null) => (nav as HTMLElement | null)?.dataset.listQuery
  if (listOf(doc.querySelector('.thread-nav')) === listOf(document.querySelector('.thread-nav')))
    replaceFrom(doc, '.thread-nav')
  else void readList().catch(() => {})
  document.title = doc.title
  const refocus = focused?.()
  if (refocus && refocus !== document.activeElement) refocus.focus({ preventScroll: true })
  const wanted = pendingFocus ? document.getElementById(pendingFocus) : null
  if (wanted) {
    pendingFocus = null
    if (document.activeElement === document.body || document.activeElement === null)
      wanted.focus({ preventScroll: true })
  }
  follow()
}

async function refresh(): Promise<void> {
  // With its query: the sidebar's search and filters are the address's.
  const page = await fetchPage(location.pathname + location.search)
  if (!page?.response.ok) {
    location.reload()
    return
  }
  swap(page.doc, page.response.url)
  keepFollowing()
}

// ---- Streaming an answer ----

let source: EventSource | null = null
/** Set when this page pressed Stop, so the answer that ends is marked as stopped at once. */
let stopping = false

function setRunning(running: boolean): void {
  const composer = byId<HTMLFormElement>('composer')
  if (!composer) return
  composer.dataset.running = running ? 'true' : 'false'
  const stop = composer.querySelector<HTMLButtonElement>('button.stop')
  if (stop) stop.hidden = !running
}

/** Streams the answer shown in #live-answer, if the page has one. */
function follow(): void {
  const live = byId('live-answer')
  const url = live?.dataset.streamUrl
  if (!live || !url || source) return
  const text = live.querySelector<HTMLElement>('.live-text')
  const status = live.querySelector<HTMLElement>('.live-status-text')
  live.setAttribute('aria-busy', 'true')
  setRunning(true)
  let written = ''
  let pending = false
  /** What the last rendering took: a long answer is rendered less often, so the page stays responsive. */
  let cost = 0
  const render = (): void => {
    pending = false
    const started = performance.now()
    if (text) text.innerHTML = markdown.render(written)
    cost = performance.now() - started
    keepFollowing()
  }
  const stream = new EventSource(url)
  source = stream
  const end = (message: string): void => {
    stream.close()
    source = null
    render()
    live.removeAttribute('aria-busy')
    setRunning(false)
    announce(message)
    void refresh()
  }
  stream.addEventListener('token', (event) => {
    live.classList.add('writing')
    if (status) status.textContent = 'Writing the answer…'
    written += (JSON.parse((event as MessageEvent).data) as { token: string }).token
    // At most one rendering per frame, however fast the words come, and a pause of twice the last one's cost.
    if (!pending) {
      pending = true
      setTimeout(() => requestAnimationFrame(render), Math.min(cost * 2, 250))
    }
  })
  stream.addEventListener('done', () => end(stopping ? 'The answer was stopped.' : 'The answer is complete.'))
  stream.addEventListener('error', (event) => {
    // An `error` event from the server carries data; a lost connection does not, and EventSource retries it
    // by itself with Last-Event-ID, which the server resumes from.
    const data = (event as MessageEvent).data as string | undefined
    if (!data && stream.readyState !== EventSource.CLOSED) return
    end(data ? (JSON.parse(data) as { message: string }).message : 'The answer stopped.')
  })
}

// ---- The composer ----

interface Chip {
  file: File
  url: string | null
}
let chips: Chip[] = []

function composerParts() {
  const form = byId<HTMLFormElement>('composer')
  if (!form) return null
  return {
    form,
    text: form.querySelector<HTMLTextAreaElement>('textarea[name="text"]'),
    input: form.querySelector<HTMLInputElement>('input[type="file"]'),
    list: form.querySelector<HTMLUListElement>('.chips'),
    error: form.querySelector<HTMLElement>('.composer-error'),
  }
}

function limits(): Limits | null {
  const raw = byId('composer')?.dataset.limits
  return raw ? (JSON.parse(raw) as Limits) : null
}

function showComposerError(message: string | null): void {
  const error = composerParts()?.error
  if (!error) return
  error.textContent = message ?? ''
  error.hidden = !message
}

/** The chips say which files go with the message; the file input always holds exactly those files. */
function renderChips(): void {
  const parts = composerParts()
  if (!parts?.list || !parts.input) return
  const transfer = new DataTransfer()
  for (const chip of chips) transfer.items.add(chip.file)
  parts.input.files = transfer.files
  parts.list.replaceChildren(
    ...chips.map((chip, index) => {
      const item = document.createElement('li')
      item.className = 'chip'
      const kind = document.createElement('span')
      kind.className = 'chip-kind'
      kind.textContent = chip.file.type === 'application/pdf' ? 'PDF' : chip.url ? 'IMG' : 'TXT'
      if (chip.url) {
        const thumb = document.createElement('img')
        thumb.src = chip.url
        thumb.alt = ''
        // Bytes that are no picture (text named .png) show their kind, never a broken image.
        thumb.addEventListener('error', () => thumb.replaceWith(kind))
        item.append(thumb)
      } else item.append(kind)
      const name = document.createElement('span')
      name.className = 'chip-name'
      name.textContent = chip.file.name
      const remove = document.createElement('button')
      remove.type = 'button'
      remove.className = 'chip-remove'
      remove.dataset.index = String(index)
      remove.setAttribute('aria-label', `Remove ${chip.file.name}`)
      remove.textContent = '×'
      item.append(name, remove)
      return item
    }),
  )
  parts.list.hidden = chips.length === 0
}

/** Adds files as chips; a file the rules refuse is named next to the composer, and the others are kept. */
function addFiles(files: Iterable<File>): void {
  const rules = limits()
  if (!rules) return
  const { accepted, refusals } = checkFiles([...files], chips.length, rules)
  for (const file of accepted) {
    chips.push({ file, url: file.type.startsWith('image/') ? URL.createObjectURL(file) : null })
  }
  renderChips()
  showComposerError(refusals.length > 0 ? refusals.join(' ') : null)
}

function removeChip(index: number): void {
  const [chip] = chips.splice(index, 1)
  if (chip?.url) URL.revokeObjectURL(chip.url)
  renderChips()
  showComposerError(null)
  composerParts()?.text?.focus()
}

function autosize(text: HTMLTextAreaElement): void {
  text.style.height = 'auto'
  text.style.height = `${Math.min(text.scrollHeight, window.innerHeight * 0.4)}px`
}

/** The message the person just sent, shown at once, with the answer's place after it. */
function showSent(text: string): { remove(): void } {
  const list = document.querySelector('#thread-view .messages')
  document.querySelector('#thread-view .welcome')?.remove()
  if (!list) return { remove() {} }
  const mine = document.createElement('li')
  mine.className = 'message message-user pending'
  const author = document.createElement('h3')
  author.className = 'message-author'
  author.textContent = 'You'
  const body = document.createElement('div')
  body.className = 'message-body'
  const rendered = document.createElement('div')
  rendered.className = 'markdown'
  rendered.innerHTML = markdown.render(text)
  body.append(rendered)
  for (const chip of chips) {
    const file = document.createElement('p')
    file.className = 'attachment-document'
    file.textContent = chip.file.name
    body.append(file)
  }
  mine.append(author, body)
  const answer = document.createElement('li')
  answer.className = 'message message-assistant live'
  answer.innerHTML =
    '<h3 class="message-author">Assistant</h3><p class="muted live-status"><span class="typing" aria-hidden="true">' +
    '<span></span><span></span><span></span></span> <span class="live-status-text">Sending…</span></p>'
  list.append(mine, answer)
  toBottom()
  return {
    remove() {
      mine.remove()
      answer.remove()
    },
  }
}

let sending = false

async function send(form: HTMLFormElement): Promise<void> {
  const parts = composerParts()
  const text = parts?.text
  if (!parts || !text || sending) return
  if (text.value.trim() === '') {
    showComposerError('Write a message first.')
    text.focus()
    return
  }
  if (form.dataset.running === 'true') {
    showComposerError('The answer is still being written: wait for it, or stop it.')
    return
  }
  sending = true
  showComposerError(null)
  const body = new FormData(form)
  const shown = showSent(text.value)
  try {
    const page = await fetchPage(form.action, { method: 'POST', body })
    if (!page) throw new Error('no page')
    if (!page.response.ok) {
      // Refused: the reason next to the composer; the text and the files stay for another try.
      shown.remove()
      const reason = page.doc.querySelector('.composer-error, .alert, .page-message')?.textContent?.trim()
      showComposerError(reason || 'The message could not be sent.')
      markRefusedChip(reason ?? '')
      return
    }
    text.value = ''
    clearDraft(form)
    autosize(text)
    for (const chip of chips) if (chip.url) URL.revokeObjectURL(chip.url)
    chips = []
    renderChips()
    swap(page.doc, page.response.url)
    toBottom()
  } catch {
    shown.remove()
    showComposerError('The message could not be sent: check the connection and try again.')
  } finally {
    sending = false
    composerParts()?.text?.focus()
  }
}

/** The server's reason for a refused file starts with the file's name ("fake.png isn't a PNG image…"). */
function markRefusedChip(reason: string): void {
  const items = composerParts()?.list?.children
  chips.forEach((chip, index) => {
    if (reason.startsWith(`${chip.file.name} `)) items?.[index]?.classList.add('refused')
  })
}

async function stop(form: HTMLFormElement, button: HTMLButtonElement): Promise<void> {
  stopping = true
  const body = new FormData()
  body.set('csrf', String(new FormData(form).get('csrf') ?? ''))
  button.disabled = true
  announce('Stopping the answer…')
  try {
    await fetch(button.formAction, { method: 'POST', body, credentials: 'same-origin' })
  } finally {
    button.disabled = false
  }
  // The stream ends by itself once the generator lets go; without one, the page is read again.
  if (!source) await refresh()
}

// ---- Other forms of the conversation: rate, rename, archive, privacy, instructions, choose, continue, edit,
// regenerate, retry, the version arrows ----

async function postInBackground(form: HTMLFormElement, submitter: HTMLElement | null): Promise<void> {
  if (form.dataset.sending === 'true') return
  const fields = new FormData(form, submitter)
  // In the form's own encoding, as the browser would post it: a route reading URL-encoded forms only refuses more.
  const body =
    form.enctype === 'multipart/form-data' ? fields : new URLSearchParams(fields as unknown as Record<string, string>)
  const editing = form.classList.contains('edit-inline')
  form.dataset.sending = 'true'
  let page: Awaited<ReturnType<typeof fetchPage>>
  try {
    page = await fetchPage(form.action, { method: 'POST', body })
  } catch (error) {
    // A lost connection: the editor says so below; other forms fail as they always have.
    if (!editing) throw error
    page = null
  } finally {
    delete form.dataset.sending
  }
  if (editing && !page?.response.ok) {
    // The editor stays open with the text, and says why: the message was too long, or the thread is busy.
    const reason = page?.doc.querySelector('.alert, .page-message')?.textContent?.trim()
    showEditError(form, reason || 'The message could not be saved: check the connection and try again.')
    return
  }
  if (!page?.response.ok) {
    // A refusal: posted again the plain way, so the server's page says why, exactly as without the script.
    if (submitter instanceof HTMLButtonElement && submitter.name) {
      const chosen = document.createElement('input')
      chosen.type = 'hidden'
      chosen.name = submitter.name
      chosen.value = submitter.value
      form.append(chosen)
    }
    form.submit()
    return
  }
  // The control that asked (Regenerate, Edit) comes back with the answer it started: the focus returns to it then.
  pendingFocus = editing ? closeAfterSave() : submitter?.id || null
  swap(page.doc, page.response.url)
  if (page.response.url.includes('#live-answer') || byId('live-answer')) toBottom()
}

/**
 * The composer's model picker: on a thread the choice is saved at once, as the thread's model from its next answer
 * on; on a new conversation it goes with the first message. A refused choice goes back to the one saved.
 */
async function chooseModel(select: HTMLSelectElement): Promise<void> {
  const action = select.dataset.action
  if (!action) return
  const saved = select.dataset.saved ?? [...select.options].find((option) => option.defaultSelected)?.value ?? ''
  const csrf = byId('composer')?.querySelector<HTMLInputElement>('input[name="csrf"]')?.value ?? ''
  const name = select.selectedOptions[0]?.textContent ?? select.value
  let ok = false
  try {
    const page = await fetchPage(action, { method: 'POST', body: new URLSearchParams({ csrf, model: select.value }) })
    ok = page?.response.ok === true
  } catch {}
  if (ok) {
    select.dataset.saved = select.value
    showComposerError(null)
    announce(`The next answer comes from ${name}.`)
  } else {
    select.value = saved
    showComposerError(`${name} could not be chosen: try again.`)
  }
}

// ---- The composer's Tools menu ----

/** Saves run one after another, each sending the menu as it is when its turn comes. */
let toolsSaving: Promise<void> = Promise.resolve()

function toolsFields(form: HTMLFormElement): HTMLInputElement[] {
  return [...form.elements].filter((field): field is HTMLInputElement => field instanceof HTMLInputElement)
}

/** The menu's button and the announcement say what the thread now has. */
function toolsInWords(form: HTMLFormElement): { short: string; sentence: string } {
  const fields = toolsFields(form)
  const choice = fields.find((field) => field.name === 'tools_choice' && field.checked)?.value
  const tools = fields.filter((field) => field.name === 'tools')
  const checked = tools.filter((field) => field.checked).length
  if (choice === 'all') return { short: 'All', sentence: 'every tool the organization has on' }
  if (choice === 'none' || checked === 0) return { short: 'None', sentence: 'no tools' }
  return { short: `${checked} of ${tools.length}`, sentence: `${checked} of ${tools.length} tools` }
}

/**
 * The Tools menu saves each change at once as the thread's tools, as the model picker saves its model. Checking a
 * tool chooses "Only these". A refused change puts the menu back as it was saved: the fields' `defaultChecked`, as
 * the server rendered them and each save since left them.
 */
function chooseTools(form: HTMLFormElement, changed: HTMLInputElement): void {
  if (changed.name === 'tools') {
    const some = toolsFields(form).find((field) => field.name === 'tools_choice' && field.value === 'some')
    if (some) some.checked = true
  }
  toolsSaving = toolsSaving.then(async () => {
    const body = new URLSearchParams(new FormData(form) as unknown as Record<string, string>)
    let ok = false
    try {
      ok = (await fetchPage(form.action, { method: 'POST', body }))?.response.ok === true
    } catch {}
    if (ok) {
      for (const field of toolsFields(form)) field.defaultChecked = field.checked
      showComposerError(null)
      announce(`This thread's answers may use ${toolsInWords(form).sentence}.`)
    } else {
      for (const field of toolsFields(form)) field.checked = field.defaultChecked
      showComposerError('The tools could not be saved: try again.')
    }
    const summary = document.querySelector('.tools-menu .tools-summary')
    if (summary) summary.textContent = toolsInWords(form).short
  })
}

document.addEventListener('submit', (event) => {
  const form = event.target as HTMLFormElement
  const submitter = (event as SubmitEvent).submitter as HTMLButtonElement | null
  if (new URL(form.action).pathname === '/logout') forgetDrafts()
  if (form.method !== 'post' || !form.closest('#main')) return
  event.preventDefault()
  if (form.id === 'composer') {
    if (submitter?.classList.contains('stop')) void stop(form, submitter)
    else void send(form)
    return
  }
  if (form.closest('.choice-form') && submitter) {
    // A choice is a message like any other: it shows at once and its answer streams.
    const text = composerParts()?.text
    if (text) {
      text.value = submitter.value
      const composer = byId<HTMLFormElement>('composer')
      if (composer) void send(composer)
      return
    }
  }
  void postInBackground(form, submitter)
})

document.addEventListener('keydown', (event) => {
  editKeys(event)
  const target = event.target as HTMLElement
  if (!(target instanceof HTMLTextAreaElement) || target.id !== 'composer-text') return
  // While an input method composes (Japanese, Chinese…), Enter confirms the composition, never sends. On a touch
  // screen Enter is the keyboard's only way to a new line, so there it adds one and the Send button sends.
  if (event.key !== 'Enter' || event.shiftKey || event.isComposing || event.keyCode === 229) return
  if (matchMedia('(pointer: coarse)').matches) return
  event.preventDefault()
  const form = byId<HTMLFormElement>('composer')
  if (form) void send(form)
})

document.addEventListener('input', (event) => {
  const target = event.target as HTMLElement
  if (target instanceof HTMLTextAreaElement && target.id === 'edit-inline-text') autosizeEditor(target)
  if (!(target instanceof HTMLTextAreaElement) || target.id !== 'composer-text') return
  autosize(target)
  if (target.form) saveDraft(target.form, target.value)
})

document.addEventListener('change', (event) => {
  const target = event.target as HTMLElement
  if (target instanceof HTMLInputElement && target.id === 'composer-files') {
    // The picker replaces the input's files: they join the chips instead.
    const picked = [...(target.files ?? [])]
    addFiles(picked)
  } else if (target instanceof HTMLSelectElement && target.id === 'composer-model') {
    void chooseModel(target)
  } else if (target instanceof HTMLInputElement && target.form?.id === 'composer-tools') {
    chooseTools(target.form, target)
  }
})

document.addEventListener('paste', (event) => {
  if (!(event.target as HTMLElement).closest?.('#composer')) return
  const files = [...(event.clipboardData?.files ?? [])]
  if (files.length === 0) return
  event.preventDefault()
  addFiles(files)
})

document.addEventListener('dragover', (event) => {
  if (!byId('composer') || !event.dataTransfer?.types.includes('Files')) return
  event.preventDefault()
  document.body.classList.add('dragging')
})
document.addEventListener('dragleave', (event) => {
  if (event.relatedTarget === null) document.body.classList.remove('dragging')
})
document.addEventListener('drop', (event) => {
  document.body.classList.remove('dragging')
  if (!byId('composer') || !event.dataTransfer?.files.length) return
  event.preventDefault()
  addFiles(event.dataTransfer.files)
})

// ---- Copy buttons ----

async function copy(button: HTMLButtonElement, text: string): Promise<void> {
  const label = button.querySelector('.visually-hidden') ?? button
  const before = label.textContent
  try {
    await navigator.clipboard.writeText(text)
    label.textContent = 'Copied'
    button.classList.add('copied')
  } catch {
    label.textContent = 'Copy failed'
  }
  announce(label.textContent ?? '')
  setTimeout(() => {
    label.textContent = before
    button.classList.remove('copied')
  }, 1500)
}

document.addEventListener('click', (event) => {
  const target = event.target as HTMLElement
  const edit = target.closest?.<HTMLAnchorElement>('a.message-edit')
  if (edit && !event.ctrlKey && !event.metaKey && !event.shiftKey) {
    // Edited in place; the link's page is the way without the script (or in a new tab).
    event.preventDefault()
    startEditing(edit)
    return
  }
  const button = target.closest?.('button')
  if (!button) return
  if (button.classList.contains('copy-code')) {
    const code = button.closest('.code-block')?.querySelector('code')?.textContent ?? ''
    void copy(button, code)
  } else if (button.classList.contains('copy-message')) {
    // The Markdown as written, which the page keeps beside the button (thread.tsx).
    const source = button.closest('.message')?.querySelector<HTMLTemplateElement>('template.message-markdown')
    void copy(button, source?.content.textContent ?? '')
  } else if (button.classList.contains('chip-remove')) {
    removeChip(Number(button.dataset.index))
  } else if (button.classList.contains('theme-switch')) {
    cycleTheme(button)
  } else if (button.classList.contains('edit-cancel')) {
    cancelEditing()
  }
})

// ---- Light and dark ----

const themes = ['system', 'light', 'dark'] as const
type Theme = (typeof themes)[number]

function currentTheme(): Theme {
  const chosen = localStorage.getItem('threadhouse-theme')
  return chosen === 'light' || chosen === 'dark' ? chosen : 'system'
}

function showTheme(button: HTMLElement): void {
  button.hidden = false
  button.textContent = `Theme: ${currentTheme()}`
}

function cycleTheme(button: HTMLElement): void {
  const next = themes[(themes.indexOf(currentTheme()) + 1) % themes.length] ?? 'system'
  if (next === 'system') {
    localStorage.removeItem('threadhouse-theme')
    delete document.documentElement.dataset.theme
  } else {
    localStorage.setItem('threadhouse-theme', next)
    document.documentElement.dataset.theme = next
  }
  showTheme(button)
}

// ---- Start ----

window.addEventListener('popstate', () => {
  if (location.pathname !== shownPath) location.reload()
})

/** The composer's kept draft, if any, back in it. */
function showDraft(): void {
  const parts = composerParts()
  if (!parts?.text) return
  restoreDraft(parts.form, parts.text)
  autosize(parts.text)
}

function start(): void {
  closeMenusLikeMenus()
  for (const button of document.querySelectorAll<HTMLElement>('.theme-switch')) showTheme(button)
  enhance(document)
  claimDrafts(document.querySelector('.account-email')?.textContent?.trim())
  showDraft()
  const text = composerParts()?.text
  // A thread opens at its latest message, unless its address names one: the browser's own restoring of the
  // last position (on reload) is turned off, and images that load later do not push the end out of view.
  history.scrollRestoration = 'manual'
  if (!location.hash || location.hash === '#live-answer') {
    toBottom()
    window.addEventListener('load', keepFollowing)
  }
  if (text && !location.hash.startsWith('#message-')) text.focus({ preventScroll: true })
  follow()
  // Changes made elsewhere (another tab, a teammate, the API) come in through the change feed.
  live({ refresh, busy: () => sending || source !== null })
  searchAsYouType()
  setInterval(() => rewriteTimes(document), 60_000)
}

start()
