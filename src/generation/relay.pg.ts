// The relay on PostgreSQL: chunks in the UNLOGGED answer_chunks table, events by NOTIFY on one channel, heard on the
// one dedicated LISTEN connection Bun.SQL keeps (and reconnects, re-subscribing, when it drops).
import { and, asc, eq, gt, inArray, max, sql } from 'drizzle-orm'
import type { PgDb } from '../db/postgres'
import type { ThreadsModel } from '../threads/model'
import { messages } from '../threads/threads.table.pg'
import { answerChunks, generations } from './generations.table.pg'
import { type AnswerRelay, decodeEvent, encodeEvent, type RelayEvent, relayChannel } from './relay'

/** A notification inside a statement or transaction: delivered when it commits, never when it rolls back. */
export function notifyEvent(event: RelayEvent) {
  return sql`select pg_notify(${relayChannel}, ${encodeEvent(event)})`
}

export function pgAnswerRelay(db: PgDb): AnswerRelay {
  let subscription: Bun.SQL.ListenSubscription | undefined
  return {
    async publish(chunk) {
      const { messageId, lease, start, end, text } = chunk
      // One statement, so one round trip: the lease check, the insert and the notification commit together. The
      // check locks the generation's row (FOR SHARE), so a takeover or an end committing meanwhile is waited for
      // and seen: a lease lost by then publishes nothing.
      const rows = await db.execute(sql`
        with held as (
          select 1 from ${generations}
          where ${generations.messageId} = ${messageId} and ${generations.leaseId} = ${lease}
            and ${generations.status} = 'running'
          for share
        ), stored as (
          insert into ${answerChunks} (message_id, lease_id, start, "end", text)
          select ${messageId}, ${lease}, ${start}, ${end}, ${text} from held
          returning 1
        )
        select pg_notify(${relayChannel}, ${encodeEvent({ kind: 'chunk', messageId, lease, start, end, text })})
        from stored`)
      return rows.length > 0
    },

    async chunks(messageId, lease, from) {
      return await db
        .select({
          messageId: answerChunks.messageId,
          lease: answerChunks.leaseId,
          start: answerChunks.start,
          end: answerChunks.end,
          text: answerChunks.text,
        })
        .from(answerChunks)
        .where(and(eq(answerChunks.messageId, messageId), eq(answerChunks.leaseId, lease), gt(answerChunks.end, from)))
        .orderBy(asc(answerChunks.start))
    },

    async progress(messageIds) {
      if (messageIds.length === 0) return []
      const length = db
        .select({ end: max(answerChunks.end) })
        .from(answerChunks)
        .where(and(eq(answerChunks.messageId, generations.messageId), eq(answerChunks.leaseId, generations.leaseId)))
      const rows = await db
        .select({
          messageId: generations.messageId,
          status: generations.status,
          error: generations.error,
          lease: generations.leaseId,
          length: sql<number | null>`(${length})`,
        })
        .from(generations)
        .where(inArray(generations.messageId, messageIds))
      return rows.map((row) => ({ ...row, length: Number(row.length ?? 0) }))
    },

    async storedText(messageId) {
      const [reply] = await db
        .select({ contents: messages.contents })
        .from(messages)
        .where(and(eq(messages.replyTo, messageId), eq(messages.role, 'assistant')))
      const first = (reply?.contents as ThreadsModel.contentBlock[] | undefined)?.[0]
      return first?.type === 'text' ? first.text : ''
    },

    async stop(threadId) {
      await db.execute(notifyEvent({ kind: 'stop', threadId }))
    },

    async listen(onEvent, resubscribed) {
      let first = true
      subscription = await db.$client.listen(
        relayChannel,
        (payload) => {
          const event = decodeEvent(payload)
          if (event) onEvent(event)
        },
        () => {
          // The first acknowledgement is the subscription itself; later ones follow a lost connection.
          if (first) first = false
          else resubscribed()
        },
      )
    },

    async close() {
      await subscription?.unlisten()
      subscription = undefined
    },
  }
}
