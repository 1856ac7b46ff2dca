// What is typed in a composer is kept in this browser's localStorage until the server accepts it: one draft per
// thread and one for the new thread's composer (keyed by where the composer posts), so a reload, a closed tab or a
// session that ended while typing loses nothing. Drafts belong to the account that wrote them: a sign-out from the
// chat forgets them all, and a page showing another account (a shared computer) forgets the previous one's.
// A request the server answers by asking to sign in leaves the whole page for the sign-in page, which leads back.

const prefix = 'threadhouse-draft:'
const ownerKey = 'threadhouse-drafts-owner'

/** localStorage can be missing or refuse writes (storage full, some private modes): drafts are then not kept. */
function storage(): Storage | null {
  try {
    return window.localStorage
  } catch {
    return null
  }
}

function keyOf(form: HTMLFormElement): string {
  return prefix + new URL(form.action).pathname
}

/** Keeps the composer's text as its draft, or forgets the draft once the text is empty. */
export function saveDraft(form: HTMLFormElement, text: string): void {
  const store = storage()
  if (!store) return
  try {
    if (text.trim() === '') store.removeItem(keyOf(form))
    else store.setItem(keyOf(form), text)
  } catch {
    // Full: the text stays in the composer, only not across a reload.
  }
}

/** Puts the composer's draft back, unless the server already filled it (a refused send shown without script). */
export function restoreDraft(form: HTMLFormElement, text: HTMLTextAreaElement): void {
  const draft = storage()?.getItem(keyOf(form))
  if (draft && text.value === '') text.value = draft
}

export function clearDraft(form: HTMLFormElement): void {
  storage()?.removeItem(keyOf(form))
}

/** Forgets every draft in this browser: on an explicit sign-out, or when another account uses it. */
export function forgetDrafts(): void {
  const store = storage()
  if (!store) return
  for (const key of Object.keys(store)) if (key.startsWith(prefix) || key === ownerKey) store.removeItem(key)
}

/** The drafts kept are this account's only: the sidebar names who is signed in. */
export function claimDrafts(account: string | null | undefined): void {
  const store = storage()
  if (!store || !account) return
  const owner = store.getItem(ownerKey)
  if (owner === account) return
  if (owner !== null) forgetDrafts()
  try {
    store.setItem(ownerKey, account)
  } catch {}
}

/**
 * Whether the server answered a request of the page by asking to sign in (the session ended, perhaps signed out in
 * another tab): its sign-in page is never swapped into the chat, the whole page goes there instead, with the way
 * back to this page. The composer's text is kept first: a sign-out in another tab has just forgotten every draft.
 */
export function leaveForSignIn(response: Response): boolean {
  const signIn = response.status === 401 || (response.redirected && new URL(response.url).pathname === '/login')
  if (!signIn) return false
  const form = document.getElementById('composer') as HTMLFormElement | null
  const text = form?.querySelector<HTMLTextAreaElement>('textarea[name="text"]')
  if (form && text) saveDraft(form, text.value)
  location.assign(`/login?next=${encodeURIComponent(location.pathname + location.search)}`)
  return true
}
