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
