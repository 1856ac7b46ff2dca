// The browser's scripts, written in TypeScript under client/: the chat's bundled by Bun.build the first time a page
// needs it, the theme's transpiled when this module loads; both minified, served from this origin under a name that
// holds a hash of their bytes, so a page always loads the script it was rendered with and browsers may keep it for
// good (no outside origin, no inline script).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export interface ClientAsset {
  path: string
  bytes: Uint8Array
}

export interface ClientAssets {
  /** The chat: composer, live answers, Markdown, partial updates. Loaded deferred. */
  chat: ClientAsset
}

function named(name: string, bytes: Uint8Array): ClientAsset {
  const hash = new Bun.CryptoHasher('sha256').update(bytes).digest('hex').slice(0, 16)
  return { path: `/assets/client/${name}-${hash}.js`, bytes }
}

/**
 * Sets the chosen light or dark theme before the first paint, so a page never flashes the other one. Every page
 * loads it, and most are rendered by the synchronous layout (layout.tsx): the script has no imports, so Bun's
 * transpiler makes it at once, where a bundle would have to be awaited.
 */
export const themeScript: ClientAsset = (() => {
  const source = readFileSync(join(import.meta.dir, 'client', 'theme.ts'), 'utf8')
  const code = new Bun.Transpiler({ loader: 'ts', target: 'browser', minifyWhitespace: true }).transformSync(source)
  // In a function, so that its names stay out of the page's global scope.
  return named('theme', new TextEncoder().encode(`(()=>{${code}})();`))
})()

async function bundle(): Promise<ClientAsset> {
  const built = await Bun.build({
    entrypoints: [join(import.meta.dir, 'client', 'chat.ts')],
    target: 'browser',
    format: 'iife',
    minify: true,
  })
  const output = built.outputs[0]
  if (!built.success || !output) throw new Error(`the browser script chat did not build: ${built.logs.join('\n')}`)
  return named('chat', new Uint8Array(await output.arrayBuffer()))
}

let built: Promise<ClientAssets> | undefined

/** Built once per process, on first use; a failed build is tried again by the next page. */
export function clientAssets(): Promise<ClientAssets> {
  built ??= (async () => ({ chat: await bundle() }))().catch((error) => {
    built = undefined
    throw error
  })
  return built
}

/** The script at this path, if it is one of this build's. */
export async function clientAssetAt(path: string): Promise<ClientAsset | undefined> {
  if (path === themeScript.path) return themeScript
  const { chat } = await clientAssets()
  return chat.path === path ? chat : undefined
}
