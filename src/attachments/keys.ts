// Where an attachment's bytes live in the blob store: its original under its ID, the scaled copy of a large image
// beside it, and the text extracted from a PDF beside the file it came from.
import type { AttachmentRepository } from './repository'

export const originalKey = (id: string): string => id

export const resizedKey = (id: string): string => `${id}.resized`

/** The file a model should read: the scaled copy of a large image, otherwise the original. */
export function modelReadyKey(attachment: { id: string; resized: boolean }): string {
  return attachment.resized ? resizedKey(attachment.id) : originalKey(attachment.id)
}

/**
 * The files behind these attachment IDs as generators read them, by ID: what the answer store is handed (through the
 * store's composition) to give a history its files. Unknown IDs are left out.
 */
export async function filesForModel(
  attachments: Pick<AttachmentRepository, 'listByIds'>,
  ids: string[],
): Promise<Map<string, { filename: string; mediaType: string; key: string }>> {
  const rows = await attachments.listByIds(ids)
  return new Map(
    rows.map((row) => [row.id, { filename: row.filename, mediaType: row.mediaType, key: modelReadyKey(row) }]),
  )
}

/** The cached text of the PDF stored under `key`, which the generation worker writes the first time it reads it. */
export const extractedTextKey = (key: string): string => `${key}.txt`

/** Every key an attachment's bytes may be under: its original, its scaled copy, the text extracted from it. */
export function keysOf(attachment: { id: string; resized: boolean }): string[] {
  const original = originalKey(attachment.id)
  return [original, ...(attachment.resized ? [resizedKey(attachment.id)] : []), extractedTextKey(original)]
}

const attachmentKey = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(\.resized)?(\.txt)?$/

/** The attachment a key belongs to, or null for a key no attachment would have. */
export function attachmentIdOf(key: string): string | null {
  return attachmentKey.exec(key)?.[1] ?? null
}
