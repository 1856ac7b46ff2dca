// Message text as safe HTML on the server, through the configuration the browser shares (markdown-setup.ts), so
// that nothing a user or a model writes can run script or load a file.
import { createMarkdown } from './markdown-setup'

export { linkRel } from './markdown-setup'

const markdown = createMarkdown()

/** Renders Markdown to HTML that is safe to put in a page as it is. */
export function renderMarkdown(text: string): string {
  return markdown.render(text)
}

/**
 * A title for a text written in Markdown, as a reader would name it: its first line of words, without the marks,
 * link targets, images or code blocks (a code block's first line is used only when the text is nothing but code),
 * cut at a word boundary to at most `maxLength` characters with an ellipsis. Null when there are no words at all.
 */
export function titleFromMarkdown(text: string, maxLength: number): string | null {
  const tokens = markdown.parse(text, {})
  const lineOf = (content: string): string => content.split('\n').find((line) => line.trim() !== '') ?? ''
  const words = tokens
    .map((token) => (token.type === 'inline' ? lineOf(inlineWords(token.children ?? [])) : ''))
    .find((line) => line.trim() !== '')
  const code = tokens.find((token) => token.type === 'fence' || token.type === 'code_block')?.content ?? ''
  const source = words ?? lineOf(code)
  const plain = source.replace(/\s+/g, ' ').trim()
  if (plain === '') return null
  const characters = [...plain]
  if (characters.length <= maxLength) return plain
  // Whole words up to the limit, the ellipsis included; one word longer than that is cut where it must be.
  const room = characters.slice(0, maxLength - 1).join('')
  const endsAtWord = characters[maxLength - 1] === ' '
  const boundary = room.lastIndexOf(' ')
  return `${(endsAtWord || boundary <= 0 ? room : room.slice(0, boundary)).trimEnd()}…`
}

/** The words an inline run shows, its line breaks kept: text and inline code; images and raw HTML left out. */
function inlineWords(children: { type: string; content: string }[]): string {
  return children
    .map((token) =>
      token.type === 'text' || token.type === 'code_inline'
        ? token.content
        : token.type === 'softbreak' || token.type === 'hardbreak'
          ? '\n'
          : '',
    )
    .join('')
}

const markdownPunctuation = /[\\`*_{}[\]()#+\-.!|<>~]/g

/** Text that Markdown shows exactly as written, for quoting names and filenames inside generated Markdown. */
export function escapeMarkdown(text: string): string {
  return text.replace(markdownPunctuation, (character) => `\\${character}`)
}
