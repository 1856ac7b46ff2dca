// The storage contract of webhooks: an organization's endpoints, the durable queue of deliveries to them and the log
// of attempts. Each method is one unit of work. Where several instances share the database (PostgreSQL) they all run
// a delivery worker: a delivery being sent is leased, so exactly one worker sends it at a time, and only the lease's
// holder records how the attempt went (a worker that lost its lease to expiry writes nothing).
import type { AuditEntry } from '../shared/audit'

export type DeliveryStatus = 'pending' | 'sending' | 'delivered' | 'failed' | 'cancelled'

export interface EndpointRow {
  id: string
  organizationId: number
  url: string
  secret: string
  /** Null: every event type. */
  events: string[] | null
  enabled: boolean
  disabledReason: string | null
  disabledAt: number | null
  createdBy: number | null
  createdAt: number
  failureStreak: number
  failingSince: number | null
  lastSuccessAt: number | null
}

export interface NewEndpoint {
  id: string
  organizationId: number
  url: string
  secret: string
  events: string[] | null
  createdBy: number | null
  now: number
}

/** What an event on a thread needs: its organization's enabled endpoints and the thread's state now. */
export interface ThreadTargets {
  organizationId: number
  state: string
  isPrivate: boolean
  endpoints: { id: string; events: string[] | null }[]
}

export interface NewDelivery {
  id: string
  endpointId: string
  eventType: string
  payload: string
  /** The thread the event is about; null for a test event. */
  threadId: string | null
}

/** A delivery claimed for one attempt, with what sending it needs. */
export interface ClaimedDelivery {
  id: string
  endpointId: string
  url: string
  secret: string
  payload: string
  /** Attempts made before this one. */
  attempts: number
  createdAt: number
}

/** How one attempt went, and what becomes of the delivery. */
export interface AttemptOutcome {
  deliveryId: string
  endpointId: string
  lease: string
  at: number
  durationMs: number
  responseStatus: number | null
  error: string | null
  /** `delivered`, `failed` (given up), or `pending` again at `nextAttemptAt`. */
  status: 'delivered' | 'failed' | 'pending'
  nextAttemptAt: number
  /** With a failure: the endpoint is disabled with this reason when it has been failing since at or before `disableIfFailingSince`. */
  disable: { ifFailingSince: number; reason: string } | null
}

export interface AttemptRow {
  deliveryId: string
  endpointId: string
  eventType: string
  attempt: number
  at: number
  durationMs: number
  responseStatus: number | null
  error: string | null
  status: DeliveryStatus
}

export interface WebhookRepository {
  /** Stores the endpoint, recording the event `audit` makes of it in the same transaction. */
  createEndpoint(endpoint: NewEndpoint, audit: (endpoint: EndpointRow) => AuditEntry): Promise<EndpointRow>
  /** The organization's endpoints, oldest first. */
  listEndpoints(organizationId: number): Promise<EndpointRow[]>
  /** The endpoint, if it is this organization's. */
  findEndpoint(organizationId: number, endpointId: string): Promise<EndpointRow | null>
  /**
   * Turns an endpoint of this organization on (its failure streak starts again) or off with a reason; turning it off
   * cancels its pending deliveries. False when there is no such endpoint.
   */
  setEnabled(
    organizationId: number,
    endpointId: string,
    change: { enabled: true } | { enabled: false; reason: string },
    now: number,
  ): Promise<boolean>
  /**
   * Deletes the endpoint with its deliveries and attempts, recording the event `audit` makes of its URL. False when
   * there is no such endpoint (nothing recorded).
   */
  deleteEndpoint(organizationId: number, endpointId: string, audit: (url: string) => AuditEntry): Promise<boolean>

  /**
   * The thread's organization and state, with that organization's enabled endpoints (only its own: an event never
   * reaches another organization's); null when the thread is gone.
   */
  threadTargets(threadId: string): Promise<ThreadTargets | null>
  /** Queues deliveries, due at `now`, in one unit. */
  enqueue(deliveries: NewDelivery[], now: number): Promise<void>

  /**
   * Claims up to `limit` deliveries due at `now` (pending ones whose time has come, and sending ones whose lease
   * expired: their worker died) of enabled endpoints, oldest first, under `lease` until `leaseExpiresAt`. Exactly one
   * worker claims each delivery; on PostgreSQL claims skip rows another worker is claiming (FOR UPDATE SKIP LOCKED).
   */
  claimDue(now: number, limit: number, lease: string, leaseExpiresAt: number): Promise<ClaimedDelivery[]>
  /**
   * Records an attempt, in one unit: its log row, the delivery's new status (only while it is still `sending` under
   * `lease`), and the endpoint's failure streak: reset by a success; on a failure, lengthened, and the endpoint
   * disabled (its pending deliveries cancelled) when `disable` says so. False, with nothing written, when the lease
   * was lost.
   */
  recordAttempt(outcome: AttemptOutcome): Promise<boolean>
  /** The organization's latest attempts, newest first, optionally of one endpoint. */
  recentAttempts(organizationId: number, limit: number, endpointId?: string): Promise<AttemptRow[]>
  /**
   * At start-up on SQLite (one process holds the database): deliveries left `sending` by a process that died are due
   * again at once. On PostgreSQL nothing: their leases expire and any instance takes them.
   */
  releaseAbandoned(): Promise<number>
  /** Deletes finished deliveries (with their attempts) that ended before `before`. */
  deleteFinished(before: number): Promise<number>

  /**
   * Removes every delivery (and its attempts) about a thread, sent or not: a deleted thread's words must not live on
   * in queued or logged payloads. Returns how many went.
   */
  forgetThread(threadId: string): Promise<number>
}
