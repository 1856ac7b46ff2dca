// The chat's pages follow changes made elsewhere (another tab, a teammate, an API client) through the change feed:
// one EventSource per page on /threads/events, which sends nothing while nothing changes. A change to another
// thread swaps in the sidebar's list again (/threads/list); a change to the open thread reads the page again
// through the chat's own refresh, which also streams an answer that started elsewhere. The feed stays closed while
// the page is hidden (each open one holds a connection, and a browser gives a host six over HTTP/1.1) and resumes
// from its last event when the page is shown again.

export interface LiveHooks {
  /** Reads the page again and swaps in its parts (the bar, the conversation, the sidebar), streaming a live answer. */
  refresh(): Promise<void>
  /** While the page sends or streams an answer of its own, it reads itself again when that ends. */
  busy(): boolean
}

interface ThreadEvent {
  id: string
}

const threadPath = /^\/threads\/([0-9a-f-]{36})$/

/** The open thread's ID, if the page shows one. */
function openThread(): string | null {
  return threadPath.exec(location.pathname)?.[1] ?? null
}

/** The sidebar's list as this page shows it: its filters (the address's query), and the open thread marked. */
function listUrl(): string {
  const params = new URLSearchParams(location.search)
  const current = openThread()
  if (current) params.set('current', current)
  const query = params.toString()
  return query === '' ? '/threads/list' : `/threads/list?${query}`
}

export function live(hooks: LiveHooks): void {
  const nav = document.querySelector<HTMLElement>('.thread-nav')
  if (!nav) return
  /** The feed's place this page has caught up to: first where its list was read, then each event's ID. */
  let position = nav.dataset.feedAfter ?? ''
  let source: EventSource | null = null
  /** What a change asks to read again: the sidebar's list, or the whole page. */
  let wanted: 'nothing' | 'list' | 'page' = 'nothing'
  let reading = false

  const want = (what: 'list' | 'page'): void => {
    if (wanted !== 'page') wanted = what
    void catchUp()
  }

  /** Reads again what changes asked for, one read at a time: changes that come during a read make one more. */
  async function catchUp(): Promise<void> {
    // A hidden page reads nothing: what it was told before it hid is read when it is shown again.
    if (reading || document.hidden) return
    reading = true
    try {
      while (wanted !== 'nothing' && !document.hidden) {
        const what = wanted
        wanted = 'nothing'
        const form = what === 'page' ? editedForm() : null
        if (form) {
          // Swapping the thread would lose what is typed in its forms (a new name, a comment): the page is read
          // once focus leaves the form, and the list now.
          waitForLeaving(form, () => want('page'))
          await readList()
        } else if (what === 'page' && !hooks.busy()) await hooks.refresh()
        else await readList()
      }
    } catch {
      // A failed read is left for the next change (or the next page) to make good.
    } finally {
      reading = false
    }
  }

  function open(): void {
    if (source) return
    const stream = new EventSource(position === '' ? '/threads/events' : `/threads/events?after=${position}`)
    source = stream
    const told = (event: Event): void => {
      position = (event as MessageEvent).lastEventId || position
    }
    stream.addEventListener('ready', (event) => {
      told(event)
      document.documentElement.dataset.live = 'ready'
    })
    stream.addEventListener('reset', (event) => {
      told(event)
      want(openThread() ? 'page' : 'list')
    })
    for (const type of ['thread.created', 'thread.updated', 'thread.deleted', 'thread.hidden']) {
      stream.addEventListener(type, (event) => {
        told(event)
        // A page read since the change already shows it: the page's own answer, which the chat reads again as soon as
        // it ends, is told here a moment later, and reading the page again then would swap out what the person has
        // started typing into it since (a comment, say).
        if (!newerThanPage((event as MessageEvent).lastEventId)) return
        const { id } = JSON.parse((event as MessageEvent).data) as ThreadEvent
        want(id === openThread() ? 'page' : 'list')
      })
    }
    stream.addEventListener('error', (event) => {
      // A lost connection carries no data and EventSource reconnects by itself with Last-Event-ID. An `error` event
      // from the server (the session ended) or a refused reconnection (signed out: 401) ends the feed.
      if (!(event as MessageEvent).data && stream.readyState !== EventSource.CLOSED) return
      close()
    })
  }

  function close(): void {
    source?.close()
    source = null
    delete document.documentElement.dataset.live
  }

  // Hidden, the page needs no news; shown again, it resumes after the last event it had, hearing only of what
  // changed meanwhile. Leaving the page (or entering the back-forward cache) closes the feed at once.
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) close()
    else {
      open()
      void catchUp()
    }
  })
  window.addEventListener('pagehide', close)
  window.addEventListener('pageshow', (event) => {
    if (event.persisted && !document.hidden) open()
  })
  if (!document.hidden) open()
}

/** Whether the change at `eventId` came after the page was read: each page read's sidebar says where the feed then stood. */
function newerThanPage(eventId: string): boolean {
  const shown = document.querySelector<HTMLElement>('.thread-nav')?.dataset.feedAfter
  if (!shown || !/^\d+$/.test(shown) || !/^\d+$/.test(eventId)) return true
  return BigInt(eventId) > BigInt(shown)
}

/** The conversation's form (other than the composer, which swaps keep) whose text field has focus, if any. */
function editedForm(): HTMLFormElement | null {
  const active = document.activeElement
  if (!(active instanceof HTMLInputElement || active instanceof HTMLTextAreaElement)) return null
  const form = active.closest('form')
  return form?.closest('#main') && form.id !== 'composer' ? form : null
}

const waiting = new WeakSet<HTMLFormElement>()

/** Calls `then` once focus leaves the form (moving between its own fields and buttons is not leaving). */
function waitForLeaving(form: HTMLFormElement, then: () => void): void {
  if (waiting.has(form)) return
  waiting.add(form)
  const leave = (event: FocusEvent): void => {
    if (event.relatedTarget instanceof Node && form.contains(event.relatedTarget)) return
    form.removeEventListener('focusout', leave)
    waiting.delete(form)
    then()
  }
  form.addEventListener('focusout', leave)
}

/**
 * Swaps in the sidebar's list again, keeping focus on the thread link it was on; answers whether it did. A read
 * that ends after the page's filters changed (the search typed on) is not shown: a newer read shows the list
 * they ask for, so a slow answer to an earlier search never replaces a later one. `signal` cancels the read.
 */
export async function readList(signal?: AbortSignal): Promise<boolean> {
  const url = listUrl()
  const response = await fetch(url, { credentials: 'same-origin', headers: { accept: 'text/html' }, signal })
  if (!response.ok) return false
  const html = await response.text()
  if (signal?.aborted || url !== listUrl()) return false
  const fresh = new DOMParser().parseFromString(html, 'text/html').querySelector('.thread-nav')
  const current = document.querySelector('.thread-nav')
  if (!fresh || !current) return false
  const focused = document.activeElement?.closest('.thread-nav') ? document.activeElement.getAttribute('href') : null
  // The mark stays the one of the last whole page read: this read shows the list alone, not the open thread, and a
  // change to that thread made before it must still read the page.
  const shown = (current as HTMLElement).dataset.feedAfter
  if (shown !== undefined) (fresh as HTMLElement).dataset.feedAfter = shown
  current.replaceWith(document.adoptNode(fresh))
  if (focused)
    document.querySelector<HTMLElement>(`.thread-nav a[href="${CSS.escape(focused)}"]`)?.focus({ preventScroll: true })
  return true
}
