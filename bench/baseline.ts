// The benchmark's yardstick: the same jobs as Threadhouse (the same SQL over the same database and
// indexes, the same auth hash lookup, per-token request count, visibility rule, JSON shapes, SSE framing and
// response headers) written with nothing but Bun.serve, bun:sqlite prepared statements and ReadableStream.
// It looks each token up on every request, as a raw server would; Threadhouse keeps a resolved token for a
// second (src/auth/token-cache.ts). Only the paths the benchmark drives exist. Run as
// `bun bench/baseline.ts` with DATABASE_PATH, PORT, PUBLIC_URL, TOKEN_DELAY_MS and UPLOADS_DIR.
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import sharp from 'sharp'
import { checkBytes } from '../src/attachments/checks'
import { imageLimits } from '../src/attachments/limits'
import { ftsQuery, keyMask, phrasePage, searchFlusher, searchSql, threadTexts } from './search-sql'

const sqlite = new Database(process.env.DATABASE_PATH ?? 'bench.sqlite', { strict: true })
sqlite.run('PRAGMA journal_mode = WAL')
sqlite.run('PRAGMA synchronous = NORMAL')
sqlite.run('PRAGMA foreign_keys = ON')
sqlite.run('PRAGMA busy_timeout = 5000')
const publicUrl = process.env.PUBLIC_URL ?? 'http://127.0.0.1'
const tokenDelayMs = Number(process.env.TOKEN_DELAY_MS ?? 0)

interface Caller {
  userId: number
  organizationId: number
  read: boolean
  write: boolean
  own: boolean
}

const callerByHash = sqlite.query<
  {
    tokenId: number
    scopes: string
    expiresAt: number | null
    revokedAt: number | null
    lastUsedAt: number | null
    userId: number
    organizationId: number
  },
  [string]
>(
  `select p.id as tokenId, p.scopes, p.expires_at as expiresAt, p.revoked_at as revokedAt,
     p.last_used_at as lastUsedAt, u.id as userId, u.sub, u.name, u.email, u.role,
     u.organization_id as organizationId, o.slug
   from personal_access_tokens p join users u on u.id = p.user_id join organizations o on o.id = u.organization_id
   where p.token_hash = ?`,
)
const touchToken = sqlite.query('update personal_access_tokens set last_used_at = ? where id = ?')

// Threadhouse counts every API request against its token's per-minute limit; the benchmark runs it with a
// limit no run reaches, so counting is all either server does.
const windows = new Map<number, { start: number; count: number }>()
function countRequest(tokenId: number, now: number): void {
  const window = windows.get(tokenId)
  if (window && now - window.start < 60_000) window.count += 1
  else windows.set(tokenId, { start: now, count: 1 })
}

function authenticate(request: Request): Caller | null {
  const header = request.headers.get('authorization')
  if (!header?.startsWith('Bearer thp_')) return null
  const hash = new Bun.CryptoHasher('sha256').update(header.slice(7)).digest('hex')
  const row = callerByHash.get(hash)
  const now = Date.now()
  if (!row || row.revokedAt !== null || (row.expiresAt !== null && row.expiresAt <= now)) return null
  if (row.lastUsedAt === null || now - row.lastUsedAt >= 60_000) touchToken.run(now, row.tokenId)
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
  isPrivate: number
  archived: number
  ownerId: number
  ownerSub: string
  ownerName: string | null
  createdAt: number
  updatedAt: number
}

const columns = `t.id, t.name, t.state, t.is_private as isPrivate, t.archived, t.owner_id as ownerId,
  u.sub as ownerSub, u.name as ownerName, t.created_at as createdAt, t.updated_at as updatedAt`

// One set of statements per kind of caller, as the app prepares them: an OR on a parameter would keep
// SQLite from choosing the organization's index. ?1 is unused, so every statement numbers alike.
function statements(visible: string) {
  return {
    threadById: sqlite.query<ThreadRow, [number, number, number, string]>(
      `select ${columns} from threads t join users u on u.id = t.owner_id where t.id = ?4 and ${visible}`,
    ),
    cursorOf: sqlite.query<{ seq: number }, [number, number, number, string]>(
      `select t.update_seq as seq from threads t where t.id = ?4 and ${visible}`,
    ),
    page: sqlite.query<ThreadRow, [number, number, number, number, number]>(
      `select ${columns} from threads t join users u on u.id = t.owner_id
       where ${visible} and t.archived = 0 and t.update_seq <= ?5
       order by t.update_seq desc limit ?4`,
    ),
    search: sqlite.query<ThreadRow & { updateSeq: number }, [number, number, number, number, string, number]>(
      searchSql(columns, visible),
    ),
  }
}
const byOrganization = statements('?1 = ?1 and t.organization_id = ?2 and (t.is_private = 0 or t.owner_id = ?3)')
const byOwner = statements('?1 = ?1 and t.owner_id = ?3')
const statementsFor = (caller: Caller) => (caller.own ? byOwner : byOrganization)

function iso(ms: number): string {
  return new Date(ms).toISOString()
}

function thread(row: ThreadRow) {
  return {
    id: row.id,
    name: row.name,
    state: row.state,
    is_private: row.isPrivate === 1,
    archived: row.archived === 1,
    owner: { id: row.ownerSub, name: row.ownerName },
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    app_url: `${publicUrl}/threads/${row.id}`,
  }
}

// Threadhouse's response headers: its security headers and a request ID on every response.
const headers = (more: Record<string, string> = {}) => ({
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-request-id': crypto.randomUUID(),
  ...more,
})
const json = (body: unknown, status = 200) => Response.json(body, { status, headers: headers() })
const unauthorized = () => json({ error: 'unauthorized', message: 'A bearer token is required' }, 401)
const notFound = () => json({ error: 'not_found', message: 'Thread not found' }, 404)
const who = (caller: Caller) => [caller.own ? 1 : 0, caller.organizationId, caller.userId] as const

// As the app: writes leave documents pending; a search first rewrites them, and a timer does every second,
// 16 per transaction with a turn of the event loop between.
const flushSearch = searchFlusher(sqlite)
const upkeep = () => {
  if (flushSearch(16) === 16) setImmediate(upkeep)
  else setTimeout(upkeep, 1000)
}
setTimeout(upkeep, 1000)

const textsOf = threadTexts(sqlite)

async function list(caller: Caller, url: URL): Promise<Response> {
  const limit = Math.min(Number(url.searchParams.get('limit') ?? 50), 200)
  const after = url.searchParams.get('after')
  const q = url.searchParams.get('q')
  const [own, org, user] = who(caller)
  const { cursorOf, search, page } = statementsFor(caller)
  let below = keyMask
  if (after) {
    const cursor = cursorOf.get(own, org, user, after)
    if (!cursor) return json({ error: 'invalid_request', message: 'after does not name a visible thread' }, 400)
    below = cursor.seq - 1
  }
  let rows: ThreadRow[]
  if (q !== null && q.trim() !== '') {
    flushSearch()
    const query = ftsQuery(sqlite, q)
    const fts = query && (caller.own ? `${query.fts} AND owner : u${user}` : query.fts)
    const candidates = (under: number, size: number) => search.all(own, org, user, size, fts as string, under)
    rows =
      query === null
        ? []
        : query.phrases.length === 0
          ? candidates(below, limit + 1)
          : await phrasePage(limit + 1, query.phrases, candidates, textsOf, below)
  } else {
    rows = page.all(own, org, user, limit + 1, below)
  }
  const more = rows.length > limit
  const data = (more ? rows.slice(0, limit) : rows).map(thread)
  return json({ data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: more, limit })
}

// Sending and answering: the same writes as the app (message + queue row, claim, answer + states),
// with the echo reply generated in-process instead of in a worker.
const claimThread = sqlite.query<{ id: string }, [number, string]>(
  `update threads set state = 'waiting', updated_at = ? where id = ? and state = 'ready' returning id`,
)
const insertMessage = sqlite.query(
  `insert into messages (id, thread_id, role, contents, text, active, reply_to, created_at)
   values (?, ?, ?, ?, ?, 1, ?, ?)`,
)
const insertGeneration = sqlite.query(
  `insert into generations (message_id, thread_id, status, attempts, created_at) values (?, ?, 'queued', 0, ?)`,
)
const claimGeneration = sqlite.query<{ messageId: string }, [string]>(
  `update generations set status = 'running', attempts = attempts + 1 where message_id = ? and status = 'queued'
   returning message_id as messageId`,
)
const setThreadState = sqlite.query('update threads set state = ?, updated_at = ? where id = ?')
const finishGeneration = sqlite.query(
  `update generations set status = 'complete', finished_at = ? where message_id = ?`,
)
const historyOf = sqlite.query<{ role: string; contents: string }, [string, string]>(
  `select role, contents from messages where thread_id = ?1 and active = 1
     and created_at <= (select created_at from messages where id = ?2) order by created_at, id`,
)
const messageOf = sqlite.query<{ id: string }, [string, string]>(
  'select id from messages where id = ? and thread_id = ?',
)
const generationOf = sqlite.query<{ status: string }, [string]>('select status from generations where message_id = ?')
const repliesOf = sqlite.query<{ contents: string }, [string]>(
  'select contents from messages where reply_to = ? and active = 1 order by created_at, id',
)

const send = sqlite.transaction((caller: Caller, threadId: string, text: string): string | Response => {
  const [own, org, user] = who(caller)
  const row = statementsFor(caller).threadById.get(own, org, user, threadId)
  if (!row) return notFound()
  if (row.ownerId !== caller.userId) return json({ error: 'forbidden', message: 'Only the owner' }, 403)
  if (row.state !== 'ready') return json({ error: 'conflict', message: `The thread is ${row.state}` }, 409)
  const now = Date.now()
  const id = Bun.randomUUIDv7()
  const contents = [{ type: 'text', text }]
  // As the app: the message first, then the state update, whose updated_at marks the thread for re-indexing.
  insertMessage.run(id, threadId, 'user', JSON.stringify(contents), text, null, now)
  insertGeneration.run(id, threadId, now)
  if (!claimThread.get(now, threadId)) throw new Error('the thread left ready within one transaction')
  return id
})

interface Live {
  text: string
  listeners: Set<ReadableStreamDefaultController<Uint8Array>>
}
const live = new Map<string, Live>()
const encoder = new TextEncoder()
const event = (type: string, data: unknown, id: number) =>
  encoder.encode(`id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`)

function generate(messageId: string, threadId: string): void {
  const answer: Live = { text: '', listeners: new Set() }
  live.set(messageId, answer)
  queueMicrotask(() => {
    const started = sqlite.transaction(() => {
      if (!claimGeneration.get(messageId)) return false
      setThreadState.run('active', Date.now(), threadId)
      return true
    })()
    if (!started) return
    const history = historyOf.all(threadId, messageId)
    const users = history.filter((message) => message.role === 'user')
    const last = JSON.parse(users.at(-1)?.contents ?? '[]') as { type: string; text?: string }[]
    const said = last.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n')
    // The echo responder's reply (src/generation/providers/echo.ts): the message quoted.
    const reply = `You said, in turn ${users.length}:\n\n${said.replace(/^/gm, '> ')}`
    const tokens = reply.match(/\s*\S+|\s+$/g) ?? []
    const push = (token: string) => {
      answer.text += token
      const chunk = event('token', { token }, answer.text.length)
      for (const listener of answer.listeners) listener.enqueue(chunk)
    }
    const finish = () => {
      const now = Date.now()
      sqlite.transaction(() => {
        const contents = JSON.stringify([{ type: 'text', text: answer.text }])
        insertMessage.run(Bun.randomUUIDv7(), threadId, 'assistant', contents, answer.text, messageId, now)
        finishGeneration.run(now, messageId)
        setThreadState.run('ready', now, threadId)
      })()
      live.delete(messageId)
      const done = event('done', {}, answer.text.length)
      for (const listener of answer.listeners) {
        listener.enqueue(done)
        listener.close()
      }
    }
    if (tokenDelayMs === 0) {
      for (const token of tokens) push(token)
      finish()
      return
    }
    let next = 0
    const tick = () => {
      const token = tokens[next++]
      if (token === undefined) return finish()
      push(token)
      setTimeout(tick, tokenDelayMs)
    }
    setTimeout(tick, tokenDelayMs)
  })
}

function stream(caller: Caller, threadId: string, messageId: string, lastEventId: string | null): Response {
  const [own, org, user] = who(caller)
  if (!statementsFor(caller).threadById.get(own, org, user, threadId) || !messageOf.get(messageId, threadId)) {
    return notFound()
  }
  if (!generationOf.get(messageId)) return notFound()
  const from = Math.max(0, Number(lastEventId) || 0)
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined
  let answerRef: Live | undefined
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const answer = live.get(messageId)
      if (answer) {
        if (from < answer.text.length)
          controller.enqueue(event('token', { token: answer.text.slice(from) }, answer.text.length))
        answer.listeners.add(controller)
        controllerRef = controller
        answerRef = answer
        return
      }
      const text = repliesOf
        .all(messageId)
        .flatMap((row) => JSON.parse(row.contents) as { type: string; text?: string }[])
        .map((block) => (block.type === 'text' ? block.text : ''))
        .join('')
      if (from < text.length) controller.enqueue(event('token', { token: text.slice(from) }, text.length))
      controller.enqueue(event('done', {}, text.length))
      controller.close()
    },
    cancel() {
      if (controllerRef) answerRef?.listeners.delete(controllerRef)
    },
  })
  const sse = {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  }
  return new Response(body, { headers: headers(sse) })
}

const uploadsDir = process.env.UPLOADS_DIR ?? 'bench-uploads'

/** Decodes every pixel, as Threadhouse does, scaling a large image to the model bound. */
async function decodeImage(bytes: Uint8Array): Promise<void> {
  const side = imageLimits.modelLongestSide
  const image = sharp(bytes, { limitInputPixels: imageLimits.maxPixels, failOn: 'error' })
  const { width, height } = await image.metadata()
  if (Math.max(width, height) <= side) await image.stats()
  else await image.resize({ width: side, height: side, fit: 'inside' }).toBuffer()
}

/**
 * The same checks as Threadhouse's upload route, run on this server's only thread: what Threadhouse did
 * before its inspect processes, so scenario 6 shows what moving them off the request thread is worth.
 */
async function upload(request: Request): Promise<Response> {
  const form = await request.formData()
  const stored: { id: string; filename: string }[] = []
  for (const value of form.values()) {
    if (typeof value === 'string') return json({ message: 'Parts must be files' }, 400)
    const bytes = await value.bytes()
    const verdict = await checkBytes(bytes, { filename: value.name, declaredType: value.type })
    if (!verdict.accepted) return json({ message: verdict.problem }, 422)
    if (verdict.kind === 'image') await decodeImage(bytes)
    const id = Bun.randomUUIDv7()
    await Bun.write(join(uploadsDir, id), bytes)
    stored.push({ id, filename: value.name })
  }
  return json(stored, 201)
}

const server = Bun.serve({
  port: Number(process.env.PORT ?? 0),
  hostname: '127.0.0.1',
  idleTimeout: 60,
  routes: {
    '/healthz': () => json({ status: 'ok' }),
    '/api/v1/threads': (request) => {
      const caller = authenticate(request)
      if (!caller) return unauthorized()
      return list(caller, new URL(request.url))
    },
    '/api/v1/threads/:threadId': (request) => {
      const caller = authenticate(request)
      if (!caller) return unauthorized()
      const [own, org, user] = who(caller)
      const row = statementsFor(caller).threadById.get(own, org, user, request.params.threadId)
      return row ? json(thread(row)) : notFound()
    },
    '/api/v1/threads/:threadId/attachments': {
      POST: (request) => (authenticate(request) ? upload(request) : unauthorized()),
    },
    '/api/v1/threads/:threadId/messages': {
      POST: async (request) => {
        const caller = authenticate(request)
        if (!caller) return unauthorized()
        const body = (await request.json()) as { text?: unknown }
        if (typeof body.text !== 'string' || body.text === '') {
          return json({ error: 'invalid_request', message: 'text is required' }, 400)
        }
        const sent = send(caller, request.params.threadId, body.text)
        if (sent instanceof Response) return sent
        generate(sent, request.params.threadId)
        return json({ message_id: sent }, 201)
      },
    },
    '/api/v1/threads/:threadId/messages/:messageId/response/stream': (request) => {
      const caller = authenticate(request)
      if (!caller) return unauthorized()
      const { threadId, messageId } = request.params
      return stream(caller, threadId, messageId, request.headers.get('last-event-id'))
    },
  },
  fetch: () => json({ error: 'not_found', message: 'No such endpoint' }, 404),
})

console.error(JSON.stringify({ msg: 'listening', port: server.port }))
