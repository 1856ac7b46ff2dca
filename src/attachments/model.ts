// TypeBox schemas of the attachment upload and of GET /limits: validation, types and OpenAPI from one source.
import { type Static, type TSchema, t } from 'elysia'
import { integer } from '../shared/responses'
import { filesPerRequest } from './limits'

export namespace AttachmentsModel {
  export const threadParams = t.Object({ threadId: t.String({ format: 'uuid' }) })
  export const attachmentParams = t.Object({
    threadId: t.String({ format: 'uuid' }),
    attachmentId: t.String({ format: 'uuid' }),
  })

  /** Documentation only: the route reads the form itself, after authorization (see index.ts). */
  export const uploadForm = t.Object(
    Object.fromEntries(
      Array.from({ length: filesPerRequest }, (_, index) => {
        const file = t.String({ format: 'binary', description: `File ${index + 1}; parts are numbered without gaps.` })
        return [`attachments[${index}]`, index === 0 ? file : t.Optional(file)]
      }),
    ),
    { additionalProperties: false },
  )

  export const attachment = t.Object(
    {
      id: t.String({ format: 'uuid' }),
      filename: t.String({ description: 'The sanitised display name: no path, no control characters.' }),
    },
    { additionalProperties: false },
  )
  export type attachment = Static<typeof attachment>
  export const uploaded = t.Array(attachment, { description: 'The stored files, in part order.' })

  export const rejectionCodes = [
    'unsupported_type',
    'type_mismatch',
    'too_large',
    'too_many_pixels',
    'too_many_pages',
    'too_complex',
    'password_protected',
    'corrupt',
    'empty',
    'invalid_text',
  ] as const
  export type rejectionCode = (typeof rejectionCodes)[number]

  export const reason = t.Object(
    {
      file: t.String({ description: 'The display name of the rejected file.' }),
      part: t.String({ description: 'Its form part, such as `attachments[2]`.', examples: ['attachments[0]'] }),
      code: t.Union(
        rejectionCodes.map((code) => t.Literal(code)),
        { description: 'Why the file was rejected; see the route description.' },
      ),
      limit: t.Optional(
        integer({ description: 'The limit broken: bytes for too_large, pixels, or pages, as the code says.' }),
      ),
    },
    { additionalProperties: false },
  )
  export type reason = Static<typeof reason>

  export const badRequest = t.Object(
    { message: t.String() },
    { additionalProperties: false, description: 'A malformed upload; nothing was stored.' },
  )
  export const unprocessable = t.Object(
    { message: t.String(), reason: t.Optional(reason) },
    { additionalProperties: false, description: 'A file broke a content rule; nothing was stored.' },
  )

  const kindLimits = <T extends Record<string, TSchema>>(extra: T) =>
    t.Object(
      {
        media_types: t.Array(t.String(), { description: 'The types accepted, as detected from the bytes.' }),
        max_bytes: integer({ description: 'Largest accepted file, in bytes.' }),
        ...extra,
      },
      { additionalProperties: false },
    )

  export const limits = t.Object(
    {
      files_per_request: integer({ description: 'Files in one upload request.' }),
      files_per_thread: integer({ description: 'Files uploaded to one thread, in total.' }),
      attachments_per_message: integer({ description: 'Entries of `attachment_ids` in one message.' }),
      request_max_bytes: integer({ description: 'Longer upload bodies are refused with 413, unread.' }),
      filename_max_length: integer({ description: 'Longer display names are shortened, keeping the extension.' }),
      image: kindLimits({
        max_pixels: integer({ description: 'Width × height, all frames of an animation counted.' }),
        model_longest_side: integer({
          description: 'Images longer than this on a side also get a copy scaled to fit it, which models read.',
        }),
      }),
      pdf: kindLimits({
        max_pages: integer(),
        max_inflated_bytes: integer({ description: 'What all of its compressed streams may inflate to.' }),
      }),
      text: kindLimits({}),
    },
    { additionalProperties: false },
  )
  export type limits = Static<typeof limits>
}
