// The server's side of the inspect processes: a small pool of child processes, started on the first upload, that
// do all of an upload's work except the database (parsing the body, checking each file, writing the accepted ones
// under temporary names) while the server keeps answering requests. A process that dies fails only the uploads
// it held (they answer 500); the next upload gets a fresh one.
import { rm } from 'node:fs/promises'
import { resolve } from 'node:path'
import type { Subprocess } from 'bun'
import type { Logger } from '../shared/log'
import type { AttachmentsModel } from './model'
import type { AttachmentKind } from './repository'

/**
 * A new temporary name in the uploads folder, for a body or file on its way through the checks: no attachment has
 * such a name, so the start-up sweep removes whatever a crash leaves under one.
 */
export const temporaryPath = (uploadsDir: string): string => resolve(uploadsDir, `${Bun.randomUUIDv7()}.tmp`)

/** A file a web form sent, already parsed and written to `path`; its name and declared type are claims. */
export interface FormFile {
  filename: string
  declaredType: string
  path: string
}

/**
 * What to inspect: the file holding an upload request's raw multipart body, with the number of files its thread
 * already holds, or the files of a web form.
 */
export type Upload = { bodyPath: string; contentType: string; stored: number } | { files: FormFile[] }

export interface ToInspector {
  id: number
  upload: Upload
  uploadsDir: string
}

/** Why an upload was refused, as plain data: the request thread turns it into the answer. */
export type Refusal =
  /** 400: the body is no valid upload form; `message` says why. */
  | { kind: 'form'; message: string }
  /** 400: more files than the thread has room for. */
  | { kind: 'quota'; stored: number }
  /** 422: a file broke a content rule; `problem` and `plain` complete a sentence that starts with its name. */
  | {
      kind: 'file'
      part: string
      file: string
      code: AttachmentsModel.rejectionCode
      problem: string
      plain: string
      limit?: number
    }

/** A file that passed every check, waiting under a temporary name in the uploads folder until it is stored. */
export interface CheckedFile {
  filename: string
  kind: AttachmentKind
  mediaType: string
  sizeBytes: number
  temporaryPath: string
  /** The scaled copy of a large image, which models read, or null when the original already fits. */
  resizedTemporaryPath: string | null
}

export type Outcome = { accepted: CheckedFile[] } | { refused: Refusal }

/** Once, when the process has loaded its modules; then per upload, the outcome or why the inspection failed. */
export type FromInspector = { ready: true } | { id: number; outcome: Outcome } | { id: number; failure: string }

export interface FileInspector {
  /** Inspects an upload in an inspect process. */
  inspect(upload: Upload, uploadsDir: string): Promise<Outcome>
  /** Ends every inspect process and waits until each has exited; uploads still being inspected fail. */
  close(): Promise<void>
}

export interface InspectorOptions {
  /**
   * Inspect processes at most. Two let uploads use both cores of a small machine when nothing else wants them;
   * they run in the idle scheduling class, so answers to other requests still come first.
   */
  size?: number
  /** The inspect process's entry module; tests swap in one that can be made to crash. */
  entry?: URL
  /**
   * Whether inspect processes run in the idle scheduling class (default). Tests that are not about priority
   * turn it off, so that other work on a busy machine cannot starve their uploads for seconds.
   */
  idle?: boolean
  /**
   * How long one upload may wait for its outcome once handed to a process that has loaded its modules (default
   * 60 s, far beyond any file within the limits, even beside other uploads on the same process). A process
   * still busy then is taken to be stuck in a parser or decoder: it is killed, and every upload it held fails.
   */
  timeoutMs?: number
  /**
   * How long a new process may take to load its modules (default 60 s: it takes well under a second even on a
   * busy machine). One that is not ready by then is killed, and the uploads waiting for it fail.
   */
  startLimitMs?: number
}

interface Pending {
  resolve(outcome: Outcome): void
  reject(error: Error): void
  /** Armed when the process is ready: loading sharp and pdf-lib on a busy machine is no stuck inspection. */
  timer?: ReturnType<typeof setTimeout>
}

interface Slot {
  process: Subprocess
  /** Uploads for a process still loading its modules, sent once it says it is ready. */
  waiting: ToInspector[] | null
  /** Kills a process that never becomes ready, so that the uploads waiting for it still get an answer. */
  starting: ReturnType<typeof setTimeout>
  pending: Map<number, Pending>
}

/**
 * How an inspect process starts: in Linux's idle scheduling class (`chrt -i 0`, which needs no privilege to
 * lower one's own priority), whose threads run only on a core nothing else wants and which every thread the
 * process starts inherits: libvips's, JavaScriptCore's compilers and garbage collectors alike. Decoding an image
 * or parsing a PDF then never holds a core a request could use. Where chrt is missing or refused (not Linux, a
 * sandbox that forbids it), at nice 19; failing that, at the server's own priority. Tried once, by running the
 * wrapper on `true`, since a wrapper that fails would end every inspect process before it starts.
 */
export function lowPriority(log: Logger, what = 'file inspectors'): string[] {
  const candidates: [string, string[]][] = [
    ['idle scheduling class', ['chrt', '-i', '0']],
    ['nice 19', ['nice', '-n', '19']],
  ]
  for (const [priority, [program = '', ...args]] of candidates) {
    const path = Bun.which(program, { PATH: process.env.PATH ?? '' })
    if (!path) continue
    try {
      const probe = Bun.spawnSync([path, ...args, 'true'], { stdio: ['ignore', 'ignore', 'ignore'], timeout: 2_000 })
      if (probe.success) {
        log.info(`${what} start`, { priority })
        return [path, ...args]
      }
    } catch {
      // Not startable now (no processes left, say): the next candidate may still be.
    }
  }
  log.warn(`${what} start at the server priority: neither chrt nor nice works here`)
  return []
}

/**
 * The inspect process's environment: what Bun needs, and the tuning of libvips and its C allocator. It starts with
 * none of the server's configuration (model providers' API keys among it) and loads no `.env` file, so that
 * nothing it prints or leaks can hold a secret. It runs as the same user, so this is no sandbox.
 */
/**
 * Starts `entry` as a helper process, as inspect and extract processes start: at idle priority unless `idle` is
 * false, with none of the server's environment and no .env file, talking over IPC. `priority` is the command's
 * prefix, worked out once by the caller (lowPriority probes the system).
 */
export function spawnHelper<Message>(
  entry: URL,
  priority: string[],
  ipc: (message: Message) => void,
  onExit: (exitCode: number | null, signal: number | NodeJS.Signals | null) => void,
) {
  return Bun.spawn([...priority, process.execPath, '--no-env-file', Bun.fileURLToPath(entry)], {
    env: childEnvironment(),
    stdio: ['ignore', 'inherit', 'inherit'],
    ipc,
    onExit: (_process, exitCode, signal) => onExit(exitCode, signal),
  })
}

/**
 * The helper processes a pool has killed and that have not exited yet: closing the pool waits for them, so that none
 * outlives it, whether it was retired at close or earlier (a crash, a deadline, a memory bound).
 */
export class Exits {
  private readonly pending = new Set<Promise<unknown>>()

  /** Called once the process has been sent SIGKILL, which it cannot catch: it ends promptly. */
  track(process: Subprocess): void {
    const exited: Promise<unknown> = process.exited.then(() => this.pending.delete(exited))
    this.pending.add(exited)
  }

  async all(): Promise<void> {
    await Promise.all(this.pending)
  }
}

function childEnvironment(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined && /^(PATH|HOME|TMPDIR|VIPS_\w+|MALLOC_\w+)$/.test(entry[0]),
    ),
  )
}

export function createFileInspector(log: Logger, options: InspectorOptions = {}): FileInspector {
  const size = Math.max(1, options.size ?? 2)
  const entry = options.entry ?? new URL('./inspect-process.ts', import.meta.url)
  const timeoutMs = options.timeoutMs ?? 60_000
  const startLimitMs = options.startLimitMs ?? 60_000
  // Settled on the first upload: making an inspector (the server's start, every test) runs nothing.
  let priority: string[] | undefined
  const slots = new Set<Slot>()
  const exits = new Exits()
  let nextId = 0
  let closed = false

  function retire(slot: Slot, reason: string): void {
    if (!slots.delete(slot)) return
    clearTimeout(slot.starting)
    slot.waiting = null
    const pending = [...slot.pending.values()]
    slot.pending.clear()
    for (const job of pending) {
      clearTimeout(job.timer)
      job.reject(new Error(reason))
    }
    try {
      slot.process.kill('SIGKILL')
    } catch (error) {
      log.error('file inspector could not be killed', { error: String(error) })
    }
    exits.track(slot.process)
  }

  /** Starts an inspect process; throws when the system cannot (no processes or file descriptors left). */
  function spawn(): Slot {
    priority ??= options.idle === false ? [] : lowPriority(log)
    // Assigned once Bun.spawn returns: Bun may report an exit from inside it, before there is a slot.
    let slot: Slot | undefined
    const child = spawnHelper(
      entry,
      priority,
      (message: FromInspector) => slot && settle(slot, message),
      // A crash (a decoder's segfault, running out of memory) or any other exit fails what the process held.
      (exitCode, signal) => {
        if (!slot) return
        if (slots.has(slot)) log.error('file inspector exited', { exitCode, signal })
        retire(slot, 'The file inspector stopped unexpectedly')
      },
    )
    if (child.exitCode !== null || child.signalCode !== null) throw new Error('The file inspector did not start')
    const starting = setTimeout(() => {
      log.error('file inspector did not start', { startLimitMs })
      if (slot) retire(slot, 'The file inspector did not start')
    }, startLimitMs)
    starting.unref()
    slot = { process: child, waiting: [], starting, pending: new Map() }
    // An inspect process must not keep the server alive: its HTTP server does that.
    child.unref()
    slots.add(slot)
    return slot
  }

  /** Hands an upload to a ready process; one whose channel has closed has died, whatever its exit says. */
  function post(slot: Slot, request: ToInspector): void {
    try {
      slot.process.send(request)
    } catch (error) {
      log.error('file inspector unreachable', { error: String(error) })
      retire(slot, 'The file inspector stopped unexpectedly')
    }
  }

  function arm(slot: Slot, job: Pending): void {
    job.timer = setTimeout(() => {
      log.error('file inspection timed out', { timeoutMs })
      retire(slot, 'File inspection took too long')
    }, timeoutMs)
  }

  function settle(slot: Slot, message: FromInspector): void {
    // A message read after the process was retired answers nothing any more; files it checked are not wanted.
    if (!slots.has(slot)) {
      discard(message)
      return
    }
    if ('ready' in message) {
      const waiting = slot.waiting
      if (!waiting) return
      clearTimeout(slot.starting)
      slot.waiting = null
      for (const job of slot.pending.values()) arm(slot, job)
      for (const request of waiting) if (slots.has(slot)) post(slot, request)
      return
    }
    const job = slot.pending.get(message.id)
    if (!job) {
      discard(message)
      return
    }
    slot.pending.delete(message.id)
    clearTimeout(job.timer)
    if ('failure' in message) job.reject(new Error(`File inspection failed: ${message.failure}`))
    else job.resolve(message.outcome)
  }

  /** Removes the temporary files of an outcome that no upload waits for any more (its time limit passed). */
  function discard(message: FromInspector): void {
    if (!('outcome' in message) || !('accepted' in message.outcome)) return
    for (const file of message.outcome.accepted) {
      for (const path of [file.temporaryPath, file.resizedTemporaryPath]) {
        // Left to the next start-up sweep should this fail.
        if (path) rm(path, { force: true }).catch(() => {})
      }
    }
  }

  /** An idle process if there is one, else a new one while the pool has room, else the least busy. */
  function choose(): Slot {
    let best: Slot | undefined
    for (const slot of slots) if (!best || slot.pending.size < best.pending.size) best = slot
    if (best && (best.pending.size === 0 || slots.size >= size)) return best
    return spawn()
  }

  return {
    async inspect(upload: Upload, uploadsDir: string): Promise<Outcome> {
      if (closed) throw new Error('The server is shutting down')
      const slot = choose()
      const request: ToInspector = { id: nextId++, upload, uploadsDir }
      return new Promise<Outcome>((resolve, reject) => {
        const job: Pending = { resolve, reject }
        slot.pending.set(request.id, job)
        if (slot.waiting) slot.waiting.push(request)
        else {
          arm(slot, job)
          post(slot, request)
        }
      })
    },
    async close(): Promise<void> {
      closed = true
      for (const slot of [...slots]) retire(slot, 'The server is shutting down')
      await exits.all()
    },
  }
}
