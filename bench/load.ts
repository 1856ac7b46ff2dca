// Driving the servers: starting them as real processes, sampling their memory and CPU from /proc,
// running wrk for the request/response scenarios, and two Bun clients for what wrk cannot do (reading
// SSE answers after a POST, and holding thousands of streams on raw sockets).
import { join } from 'node:path'

export interface Server {
  name: string
  url: string
  port: number
  pid: number
  stop(): Promise<void>
}

/** Starts `command` with `env` and waits for its `listening` log line (both servers print one). */
export async function startServer(name: string, command: string[], env: Record<string, string>): Promise<Server> {
  const child = Bun.spawn(command, {
    cwd: join(import.meta.dir, '..'),
    env: { ...process.env, ...env },
    stdout: 'ignore',
    stderr: 'pipe',
  })
  let err = ''
  const port = await new Promise<number>((resolve, reject) => {
    void (async () => {
      // Keep reading after start-up: a full pipe would block the server at its next log line.
      for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
        if (err.length < 100_000) err += chunk
        const match = err.match(/"msg":"listening","port":(\d+)/)
        if (match) resolve(Number(match[1]))
      }
      reject(new Error(`${name} exited before listening: ${err.slice(-2000)}`))
    })()
  })
  return {
    name,
    port,
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    async stop() {
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await child.exited
      clearTimeout(timer)
    },
  }
}

/**
 * Waits until the server answers /healthz within 20 ms: a scenario's requests still queued in the
 * server (a slow search, say) must not be charged to the next one.
 */
export async function settle(server: Server): Promise<void> {
  const deadline = performance.now() + 180_000
  while (performance.now() < deadline) {
    const started = performance.now()
    await fetch(`${server.url}/healthz`).then((reply) => reply.text())
    if (performance.now() - started < 20) return
    await Bun.sleep(200)
  }
}

/**
 * Resident memory of a process and its descendants: Threadhouse checks uploads in child processes, whose memory
 * is the server's as much as its own. A process that has just ended counts as nothing. Pages the processes share
 * (Bun's own code) count once per process.
 */
export function rssBytes(pid: number): number {
  const { readdirSync, readFileSync } = require('node:fs') as typeof import('node:fs')
  // Each read may find the process or one of its threads ended meanwhile, or a kernel that lists no children.
  const attempt = <T>(read: () => T, otherwise: T): T => {
    try {
      return read()
    } catch {
      return otherwise
    }
  }
  const status = attempt(() => readFileSync(`/proc/${pid}/status`, 'utf8'), '')
  const own = Number(status.match(/VmRSS:\s+(\d+) kB/)?.[1] ?? 0) * 1024
  const children = attempt(() => readdirSync(`/proc/${pid}/task`), []).flatMap((thread) =>
    attempt(() => readFileSync(`/proc/${pid}/task/${thread}/children`, 'utf8'), '')
      .split(' ')
      .filter(Boolean),
  )
  return own + children.reduce((sum, child) => sum + rssBytes(Number(child)), 0)
}

const ticksPerSecond = 100

/** User + system CPU seconds the process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = require('node:fs').readFileSync(`/proc/${pid}/stat`, 'utf8') as string
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond
}

/**
 * CPU seconds used so far by every PostgreSQL process on the machine: on a quiet machine, the benchmark's own cluster
 * (its servers, one per connection, and its background workers).
 */
export function postgresCpuSeconds(): number {
  const fs = require('node:fs') as typeof import('node:fs')
  let total = 0
  for (const pid of fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') total += cpuSeconds(Number(pid))
    } catch {
      // ended between the listing and the read
    }
  }
  return total
}

/** Samples RSS every 200 ms until stopped; returns the peak. */
export function sampleRss(pid: number): () => number {
  let peak = rssBytes(pid)
  const timer = setInterval(() => {
    peak = Math.max(peak, rssBytes(pid))
  }, 200)
  return () => {
    clearInterval(timer)
    return Math.max(peak, rssBytes(pid))
  }
}

export interface Measure {
  rps: number
  p50: number
  p99: number
  rss: number
  /** Non-2xx responses and socket errors, so a fast run of errors is never mistaken for a fast server. */
  failures: number
  requests: number
  extra?: Record<string, number>
}

export interface WrkRun {
  script: string
  path: string
  args: string[]
  seconds: number
  connections: number
}

export async function wrk(server: Server, run: WrkRun): Promise<Measure> {
  await settle(server)
  const stopRss = sampleRss(server.pid)
  const child = Bun.spawn(
    [
      'wrk',
      '-t1',
      `-c${run.connections}`,
      `-d${run.seconds}s`,
      '--timeout',
      '5s',
      '-s',
      run.script,
      `${server.url}${run.path}`,
      '--',
      ...run.args,
    ],
    { cwd: join(import.meta.dir, 'wrk'), stdout: 'pipe', stderr: 'pipe' },
  )
  const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
  await child.exited
  const rss = stopRss()
  const line = out.split('\n').find((l) => l.startsWith('{"requests"'))
  if (!line) throw new Error(`wrk printed no result: ${out}\n${err}`)
  const result = JSON.parse(line) as {
    requests: number
    duration_us: number
    p50_us: number
    p99_us: number
    errors: Record<string, number>
  }
  const failures = Object.values(result.errors).reduce((a, b) => a + b, 0)
  return {
    rps: result.requests / (result.duration_us / 1e6),
    p50: result.p50_us / 1000,
    p99: result.p99_us / 1000,
    rss,
    failures,
    requests: result.requests,
  }
}

export function percentile(values: ArrayLike<number>, p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = Float64Array.from(values).sort()
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
}

/**
 * Scenario 4: each client owns a list of threads and loops over them: POST a message, open its SSE
 * stream, read to `done`. Going round many threads keeps each conversation a realistic length (the
 * history is loaded and handed to the generator for every answer). Measures completed messages/s and
 * the time from sending the POST to the first `token` event and to `done`.
 */
export async function sendAndStream(
  server: Server,
  clients: { token: string; threadId: string }[][],
  seconds: number,
): Promise<Measure> {
  await settle(server)
  const stopRss = sampleRss(server.pid)
  const deadline = performance.now() + seconds * 1000
  const firstToken: number[] = []
  const done: number[] = []
  let failures = 0
  const text = 'Could you summarise the budget for the weekend trip and list what is still missing from the plan?'
  const decoder = new TextDecoder()
  async function loop(pairs: { token: string; threadId: string }[]): Promise<void> {
    for (let turn = 0; performance.now() < deadline; turn++) {
      const pair = pairs[turn % pairs.length] as (typeof pairs)[number]
      const headers = { authorization: `Bearer ${pair.token}`, 'content-type': 'application/json' }
      const started = performance.now()
      const sent = await fetch(`${server.url}/api/v1/threads/${pair.threadId}/messages`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ text }),
      })
      if (sent.status !== 201) {
        failures++
        await sent.text()
        await Bun.sleep(5)
        continue
      }
      const { message_id } = (await sent.json()) as { message_id: string }
      const stream = await fetch(
        `${server.url}/api/v1/threads/${pair.threadId}/messages/${message_id}/response/stream`,
        { headers },
      )
      const reader = stream.body?.getReader()
      if (!reader || stream.status !== 200) {
        failures++
        continue
      }
      let seen = ''
      let first = 0
      for (;;) {
        const { done: end, value } = await reader.read()
        if (end) break
        seen += decoder.decode(value, { stream: true })
        if (!first && seen.includes('event: token')) first = performance.now()
        if (seen.includes('event: done') || seen.includes('event: error')) break
      }
      await reader.cancel().catch(() => {})
      if (!first || !seen.includes('event: done')) {
        failures++
        continue
      }
      firstToken.push(first - started)
      done.push(performance.now() - started)
    }
  }
  const began = performance.now()
  await Promise.all(clients.map(loop))
  const elapsed = (performance.now() - began) / 1000
  return {
    rps: done.length / elapsed,
    p50: percentile(firstToken, 50),
    p99: percentile(firstToken, 99),
    rss: stopRss(),
    failures,
    requests: done.length,
    extra: { doneP50: percentile(done, 50), doneP99: percentile(done, 99) },
  }
}

export interface StreamsResult extends Measure {
  extra: {
    streams: number
    held: number
    lost: number
    tokens: number
    inTimePercent: number
    memoryPerStreamKiB: number
    cpuPerEventUs: number
  }
}

/**
 * Scenario 5: `streams` SSE connections on raw sockets, spread over the answers in `targets`, each
 * answer producing a token every `periodMs`. Over a window of `seconds` once every stream is open, it
 * counts token events, their lag (how much later than one period after the previous event of the same
 * stream each arrives), streams lost, the server's RSS growth per stream and its CPU time per event.
 */
export async function holdStreams(
  server: Server,
  targets: { token: string; threadId: string; messageId: string }[],
  streams: number,
  seconds: number,
  periodMs: number,
): Promise<StreamsResult> {
  const rssBefore = rssBytes(server.pid)
  const last = new Float64Array(streams)
  const ended = new Uint8Array(streams)
  const lags = new Float32Array(streams * Math.ceil((seconds * 1000) / periodMs + 20))
  let lagCount = 0
  let tokens = 0
  let inTime = 0
  let measuring = false
  let opened = 0
  const marker = 'event: token'
  const sockets: { end(): void }[] = []

  function onData(index: number, chunk: string): void {
    const now = performance.now()
    let events = 0
    for (let at = chunk.indexOf(marker); at >= 0; at = chunk.indexOf(marker, at + marker.length)) events++
    if (events > 0) {
      if (measuring && last[index] !== 0) {
        // The first event of a chunk carries the lag; any others in the same chunk came with it.
        for (let k = 0; k < events; k++) {
          const lag = Math.max(0, now - (last[index] as number) - periodMs * (k + 1))
          if (lagCount < lags.length) lags[lagCount++] = lag
          if (lag <= periodMs) inTime++
          tokens++
        }
      }
      last[index] = now
    }
    if (chunk.includes('event: done') || chunk.includes('event: error')) ended[index] = 1
  }

  const batch = 250
  for (let from = 0; from < streams; from += batch) {
    const opening: Promise<unknown>[] = []
    for (let index = from; index < Math.min(streams, from + batch); index++) {
      const target = targets[index % targets.length] as (typeof targets)[number]
      const request =
        `GET /api/v1/threads/${target.threadId}/messages/${target.messageId}/response/stream HTTP/1.1\r\n` +
        `Host: 127.0.0.1\r\nAuthorization: Bearer ${target.token}\r\nAccept: text/event-stream\r\n\r\n`
      opening.push(
        Bun.connect({
          hostname: '127.0.0.1',
          port: server.port,
          socket: {
            open(socket) {
              socket.write(request)
              opened++
            },
            data(_socket, data) {
              onData(index, data.toString('latin1'))
            },
            close() {
              if (!ended[index]) ended[index] = 2
            },
            error() {
              if (!ended[index]) ended[index] = 2
            },
          },
        }).then((socket) => sockets.push(socket)),
      )
    }
    await Promise.all(opening)
  }
  // Let every stream get its first (catch-up) event before the window opens.
  await Bun.sleep(Math.max(1000, periodMs * 3))
  const cpuStart = cpuSeconds(server.pid)
  const windowStart = performance.now()
  measuring = true
  await Bun.sleep(seconds * 1000)
  measuring = false
  const windowSeconds = (performance.now() - windowStart) / 1000
  const cpu = cpuSeconds(server.pid) - cpuStart
  const rssAfter = rssBytes(server.pid)
  let held = 0
  let lost = 0
  for (let i = 0; i < streams; i++) {
    if (ended[i] === 0) held++
    if (ended[i] === 2) lost++
  }
  for (const socket of sockets) socket.end()
  const lagValues = lags.subarray(0, lagCount)
  return {
    rps: tokens / windowSeconds,
    p50: percentile(lagValues, 50),
    p99: percentile(lagValues, 99),
    rss: rssAfter,
    failures: lost + (streams - opened),
    requests: tokens,
    extra: {
      streams,
      held,
      lost,
      tokens,
      inTimePercent: tokens === 0 ? 0 : (100 * inTime) / tokens,
      memoryPerStreamKiB: (rssAfter - rssBefore) / 1024 / streams,
      cpuPerEventUs: tokens === 0 ? Number.NaN : (cpu * 1e6) / tokens,
    },
  }
}
