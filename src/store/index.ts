// The storage seam: every feature's async repository, built once at boot for the database in use. Services
// receive the repository they need from here and never see a driver, so the same behaviour runs on SQLite
// (the default) and, later, PostgreSQL. Query-planner tricks and prepared statements stay inside the
// SQLite implementations beside each feature.
import type { AttachmentRepository } from '../attachments/repository'
import { sqliteAttachmentRepository } from '../attachments/repository.sqlite'
import type { SessionRepository } from '../auth/sessions.repository'
import { sqliteSessionRepository } from '../auth/sessions.repository.sqlite'
import { type TokenCache, tokenCacheOf } from '../auth/token-cache'
import type { AccessTokenRepository } from '../auth/tokens.repository'
import { sqliteAccessTokenRepository } from '../auth/tokens.repository.sqlite'
import type { UserRepository } from '../auth/users.repository'
import { sqliteUserRepository } from '../auth/users.repository.sqlite'
import type { Db } from '../db/client'
import type { GenerationRepository } from '../generation/repository'
import { sqliteGenerationRepository } from '../generation/repository.sqlite'
import type { ClientRepository } from '../oauth/clients.repository'
import { sqliteClientRepository } from '../oauth/clients.repository.sqlite'
import type { GrantRepository } from '../oauth/grants.repository'
import { sqliteGrantRepository } from '../oauth/grants.repository.sqlite'
import type { ThreadRepository } from '../threads/repository'
import { sqliteThreadRepository } from '../threads/repository.sqlite'
import type { ThreadSearch } from '../threads/search'
import { fts5ThreadSearch } from '../threads/search.fts5'

export interface Store {
  readonly dialect: 'sqlite' | 'postgres'
  /** One cheap round trip to the database, for /healthz and /readyz: throws when it cannot answer. */
  ping(): Promise<void>
  attachments: AttachmentRepository
  oauthClients: ClientRepository
  oauthGrants: GrantRepository
  generations: GenerationRepository
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
}

/** Every repository over one open SQLite database. */
export function sqliteStore(db: Db): Store {
  return {
    dialect: 'sqlite',
    async ping() {
      db.$client.query('select 1').get()
    },
    attachments: sqliteAttachmentRepository(db),
    oauthClients: sqliteClientRepository(db),
    oauthGrants: sqliteGrantRepository(db),
    generations: sqliteGenerationRepository(db),
    threads: sqliteThreadRepository(db),
    search: fts5ThreadSearch(db),
    users: sqliteUserRepository(db),
    accessTokens: sqliteAccessTokenRepository(db),
    sessions: sqliteSessionRepository(db),
    tokenCache: tokenCacheOf(db),
  }
}
