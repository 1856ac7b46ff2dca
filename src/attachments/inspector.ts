// The server's side of the inspect processes: a small pool of child processes, started on the first upload, that
// do all of an upload's work except the database (parsing the body, checking each file, writing the accepted ones
// under temporary names) while the server keeps answering requests. A process that dies fails only the uploads
// it held (they answer 500); the next upload gets a fresh one.
import type { Subprocess } from 'bun'
import type { Logger } from '../shared/log'
import type { AttachmentKind } from './attachments.table'
import type { AttachmentsModel } from './model'

/** A file a web form sent, already parsed; its name and declared type are claims. */
export interface FormFile {
  filename: string
  declaredType: string
  bytes: ArrayBuffer
}

/**
 * What to inspect: the file holding an upload request's raw multipart body, with the number of files its thread
 * already holds, or the files of a web form, whose bytes are copied to the inspect process.
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
  /** 422: a file broke a content rule; `problem` completes a sentence that starts with the file's name. */
  | {
      kind: 'file'
      part: string
      file: string
      code: AttachmentsModel.rejectionCode
      problem: string
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
  /** Ends every inspect process; uploads still being inspected fail. */
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
 * How an inspect process starts: in Linux's idle scheduling class (`chrt --idle`, which needs no privilege to
 * lower one's own priority), whose threads run only on a core nothing else wants and which every thread the
 * process starts inherits: libvips's, JavaScriptCore's compilers and garbage collectors alike. Decoding an image
 * or parsing a PDF then never holds a core a request could use. Without chrt (not Linux), at nice 19.
 */
function lowPriority(): string[] {
  const chrt = process.platform === 'linux' && Bun.which('chrt')
  if (chrt) return [chrt, '--idle', '0']
  const nice = Bun.which('nice')
  return nice ? [nice, '-n', '19'] : []
}

/**
 * The inspect process's environment: what Bun needs, no more. It parses files strangers send, so it gets none of
 * the server's configuration, model providers' API keys among it.
 */
function childEnvironment(): Record<string, string> {
  const { PATH, HOME, TMPDIR } = process.env
  return Object.fromEntries(
    Object.entries({ PATH, HOME, TMPDIR }).filter((entry): entry is [string, string] => !!entry[1]),
  )
}

export function createFileInspector(log: Logger, options: InspectorOptions = {}): FileInspector {
  const size = Math.max(1, options.size ?? 2)
  const entry = options.entry ?? new URL('./inspect-process.ts', import.meta.url)
  const timeoutMs = options.timeoutMs ?? 60_000
  const startLimitMs = options.startLimitMs ?? 60_000
  const command = [...lowPriority(), process.execPath, Bun.fileURLToPath(entry)]
  const slots = new Set<Slot>()
  let nextId = 0
  let closed = false

  function retire(slot: Slot, reason: string): void {
    if (!slots.delete(slot)) return
    clearTimeout(slot.starting)
    slot.process.kill('SIGKILL')
    const pending = [...slot.pending.values()]
    slot.pending.clear()
    for (const job of pending) {
      clearTimeout(job.timer)
      job.reject(new Error(reason))
    }
  }

  function spawn(): Slot {
    const starting = setTimeout(() => {
      log.error('file inspector did not start', { startLimitMs })
      retire(slot, 'The file inspector did not start')
    }, startLimitMs)
    starting.unref()
    const slot: Slot = {
      process: Bun.spawn(command, {
        env: childEnvironment(),
        stdio: ['ignore', 'inherit', 'inherit'],
        ipc: (message: FromInspector) => settle(slot, message),
        // A crash (a decoder's segfault, running out of memory) or any other exit fails what the process held.
        onExit: (_process, exitCode, signal) => {
          if (slots.has(slot)) log.error('file inspector exited', { exitCode, signal })
          retire(slot, 'The file inspector stopped unexpectedly')
        },
      }),
      waiting: [],
      starting,
      pending: new Map(),
    }
    // Idle processes must not keep the server alive: the server and pending uploads do that.
    slot.process.unref()
    slots.add(slot)
    return slot
  }

  function arm(slot: Slot, job: Pending): void {
    job.timer = setTimeout(() => {
      log.error('file inspection timed out', { timeoutMs })
      retire(slot, 'File inspection took too long')
    }, timeoutMs)
  }

  function settle(slot: Slot, message: FromInspector): void {
    if ('ready' in message) {
      clearTimeout(slot.starting)
      for (const job of slot.pending.values()) arm(slot, job)
      for (const request of slot.waiting ?? []) slot.process.send(request)
      slot.waiting = null
      return
    }
    const job = slot.pending.get(message.id)
    if (!job) return
    slot.pending.delete(message.id)
    clearTimeout(job.timer)
    if ('failure' in message) job.reject(new Error(`File inspection failed: ${message.failure}`))
    else job.resolve(message.outcome)
  }

  /** An idle process if there is one, else a new one while the pool has room, else the least busy. */
  function choose(): Slot {
    let best: Slot | undefined
    for (const slot of slots) if (!best || slot.pending.size < best.pending.size) best = slot
    if (best && (best.pending.size === 0 || slots.size >= size)) return best
    return spawn()
  }

  return {
    inspect(upload: Upload, uploadsDir: string): Promise<Outcome> {
      if (closed) return Promise.reject(new Error('The server is shutting down'))
      const slot = choose()
      const request: ToInspector = { id: nextId++, upload, uploadsDir }
      return new Promise<Outcome>((resolve, reject) => {
        const job: Pending = { resolve, reject }
        slot.pending.set(request.id, job)
        if (slot.waiting) slot.waiting.push(request)
        else {
          arm(slot, job)
          slot.process.send(request)
        }
      })
    },
    async close(): Promise<void> {
      closed = true
      for (const slot of [...slots]) retire(slot, 'The server is shutting down')
    },
  }
}
