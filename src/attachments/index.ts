// Attachment routes and GET /limits: HTTP in, HTTP out; reading, checking and storing files lives in service.ts.
import { Elysia, t } from 'elysia'
import { type AuthDeps, auth } from '../auth'
import { AuthModel } from '../auth/model'
import type { IdempotencyRepository } from '../idempotency/repository'
import {
  digestFile,
  fingerprintOf,
  idempotencyDeps,
  idempotencyKeyOf,
  idempotencyKeyParameter,
  idempotencyNote,
  once,
} from '../idempotency/service'
import { errorShapes } from '../shared/error-plugin'
import type { Responses } from '../shared/responses'
import { attachmentResponse } from './download'
import {
  filenameMaxLength,
  filesPerRequest,
  filesPerThread,
  imageLimits,
  maxRequestBytes,
  mib,
  pdfLimits,
  publishedLimits,
  textLimits,
} from './limits'
import { AttachmentsModel } from './model'
import { findAttachment, receiveUpload, storeUpload, type UploadDeps, uploadAttachments } from './service'

const uploadDescription = `Multipart form data, one file per part: \`attachments[0]\` (required), \`attachments[1]\`, … numbered without gaps; at most ${filesPerRequest} files per request and ${filesPerThread} per thread. Only the thread's owner may upload. Uploading stores files; it sends no message.

The type is decided from the bytes, never from the name or declared type, though a name or declared type that contradicts the bytes (a PNG named \`.pdf\`; an SVG, which is text that claims to be an image) is refused:
- images: JPEG, PNG, GIF, WebP (animations accepted), at most ${mib(imageLimits.maxBytes)} and ${imageLimits.maxPixels.toLocaleString('en-US')} pixels (all frames counted), fully decoded; images longer than ${imageLimits.modelLongestSide} px on a side also get a scaled copy that models read (unless it would be larger than the original);
- PDF: at most ${mib(pdfLimits.maxBytes)} and ${pdfLimits.maxPages} pages, its compressed streams (images included) inflating to at most ${mib(pdfLimits.maxInflatedBytes)} in all (\`too_large\`); PDFs naming LZW or run-length compression (\`unsupported_type\`) and encrypted or password-protected PDFs are refused;
- text: plain, Markdown (\`.md\`) or CSV (\`.csv\`), at most ${mib(textLimits.maxBytes)}, valid UTF-8 without NUL bytes.

All or nothing: when any file is refused, none is stored.${idempotencyNote} Display names are reduced to their last path segment, without control characters, at most ${filenameMaxLength} characters. GET /api/v1/limits lists these limits.

Errors on this route:
- 400 \`{message}\`: not multipart, unparsable, a missing, misnamed, repeated or non-file part, more than ${filesPerRequest} files, or more files than the thread has room for (${filesPerThread} in all);
- 413 \`{message}\`: a body longer than ${maxRequestBytes} bytes, refused before it is read when \`Content-Length\` declares it, otherwise once read;
- 422 \`{message, reason: {file, part, code, limit?}}\`: a file broke a content rule; \`code\` is one of ${AttachmentsModel.rejectionCodes.map((code) => `\`${code}\``).join(', ')};
- 403 \`{error, message}\`: the caller can see the thread but does not own it, or lacks \`threads:write\`;
- 404 \`{error, message}\`: the thread does not exist for the caller;
- 409 \`{error, message}\` and 422 \`{error, message}\`: \`idempotency_key_in_use\` and \`idempotency_key_mismatch\`, for a repeated \`Idempotency-Key\`. With a key, ownership and room are checked first, then the body is read and hashed (its raw multipart bytes), and only then is the key consulted: a repeat must send the same bytes, boundary included;
- 500 \`{error, message}\`: the body could not be written to the uploads folder for checking (a full disk, say), checking the files took more than 60 s (a parser stuck on a crafted file, or a machine so busy that the checks, which get only CPU time nothing else wants, had none), the checker did not start within 60 s, or it failed or crashed; nothing is stored.`

/** A download is one of the types an upload can be stored as, never anything else. */
const storedMediaTypes = [...imageLimits.mediaTypes, ...pdfLimits.mediaTypes, ...textLimits.mediaTypes]

/** Text files are served as UTF-8 text; the others as their bytes. */
const fileSchema = (type: string): { type: 'string'; format?: 'binary' } =>
  type.startsWith('text/') ? { type: 'string' } : { type: 'string', format: 'binary' }

const downloadErrors = { 400: AuthModel.error, 401: AuthModel.error, 403: AuthModel.scopeError, 404: AuthModel.error }

export const attachmentRoutes = (
  deps: UploadDeps & AuthDeps & { idempotency: IdempotencyRepository; responses: Responses },
) =>
  new Elysia({ name: 'attachments', prefix: '/api/v1' })
    .use(auth(deps))
    .use(errorShapes)
    .post(
      '/threads/:threadId/attachments',
      async ({ caller, params, request, status }) => {
        const key = idempotencyKeyOf(request)
        if (key === null) return status(201, await uploadAttachments(deps, caller, params.threadId, request))
        // The fingerprint hashes the raw multipart body as received, boundary and all: a repeat sends the same bytes.
        const outcome = await receiveUpload(deps, caller, params.threadId, request, async (received) => {
          const path = new URL(request.url).pathname
          const fingerprint = fingerprintOf(request.method, path, await digestFile(received.bodyPath))
          return once(idempotencyDeps(deps), caller, { key, fingerprint, status: 201 }, () =>
            storeUpload(deps, params.threadId, received),
          )
        })
        return 'replay' in outcome ? outcome.replay : status(201, outcome.value)
      },
      {
        scope: 'threads:write',
        bareClientErrors: true,
        // The service reads the form itself, after authorization and a size check: nothing is parsed before.
        parse: 'none',
        params: AttachmentsModel.threadParams,
        response: deps.responses({
          201: AttachmentsModel.uploaded,
          400: AttachmentsModel.badRequest,
          401: AuthModel.error,
          403: t.Union([AuthModel.scopeError, AuthModel.error]),
          404: AuthModel.error,
          409: AuthModel.error,
          413: AttachmentsModel.badRequest,
          422: AttachmentsModel.unprocessable,
        }),
        detail: {
          operationId: 'uploadAttachments',
          summary: 'Upload files to a thread',
          tags: ['Attachments'],
          description: uploadDescription,
          parameters: [idempotencyKeyParameter],
          requestBody: {
            required: true,
            content: { 'multipart/form-data': { schema: AttachmentsModel.uploadForm } },
          },
        },
      },
    )
    .get(
      '/threads/:threadId/attachments/:attachmentId',
      async ({ caller, params, request }) =>
        attachmentResponse(
          deps.blobs,
          await findAttachment(deps, caller, params.threadId, params.attachmentId),
          params.attachmentId,
          request,
        ),
      {
        scope: 'threads:read',
        params: AttachmentsModel.attachmentParams,
        response: deps.responses(downloadErrors),
        detail: {
          operationId: 'downloadAttachment',
          summary: 'Download an attachment',
          tags: ['Attachments'],
          description:
            'The file as uploaded (never the scaled copy), for anyone who can see the thread; 404 for a thread ' +
            'the caller cannot see and for an ID that is not a file of this thread. `Content-Type` is the type ' +
            'decided from the bytes at upload (text with `charset=utf-8`); images are `Content-Disposition: ' +
            'inline`, PDFs and text files `attachment`, both with the display name as `filename` (ASCII, other ' +
            'characters replaced by `_`) and `filename*` (UTF-8). Always `X-Content-Type-Options: nosniff` and ' +
            "`Content-Security-Policy: default-src 'none'; frame-ancestors 'none'; sandbox`. " +
            '`Cache-Control: private, no-cache` with an `ETag`: a repeat with `If-None-Match` is 304.',
          responses: {
            200: {
              description: 'The file, as the media type decided from its bytes at upload.',
              content: Object.fromEntries(storedMediaTypes.map((type) => [type, { schema: fileSchema(type) }])),
            },
            304: { description: 'Not modified: `If-None-Match` names this file’s `ETag`.' },
          },
        },
      },
    )
    .get('/limits', () => publishedLimits, {
      scope: 'any',
      response: deps.responses({ 200: AttachmentsModel.limits, 401: AuthModel.error }),
      detail: {
        operationId: 'getLimits',
        summary: 'The upload and attachment limits',
        tags: ['Attachments'],
        description:
          'The limits that the upload route and `attachment_ids` enforce, machine-readable. Sizes are in bytes. ' +
          'No scope required; any valid token may call it.',
      },
    })
