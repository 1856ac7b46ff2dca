// Docs stay true: the configuration reference lists exactly the variables the code reads, the operations page
// names every CLI command, and every link in the Markdown pages resolves inside the repository.
import { describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, isAbsolute, join, relative, resolve } from 'node:path'
import { loadConfig } from '../src/config'

const root = resolve(import.meta.dir, '..')
const read = (path: string): string => readFileSync(join(root, path), 'utf8')
const variableName = /^[A-Z][A-Z0-9_]*$/
const commandName = /^[a-z][a-z0-9]*(?:[:-][a-z0-9]+)*$/

/** Every file under a folder of the repository, as repository-relative paths. */
function filesUnder(folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
    .map((entry) => join(folder, entry))
    .filter((path) => statSync(join(root, path)).isFile())
}

/** The Markdown pages whose links are checked: README, the docs and the benchmark's pages. */
function markdownPages(): string[] {
  const pages = ['README.md', 'bench/README.md']
  for (const folder of ['docs', 'bench/results']) {
    for (const name of readdirSync(join(root, folder))) if (name.endsWith('.md')) pages.push(`${folder}/${name}`)
  }
  return pages.filter((page) => existsSync(join(root, page)))
}

/** Markdown with its fenced code blocks blanked out: a `# comment` in a shell block is no heading. */
function withoutFences(markdown: string): string {
  const kept: string[] = []
  let fence: string | null = null
  for (const line of markdown.split('\n')) {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1]
    if (fence === null && marker) fence = marker.charAt(0)
    else if (fence !== null && marker?.startsWith(fence)) fence = null
    else if (fence === null) kept.push(line)
    else kept.push('')
  }
  return kept.join('\n')
}

/** The rows of the first Markdown table in a text, each as its trimmed cells (header and separator left out). */
function firstTable(markdown: string): string[][] {
  const lines = withoutFences(markdown).split('\n')
  const start = lines.findIndex((line) => line.trimStart().startsWith('|'))
  if (start < 0) return []
  const rows: string[][] = []
  for (const line of lines.slice(start + 2)) {
    if (!line.trimStart().startsWith('|')) break
    // Split on pipes that are not escaped (`owner\|admin` stays one cell).
    rows.push(
      line
        .trim()
        .replace(/^\||\|$/g, '')
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    )
  }
  return rows
}

describe('configuration reference (docs/configuration.md)', () => {
  /** Every variable the server's code reads: direct reads anywhere in src/, and the parsed configuration. */
  function variablesReadByCode(): Map<string, string> {
    const found = new Map<string, string>()
    for (const file of filesUnder('src').filter((path) => /\.(ts|tsx|js|mjs)$/.test(path))) {
      const text = read(file)
      const direct =
        /\b(?:process\.env|Bun\.env|import\.meta\.env)(?:\.([A-Z][A-Z0-9_]*)|\[\s*['"`]([A-Z][A-Z0-9_]*)['"`]\s*\])/g
      for (const match of text.matchAll(direct)) {
        const name = match[1] ?? match[2]
        if (name) found.set(name, file)
      }
    }
    // The configuration's variables, however src/config.ts declares them: loadConfig is given an environment
    // that records every name it looks up. With nothing set, every variable takes its default.
    const asked = new Set<string>()
    const environment = new Proxy({} as Record<string, string | undefined>, {
      get(_target, key) {
        if (typeof key === 'string') asked.add(key)
        return undefined
      },
    })
    try {
      loadConfig(environment)
    } catch {
      // A rule that needs some variable set: the names looked up before it are still recorded.
    }
    for (const name of asked) if (variableName.test(name)) found.set(name, 'src/config.ts')
    // And the schema's keys as written, in case a variable is only looked up under some condition.
    for (const match of read('src/config.ts').matchAll(/^ {2}([A-Z][A-Z0-9_]*)\s*:\s*\{/gm)) {
      if (match[1]) found.set(match[1], 'src/config.ts')
    }
    return found
  }

  function documentedVariables(): string[] {
    const rows = firstTable(read('docs/configuration.md'))
    return rows.map((cells) => {
      const names = [...(cells[0] ?? '').matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '')
      // One variable per row, spelled out: a family such as LLM_* would hide which members exist.
      expect(names, `configuration.md row "${cells[0]}" names exactly one variable`).toHaveLength(1)
      const name = names[0] ?? ''
      expect(name, `configuration.md row "${cells[0]}"`).toMatch(variableName)
      return name
    })
  }

  test('the code reads variables, and the table lists some (the parsers found something)', () => {
    expect(variablesReadByCode().size).toBeGreaterThan(20)
    expect(documentedVariables().length).toBeGreaterThan(20)
  })

  test('every variable the code reads is in the table', () => {
    const documented = new Set(documentedVariables())
    const missing = [...variablesReadByCode()]
      .filter(([name]) => !documented.has(name))
      .map(([name, file]) => `${name} (read in ${file})`)
    expect(missing).toEqual([])
  })

  test('every variable in the table is read by the code', () => {
    const inCode = variablesReadByCode()
    expect(documentedVariables().filter((name) => !inCode.has(name))).toEqual([])
  })

  test('no variable is listed twice', () => {
    const names = documentedVariables()
    expect(names.filter((name, index) => names.indexOf(name) !== index)).toEqual([])
  })

  test("README's settings table names only variables of the reference", () => {
    const documented = new Set(documentedVariables())
    const named = firstTable(read('README.md')).flatMap((cells) =>
      [...(cells[0] ?? '').matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? ''),
    )
    expect(named.length).toBeGreaterThan(0)
    expect(named.filter((name) => !documented.has(name))).toEqual([])
  })
})

describe('operator CLI (docs/operations.md)', () => {
  /**
   * The commands src/cli.ts declares, found the ways a CLI is commonly written: the labels of a command switch
   * (`case 'user:create':`), a table keyed by command (`'user:create': {`) or listing them (`name: 'migrate'`).
   */
  function declaredCommands(): Set<string> {
    const source = read('src/cli.ts')
    const found = new Set<string>()
    const patterns = [
      /\bcase\s+(['"`])([^'"`\n]+)\1\s*:/g,
      // The command table's own keys, not its commands' options (indented deeper).
      /^ {2}(['"])([^'"\n]+)\1\s*:\s*[{(]/gm,
      /\b(?:name|command)\s*:\s*(['"`])([^'"`\n]+)\1/g,
    ]
    for (const pattern of patterns) {
      for (const match of source.matchAll(pattern)) {
        const name = match[2] ?? ''
        if (commandName.test(name)) found.add(name)
      }
    }
    for (const name of tableKeys(source)) if (commandName.test(name)) found.add(name)
    return found
  }

  /** The top-level keys of an object literal assigned to a `commands` constant (`migrate: {`, `'user:list': {`). */
  function tableKeys(source: string): string[] {
    const start = /\bcommands\b[^=\n]*=\s*\{/.exec(source)
    if (!start) return []
    const keys: string[] = []
    let depth = 1
    let quote: string | null = null
    for (let i = start.index + start[0].length; i < source.length && depth > 0; i++) {
      const c = source[i] ?? ''
      if (quote !== null) {
        if (c === '\\') i++
        else if (c === quote) quote = null
        continue
      }
      if (c === '/' && source[i + 1] === '/') i = source.indexOf('\n', i)
      else if (c === '/' && source[i + 1] === '*') i = source.indexOf('*/', i) + 1
      else if (c === '{' || c === '[' || c === '(') depth++
      else if (c === '}' || c === ']' || c === ')') depth--
      else if (depth === 1) {
        const key = /^(?:([a-z][\w]*)|(['"])([^'"\n]+)\2)\s*:/.exec(source.slice(i))
        if (key && /[\s,{]/.test(source[i - 1] ?? '')) {
          keys.push(key[1] ?? key[3] ?? '')
          i += key[0].length - 1
          continue
        }
      }
      if (c === "'" || c === '"' || c === '`') quote = c
      if (i < 0) break
    }
    return keys
  }

  /** The commands `help` lists: lines indented by exactly two spaces that start with a command's name. */
  async function listedCommands(): Promise<Set<string>> {
    const dir = mkdtempSync(join(tmpdir(), 'threadhouse-docs-'))
    try {
      const child = Bun.spawn([process.execPath, '--no-env-file', 'src/cli.ts', 'help'], {
        cwd: root,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? dir,
          DATABASE_PATH: join(dir, 'db.sqlite'),
          UPLOADS_DIR: join(dir, 'uploads'),
        },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const [stdout, code] = await Promise.all([new Response(child.stdout).text(), child.exited])
      if (code !== 0) return new Set()
      const names = stdout.split('\n').map((line) => /^ {2}([a-z][a-z0-9:-]*)(?:\s|$)/.exec(line)?.[1] ?? '')
      return new Set(names.filter((name) => commandName.test(name)))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }

  test('every command is named in operations.md', async () => {
    const commands = new Set([...declaredCommands(), ...(await listedCommands())])
    // The parsers must keep finding the commands that have always existed.
    for (const known of ['user:create', 'token:create', 'registration-token:create', 'backup', 'help']) {
      expect([...commands]).toContain(known)
    }
    const operations = read('docs/operations.md')
    const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    const missing = [...commands].filter((name) => !new RegExp(`\`${literal(name)}(?=[\\s\`])`).test(operations))
    expect(missing).toEqual([])
  })
})

describe('links in README.md, docs/ and bench/', () => {
  /** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
  function anchorsOf(markdown: string): Set<string> {
    const anchors = new Set<string>()
    const seen = new Map<string, number>()
    for (const line of withoutFences(markdown).split('\n')) {
      const heading = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1]
      if (heading === undefined) continue
      const slug = heading
        .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
        .replace(/<[^>]+>/g, '')
        .toLowerCase()
        .replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-')
      const count = seen.get(slug) ?? 0
      seen.set(slug, count + 1)
      anchors.add(count === 0 ? slug : `${slug}-${count}`)
    }
    return anchors
  }

  /** Link targets of a page: inline links and images, reference definitions and autolinks, outside code. */
  function linksOf(markdown: string): string[] {
    const text = withoutFences(markdown).replace(/(`+)[^`]*?\1/g, 'code')
    const targets: string[] = []
    const inline = /!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g
    for (const match of text.matchAll(inline)) targets.push((match[1] ?? '').replace(/^<|>$/g, ''))
    for (const match of text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/gm)) targets.push(match[1] ?? '')
    for (const match of text.matchAll(/<([a-z][a-z0-9+.-]*:[^>\s]*)>/gi)) targets.push(match[1] ?? '')
    return targets
  }

  const pages = markdownPages()

  test('the pages exist and have links', () => {
    expect(pages).toContain('docs/configuration.md')
    expect(pages.flatMap((page) => linksOf(read(page))).length).toBeGreaterThan(20)
  })

  for (const page of pages) {
    test(`${page}: every link resolves inside the repository`, () => {
      const problems: string[] = []
      for (const target of linksOf(read(page))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) {
          problems.push(`${target}: points outside the repository`)
          continue
        }
        if (target.startsWith('/')) {
          problems.push(`${target}: absolute path; link relative to the page`)
          continue
        }
        const [rawPath = '', anchor] = target.split('#', 2)
        const path = decodeURIComponent(rawPath)
        const resolved = path === '' ? join(root, page) : resolve(root, dirname(page), path)
        const inRepo = relative(root, resolved)
        if (inRepo.startsWith('..') || isAbsolute(inRepo) || /^shared(\/|$)/.test(inRepo)) {
          problems.push(`${target}: points outside the repository`)
          continue
        }
        if (!existsSync(resolved)) {
          problems.push(`${target}: no such file`)
          continue
        }
        if (anchor && resolved.endsWith('.md') && !anchorsOf(readFileSync(resolved, 'utf8')).has(anchor)) {
          problems.push(`${target}: no heading with anchor #${anchor}`)
        }
      }
      expect(problems).toEqual([])
    })
  }

  test('no page names a path outside the repository', () => {
    const offenders = pages.filter((page) => /(^|[^.\w])\.\.\/shared\b|\bshared\/spec\b/.test(read(page)))
    expect(offenders).toEqual([])
  })
})

describe('the pages themselves', () => {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`)

  test('README.md stays under 12 KB', () => {
    expect(statSync(join(root, 'README.md')).size).toBeLessThanOrEqual(12 * 1024)
  })

  test("README's test command, in a fenced block under Run and test, is the one CI runs", () => {
    const readme = read('README.md')
    const section = /^## Run and test\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1] ?? ''
    const blocks = [...section.matchAll(/^```\w*\n([\s\S]*?)^```/gm)].map((match) => match[1] ?? '')
    const commands = blocks.flatMap((block) => block.split('\n').map((line) => line.trim()))
    expect(commands).toContain('bun run test')
    expect(read('.ci/run').split('\n')).toContain('bun run test')
    expect(readme).toContain('bun run typecheck')
    expect(readme).toContain('bun run lint')
  })

  test('each docs page opens with a title and a sentence saying what it covers', () => {
    for (const page of docs) {
      const lines = read(page).split('\n')
      expect(lines[0], page).toMatch(/^# \S/)
      const first = lines.slice(1).find((line) => line.trim() !== '') ?? ''
      expect(first, page).toMatch(/^[A-Za-z`]/)
    }
  })

  test('docs/README.md links every docs page', () => {
    const index = read('docs/README.md')
    const unlisted = docs
      .filter((page) => page !== 'docs/README.md')
      .filter((page) => !index.includes(`](${page.slice('docs/'.length)}`))
    expect(unlisted).toEqual([])
  })
})
