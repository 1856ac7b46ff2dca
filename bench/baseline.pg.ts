// The benchmark's PostgreSQL yardstick: the jobs Threadhouse does on PostgreSQL for the scenarios run there (a
// thread by ID, list pages and searches, sending a message and storing its answer) written with nothing but
// Bun.serve and Bun.SQL: the same statements, in the same transactions and round trips, over the same database and
// indexes, with the same token lookup, per-token request count, visibility rule, JSON and response headers as
// baseline.ts (its SQLite twin). It looks each token up on every request, as a raw server would; Threadhouse keeps
// a resolved token for a second. There are no streams and no uploads: scenarios 4's streams, 5 and 6 run on
// SQLite only. Run as `bun bench/baseline.pg.ts` with DATABASE_URL, PORT and PUBLIC_URL.

import { phrasePage } from './search-sql'
import { flushBatch, pageSql, probeParams, probesSql, startSearch, threadColumns, threadTexts } from './search-sql.pg'

// The app's pool size (src/db/postgres.ts).
const sql = new Bun.SQL(process.env.DATABASE_URL as string, { max: 10 })
const publicUrl = process.env.PUBLIC_URL ?? 'http://127.0.0.1'

interface Caller {
  userId: number
  organizationId: number
  read: boolean
  write: boolean
  own: boolean
}

interface TokenRow {
  tokenId: number
  scopes: string
  expiresAt: string | null
  revokedAt: string | null
  lastUsedAt: string | null
  userId: number
  removedAt: string | null
  organizationId: number
}

// Threadhouse counts every API request against its token's per-minute limit; the benchmark runs it with a
// limit no run reaches, so counting is all either server does.
const windows = new Map<number, { start: number; count: number }>()
function countRequest(tokenId: number, now: number): void {
  const window = windows.get(tokenId)
  if (window && now - window.start < 60_000) window.count += 1
  else windows.set(tokenId, { start: now, count: 1 })
}

async function authenticate(request: Request): Promise<Caller | null> {
  const header = request.headers.get('authorization')
  if (!header?.startsWith('Bearer thp_')) return null
  const hash = new Bun.CryptoHasher('sha256').update(header.slice(7)).digest('hex')
  const [row] = await sql<TokenRow[]>`select p.id as "tokenId", p.scopes, p.expires_at as "expiresAt",
      p.revoked_at as "revokedAt", p.last_used_at as "lastUsedAt", u.id as "userId", u.removed_at as "removedAt",
      u.sub, u.name, u.email, u.role, u.organization_id as "organizationId", o.slug
    from personal_access_tokens p join users u on u.id = p.user_id join organizations o on o.id = u.organization_id
    where p.token_hash = ${hash}`
  const now = Date.now()
  if (!row || row.revokedAt !== null || row.removedAt !== null) return null
  if (row.expiresAt !== null && Number(row.expiresAt) <= now) return null
  if (row.lastUsedAt === null || now - Number(row.lastUsedAt) >= 60_000) {
    await sql`update personal_access_tokens set last_used_at = ${now} where id = ${row.tokenId}`
  }
  countRequest(row.tokenId, now)
  const scopes = row.scopes.split(' ')
  const read = scopes.includes('threads:read')
  return {
    userId: row.userId,
    organizationId: row.organizationId,
    read: read || scopes.includes('threads:read:own'),
    write: scopes.includes('threads:write'),
    own: !read,
  }
}

type ThreadRow = {
  id: string
  name: string | null
  state: string
  isPrivate: boolean
  archived: boolean
  ownerId: number
  ownerSub: string
  ownerName: string | null
  createdAt: string
  updatedAt: string
}

// $1 is unused, so that the statements of both kinds of caller number their parameters alike (as baseline.ts).
const visibleToOrganization = '$1::int = $1 and t.organization_id = $2 and (t.is_private = false or t.owner_id = $3)'
const visibleToOwner = '$1::int = $1 and $2::int = $2 and t.owner_id = $3'
const visibleFor = (caller: Caller) => (caller.own ? visibleToOwner : visibleToOrganization)
const who = (caller: Caller) => [caller.own ? 1 : 0, caller.organizationId, caller.userId]

async function findVisible(runner: Pick<Bun.SQL, 'unsafe'>, caller: Caller, threadId: string) {
  const [row] = await runner.unsafe<ThreadRow[]>(
    `select ${threadColumns} from threads t join users u on u.id = t.owner_id where t.id = $4 and ${visibleFor(caller)}`,
    [...who(caller), threadId],
  )
  return row
}

const iso = (ms: string) => new Date(Number(ms)).toISOString()

function thread(row: ThreadRow) {
  return {
    id: row.id,
    name: row.name,
    state: row.state,
    is_private: row.isPrivate,
    archived: row.archived,
    owner: { id: row.ownerSub, name: row.ownerName },
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    app_url: `${publicUrl}/threads/${row.id}`,
  }
}

// Threadhouse's response headers: its security headers and a request ID on every response.
const headers = () => ({
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-request-id': crypto.randomUUID(),
})
const json = (body: unknown, status = 200) => Response.json(body, { status, headers: headers() })
const unauthorized = () => json({ error: 'unauthorized', message: 'A bearer token is required' }, 401)
const notFound = () => json({ error: 'not_found', message: 'Thread not found' }, 404)

// As the app: writes leave documents queued; a search first rewrites them, and a timer does every second, 16 per
// transaction with a turn of the event loop between.
const upkeep = async () => {
  const count = await flushBatch(sql, 16).catch(() => 0)
  if (count === 16) setImmediate(upkeep)
  else setTimeout(upkeep, 1000)
}
setTimeout(upkeep, 1000)

async function list(caller: Caller, url: URL): Promise<Response> {
  const limit = Math.min(Number(url.searchParams.get('limit') ?? 50), 200)
  const after = url.searchParams.get('after')
  const q = url.searchParams.get('q')
  const visible = visibleFor(caller)
  const params: unknown[] = who(caller)
  let below: number | undefined
  if (after) {
    const [row] = await sql.unsafe<{ seq: string }[]>(
      `select t.update_seq as seq from threads t where t.id = $4 and ${visible}`,
      [...params, after],
    )
    if (!row) return json({ error: 'invalid_request', message: 'after does not name a visible thread' }, 400)
    below = Number(row.seq) - 1
  }
  let rows: ThreadRow[]
  if (q !== null && q.trim() !== '') {
    const started = await startSearch(sql, q)
    if (started === null) return json({ data: [], first_id: null, last_id: null, has_more: false, limit })
    const { head, search } = started
    const scope = { organizationId: caller.organizationId, ownerId: caller.own ? caller.userId : undefined }
    const statement = probesSql(visible)
    const candidates = (under: number, size: number) =>
      sql.unsafe<(ThreadRow & { updateSeq: string })[]>(statement, [
        ...params,
        ...probeParams(search, scope, Math.min(under, head), size),
      ])
    rows =
      search.phrases.length === 0
        ? await candidates(below ?? head, limit + 1)
        : await phrasePage(limit + 1, search.phrases, candidates, (ids) => threadTexts(sql, ids), below ?? head)
  } else {
    const statement = pageSql({ visible, next: 4, cursor: below !== undefined })
    rows = await sql.unsafe<ThreadRow[]>(statement, [...params, ...(below === undefined ? [] : [below]), limit + 1])
  }
  const more = rows.length > limit
  const data = (more ? rows.slice(0, limit) : rows).map(thread)
  return json({ data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: more, limit })
}

/** The app's sendUserMessage: the conditional update is the lock, and updated_at (the clock's turn) comes last. */
async function send(caller: Caller, threadId: string, text: string): Promise<string | Response> {
  const row = await findVisible(sql, caller, threadId)
  if (!row) return notFound()
  if (row.ownerId !== caller.userId) return json({ error: 'forbidden', message: 'Only the owner' }, 403)
  const now = Date.now()
  const id = Bun.randomUUIDv7()
  const contents = JSON.stringify([{ type: 'text', text }])
  const sent = await sql.begin(async (tx) => {
    const [claimed] = await tx`update threads set state = 'waiting' where id = ${threadId} and state = 'ready'
      returning id`
    if (!claimed) return false
    const [newest] = await tx<{ last: string | null }[]>`select max(created_at) as last from messages
      where thread_id = ${threadId}`
    const last = newest?.last == null ? null : Number(newest.last)
    await tx`insert into messages (id, thread_id, role, contents, text, created_at)
      values (${id}, ${threadId}, 'user', ${contents}, ${text}, ${last === null || now >= last ? now : last + 1})`
    await tx`insert into generations (message_id, thread_id, status, created_at) values (${id}, ${threadId}, 'queued', ${now})`
    await tx`update threads set updated_at = ${now} where id = ${threadId}`
    return true
  })
  if (!sent) return json({ error: 'conflict', message: 'The thread is busy' }, 409)
  return id
}

/** The engine's work for one answer, with the echo reply made in-process instead of in a worker. */
async function answer(messageId: string, threadId: string): Promise<void> {
  const started = await sql.begin(async (tx) => {
    await tx`select id from threads where id = ${threadId} for no key update`
    const [claimed] = await tx`update generations set status = 'running', attempts = attempts + 1
      where message_id = ${messageId} and status = 'queued' returning message_id`
    if (!claimed) return false
    await tx`update threads set state = 'active', updated_at = ${Date.now()} where id = ${threadId}`
    return true
  })
  if (!started) return
  const history = await sql<{ role: string; contents: string }[]>`select id, role, contents from messages
    where thread_id = ${threadId} and active and created_at <= (select created_at from messages where id = ${messageId})
    order by created_at, id`
  const users = history.filter((message) => message.role === 'user')
  const said = (JSON.parse(users.at(-1)?.contents ?? '[]') as { type: string; text?: string }[])
    .flatMap((block) => (block.type === 'text' ? [block.text] : []))
    .join('\n')
  // The echo responder's reply (src/generation/providers/echo.ts): the message quoted.
  const reply = `You said, in turn ${users.length}:\n\n${said.replace(/^/gm, '> ')}`
  const now = Date.now()
  await sql.begin(async (tx) => {
    await tx`select id from threads where id = ${threadId} for no key update`
    const [ended] = await tx`update generations set status = 'complete', finished_at = ${now}
      where message_id = ${messageId} and status in ('queued', 'running') returning message_id`
    if (!ended) return
    const [newest] = await tx<{ last: string | null }[]>`select max(created_at) as last from messages
      where thread_id = ${threadId}`
    const last = newest?.last == null ? null : Number(newest.last)
    await tx`insert into messages (id, thread_id, role, contents, text, reply_to, created_at)
      values (${Bun.randomUUIDv7()}, ${threadId}, 'assistant', ${JSON.stringify([{ type: 'text', text: reply }])},
        ${reply}, ${messageId}, ${last === null || now >= last ? now : last + 1})`
    await tx`update threads set state = 'ready', updated_at = ${now} where id = ${threadId}`
  })
}

const server = Bun.serve({
  port: Number(process.env.PORT ?? 0),
  hostname: '127.0.0.1',
  idleTimeout: 60,
  routes: {
    '/healthz': () => json({ status: 'ok' }),
    '/api/v1/threads': async (request) => {
      const caller = await authenticate(request)
      if (!caller) return unauthorized()
      return list(caller, new URL(request.url))
    },
    '/api/v1/threads/:threadId': async (request) => {
      const caller = await authenticate(request)
      if (!caller) return unauthorized()
      const row = await findVisible(sql, caller, request.params.threadId)
      return row ? json(thread(row)) : notFound()
    },
    '/api/v1/threads/:threadId/messages': {
      POST: async (request) => {
        const caller = await authenticate(request)
        if (!caller) return unauthorized()
        const body = (await request.json()) as { text?: unknown }
        if (typeof body.text !== 'string' || body.text === '') {
          return json({ error: 'invalid_request', message: 'text is required' }, 400)
        }
        const sent = await send(caller, request.params.threadId, body.text)
        if (sent instanceof Response) return sent
        void answer(sent, request.params.threadId)
        return json({ message_id: sent }, 201)
      },
    },
  },
  fetch: () => json({ error: 'not_found', message: 'No such endpoint' }, 404),
})

console.error(JSON.stringify({ msg: 'listening', port: server.port }))
