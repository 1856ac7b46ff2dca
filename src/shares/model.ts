// TypeBox schemas of the share links API: validation, TypeScript types and OpenAPI from one source.
import { type Static, t } from 'elysia'

export namespace SharesModel {
  export const createShareBody = t.Object(
    {
      include_files: t.Optional(
        t.Boolean({
          default: false,
          description:
            'Whether the shared page shows the thread’s images and files (default false: each is named “a file, not ' +
            'shared” instead). Included files are served to anyone holding the link, from `/s/{token}/files/{id}`.',
        }),
      ),
    },
    { additionalProperties: false },
  )
  export type createShareBody = Static<typeof createShareBody>

  const id = t.String({ format: 'uuid', description: 'The link’s ID, for revoking it.' })
  const createdAt = t.String({ format: 'date-time', description: 'When the link was made: the snapshot’s time.' })
  const includeFiles = t.Boolean({ description: 'Whether the shared page shows the thread’s images and files.' })

  export const createdShare = t.Object(
    {
      id,
      url: t.String({
        description:
          'The link, `{PUBLIC_URL}/s/{token}`: anyone holding it can read the snapshot without signing in. It is ' +
          'answered only this once; the server keeps only a hash of its token.',
      }),
      created_at: createdAt,
      include_files: includeFiles,
    },
    { additionalProperties: false },
  )
  export type createdShare = Static<typeof createdShare>

  export const share = t.Object(
    { id, created_at: createdAt, include_files: includeFiles },
    { additionalProperties: false },
  )
  export type share = Static<typeof share>

  export const shareList = t.Object(
    { data: t.Array(share, { description: 'The thread’s live links, newest first.' }) },
    { additionalProperties: false },
  )
  export type shareList = Static<typeof shareList>

  export const shareParams = t.Object({
    threadId: t.String({ format: 'uuid' }),
    shareId: t.String({ format: 'uuid' }),
  })
}
