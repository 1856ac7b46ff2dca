// Every repository over one PostgreSQL database (DATABASE_URL): the same contracts as sqliteStore, with the
// guarantees held by conditional updates and row locks instead of SQLite's single writer. Several instances may share
// the database: what they must agree on (rate-limit windows, signing keys, who runs the first run and upkeep) lives
// in it too, and nothing that a write on another instance could make stale is kept in memory.
import { sql } from 'drizzle-orm'
import { filesForModel } from '../attachments/keys'
import { pgAttachmentRepository } from '../attachments/repository.pg'
import { pgAppend, pgAuditRepository } from '../audit/repository.pg'
import * as authTables from '../auth/auth.table.pg'
import { sessionRepository } from '../auth/sessions.repository.common'
import * as sessionTables from '../auth/sessions.table.pg'
import { pgAccessTokenRepository } from '../auth/tokens.repository.pg'
import { pgUserRepository } from '../auth/users.repository.pg'
import * as connectorTables from '../connectors/connectors.table.pg'
import { mcpServerRepository } from '../connectors/repository.common'
import { anyDb, pgAudited, pgUnit } from '../db/dialect'
import { type PgDb, withAdvisoryLock } from '../db/postgres'
import { generations } from '../generation/generations.table.pg'
import { pgAnswerRelay } from '../generation/relay.pg'
import { pgGenerationRepository } from '../generation/repository.pg'
import { pgToolCallRepository } from '../generation/tool-calls.repository.pg'
import * as idempotencyTables from '../idempotency/idempotency.table.pg'
import { idempotencyRepository } from '../idempotency/repository.common'
import { modelRepository } from '../models/repository.common'
import { pgClientRepository } from '../oauth/clients.repository.pg'
import { pgGrantRepository } from '../oauth/grants.repository.pg'
import { memberQuotas } from '../quotas/quotas.table.pg'
import { quotaRepository } from '../quotas/repository.common'
import { pgRateLimitRepository } from '../shared/rate-limit.repository.pg'
import { pgServerKeyRepository } from '../shared/server-keys.repository.pg'
import { shareRepository } from '../shares/repository.common'
import { shares } from '../shares/shares.table.pg'
import { insertMessageRow, pgThreadRepository } from '../threads/repository.pg'
import { pgThreadSearch } from '../threads/search.pg'
import { threadSettings, threads } from '../threads/threads.table.pg'
import { addedToTotals, recordedUsage, usageRepository, usageValues } from '../usage/repository.common'
import * as usageTables from '../usage/usage.table.pg'
import { pgWebhookRepository } from '../webhooks/repository.pg'
import type { Store } from '.'

export function pgStore(db: PgDb): Store {
  const attachments = pgAttachmentRepository(db)
  const usageStore = usageRepository(anyDb(db), usageTables)
  // Every recorded act's repository writes its event through this, inside its own transaction.
  const audited = pgAudited(db, pgAppend)
  return {
    dialect: 'postgres',
    async ping() {
      await db.execute(sql`select 1`)
    },
    attachments,
    oauthClients: pgClientRepository(db, pgAppend),
    oauthGrants: pgGrantRepository(db, pgAppend),
    // Answers are threads' messages and name attachments' files: their features' own code, handed in.
    generations: pgGenerationRepository(db, {
      insertMessage: insertMessageRow,
      filesForModel: (ids) => filesForModel(attachments, ids),
      // Carried by the answer's last statement (generation/repository.pg.ts PgAnswerParts): the row and the totals.
      usageClauses(on) {
        const unit = anyDb(on as unknown as PgDb)
        return [
          unit.$with('recorded_usage').as(recordedUsage(unit, usageTables)),
          unit.$with('usage_added').as(addedToTotals(unit, usageTables)),
        ]
      },
      recordUsage: (_tx, row) => usageValues(row),
    }),
    idempotency: idempotencyRepository(anyDb(db), idempotencyTables),
    relay: pgAnswerRelay(db),
    threads: pgThreadRepository(db, pgAppend),
    search: pgThreadSearch(db),
    users: pgUserRepository(db, pgAppend),
    accessTokens: pgAccessTokenRepository(db, pgAppend),
    sessions: sessionRepository(anyDb(db), { ...authTables, ...sessionTables }, audited),
    // Every request reads its token from the database: a revocation on any instance applies at the next request.
    tokenCache: null,
    rateLimits: pgRateLimitRepository(db),
    serverKeys: pgServerKeyRepository(db),
    webhooks: pgWebhookRepository(db, pgAppend),
    shares: shareRepository(
      anyDb(db),
      { shares, organizations: authTables.organizations, users: authTables.users, threads },
      audited,
    ),
    models: modelRepository(
      anyDb(db),
      { organizations: authTables.organizations, threads, threadSettings, generations },
      audited,
    ),
    quotas: quotaRepository(
      anyDb(db),
      {
        organizations: authTables.organizations,
        users: authTables.users,
        memberQuotas,
        usageTotals: usageTables.usageTotals,
      },
      usageStore,
      audited,
    ),
    usage: usageStore,
    audit: pgAuditRepository(db),
    mcpServers: mcpServerRepository(anyDb(db), connectorTables, pgUnit(db), audited),
    toolCalls: pgToolCallRepository(db),
    locks: {
      async inTurn(name, task) {
        const held = await withAdvisoryLock(db, name, 'wait', task)
        if (!held.ran) throw new Error(`the ${name} lock was not taken`)
        return held.value
      },
      async ifFree(name, task) {
        return (await withAdvisoryLock(db, name, 'skip', task)).ran
      },
    },
  }
}
