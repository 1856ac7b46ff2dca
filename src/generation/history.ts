// An answer's history with the files its messages name: the same join on every database.
import { attachmentIdsOf } from '../threads/messages'
import type { AnswerStoreParts } from './repository'
import type { HistoryMessage } from './types'

/** Each message with the files behind its attachment blocks, looked up once for the whole history. */
export async function withFiles(
  rows: Omit<HistoryMessage, 'attachments'>[],
  filesForModel: AnswerStoreParts<unknown, unknown, unknown>['filesForModel'],
): Promise<HistoryMessage[]> {
  const files = await filesForModel([...new Set(rows.flatMap((row) => attachmentIdsOf(row.contents)))])
  return rows.map((row) => {
    const own = attachmentIdsOf(row.contents).flatMap((id) => {
      const file = files.get(id)
      return file ? [[id, file] as const] : []
    })
    return own.length === 0 ? row : { ...row, attachments: Object.fromEntries(own) }
  })
}
