// Several instances on one PostgreSQL database (issue 24's performance goals): a throwaway cluster and two server
// processes, A and B, with the echo responder. Answers are generated on A and read on B, and every figure is set
// beside the same thing measured on A alone in the same run:
//   1. many streams on B: how long after a reference stream on A each token reaches B's streams;
//   2. first token across instances: POST on A, stream on B, against POST and stream on A;
//   3. takeover after SIGKILL of the generating instance, with the default lease.
// Results go to results/instances.md (what follows its notes marker is kept). Never part of `bun test`.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createParser } from 'eventsource-parser'
import { startPostgres } from '../test/support/postgres'
import { cpuSeconds, percentile } from './load'

// Bun's fetch holds at most 256 requests at once unless told otherwise before it starts: run again with more.
if (!process.env.BUN_CONFIG_MAX_HTTP_REQUESTS) {
  const child = Bun.spawn([process.execPath, ...process.argv.slice(1)], {
    env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: '8192' },
    stdio: ['inherit', 'inherit', 'inherit'],
  })
  process.exit(await child.exited)
}

const numberFrom = (name: string, fallback: number): number => Number(process.env[name] || fallback)
const settings = {
  streams: numberFrom('INSTANCES_STREAMS', 1000),
  answers: numberFrom('INSTANCES_ANSWERS', 32),
  words: numberFrom('INSTANCES_WORDS', 900),
  firstTokens: numberFrom('INSTANCES_FIRST_TOKENS', 100),
  takeovers: numberFrom('INSTANCES_TAKEOVERS', 3),
  tokenDelayMs: 20,
}
/** Tokens count from this long after the last stream opened: the catch-up of a stream opened late is no delay. */
const warmUpMs = 1000
const goal = { inTimeMs: 100, inTimeShare: 99, firstTokenP50Ms: 50 }

interface Instance {
  name: string
  url: string
  pid: number
  process: ReturnType<typeof Bun.spawn>
  stdout(): string
  stderr(): string
}

async function until<T>(check: () => T | undefined | false | Promise<T | undefined | false>, ms: number): Promise<T> {
  const deadline = performance.now() + ms
  for (;;) {
    const value = await check()
    if (value) return value
    if (performance.now() > deadline) throw new Error('condition not met in time')
    await Bun.sleep(2)
  }
}

async function startInstance(name: string, env: Record<string, string>): Promise<Instance> {
  const child = Bun.spawn(['bun', 'src/index.ts'], {
    cwd: join(import.meta.dir, '..'),
    env: { ...process.env, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let out = ''
  let err = ''
  // Both pipes are read for the process's whole life: a full pipe would block the server at its next line.
  void (async () => {
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) out += chunk
  })()
  void (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) err = (err + chunk).slice(-200_000)
  })()
  const port = await until(() => {
    if (child.exitCode !== null) throw new Error(`${name} exited before listening: ${err.slice(-2000)}`)
    const match = err.match(/"msg":"listening","port":(\d+)/)
    return match ? Number(match[1]) : undefined
  }, 60_000)
  return { name, url: `http://127.0.0.1:${port}`, pid: child.pid, process: child, stdout: () => out, stderr: () => err }
}

async function stopInstance(instance: Instance): Promise<void> {
  instance.process.kill('SIGKILL')
  await instance.process.exited
}

let headers: Record<string, string> = {}

async function send(instance: Instance, text: string): Promise<{ threadId: string; messageId: string }> {
  const response = await fetch(`${instance.url}/api/v1/threads`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ text }),
  })
  if (response.status !== 201) throw new Error(`POST on ${instance.name}: ${response.status} ${await response.text()}`)
  const body = (await response.json()) as { thread_id: string; message_id: string }
  return { threadId: body.thread_id, messageId: body.message_id }
}

/** One SSE stream, read with a real parser: when each token event arrived, by its ID (the text's length then). */
interface Reading {
  ids: number[]
  times: number[]
  end: 'done' | 'error' | 'closed' | null
  opened: Promise<void>
  finished: Promise<void>
}

function emptyReading(): Reading {
  return { ids: [], times: [], end: null, opened: Promise.resolve(), finished: Promise.resolve() }
}

function read(instance: Instance, answer: { threadId: string; messageId: string }, onToken?: () => void): Reading {
  const reading = emptyReading()
  let now = 0
  const parser = createParser({
    onEvent(event) {
      if (event.event === 'token') {
        reading.ids.push(Number(event.id))
        reading.times.push(now)
        onToken?.()
      } else if (event.event === 'done' || event.event === 'error') reading.end ??= event.event
    },
  })
  const path = `/api/v1/threads/${answer.threadId}/messages/${answer.messageId}/response/stream`
  const response = fetch(`${instance.url}${path}`, { headers })
  reading.opened = response.then((r) => {
    if (r.status !== 200) throw new Error(`stream on ${instance.name}: ${r.status}`)
  })
  reading.finished = (async () => {
    const body = (await response).body
    if (!body) return
    const decoder = new TextDecoder()
    for await (const chunk of body) {
      // The time a chunk reached this process, before any parsing: what a client would see.
      now = performance.now()
      parser.feed(decoder.decode(chunk, { stream: true }))
    }
    reading.end ??= 'closed'
  })()
  return reading
}

/**
 * For every token of `reference` (by the text length its event ends at) received at or after `from`, how much later
 * `other` had it: the first of `other`'s events reaching at least that far. Token boundaries may differ (B's streams
 * get what A published in one chunk as one event); a token `other` never got counts as Infinity.
 */
function delays(reference: Reading, other: Reading, from: number, out: number[]): void {
  let j = 0
  for (let i = 0; i < reference.ids.length; i++) {
    const at = reference.times[i] as number
    const id = reference.ids[i] as number
    while (j < other.ids.length && (other.ids[j] as number) < id) j++
    if (at < from) continue
    out.push(j < other.ids.length ? (other.times[j] as number) - at : Number.POSITIVE_INFINITY)
  }
}

function words(n: number, tag: string): string {
  return Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ')
}

function summary(values: number[]): { count: number; inTime: number; p50: number; p99: number; max: number } {
  const inTime = values.filter((value) => value <= goal.inTimeMs).length
  return {
    count: values.length,
    inTime: values.length === 0 ? 0 : (100 * inTime) / values.length,
    p50: percentile(values, 50),
    p99: percentile(values, 99),
    max: values.reduce((a, b) => Math.max(a, b), 0),
  }
}

const ms = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(1)} ms` : 'never')
const uptime = (): string =>
  `${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(', ')} (load averages, ${cpus().length} cores)`

// ---------------------------------------------------------------------------------------------------------------

const loadBefore = uptime()
console.log(`load before: ${loadBefore}`)
const cluster = await startPostgres()
await cluster.admin('create database bench')
const uploads = mkdtempSync(join(tmpdir(), 'threadhouse-instances-'))
const env: Record<string, string> = {
  DATABASE_URL: cluster.url('bench'),
  UPLOADS_DIR: uploads,
  PORT: '0',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'info',
  LLM_PROVIDER: 'echo',
  ECHO_TOKEN_DELAY_MS: String(settings.tokenDelayMs),
  // Every answer of scenario 1 runs at once on A, with no backlog for B to take over.
  GENERATION_CONCURRENCY: String(Math.max(8, settings.answers)),
  // One user holds every stream and makes every request: the per-user and per-token limits would refuse them.
  STREAM_LIMIT_PER_USER: '0',
  RATE_LIMIT_API_PER_MINUTE: '0',
  RATE_LIMIT_IP_PER_MINUTE: '0',
  SHUTDOWN_GRACE_MS: '0',
  ADMIN_EMAIL: 'owner@example.com',
  ADMIN_PASSWORD: 'a long enough password',
}
let a = await startInstance('A', env)
const token = await until(() => a.stdout().match(/^thp_\S+$/m)?.[0], 60_000)
const b = await startInstance('B', env)
headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
const cleanup = async (): Promise<void> => {
  await Promise.all([stopInstance(a), stopInstance(b)])
  await cluster.stop()
  rmSync(uploads, { recursive: true, force: true })
}
const results: string[] = []

type Summary = ReturnType<typeof summary>

interface StreamsRun {
  streams: number
  openMs: number
  seconds: number
  ended: number
  events: number
  cpu: { a: number; b: number; client: number }
  /** Seconds each process was ready to run but waited for a CPU. */
  waited: { a: number; b: number; client: number }
  /** Answers each instance took from the shared queue during the run (not claimed by A within a quarter lease). */
  taken: { a: number; b: number }
  /** Index and table scans of answer_chunks: the followers' catch-up reads (publishing writes do not count). */
  reads: number
  held: Summary
  reference: Summary
  notified: Summary
  served: Summary
}

/**
 * Scenario 1 once: new answers generated on A, two reference streams each on A, then `settings.streams` streams on
 * `holder`, read to their end. Each answer's first reference stream is the clock the others are measured against.
 */
/**
 * Seconds a process's main thread (its event loop, which writes every token) has spent runnable but waiting for a
 * CPU (the second field of its schedstat): on a machine shared with other work, time a server was ready to send
 * tokens and could not.
 */
function runQueueSeconds(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e9
}

/** Answers an instance has taken from the shared queue so far, by its 'took over unfinished answers' lines. */
function takenOver(instance: Instance): number {
  let taken = 0
  for (const line of instance.stderr().split('\n')) {
    if (!line.includes('"msg":"took over unfinished answers"')) continue
    try {
      taken += Number((JSON.parse(line) as { requeued?: number }).requeued ?? 0)
    } catch {
      // A line cut at the start of the kept output.
    }
  }
  return taken
}

async function chunkReads(sql: Bun.SQL): Promise<number> {
  const [row] = await sql`
    select coalesce(idx_scan, 0) + coalesce(seq_scan, 0) as scans from pg_stat_user_tables
    where relname = 'answer_chunks'`
  return Number(row?.scans ?? 0)
}

async function manyStreams(holder: Instance): Promise<StreamsRun> {
  const answers = await Promise.all(
    Array.from({ length: settings.answers }, (_, k) => send(a, words(settings.words, `${holder.name}${k}w`))),
  )
  const references = answers.map((answer) => [read(a, answer), read(a, answer)] as const)
  // A LISTEN of this process's own on the instances' channel: when each chunk's notification left PostgreSQL
  // (as this process heard it), which splits a delay into A's publishing and B's serving.
  const heard = new Map(answers.map((answer) => [answer.messageId, emptyReading()]))
  const observer = new Bun.SQL(cluster.url('bench'), { max: 1 })
  await observer.listen('threadhouse_answers', (payload) => {
    const event = JSON.parse(payload) as { kind: string; messageId: string; end: number }
    const reading = event.kind === 'chunk' ? heard.get(event.messageId) : undefined
    reading?.ids.push(event.end)
    reading?.times.push(performance.now())
  })
  const held: Reading[][] = answers.map(() => [])
  const takenBefore = { a: takenOver(a), b: takenOver(b) }
  const readsBefore = await chunkReads(observer)
  const cpuBefore = { a: cpuSeconds(a.pid), b: cpuSeconds(b.pid), client: process.cpuUsage() }
  const waitBefore = { a: runQueueSeconds(a.pid), b: runQueueSeconds(b.pid), client: runQueueSeconds(process.pid) }
  const openedAt = performance.now()
  const batch = 100
  for (let from = 0; from < settings.streams; from += batch) {
    const opening: Promise<void>[] = []
    for (let index = from; index < Math.min(settings.streams, from + batch); index++) {
      const k = index % answers.length
      const reading = read(holder, answers[k] as (typeof answers)[number])
      ;(held[k] as Reading[]).push(reading)
      opening.push(reading.opened)
    }
    await Promise.all(opening)
  }
  const openMs = performance.now() - openedAt
  const windowFrom = performance.now() + warmUpMs
  await Promise.all([...references.flat(), ...held.flat()].map((reading) => reading.finished))
  const windowTo = performance.now()
  const used = process.cpuUsage(cpuBefore.client)
  const cpu = {
    a: cpuSeconds(a.pid) - cpuBefore.a,
    b: cpuSeconds(b.pid) - cpuBefore.b,
    client: (used.user + used.system) / 1e6,
  }
  const waited = {
    a: runQueueSeconds(a.pid) - waitBefore.a,
    b: runQueueSeconds(b.pid) - waitBefore.b,
    client: runQueueSeconds(process.pid) - waitBefore.client,
  }
  // The statistics collector writes its counts a moment after the reads.
  await Bun.sleep(1500)
  const reads = (await chunkReads(observer)) - readsBefore
  await observer.close()
  const found = { held: [] as number[], reference: [] as number[], notified: [] as number[], served: [] as number[] }
  for (const [k, [clock, second]] of references.entries()) {
    delays(clock, second, windowFrom, found.reference)
    const notified = heard.get((answers[k] as (typeof answers)[number]).messageId) as Reading
    delays(clock, notified, windowFrom, found.notified)
    for (const reading of held[k] as Reading[]) {
      delays(clock, reading, windowFrom, found.held)
      delays(notified, reading, windowFrom, found.served)
    }
  }
  return {
    streams: settings.streams,
    openMs,
    seconds: (windowTo - windowFrom) / 1000,
    ended: held.flat().filter((reading) => reading.end === 'done').length,
    events: held.flat().reduce((sum, reading) => sum + reading.ids.length, 0),
    cpu,
    waited,
    reads,
    taken: { a: takenOver(a) - takenBefore.a, b: takenOver(b) - takenBefore.b },
    held: summary(found.held),
    reference: summary(found.reference),
    notified: summary(found.notified),
    served: summary(found.served),
  }
}

try {
  // 1. Many streams for answers generated on A, held on B, then (the same-run baseline) the same streams on A.
  {
    const onB = await manyStreams(b)
    const onA = await manyStreams(a)
    const line = (name: string, s: Summary): string =>
      `| ${name} | ${s.count} | ${s.inTime.toFixed(2)}% | ${ms(s.p50)} | ${ms(s.p99)} | ${ms(s.max)} |`
    const notes = (name: string, run: StreamsRun): string =>
      `${name}: ${run.streams} streams open in ${run.openMs.toFixed(0)} ms, ${run.ended} ended with \`done\`, ` +
      `window ${run.seconds.toFixed(1)} s; CPU from the first stream's opening to the last one's end: A ` +
      `${run.cpu.a.toFixed(1)} s, B ${run.cpu.b.toFixed(1)} s, this client ${run.cpu.client.toFixed(1)} s ` +
      `(${run.events} token events sent to the held streams); main thread ready but waiting for a CPU: A ` +
      `${run.waited.a.toFixed(1)} s, B ${run.waited.b.toFixed(1)} s, this client ${run.waited.client.toFixed(1)} s; ` +
      `${run.reads} reads of answer_chunks; answers taken from the shared queue by B: ${run.taken.b} (by A: ` +
      `${run.taken.a}).`
    results.push(
      `## 1. ${settings.streams} streams for ${settings.answers} answers generated on A`,
      '',
      `${settings.answers} answers of about ${settings.words + 5} tokens, one every ${settings.tokenDelayMs} ms, all ` +
        `generated at once on A; ${settings.streams} streams spread evenly over them, and two reference ` +
        `streams per answer on A opened first. Tokens counted from ${warmUpMs} ms after the last stream opened. ` +
        "A token's delay: when a held stream had it, minus when the answer's first reference stream (on A) had it; " +
        'the second reference stream, measured the same way, is what the client alone adds. The run is made ' +
        'twice, the streams held on B (across instances) and then on A (one instance, the baseline). The profile ' +
        "rows split B's delay at a LISTEN of this client's own: when it heard each chunk's notification.",
      '',
      '| streams | tokens | within 100 ms | p50 | p99 | max |',
      '| --- | --- | --- | --- | --- | --- |',
      line(`${settings.streams} on B (across instances)`, onB.held),
      line('profile: notification heard, after A', onB.notified),
      line("profile: B's streams, after the notification", onB.served),
      line(`${settings.streams} on A (baseline: one instance)`, onA.held),
      line(`client alone: A's second reference stream (${settings.answers})`, onB.reference),
      '',
      `- ${notes('On B', onB)}`,
      `- ${notes('On A', onA)}`,
      '',
      `Goal: ≥ ${goal.inTimeShare}% within ${goal.inTimeMs} ms across instances: ` +
        `**${onB.held.inTime >= goal.inTimeShare ? 'met' : 'not met'}** (one instance, same run: ` +
        `${onA.held.inTime.toFixed(2)}%).`,
      '',
    )
    console.log(results.slice(-16).join('\n'))
  }

  // 2. First token across instances, one answer at a time, turns alternating between reading on B and on A.
  {
    const across: number[] = []
    const alone: number[] = []
    for (let i = 0; i < settings.firstTokens * 2; i++) {
      const reader = i % 2 === 0 ? b : a
      const started = performance.now()
      let first = 0
      const answer = await send(a, `first token ${i}`)
      const reading = read(reader, answer, () => {
        first ||= performance.now()
      })
      await reading.finished
      if (!first || reading.end !== 'done') throw new Error(`answer ${i} read on ${reader.name} ended ${reading.end}`)
      ;(reader === b ? across : alone).push(first - started)
    }
    const row = (name: string, values: number[]): string =>
      `| ${name} | ${values.length} | ${ms(percentile(values, 50))} | ${ms(percentile(values, 99))} |`
    const p50 = percentile(across, 50)
    results.push(
      '## 2. First token across instances',
      '',
      `From sending the POST to A until the first \`token\` event of the answer's stream, opened as soon as the ` +
        `POST answered; one answer at a time, turns alternating between a stream on B and one on A. The echo ` +
        `responder waits ${settings.tokenDelayMs} ms before its first token: no reading can be shorter.`,
      '',
      '| stream on | answers | p50 | p99 |',
      '| --- | --- | --- | --- |',
      row('B (across)', across),
      row('A (baseline)', alone),
      '',
      `Goal: p50 ≤ ${goal.firstTokenP50Ms} ms on loopback: **${p50 <= goal.firstTokenP50Ms ? 'met' : 'not met'}** ` +
        `(${ms(p50 - percentile(alone, 50))} more than on A alone at p50).`,
      '',
    )
    console.log(results.slice(-10).join('\n'))
  }

  // 3. Takeover after SIGKILL: a fresh A each time generates a long answer, B streams it; A is killed once B has
  // had a few tokens. Measured from the kill: B's claim (seen in the table), B's stream's first token past what it
  // had (the answer is generated again from its start, and the stream skips what it already has), and its end.
  {
    const sql = new Bun.SQL(cluster.url('bench'), { max: 1 })
    const rows: string[] = []
    try {
      for (let rep = 0; rep < settings.takeovers; rep++) {
        await stopInstance(a)
        a = await startInstance('A', env)
        const answer = await send(a, words(150, `k${rep}w`))
        let tokens = 0
        let killedAt = 0
        let idAtKill = 0
        let firstNew = 0
        const reading = read(b, answer, () => {
          tokens++
          if (killedAt && !firstNew && (reading.ids.at(-1) as number) > idAtKill) firstNew = performance.now()
        })
        await until(() => tokens >= 10, 30_000)
        idAtKill = reading.ids.at(-1) as number
        killedAt = performance.now()
        a.process.kill('SIGKILL')
        const holder = `:${a.pid}:`
        let claimedAt = 0
        const claimed = until(async () => {
          const [row] = await sql`select leased_by from generations where message_id = ${answer.messageId}`
          const by = row?.leased_by as string | null
          if (!by || by.includes(holder)) return undefined
          claimedAt = performance.now()
          return true
        }, 60_000)
        await reading.finished
        await claimed
        const doneAt = performance.now()
        const took = b.stderr().includes('took over unfinished answers')
        rows.push(
          `| ${rep + 1} | ${idAtKill} | ${ms(claimedAt - killedAt)} | ${ms(firstNew - killedAt)} | ` +
            `${ms(doneAt - killedAt)} | ${reading.end}${took ? '' : ' (no takeover logged)'} |`,
        )
        console.log(rows.at(-1))
      }
    } finally {
      await sql.close()
    }
    results.push(
      '## 3. Takeover after SIGKILL',
      '',
      `GENERATION_LEASE_MS at its default, 6000 ms; leases are renewed, and abandoned ones looked for, every ` +
        `1500 ms. A fresh A generates an answer of about 155 tokens while B streams it; A is SIGKILLed once B has ` +
        `had 10 tokens. Times from the kill.`,
      '',
      '| run | characters B had | B claims it | first new token on B | stream ends | ended with |',
      '| --- | --- | --- | --- | --- | --- |',
      ...rows,
      '',
    )
  }
} finally {
  await cleanup()
}

const loadAfter = uptime()
const path = join(import.meta.dir, 'results', 'instances.md')
const marker = '<!-- notes: kept when the benchmark writes this file again -->'
const kept = existsSync(path) ? (readFileSync(path, 'utf8').split(marker)[1] ?? '') : '\n'
const header = [
  '# Several instances: latest run',
  '',
  `Written by \`bun run bench:instances\` on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC ` +
    `(Bun ${Bun.version}). Machine load before: ${loadBefore}; after: ${loadAfter}. PostgreSQL is a throwaway ` +
    'cluster with durability off, both instances and this client on the same machine, over loopback.',
  '',
]
console.log(`load after: ${loadAfter}`)
// A run with other settings is a probe (its numbers are printed above): the recorded results stay the defaults'.
const probe = Object.keys(process.env).some((name) => name.startsWith('INSTANCES_'))
if (probe) console.log(`not written to ${path}: INSTANCES_* settings differ from the defaults`)
else {
  writeFileSync(path, `${[...header, ...results].join('\n')}\n${marker}${kept}`)
  console.log(`written to ${path}`)
}
