// Moving an installation: a SQLite installation filled through the real server over HTTP, copied by the real CLI
// (`bun run cli db:copy`) into PostgreSQL, and served from there by a real server. On SQLite runs the files stay in
// the uploads folder; on PostgreSQL runs they go to a bucket. Every run needs PostgreSQL: SQLite runs start the
// run's one cluster here, on first use (test/support/postgres.ts), and the preload stops it after the last file.
import { Database } from 'bun:sqlite'
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getTableColumns, getTableName, is } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import type { PgTable } from 'drizzle-orm/pg-core'
import { SQLiteTable } from 'drizzle-orm/sqlite-core'
import { openPostgres } from '../src/db/postgres'
import { type CopiedTable, copiedTables } from '../src/operations/db-copy'
import { threads } from '../src/threads/threads.table'
import { onPostgres } from './support/backend'
import { firstRunToken, runToEnd, startServer, startServerAtOwnUrl, until } from './support/helpers'
import { approve, Browser, loopbackRedirect } from './support/oauth-helpers'
import { type PostgresCluster, sharedPostgres } from './support/postgres'
import { runS3 } from './support/s3'

// Three servers, a dozen CLI processes and, on SQLite runs, the start of a PostgreSQL cluster.

const home = mkdtempSync(join(tmpdir(), 'threadhouse-db-copy-'))
afterAll(() => rmSync(home, { recursive: true, force: true }))

/** Never printed by the CLI: the test cluster trusts loopback, so any password in the URL is accepted unread. */
const dbPassword = 'pg-Secret-7f3a'
const ownerPassword = 'correct horse battery'

let databases = 0

/** A new, empty database on the run's cluster (not migrated: db:copy does that), and its URL with a password. */
async function emptyDatabase(cluster: PostgresCluster): Promise<string> {
  databases += 1
  const name = `copy_${process.pid}_${databases}`
  await cluster.admin(`create database ${name}`)
  return cluster.url(name).replace('postgres@', `postgres:${dbPassword}@`)
}

/** The tables a PostgreSQL database has: none before db:copy has migrated it. */
async function tablesIn(url: string): Promise<number> {
  const client = new Bun.SQL(url, { max: 1 })
  try {
    const [row] = await client`select count(*)::int as n from information_schema.tables where table_schema = 'public'`
    return row.n
  } finally {
    await client.close()
  }
}

type Rows = Record<string, Record<string, unknown>[]>

/** Every copied table's rows in the copy's order; threads without their places in the update order, renumbered. */
function ordered(rowsOf: (table: CopiedTable) => Record<string, unknown>[]): Rows {
  return Object.fromEntries(
    copiedTables.map((table) => {
      const rows = rowsOf(table)
      return [
        getTableName(table.from),
        table.from === threads ? rows.map(({ updateSeq: _, createdSeq: __, ...row }) => row) : rows,
      ]
    }),
  )
}

function orderOf<T extends SQLiteTable | PgTable>(table: T, keys: string[]) {
  const columns = getTableColumns(table) as Record<string, never>
  return keys.map((key) => columns[key] as never)
}

function sqliteRowsOf(path: string): Rows {
  const client = new Database(path, { readonly: true })
  const db = drizzle({ client, casing: 'snake_case' })
  try {
    return ordered((table) =>
      db
        .select()
        .from(table.from)
        .orderBy(...orderOf(table.from, table.order))
        .all(),
    )
  } finally {
    client.close()
  }
}

async function rowsOf(url: string): Promise<Rows> {
  const db = openPostgres(url, { max: 1 })
  try {
    const read: Record<string, Record<string, unknown>[]> = {}
    for (const table of copiedTables) {
      const rows = await db
        .select()
        .from(table.to)
        .orderBy(...orderOf(table.to, table.order))
      // PostgreSQL's own columns are empty in a copy, and not compared with SQLite's.
      read[getTableName(table.to)] = rows.map((row) => {
        const copied: Record<string, unknown> = { ...row }
        for (const column of table.targetOnly ?? []) {
          expect(copied[column]).toBeNull()
          delete copied[column]
        }
        return copied
      })
    }
    return ordered((table) => read[getTableName(table.to)] ?? [])
  } finally {
    await db.$client.close()
  }
}

/** Rows in every copied table of a database db:copy has migrated. */
async function rowCount(url: string): Promise<number> {
  const client = new Bun.SQL(url, { max: 1 })
  try {
    const counts = copiedTables.map((table) => `(select count(*) from ${getTableName(table.to)})`).join(' + ')
    const [row] = await client.unsafe(`select (${counts})::int as n`)
    return row.n
  } finally {
    await client.close()
  }
}

function cli(env: Record<string, string>, ...args: string[]) {
  return runToEnd(['bun', 'run', 'cli', ...args], env)
}

test('db:copy copies every table that holds data, with the same columns on both sides', () => {
  // Every SQLite table drizzle-kit reads (drizzle.config.ts's glob), wherever a feature keeps it.
  const modules = [...new Bun.Glob('src/**/*.table.ts').scanSync(join(import.meta.dir, '..'))].map(
    (file) => require(join(import.meta.dir, '..', file)) as Record<string, unknown>,
  )
  const sqliteTables = modules
    .flatMap((module) => Object.values(module))
    .filter((value) => is(value, SQLiteTable))
    .map((table) => getTableName(table as SQLiteTable))
  // search_pending is the SQLite index's queue; PostgreSQL's is filled by its own trigger as threads arrive. The
  // change feed's tombstones hold places in SQLite's update order, which the copy renumbers: the copy moves the
  // feed's horizon instead, so every feed reloads. An MCP server's authorization under way in an admin's browser
  // lasts ten minutes: the admin starts it again. The search vocabulary is built again with the documents, and every
  // document with them, so no rebuild a migration left is copied either.
  const notCopied = [
    'search_pending',
    'search_rebuild',
    'search_terms',
    'thread_tombstones',
    'thread_feed_horizon',
    'mcp_oauth_flows',
  ]
  expect(copiedTables.map(({ from }) => getTableName(from)).sort()).toEqual(
    sqliteTables.filter((name) => !notCopied.includes(name)).sort(),
  )
  for (const { from, to, targetOnly = [] } of copiedTables) {
    expect(getTableName(to)).toBe(getTableName(from))
    const shared = Object.keys(getTableColumns(to)).filter((column) => !targetOnly.includes(column))
    expect(shared.sort()).toEqual(Object.keys(getTableColumns(from)).sort())
  }
})

test.concurrent('a SQLite installation moves to PostgreSQL: passwords, tokens, sessions, threads, search and files keep working', async () => {
  const cluster = await sharedPostgres()
  const bucket = onPostgres ? await (await runS3()).bucket() : undefined
  const files: Record<string, string> = bucket
    ? {
        S3_BUCKET: bucket.bucket,
        S3_ENDPOINT: bucket.endpoint ?? '',
        S3_REGION: bucket.region ?? 'us-east-1',
        S3_ACCESS_KEY_ID: bucket.accessKeyId,
        S3_SECRET_ACCESS_KEY: bucket.secretAccessKey,
      }
    : {}
  const uploads = join(home, 'uploads')
  const sqlite = {
    DATABASE_PATH: join(home, 'data', 'db.sqlite'),
    UPLOADS_DIR: uploads,
    ECHO_TOKEN_DELAY_MS: '0',
    ADMIN_EMAIL: 'owner@example.com',
    ADMIN_PASSWORD: ownerPassword,
  }
  // What an operator moving to PostgreSQL sets: the old installation's paths, and the new home of the files.
  const copyEnv = { ...sqlite, ...files }
  const target = await emptyDatabase(cluster)

  // The old installation, filled over HTTP.
  const server = await startServerAtOwnUrl(sqlite, { backend: 'as given' })
  const origin = server.url
  const ownerToken = await firstRunToken(server)
  const call = async (token: string, method: string, path: string, body?: unknown, at = origin) => {
    const response = await fetch(`${at}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined || body instanceof FormData ? {} : { 'content-type': 'application/json' }),
      },
      body: body instanceof FormData ? body : body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await response.text()
    return { status: response.status, body: text === '' ? null : JSON.parse(text) }
  }
  /** The answer to a user message, once complete. */
  const answered = (token: string, threadId: string, messageId: string) =>
    until(async () => {
      const reply = await call(token, 'GET', `/threads/${threadId}/messages/${messageId}/response`)
      return reply.status === 200 && reply.body
    })

  const member = { email: 'member@example.com', password: 'member password 1' }
  expect(
    (await cli(sqlite, 'user:create', '--email', member.email, '--password', member.password, '--name', 'Mo')).code,
  ).toBe(0)
  const memberToken = (
    await cli(sqlite, 'token:create', '--email', member.email, '--scopes', 'threads:read threads:write')
  ).stdout
    .trimEnd()
    .split('\n')
    .at(-1) as string

  const plans = await call(ownerToken, 'POST', '/threads', { name: 'Plans', text: 'The zanzibarquux plan, step one' })
  expect(plans.status).toBe(201)
  const firstAnswer = await answered(ownerToken, plans.body.thread_id, plans.body.message_id)

  const notes = '# Notes\n\nMoved with everything else.\n'
  const filed = await call(ownerToken, 'POST', '/threads', { name: 'Files' })
  const form = new FormData()
  form.append('attachments[0]', new File([notes], 'notes.md', { type: 'text/markdown' }))
  const uploaded = await call(ownerToken, 'POST', `/threads/${filed.body.thread_id}/attachments`, form)
  expect(uploaded.status).toBe(201)
  const attachmentId = uploaded.body[0].id as string
  const sent = await call(ownerToken, 'POST', `/threads/${filed.body.thread_id}/messages`, {
    text: 'Read the notes',
    attachment_ids: [attachmentId],
  })
  await answered(ownerToken, filed.body.thread_id, sent.body.message_id)

  const secret = await call(memberToken, 'POST', '/threads', { text: 'My own thoughts', is_private: true })
  await answered(memberToken, secret.body.thread_id, secret.body.message_id)
  // Written to last, the first thread is the most recently updated: update order and creation order differ.
  const second = await call(ownerToken, 'POST', `/threads/${plans.body.thread_id}/messages`, { text: 'Step two' })
  await answered(ownerToken, plans.body.thread_id, second.body.message_id)
  const rated = await call(
    ownerToken,
    'POST',
    `/threads/${plans.body.thread_id}/messages/${firstAnswer.messages[0].id}/feedback`,
    { positive: true, feedback_text: 'Spot on' },
  )
  expect(rated.status).toBe(204)

  // An OAuth client, a person's approval and the tokens of the grant; the browser keeps its session.
  const registered = await fetch(`${origin}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Moving app',
      redirect_uris: [loopbackRedirect],
      token_endpoint_auth_method: 'none',
    }),
  })
  expect(registered.status).toBe(201)
  const clientId = ((await registered.json()) as { client_id: string }).client_id
  const browser = Browser.overHttp(origin)
  expect((await browser.signIn('owner@example.com', ownerPassword)).status).toBe(303)
  const redirectUri = 'http://127.0.0.1:53682/callback'
  const { code, verifier } = await approve(browser, { clientId, redirectUri })
  const exchanged = await fetch(`${origin}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      client_id: clientId,
      code_verifier: verifier ?? '',
    }),
  })
  expect(exchanged.status).toBe(200)
  const grant = (await exchanged.json()) as { access_token: string; refresh_token: string }

  /** What the API shows; the same before and after the move. */
  const view = async (at: string) => ({
    owner: await call(ownerToken, 'GET', '/me', undefined, at),
    member: await call(memberToken, 'GET', '/me', undefined, at),
    oauth: await call(grant.access_token, 'GET', '/me', undefined, at),
    ownerThreads: await call(ownerToken, 'GET', '/threads?archived=true', undefined, at),
    memberThreads: await call(memberToken, 'GET', '/threads?owned=true', undefined, at),
    byCreation: await call(ownerToken, 'GET', '/threads?sort_by=created_at&sort_dir=asc', undefined, at),
    search: await call(ownerToken, 'GET', '/threads?q=zanzibarquux', undefined, at),
    messages: await call(ownerToken, 'GET', `/threads/${plans.body.thread_id}/messages`, undefined, at),
    withFile: await call(ownerToken, 'GET', `/threads/${filed.body.thread_id}/messages`, undefined, at),
  })
  const before = await view(origin)
  const idsOf = (list: { body: { data: { id: string }[] } }) => list.body.data.map((thread) => thread.id)
  expect(idsOf(before.ownerThreads)).toEqual([plans.body.thread_id, filed.body.thread_id])
  expect(idsOf(before.byCreation)).toEqual([plans.body.thread_id, filed.body.thread_id])
  expect(before.search.body.data.map((thread: { id: string }) => thread.id)).toEqual([plans.body.thread_id])

  // Refused while the server has the database open, before anything touches PostgreSQL.
  const busy = await cli(copyEnv, 'db:copy', '--to', target)
  expect(busy).toMatchObject({ code: 1, stdout: '' })
  expect(busy.stderr.trim().split('\n')).toEqual([expect.stringMatching(/running on it|open in another process/)])
  expect(await tablesIn(target)).toBe(0)

  await server[Symbol.asyncDispose]()

  // A connected MCP server and what its tools did in the first answer, written as the app writes them (no route
  // makes them yet). Sealed values go as they are: the server on PostgreSQL opens them with the same SECRETS_KEY.
  // Only `run` and finalized statements: bun:sqlite keeps a connection open while a statement lives, and db:copy
  // would find the file in use.
  const tooled = new Database(sqlite.DATABASE_PATH)
  const insert = (table: string, row: Record<string, string | number | null>) => {
    const columns = Object.keys(row)
    tooled.run(
      `insert into ${table} (${columns.join(', ')}) values (${columns.map(() => '?').join(', ')})`,
      Object.values(row),
    )
  }
  const ownerRow = tooled.prepare(`select id, organization_id from users where email = 'owner@example.com'`)
  const { id: ownerId, organization_id: organizationId } = ownerRow.get() as { id: number; organization_id: number }
  ownerRow.finalize()
  const serverId = Bun.randomUUIDv7()
  insert('mcp_servers', {
    id: serverId,
    organization_id: organizationId,
    name: 'docs',
    url: 'https://docs.example.com/mcp',
    auth: 'headers',
    headers_sealed: 'v1.0123abcd.iv.sealed',
    header_names: '["Authorization"]',
    trusted: 1,
    status: 'ok',
    tools_refreshed_at: 5,
    created_by: ownerId,
    created_at: 1,
    updated_at: 5,
  })
  const tool = { server_id: serverId, description: 'Searches', input_schema: '{"type":"object"}' }
  const seen = { first_seen_at: 2, updated_at: 3 }
  insert('mcp_server_tools', {
    ...tool,
    ...seen,
    name: 'search_docs',
    annotations: '{"readOnlyHint":true}',
    read_only: 1,
    enabled: 1,
  })
  insert('mcp_server_tools', {
    ...tool,
    ...seen,
    name: 'odd',
    enabled: 0,
    problem: 'its input schema is not an object',
  })
  insert('mcp_server_oauth', {
    server_id: serverId,
    client_information_sealed: 'v1.0123abcd.a.b',
    tokens_sealed: 'v1.0123abcd.c.d',
    discovery_state: '{"resource":"https://docs.example.com/mcp"}',
    authorized_by: ownerId,
    authorized_at: 4,
  })
  insert('mcp_oauth_flows', {
    state_hash: 'hash',
    server_id: serverId,
    user_id: ownerId,
    code_verifier_sealed: 'v1.0123abcd.e.f',
    created_at: 1,
    expires_at: 600_001,
  })
  const inThread = { thread_id: plans.body.thread_id, chain_id: 'run-1', round: 1, run_id: 'run-1' }
  insert('tool_rounds', {
    ...inThread,
    question_id: plans.body.message_id,
    text: 'Let me look.',
    input_tokens: 120,
    output_tokens: 9,
    cached_input_tokens: 0,
    created_at: 6,
  })
  const called = {
    ...inThread,
    answer_id: firstAnswer.messages[0].id,
    server_name: 'docs',
    arguments: '{"q":"plan"}',
    started_at: 6,
  }
  insert('tool_calls', {
    ...called,
    id: Bun.randomUUIDv7(),
    position: 0,
    tool_use_id: 'call_0',
    model_name: 'docs__search_docs',
    server_id: serverId,
    tool_name: 'search_docs',
    status: 'ok',
    result: 'Step one is…',
    result_chars: 12,
    finished_at: 7,
    duration_ms: 1,
  })
  insert('tool_calls', {
    ...called,
    id: Bun.randomUUIDv7(),
    position: 1,
    tool_use_id: 'call_1',
    model_name: 'docs__delete_page',
    tool_name: 'delete_page',
    status: 'denied',
    error: 'denied',
    approval_id: 'approve_1',
    decided_by: second.body.message_id,
    decided_at: 8,
  })
  tooled.run(
    `insert into thread_settings (thread_id, tools) values (?, '["docs/search_docs"]')
     on conflict (thread_id) do update set tools = excluded.tools`,
    [plans.body.thread_id],
  )
  tooled.close()

  // A database that does not answer: one line naming it, never the password.
  const nowhere = await cli(copyEnv, 'db:copy', '--to', `postgres://postgres:${dbPassword}@127.0.0.1:1/nowhere`)
  expect(nowhere).toMatchObject({ code: 1, stdout: '' })
  expect(nowhere.stderr).toStartWith('error: Cannot use the PostgreSQL database nowhere at 127.0.0.1:1: ')
  expect(nowhere.stderr.trim().split('\n')).toHaveLength(1)
  expect(nowhere.stderr).not.toContain(dbPassword)

  const copied = await cli(copyEnv, 'db:copy', '--to', target)
  expect(copied).toMatchObject({ code: 0, stderr: '' })
  // Once filled, the database is refused: one line, nothing changed. (Before this test reads the SQLite file
  // itself: bun:sqlite closes a connection only once its statements are collected, and db:copy would see it open.)
  const again = await cli(copyEnv, 'db:copy', '--to', target)
  expect(again).toMatchObject({ code: 1, stdout: '' })
  expect(again.stderr.trim().split('\n')).toEqual([
    expect.stringMatching(
      /^error: The PostgreSQL database copy_\w+ at 127\.0\.0\.1:\d+ is not empty \(it has rows in organizations, users, .*\); db:copy copies only into an empty database$/,
    ),
  ])

  expect(copied.stdout).not.toContain(dbPassword)
  const lines = copied.stdout.trimEnd().split('\n')
  expect(lines[0]).toStartWith(`Copied ${sqlite.DATABASE_PATH} into the PostgreSQL database copy_`)
  expect(lines[0]).toEndWith(
    bucket ? `the files went to bucket ${bucket.bucket} at ${bucket.endpoint}` : `the files stay in ${uploads}`,
  )
  // Every table's rows, as many as the SQLite file holds.
  const source = new Database(sqlite.DATABASE_PATH, { readonly: true })
  const expected = copiedTables.map(({ from }) => {
    const name = getTableName(from)
    return [name, (source.query(`select count(*) as n from ${name}`).get() as { n: number }).n] as const
  })
  source.close()
  const printed = Object.fromEntries(
    lines.slice(1, -1).map((line) => {
      const [, name, value] = /^ {2}(.+?) {2,}(\S.*)$/.exec(line) ?? []
      return [name, value]
    }),
  )
  expect(printed).toEqual({
    ...Object.fromEntries(expected.map(([name, rows]) => [name, String(rows)])),
    'attachment files': `1 (${notes.length} bytes${bucket ? ', 1 copied' : ''})`,
  })
  expect(Object.fromEntries(expected)).toMatchObject({
    organizations: 1,
    users: 2,
    personal_access_tokens: 2,
    sessions: 1,
    oauth_clients: 1,
    oauth_grants: 1,
    oauth_refresh_tokens: 1,
    threads: 3,
    messages: 8,
    feedback: 1,
    attachments: 1,
    // Queued for search by the message that attached it: it goes still queued.
    attachment_texts: 1,
    thread_settings: 1,
    mcp_servers: 1,
    mcp_server_tools: 2,
    mcp_server_oauth: 1,
    tool_rounds: 1,
    tool_calls: 2,
  })
  expect(lines.at(-1)).toBe(
    'Counts checked: every table holds as many rows as in SQLite and every file is in place; search index built for 3 threads',
  )

  // Row for row the same, IDs, times and hashes included; threads keep their update order (its numbers are
  // PostgreSQL's own). The search documents are built, and the update clock stands at the last thread.
  expect(await rowsOf(target)).toEqual(sqliteRowsOf(sqlite.DATABASE_PATH))
  const client = new Bun.SQL(target, { max: 1 })
  const [state] = await client`
    select (select count(*)::int from thread_search) as documents,
      (select count(*)::int from search_pending) as pending,
      (select update_seq = (select max(update_seq) from threads) and updated_at = (select max(updated_at) from threads)
        from thread_update_clock) as clock`
  await client.close()
  expect(state).toEqual({ documents: 3, pending: 0, clock: true })

  // The new installation: PostgreSQL and, on PostgreSQL runs, the bucket, with an empty staging folder.
  const staging = join(home, 'staging')
  mkdirSync(staging)
  await using moved = await startServer({
    DATABASE_URL: target,
    UPLOADS_DIR: bucket ? staging : uploads,
    ...files,
    PUBLIC_URL: origin,
    ECHO_TOKEN_DELAY_MS: '0',
  })
  expect(moved.stdout()).not.toContain('Threadhouse is set up')
  expect(await view(moved.url)).toEqual(before)

  const download = await fetch(`${moved.url}/api/v1/threads/${filed.body.thread_id}/attachments/${attachmentId}`, {
    headers: { authorization: `Bearer ${ownerToken}` },
  })
  expect(download.status).toBe(200)
  expect(await download.text()).toBe(notes)

  // The session the browser held, the password, the refresh token.
  const session = Browser.overHttp(moved.url)
  for (const [name, value] of browser.cookies) session.cookies.set(name, value)
  const signedIn = await session.get('/settings/api/session')
  expect(signedIn.status).toBe(200)
  expect(((await signedIn.json()) as { user: { email: string } }).user.email).toBe('owner@example.com')
  expect((await Browser.overHttp(moved.url).signIn(member.email, member.password)).status).toBe(303)
  const refreshed = await fetch(`${moved.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: grant.refresh_token, client_id: clientId }),
  })
  expect(refreshed.status).toBe(200)
  // The audit log came over with its hashes, and the events written since on PostgreSQL chain onto it.
  const verified = await cli({ DATABASE_URL: target }, 'audit:verify')
  expect([verified.code, verified.stderr]).toEqual([0, ''])
  expect(verified.stdout).toMatch(/^ok default: \d+ events checked/m)

  // Later writes continue the update order: the newest thread comes first, and updated_since finds only it.
  const newest = before.ownerThreads.body.data[0] as { id: string; updated_at: string }
  const added = await call(ownerToken, 'POST', '/threads', { name: 'After the move' }, moved.url)
  expect(added.status).toBe(201)
  const listed = await call(ownerToken, 'GET', '/threads', undefined, moved.url)
  expect(listed.body.data.map((thread: { id: string }) => thread.id)).toEqual([
    added.body.thread_id,
    ...before.ownerThreads.body.data.map((thread: { id: string }) => thread.id),
  ])
  const since = await call(
    ownerToken,
    'GET',
    `/threads?updated_since=${encodeURIComponent(newest.updated_at)}`,
    undefined,
    moved.url,
  )
  expect(since.body.data.map((thread: { id: string }) => thread.id)).toEqual([added.body.thread_id])
  const more = await call(
    ownerToken,
    'POST',
    `/threads/${plans.body.thread_id}/messages`,
    { text: 'Step three' },
    moved.url,
  )
  expect(more.status).toBe(201)
})

test.concurrent('a copy that cannot be whole commits nothing: a missing file is refused first, a failing row rolls back, and a run after the fix copies', async () => {
  const cluster = await sharedPostgres()
  const bucket = onPostgres ? await (await runS3()).bucket() : undefined
  const place = mkdtempSync(join(home, 'broken-'))
  const uploads = join(place, 'uploads')
  const env: Record<string, string> = {
    DATABASE_PATH: join(place, 'db.sqlite'),
    UPLOADS_DIR: uploads,
    ...(bucket && {
      S3_BUCKET: bucket.bucket,
      S3_ENDPOINT: bucket.endpoint ?? '',
      S3_REGION: bucket.region ?? 'us-east-1',
      S3_ACCESS_KEY_ID: bucket.accessKeyId,
      S3_SECRET_ACCESS_KEY: bucket.secretAccessKey,
    }),
  }
  const target = await emptyDatabase(cluster)
  expect((await cli(env, 'migrate')).code).toBe(0)
  expect((await cli(env, 'user:create', '--email', 'ada@example.com', '--password', ownerPassword)).code).toBe(0)

  // A thread with an attachment whose file is gone, written as the app would have written it.
  const attachmentId = Bun.randomUUIDv7()
  const threadId = Bun.randomUUIDv7()
  const db = new Database(env.DATABASE_PATH as string)
  db.run(`insert into threads (id, organization_id, owner_id, created_at, updated_at) values (?, 1, 1, 1, 1)`, [
    threadId,
  ])
  db.run(
    `insert into attachments (id, thread_id, kind, media_type, filename, size_bytes, created_at)
     values (?, ?, 'text', 'text/plain', 'a.txt', 5, 1)`,
    [attachmentId, threadId],
  )
  db.close()
  const missing = await cli(env, 'db:copy', '--to', target)
  expect(missing).toMatchObject({ code: 1, stdout: '' })
  expect(missing.stderr.trim().split('\n')).toEqual([
    `error: 1 attachment file is in neither UPLOADS_DIR ${uploads} nor ${
      bucket ? `bucket ${bucket.bucket} at ${bucket.endpoint}` : uploads
    } (${attachmentId}); nothing was copied`,
  ])
  expect(await rowCount(target)).toBe(0)

  // The file is back, but a row names a user that does not exist (SQLite was told not to check): PostgreSQL
  // refuses it half-way through the copy, and everything before it is rolled back.
  mkdirSync(uploads, { recursive: true })
  await Bun.write(join(uploads, attachmentId), 'hello')
  const broken = new Database(env.DATABASE_PATH as string)
  broken.run('pragma foreign_keys = off')
  broken.run(`insert into sessions (token_hash, user_id, created_at, expires_at) values ('x', 99, 1, 2)`)
  broken.close()
  const failed = await cli(env, 'db:copy', '--to', target)
  expect(failed).toMatchObject({ code: 1, stdout: '' })
  expect(failed.stderr.trim().split('\n')).toEqual([
    expect.stringMatching(/^error: The copy into PostgreSQL failed and nothing was committed: .*sessions.*$/),
  ])
  expect(failed.stderr).not.toContain(dbPassword)
  expect(await rowCount(target)).toBe(0)

  const fixed = new Database(env.DATABASE_PATH as string)
  fixed.run('delete from sessions where user_id = 99')
  fixed.close()
  const copied = await cli(env, 'db:copy', '--to', target)
  expect(copied).toMatchObject({ code: 0, stderr: '' })
  expect(copied.stdout).toContain(`  attachment files           1 (5 bytes${bucket ? ', 1 copied' : ''})\n`)
  // The organization, the user, the thread and its attachment, and the user's creation in the audit log with its
  // chain's head.
  expect(await rowCount(target)).toBe(6)
})

test.concurrent('db:copy refuses a target that is not a PostgreSQL URL, or two that differ, without showing either', async () => {
  const env = { DATABASE_PATH: join(home, 'never.sqlite') }
  const [notPostgres, twoTargets, none] = await Promise.all([
    cli(env, 'db:copy', '--to', `mysql://root:${dbPassword}@127.0.0.1/threadhouse`),
    cli(
      { ...env, DATABASE_URL: `postgres://a:${dbPassword}@127.0.0.1:1/one` },
      'db:copy',
      '--to',
      `postgres://a:${dbPassword}@127.0.0.1:1/two`,
    ),
    cli(env, 'db:copy'),
  ])
  expect([notPostgres, twoTargets, none]).toEqual([
    {
      code: 1,
      stdout: '',
      stderr:
        'error: --to must be a PostgreSQL URL such as postgres://user:password@host:5432/threadhouse (the value is not shown)\n',
    },
    { code: 1, stdout: '', stderr: 'error: --to and DATABASE_URL name different databases; give one of them\n' },
    { code: 1, stdout: '', stderr: 'error: --to is required unless DATABASE_URL is set\n' },
  ])
})
