// The storage seam: every feature's async repository, built once at boot for the database in use. Services
// receive the repository they need from here and never see a driver, so the same behaviour runs on SQLite
// (the default) and, later, PostgreSQL. Query-planner tricks and prepared statements stay inside the
// SQLite implementations beside each feature.
import type { AttachmentRepository } from '../attachments/repository'
import { sqliteAttachmentRepository } from '../attachments/repository.sqlite'
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
  readonly dialect: 'sqlite'
  /** One cheap round trip to the database, for /healthz and /readyz: throws when it cannot answer. */
  ping(): Promise<void>
  attachments: AttachmentRepository
  oauthClients: ClientRepository
  oauthGrants: GrantRepository
  generations: GenerationRepository
  threads: ThreadRepository
  search: ThreadSearch
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
  }
}
