// The secret keys the server signs with (today one: the pre-sign-in CSRF cookie's, web/csrf.ts). Several instances
// on one database must share them, or a form served by one is refused by another: on PostgreSQL they are stored
// (server-keys.repository.pg.ts). On SQLite the one process makes its own at start, as before; a restart only
// invalidates sign-in forms left open.
import { randomKey } from './security'

export interface ServerKeyRepository {
  /**
   * The key named `name`, made at its first use. Of instances asking at once, every one gets the same key: the
   * first stored.
   */
  key(name: string): Promise<Uint8Array>
}

/** Keys made by this process and kept in its memory: for a database only one process uses. */
export function processKeys(): ServerKeyRepository {
  const keys = new Map<string, Uint8Array>()
  return {
    async key(name) {
      let key = keys.get(name)
      if (!key) {
        key = randomKey()
        keys.set(name, key)
      }
      return key
    },
  }
}
