// The storage seam: every feature's async repository, built once at boot for the database in use, each from its
// feature's dialect-neutral module (`*.common.ts`) and, where a method must differ, its SQLite twin; postgres.ts builds
// the same from the PostgreSQL twins. app.ts hands each feature the repositories it names; none sees a driver.
import { filesForModel } from '../attachments/keys'
import type { AttachmentRepository } from '../attachments/repository'
import { sqliteAttachmentRepository } from '../attachments/repository.sqlite'
import type { AuditRepository } from '../audit/repository'
import { sqliteAppend, sqliteAuditRepository } from '../audit/repository.sqlite'
import * as authTables from '../auth/auth.table'
import type { SessionRepository } from '../auth/sessions.repository'
import { sessionRepository } from '../auth/sessions.repository.common'
import * as sessionTables from '../auth/sessions.table'
import { type TokenCache, tokenCacheOf } from '../auth/token-cache'
import type { AccessTokenRepository } from '../auth/tokens.repository'
import { sqliteAccessTokenRepository } from '../auth/tokens.repository.sqlite'
import type { UserRepository } from '../auth/users.repository'
import { sqliteUserRepository } from '../auth/users.repository.sqlite'
import * as connectorTables from '../connectors/connectors.table'
import type { McpServerRepository } from '../connectors/repository'
import { mcpServerRepository } from '../connectors/repository.common'
import type { Db } from '../db/client'
import { anyDb, asTables, sqliteAudited, sqliteUnit } from '../db/dialect'
import type { LockName } from '../db/postgres'
import { prepared } from '../db/prepared'
import { generations as generationsTable } from '../generation/generations.table'
import type { AnswerRelay } from '../generation/relay'
import type { GenerationRepository } from '../generation/repository'
import { sqliteGenerationRepository } from '../generation/repository.sqlite'
import type { ToolCallRepository } from '../generation/tool-calls.repository'
import { sqliteToolCallRepository } from '../generation/tool-calls.repository.sqlite'
import * as idempotencyTables from '../idempotency/idempotency.table'
import type { IdempotencyRepository } from '../idempotency/repository'
import { idempotencyRepository } from '../idempotency/repository.common'
import type { ModelRepository } from '../models/repository'
import { modelRepository } from '../models/repository.common'
import type { ClientRepository } from '../oauth/clients.repository'
import { sqliteClientRepository } from '../oauth/clients.repository.sqlite'
import type { GrantRepository } from '../oauth/grants.repository'
import { sqliteGrantRepository } from '../oauth/grants.repository.sqlite'
import { memberQuotas } from '../quotas/quotas.table'
import type { QuotaRepository } from '../quotas/repository'
import { quotaRepository } from '../quotas/repository.common'
import type { RateLimitRepository } from '../shared/rate-limit.repository'
import { processKeys, type ServerKeyRepository } from '../shared/server-keys.repository'
import type { ShareRepository } from '../shares/repository'
import { shareRepository } from '../shares/repository.common'
import { shares as sharesTable } from '../shares/shares.table'
import type { ThreadRepository } from '../threads/repository'
import { insertMessageRow, sqliteThreadRepository } from '../threads/repository.sqlite'
import type { ThreadSearch } from '../threads/search'
import { fts5ThreadSearch } from '../threads/search.fts5'
import { threadSettings, threads } from '../threads/threads.table'
import type { UsageRepository } from '../usage/repository'
import { type UsageTables, usageRepository, usageValues, usageWrites } from '../usage/repository.common'
import * as usageTables from '../usage/usage.table'
import type { WebhookRepository } from '../webhooks/repository'
import { sqliteWebhookRepository } from '../webhooks/repository.sqlite'

/**
 * Work that must not run on two instances at once, on one database. On PostgreSQL each name is an advisory lock; on
 * SQLite one process uses the file (db/instance-lock.ts), so tasks just run.
 */
export interface InstanceLocks {
  /** Runs `task` once no other instance is running one under `name` (the first run: one owner, whoever starts). */
  inTurn<T>(name: LockName, task: () => Promise<T>): Promise<T>
  /** Runs `task` unless another instance is running one under `name` right now (upkeep); whether it ran. */
  ifFree(name: LockName, task: () => Promise<void>): Promise<boolean>
}

/** Locks for a database only this process uses. */
const processLocks: InstanceLocks = {
  inTurn: (_name, task) => task(),
  async ifFree(_name, task) {
    await task()
    return true
  },
}

export interface Store {
  readonly dialect: 'sqlite' | 'postgres'
  /** One cheap round trip to the database, for /healthz and /readyz: throws when it cannot answer. */
  ping(): Promise<void>
  attachments: AttachmentRepository
  oauthClients: ClientRepository
  oauthGrants: GrantRepository
  generations: GenerationRepository
  /** Idempotency keys and the responses they replay (idempotency/service.ts). */
  idempotency: IdempotencyRepository
  /** How instances sharing the database hear of each other's answers; null where one process holds it (SQLite). */
  relay: AnswerRelay | null
  threads: ThreadRepository
  search: ThreadSearch
  users: UserRepository
  accessTokens: AccessTokenRepository
  sessions: SessionRepository
  /**
   * Bearer tokens this process resolved a moment ago, on SQLite. The store holds it because the store knows when the
   * database changes: the repositories forget it on every write that changes what a token resolves to. Null on
   * PostgreSQL, where another instance's writes could not empty it (auth/token-cache.ts).
   */
  tokenCache: TokenCache | null
  /** Rate-limit windows every instance counts in (shared/rate-limit.ts); null on SQLite, which counts in memory. */
  rateLimits: RateLimitRepository | null
  /** The keys the server signs with, the same on every instance. */
  serverKeys: ServerKeyRepository
  /** Webhook endpoints, the delivery queue and its attempts. */
  webhooks: WebhookRepository
  /** Share links and each organization's choice to allow them. */
  shares: ShareRepository
  /** Organizations' choice of models, threads' own settings, and what an answer's model is resolved from. */
  models: ModelRepository
  /** Monthly budgets and the month's totals they are checked against (src/quotas/). */
  quotas: QuotaRepository
  /** What answers used: the rows the generation repository's `finish` writes, their sums and monthly totals. */
  usage: UsageRepository
  /**
   * The audit log (src/audit/): its reads, retention, and appending alone for acts that write nothing else. Acts that
   * write append through their own repositories, which the store builds with the log's appender.
   */
  audit: AuditRepository
  /** The MCP servers organizations connect, their tools and OAuth state (src/connectors/). */
  mcpServers: McpServerRepository
  /** What the tools did in answers: rounds of calls and each call (generation/tool-calls.repository.ts). */
  toolCalls: ToolCallRepository
  locks: InstanceLocks
}

/** Every repository over one open SQLite database. */
export function sqliteStore(db: Db): Store {
  const attachments = sqliteAttachmentRepository(db)
  // Every recorded act's repository writes its event through this, inside its own transaction.
  const audited = sqliteAudited(db, sqliteAppend)
  const usage = asTables<UsageTables>(usageTables)
  const usageStore = usageRepository(anyDb(db), usage)
  return {
    dialect: 'sqlite',
    async ping() {
      db.$client.query('select 1').get()
    },
    attachments,
    oauthClients: sqliteClientRepository(db, sqliteAppend),
    oauthGrants: sqliteGrantRepository(db, sqliteAppend),
    // Answers are threads' messages and name attachments' files: their features' own code, handed in.
    generations: sqliteGenerationRepository(db, {
      insertMessage: insertMessageRow,
      filesForModel: (ids) => filesForModel(attachments, ids),
      // Prepared on `db` once: inside the answer's transaction they run on its connection (db/prepared.ts).
      recordUsage: (_unit, row) => {
        const values = usageValues(row)
        const writes = prepared(db, 'usage:writes', () =>
          usageWrites(anyDb(db), usage).map((write, index) => write.prepare(`usage_write_${index}`)),
        )
        for (const write of writes) (write as unknown as { run(values: object): void }).run(values)
      },
    }),
    idempotency: idempotencyRepository(anyDb(db), asTables(idempotencyTables)),
    relay: null,
    threads: sqliteThreadRepository(db, sqliteAppend),
    search: fts5ThreadSearch(db),
    users: sqliteUserRepository(db, sqliteAppend),
    accessTokens: sqliteAccessTokenRepository(db, sqliteAppend),
    sessions: sessionRepository(anyDb(db), asTables({ ...authTables, ...sessionTables }), audited),
    tokenCache: tokenCacheOf(db),
    rateLimits: null,
    serverKeys: processKeys(),
    webhooks: sqliteWebhookRepository(db, sqliteAppend),
    shares: shareRepository(
      anyDb(db),
      asTables({ shares: sharesTable, organizations: authTables.organizations, users: authTables.users, threads }),
      audited,
    ),
    models: modelRepository(
      anyDb(db),
      asTables({ organizations: authTables.organizations, threads, threadSettings, generations: generationsTable }),
      audited,
    ),
    quotas: quotaRepository(
      anyDb(db),
      asTables({
        organizations: authTables.organizations,
        users: authTables.users,
        memberQuotas,
        usageTotals: usageTables.usageTotals,
      }),
      usageStore,
      audited,
    ),
    usage: usageStore,
    audit: sqliteAuditRepository(db),
    mcpServers: mcpServerRepository(anyDb(db), asTables(connectorTables), sqliteUnit(db), audited),
    toolCalls: sqliteToolCallRepository(db),
    locks: processLocks,
  }
}
