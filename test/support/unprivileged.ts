// Running the server as another user, for the tests where permission bits must count: root ignores them, so a test
// run as root starts the server as nobody (65534), as the Docker image runs it as its own unprivileged user. Nobody
// must be able to read the code it runs and the folder it starts in, which a checkout in a folder only root may
// enter (a `mktemp -d` folder, /root) does not allow: then the server runs from a readable copy of the checkout.
import { cpSync, linkSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { closeAfterRun } from './after-run'

const root = join(import.meta.dir, '../..')
const nobody = { uid: 65534, gid: 65534 }

/** How a test starts a process as an unprivileged user: that user, and a checkout and a folder it can read. */
export interface Unprivileged {
  uid?: number
  gid?: number
  /** The checkout to run `bun run start` in. */
  cwd: string
}

/** A folder tree of hard links to node_modules' files (a copy where the filesystems differ): no file is read. */
function linkTree(from: string, to: string): void {
  mkdirSync(to, { recursive: true, mode: 0o755 })
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name)
    const target = join(to, entry.name)
    if (entry.isDirectory()) linkTree(source, target)
    else if (entry.isSymbolicLink()) cpSync(source, target, { verbatimSymlinks: true })
    else {
      try {
        linkSync(source, target)
      } catch {
        cpSync(source, target)
      }
    }
  }
}

function readableByNobody(path: string): boolean {
  return Bun.spawnSync(['test', '-r', path], { ...nobody, cwd: '/' }).exitCode === 0
}

let copy: string | undefined
/** The checkout, or once per run a copy that nobody can read: the code, its migrations and its dependencies. */
function readableCheckout(): string {
  if (readableByNobody(join(root, 'src/index.ts'))) return root
  if (copy) return copy
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-checkout-'))
  // mkdtemp makes the folder for its owner alone.
  Bun.spawnSync(['chmod', '755', dir])
  for (const name of ['src', 'db', 'package.json', 'bunfig.toml', 'tsconfig.json']) {
    cpSync(join(root, name), join(dir, name), { recursive: true })
  }
  linkTree(join(root, 'node_modules'), join(dir, 'node_modules'))
  Bun.spawnSync(['chmod', '-R', 'a+rX', dir])
  closeAfterRun(async () => {
    rmSync(dir, { recursive: true, force: true })
    copy = undefined
  }, 'the unprivileged copy')
  copy = dir
  return dir
}

/** For root, nobody and a checkout nobody can read; for anyone else, themselves and the checkout. */
export function unprivileged(): Unprivileged {
  if (process.getuid?.() !== 0) return { cwd: root }
  return { ...nobody, cwd: readableCheckout() }
}
