// The one Markdown configuration, shared by the server (src/web/markdown.ts) and the browser (client/), so an
// answer rendered while it streams is the same HTML the server renders once it is stored: no jump at the end.
// Raw HTML is off, links go only to http(s) and mailto, images become links, and fenced code is highlighted by
// highlight.js into a block with a copy button the browser script switches on.
import hljs from 'highlight.js/lib/core'
import bash from 'highlight.js/lib/languages/bash'
import c from 'highlight.js/lib/languages/c'
import cpp from 'highlight.js/lib/languages/cpp'
import csharp from 'highlight.js/lib/languages/csharp'
import css from 'highlight.js/lib/languages/css'
import diff from 'highlight.js/lib/languages/diff'
import go from 'highlight.js/lib/languages/go'
import java from 'highlight.js/lib/languages/java'
import javascript from 'highlight.js/lib/languages/javascript'
import json from 'highlight.js/lib/languages/json'
import kotlin from 'highlight.js/lib/languages/kotlin'
import markdownLanguage from 'highlight.js/lib/languages/markdown'
import php from 'highlight.js/lib/languages/php'
import python from 'highlight.js/lib/languages/python'
import ruby from 'highlight.js/lib/languages/ruby'
import rust from 'highlight.js/lib/languages/rust'
import shell from 'highlight.js/lib/languages/shell'
import sql from 'highlight.js/lib/languages/sql'
import swift from 'highlight.js/lib/languages/swift'
import typescript from 'highlight.js/lib/languages/typescript'
import xml from 'highlight.js/lib/languages/xml'
import yaml from 'highlight.js/lib/languages/yaml'
import MarkdownIt, { type RendererRule } from 'markdown-it'

// The languages people most often paste or ask for; each adds a few kilobytes to the browser's script, and a
// fence in any other language is shown plain rather than guessed at (guessing flickers while an answer streams).
const languages = {
  bash,
  c,
  cpp,
  csharp,
  css,
  diff,
  go,
  java,
  javascript,
  json,
  kotlin,
  markdown: markdownLanguage,
  php,
  python,
  ruby,
  rust,
  shell,
  sql,
  swift,
  typescript,
  xml,
  yaml,
}
for (const [name, language] of Object.entries(languages)) hljs.registerLanguage(name, language)

const allowedLink = /^(https?:\/\/|mailto:)/i

export const linkRel = 'noopener noreferrer nofollow'

/** Builds the renderer; the server and the browser each call it once. */
export function createMarkdown(): MarkdownIt {
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

  // A fence becomes a labelled block with a Copy button (shown by the script, which alone can copy); its code is
  // highlighted when the info string names a known language. highlight.js escapes the code it returns.
  markdown.renderer.rules.fence = (tokens, index): string => {
    const token = tokens[index]
    const code = token?.content ?? ''
    const name = (token?.info ?? '').trim().split(/\s+/)[0]?.toLowerCase() ?? ''
    const known = name !== '' && hljs.getLanguage(name) !== undefined
    const body = known ? hljs.highlight(code, { language: name, ignoreIllegals: true }).value : escapeHtml(code)
    const label = name === '' ? 'code' : name
    const languageClass = known ? ` language-${escapeHtml(name)}` : ''
    return (
      `<div class="code-block"><div class="code-head"><span class="code-language">${escapeHtml(label)}</span>` +
      '<button type="button" class="copy-code">Copy</button></div>' +
      `<pre><code class="hljs${languageClass}">${body}</code></pre></div>\n`
    )
  }
  return markdown
}
