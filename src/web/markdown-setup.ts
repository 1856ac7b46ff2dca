// The one Markdown configuration, shared by the server (src/web/markdown.ts) and the browser (client/), so an
// answer rendered while it streams is the same HTML the server renders once it is stored: no jump at the end.
// Raw HTML is off, links go only to http(s) and mailto, images become links, and fenced code becomes a labelled
// block with a copy button the browser script switches on. The browser highlights the code (highlight.js); the
// server leaves it plain, since highlight.js's typings bring the DOM into the server's type checking.
import MarkdownIt, { type RendererRule } from 'markdown-it'

const allowedLink = /^(https?:\/\/|mailto:)/i

export const linkRel = 'noopener noreferrer nofollow'

/** Highlighted HTML for code in a language, or null when the language is unknown. */
export type Highlighter = (code: string, language: string) => string | null

/** Builds the renderer; the server and the browser each call it once. */
export function createMarkdown(highlight?: Highlighter): InstanceType<typeof MarkdownIt> {
  const markdown = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false })
  const { escapeHtml } = markdown.utils

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
    return `<a href="${escapeHtml(src)}" rel="${linkRel}" target="_blank">${escapeHtml(alt)}</a>`
  }

  // A fence becomes a labelled block with a Copy button (shown by the script, which alone can copy). The
  // highlighter, where there is one, escapes the code it returns.
  markdown.renderer.rules.fence = (tokens, index): string => {
    const token = tokens[index]
    const code = token?.content ?? ''
    const name = (token?.info ?? '').trim().split(/\s+/)[0]?.toLowerCase() ?? ''
    const highlighted = name === '' ? null : (highlight?.(code, name) ?? null)
    const label = name === '' ? 'code' : name
    const classes = `${highlighted === null ? '' : 'hljs '}language-${escapeHtml(name === '' ? 'plaintext' : name)}`
    return (
      `<div class="code-block"><div class="code-head"><span class="code-language">${escapeHtml(label)}</span>` +
      '<button type="button" class="copy-code">Copy</button></div>' +
      `<pre><code class="${classes}">${highlighted ?? escapeHtml(code)}</code></pre></div>\n`
    )
  }
  return markdown
}
