// The echo responder's reply is clean Markdown whatever the message holds: the message is quoted as a block quote,
// so its own Markdown (a code fence, even one left open) stays inside the quote, and the reply's own words never
// show as stray marks once rendered.
import { expect, test } from 'bun:test'
import { echoReply, tokenize } from '../src/generation/providers/echo'
import type { HistoryMessage } from '../src/generation/types'
import { renderMarkdown } from '../src/web/markdown'

const user = (text: string): HistoryMessage => ({ id: 'u', role: 'user', contents: [{ type: 'text', text }] })
const assistant: HistoryMessage = { id: 'a', role: 'assistant', contents: [{ type: 'text', text: 'Sure.' }] }
const codeBlock = (language: string, code: string) =>
  `<div class="code-block"><div class="code-head"><span class="code-language">${language}</span>` +
  `<button type="button" class="copy-code">Copy</button></div><pre><code class="language-${language}">${code}\n` +
  '</code></pre></div>'

test('a message ending in a code fence is quoted whole, the code inside the quote', () => {
  const reply = echoReply({ history: [user('Run this:\n\n```ts\nconst a = 1\n```')] })
  expect(reply).toBe('You said, in turn 1:\n\n> Run this:\n>\n> ```ts\n> const a = 1\n> ```')
  expect(renderMarkdown(reply)).toBe(
    `<p>You said, in turn 1:</p>\n<blockquote>\n<p>Run this:</p>\n${codeBlock('ts', 'const a = 1')}\n</blockquote>\n`,
  )
})

test('a fence left open ends with the quote; the turn counts the user messages; files are named after it', () => {
  const history: HistoryMessage[] = [
    user('first'),
    assistant,
    {
      id: 'u2',
      role: 'user',
      contents: [
        { type: 'text', text: '```py\nprint(1)' },
        { type: 'image', attachment_id: 'f1' },
      ],
      attachments: { f1: { filename: 'plot.png', mediaType: 'image/png', key: 'k' } },
    },
  ]
  const reply = echoReply({ history })
  expect(reply).toBe('You said, in turn 2:\n\n> ```py\n> print(1)\n\nAttached: plot.png (image/png).')
  expect(renderMarkdown(reply)).toBe(
    `<p>You said, in turn 2:</p>\n<blockquote>\n${codeBlock('py', 'print(1)')}\n</blockquote>\n` +
      '<p>Attached: plot.png (image/png).</p>\n',
  )
  expect(tokenize(reply).join('')).toBe(reply)
})

test('files without text', () => {
  const history: HistoryMessage[] = [
    {
      id: 'u',
      role: 'user',
      contents: [{ type: 'document', attachment_id: 'f1' }],
      attachments: { f1: { filename: 'notes.txt', mediaType: 'text/plain', key: 'k' } },
    },
  ]
  expect(echoReply({ history })).toBe('You sent no text in turn 1.\n\nAttached: notes.txt (text/plain).')
})
