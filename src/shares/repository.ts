// The storage contract of share links. A link's row holds its thread's snapshot (the messages as they were when it
// was made), so reading a link never reads the thread's messages. Each method is one statement, written once for both
// dialects (repository.common.ts).

import type { AttachmentKind } from '../attachments/repository'
import type { AuditEntry } from '../shared/audit'
import type { ThreadsModel } from '../threads/model'

/** A shared thread as it was at share time, stored as JSON in the link's row. */
export interface Snapshot {
  name: string | null
  /** The owner's display name then, for the author of the thread's own messages. */
  ownerName: string | null
  messages: {
    id: string
    role: ThreadsModel.message['role']
    contents: ThreadsModel.contentBlock[]
    createdAt: string
  }[]
  /** The attached files the page may show: empty unless the sharer included them. */
  files: { id: string; filename: string; kind: AttachmentKind }[]
}

export interface NewShare {
  id: string
  threadId: string
  organizationId: number
  createdBy: number
  tokenHash: string
  includeFiles: boolean
  snapshot: Snapshot
  now: number
}

/** A live link as lists show it: never its token, which only its maker saw, once. */
export interface ShareSummary {
  id: string
  threadId: string
  /** The thread's name when it was shared. */
  threadName: string | null
  includeFiles: boolean
  createdAt: number
  createdBy: { id: number; name: string | null; email: string }
}

/** A link that answers: its organization shares, and its maker is still a member. */
export interface OpenShare {
  id: string
  threadId: string
  includeFiles: boolean
  createdAt: number
  organizationName: string
  snapshot: Snapshot
}

/** Whose links a list or a revocation covers: one thread's, one person's, or a whole organization's. */
export type ShareScope = { threadId: string } | { createdBy: number } | { organizationId: number }

export interface ShareRepository {
  /**
   * Stores the link with its audit event; false when its thread was deleted since the snapshot was read (nothing is
   * stored or recorded).
   */
  create(share: NewShare, audit: AuditEntry): Promise<boolean>
  /** Newest first. */
  list(scope: ShareScope): Promise<ShareSummary[]>
  /**
   * Deletes the link when it is within `scope`, recording the event `audit` makes of its thread and organization;
   * whether there was one. From then on its token answers nothing.
   */
  revoke(
    scope: ShareScope,
    shareId: string,
    audit: (share: { threadId: string; organizationId: number }) => AuditEntry,
  ): Promise<boolean>
  /**
   * The link a token's hash names, read in one statement with what decides whether it still answers: null when
   * there is none (revoked, or its thread deleted), its organization has turned sharing off, or its maker was removed.
   */
  open(tokenHash: string): Promise<OpenShare | null>
  sharingEnabled(organizationId: number): Promise<boolean>
  /** Turns sharing on or off for the organization, recording `audit` with it. */
  setSharing(organizationId: number, enabled: boolean, audit: AuditEntry): Promise<void>
}

export function snapshotToColumn(snapshot: Snapshot): string {
  return JSON.stringify(snapshot)
}

export function snapshotFromColumn(text: string): Snapshot {
  return JSON.parse(text) as Snapshot
}
