// The upload limits, in one place: validation, the request-size guard, GET /limits and the docs all read them.
import type { AttachmentsModel } from './model'

const MiB = 1024 * 1024

/** A byte limit as people read it in documentation and hints. */
export const mib = (bytes: number): string => `${bytes / MiB} MiB`

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
  /**
   * Bytes a PDF's compressed streams may inflate to, in all. pdf-lib inflates object streams as it loads and text
   * extraction inflates page contents, so without a bound a 2.5 MiB file of compressed spaces stands for
   * gigabytes. Images count too: a stream that says it is one can also be a page's contents. Text, fonts and
   * object streams compress 3–10 times and photographs are JPEG, which is not inflated, so real documents stay
   * well below it.
   */
  maxInflatedBytes: 128 * MiB,
  /**
   * Characters of a PDF's text that models are given, about 250,000 tokens: more than most context windows hold.
   * Extraction stops there, so a file of tiny type cannot make the text it stands for grow without bound.
   */
  maxTextLength: 1_000_000,
  /**
   * Operators a PDF's pages may run in all, each form counted as often as it is drawn. Text extraction reads them
   * all; pdf.js takes about a second for 5 million on a loaded 2-core machine. Dense vector drawings run tens of
   * thousands a page.
   */
  maxOperators: 10_000_000,
  /**
   * Form XObjects a PDF's pages may draw in all, forms inside forms multiplied out: pdf.js takes about half a
   * millisecond for each. A letterhead or a stamp on each of 100 pages is a few hundred.
   */
  maxFormInvocations: 5_000,
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
 * boundaries and part headers (a 255-character name percent-encoded is under 1 KiB a part). The route refuses
 * a longer declared Content-Length before reading a byte, and a longer chunked body once read.
 */
export const maxRequestBytes =
  filesPerRequest * Math.max(imageLimits.maxBytes, pdfLimits.maxBytes, textLimits.maxBytes) + 64 * 1024

/** The limits as GET /api/v1/limits publishes them, so that clients need not hard-code them. */
export const publishedLimits: AttachmentsModel.limits = {
  files_per_request: filesPerRequest,
  files_per_thread: filesPerThread,
  attachments_per_message: attachmentsPerMessage,
  request_max_bytes: maxRequestBytes,
  filename_max_length: filenameMaxLength,
  image: {
    media_types: [...imageLimits.mediaTypes],
    max_bytes: imageLimits.maxBytes,
    max_pixels: imageLimits.maxPixels,
    model_longest_side: imageLimits.modelLongestSide,
  },
  pdf: {
    media_types: [...pdfLimits.mediaTypes],
    max_bytes: pdfLimits.maxBytes,
    max_pages: pdfLimits.maxPages,
    max_inflated_bytes: pdfLimits.maxInflatedBytes,
  },
  text: { media_types: [...textLimits.mediaTypes], max_bytes: textLimits.maxBytes },
}
