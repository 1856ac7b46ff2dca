// The web layer's rules, held for every route the app has rather than for the routes known today: every route that
// changes something with a session cookie passes the one trusted-form guard, every address a form posts to answers
// a page (or a redirect to one) when it is opened or reloaded, and every page failure, an unknown web address among
// them, is the one HTML error page while the API keeps its JSON.
import { expect, test } from 'bun:test'
import { createEndpoint } from '../src/webhooks/service'
import { testEvent, testOrigin } from './support/audit'
import { type Harness, harness } from './support/helpers'
import { Browser, hiddenField, settings, signedIn } from './support/oauth-helpers'
import { expectErrorPageHeaders } from './support/web-helpers'

// Tests sign in and create users, hashing passwords with argon2 on purpose: slow on a busy machine.

const writes = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * Routes that a session cookie never opens, so a forged cross-site form cannot use one: the API and MCP take a
 * bearer token, and the OAuth endpoints authenticate the client itself. The first test holds them to that.
 */
const cookieless = [/^\/api\//, /^\/mcp$/, /^\/oauth\/(token|token\/revoke|register)$/]

function isCookieless(path: string): boolean {
  return cookieless.some((pattern) => pattern.test(path))
}

interface World {
  h: Harness
  owner: Awaited<ReturnType<typeof signedIn>>
  /** A value for each path parameter: real rows where the routes have them. */
  params: Record<string, string>
}

async function world(h: Harness): Promise<World> {
  const owner = await signedIn(h, { role: 'owner' })
  const started = await h.call('POST', '/api/v1/threads', { token: owner.user.token, body: { text: 'Hello' } })
  await h.app.decorator.engine.idle()
  const member = await h.user()
  const client = (
    await settings(owner.browser, 'POST', '/oauth-clients', {
      client_name: 'Reports',
      redirect_uris: ['https://reports.example/callback'],
    })
  ).body
  const share = await h.call('POST', `/api/v1/threads/${started.body.thread_id}/shares`, {
    token: owner.user.token,
    body: {},
  })
  const organization = await h.store.users.findByEmail(owner.user.email)
  const endpoint = await createEndpoint(
    h.store.webhooks,
    {
      organizationId: organization?.organizationId ?? 0,
      createdBy: null,
      url: 'https://hooks.example/in',
      events: null,
    },
    { allowPrivateNetworks: false },
    h.clock.now(),
    testOrigin,
  )
  // An MCP server with a tool, for Administration → MCP servers' routes.
  const server = await h.store.mcpServers.add(
    {
      id: crypto.randomUUID(),
      organizationId: organization?.organizationId ?? 0,
      name: 'docs',
      url: 'https://mcp.example/mcp',
      auth: 'none',
      headersSealed: null,
      headerNames: [],
      trusted: false,
      createdBy: null,
      now: h.clock.now(),
    },
    () => testEvent('mcp_server.added'),
  )
  if (!server) throw new Error('no MCP server')
  await h.store.mcpServers.replaceTools(
    server.id,
    [
      {
        name: 'search',
        title: null,
        description: 'Searches',
        inputSchema: { type: 'object' },
        outputSchema: null,
        annotations: null,
        problem: null,
      },
    ],
    true,
    h.clock.now(),
  )
  return {
    h,
    owner,
    params: {
      serverId: server.id,
      toolName: 'search',
      threadId: started.body.thread_id,
      messageId: started.body.message_id,
      action: 'update',
      clientId: client.client_id,
      sub: member.sub,
      id: '1',
      endpointId: endpoint.endpoint.id,
      shareId: share.body.id,
    },
  }
}

function concrete(path: string, params: Record<string, string>): string {
  return path.replace(/:(\w+)/g, (_, name: string) => {
    const value = params[name]
    if (value === undefined) throw new Error(`no value for :${name} in ${path}`)
    return value
  })
}

/** Every route that changes something, as the app's own route table lists it. */
function writeRoutes(h: Harness): { method: string; path: string }[] {
  const routes = h.app.routes.filter((route) => writes.has(route.method))
  expect(routes.length).toBeGreaterThan(20)
  return routes.map((route) => ({ method: route.method, path: route.path }))
}

/** Whether the answer is the guard's refusal: the error page's, or the settings API's JSON. */
async function refusalOf(response: Response): Promise<string> {
  const type = response.headers.get('content-type') ?? ''
  const text = await response.text()
  if (type.startsWith('application/json')) return (JSON.parse(text) as { error: string }).error
  return text.includes('<h1 id="message-title">Form refused</h1>') ? 'form refused' : text.slice(0, 200)
}

test('every route a session cookie can change something through refuses a request without its CSRF token', async () => {
  await using h = await harness()
  const { owner, params } = await world(h)
  const checked: string[] = []
  for (const route of writeRoutes(h)) {
    const path = concrete(route.path, params)
    const body = new URLSearchParams({ text: 'forged', name: 'forged', decision: 'approve', role: 'member' })
    const response = await owner.browser.request(route.method, path, {
      body,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    if (isCookieless(route.path)) {
      // The cookie alone opens nothing there.
      expect({ route: `${route.method} ${route.path}`, ok: response.ok }).toEqual({
        route: `${route.method} ${route.path}`,
        ok: false,
      })
      continue
    }
    const refusal = { route: `${route.method} ${route.path}`, status: response.status, why: await refusalOf(response) }
    expect(refusal).toEqual({
      route: refusal.route,
      status: 403,
      why: route.path.startsWith('/settings/api/') ? 'csrf_failed' : 'form refused',
    })
    checked.push(refusal.route)
  }
  // The web's forms, the sign-in and sign-out forms, consent and the settings API are all among them.
  expect(checked).toEqual(
    expect.arrayContaining([
      'POST /login',
      'POST /logout',
      'POST /threads',
      'POST /oauth/authorize',
      'POST /settings/tokens',
      'POST /admin/members',
      'POST /admin/mcp-servers',
      'POST /admin/mcp-servers/:serverId/tools/:toolName',
      'DELETE /settings/api/oauth-clients/:clientId',
    ]),
  )
})

test('a request from another site is refused even with the right token', async () => {
  await using h = await harness()
  const { owner, params } = await world(h)
  const csrf = hiddenField(await (await owner.browser.get('/settings/password')).text(), 'csrf')
  const visitor = Browser.inProcess(h)
  const signInToken = hiddenField(await (await visitor.get('/login')).text(), 'csrf')
  for (const route of writeRoutes(h)) {
    if (isCookieless(route.path)) continue
    const browser = route.path === '/login' ? visitor : owner.browser
    const token = route.path === '/login' ? signInToken : csrf
    const response = await browser.request(route.method, concrete(route.path, params), {
      body: new URLSearchParams({ csrf: token, text: 'forged', decision: 'approve' }),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-csrf-token': token,
        origin: 'https://evil.example',
        'sec-fetch-site': 'cross-site',
      },
    })
    // Refused as a forgery, not for any other reason a 403 may have (a role, a password to change).
    const refusal = { route: `${route.method} ${route.path}`, status: response.status, why: await refusalOf(response) }
    expect(refusal).toEqual({
      route: refusal.route,
      status: 403,
      why: route.path.startsWith('/settings/api/') ? 'csrf_failed' : 'form refused',
    })
  }
})

/** GETs the address and follows redirects on this origin: what a reload or an opened link shows in the end. */
async function open(browser: Browser, path: string): Promise<{ first: number; last: Response; trail: string[] }> {
  const trail = [path]
  let response = await browser.get(path)
  const first = response.status
  while (response.status === 303 || response.status === 302) {
    const location = response.headers.get('location') ?? ''
    expect(location.startsWith('/')).toBe(true)
    expect(trail.length).toBeLessThan(5)
    trail.push(location)
    response = await browser.get(location)
  }
  return { first, last: response, trail }
}

test('every address a form posts to answers a page on reload, never JSON', async () => {
  await using h = await harness()
  const { owner, params } = await world(h)
  const formRoutes = writeRoutes(h).filter(
    (route) => route.method === 'POST' && !isCookieless(route.path) && !route.path.startsWith('/settings/api/'),
  )
  expect(formRoutes.length).toBeGreaterThan(15)
  for (const route of formRoutes) {
    const path = concrete(route.path, params)
    const { first, last, trail } = await open(owner.browser, path)
    // A page, whatever it says (consent without its query is the page explaining the request is broken).
    expect({ path, known: first !== 404 && first !== 405, type: last.headers.get('content-type') }).toEqual({
      path,
      known: true,
      type: 'text/html; charset=utf-8',
    })
    await last.text()
    // The landing page is where the form was: the thread for a thread's forms, the confirmation for sharing one,
    // the edit page for an edit (the form without JavaScript).
    const ownPage = ['/threads/:threadId/share', '/threads/:threadId/messages/:messageId/edit']
    const formPage = ownPage.includes(route.path) ? path : `/threads/${params.threadId}`
    if (route.path.startsWith('/threads/')) expect(trail.at(-1)).toBe(formPage)
  }
})

test('the composer’s landing address, reloaded after a refused message, leads back to the thread', async () => {
  await using h = await harness()
  const { owner, params } = await world(h)
  const path = `/threads/${params.threadId}/messages`
  const csrf = hiddenField(await (await owner.browser.get(`/threads/${params.threadId}`)).text(), 'csrf')
  const form = new FormData()
  form.set('csrf', csrf)
  form.set('text', '   ')
  const refused = await owner.browser.request('POST', path, { body: form })
  expect({ status: refused.status, type: refused.headers.get('content-type') }).toEqual({
    status: 400,
    type: 'text/html; charset=utf-8',
  })
  expect(await refused.text()).toContain('Write a message first.')
  const reload = await owner.browser.get(path)
  expect({ status: reload.status, location: reload.headers.get('location') }).toEqual({
    status: 303,
    location: `/threads/${params.threadId}`,
  })
})

test('unknown web addresses are an HTML 404 page; the API keeps its JSON 404', async () => {
  await using h = await harness()
  const { owner } = await world(h)
  const signedInMiss = await owner.browser.get('/no/such/page?x=1')
  expect(signedInMiss.status).toBe(404)
  expectErrorPageHeaders(signedInMiss)
  const html = await signedInMiss.text()
  expect(html.startsWith('<!doctype html>')).toBe(true)
  expect(html).toContain('<h1 id="message-title">Page not found</h1>')
  // Signed in: the navigation and a working sign-out form, as on every page.
  expect(html).toContain('<a href="/settings">Settings</a>')
  expect(hiddenField(html, 'csrf')).toBe(
    hiddenField(await (await owner.browser.get('/settings/password')).text(), 'csrf'),
  )

  const visitorMiss = await Browser.inProcess(h).get('/threadz')
  expect(visitorMiss.status).toBe(404)
  const visitorHtml = await visitorMiss.text()
  expect(visitorHtml).toContain('Page not found')
  expect(visitorHtml).not.toContain('action="/logout"')

  for (const path of [
    '/api/v1/nothing',
    '/settings/api/nothing',
    '/oauth/nothing',
    '/.well-known/nothing',
    '/mcp/x',
    '/healthz/x',
  ]) {
    const reply = await h.call('GET', path)
    expect({ path, status: reply.status, body: reply.body }).toEqual({
      path,
      status: 404,
      body: { error: 'not_found', message: 'No such endpoint' },
    })
  }
  // A path that only begins like one of those is a web address.
  const lookalike = await Browser.inProcess(h).get('/mcpx')
  expect({ status: lookalike.status, type: lookalike.headers.get('content-type') }).toEqual({
    status: 404,
    type: 'text/html; charset=utf-8',
  })
  // Another method on a page's address: a page too, naming what the address answers.
  const put = await owner.browser.request('PUT', '/threads')
  expect({ status: put.status, allow: put.headers.get('allow'), type: put.headers.get('content-type') }).toEqual({
    status: 405,
    allow: 'GET, HEAD, POST',
    type: 'text/html; charset=utf-8',
  })
})

test('page failures are the one error page: the thing not found, or the reason, and the way back', async () => {
  await using h = await harness()
  const { owner, params } = await world(h)
  const missing = await owner.browser.get('/threads/0190a6c4-1d5c-7000-8000-000000000000')
  expect(missing.status).toBe(404)
  expectErrorPageHeaders(missing)
  const missingHtml = await missing.text()
  expect(missingHtml).toContain('<h1 id="message-title">Thread not found</h1>')
  expect(missingHtml).toContain('<a href="/threads">')

  const csrf = hiddenField(await (await owner.browser.get(`/threads/${params.threadId}`)).text(), 'csrf')
  const tooLong = await owner.browser.postForm(`/threads/${params.threadId}/update`, { csrf, name: 'x'.repeat(501) })
  expect(tooLong.status).toBe(400)
  expectErrorPageHeaders(tooLong)
  const tooLongHtml = await tooLong.text()
  expect(tooLongHtml).toContain('A name may have at most')
  expect(tooLongHtml).toContain(`<a href="/threads/${params.threadId}">Back</a>`)

  const client = await owner.browser.get('/admin/clients/nope')
  expect(client.status).toBe(404)
  expect(await client.text()).toContain('<h1 id="message-title">OAuth client not found</h1>')

  // A visitor posting a form is sent to sign in, and comes back to the page the form was on.
  const visitor = await Browser.inProcess(h).postForm(`/threads/${params.threadId}/stop`, { csrf: 'x' })
  expect({ status: visitor.status, location: visitor.headers.get('location') }).toEqual({
    status: 303,
    location: `/login?next=${encodeURIComponent(`/threads/${params.threadId}`)}`,
  })
})

test('the site-wide assets are served once for every page, signed in or not', async () => {
  await using h = await harness()
  const visitor = Browser.inProcess(h)
  const answers = []
  for (const path of ['/assets/threadhouse.css', '/assets/copy.js', '/favicon.ico']) {
    const response = await visitor.get(path)
    answers.push({
      path,
      status: response.status,
      type: response.headers.get('content-type'),
      empty: !(await response.text()),
    })
  }
  expect(answers).toEqual([
    { path: '/assets/threadhouse.css', status: 200, type: 'text/css; charset=utf-8', empty: false },
    { path: '/assets/copy.js', status: 200, type: 'text/javascript; charset=utf-8', empty: false },
    { path: '/favicon.ico', status: 200, type: 'image/svg+xml', empty: false },
  ])
  // Each is one route in the app's table, whichever features render pages.
  const served = h.app.routes.filter((route) => route.path === '/assets/threadhouse.css' && route.method === 'GET')
  expect(served).toHaveLength(1)
})
