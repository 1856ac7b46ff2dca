// Where an attachment's bytes live in the blob store: its original under its ID, the scaled copy of a large image
// beside it, and the text extracted from a PDF beside the file it came from.

export const originalKey = (id: string): string => id

export const resizedKey = (id: string): string => `${id}.resized`

/** The file a model should read: the scaled copy of a large image, otherwise the original. */
export function modelReadyKey(attachment: { id: string; resized: boolean }): string {
  return attachment.resized ? resizedKey(attachment.id) : originalKey(attachment.id)
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
