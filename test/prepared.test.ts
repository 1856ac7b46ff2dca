// Statements built once and run inside PostgreSQL transactions (src/db/prepared.ts inTransaction). They reach into
// Drizzle's Bun.SQL session for the transaction's connection: these tests fail if an upgrade moves it, rather than
// letting the answer path's writes run on the pool, outside the transaction they belong to. PostgreSQL only: SQLite's
// statements prepared on the database already run inside its one connection's transaction.
import { describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { organizations } from '../src/auth/auth.table.pg'
import type { PgDb, PgTx } from '../src/db/postgres'
import { inTransaction } from '../src/db/prepared'
import { onPostgres, testDatabase } from './support/backend'

describe.skipIf(!onPostgres)('a statement built once runs inside each transaction it is given', () => {
  test('it sees the transaction’s own writes, its writes go with a rollback, and the next one finds it built', async () => {
    await using database = await testDatabase()
    const db = database.orm as unknown as PgDb
    let builds = 0
    const renamed = (tx: PgTx) =>
      inTransaction(tx, 'test:rename-organization', (on) => {
        builds += 1
        return on
          .update(organizations)
          .set({ name: sql`${sql.placeholder('name')}` })
          .where(eq(organizations.slug, sql.placeholder('slug')))
          .returning({ name: organizations.name })
          .prepare('test_rename_organization')
      })
    const [created] = await db
      .insert(organizations)
      .values({ slug: 'prepared-test', name: 'Before', createdAt: Date.now() })
      .returning({ slug: organizations.slug })
    const slug = created?.slug as string

    const rolledBack = new Error('rolled back on purpose')
    const seen = await db
      .transaction(async (tx) => {
        await tx.update(organizations).set({ name: 'Inside' }).where(eq(organizations.slug, slug))
        // Run on the pool, this would wait for the row the transaction holds (or not see its write).
        const [row] = await renamed(tx).execute({ slug, name: 'Renamed inside' })
        expect(row?.name).toBe('Renamed inside')
        throw rolledBack
      })
      .catch((error: unknown) => error)
    expect(seen).toBe(rolledBack)
    const [after] = await db
      .select({ name: organizations.name })
      .from(organizations)
      .where(eq(organizations.slug, slug))
    expect(after?.name).toBe('Before')

    await db.transaction(async (tx) => {
      await renamed(tx).execute({ slug, name: 'Committed' })
    })
    const [committed] = await db
      .select({ name: organizations.name })
      .from(organizations)
      .where(eq(organizations.slug, slug))
    expect(committed?.name).toBe('Committed')
    expect(builds).toBe(1)
  })
})
