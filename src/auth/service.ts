// Users, organizations and personal access tokens, and turning a bearer token into a Caller.
import { and, desc, eq, isNull, sql } from 'drizzle-orm'
import type { Db } from '../db/client'
import { prepared } from '../db/prepared'
import { AppError, conflict, invalidRequest } from '../shared/errors'
import { generateSecret, hashPassword, hashSecret } from '../shared/security'
import { lastUsedResolutionMs } from '../shared/time'
import { organizations, personalAccessTokens, type Role, users } from './auth.table'
import { type Caller, isScope, type ResolvedToken, type Scope } from './model'
import { forgetResolvedTokens } from './token-cache'

export const personalAccessTokenPrefix = 'thp_'

export function parseScopes(value: string): Scope[] {
  const parts = value.split(/\s+/).filter(Boolean)
  const unknown = parts.filter((part) => !isScope(part))
  if (unknown.length > 0) throw new AppError(400, 'invalid_scope', `Unknown scope: ${unknown.join(', ')}`)
  if (parts.length === 0) throw new AppError(400, 'invalid_scope', 'At least one scope is required')
  return [...new Set(parts)] as Scope[]
}

function findOrCreateOrganization(db: Db, slug: string, now: number): number {
  const existing = db.select({ id: organizations.id }).from(organizations).where(eq(organizations.slug, slug)).get()
  if (existing) return existing.id
  if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(slug)) {
    throw invalidRequest(`Invalid organization slug "${slug}": use a-z, 0-9 and dashes`)
  }
  const row = db.insert(organizations).values({ slug, name: slug, createdAt: now }).returning().get()
  return row.id
}

export interface NewUser {
  email: string
  password: string
  name?: string | null
  organizationSlug: string
  role: Role
  /** For a one-time password chosen by someone else: the person must replace it at first sign-in. */
  mustChangePassword?: boolean
}

export const minimumPasswordLength = 8

export async function createUser(db: Db, input: NewUser, now: number): Promise<{ id: number; sub: string }> {
  const email = input.email.trim().toLowerCase()
  if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw invalidRequest(`Invalid email "${input.email}"`)
  if (input.password.length < minimumPasswordLength) {
    throw invalidRequest(`Password must be at least ${minimumPasswordLength} characters`)
  }
  const passwordHash = await hashPassword(input.password)
  return db.transaction((tx) => {
    if (tx.select({ id: users.id }).from(users).where(eq(users.email, email)).get()) {
      throw conflict(`A user with email ${email} already exists`)
    }
    const organizationId = findOrCreateOrganization(db, input.organizationSlug, now)
    const sub = Bun.randomUUIDv7()
    const row = tx
      .insert(users)
      .values({
        sub,
        email,
        name: input.name ?? null,
        role: input.role,
        organizationId,
        passwordHash,
        mustChangePassword: input.mustChangePassword ?? false,
        createdAt: now,
      })
      .returning({ id: users.id })
      .get()
    return { id: row.id, sub }
  })
}

/** An active user by email; people removed from their organization are not found (they may not sign in). */
export function findUserByEmail(db: Db, email: string) {
  return db
    .select()
    .from(users)
    .where(and(eq(users.email, email.trim().toLowerCase()), isNull(users.removedAt)))
    .get()
}

export interface NewPersonalAccessToken {
  userId: number
  name: string
  scopes: Scope[]
  expiresAt?: number | null
}

/** Creates a token and returns it; this is the only time the token itself exists outside the caller. */
export function createPersonalAccessToken(db: Db, input: NewPersonalAccessToken, now: number): string {
  const token = generateSecret(personalAccessTokenPrefix)
  db.insert(personalAccessTokens)
    .values({
      userId: input.userId,
      name: input.name,
      tokenHash: hashSecret(token),
      scopes: input.scopes.join(' '),
      createdAt: now,
      expiresAt: input.expiresAt ?? null,
    })
    .run()
  return token
}

/** A personal access token as the settings page lists it; the token itself is never stored. */
export interface PersonalAccessTokenSummary {
  id: number
  name: string
  scopes: Scope[]
  createdAt: number
  lastUsedAt: number | null
  expiresAt: number | null
}

/** The person's tokens that are not revoked, newest first; expired ones stay listed until revoked. */
export function listPersonalAccessTokens(db: Db, userId: number): PersonalAccessTokenSummary[] {
  return db
    .select({
      id: personalAccessTokens.id,
      name: personalAccessTokens.name,
      scopes: personalAccessTokens.scopes,
      createdAt: personalAccessTokens.createdAt,
      lastUsedAt: personalAccessTokens.lastUsedAt,
      expiresAt: personalAccessTokens.expiresAt,
    })
    .from(personalAccessTokens)
    .where(and(eq(personalAccessTokens.userId, userId), isNull(personalAccessTokens.revokedAt)))
    .orderBy(desc(personalAccessTokens.createdAt), desc(personalAccessTokens.id))
    .all()
    .map((row) => ({ ...row, scopes: row.scopes.split(' ').filter(isScope) }))
}

export function revokePersonalAccessToken(db: Db, userId: number, tokenId: number, now: number): boolean {
  const result = db
    .update(personalAccessTokens)
    .set({ revokedAt: now })
    .where(
      and(
        eq(personalAccessTokens.id, tokenId),
        eq(personalAccessTokens.userId, userId),
        isNull(personalAccessTokens.revokedAt),
      ),
    )
    .returning({ id: personalAccessTokens.id })
    .get()
  if (result === undefined) return false
  forgetResolvedTokens(db)
  return true
}

// tokenRowOf reads these columns by position: keep this order in step with it.
function prepareLookup(db: Db) {
  return db
    .select({
      tokenId: personalAccessTokens.id,
      scopes: personalAccessTokens.scopes,
      expiresAt: personalAccessTokens.expiresAt,
      revokedAt: personalAccessTokens.revokedAt,
      lastUsedAt: personalAccessTokens.lastUsedAt,
      userId: users.id,
      removedAt: users.removedAt,
      sub: users.sub,
      name: users.name,
      email: users.email,
      role: users.role,
      organizationId: users.organizationId,
      organizationSlug: organizations.slug,
    })
    .from(personalAccessTokens)
    .innerJoin(users, eq(users.id, personalAccessTokens.userId))
    .innerJoin(organizations, eq(organizations.id, users.organizationId))
    .where(eq(personalAccessTokens.tokenHash, sql.placeholder('hash')))
    .prepare()
}

/**
 * A row of `prepareLookup` from Drizzle's positional `.values()`, in its select's order: this lookup runs on every
 * API request, and Drizzle's generic row mapping cost it about a third of its time.
 */
function tokenRowOf(values: unknown[]) {
  return {
    tokenId: values[0] as number,
    scopes: values[1] as string,
    expiresAt: values[2] as number | null,
    revokedAt: values[3] as number | null,
    lastUsedAt: values[4] as number | null,
    userId: values[5] as number,
    removedAt: values[6] as number | null,
    sub: values[7] as string,
    name: values[8] as string | null,
    email: values[9] as string,
    role: values[10] as Role,
    organizationId: values[11] as number,
    organizationSlug: values[12] as string,
  }
}

/** The user and organization columns every kind of bearer token resolves to. */
export interface CallerRow {
  scopes: string
  userId: number
  sub: string
  name: string | null
  email: string
  role: Role
  organizationId: number
  organizationSlug: string
}

interface Grant {
  scopes: ReadonlySet<Scope>
  sees: Caller['sees']
}

/**
 * Each distinct `scopes` column parsed once: tokens share a handful of scope lists, and every API request needs
 * one. Bounded in case the column ever holds many distinct strings.
 */
const grants = new Map<string, Grant>()
function grantOf(scopes: string): Grant {
  let grant = grants.get(scopes)
  if (!grant) {
    const granted = new Set(scopes.split(' ').filter(isScope))
    grant = { scopes: granted, sees: granted.has('threads:read') ? 'organization' : 'own' }
    if (grants.size >= 64) grants.clear()
    grants.set(scopes, grant)
  }
  return grant
}

/** A Caller from a token's user row and its granted scopes; `credential` keys per-token limits. */
export function callerOf(row: CallerRow, credential: string): Caller {
  const granted = grantOf(row.scopes)
  return {
    credential,
    userId: row.userId,
    sub: row.sub,
    name: row.name,
    email: row.email,
    role: row.role,
    organizationId: row.organizationId,
    organizationSlug: row.organizationSlug,
    scopes: granted.scopes,
    sees: granted.sees,
  }
}

/**
 * The caller behind a personal access token, given the token's hash (`hashSecret`), or null when it is unknown,
 * revoked or expired.
 */
export function resolvePersonalAccessToken(db: Db, hash: string, now: number): ResolvedToken | null {
  // Runs whenever a token is not in memory (token-cache.ts): prepared once per database.
  const values = prepared(db, 'pat:lookup', () => prepareLookup(db)).values({ hash })[0]
  const row = values && tokenRowOf(values)
  if (!row || row.revokedAt !== null || (row.expiresAt !== null && row.expiresAt <= now)) return null
  // Removal revokes every token already; this also covers one made afterwards by hand.
  if (row.removedAt !== null) return null
  if (row.lastUsedAt === null || now - row.lastUsedAt >= lastUsedResolutionMs) {
    db.update(personalAccessTokens).set({ lastUsedAt: now }).where(eq(personalAccessTokens.id, row.tokenId)).run()
  }
  return { caller: callerOf(row, `pat:${row.tokenId}`), expiresAt: row.expiresAt }
}
