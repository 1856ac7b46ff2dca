// Serving a stored attachment, for the API and the web pages alike: the media type decided at upload, a safe
// file name, and headers that keep an uploaded file from ever running as part of this site.
import { notFound } from '../shared/errors'
import type { BlobStore } from '../storage/blobs'
import type { StoredFile } from './service'

/** RFC 8187 encoding for `filename*`: percent-encoded UTF-8, with the characters it reserves encoded too. */
function encodeExtValue(value: string): string {
  return encodeURIComponent(value).replace(/['()*]/g, (character) => `%${character.charCodeAt(0).toString(16)}`)
}

/**
 * Images open in the browser; everything else downloads. Display names hold no control characters already
 * (see sanitizeFilename); the plain `filename` fallback also drops what would end or break the quoted string.
 */
export function contentDisposition(file: Pick<StoredFile, 'kind' | 'filename'>): string {
  const disposition = file.kind === 'image' ? 'inline' : 'attachment'
  const fallback = file.filename.replace(/[^\x20-\x7e]|["\\%]/g, '_')
  return `${disposition}; filename="${fallback}"; filename*=UTF-8''${encodeExtValue(file.filename)}`
}

export const downloadHeaders = {
  'x-content-type-options': 'nosniff',
  // Opened on its own, a file runs nothing and is a unique origin; images still show in pages' <img>.
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'; sandbox",
  'cross-origin-resource-policy': 'same-origin',
  // Checked again on every use, so a thread made private stops being readable from caches at once.
  'cache-control': 'private, no-cache',
} as const

/** RFC 9110 §13.1.2: `*`, or any entity tag in the list, compared weakly (a `W/` prefix does not matter). */
function matchesEtag(header: string | null, etag: string): boolean {
  if (header === null) return false
  if (header.trim() === '*') return true
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}

/**
 * The file's response, or 304 when the browser already holds it (attachments never change). The bytes stream
 * through this server from whichever store keeps them, never by a redirect to a bucket, so these headers always
 * apply; a row whose file is gone is a 404 like any missing file.
 */
export async function attachmentResponse(
  blobs: BlobStore,
  file: StoredFile,
  attachmentId: string,
  request: Request,
): Promise<Response> {
  const etag = `"${attachmentId}"`
  const headers = { ...downloadHeaders, etag }
  if (matchesEtag(request.headers.get('if-none-match'), etag)) return new Response(null, { status: 304, headers })
  const body = await blobs.get(file.key)
  if (!body) throw notFound('Attachment')
  const type = file.mediaType.startsWith('text/') ? `${file.mediaType}; charset=utf-8` : file.mediaType
  return new Response(body.stream(), {
    headers: {
      ...headers,
      'content-type': type,
      'content-length': String(body.size),
      'content-disposition': contentDisposition(file),
    },
  })
}
