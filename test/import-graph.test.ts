// The dependency rules of docs/architecture.md ("Dependency rules"), checked over every import under src/: no cycle
// between files at run time, and no two folders importing each other unless the page lists the pair as still
// allowed. A listed pair that no longer imports both ways fails too, so the list only shrinks.
import { expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import ts from 'typescript'

const root = resolve(import.meta.dir, '..')

interface Edge {
  from: string
  to: string
  /** Every import between the two files names types only (`import type`, or only `type` names). */
  typeOnly: boolean
}

function resolveImport(from: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null
  const base = join(dirname(from), specifier)
  for (const candidate of [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx'), base]) {
    if (/\.tsx?$/.test(candidate) && existsSync(join(root, candidate))) return candidate
  }
  return null
}

function isTypeOnly(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause
  if (!clause) return false // a side-effect import runs the module
  if (clause.isTypeOnly) return true
  const named = clause.namedBindings
  if (clause.name || !named || !ts.isNamedImports(named)) return false
  return named.elements.length > 0 && named.elements.every((element) => element.isTypeOnly)
}

/** One edge per pair of files under src/, at run time when any import between them is. */
function importGraph(): Edge[] {
  const edges = new Map<string, Edge>()
  const add = (from: string, specifier: string, typeOnly: boolean) => {
    const to = resolveImport(from, specifier)
    if (!to) return
    const key = `${from} ${to}`
    const known = edges.get(key)
    edges.set(key, { from, to, typeOnly: typeOnly && (known?.typeOnly ?? true) })
  }
  for (const file of new Bun.Glob('src/**/*.{ts,tsx}').scanSync(root)) {
    if (file.endsWith('.d.ts')) continue
    const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS
    const source = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.Latest, true, kind)
    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        add(file, node.moduleSpecifier.text, isTypeOnly(node))
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        add(file, node.moduleSpecifier.text, node.isTypeOnly)
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0] &&
        ts.isStringLiteral(node.arguments[0])
      ) {
        add(file, node.arguments[0].text, false)
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  return [...edges.values()]
}

/** `src/threads/views/thread.tsx` is in `threads`; a file directly under src/ is a folder of its own (`app.ts`). */
function folderOf(file: string): string {
  return file.split('/')[1] as string
}

/** Strongly connected groups of more than one node (Tarjan), each sorted. */
function cycles(edges: [string, string][]): string[][] {
  const next = new Map<string, string[]>()
  for (const [from, to] of edges) next.set(from, [...(next.get(from) ?? []), to])
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const connect = (node: string): void => {
    index.set(node, index.size)
    low.set(node, index.get(node) as number)
    stack.push(node)
    onStack.add(node)
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        connect(to)
        low.set(node, Math.min(low.get(node) as number, low.get(to) as number))
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node) as number, index.get(to) as number))
    }
    if (low.get(node) !== index.get(node)) return
    const group: string[] = []
    let member: string
    do {
      member = stack.pop() as string
      onStack.delete(member)
      group.push(member)
    } while (member !== node)
    if (group.length > 1) found.push(group.sort())
  }
  for (const node of next.keys()) if (!index.has(node)) connect(node)
  return found
}

/** Folder pairs that import each other, as `a ↔ b` with a < b. */
function mutualPairs(edges: Edge[]): string[] {
  const imports = new Set<string>()
  for (const { from, to } of edges) {
    const [a, b] = [folderOf(from), folderOf(to)]
    if (a !== b) imports.add(`${a} ${b}`)
  }
  const pairs: string[] = []
  for (const pair of imports) {
    const [a, b] = pair.split(' ') as [string, string]
    if (a < b && imports.has(`${b} ${a}`)) pairs.push(`${a} ↔ ${b}`)
  }
  return pairs.sort()
}

/** The pairs docs/architecture.md still allows, from its list item starting with `label` (wrapped lines included). */
function allowedPairs(label: string): string[] {
  const page = readFileSync(join(root, 'docs/architecture.md'), 'utf8')
  const section = page.slice(page.indexOf('\n## Dependency rules\n'))
  const start = section.indexOf(`\n${label}`)
  if (start < 0) throw new Error(`docs/architecture.md's "Dependency rules" has no item starting with "${label}"`)
  const item = /^\n[^\n]*(?:\n {2}[^\n]*)*/.exec(section.slice(start))?.[0] ?? ''
  return [...item.matchAll(/`([\w.-]+) ↔ ([\w.-]+)`/g)].map(([, a, b]) => `${a} ↔ ${b}`).sort()
}

const graph = importGraph()

test('no two files import each other at run time, directly or through others', () => {
  const runtime = graph.filter((edge) => !edge.typeOnly).map((edge): [string, string] => [edge.from, edge.to])
  expect(cycles(runtime)).toEqual([])
})

test('folders import each other at run time only where the architecture page still allows it', () => {
  expect(mutualPairs(graph.filter((edge) => !edge.typeOnly))).toEqual(allowedPairs('- At run time:'))
})

test('folders import each other, type imports counted, only where the architecture page still allows it', () => {
  const allowed = [...allowedPairs('- At run time:'), ...allowedPairs('- Counting type imports, also:')]
  expect(mutualPairs(graph)).toEqual(allowed.sort())
})
