// How instances sharing one database tell each other about answers (PostgreSQL: LISTEN/NOTIFY on one channel, see
// relay.pg.ts). The text of a running answer is also kept in the database as it is generated (its chunks), so a
// notification is only ever a shortcut: an instance that missed some (a dropped connection, a stream joining late)
// reads what it lacks from the chunks, and a slow poll catches whatever else was lost. SQLite has no relay: one
// process holds the database, and its hub is every answer's only home.

/** A piece of a running answer's text, published by the instance holding its lease. */
export interface Chunk {
  messageId: string
  lease: string
  /** Offsets into the answer's text (UTF-16 code units, as SSE event IDs are). */
  start: number
  end: number
  text: string
}

/** What an instance hears. `chunk.text` is absent when it was too long for a notification: read the chunks then. */
export type RelayEvent =
  | { kind: 'chunk'; messageId: string; lease: string; start: number; end: number; text?: string }
  /** Claimed (again) under a new lease: the answer is generated from its start. */
  | { kind: 'claimed'; messageId: string; lease: string }
  /** Stored: read how it ended from the database. */
  | { kind: 'ended'; messageId: string }
  /** Someone asked to stop the thread's answer; its lease holder does. */
  | { kind: 'stop'; threadId: string }
  /** Answers were queued for any instance to take (a shutdown handed them over). */
  | { kind: 'work' }

/** Where a followed answer stands in the database. */
export interface Progress {
  messageId: string
  status: 'queued' | 'running' | 'complete' | 'error' | 'interrupted'
  error: string | null
  /** The lease it runs under, when running. */
  lease: string | null
  /** How far its published text reaches under that lease. */
  length: number
}

export interface AnswerRelay {
  /**
   * Stores a chunk and tells the other instances, in one unit, if `lease` still holds the answer: false (nothing
   * written) when it does not. One chunk of an answer at a time, in order: the notifications then arrive in order.
   */
  publish(chunk: Chunk): Promise<boolean>
  /** The chunks of an answer under `lease` that reach past `from`, in order. */
  chunks(messageId: string, lease: string, from: number): Promise<Chunk[]>
  /** Where these answers stand. */
  progress(messageIds: string[]): Promise<Progress[]>
  /** The text of a stored answer, as it was streamed (its first text block). */
  storedText(messageId: string): Promise<string>
  stop(threadId: string): Promise<void>
  /** Starts hearing events; `resubscribed` runs after every reconnection, when events may have been lost. */
  listen(onEvent: (event: RelayEvent) => void, resubscribed: () => void): Promise<void>
  close(): Promise<void>
}

/** The one channel every instance listens on. */
export const relayChannel = 'threadhouse_answers'

/** PostgreSQL refuses a notification payload of 8000 bytes or more; leave room for the rest of the event. */
const maxPayloadBytes = 7000

/** An event as a notification's payload: compact JSON, with a chunk's text left out when it would not fit. */
export function encodeEvent(event: RelayEvent): string {
  const payload = JSON.stringify(event)
  if (event.kind !== 'chunk' || Buffer.byteLength(payload) < maxPayloadBytes) return payload
  const { text: _, ...rest } = event
  return JSON.stringify(rest)
}

export function decodeEvent(payload: string): RelayEvent | null {
  try {
    const event = JSON.parse(payload) as RelayEvent
    return typeof event === 'object' && event !== null && typeof event.kind === 'string' ? event : null
  } catch {
    return null
  }
}
