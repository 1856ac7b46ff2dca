// The sidebar's search as the person types: about 200 ms after the last keystroke the list is read again for the
// words typed (/threads/list, the server's own rendering, snippets marked), the read before it cancelled. The
// address's query follows the form (replaced, not pushed: typing is no navigation), so a reload, the change feed's
// reads and the results' links all show the same list. Without script the form is a plain GET of /threads.
import { readList } from './live'

const quietMs = 200

/** The form's search and filters as a query, leaving out what is empty or unset (as the server writes its links). */
function listQuery(form: HTMLFormElement): URLSearchParams {
  const params = new URLSearchParams()
  for (const [name, value] of new FormData(form)) {
    if (typeof value === 'string' && value.trim() !== '') params.set(name, value)
  }
  return params
}

function say(text: string): void {
  const status = document.getElementById('thread-status')
  if (status) status.textContent = text
}

export function searchAsYouType(): void {
  const input = document.getElementById('q')
  const form = input instanceof HTMLInputElement ? input.form : null
  if (!input || !form) return
  let timer: ReturnType<typeof setTimeout> | undefined
  let reading: AbortController | null = null

  async function search(): Promise<void> {
    clearTimeout(timer)
    reading?.abort()
    const controller = new AbortController()
    reading = controller
    const query = listQuery(form as HTMLFormElement).toString()
    history.replaceState(history.state, '', `${location.pathname}${query === '' ? '' : `?${query}`}${location.hash}`)
    try {
      if (!(await readList(controller.signal))) return
      const found = document.querySelectorAll('.thread-nav .thread-row').length
      if (query !== '')
        say(found === 0 ? 'No thread matches.' : found === 1 ? '1 thread found.' : `${found} threads found.`)
    } catch {
      // Cancelled by a newer search, or the network failed: the list stays as it was until the next one.
    } finally {
      if (reading === controller) reading = null
    }
  }

  input.addEventListener('input', () => {
    clearTimeout(timer)
    timer = setTimeout(() => void search(), quietMs)
  })
  // Enter and Apply search at once, where the page is, instead of leaving it for /threads.
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void search()
  })
  form.addEventListener('change', (event) => {
    if (event.target !== input) void search()
  })
}
