// Message text as safe HTML on the server, through the configuration the browser shares (markdown-setup.ts), so
// that nothing a user or a model writes can run script or load a file.
import { createMarkdown } from './markdown-setup'

export { linkRel } from './markdown-setup'

const markdown = createMarkdown()

/** Renders Markdown to HTML that is safe to put in a page as it is. */
export function renderMarkdown(text: string): string {
  return markdown.render(text)
}

const markdownPunctuation = /[\\`*_{}[\]()#+\-.!|<>~]/g

/** Text that Markdown shows exactly as written, for quoting names and filenames inside generated Markdown. */
export function escapeMarkdown(text: string): string {
  return text.replace(markdownPunctuation, (character) => `\\${character}`)
}
