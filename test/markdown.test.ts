// The Markdown rules of message text: no raw HTML, only http(s) and mailto links, images shown as links.
import { expect, test } from 'bun:test'
import { escapeMarkdown, renderMarkdown, titleFromMarkdown } from '../src/web/markdown'

test('raw HTML is shown as text, never as markup', () => {
  expect(renderMarkdown('hi <script>alert(1)</script> <img src=x onerror=alert(1)>')).toBe(
    '<p>hi &lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt;</p>\n',
  )
  expect(renderMarkdown('```\n<b>bold</b>\n```')).toBe(
    '<div class="code-block"><div class="code-head"><span class="code-language">code</span>' +
      '<button type="button" class="copy-code">Copy</button></div>' +
      '<pre><code class="language-plaintext">&lt;b&gt;bold&lt;/b&gt;\n</code></pre></div>\n',
  )
})

test('fenced code is labelled with its language, escaped, and left for the browser to highlight', () => {
  const html = renderMarkdown('```ts\nconst a = "<b>"\n```')
  expect(html).toContain('<span class="code-language">ts</span>')
  expect(html).toContain('<code class="language-ts">const a = &quot;&lt;b&gt;&quot;\n</code>')
  expect(renderMarkdown('```"><script>\nx\n```')).toContain(
    '<span class="code-language">&quot;&gt;&lt;script&gt;</span>',
  )
})

test('links go only to http(s) and mailto, and never carry the referrer or the opener', () => {
  const rel = 'rel="noopener noreferrer nofollow" target="_blank"'
  expect(renderMarkdown('[a](https://example.com/?q="x")')).toBe(
    `<p><a href="https://example.com/?q=%22x%22" ${rel}>a</a></p>\n`,
  )
  expect(renderMarkdown('write to ada@example.com')).toBe(
    `<p>write to <a href="mailto:ada@example.com" ${rel}>ada@example.com</a></p>\n`,
  )
  for (const hostile of [
    '[a](javascript:alert(1))',
    '[a](JaVaScRiPt:alert(1))',
    '[a](data:text/html,x)',
    '[a](vbscript:x)',
    '[a](/logout)',
    '[a](file:///etc/passwd)',
  ]) {
    expect(renderMarkdown(hostile)).not.toContain('<a')
  }
})

test('images become links, so a message never loads anything by itself', () => {
  expect(renderMarkdown('![a "pixel"](https://tracker.example/p.png)')).toBe(
    '<p><a href="https://tracker.example/p.png" rel="noopener noreferrer nofollow" target="_blank">a &quot;pixel&quot;</a></p>\n',
  )
  expect(renderMarkdown('![x](javascript:alert(1))')).not.toContain('<a')
  expect(renderMarkdown('![x](https://a.example/i.png)')).not.toContain('<img')
})

test('escapeMarkdown keeps names literal inside generated Markdown', () => {
  const name = '*bold* [link](javascript:x) <b>'
  expect(renderMarkdown(escapeMarkdown(name))).toBe('<p>*bold* [link](javascript:x) &lt;b&gt;</p>\n')
})

test('titleFromMarkdown names a text by its words: no fences, marks, link targets or images; cut at a word', () => {
  expect(titleFromMarkdown('Plan a **weekend in Lyon** for `two`:', 80)).toBe('Plan a weekend in Lyon for two:')
  expect(titleFromMarkdown('# A [link](https://example.com) title ![a cat](https://a.example/c.png)', 80)).toBe(
    'A link title',
  )
  expect(titleFromMarkdown('```js\nconsole.log(1)\n```\nWhy does this print *one*?', 80)).toBe(
    'Why does this print one?',
  )
  // Nothing but code: its first line, rather than "Untitled" or the fence's language.
  expect(titleFromMarkdown('```js\n\nconsole.log(1)\n```', 80)).toBe('console.log(1)')
  // The first line with words: a title, not the whole message.
  expect(titleFromMarkdown('![](https://a.example/c.png)\n\nPlan a weekend\nin Lyon\n\n- one', 80)).toBe(
    'Plan a weekend',
  )
  expect(titleFromMarkdown('Summarise the quarterly report for the northern region', 30)).toBe(
    'Summarise the quarterly…',
  )
  expect(titleFromMarkdown('x'.repeat(40), 30)).toBe(`${'x'.repeat(29)}…`)
  expect(titleFromMarkdown('**', 80)).toBe('**')
  expect(titleFromMarkdown(' \n\n ', 80)).toBeNull()
})
