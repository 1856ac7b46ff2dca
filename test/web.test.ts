// @kitajs/html escapes JSX children only where a page asks (`safe`, escapeHtml); its own scanner proves that
// every page asks wherever text could come from a user or a client.
import { expect, test } from 'bun:test'

test('no page renders unescaped dynamic text (xss-scan)', async () => {
  const scan = Bun.spawn(['bun', 'x', 'xss-scan', '--simplified'], {
    cwd: `${import.meta.dir}/..`,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, code] = await Promise.all([new Response(scan.stdout).text(), scan.exited])
  expect(out).toContain('No XSS vulnerabilities found')
  expect(code).toBe(0)
}, 60_000)

test('the only HTML a page inserts unescaped is the Markdown renderer’s output', async () => {
  // xss-scan trusts variables named `safe…` and expressions cast `as 'safe'`: each such escape hatch is listed
  // here, so a new one is a deliberate, reviewed change.
  const root = `${import.meta.dir}/..`
  const hatches: string[] = []
  for await (const path of new Bun.Glob('src/**/*.tsx').scan(root)) {
    const source = await Bun.file(`${root}/${path}`).text()
    for (const match of source.matchAll(/\b(?:const|let|var) (safe\w*) = (.+)$/gm)) hatches.push(`${path}: ${match[2]}`)
    for (const match of source.matchAll(/\{([^{}]+) as 'safe'\}/g)) hatches.push(`${path}: ${match[1]}`)
  }
  expect(hatches).toEqual(['src/web/pages/thread.tsx: renderMarkdown(block.text)'])
})
