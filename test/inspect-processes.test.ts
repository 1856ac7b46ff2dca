// The inspect processes that check uploads: the idle scheduling class for every thread and none of the server's
// environment, nice 19 where chrt fails, a crash or a stuck inspection failing only its own uploads, a start that
// never finishes, and no process outliving a killed server. Each test has an inspector of its own.
import { describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFileInspector } from '../src/attachments/inspector'
import { createLogger, silentLogger } from '../src/shared/log'
import { firstRunToken, startServer, until } from './support/helpers'
import { expectNothingStored, form, jpeg, setup, upload } from './support/uploads'

// Nearly every test here starts inspect processes, and the idle-class one's run only on an idle core: on a busy
// machine several seconds are no failure.

/** The real inspect process's entry module, as its command line names it (the fixtures' entries are others). */
const realEntry = join(import.meta.dir, '..', 'src', 'attachments', 'inspect-process.ts')

/** The processes whose parent is `parent` and whose command line runs the real inspect process (Linux only). */
function inspectProcesses(parent: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
        // The fields after the parenthesised name start at the 3rd: the state, then the parent.
        const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
        const inspects = readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(realEntry)
        return Number(ppid) === parent && state !== 'Z' && inspects ? [Number(pid)] : []
      } catch {
        return [] // the process ended between the listing and the read
      }
    })
}

/** Each of a process's threads: its name, nice value and scheduling policy (stat fields 19 and 41). */
function threadsOf(pid: number): { name: string; nice: number; policy: number }[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((id) => {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${id}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const name = readFileSync(`/proc/${pid}/task/${id}/comm`, 'utf8').trim()
      return [{ name, nice: Number(fields[16]), policy: Number(fields[38]) }]
    } catch {
      return [] // the thread ended between the listing and the read
    }
  })
}

/**
 * The one inspect process an upload left running under this test process that was not running before it: an
 * earlier test's process may still be ending, and it must not be taken for this test's.
 */
const newInspectProcess = (before: number[]): Promise<number> =>
  until(() => {
    const found = inspectProcesses(process.pid).filter((pid) => !before.includes(pid))
    return found.length === 1 && found[0]
  })

const SCHED_IDLE = 5
// Whether this machine lets a process enter the idle class: a sandbox may refuse, and Threadhouse then
// uses nice 19.
const idleClassAllowed =
  process.platform === 'linux' && Bun.which('chrt') !== null && Bun.spawnSync(['chrt', '-i', '0', 'true']).success

// Alone, first: the first changes PATH, which every process started meanwhile would inherit, and the second needs to
// find the one new inspect process, which another test's could make two.
describe('the inspect processes', () => {
  test.skipIf(process.platform !== 'linux')('start at nice 19 where chrt fails', async () => {
    // A chrt that refuses, as a sandbox that forbids the idle class would, first on the PATH.
    const bin = mkdtempSync(join(tmpdir(), 'threadhouse-bin-'))
    writeFileSync(join(bin, 'chrt'), '#!/bin/sh\nexit 1\n', { mode: 0o755 })
    const path = process.env.PATH
    process.env.PATH = `${bin}:${path}`
    try {
      const lines: string[] = []
      const inspector = createFileInspector(createLogger('info', (line) => lines.push(line)))
      await using s = await setup({ inspector })
      const before = inspectProcesses(process.pid)
      expect((await upload(s.h, s.owner.token, s.threadId, form({ name: 'a.txt', bytes: 'x' }))).status).toBe(201)
      expect(lines.map((line) => JSON.parse(line))).toContainEqual(
        expect.objectContaining({ msg: 'file inspectors start', priority: 'nice 19' }),
      )
      const threads = threadsOf(await newInspectProcess(before))
      // Every thread at nice 19, in the normal class (0).
      expect(new Set(threads.map(({ nice, policy }) => `${nice} ${policy}`))).toEqual(new Set(['19 0']))
    } finally {
      process.env.PATH = path
      rmSync(bin, { recursive: true, force: true })
    }
  })

  test('have exited by the time their inspector is closed', async () => {
    const inspector = createFileInspector(silentLogger, { idle: false })
    await using s = await setup({ inspector })
    const before = inspectProcesses(process.pid)
    expect((await upload(s.h, s.owner.token, s.threadId, form({ name: 'a.txt', bytes: 'x' }))).status).toBe(201)
    const child = await newInspectProcess(before)
    await inspector.close()
    // No waiting here: a server that closed its inspector may exit, and nothing it started may outlive it, not
    // even as a zombie that has not been reaped yet.
    expect(existsSync(`/proc/${child}`)).toBe(false)
  })
})

describe.concurrent('the inspect processes', () => {
  test.skipIf(!idleClassAllowed)(
    'run in the idle scheduling class, every thread, and hold none of the server environment',
    async () => {
      await using s = await setup({ inspector: createFileInspector(silentLogger) })
      // Decoding a large image starts libvips's threads, which must inherit the class too.
      const wide = form({ name: 'wide.jpg', bytes: await jpeg(3000, 1000) })
      const before = inspectProcesses(process.pid)
      expect((await upload(s.h, s.owner.token, s.threadId, wide)).status).toBe(201)
      const child = await newInspectProcess(before)
      expect(threadsOf(child).some((thread) => thread.name.startsWith('libvips'))).toBe(true)
      expect(new Set(threadsOf(child).map((thread) => thread.policy))).toEqual(new Set([SCHED_IDLE]))
      expect(threadsOf(process.pid).map((thread) => thread.policy)).not.toContain(SCHED_IDLE)
      const environment = readFileSync(`/proc/${child}/environ`, 'utf8').split('\0').filter(Boolean)
      const names = environment.map((variable) => variable.slice(0, variable.indexOf('=')))
      // Bun's own IPC variables aside, only what bun and libvips need; the test's environment holds dozens more.
      const ours = names.filter((name) => !name.startsWith('NODE_CHANNEL_'))
      expect(ours.filter((name) => !/^(PATH|HOME|TMPDIR|VIPS_\w+|MALLOC_\w+)$/.test(name))).toEqual([])
      expect(Object.keys(process.env).length).toBeGreaterThan(ours.length)
    },
  )

  test('load no .env file, though the server did', async () => {
    // A server started in a folder with a .env file, as `bun src/index.ts` loads one, and a secret in it.
    const dir = mkdtempSync(join(tmpdir(), 'threadhouse-env-'))
    writeFileSync(join(dir, '.env'), 'THREADHOUSE_TEST_SECRET=shh\n')
    const entry = new URL('./fixtures/env-inspect-process.ts', import.meta.url)
    const source = (path: string) => JSON.stringify(join(import.meta.dir, '..', 'src', path))
    const script = `
      import { createFileInspector } from ${source('attachments/inspector.ts')}
      import { silentLogger } from ${source('shared/log.ts')}
      const inspector = createFileInspector(silentLogger, { entry: new URL(${JSON.stringify(entry.href)}), idle: false })
      const seen = await inspector.inspect({ files: [] }, ${JSON.stringify(dir)}).catch((error) => String(error))
      await inspector.close()
      console.log(JSON.stringify({ server: process.env.THREADHOUSE_TEST_SECRET, inspector: seen }))`
    try {
      // Not spawnSync: the tests running beside this one would wait for it.
      const run = Bun.spawn([process.execPath, '-e', script], {
        cwd: dir,
        timeout: 20_000,
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const [stdout, stderr, code] = await Promise.all([run.stdout.text(), run.stderr.text(), run.exited])
      if (code !== 0) throw new Error(`the server script failed: ${stderr}`)
      const seen = JSON.parse(stdout) as { server: string; inspector: string }
      expect(seen.server).toBe('shh')
      expect(seen.inspector).toContain('PATH')
      expect(seen.inspector).not.toContain('THREADHOUSE_TEST_SECRET')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('one that dies fails its upload with 500 and stores nothing; the next upload gets a fresh one', async () => {
    // One process, so that the second upload can only succeed on a process started after the crash.
    const entry = new URL('./fixtures/crashing-inspect-process.ts', import.meta.url)
    const lines: string[] = []
    const logger = createLogger('error', (line) => lines.push(line))
    await using s = await setup({ inspector: createFileInspector(logger, { size: 1, entry, idle: false }) })
    const batch = form({ name: 'notes.txt', bytes: 'fine' }, { name: 'crash.txt', bytes: 'boom' })
    const crashed = await upload(s.h, s.owner.token, s.threadId, batch)
    expect(crashed.status).toBe(500)
    expect(lines.map((line) => JSON.parse(line))).toContainEqual(
      expect.objectContaining({ msg: 'file inspector exited', exitCode: null, signal: 'SIGSEGV' }),
    )
    await expectNothingStored(s.h)
    const next = await upload(s.h, s.owner.token, s.threadId, form({ name: 'notes.txt', bytes: 'fine' }))
    expect(next.status).toBe(201)
    expect(next.body).toEqual([{ id: expect.any(String), filename: 'notes.txt' }])
  })

  test.skipIf(process.platform !== 'linux')('end when the server is killed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'threadhouse-orphans-'))
    try {
      const server = await startServer({ DATABASE_PATH: join(dir, 'db.sqlite'), UPLOADS_DIR: join(dir, 'uploads') })
      await using _ = server
      const token = await firstRunToken(server)
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
      const created = await fetch(`${server.url}/api/v1/threads`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ text: 'hello' }),
      })
      const { thread_id } = (await created.json()) as { thread_id: string }
      const files = new FormData()
      files.append('attachments[0]', new File(['notes'], 'notes.txt'))
      const uploaded = await fetch(`${server.url}/api/v1/threads/${thread_id}/attachments`, {
        method: 'POST',
        headers: { authorization: headers.authorization },
        body: files,
      })
      expect(uploaded.status).toBe(201)
      const [child] = inspectProcesses(server.process.pid)
      if (!child) throw new Error('no inspect process runs')
      server.process.kill('SIGKILL')
      // Gone, or a zombie (empty command line) waiting for whoever adopted it: either way it runs no more.
      const running = () => {
        try {
          return readFileSync(`/proc/${child}/cmdline`, 'utf8').includes('inspect-process')
        } catch {
          return false
        }
      }
      try {
        await until(() => !running())
      } finally {
        // Never left running by a failing test; never a process that has taken its number since.
        if (running()) process.kill(child, 'SIGKILL')
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('an inspection past its time limit ends its process and fails its upload; the next upload gets a new one', async () => {
    // Each process takes longer than the limit to load, which must not count: the limit is for inspecting. The
    // limit also times the healthy upload on the fresh process, whose first inspection took up to half a second
    // beside two busy processes (below the test's priority then): 200 ms failed one run in ten there.
    const entry = new URL('./fixtures/stuck-inspect-process.ts', import.meta.url)
    const inspector = createFileInspector(silentLogger, { size: 1, entry, timeoutMs: 2_000, idle: false })
    await using s = await setup({ inspector })
    const stuck = await upload(s.h, s.owner.token, s.threadId, form({ name: 'stuck.txt', bytes: 'loops forever' }))
    expect(stuck.status).toBe(500)
    await expectNothingStored(s.h)
    const next = await upload(s.h, s.owner.token, s.threadId, form({ name: 'notes.txt', bytes: 'fine' }))
    expect(next.status).toBe(201)
  })

  test('a process that never becomes ready is ended at its start limit and fails the uploads it held', async () => {
    const entry = new URL('./fixtures/never-ready-inspect-process.ts', import.meta.url)
    const inspector = createFileInspector(silentLogger, { size: 1, entry, startLimitMs: 300 })
    await using s = await setup({ inspector })
    const reply = await upload(s.h, s.owner.token, s.threadId, form({ name: 'notes.txt', bytes: 'fine' }))
    expect(reply.status).toBe(500)
    await expectNothingStored(s.h)
  })
})
