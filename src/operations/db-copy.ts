// Moving an installation from SQLite to PostgreSQL: `bun run cli db:copy`. It copies a stopped SQLite installation
// (DATABASE_PATH and the files in UPLOADS_DIR) into an empty PostgreSQL database and the configured blob store, so
// that nothing is lost: every ID, timestamp and hash (passwords, tokens, sessions, OAuth clients and grants) is the
// same, so every password, token and session keeps working.
//
// The order is chosen so that a failure leaves nothing half-done. The source is claimed first (nothing else may
// have it open) and read from one snapshot. The files go first: a file without a row is harmless (the server's
// sweep removes it) and putting it again overwrites it, while a row without its file is a broken attachment. The
// rows then go in one PostgreSQL transaction, table by table in dependency order, in batches, and are counted
// inside it before it commits: a failure or a wrong count rolls everything back. Last, the search documents are
// built by the same code the server runs; should that stop, the threads stay queued and the server builds them.
import { existsSync } from 'node:fs'
import { stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { and, count, eq, getTableColumns, getTableName, gt, max, or, type SQL, sql } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import type { SQLiteColumn, SQLiteTable } from 'drizzle-orm/sqlite-core'
import * as liteAttachments from '../attachments/attachments.table'
import * as pgAttachments from '../attachments/attachments.table.pg'
import { attachmentIdOf, originalKey, resizedKey } from '../attachments/keys'
import * as liteAudit from '../audit/audit.table'
import * as pgAudit from '../audit/audit.table.pg'
import * as liteAuth from '../auth/auth.table'
import * as pgAuth from '../auth/auth.table.pg'
import * as liteSessions from '../auth/sessions.table'
import * as pgSessions from '../auth/sessions.table.pg'
import * as liteConnectors from '../connectors/connectors.table'
import * as pgConnectors from '../connectors/connectors.table.pg'
import { type Db, migrateDatabase, openDatabase } from '../db/client'
import { migratePostgres, openPostgres, type PgDb } from '../db/postgres'
import * as liteGenerations from '../generation/generations.table'
import * as pgGenerations from '../generation/generations.table.pg'
import * as liteToolCalls from '../generation/tool-calls.table'
import * as pgToolCalls from '../generation/tool-calls.table.pg'
import * as liteIdempotency from '../idempotency/idempotency.table'
import * as pgIdempotency from '../idempotency/idempotency.table.pg'
import * as liteOauth from '../oauth/oauth.table'
import * as pgOauth from '../oauth/oauth.table.pg'
import * as liteQuotas from '../quotas/quotas.table'
import * as pgQuotas from '../quotas/quotas.table.pg'
import * as liteShares from '../shares/shares.table'
import * as pgShares from '../shares/shares.table.pg'
import type { BlobStore } from '../storage/blobs'
import { LocalBlobStore } from '../storage/blobs'
import { describePostgres } from '../store/open'
import { flushPgSearchIndex } from '../threads/search.pg'
import * as liteThreads from '../threads/threads.table'
import * as pgThreads from '../threads/threads.table.pg'
import * as liteUsage from '../usage/usage.table'
import * as pgUsage from '../usage/usage.table.pg'
import * as liteWebhooks from '../webhooks/webhooks.table'
import * as pgWebhooks from '../webhooks/webhooks.table.pg'
import { claimDatabase } from './claim'
import { OperationError } from './errors'
import { requireKnownSchema } from './migrations'
import { eachInTurn, fromStore, storeName } from './store-files'

/** Each side's tables, by the names the SQLite and PostgreSQL table files of every feature share. */
const lite = {
  ...liteAttachments,
  ...liteAudit,
  ...liteAuth,
  ...liteSessions,
  ...liteConnectors,
  ...liteGenerations,
  ...liteToolCalls,
  ...liteIdempotency,
  ...liteOauth,
  ...liteQuotas,
  ...liteShares,
  ...liteThreads,
  ...liteUsage,
  ...liteWebhooks,
}
const pg = {
  ...pgAttachments,
  ...pgAudit,
  ...pgAuth,
  ...pgSessions,
  ...pgConnectors,
  ...pgGenerations,
  ...pgToolCalls,
  ...pgIdempotency,
  ...pgOauth,
  ...pgQuotas,
  ...pgShares,
  ...pgThreads,
  ...pgUsage,
  ...pgWebhooks,
}

/** What a store failing while files are copied leaves: the rows come after the files. */
const nothingCopied = '; no row was copied'

/** One table's copy: the same columns under the same keys on both sides (the `*.table.pg.ts` twins). */
export interface CopiedTable {
  from: SQLiteTable
  to: PgTable
  /** Keys of a unique order over the rows: batches are read in it, and written in it. */
  order: string[]
  /** The identity column whose sequence must continue after the copied values, as SQLite's AUTOINCREMENT does. */
  identity?: 'id' | 'seq'
  /** Columns only the PostgreSQL table has (for several instances sharing it): empty in a copy. */
  targetOnly?: string[]
}

/**
 * Every table that holds data, parents before children. The search tables are not copied: their documents and
 * vocabulary (search_terms) are derived from threads, messages and files' text, and built again on PostgreSQL.
 */
export const copiedTables: CopiedTable[] = [
  { from: lite.organizations, to: pg.organizations, order: ['id'], identity: 'id' },
  { from: lite.users, to: pg.users, order: ['id'], identity: 'id' },
  { from: lite.personalAccessTokens, to: pg.personalAccessTokens, order: ['id'], identity: 'id' },
  { from: lite.sessions, to: pg.sessions, order: ['id'], identity: 'id' },
  { from: lite.oauthClients, to: pg.oauthClients, order: ['id'], identity: 'id' },
  { from: lite.oauthRegistrationTokens, to: pg.oauthRegistrationTokens, order: ['id'], identity: 'id' },
  { from: lite.oauthGrants, to: pg.oauthGrants, order: ['id'], identity: 'id' },
  { from: lite.oauthAuthorizationCodes, to: pg.oauthAuthorizationCodes, order: ['id'], identity: 'id' },
  { from: lite.oauthAccessTokens, to: pg.oauthAccessTokens, order: ['id'], identity: 'id' },
  { from: lite.oauthRefreshTokens, to: pg.oauthRefreshTokens, order: ['id'], identity: 'id' },
  // In update order: PostgreSQL's trigger numbers threads as they arrive (see insertThreads).
  { from: lite.threads, to: pg.threads, order: ['updateSeq'], identity: 'seq' },
  { from: lite.messages, to: pg.messages, order: ['seq'], identity: 'seq' },
  { from: lite.feedback, to: pg.feedback, order: ['messageId', 'userId'] },
  { from: lite.threadSettings, to: pg.threadSettings, order: ['threadId'] },
  // A copy is made of a stopped installation: no answer holds a lease.
  {
    from: lite.generations,
    to: pg.generations,
    order: ['messageId'],
    targetOnly: ['leaseId', 'leasedBy', 'leaseExpiresAt'],
  },
  { from: lite.attachments, to: pg.attachments, order: ['id'] },
  // Files' text for search goes too, read or still queued: reading it again (PDFs) would cost the server hours.
  { from: lite.attachmentTexts, to: pg.attachmentTexts, order: ['attachmentId'] },
  { from: lite.webhookEndpoints, to: pg.webhookEndpoints, order: ['id'] },
  { from: lite.webhookDeliveries, to: pg.webhookDeliveries, order: ['id'] },
  { from: lite.webhookAttempts, to: pg.webhookAttempts, order: ['id'], identity: 'id' },
  { from: lite.shares, to: pg.shares, order: ['id'] },
  { from: lite.memberQuotas, to: pg.memberQuotas, order: ['userId'] },
  // Usage outlives threads: its rows name them but hang on nothing.
  { from: lite.answerUsage, to: pg.answerUsage, order: ['id'], identity: 'id' },
  { from: lite.usageTotals, to: pg.usageTotals, order: ['period', 'organizationId', 'userId'] },
  // Stored responses keep answering repeats after the move, for the rest of their day.
  { from: lite.idempotencyKeys, to: pg.idempotencyKeys, order: ['userId', 'key'] },
  // Sealed secrets go as they are: the server on PostgreSQL opens them with the same SECRETS_KEY. Authorizations
  // under way in a browser (mcp_oauth_flows) last ten minutes and are not copied: the admin starts again.
  { from: lite.mcpServers, to: pg.mcpServers, order: ['id'] },
  { from: lite.mcpServerTools, to: pg.mcpServerTools, order: ['serverId', 'name'] },
  { from: lite.mcpServerOauth, to: pg.mcpServerOauth, order: ['serverId'] },
  { from: lite.toolRounds, to: pg.toolRounds, order: ['chainId', 'round'] },
  { from: lite.toolCalls, to: pg.toolCalls, order: ['id'] },
  // The audit log goes as it is, IDs and hashes included, so its chains verify the same on PostgreSQL.
  { from: lite.auditChains, to: pg.auditChains, order: ['organizationId'] },
  { from: lite.auditEvents, to: pg.auditEvents, order: ['organizationId', 'seq'] },
]

/**
 * Rows per INSERT: few enough to stay below PostgreSQL's 65,535 parameters (the widest table, tool_calls, has 23
 * columns) and to keep a batch of long messages small in memory, many enough that round trips do not dominate (500
 * took a quarter longer at 100k messages; see bench/db-copy.ts).
 */
const rowsPerBatch = 1000
/**
 * Search documents are built by this many flushes at once, each claiming its own threads (as several servers'
 * indexers do): a flush waits on PostgreSQL most of its time, and three at once took half as long as one.
 */
const indexers = 3
/** Threads one indexing flush claims at a time. */
const threadsPerFlush = 64

export interface CopySource {
  databasePath: string
  uploadsDir: string
}

export interface CopyTarget {
  /** The PostgreSQL URL; it may hold a password, which no message repeats. */
  url: string
  /** Where the files go: a bucket, or the uploads folder itself (then they stay where they are). */
  blobs: BlobStore
}

export interface CopyResult {
  database: { host: string; database: string }
  /** Rows per table, counted in PostgreSQL before the commit and equal to the SQLite database's. */
  tables: { name: string; rows: number }[]
  files: {
    /** Attachment files the target store holds now, checked one by one. */
    total: number
    /** Of those, the ones put there by this copy (none when the target is the uploads folder itself). */
    copied: number
    bytes: number
  }
  /** Threads whose search document was built. */
  indexed: number
}

/**
 * Copies the SQLite installation `source` into the empty PostgreSQL database and blob store `target`. Refuses, with
 * one line and before writing anything, while anything else has the SQLite database open, when the PostgreSQL
 * database holds rows already, and when an attachment's file is nowhere to be found.
 */
export async function copyToPostgres(source: CopySource, target: CopyTarget): Promise<CopyResult> {
  try {
    return await copy(source, target)
  } catch (error) {
    throw withoutPassword(error, target.url)
  }
}

/** The error with every spelling of the URL's password taken out of its message. */
function withoutPassword(error: unknown, url: string): unknown {
  if (!(error instanceof Error) || !URL.canParse(url)) return error
  const password = new URL(url).password
  for (const spelling of new Set([password, safeDecode(password)])) {
    if (spelling) error.message = error.message.replaceAll(spelling, '***')
  }
  return error
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

async function copy(from: CopySource, target: CopyTarget): Promise<CopyResult> {
  const { databasePath, uploadsDir } = from
  if (databasePath === ':memory:' || !existsSync(databasePath)) {
    throw new OperationError(`There is no database at ${databasePath}: DATABASE_PATH names the one to copy`)
  }
  const release = claimDatabase(databasePath)
  try {
    const source = openDatabase(databasePath, { mustExist: true })
    try {
      requireKnownSchema(source.$client, databasePath)
      // The rows are read with this version's tables: an older database is brought up to date first, as a start would.
      migrateDatabase(source)
      const description = describePostgres(target.url)
      const db = await openTarget(target.url, description)
      try {
        // One snapshot for every read, although nothing else can write while the claim is held.
        source.$client.run('BEGIN')
        try {
          return await copyInto(source, db, target.blobs, uploadsDir, description)
        } finally {
          source.$client.run('COMMIT')
        }
      } finally {
        await db.$client.close()
      }
    } finally {
      source.$client.close()
    }
  } finally {
    release()
  }
}

/** Connects to PostgreSQL and applies its migrations; a failure is one line naming the host, never the password. */
async function openTarget(url: string, where: { host: string; database: string }): Promise<PgDb> {
  // One connection for the copy's transaction; after it, one for each indexer.
  const db = openPostgres(url, { max: indexers, connectionTimeout: 10 })
  try {
    await migratePostgres(db)
    return db
  } catch (error) {
    await db.$client.close().catch(() => {})
    const reason = error instanceof Error ? error.message : String(error)
    throw new OperationError(`Cannot use the PostgreSQL database ${where.database} at ${where.host}: ${reason}`)
  }
}

async function copyInto(
  source: Db,
  db: PgDb,
  blobs: BlobStore,
  uploadsDir: string,
  where: { host: string; database: string },
): Promise<CopyResult> {
  // Checked before any file is put, and again under the transaction's locks.
  await refuseUnlessEmpty(db, where)
  const files = await copyFiles(source, uploadsDir, blobs)
  let tables: CopyResult['tables'] = []
  try {
    tables = await db.transaction(async (tx) => {
      // Whatever else connects waits for the copy to commit: a server started on the database too early cannot
      // create its first organization beside the copied ones.
      const names = sql.join(
        copiedTables.map((table) => table.to),
        sql`, `,
      )
      await tx.execute(sql`lock table ${names} in exclusive mode`)
      await refuseUnlessEmpty(tx, where)
      for (const table of copiedTables) await copyTable(source, tx, table)
      await continueSequences(source, tx)
      return verifyCounts(source, tx)
    })
  } catch (error) {
    if (error instanceof OperationError) throw error
    const reason = error instanceof Error ? error.message : String(error)
    throw new OperationError(`The copy into PostgreSQL failed and nothing was committed: ${reason}`)
  }
  // Every copied thread was queued for the search index by the insert trigger; a search would build the documents
  // on first use, and the server's indexer in the background, but a moved installation should search at once.
  const indexed = await buildSearchIndex(db)
  return { database: where, tables, files, indexed }
}

/** Empties the search queue with the server's own flush, `indexers` at once; returns the documents built. */
export async function buildSearchIndex(db: PgDb): Promise<number> {
  let built = 0
  await Promise.all(
    Array.from({ length: indexers }, async () => {
      for (;;) {
        const done = await flushPgSearchIndex(db, threadsPerFlush)
        if (done === 0) return
        built += done
      }
    }),
  )
  // Whatever the others held when one stopped: the full flush waits for claimed threads instead of skipping them.
  return built + (await flushPgSearchIndex(db))
}

type Target = Pick<PgDb, 'select' | 'insert' | 'update' | 'execute'>

/** Refuses a database that holds any row in a copied table, naming those tables. */
async function refuseUnlessEmpty(db: Target, where: { host: string; database: string }): Promise<void> {
  const held: string[] = []
  for (const table of copiedTables) {
    const rows = await db.select({ one: sql`1` }).from(table.to).limit(1)
    if (rows.length > 0) held.push(getTableName(table.to))
  }
  if (held.length > 0) {
    throw new OperationError(
      `The PostgreSQL database ${where.database} at ${where.host} is not empty (it has rows in ${held.join(', ')}); ` +
        'db:copy copies only into an empty database',
    )
  }
}

/** The source's rows in the table's order, a batch at a time (keyset: each batch starts after the last row read). */
function* batchesOf(source: Db, table: CopiedTable): Generator<Record<string, unknown>[]> {
  const columns = getTableColumns(table.from) as Record<string, SQLiteColumn>
  const order = table.order.map((key) => columns[key] as SQLiteColumn)
  let last: unknown[] | undefined
  for (;;) {
    const rows = source
      .select()
      .from(table.from)
      .where(last && after(order, last))
      .orderBy(...order)
      .limit(rowsPerBatch)
      .all() as Record<string, unknown>[]
    if (rows.length > 0) yield rows
    const end = rows.at(-1)
    if (rows.length < rowsPerBatch || !end) return
    last = table.order.map((key) => end[key])
  }
}

/** Rows after `values` in the order of `columns`: (a > x) or (a = x and (b > y)). */
function after(columns: SQLiteColumn[], values: unknown[]): SQL | undefined {
  const [first, ...rest] = columns
  if (!first) return undefined
  const tail = after(rest, values.slice(1))
  return tail ? or(gt(first, values[0]), and(eq(first, values[0]), tail)) : gt(first, values[0])
}

async function copyTable(source: Db, tx: Target, table: CopiedTable): Promise<void> {
  if (table.to === pg.threads) {
    await insertThreads(source, tx)
    return
  }
  for (const rows of batchesOf(source, table)) await tx.insert(table.to).values(rows as never)
}

/**
 * Threads go through the trigger that orders every write of `updated_at` (db/migrations/postgres/0001): it gives
 * each inserted thread the next update sequence from the one-row clock and never lets `updated_at` fall below the
 * clock's. Inserted in SQLite's update order into a clock set back to zero, they keep that order (the sequence
 * itself is internal: cursors name thread IDs), SQLite's `updated_at`, which never decreases along that order
 * either, and leave the clock at the last of both, where later writes continue. Each insert's `updated_at` is
 * checked all the same: a thread whose time the trigger moved fails the copy.
 */
async function insertThreads(source: Db, tx: Target): Promise<void> {
  await tx.update(pg.threadUpdateClock).set({ updateSeq: 0, updatedAt: 0 }).where(eq(pg.threadUpdateClock.id, 1))
  const table = copiedTables.find((candidate) => candidate.to === pg.threads) as CopiedTable
  for (const rows of batchesOf(source, table)) {
    const written = await tx
      .insert(pg.threads)
      .values(rows as never)
      .returning({ id: pg.threads.id, updatedAt: pg.threads.updatedAt })
    const stored = new Map(written.map((row) => [row.id, row.updatedAt]))
    for (const row of rows) {
      if (stored.get(row.id as string) !== row.updatedAt) {
        throw new OperationError(
          `thread ${row.id} would change its updated_at from ${row.updatedAt} to ${stored.get(row.id as string)}; ` +
            'nothing was committed',
        )
      }
    }
  }
  // The change feed's event IDs are places in the update order, which the copy renumbers, and its tombstones are not
  // copied: the horizon at the clock's new place sends a feed resuming from any earlier ID a `reset` (reload).
  await tx
    .update(pg.threadFeedHorizon)
    .set({ updateSeq: sql`(select ${pg.threadUpdateClock.updateSeq} from ${pg.threadUpdateClock} where id = 1)` })
    .where(eq(pg.threadFeedHorizon.id, 1))
}

/**
 * Moves each identity sequence past the copied IDs and past every ID SQLite ever handed out (its AUTOINCREMENT
 * never reuses the ID of a deleted row), so new rows never take an old row's ID.
 */
async function continueSequences(source: Db, tx: Target): Promise<void> {
  // Raw SQL: sqlite_sequence is SQLite's own table, outside the schema.
  const handedOut = new Map(
    (source.$client.query('select name, seq from sqlite_sequence').all() as { name: string; seq: number }[]).map(
      (row) => [row.name, Number(row.seq)],
    ),
  )
  for (const table of copiedTables) {
    if (!table.identity) continue
    const name = getTableName(table.from)
    const column = (getTableColumns(table.from) as Record<string, SQLiteColumn>)[table.identity] as SQLiteColumn
    const highest =
      source
        .select({ value: max(column) })
        .from(table.from)
        .get()?.value ?? 0
    const next = Math.max(Number(highest), handedOut.get(name) ?? 0)
    if (next > 0) await tx.execute(sql`select setval(pg_get_serial_sequence(${name}, ${table.identity}), ${next})`)
  }
}

/** Counts every table on both sides inside the transaction: a difference rolls the copy back. */
async function verifyCounts(source: Db, tx: Target): Promise<CopyResult['tables']> {
  const tables: CopyResult['tables'] = []
  const differences: string[] = []
  for (const table of copiedTables) {
    const name = getTableName(table.from)
    const expected = source.select({ n: count() }).from(table.from).get()?.n ?? 0
    const [row] = await tx.select({ n: count() }).from(table.to)
    const found = Number(row?.n ?? 0)
    if (found !== expected) differences.push(`${name} has ${found} rows instead of ${expected}`)
    tables.push({ name, rows: found })
  }
  if (differences.length > 0) {
    throw new OperationError(
      `The copy does not match the SQLite database (${differences.join('; ')}); nothing was committed`,
    )
  }
  return tables
}

/**
 * Puts every file in the uploads folder that belongs to an attachment into the target store, and checks that each
 * attachment's required files (the original, and its scaled copy) are there with the right size. When the target
 * is the uploads folder itself, the files stay where they are and are only checked. A required file missing from
 * the folder but already in the bucket (an installation that kept its files there) is left as it is.
 */
async function copyFiles(source: Db, uploadsDir: string, blobs: BlobStore): Promise<CopyResult['files']> {
  const folder = new LocalBlobStore(uploadsDir)
  const where = blobs.description
  const inPlace = where.kind === 'local' && where.path === resolve(uploadsDir)
  const attachments = source
    .select({ id: lite.attachments.id, resized: lite.attachments.resized })
    .from(lite.attachments)
    .all()
  const ids = new Set(attachments.map((attachment) => attachment.id))
  const local = new Set<string>()
  for await (const key of folder.keys()) {
    const id = attachmentIdOf(key)
    if (id !== null && ids.has(id)) local.add(key)
  }
  const required = attachments.flatMap(({ id, resized }) =>
    resized ? [originalKey(id), resizedKey(id)] : [originalKey(id)],
  )
  const elsewhere = required.filter((key) => !local.has(key))
  const sizes = new Map<string, number>()
  const missing: string[] = []
  await eachInTurn(elsewhere, async (key) => {
    const stored = inPlace ? null : await fromStore(blobs, `read ${key}`, () => blobs.get(key), nothingCopied)
    if (stored) sizes.set(key, stored.size)
    else missing.push(key)
  })
  if (missing.length > 0) {
    missing.sort()
    throw new OperationError(
      `${missing.length} attachment file${missing.length === 1 ? ' is' : 's are'} in neither UPLOADS_DIR ` +
        `${resolve(uploadsDir)} nor ${storeName(where)} (${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', …' : ''}); ` +
        'nothing was copied',
    )
  }
  let copied = 0
  await eachInTurn([...local], async (key) => {
    const path = join(uploadsDir, key)
    const size = (await stat(path)).size
    if (!inPlace) {
      await fromStore(blobs, `put ${key}`, () => blobs.put(key, Bun.file(path)), nothingCopied)
      const stored = await fromStore(blobs, `read ${key}`, () => blobs.get(key), nothingCopied)
      if (stored?.size !== size) {
        throw new OperationError(
          `${storeName(where)} holds ${stored?.size ?? 'no'} bytes under ${key} after the copy instead of ${size}`,
        )
      }
      copied += 1
    }
    sizes.set(key, size)
  })
  let bytes = 0
  for (const size of sizes.values()) bytes += size
  return { total: sizes.size, copied, bytes }
}
