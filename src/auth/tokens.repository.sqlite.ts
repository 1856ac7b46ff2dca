// Personal access tokens on SQLite (tokens.repository.ts): the neutral methods of tokens.repository.common.ts, which
// empty the token cache after a revocation, and the by-hash lookup every cache miss of the bearer guard runs, which
// differs here because bun:sqlite prepares a statement per database without a name and reads its rows as arrays.
import type { Db } from '../db/client'
import { anyDb, asTables, type SqliteAppend, sqliteAudited } from '../db/dialect'
import { sqliteLookup } from '../db/prepared'
import * as tables from './auth.table'
import { forgetResolvedTokens } from './token-cache'
import type { AccessTokenRepository, PersonalAccessTokenLookup } from './tokens.repository'
import {
  accessTokenRepository,
  personalAccessTokenFields,
  personalAccessTokenLookup,
  type TokenTables,
} from './tokens.repository.common'

export function sqliteAccessTokenRepository(db: Db, audit: SqliteAppend): AccessTokenRepository {
  const t = asTables<TokenTables>(tables)
  const findByHash = sqliteLookup<PersonalAccessTokenLookup>(db, 'pat:lookup', personalAccessTokenFields(t), () =>
    personalAccessTokenLookup(anyDb(db), t),
  )
  return {
    ...accessTokenRepository(anyDb(db), t, {
      afterTokenChange: () => forgetResolvedTokens(db),
      audited: sqliteAudited(db, audit),
    }),
    async findByHash(tokenHash) {
      return findByHash(tokenHash)
    },
  }
}
