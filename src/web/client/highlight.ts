// Code highlighting in the browser: highlight.js with the languages people most often paste or ask for. Each adds a
// few kilobytes to the script; a fence in any other language stays plain rather than guessed at (guessing changes
// its mind while an answer streams, and the colours would flicker).
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
import type { Highlighter } from '../markdown-setup'

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

export const highlight: Highlighter = (code, language) =>
  hljs.getLanguage(language) ? hljs.highlight(code, { language, ignoreIllegals: true }).value : null

/** Highlights the server-rendered code blocks under `root` that are not yet highlighted. */
export function highlightBlocks(root: ParentNode): void {
  for (const code of root.querySelectorAll<HTMLElement>('.code-block code:not(.hljs)')) {
    const language = /language-(\S+)/.exec(code.className)?.[1] ?? ''
    const html = highlight(code.textContent ?? '', language)
    if (html === null) continue
    code.innerHTML = html
    code.classList.add('hljs')
  }
}
