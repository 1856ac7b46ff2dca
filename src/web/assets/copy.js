// Copy buttons for one-time secrets. Loaded from /assets/copy.js (the pages allow no inline script). Without
// this script the buttons stay hidden and a click on the secret selects all of it.
for (const button of document.querySelectorAll('button[data-copy]')) {
  const secret = document.getElementById(button.dataset.copy)
  if (!secret) continue
  button.hidden = false
  button.addEventListener('click', async () => {
    const text = secret.textContent
    try {
      await navigator.clipboard.writeText(text)
    } catch {
      // Plain http on a LAN address is not a secure context: fall back to selecting and copying.
      const range = document.createRange()
      range.selectNodeContents(secret)
      const selection = window.getSelection()
      selection.removeAllRanges()
      selection.addRange(range)
      document.execCommand('copy')
    }
    button.textContent = 'Copied'
    button.setAttribute('aria-live', 'polite')
  })
}
