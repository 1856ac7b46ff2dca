// Message text as safe HTML on the server, through the configuration the browser shares (markdown-setup.ts), so
// that nothing a user or a model writes can run script or load a file.
import { createMarkdown } from './markdown-setup'

export { linkRel } from './markdown-setup'

const markdown = createMarkdown()

/** Renders Markdown to HTML that is safe to put in a page as it is. */
export function renderMarkdown(text: string): string {
  return markdown.render(text)
}

/** The words of one line of Markdown as a reader sees them, without its marks; a line that is only marks stays. */
export function markdownAsText(line: string): string {
  const words = markdown
    .parse(line, {})
    .flatMap((token) => token.children ?? [])
    .map((token) =>
      token.type === 'text' || token.type === 'code_inline' ? token.content : token.type === 'softbreak' ? ' ' : '',
    )
    .join('')
    .trim()
  return words === '' ? line : words
}

const markdownPunctuation = /[\\`*_{}[\]()#+\-.!|<>~]/g

/** Text that Markdown shows exactly as written, for quoting names and filenames inside generated Markdown. */
export function escapeMarkdown(text: string): string {
  return text.replace(markdownPunctuation, (character) => `\\${character}`)
}
