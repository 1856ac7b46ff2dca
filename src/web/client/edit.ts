// Editing a message in place. Without the script, a message's Edit link opens a page with the text in a form
// (threads/views/edit-message.tsx); with it, the same form is made in the message's place and posts to the same
// address in the background, as every form of the conversation does: Enter saves and sends (Shift+Enter adds a line,
// an input method's Enter only confirms, a touch screen's Enter adds a line), Escape or Cancel gives the message
// back, with the focus on its Edit link.

const hint = 'Enter saves and sends, Shift+Enter adds a line, Escape cancels.'

/** The open editor's message, if any: one at a time. */
let open: { item: HTMLElement; form: HTMLFormElement; link: HTMLAnchorElement } | null = null

/** The message's Markdown as written, which the page keeps beside its copy button (thread.tsx). */
function writtenText(item: HTMLElement): string {
  return item.querySelector<HTMLTemplateElement>('template.message-markdown')?.content.textContent ?? ''
}

/** The session's CSRF token, from any form of the page. */
function csrfToken(): string {
  return document.querySelector<HTMLInputElement>('input[name="csrf"]')?.value ?? ''
}

export function autosize(text: HTMLTextAreaElement): void {
  text.style.height = 'auto'
  text.style.height = `${Math.min(text.scrollHeight, window.innerHeight * 0.4)}px`
}

/** Turns the message of this Edit link into a form holding its text, focused at the end. */
export function startEditing(link: HTMLAnchorElement): void {
  const item = link.closest<HTMLElement>('.message')
  if (!item) return
  if (open) cancelEditing(false)
  const form = document.createElement('form')
  form.method = 'post'
  form.action = link.href
  form.className = 'edit-inline'
  const csrf = document.createElement('input')
  csrf.type = 'hidden'
  csrf.name = 'csrf'
  csrf.value = csrfToken()
  const label = document.createElement('label')
  label.className = 'visually-hidden'
  label.htmlFor = 'edit-inline-text'
  label.textContent = 'Edit the message'
  const text = document.createElement('textarea')
  text.id = 'edit-inline-text'
  text.name = 'text'
  text.required = true
  text.rows = 2
  text.value = writtenText(item)
  text.setAttribute('aria-describedby', 'edit-inline-hint')
  const error = document.createElement('p')
  error.className = 'alert edit-error'
  error.setAttribute('role', 'alert')
  error.hidden = true
  const actions = document.createElement('div')
  actions.className = 'edit-actions'
  const help = document.createElement('p')
  help.id = 'edit-inline-hint'
  help.className = 'edit-hint'
  help.textContent = hint
  const cancel = document.createElement('button')
  cancel.type = 'button'
  cancel.className = 'edit-cancel'
  cancel.textContent = 'Cancel'
  const save = document.createElement('button')
  save.type = 'submit'
  save.className = 'primary'
  save.textContent = 'Save and send'
  actions.append(help, cancel, save)
  form.append(csrf, label, text, error, actions)
  item.classList.add('editing')
  item.append(form)
  open = { item, form, link }
  autosize(text)
  text.focus()
  text.setSelectionRange(text.value.length, text.value.length)
}

/** Gives the message back; the focus goes to its Edit link when it was in the editor. */
export function cancelEditing(refocus = true): void {
  if (!open) return
  const { item, form, link } = open
  open = null
  form.remove()
  item.classList.remove('editing')
  if (refocus) link.focus()
}

/** Shows why the server refused the edit, in the editor, with the text kept. */
export function showEditError(form: HTMLFormElement, reason: string): void {
  const error = form.querySelector<HTMLElement>('.edit-error')
  if (!error) return
  error.textContent = reason
  error.hidden = false
  form.querySelector('textarea')?.focus()
}

export function editKeys(event: KeyboardEvent): void {
  const target = event.target as HTMLElement
  if (!(target instanceof HTMLTextAreaElement) || target.id !== 'edit-inline-text') return
  if (event.isComposing || event.keyCode === 229) return
  if (event.key === 'Escape') {
    event.preventDefault()
    cancelEditing()
    return
  }
  if (event.key !== 'Enter' || event.shiftKey || matchMedia('(pointer: coarse)').matches) return
  event.preventDefault()
  if (target.form?.dataset.sending !== 'true') target.form?.requestSubmit()
}

/** The Edit link's ID of the open editor, forgotten with the editor: the swap that follows a save removes it. */
export function closeAfterSave(): string | null {
  if (!open) return null
  const id = open.link.id || null
  open = null
  return id
}
