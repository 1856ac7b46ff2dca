// The outbound rule's guarded fetch over real HTTP: a loopback upstream (Bun.serve on port 0) records what reaches it.
// Non-public addresses are refused unless WEBHOOKS_ALLOW_PRIVATE_NETWORKS' switch is on (loopback included, so every
// request meant to arrive runs with it on, names answered by a resolver the test controls); no redirect is
// followed; bodies, time and the caller's abort bound every request; only the caller's headers are sent.
import { expect, test } from 'bun:test'
import { OutboundRefused, type Resolver } from '../src/shared/outbound/addresses'
import { guardedFetch, type OutboundRules } from '../src/shared/outbound/guarded-fetch'
import { until } from './support/helpers'

interface Arrival {
  path: string
  headers: Record<string, string>
  aborted: boolean
}

/** A loopback server answering by path as `answer` says, recording each request as it arrives. */
function upstream(answer: (path: string) => Response | Promise<Response>) {
  const received: Arrival[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      const arrival = {
        path: new URL(request.url).pathname,
        headers: Object.fromEntries(request.headers),
        aborted: false,
      }
      request.signal.addEventListener('abort', () => {
        arrival.aborted = true
      })
      received.push(arrival)
      return answer(arrival.path)
    },
  })
  return {
    port: server.port ?? 0,
    received,
    [Symbol.asyncDispose]: () => server.stop(true),
  }
}

/** The error `work` rejects with; the test fails if it resolves. */
function failureOf(work: Promise<unknown>): Promise<unknown> {
  return work.then(
    () => {
      throw new Error('expected the request to fail')
    },
    (error: unknown) => error,
  )
}

const rules: OutboundRules = {
  allowPrivateNetworks: true,
  timeoutMs: 60_000,
  maxResponseBytes: 1000,
  userAgent: 'Threadhouse-Test/1',
}

/** Every name answers the loopback address, so a name reaches the upstream only with the switch on. */
const toLoopback: Resolver = async () => ['127.0.0.1']

test('private addresses, written or resolved, are refused unless the switch is on; loopback only with it', async () => {
  await using up = upstream(() => new Response('hello'))
  const lookups: string[] = []
  const resolve: Resolver = async (name) => {
    lookups.push(name)
    return name === 'internal.example' ? ['10.0.0.1'] : ['127.0.0.1']
  }
  const strict = guardedFetch({ ...rules, allowPrivateNetworks: false, resolve })
  for (const url of [
    'http://10.0.0.1/',
    'http://internal.example/',
    `http://127.0.0.1:${up.port}/`,
    `http://[::ffff:127.0.0.1]:${up.port}/`,
    `http://upstream.example:${up.port}/`,
  ]) {
    const failure = await failureOf(strict(url))
    expect(failure).toBeInstanceOf(OutboundRefused)
  }
  expect(String(await failureOf(strict('http://internal.example/')))).toContain(
    'internal.example resolves to 10.0.0.1, a non-public address',
  )
  expect(lookups).toEqual(['internal.example', 'upstream.example', 'internal.example'])
  expect(up.received).toEqual([])
  // With the switch on, the name's judged address is connected to, on every call looked up again, the name kept in
  // the Host header. (10.0.0.1 itself is not tried: a test does not send to a network it does not own.)
  lookups.length = 0
  const open = guardedFetch({ ...rules, resolve })
  for (const [host, path] of [
    ['127.0.0.1', '/a'],
    ['upstream.example', '/b'],
    ['upstream.example', '/c'],
  ]) {
    expect(await (await open(`http://${host}:${up.port}${path}`)).text()).toBe('hello')
  }
  expect(lookups).toEqual(['upstream.example', 'upstream.example'])
  expect(up.received.map((arrival) => [arrival.path, arrival.headers.host])).toEqual([
    ['/a', `127.0.0.1:${up.port}`],
    ['/b', `upstream.example:${up.port}`],
    ['/c', `upstream.example:${up.port}`],
  ])
})

test('only http(s) URLs without credentials are fetched', async () => {
  await using up = upstream(() => new Response('hello'))
  const fetcher = guardedFetch(rules)
  for (const url of ['file:///etc/passwd', `http://user:secret@127.0.0.1:${up.port}/`, 'not a url']) {
    expect(await failureOf(fetcher(url))).toBeInstanceOf(OutboundRefused)
  }
  expect(up.received).toEqual([])
})

test('a redirect is refused, and its target gets no request', async () => {
  await using up = upstream((path) =>
    path === '/landing'
      ? new Response('landed')
      : new Response(null, { status: Number(path.slice(1)), headers: { location: '/landing' } }),
  )
  const fetcher = guardedFetch(rules)
  for (const status of [301, 302, 303, 307, 308]) {
    const failure = await failureOf(fetcher(`http://127.0.0.1:${up.port}/${status}`))
    expect(failure).toBeInstanceOf(OutboundRefused)
    expect(String(failure)).toContain(`127.0.0.1:${up.port} answered HTTP ${status}: redirects are not followed`)
  }
  expect(up.received.map((arrival) => arrival.path)).toEqual(['/301', '/302', '/303', '/307', '/308'])
})

test('a body past the bound fails: refused at once when its length says so, else as it is read', async () => {
  const chunks = (count: number) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < count; i++) controller.enqueue(new Uint8Array(250))
        controller.close()
      },
    })
  await using up = upstream((path) => {
    if (path === '/declared') return new Response(new Uint8Array(1001))
    if (path === '/gzip') {
      const packed = Bun.gzipSync(new Uint8Array(100_000))
      return new Response(packed, { headers: { 'content-encoding': 'gzip', 'content-length': String(packed.length) } })
    }
    // Streamed without a content-length: 4 chunks make exactly the bound, 5 one chunk past it.
    return new Response(chunks(path === '/exact' ? 4 : 5))
  })
  const fetcher = guardedFetch(rules)
  const declared = await failureOf(fetcher(`http://127.0.0.1:${up.port}/declared`))
  expect(declared).toBeInstanceOf(OutboundRefused)
  expect(String(declared)).toContain(`127.0.0.1:${up.port} answered with more than 1000 bytes`)
  for (const path of ['/streamed', '/gzip']) {
    const response = await fetcher(`http://127.0.0.1:${up.port}${path}`)
    expect(Number(response.headers.get('content-length'))).toBeLessThan(1000)
    expect(await failureOf(response.arrayBuffer())).toBeInstanceOf(OutboundRefused)
  }
  expect((await (await fetcher(`http://127.0.0.1:${up.port}/exact`)).arrayBuffer()).byteLength).toBe(1000)
})

test('a server that never answers, or stops halfway, or a lookup that never ends, meets the timeout', async () => {
  await using up = upstream((path) =>
    path === '/halfway'
      ? new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode('half'))
            },
          }),
        )
      : new Promise<Response>(() => {}),
  )
  const fetcher = guardedFetch({ ...rules, timeoutMs: 200 })
  expect(await failureOf(fetcher(`http://127.0.0.1:${up.port}/silent`))).toMatchObject({ name: 'TimeoutError' })
  const halfway = await fetcher(`http://127.0.0.1:${up.port}/halfway`)
  expect(await failureOf(halfway.text())).toMatchObject({ name: 'TimeoutError' })
  await until(() => up.received.every((arrival) => arrival.aborted))
  const stuck = guardedFetch({ ...rules, timeoutMs: 200, resolve: () => new Promise<string[]>(() => {}) })
  expect(await failureOf(stuck(`http://upstream.example:${up.port}/`))).toMatchObject({ name: 'TimeoutError' })
  expect(up.received.map((arrival) => arrival.path)).toEqual(['/silent', '/halfway'])
})

test('the caller’s abort ends the request, during the lookup or after it', async () => {
  const resolve: Resolver = (name) => (name === 'slow.example' ? new Promise(() => {}) : toLoopback(name))
  await using up = upstream(() => new Promise<Response>(() => {}))
  const fetcher = guardedFetch({ ...rules, resolve })
  const lookingUp = new AbortController()
  const early = failureOf(fetcher(`http://slow.example:${up.port}/`, { signal: lookingUp.signal }))
  lookingUp.abort()
  expect(await early).toMatchObject({ name: 'AbortError' })
  const waiting = new AbortController()
  const late = failureOf(fetcher(`http://upstream.example:${up.port}/`, { signal: waiting.signal }))
  await until(() => up.received.length === 1)
  waiting.abort()
  expect(await late).toMatchObject({ name: 'AbortError' })
  await until(() => up.received[0]?.aborted)
})

test('only the caller’s headers are sent, with the rules’ user agent; a cookie set is never sent back', async () => {
  await using up = upstream(() => new Response('hello', { headers: { 'set-cookie': 'session=stolen; Path=/' } }))
  const fetcher = guardedFetch({ ...rules, resolve: toLoopback })
  const url = `http://upstream.example:${up.port}/mcp`
  for (let i = 0; i < 2; i++) {
    await (await fetcher(url, { method: 'POST', headers: { authorization: 'Bearer for-upstream' }, body: '{}' })).text()
  }
  for (const arrival of up.received) {
    expect(arrival.headers).toMatchObject({
      authorization: 'Bearer for-upstream',
      'user-agent': 'Threadhouse-Test/1',
      host: `upstream.example:${up.port}`,
    })
    expect(arrival.headers.cookie).toBeUndefined()
  }
  expect(up.received).toHaveLength(2)
})
