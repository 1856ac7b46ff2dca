// Upgrading a database with data: 0005_update_order.sql numbers existing threads in updated_at order and
// indexes every thread's name and active messages, so search and the update order work at once; 0007 rebuilds
// that index without word positions; 0018 (PostgreSQL: 0013) queues every attached file for search; 0020 (PostgreSQL:
// 0015) empties the index for search-text.ts's tokens and queues every thread for a rebuild.
import { Database } from 'bun:sqlite'
import { expect, test } from 'bun:test'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { drizzle as pgDrizzle } from 'drizzle-orm/bun-sql'
import { migrate as pgMigrate } from 'drizzle-orm/bun-sql/migrator'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import type { PgDb } from '../src/db/postgres'
import { flushSearchIndex, termsQuery } from '../src/threads/search.fts5'
import { flushPgSearchIndex, scopeQuery, searchQuery } from '../src/threads/search.pg'
import { parseQuery, type Term } from '../src/threads/search-text'
import { onPostgres } from './support/backend'
import { emptyPostgresDatabase } from './support/postgres'

/** A copy in `dir` of a dialect's migrations up to, not including, the one whose tag starts with `tag`. */
function migrationsBefore(dir: string, dialect: 'sqlite' | 'postgres', tag: string): string {
  const before = join(dir, 'before')
  cpSync(`db/migrations/${dialect}`, before, { recursive: true })
  const journalPath = join(before, 'meta/_journal.json')
  const journal = JSON.parse(readFileSync(journalPath, 'utf8'))
  journal.entries = journal.entries.filter((entry: { tag: string }) => entry.tag < tag)
  writeFileSync(journalPath, JSON.stringify(journal))
  return before
}

/** A database in `dir` migrated up to, not including, the migration whose tag starts with `tag`. */
function migratedBefore(dir: string, tag: string): Database {
  const before = migrationsBefore(dir, 'sqlite', tag)
  const sqlite = new Database(join(dir, 'db.sqlite'), { strict: true })
  migrate(drizzle({ client: sqlite }), { migrationsFolder: before })
  sqlite.run(`insert into organizations (slug, name, created_at) values ('acme', 'Acme', 0)`)
  sqlite.run(`insert into users (sub, organization_id, email, name, role, password_hash, created_at)
    values ('u', 1, 'a@example.test', 'A', 'owner', '-', 0)`)
  return sqlite
}

test('0005 numbers existing threads in updated_at order and indexes their text; 0006 marks later writes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-migrations-'))
  try {
    const sqlite = migratedBefore(dir, '0005')
    const thread = sqlite.prepare(
      `insert into threads (id, organization_id, owner_id, name, created_at, updated_at) values (?, 1, 1, ?, 0, ?)`,
    )
    const message = sqlite.prepare(
      `insert into messages (id, thread_id, role, contents, text, active, created_at) values (?, ?, 'user', '[]', ?, ?, 0)`,
    )
    thread.run('t-late', 'Lyon', 300)
    thread.run('t-early', null, 100)
    thread.run('t-tie', 'Tie', 300)
    message.run('m1', 't-early', 'rain in Lyon', 1)
    message.run('m2', 't-early', 'forgotten umbrella', 0)
    message.run('m3', 't-late', 'museum rain', 1)

    // Up to 0020, which rebuilds the index from search-text.ts's tokens (tested below).
    migrate(drizzle({ client: sqlite }), { migrationsFolder: migrationsBefore(dir, 'sqlite', '0020') })
    const order = sqlite.query('select id from threads order by update_seq').all()
    expect(order).toEqual([{ id: 't-early' }, { id: 't-late' }, { id: 't-tie' }])
    const search = (words: string) =>
      sqlite
        .query<{ id: string }, [string]>(
          `select t.id from thread_search s join threads t on t.update_seq = 1099511627775 - (s.rowid & 1099511627775)
           where thread_search match ? order by s.rowid`,
        )
        .all(`body : (${words})`)
        .map((row) => row.id)
    expect(search('"rain"')).toEqual(['t-late', 't-early'])
    expect(search('"lyon" AND "museum"')).toEqual(['t-late'])
    expect(search('"umbrella"')).toEqual([])
    // New writes continue the sequence and never move updated_at back.
    sqlite.run(`update threads set updated_at = 50 where id = 't-early'`)
    expect(sqlite.query(`select update_seq, updated_at from threads where id = 't-early'`).get()).toEqual({
      update_seq: 4,
      updated_at: 300,
    })
    // 0006: the write marks the thread's document for rewriting, under the key the index holds for it.
    expect(sqlite.query('select thread_seq, indexed_key from search_pending').all()).toEqual([
      { thread_seq: 2, indexed_key: 2 ** 40 + (1099511627775 - 1) },
    ])
    sqlite.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('0007 rebuilds the index without word positions from the threads as they are, leaving nothing pending', () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-migrations-'))
  try {
    const sqlite = migratedBefore(dir, '0007')
    sqlite.run(`insert into threads (id, organization_id, owner_id, name, created_at, updated_at)
      values ('t1', 1, 1, 'Lyon', 0, 100)`)
    // Written after the thread's document: pending, and not yet in the index.
    sqlite.run(`insert into messages (id, thread_id, role, contents, text, active, created_at)
      values ('m1', 't1', 'user', '[]', 'museum rain', 1, 0)`)
    sqlite.run(`update threads set updated_at = 200 where id = 't1'`)
    expect(sqlite.query('select count(*) as n from search_pending').get()).toEqual({ n: 1 })

    migrate(drizzle({ client: sqlite }), { migrationsFolder: migrationsBefore(dir, 'sqlite', '0020') })
    expect(sqlite.query('select count(*) as n from search_pending').get()).toEqual({ n: 0 })
    const search = (query: string) =>
      sqlite
        .query<{ id: string }, [string]>(
          `select t.id from thread_search s join threads t on t.update_seq = 1099511627775 - (s.rowid & 1099511627775)
           where thread_search match ?`,
        )
        .all(query)
        .map((row) => row.id)
    expect(search('body : ("lyon" AND "museum")')).toEqual(['t1'])
    expect(search('owner : u1')).toEqual(['t1'])
    // Without positions, FTS5 refuses phrases of several words: the index keeps only which column a word is in.
    expect(() => search('body : "museum rain"')).toThrow(/phrase queries are not supported/)
    sqlite.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('0015 puts existing messages on one path: answers under their question, each question under the message before it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-migrations-'))
  try {
    const sqlite = migratedBefore(dir, '0015')
    sqlite.run(
      `insert into threads (id, organization_id, owner_id, name, created_at, updated_at) values ('t', 1, 1, 'T', 0, 0)`,
    )
    const message = sqlite.prepare(
      `insert into messages (id, thread_id, role, contents, text, active, reply_to, created_at) values (?, 't', ?, '[]', '', 1, ?, ?)`,
    )
    message.run('s', 'summary', null, 1)
    message.run('u1', 'user', null, 2)
    message.run('a1', 'assistant', 'u1', 3)
    message.run('u2b', 'user', null, 4)
    message.run('u2a', 'user', null, 4)
    migrate(drizzle({ client: sqlite }), { migrationsFolder: 'db/migrations/sqlite' })
    expect(sqlite.query('select id, parent_id from messages order by created_at, id').all()).toEqual([
      { id: 's', parent_id: null },
      { id: 'u1', parent_id: 's' },
      { id: 'a1', parent_id: 'u1' },
      { id: 'u2a', parent_id: 'a1' },
      { id: 'u2b', parent_id: 'u2a' },
    ])
    sqlite.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

/** Messages written before search read files, attaching files by their blocks (and one file that is gone). */
const attachingMessages = [
  [
    'm1',
    JSON.stringify([
      { type: 'text', text: 'see' },
      { type: 'document', attachment_id: 'f-notes' },
    ]),
  ],
  [
    'm2',
    JSON.stringify([
      { type: 'image', attachment_id: 'f-photo' },
      { type: 'document', attachment_id: 'f-notes' },
    ]),
  ],
  [
    'm3',
    JSON.stringify([
      { type: 'text', text: 'no file' },
      { type: 'document', attachment_id: 'f-gone' },
    ]),
  ],
  ['m4', JSON.stringify([{ type: 'text', text: 'nothing attached' }])],
] as const
const queuedFiles = [
  { attachment_id: 'f-notes', state: 'pending', text: null, words: null, indexed_at: null },
  { attachment_id: 'f-photo', state: 'pending', text: null, words: null, indexed_at: null },
]

test.skipIf(onPostgres)('0018 queues every file a message attaches for search, once, and makes the vocabulary', () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-migrations-'))
  try {
    const sqlite = migratedBefore(dir, '0018')
    sqlite.run(`insert into threads (id, organization_id, owner_id, name, created_at, updated_at)
      values ('t', 1, 1, 'T', 0, 0)`)
    for (const [id, filename, kind] of [
      ['f-notes', 'notes.md', 'document'],
      ['f-photo', 'photo.png', 'image'],
      ['f-unsent', 'unsent.txt', 'document'],
    ]) {
      sqlite.run(`insert into attachments (id, thread_id, kind, media_type, filename, size_bytes, created_at)
        values ('${id}', 't', '${kind}', 'text/plain', '${filename}', 1, 0)`)
    }
    const message = sqlite.prepare(
      `insert into messages (id, thread_id, role, contents, text, created_at) values (?, 't', 'user', ?, '', 0)`,
    )
    for (const [id, contents] of attachingMessages) message.run(id, contents)
    migrate(drizzle({ client: sqlite }), { migrationsFolder: 'db/migrations/sqlite' })
    expect(
      sqlite
        .query('select attachment_id, state, text, words, indexed_at from attachment_texts order by attachment_id')
        .all(),
    ).toEqual(queuedFiles)
    expect(sqlite.query('select truncated from attachment_texts').all()).toEqual([{ truncated: 0 }, { truncated: 0 }])
    // The vocabulary is its key alone: no rowid beside it.
    sqlite.run(`insert into search_terms (term) values ('lyonnais')`)
    expect(() => sqlite.query('select rowid from search_terms').all()).toThrow(/no such column: rowid/)
    sqlite.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test.skipIf(!onPostgres)('0013 (PostgreSQL) queues every file a message attaches for search, once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-migrations-'))
  const client = new Bun.SQL(await emptyPostgresDatabase(), { max: 1 })
  try {
    await pgMigrate(pgDrizzle({ client }), { migrationsFolder: migrationsBefore(dir, 'postgres', '0013') })
    await client`insert into organizations (slug, name, created_at) values ('acme', 'Acme', 0)`
    await client`insert into users (sub, organization_id, email, name, role, password_hash, created_at)
      values ('u', 1, 'a@example.test', 'A', 'owner', '-', 0)`
    await client`insert into threads (id, organization_id, owner_id, name, created_at, updated_at)
      values ('t', 1, 1, 'T', 0, 0)`
    for (const [id, kind] of [
      ['f-notes', 'document'],
      ['f-photo', 'image'],
      ['f-unsent', 'document'],
    ]) {
      await client`insert into attachments (id, thread_id, kind, media_type, filename, size_bytes, created_at)
        values (${id}, 't', ${kind}, 'text/plain', 'file', 1, 0)`
    }
    for (const [id, contents] of attachingMessages) {
      await client`insert into messages (id, thread_id, role, contents, text, created_at)
        values (${id}, 't', 'user', ${contents}, '', 0)`
    }
    await pgMigrate(pgDrizzle({ client }), { migrationsFolder: 'db/migrations/postgres' })
    expect(
      await client`select attachment_id, state, text, words, indexed_at from attachment_texts order by attachment_id`,
    ).toEqual(queuedFiles)
    // The vocabulary's ranges are prefixes whatever the database's collation: it compares by code point.
    expect(
      await client`select collation_name from information_schema.columns where table_name = 'search_terms'`,
    ).toEqual([{ collation_name: 'C' }])
    await client`insert into search_terms (term) values ('lyon'), ('Lyon'), ('lyonnais'), ('lyoñ'), ('lyp')`
    const from = 'lyon'
    const to = `lyon\u{10ffff}`
    expect(await client`select term from search_terms where term >= ${from} and term < ${to} order by term`).toEqual([
      { term: 'lyon' },
      { term: 'lyonnais' },
    ])
  } finally {
    await client.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

test.skipIf(onPostgres)(
  '0020 empties the index for search-text.ts’s tokens and queues every thread for a rebuild',
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'threadhouse-migrations-'))
    try {
      const sqlite = migratedBefore(dir, '0020')
      const thread = sqlite.prepare(
        `insert into threads (id, organization_id, owner_id, name, created_at, updated_at) values (?, 1, 1, ?, 0, ?)`,
      )
      const message = sqlite.prepare(
        `insert into messages (id, thread_id, role, contents, text, created_at) values (?, ?, 'user', '[]', ?, 0)`,
      )
      thread.run('t-lyon', 'Lyon trip', 100)
      thread.run('t-hindi', null, 200)
      message.run('m1', 't-lyon', 'A museum café')
      message.run('m2', 't-hindi', 'नमस्ते दुनिया')
      // Indexed, then written again: pending, with the key of the document the old index holds.
      sqlite.run('delete from search_pending')
      sqlite.run(`update threads set updated_at = 300 where id = 't-lyon'`)
      expect(sqlite.query('select count(*) as n from search_pending where indexed_key is not null').get()).toEqual({
        n: 1,
      })

      const db = drizzle({ client: sqlite })
      migrate(db, { migrationsFolder: 'db/migrations/sqlite' })
      expect(sqlite.query('select rowid from thread_search').all()).toEqual([])
      expect(sqlite.query('select thread_seq, indexed_key from search_pending').all()).toEqual([
        { thread_seq: 1, indexed_key: null },
      ])
      expect(sqlite.query('select thread_seq from search_rebuild order by thread_seq').all()).toEqual([
        { thread_seq: 1 },
        { thread_seq: 2 },
      ])
      // A search's flush rewrites what writes left pending, not the rebuild; the background's batches do the rest.
      expect(flushSearchIndex(db)).toBe(1)
      expect(sqlite.query('select thread_seq from search_rebuild').all()).toEqual([{ thread_seq: 2 }])
      expect(flushSearchIndex(db, 16)).toBe(1)
      expect(flushSearchIndex(db, 16)).toBe(0)
      const search = (q: string) =>
        sqlite
          .query<{ id: string }, [string]>(
            `select t.id from thread_search s join threads t on t.update_seq = 1099511627775 - (s.rowid & 1099511627775)
           where thread_search match ? order by s.rowid`,
          )
          .all(termsQuery(sqlite, parseQuery(q) as Term[]))
          .map((row) => row.id)
      expect(search('caf museu')).toEqual(['t-lyon'])
      expect(search('"cafe"')).toEqual(['t-lyon'])
      // The tokenizer splits only at the spaces search-text.ts writes: a Devanagari word keeps its vowel signs.
      expect(search('नमस')).toEqual(['t-hindi'])
      expect(search('"नमस्ते"')).toEqual(['t-hindi'])
      expect(search('स्ते')).toEqual([])
      sqlite.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  },
)

test.skipIf(!onPostgres)(
  '0015 (PostgreSQL) drops the old documents and queues every thread for a rebuild',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'threadhouse-migrations-'))
    const client = new Bun.SQL(await emptyPostgresDatabase(), { max: 1 })
    try {
      await pgMigrate(pgDrizzle({ client }), { migrationsFolder: migrationsBefore(dir, 'postgres', '0015') })
      await client`insert into organizations (slug, name, created_at) values ('acme', 'Acme', 0)`
      await client`insert into users (sub, organization_id, email, name, role, password_hash, created_at)
      values ('u', 1, 'a@example.test', 'A', 'owner', '-', 0)`
      await client`insert into threads (id, organization_id, owner_id, name, created_at, updated_at)
      values ('t-lyon', 1, 1, 'Lyon trip', 0, 100), ('t-tokyo', 1, 1, null, 0, 200)`
      await client`insert into messages (id, thread_id, role, contents, text, created_at)
      values ('m1', 't-lyon', 'user', '[]', 'A museum café', 0), ('m2', 't-tokyo', 'user', '[]', '我住在东京都', 0)`
      // The old indexer's documents: whole words only.
      await client`insert into thread_search (thread_seq, organization_id, owner_id, update_seq, document)
      select seq, organization_id, owner_id, update_seq, 'lyon trip museum cafe'::tsvector from threads`
      await client`delete from search_pending`

      const db = pgDrizzle({ client, casing: 'snake_case' }) as unknown as PgDb
      await pgMigrate(db, { migrationsFolder: 'db/migrations/postgres' })
      expect(await client`select count(*)::int as n from thread_search`).toEqual([{ n: 0 }])
      expect(await client`select thread_seq from search_rebuild order by thread_seq`).toEqual([
        { thread_seq: 1 },
        { thread_seq: 2 },
      ])
      // A search's flush leaves the rebuild to the background's batches.
      expect(await flushPgSearchIndex(db)).toBe(0)
      expect(await flushPgSearchIndex(db, 16)).toBe(2)
      expect(await client`select count(*)::int as n from search_rebuild`).toEqual([{ n: 0 }])
      const search = async (q: string) => {
        const query = await searchQuery(db, parseQuery(q) as Term[])
        const found = await client`select t.id from thread_search s join threads t on t.seq = s.thread_seq
        where s.document @@ ${scopeQuery(query.indexed, { organizationId: 1 })}::tsquery order by t.id`
        return found.map((row: { id: string }) => row.id)
      }
      expect(await search('caf museu')).toEqual(['t-lyon'])
      expect(await search('东京')).toEqual(['t-tokyo'])
      expect(await search('lyo')).toEqual(['t-lyon'])
    } finally {
      await client.close()
      rmSync(dir, { recursive: true, force: true })
    }
  },
)
