// The upload limits, in one place: validation, the request-size guard, GET /limits and the docs all read them.
const MiB = 1024 * 1024

export const imageLimits = {
  mediaTypes: ['image/jpeg', 'image/png', 'image/gif', 'image/webp'],
  maxBytes: 3 * MiB,
  /** Decoded pixels, all frames of an animation counted: a decompression bomb stops here, before decoding. */
  maxPixels: 50_000_000,
  /** Images whose longest side exceeds this also get a copy scaled to fit it, which models are given. */
  modelLongestSide: 1568,
} as const

export const pdfLimits = {
  mediaTypes: ['application/pdf'],
  maxBytes: 2.5 * MiB,
  maxPages: 100,
} as const

export const textLimits = {
  mediaTypes: ['text/plain', 'text/markdown', 'text/csv'],
  maxBytes: 0.5 * MiB,
} as const

export const filesPerRequest = 5
export const filesPerThread = 25
export const attachmentsPerMessage = 25
export const filenameMaxLength = 255

/**
 * The largest upload body worth reading: five files at the largest per-file limit, plus room for the multipart
 * boundaries and part headers (a 255-character name percent-encoded is under 1 KiB a part). Bun refuses
 * anything longer while it streams in (413), and the route refuses a longer declared Content-Length before
 * reading a byte.
 */
export const maxRequestBytes =
  filesPerRequest * Math.max(imageLimits.maxBytes, pdfLimits.maxBytes, textLimits.maxBytes) + 64 * 1024
