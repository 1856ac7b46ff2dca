// Personal access tokens on SQLite (tokens.repository.ts): the neutral methods of tokens.repository.common.ts, which
// empty the token cache after a revocation, and the by-hash lookup every cache miss of the bearer guard runs, which
// differs here because bun:sqlite prepares a statement per database without a name and reads its rows as arrays.
// Also how the other auth and OAuth SQLite repositories run neutral queries: prepared lookups and statements inside
// a synchronous transaction.
import type { Db } from '../db/client'
import { anyDb, asTables } from '../db/dialect'
import { prepared } from '../db/prepared'
import * as tables from './auth.table'
import { forgetResolvedTokens } from './token-cache'
import type { AccessTokenRepository, PersonalAccessTokenLookup } from './tokens.repository'
import {
  accessTokenRepository,
  personalAccessTokenFields,
  personalAccessTokenLookup,
  type TokenTables,
} from './tokens.repository.common'

/**
 * A lookup by the `hash` placeholder, written against the neutral builder type (db/dialect.ts) and prepared here once
 * per database: building and preparing cost several times more than running it. Its rows come from Drizzle's
 * positional `.values()`, each value named by the key its column was selected under: this runs on every API request
 * the token cache misses, and Drizzle's generic row mapping cost it about a third of its time.
 */
export function sqliteLookup<T>(db: Db, key: string, fields: object, query: () => unknown): (hash: string) => T | null {
  const names = Object.keys(fields)
  return (hash) => {
    const statement = prepared(db, key, () =>
      (query() as { prepare(): { values(placeholders: { hash: string }): unknown[][] } }).prepare(),
    )
    const values = statement.values({ hash })[0]
    if (!values) return null
    const row: Record<string, unknown> = {}
    for (let i = 0; i < names.length; i++) row[names[i] as string] = values[i]
    return row as T
  }
}

/**
 * Runs neutral statements (built on a bun:sqlite transaction, typed against PostgreSQL's builder) one after another,
 * synchronously: bun:sqlite transactions cannot await.
 */
export function runInTransaction(statements: readonly unknown[]): void {
  for (const statement of statements) (statement as { run(): void }).run()
}

export function sqliteAccessTokenRepository(db: Db): AccessTokenRepository {
  const t = asTables<TokenTables>(tables)
  const findByHash = sqliteLookup<PersonalAccessTokenLookup>(db, 'pat:lookup', personalAccessTokenFields(t), () =>
    personalAccessTokenLookup(anyDb(db), t),
  )
  return {
    ...accessTokenRepository(anyDb(db), t, { afterTokenChange: () => forgetResolvedTokens(db) }),
    async findByHash(tokenHash) {
      return findByHash(tokenHash)
    },
  }
}
