// Server keys on PostgreSQL (server-keys.repository.ts). The first instance to need a key inserts one it made; an
// instance racing it inserts nothing (ON CONFLICT DO NOTHING waits for the other insert to commit) and then reads the
// stored key, so every instance signs with the same one. A key never changes once stored: each is read once per
// process.
import { decodeBase64urlIgnorePadding, encodeBase64urlNoPadding } from '@oslojs/encoding'
import { eq } from 'drizzle-orm'
import type { PgDb } from '../db/postgres'
import { randomKey } from './security'
import type { ServerKeyRepository } from './server-keys.repository'
import { serverKeys } from './server-keys.table.pg'

export function pgServerKeyRepository(db: PgDb): ServerKeyRepository {
  const read = new Map<string, Promise<Uint8Array>>()
  async function load(name: string): Promise<Uint8Array> {
    const made = encodeBase64urlNoPadding(randomKey())
    // When it was made is for an operator reading the table, not for the server: the system clock will do.
    await db.insert(serverKeys).values({ name, key: made, createdAt: Date.now() }).onConflictDoNothing()
    // A statement of its own, so it sees whichever insert committed first, this one or another instance's.
    const [stored] = await db.select({ key: serverKeys.key }).from(serverKeys).where(eq(serverKeys.name, name))
    if (!stored) throw new Error(`the server key ${name} was not stored`)
    return decodeBase64urlIgnorePadding(stored.key)
  }
  return {
    key(name) {
      let key = read.get(name)
      if (!key) {
        key = load(name)
        read.set(name, key)
        // A failed read (the database briefly away) is tried again by the next request, not remembered.
        key.catch(() => read.delete(name))
      }
      return key
    },
  }
}
