// Runs before the first paint: applies the light or dark theme the person chose on this browser (the default
// follows the system), so the page never shows the other one first.
const chosen = localStorage.getItem('threadhouse-theme')
if (chosen === 'light' || chosen === 'dark') document.documentElement.dataset.theme = chosen
