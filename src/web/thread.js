// The thread page's one script: streams the answer being written into the page (EventSource on the session's
// stream route), then swaps in the page as the server renders it, Markdown and all. Without it every form still
// works; the page only needs a reload to show the answer.

function announce(text) {
  const status = document.getElementById('thread-status')
  if (status) status.textContent = text
}

/** Replaces the thread view with a fresh rendering, keeping the focus on the same control where it still exists. */
async function refresh() {
  const focused = document.activeElement?.id
  const response = await fetch(location.pathname, { headers: { accept: 'text/html' }, credentials: 'same-origin' })
  if (!response.ok) {
    location.reload()
    return
  }
  const fresh = new DOMParser().parseFromString(await response.text(), 'text/html').getElementById('thread-view')
  const current = document.getElementById('thread-view')
  if (!fresh || !current) return
  current.replaceWith(document.adoptNode(fresh))
  if (focused) document.getElementById(focused)?.focus()
  follow()
}

/** Streams the answer shown in #live-answer, if the page has one. */
function follow() {
  const live = document.getElementById('live-answer')
  const url = live?.dataset.streamUrl
  if (!live || !url) return
  const text = live.querySelector('.live-text')
  const status = live.querySelector('.live-status')
  live.setAttribute('aria-busy', 'true')
  const source = new EventSource(url)
  source.addEventListener('token', (event) => {
    if (status) status.textContent = 'Writing the answer…'
    text.textContent += JSON.parse(event.data).token
  })
  source.addEventListener('done', () => {
    source.close()
    announce('The answer is complete.')
    void refresh()
  })
  source.addEventListener('error', (event) => {
    // An `error` event from the server carries data; a lost connection does not, and EventSource retries it
    // by itself with Last-Event-ID, which the server resumes from.
    if (!event.data && source.readyState !== EventSource.CLOSED) return
    source.close()
    announce(event.data ? JSON.parse(event.data).message : 'The answer stopped.')
    void refresh()
  })
}

follow()
