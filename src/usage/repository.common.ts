// Usage on either database (repository.ts): every read is one statement, and the writes (the answer's row and the
// month's totals) run in the answer's own unit of work (the generation repository's `finish`, through the store's
// AnswerStoreParts): on SQLite as two prepared statements, on PostgreSQL as WITH clauses of the unit's last statement.
// An answer's usage is written exactly once, with its end.
import { and, asc, eq, getTableColumns, gte, inArray, lt, type SQL, sql } from 'drizzle-orm'
import type { PgColumn } from 'drizzle-orm/pg-core'
import type { AnyDb } from '../db/dialect'
import { periodOf } from './period'
import type { UsageAggregate, UsageGroup, UsageRepository, UsageRow, UsageTotal } from './repository'
import type * as tables from './usage.table.pg'

export type UsageTables = typeof tables

const dayMs = 86_400_000

/** What an answer's usage writes bind (usageWrites' placeholders): the row, its month and what it adds to the totals. */
export function usageValues(row: UsageRow): Record<string, unknown> {
  return {
    ...row,
    period: periodOf(row.createdAt),
    tokens: row.inputTokens + row.outputTokens,
    cost: row.costMicros ?? 0,
  }
}

const bound = (name: string) => sql.placeholder(name)

/** The answer's row, every column but the generated ID a placeholder of the same name, bound with usageValues. */
export function recordedUsage(db: AnyDb, { answerUsage }: UsageTables) {
  const { id: _, ...columns } = getTableColumns(answerUsage)
  const row = Object.fromEntries(Object.keys(columns).map((column) => [column, bound(column)])) as unknown as UsageRow
  return db.insert(answerUsage).values(row)
}

/**
 * What the answer adds to the month's totals of its member and of its organization (`user_id` 0), in one multi-row
 * upsert: what quotas read in one indexed lookup.
 */
export function addedToTotals(db: AnyDb, { usageTotals }: UsageTables) {
  const total = (userId: ReturnType<typeof bound> | number) => ({
    period: bound('period'),
    organizationId: bound('organizationId'),
    userId,
    tokens: bound('tokens'),
    costMicros: bound('cost'),
  })
  return db
    .insert(usageTotals)
    .values([total(bound('userId')), total(0)] as unknown as (typeof usageTotals.$inferInsert)[])
    .onConflictDoUpdate({
      target: [usageTotals.period, usageTotals.organizationId, usageTotals.userId],
      set: {
        tokens: sql`${usageTotals.tokens} + excluded.tokens`,
        costMicros: sql`${usageTotals.costMicros} + excluded.cost_micros`,
      },
    })
}

/**
 * An answer's usage writes, in order, every value a placeholder bound with usageValues: the SQLite store prepares
 * them once and runs them inside each answer's transaction. They run with every answer, and building and preparing an
 * insert cost several times what running it does.
 */
export function usageWrites(db: AnyDb, t: UsageTables) {
  return [recordedUsage(db, t), addedToTotals(db, t)] as const
}

/** Sums come back as numbers on SQLite and as strings (numeric) on PostgreSQL. */
function count(value: unknown): number {
  return value === null || value === undefined ? 0 : Number(value)
}

function dayKey(day: unknown): string {
  return new Date(Number(day) * dayMs).toISOString().slice(0, 10)
}

export function usageRepository(db: AnyDb, t: UsageTables): UsageRepository {
  const { answerUsage, usageTotals } = t
  // Whole days since the epoch: integer division on both dialects. A literal, so that the select and the group by
  // are the same expression on PostgreSQL (two parameters would be two expressions).
  const day = sql<number>`(${answerUsage.createdAt} / ${sql.raw(String(dayMs))})`
  const groupColumns: Record<UsageGroup, SQL | PgColumn> = {
    day,
    user: answerUsage.userId,
    model: answerUsage.model,
    thread: answerUsage.threadId,
  }
  const zero: UsageTotal = { tokens: 0, costMicros: 0 }

  return {
    async aggregate({ organizationId, userId, from, to, by }) {
      const groups = [...new Set(by)]
      const keys = Object.fromEntries(groups.map((group) => [group, groupColumns[group]]))
      const where = and(
        eq(answerUsage.organizationId, organizationId),
        userId === undefined ? undefined : eq(answerUsage.userId, userId),
        gte(answerUsage.createdAt, from),
        lt(answerUsage.createdAt, to),
      )
      const columns = groups.map((group) => groupColumns[group])
      const rows = (await db
        .select({
          ...keys,
          answers: sql<number>`count(*)`,
          input: sql<number>`sum(${answerUsage.inputTokens})`,
          output: sql<number>`sum(${answerUsage.outputTokens})`,
          cost: sql<number | null>`sum(${answerUsage.costMicros})`,
        })
        .from(answerUsage)
        .where(where)
        .groupBy(...columns)
        .orderBy(...columns.map((column) => asc(column)))) as Record<string, unknown>[]
      return rows
        .filter((row) => count(row.answers) > 0)
        .map(
          (row): UsageAggregate => ({
            keys: Object.fromEntries(
              groups.map((group) => [group, group === 'day' ? dayKey(row[group]) : String(row[group])]),
            ),
            answers: count(row.answers),
            input_tokens: count(row.input),
            output_tokens: count(row.output),
            cost_micros: row.cost === null || row.cost === undefined ? null : Number(row.cost),
          }),
        )
    },

    async monthTotals(organizationId, userId, period) {
      const rows = await db
        .select({ userId: usageTotals.userId, tokens: usageTotals.tokens, costMicros: usageTotals.costMicros })
        .from(usageTotals)
        .where(
          and(
            eq(usageTotals.period, period),
            eq(usageTotals.organizationId, organizationId),
            inArray(usageTotals.userId, [0, userId]),
          ),
        )
      const of = (id: number): UsageTotal => {
        const row = rows.find((candidate) => candidate.userId === id)
        return row ? { tokens: count(row.tokens), costMicros: count(row.costMicros) } : zero
      }
      return { organization: of(0), member: of(userId) }
    },

    async forAnswers(answerIds) {
      if (answerIds.length === 0) return new Map()
      const rows = await db
        .select()
        .from(answerUsage)
        .where(inArray(answerUsage.answerId, answerIds))
        .orderBy(asc(answerUsage.id))
      return new Map(
        rows.map((row) => {
          const { id: _id, ...usage } = row
          return [usage.answerId as string, usage as UsageRow]
        }),
      )
    },
  }
}
