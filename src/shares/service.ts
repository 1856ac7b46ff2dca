// Share links: a thread's owner makes a link that shows anyone holding it the thread as it was at that moment. The
// link's row keeps a copy of the active messages (the snapshot), so later messages, edits and renames never reach
// it; its token is random (192 bits, `ths_…`) and kept only as a SHA-256 hash. A link stops answering at once when
// it is revoked, its thread is deleted (the row goes with it), its organization turns sharing off, or its maker is
// removed from the organization: every read checks all four in one statement.
import { originalKey } from '../attachments/keys'
import type { AttachmentRepository } from '../attachments/repository'
import type { StoredFile } from '../attachments/service'
import type { Caller } from '../auth/model'
import { type AuditOrigin, auditEntry, target } from '../shared/audit'
import { AppError, notFound } from '../shared/errors'
import { newId } from '../shared/ids'
import { generateSecret, hashSecret } from '../shared/security'
import { toIso } from '../shared/time'
import type { Links } from '../threads/links'
import { allMessages, attachmentIdsOf } from '../threads/messages'
import type { ThreadRepository } from '../threads/repository'
import { requireOwnedThread } from '../threads/visibility'
import type { SharesModel } from './model'
import type { OpenShare, ShareRepository, ShareScope, ShareSummary, Snapshot } from './repository'

/** Recognisable in a leaked URL or log line, as `thp_` is for personal access tokens. */
export const shareTokenPrefix = 'ths_'

export interface ShareDeps {
  shares: ShareRepository
  threads: ThreadRepository
  attachments: AttachmentRepository
  links: Links
  publicUrl: string
}

/** The page a link opens. */
export function sharePath(token: string): string {
  return `/s/${token}`
}

export const sharingOff = (): AppError =>
  new AppError(403, 'sharing_disabled', 'Sharing links is turned off for your organization')

/** The thread as it is now, for the snapshot: its active messages and, if asked, its files' names. */
async function snapshotOf(deps: ShareDeps, caller: Caller, threadId: string, includeFiles: boolean) {
  const thread = await requireOwnedThread(deps.threads, caller, threadId, 'share it')
  const messages = await allMessages(deps.threads, caller, threadId, deps.links)
  const ids = [...new Set(messages.flatMap((message) => attachmentIdsOf(message.contents)))]
  const files = includeFiles && ids.length > 0 ? await deps.attachments.listByIds(ids) : []
  const snapshot: Snapshot = {
    name: thread.name,
    ownerName: thread.ownerName,
    messages: messages.map((message) => ({
      id: message.id,
      role: message.role,
      contents: message.contents,
      createdAt: message.created_at,
    })),
    files: files
      .filter((file) => file.threadId === threadId)
      .map((file) => ({ id: file.id, filename: file.filename, kind: file.kind })),
  }
  return snapshot
}

/** Owner only (404 when the thread is not there for the caller, 403 for other members who see it). */
export async function createShare(
  deps: ShareDeps,
  caller: Caller,
  threadId: string,
  body: SharesModel.createShareBody,
  now: number,
  origin: AuditOrigin,
): Promise<SharesModel.createdShare> {
  const includeFiles = body.include_files ?? false
  const snapshot = await snapshotOf(deps, caller, threadId, includeFiles)
  if (!(await deps.shares.sharingEnabled(caller.organizationId))) throw sharingOff()
  const token = generateSecret(shareTokenPrefix)
  const id = newId()
  const stored = await deps.shares.create(
    {
      id,
      threadId,
      organizationId: caller.organizationId,
      createdBy: caller.userId,
      tokenHash: hashSecret(token),
      includeFiles,
      snapshot,
      now,
    },
    auditEntry(origin, now, {
      organizationId: caller.organizationId,
      action: 'thread.shared',
      target: target('thread', threadId),
      detail: { share_id: id, include_files: includeFiles },
    }),
  )
  if (!stored) throw notFound('Thread')
  return { id, url: `${deps.publicUrl}${sharePath(token)}`, created_at: toIso(now), include_files: includeFiles }
}

export function toShare(share: ShareSummary): SharesModel.share {
  return { id: share.id, created_at: toIso(share.createdAt), include_files: share.includeFiles }
}

/** The thread's live links, for its owner only, as for making one. */
export async function listShares(deps: ShareDeps, caller: Caller, threadId: string): Promise<SharesModel.shareList> {
  await requireOwnedThread(deps.threads, caller, threadId, 'see its links')
  return { data: (await deps.shares.list({ threadId })).map(toShare) }
}

/** The event of a link's revocation, with the link's thread and organization. */
function shareRevoked(origin: AuditOrigin, now: number, shareId: string) {
  return (share: { threadId: string; organizationId: number }) =>
    auditEntry(origin, now, {
      organizationId: share.organizationId,
      action: 'thread.share_revoked',
      target: target('thread', share.threadId),
      detail: { share_id: shareId },
    })
}

/** Revokes one of the thread's links: owner only; 404 for a link that is not the thread's (or already revoked). */
export async function revokeShare(
  deps: ShareDeps,
  caller: Caller,
  threadId: string,
  shareId: string,
  now: number,
  origin: AuditOrigin,
): Promise<void> {
  await requireOwnedThread(deps.threads, caller, threadId, 'revoke its links')
  if (!(await deps.shares.revoke({ threadId }, shareId, shareRevoked(origin, now, shareId)))) {
    throw notFound('Share link')
  }
}

/**
 * Revokes a link within `scope` (its maker's own, or any of an organization's for its owners and admins; the caller
 * decides the scope); whether there was one.
 */
export function revokeShareIn(
  shares: ShareRepository,
  scope: ShareScope,
  shareId: string,
  now: number,
  origin: AuditOrigin,
): Promise<boolean> {
  return shares.revoke(scope, shareId, shareRevoked(origin, now, shareId))
}

/** Turns sharing on or off for the organization (owners and admins; the caller checks), and records it. */
export function setSharing(
  shares: ShareRepository,
  organizationId: number,
  enabled: boolean,
  now: number,
  origin: AuditOrigin,
): Promise<void> {
  return shares.setSharing(
    organizationId,
    enabled,
    auditEntry(origin, now, {
      organizationId,
      action: 'settings.sharing_changed',
      target: target('organization', organizationId),
      detail: { enabled },
    }),
  )
}

/** The link a token opens, or 404 however it stopped (or never) answering: the reason is nobody's business. */
export async function openShare(shares: ShareRepository, token: string): Promise<OpenShare> {
  const share = token.startsWith(shareTokenPrefix) ? await shares.open(hashSecret(token)) : null
  if (!share) throw notFound('Shared thread')
  return share
}

/** A file of an open link: only when the sharer included files, and only a file its snapshot shows. */
export async function sharedFile(
  deps: Pick<ShareDeps, 'shares' | 'attachments'>,
  token: string,
  attachmentId: string,
): Promise<StoredFile> {
  const share = await openShare(deps.shares, token)
  const shown = share.includeFiles && share.snapshot.files.some((file) => file.id === attachmentId)
  const row = shown ? await deps.attachments.findInThread(share.threadId, attachmentId) : null
  if (!row) throw notFound('Attachment')
  return { key: originalKey(row.id), kind: row.kind, mediaType: row.mediaType, filename: row.filename }
}
