// The browser's scripts, written in TypeScript under client/ and bundled by Bun.build the first time a page needs
// them: minified, served from this origin under a name that holds a hash of their bytes, so a page always loads
// the script it was rendered with and browsers may keep it for good (no outside origin, no inline script).
import { join } from 'node:path'

export interface ClientAsset {
  path: string
  bytes: Uint8Array
}

export interface ClientAssets {
  /** The chat: composer, live answers, Markdown, partial updates. Loaded deferred. */
  chat: ClientAsset
  /** Sets the chosen light or dark theme before the first paint, so a page never flashes the other one. */
  theme: ClientAsset
}

const entries = { chat: 'chat.ts', theme: 'theme.ts' } as const

async function bundle(name: keyof typeof entries): Promise<ClientAsset> {
  const built = await Bun.build({
    entrypoints: [join(import.meta.dir, 'client', entries[name])],
    target: 'browser',
    format: 'iife',
    minify: true,
  })
  const output = built.outputs[0]
  if (!built.success || !output) throw new Error(`the browser script ${name} did not build: ${built.logs.join('\n')}`)
  const bytes = new Uint8Array(await output.arrayBuffer())
  const hash = new Bun.CryptoHasher('sha256').update(bytes).digest('hex').slice(0, 16)
  return { path: `/assets/client/${name}-${hash}.js`, bytes }
}

let built: Promise<ClientAssets> | undefined

/** Built once per process, on first use; a failed build is tried again by the next page. */
export function clientAssets(): Promise<ClientAssets> {
  built ??= (async () => ({ chat: await bundle('chat'), theme: await bundle('theme') }))().catch((error) => {
    built = undefined
    throw error
  })
  return built
}

/** The script at this path, if it is one of this build's. */
export async function clientAssetAt(path: string): Promise<ClientAsset | undefined> {
  const assets = await clientAssets()
  return [assets.chat, assets.theme].find((asset) => asset.path === path)
}
