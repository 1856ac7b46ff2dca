// Personal access tokens on PostgreSQL (tokens.repository.ts): the neutral methods of tokens.repository.common.ts and
// the by-hash lookup as a named prepared statement, which every API request with a personal access token runs here
// (PostgreSQL keeps no token in memory): built once, it costs about half the time of a query built anew each call
// (bench/shared-state.ts).
import { anyDb, type PgAppend, pgAudited } from '../db/dialect'
import type { PgDb } from '../db/postgres'
import * as tables from './auth.table.pg'
import type { AccessTokenRepository } from './tokens.repository'
import { accessTokenRepository, personalAccessTokenLookup } from './tokens.repository.common'

export function pgAccessTokenRepository(db: PgDb, audit: PgAppend): AccessTokenRepository {
  const byHash = personalAccessTokenLookup(anyDb(db), tables).prepare('personal_access_token_by_hash')
  return {
    ...accessTokenRepository(anyDb(db), tables, { audited: pgAudited(db, audit) }),
    async findByHash(hash) {
      const [row] = await byHash.execute({ hash })
      return row ?? null
    },
  }
}
