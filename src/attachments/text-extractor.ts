// Reads the text of stored PDFs for models, in child processes the server can kill (extract-process.ts), never where
// answers are streamed: a file crafted to cost minutes of parsing (forms that draw forms, floods of operators,
// thousands of fonts) then costs its own answer a bounded wait and nobody else anything.
//
// Each file gets a wall-clock deadline and a memory bound; a few are read at a time, taken in turn from the answers
// waiting (one file of each answer before a second of any), so one answer's 25 files do not hold up the next
// answer's one. An answer waits for its files up to its own deadline and then goes on without those not read yet;
// a file already being read is finished for the next answer, one not started yet is left for it. What a file turns
// out to be, text or unreadable, is kept in the blob store (pdf-text.ts): no file is read twice.
import { readFileSync } from 'node:fs'
import type { Subprocess } from 'bun'
import type { Logger } from '../shared/log'
import type { BlobStore } from '../storage/blobs'
import type { FromExtractor, ToExtractor } from './extract-process'
import { Exits, lowPriority, spawnHelper } from './inspector'
import { type PdfText, storedPdfText, storePdfText, unreadableReasons } from './pdf-text'

export interface PdfTextLimits {
  /** Files read at once, each in a process of its own. */
  processes: number
  /** How long one file may be read, from when a ready process has it. */
  fileTimeoutMs: number
  /** How long one answer waits for the text of its files, in all. */
  messageTimeoutMs: number
  /** The resident memory an extract process may reach while it reads a file. */
  memoryBytes: number
}

export const defaultPdfTextLimits: PdfTextLimits = {
  processes: 2,
  fileTimeoutMs: 10_000,
  messageTimeoutMs: 30_000,
  memoryBytes: 512 * 1024 * 1024,
}

export interface ExtractorOptions {
  /** The extract process's entry module; tests swap in others. */
  entry?: URL
  /** Whether extract processes run in the idle scheduling class (default), as inspect processes do. */
  idle?: boolean
  /** How often the memory of a process reading a file is looked at. */
  memoryCheckMs?: number
  /**
   * The share of its deadline a file must have had on a core for a timeout to mark it unreadable (default a
   * quarter). Extract processes run in the idle class: on a machine busy with other work a good file may get no
   * core at all before its deadline, and is then left for the next answer rather than condemned.
   */
  minimumCpuShare?: number
}

export interface PdfTextExtractor {
  /**
   * Reads the PDFs under `keys` whose text the store does not know yet, and resolves once each is known, or when
   * the answer's deadline passes, or `signal` aborts: whichever comes first. Never rejects.
   */
  prepare(keys: string[], signal?: AbortSignal): Promise<void>
  /** Ends every extract process and waits until each has exited; files being read are read again by a later answer. */
  close(): Promise<void>
}

interface Job {
  id: number
  key: string
  finish(result: PdfText | null): void
}

interface Slot {
  process: Subprocess
  ready: boolean
  /** The file being read. */
  job: Job | null
}

/** An answer waiting for its files: those not started yet, in order, and how to tell it something changed. */
interface Waiter {
  queue: string[]
  wake(): void
}

/** The resident memory of a process, from Linux's /proc; null where there is no such file. */
function residentBytes(pid: number): number | null {
  try {
    const kib = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
    return kib === undefined ? null : Number(kib) * 1024
  } catch {
    return null
  }
}

/** The processor time a process has used, in milliseconds, from Linux's /proc; null where there is none. */
function cpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // After the parenthesised name: the state is the 3rd field; utime and stime are the 14th and 15th, in
    // clock ticks, which Linux counts 100 to the second on every architecture it runs Bun on.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return null
  }
}

/** Processes in a row that may end before they are ready before no more are started (a broken installation). */
const startAttempts = 3

export function createPdfTextExtractor(
  blobs: BlobStore,
  log: Logger,
  limits: PdfTextLimits = defaultPdfTextLimits,
  options: ExtractorOptions = {},
): PdfTextExtractor {
  const entry = options.entry ?? new URL('./extract-process.ts', import.meta.url)
  const memoryCheckMs = options.memoryCheckMs ?? 100
  const minimumCpuShare = options.minimumCpuShare ?? 0.25
  let priority: string[] | undefined
  const slots = new Set<Slot>()
  const exits = new Exits()
  /** Files being read, by key: an answer that needs one of them waits for the same reading. */
  const reading = new Set<string>()
  /** Answers with files not started yet, served in turn. */
  const waiters: Waiter[] = []
  let nextId = 0
  let closed = false
  /** Processes that ended before they were ready, since the last that became ready. */
  let failedStarts = 0

  /** Takes the file off the process, if it still has that one. */
  function take(slot: Slot, id: number): Job | null {
    const job = slot.job
    if (job?.id !== id) return null
    slot.job = null
    return job
  }

  function retire(slot: Slot): void {
    if (!slots.delete(slot)) return
    const job = slot.job
    slot.job = null
    try {
      slot.process.kill('SIGKILL')
    } catch (error) {
      log.error('text extractor could not be killed', { error: String(error) })
    }
    exits.track(slot.process)
    job?.finish(null)
    schedule()
  }

  function spawn(): void {
    priority ??= options.idle === false ? [] : lowPriority(log, 'text extractors')
    let slot: Slot | undefined
    const child = spawnHelper(
      entry,
      priority,
      (message: FromExtractor) => slot && settle(slot, message),
      (exitCode, signal) => {
        if (!slot || !slots.has(slot)) return
        log.error('text extractor exited', { exitCode, signal })
        if (!slot.ready) failedStarts++
        slots.delete(slot)
        const job = slot.job
        slot.job = null
        // A process that dies while reading a file died of that file (a parser's stack, a decoder's crash).
        job?.finish({ unreadable: unreadableReasons.crashed })
        schedule()
      },
    )
    slot = { process: child, ready: false, job: null }
    child.unref()
    slots.add(slot)
  }

  function settle(slot: Slot, message: FromExtractor): void {
    if (!slots.has(slot)) return
    if ('ready' in message) {
      slot.ready = true
      failedStarts = 0
      schedule()
      return
    }
    take(slot, message.id)?.finish(message.result)
    // A process whose memory grew past half its bound reads the next file from a fresh start.
    const resident = residentBytes(slot.process.pid)
    if (resident !== null && resident > limits.memoryBytes / 2) retire(slot)
    else schedule()
  }

  /** The next file to start: the first not started of the answer that has waited longest for a turn. */
  function nextKey(): string | undefined {
    while (waiters.length > 0) {
      const waiter = waiters.shift() as Waiter
      const key = waiter.queue.shift()
      if (waiter.queue.length > 0) waiters.push(waiter)
      if (key !== undefined && !reading.has(key)) return key
    }
    return undefined
  }

  /** Starts files on idle processes, and processes while files wait and there is room. */
  function schedule(): void {
    if (closed) return
    for (const slot of slots) {
      if (!slot.ready || slot.job) continue
      const key = nextKey()
      if (key === undefined) return
      start(slot, key)
    }
    const starting = [...slots].filter((slot) => !slot.ready).length
    const waiting = waiters.reduce((sum, waiter) => sum + waiter.queue.length, 0)
    for (let more = waiting - starting; more > 0 && slots.size < limits.processes; more--) {
      if (failedStarts >= startAttempts) {
        log.error('text extractors do not start', { failedStarts })
        return
      }
      try {
        spawn()
      } catch (error) {
        log.error('text extractor did not start', { error: String(error) })
        return
      }
    }
  }

  /** Reads one file on a ready process: its bytes from the store, with the deadline and the memory bound armed. */
  function start(slot: Slot, key: string): void {
    const id = nextId++
    reading.add(key)
    const cpuAtStart = cpuMs(slot.process.pid)
    const timer = setTimeout(() => {
      const now = cpuMs(slot.process.pid)
      const used = cpuAtStart === null || now === null ? null : now - cpuAtStart
      log.warn('PDF text extraction timed out', { key, timeoutMs: limits.fileTimeoutMs, cpuMs: used })
      if (used === null || used >= limits.fileTimeoutMs * minimumCpuShare) {
        return give({ unreadable: unreadableReasons.slow(limits.fileTimeoutMs) })
      }
      // Starved by other work, not slow: stopped for now, read again by a later answer.
      take(slot, id)?.finish(null)
      retire(slot)
    }, limits.fileTimeoutMs)
    const watch = setInterval(() => {
      const resident = residentBytes(slot.process.pid)
      if (resident === null || resident <= limits.memoryBytes) return
      log.warn('PDF text extraction ran out of memory', { key, memoryBytes: limits.memoryBytes })
      give({ unreadable: unreadableReasons.memory(limits.memoryBytes) })
    }, memoryCheckMs)
    slot.job = {
      id,
      key,
      finish(result) {
        clearTimeout(timer)
        clearInterval(watch)
        // Null: given up for reasons that are not the file's (a shutdown, a store that did not answer).
        const stored = result ? storePdfText(blobs, key, result) : Promise.resolve()
        stored
          .catch((error) => log.error('extracted text not stored', { key, error: String(error) }))
          .finally(() => {
            reading.delete(key)
            for (const waiter of watching) waiter.wake()
          })
      },
    }
    /** Ends the reading with what the server found, and the process with it. */
    function give(result: PdfText): void {
      const job = take(slot, id)
      if (!job) return
      job.finish(result)
      retire(slot)
    }
    blobs
      .get(key)
      .then((stored) => stored?.bytes() ?? null)
      .then(
        (bytes) => {
          if (slot.job?.id !== id) return
          // The file is gone (its thread was deleted): nothing to read, nothing to remember.
          if (!bytes) {
            take(slot, id)?.finish(null)
            return schedule()
          }
          slot.process.send({ id, bytes } satisfies ToExtractor)
        },
        (error) => {
          log.error('PDF not read from the store', { key, error: String(error) })
          take(slot, id)?.finish(null)
          schedule()
        },
      )
  }

  /** Answers waiting for files being read, which no queue holds any more. */
  const watching = new Set<Waiter>()

  return {
    async prepare(keys: string[], signal?: AbortSignal): Promise<void> {
      if (closed || keys.length === 0) return
      const known = await Promise.all(keys.map((key) => storedPdfText(blobs, key)))
      const unknown = [...new Set(keys.filter((_, index) => known[index] === null))]
      if (unknown.length === 0) return
      let wake = () => {}
      const waiter: Waiter = { queue: unknown.filter((key) => !reading.has(key)), wake: () => wake() }
      let expired = false
      const expire = () => {
        expired = true
        wake()
      }
      const timer = setTimeout(expire, limits.messageTimeoutMs)
      signal?.addEventListener('abort', expire, { once: true })
      watching.add(waiter)
      if (waiter.queue.length > 0) waiters.push(waiter)
      schedule()
      try {
        while (!expired && !closed) {
          if (!unknown.some((key) => waiter.queue.includes(key) || reading.has(key))) return
          await new Promise<void>((resolve) => {
            wake = resolve
          })
        }
      } finally {
        clearTimeout(timer)
        signal?.removeEventListener('abort', expire)
        watching.delete(waiter)
        // Files this answer has not started stay unread; those being read finish for the next answer.
        waiter.queue.length = 0
        const at = waiters.indexOf(waiter)
        if (at !== -1) waiters.splice(at, 1)
      }
    },
    async close(): Promise<void> {
      closed = true
      waiters.length = 0
      for (const waiter of watching) waiter.wake()
      for (const slot of [...slots]) retire(slot)
      await exits.all()
    },
  }
}
