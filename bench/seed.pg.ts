// Loads the benchmark's SQLite seed (seed.ts) into an empty PostgreSQL database migrated by the app's own
// migrations, so both backends are measured over the same rows and the same tokens. Rows go in with COPY (a
// million messages in well under a minute, where row-at-a-time inserts take many), and the search documents are
// then built by the app's own indexer (flushPgSearchIndex), as a running server would build them.
import { Database } from 'bun:sqlite'
import { migratePostgres, openPostgres } from '../src/db/postgres'
import { flushPgSearchIndex } from '../src/threads/search.pg'

/** Parents before children; the tables the benchmark's seed fills. */
const tables = ['organizations', 'users', 'personal_access_tokens', 'threads', 'messages', 'generations']
/** Rows per COPY chunk handed to the stream. */
const chunkRows = 5000

/** A value in COPY's text format: `\N` for null, and the four characters that format gives meaning escaped. */
function copyValue(value: unknown): string {
  if (value === null || value === undefined) return '\\N'
  return String(value).replaceAll('\\', '\\\\').replaceAll('\t', '\\t').replaceAll('\n', '\\n').replaceAll('\r', '\\r')
}

export interface PgSeedTimes {
  copySeconds: number
  indexSeconds: number
  vacuumSeconds: number
}

export async function seedPostgres(sqlitePath: string, url: string): Promise<PgSeedTimes> {
  const db = openPostgres(url, { max: 4 })
  const client = db.$client
  await migratePostgres(db)
  const sqlite = new Database(sqlitePath, { readonly: true })
  const started = performance.now()
  // One connection for the whole load: `session_replication_role = replica` (the cluster's superuser may set it)
  // turns off the triggers and foreign-key checks, so every row keeps the update sequence SQLite gave it instead
  // of taking a turn on the one-row clock, and the clock and the search queue are set once at the end.
  const connection = await client.reserve()
  try {
    await connection`set session_replication_role = replica`
    for (const table of tables) {
      // The columns both dialects have: PostgreSQL's own (the generation leases of several instances) keep their
      // defaults, as in a copy of a stopped installation.
      const inSqlite = new Set(
        sqlite
          .query<{ name: string }, []>(`pragma table_info(${table})`)
          .all()
          .map((row) => row.name),
      )
      const columns = (
        await connection<{ name: string }[]>`select column_name as name from information_schema.columns
          where table_schema = 'public' and table_name = ${table} order by ordinal_position`
      )
        .map((row) => row.name)
        .filter((name) => inSqlite.has(name))
      const writer = connection
        .unsafe(`copy ${table} (${columns.join(', ')}) from stdin`)
        .writable()
        .getWriter()
      const rows = sqlite.query<Record<string, unknown>, []>(
        `select ${columns.join(', ')} from ${table} order by rowid`,
      )
      let chunk: string[] = []
      for (const row of rows.iterate()) {
        // Bun's SQLite rows are objects: their values come in the selected columns' order.
        chunk.push(Object.values(row).map(copyValue).join('\t'))
        if (chunk.length === chunkRows) {
          await writer.write(`${chunk.join('\n')}\n`)
          chunk = []
        }
      }
      if (chunk.length > 0) await writer.write(`${chunk.join('\n')}\n`)
      await writer.close()
      // Identity columns were given explicit values: the next generated one must follow them.
      for (const identity of await connection<{ name: string }[]>`select column_name as name
          from information_schema.columns where table_schema = 'public' and table_name = ${table}
            and is_identity = 'YES'`) {
        await connection.unsafe(
          `select setval(pg_get_serial_sequence('${table}', '${identity.name}'),
             (select coalesce(max(${identity.name}), 0) + 1 from ${table}), false)`,
        )
      }
    }
    await connection`set session_replication_role = origin`
    // What the triggers would have left: the clock at the last update, every thread queued for its document.
    await connection`update thread_update_clock set update_seq = (select coalesce(max(update_seq), 0) from threads),
      updated_at = (select coalesce(max(updated_at), 0) from threads) where id = 1`
    await connection`insert into search_pending (thread_seq) select seq from threads on conflict do nothing`
  } finally {
    connection.release()
  }
  sqlite.close()
  const copied = performance.now()
  // Two indexers at once (each claims its batch with SKIP LOCKED), so the server's work and this process's word
  // splitting overlap.
  const indexer = async () => {
    while ((await flushPgSearchIndex(db, 256)) > 0) {}
  }
  await Promise.all([indexer(), indexer()])
  const indexed = performance.now()
  // Fresh statistics, visibility maps and no GIN pending list: a server that ran for a while would have these.
  await client.unsafe('vacuum analyze')
  await client.close()
  return {
    copySeconds: (copied - started) / 1000,
    indexSeconds: (indexed - copied) / 1000,
    vacuumSeconds: (performance.now() - indexed) / 1000,
  }
}
