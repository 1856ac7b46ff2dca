// The models feature's storage on either database (repository.ts): every method is one statement, the same on both
// dialects (db/dialect.ts). The columns are other features' (organizations: auth; thread_settings, threads: threads;
// generations: generation), which the composition hands in.
import { and, eq, sql } from 'drizzle-orm'
import type { organizations } from '../auth/auth.table.pg'
import type { AnyDb, Audited } from '../db/dialect'
import type { generations } from '../generation/generations.table.pg'
import type { threadSettings, threads } from '../threads/threads.table.pg'
import { allowedFromColumn, allowedToColumn, type ModelRepository } from './repository'

/** The tables the models feature reads and writes: either dialect's (db/dialect.ts). */
export interface ModelTables {
  organizations: typeof organizations
  threads: typeof threads
  threadSettings: typeof threadSettings
  generations: typeof generations
}

export function modelRepository(
  db: AnyDb,
  { organizations, threads, threadSettings, generations }: ModelTables,
  audited: Audited,
): ModelRepository {
  const settingsColumns = {
    model: threadSettings.model,
    instructions: threadSettings.instructions,
    tools: threadSettings.tools,
  }
  const settingsOf = (row: { model: string | null; instructions: string | null; tools: string | null }) => ({
    ...row,
    tools: allowedFromColumn(row.tools),
  })
  return {
    async choice(organizationId) {
      const [row] = await db
        .select({ allowed: organizations.allowedModels, defaultModel: organizations.defaultModel })
        .from(organizations)
        .where(eq(organizations.id, organizationId))
      return { allowed: allowedFromColumn(row?.allowed ?? null), defaultModel: row?.defaultModel ?? null }
    },

    async setChoice(organizationId, choice, audit) {
      await audited(
        (tx) => [
          tx
            .update(organizations)
            .set({ allowedModels: allowedToColumn(choice.allowed), defaultModel: choice.defaultModel })
            .where(eq(organizations.id, organizationId))
            .returning({ id: organizations.id }),
        ],
        (rows) => (rows.length > 0 ? audit : null),
      )
    },

    async threadSettings(threadId) {
      const [row] = await db.select(settingsColumns).from(threadSettings).where(eq(threadSettings.threadId, threadId))
      return row ? settingsOf(row) : { model: null, instructions: null, tools: null }
    },

    async saveThreadSettings(threadId, patch) {
      const set: Partial<{ model: string | null; instructions: string | null; tools: string | null }> = {}
      if (patch.model !== undefined) set.model = patch.model
      if (patch.instructions !== undefined) set.instructions = patch.instructions
      if (patch.tools !== undefined) set.tools = allowedToColumn(patch.tools)
      try {
        const [row] = await db
          .insert(threadSettings)
          .values({
            threadId,
            model: patch.model ?? null,
            instructions: patch.instructions ?? null,
            tools: allowedToColumn(patch.tools ?? null),
          })
          .onConflictDoUpdate({
            target: threadSettings.threadId,
            // An empty patch still rewrites the row with itself, so the statement returns it.
            set: Object.keys(set).length > 0 ? set : { threadId: sql`${threadSettings.threadId}` },
          })
          .returning(settingsColumns)
        return row ? settingsOf(row) : null
      } catch (error) {
        // The thread's foreign key: deleted since the caller read it. Anything else is a failure.
        const [thread] = await db.select({ id: threads.id }).from(threads).where(eq(threads.id, threadId))
        if (thread) throw error
        return null
      }
    },

    async answerSettings(threadId, messageId) {
      const [row] = await db
        .select({
          organizationId: threads.organizationId,
          requested: generations.model,
          threadModel: threadSettings.model,
          instructions: threadSettings.instructions,
          allowed: organizations.allowedModels,
          defaultModel: organizations.defaultModel,
        })
        .from(threads)
        .innerJoin(organizations, eq(organizations.id, threads.organizationId))
        .leftJoin(threadSettings, eq(threadSettings.threadId, threads.id))
        .leftJoin(generations, and(eq(generations.messageId, messageId), eq(generations.threadId, threads.id)))
        .where(eq(threads.id, threadId))
      if (!row) return null
      return {
        organizationId: row.organizationId,
        requested: row.requested,
        threadModel: row.threadModel,
        instructions: row.instructions,
        choice: { allowed: allowedFromColumn(row.allowed), defaultModel: row.defaultModel },
      }
    },
  }
}
