// The main thread's side of the inspect workers: a small pool, started on the first upload, that checks
// each file's bytes while this thread keeps answering requests. A worker that dies fails only the files it
// held (the upload answers 500); the next file gets a fresh worker.
import type { Logger } from '../shared/log'
import type { FileClaim, Verdict } from './checks'

/** A file to check; its bytes are transferred, so the caller must not use them again. */
export interface ToInspector {
  id: number
  bytes: Uint8Array<ArrayBuffer>
  claim: FileClaim
}

/** The verdict with the bytes handed back, or why the checks themselves failed. */
export type FromInspector =
  | { id: number; bytes: Uint8Array<ArrayBuffer>; verdict: Verdict }
  | { id: number; failure: string }

export interface Inspected {
  bytes: Uint8Array<ArrayBuffer>
  verdict: Verdict
}

export interface FileInspector {
  /** Checks one file's bytes off this thread. Takes ownership of `bytes`: use the ones handed back. */
  inspect(bytes: Uint8Array<ArrayBuffer>, claim: FileClaim): Promise<Inspected>
  /** Ends every worker; files still being checked fail. */
  close(): Promise<void>
}

export interface InspectorOptions {
  /** Workers at most; two keep one core free for requests on a small machine. */
  size?: number
  /** The worker's entry module; tests swap in one that can be made to crash. */
  entry?: URL
}

interface Pending {
  resolve(inspected: Inspected): void
  reject(error: Error): void
}

interface Slot {
  worker: Worker
  pending: Map<number, Pending>
}

/** Bytes that are a window on a larger buffer are copied first: transferring would take the whole buffer away. */
function ownBuffer(bytes: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice()
}

export function createFileInspector(log: Logger, options: InspectorOptions = {}): FileInspector {
  const size = Math.max(1, options.size ?? 2)
  const entry = options.entry ?? new URL('./inspect-worker.ts', import.meta.url)
  const slots = new Set<Slot>()
  let nextId = 0
  let closed = false

  function retire(slot: Slot, reason: string): void {
    if (!slots.delete(slot)) return
    slot.worker.terminate()
    const pending = [...slot.pending.values()]
    slot.pending.clear()
    for (const job of pending) job.reject(new Error(reason))
  }

  function spawn(): Slot {
    const slot: Slot = { worker: new Worker(entry), pending: new Map() }
    slot.worker.onmessage = (event: MessageEvent<FromInspector>) => settle(slot, event.data)
    slot.worker.onerror = (event) => {
      log.error('file inspector crashed', { error: event.message })
      retire(slot, 'The file inspector stopped unexpectedly')
    }
    // A worker that exits without an error event (process.exit, out of memory) has died all the same.
    slot.worker.addEventListener('close', () => {
      if (slots.has(slot)) log.error('file inspector exited')
      retire(slot, 'The file inspector stopped unexpectedly')
    })
    // Idle workers must not keep the process alive: the server and pending uploads do that.
    slot.worker.unref()
    slots.add(slot)
    return slot
  }

  function settle(slot: Slot, message: FromInspector): void {
    const job = slot.pending.get(message.id)
    if (!job) return
    slot.pending.delete(message.id)
    if ('failure' in message) job.reject(new Error(`File inspection failed: ${message.failure}`))
    else job.resolve({ bytes: message.bytes, verdict: message.verdict })
  }

  /** An idle worker if there is one, else a new one while the pool has room, else the least busy. */
  function choose(): Slot {
    let best: Slot | undefined
    for (const slot of slots) if (!best || slot.pending.size < best.pending.size) best = slot
    if (best && (best.pending.size === 0 || slots.size >= size)) return best
    return spawn()
  }

  return {
    inspect(bytes: Uint8Array<ArrayBuffer>, claim: FileClaim): Promise<Inspected> {
      if (closed) return Promise.reject(new Error('The server is shutting down'))
      const slot = choose()
      const id = nextId++
      const owned = ownBuffer(bytes)
      return new Promise<Inspected>((resolve, reject) => {
        slot.pending.set(id, { resolve, reject })
        slot.worker.postMessage({ id, bytes: owned, claim } satisfies ToInspector, [owned.buffer])
      })
    },
    async close(): Promise<void> {
      closed = true
      for (const slot of [...slots]) retire(slot, 'The server is shutting down')
    },
  }
}
