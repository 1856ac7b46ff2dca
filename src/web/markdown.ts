// Message text as safe HTML: Markdown through markdown-it with raw HTML switched off, links only to http(s) and
// mailto, and images shown as links, so that nothing a user or a model writes can run script or load a file.
import MarkdownIt, { type RendererRule } from 'markdown-it'

const allowedLink = /^(https?:\/\/|mailto:)/i

export const linkRel = 'noopener noreferrer nofollow'

const markdown = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false })

// The default check already refuses javascript: and friends; this one also refuses relative and other-scheme
// links, which in a message would point at this service's own routes or at local applications.
markdown.validateLink = (url: string): boolean => allowedLink.test(url.trim())

const renderToken: RendererRule = (tokens, index, options, _env, self) => self.renderToken(tokens, index, options)

markdown.renderer.rules.link_open = (tokens, index, options, env, self): string => {
  const token = tokens[index]
  token?.attrSet('rel', linkRel)
  token?.attrSet('target', '_blank')
  return renderToken(tokens, index, options, env, self)
}

// An image in a message would load from wherever its author pointed (a tracking pixel, or a host on the
// reader's network): it becomes a link that the reader may choose to follow.
markdown.renderer.rules.image = (tokens, index, options, env, self): string => {
  const token = tokens[index]
  const src = String(token?.attrGet('src') ?? '')
  const alt = self.renderInlineAsText(token?.children ?? [], options, env) || src
  const { escapeHtml } = markdown.utils
  return `<a href="${escapeHtml(src)}" rel="${linkRel}" target="_blank">${escapeHtml(alt)}</a>`
}

/** Renders Markdown to HTML that is safe to put in a page as it is. */
export function renderMarkdown(text: string): string {
  return markdown.render(text)
}

const markdownPunctuation = /[\\`*_{}[\]()#+\-.!|<>~]/g

/** Text that Markdown shows exactly as written, for quoting names and filenames inside generated Markdown. */
export function escapeMarkdown(text: string): string {
  return text.replace(markdownPunctuation, (character) => `\\${character}`)
}
