// The page's pop-up menus (the thread's ⋯ menu, the new conversation's options) are <details>, so they open and
// close without script. With it they also behave as menus do elsewhere: Escape closes the open one and gives the
// focus back to its button when it was inside, and a click outside closes it.
const menus = 'details.thread-tools[open], details.composer-options[open]'

export function closeMenusLikeMenus(): void {
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' || event.isComposing) return
    for (const menu of document.querySelectorAll<HTMLDetailsElement>(menus)) {
      const focusWasInside = menu.contains(document.activeElement)
      menu.open = false
      if (focusWasInside) menu.querySelector('summary')?.focus()
    }
  })
  document.addEventListener('click', (event) => {
    const target = event.target as Node
    for (const menu of document.querySelectorAll<HTMLDetailsElement>(menus)) {
      if (!menu.contains(target)) menu.open = false
    }
  })
}
