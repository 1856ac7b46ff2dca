// @kitajs/html escapes JSX children only where a page asks (`safe`, escapeHtml). Its own scanner, xss-scan, proves
// that every page asks wherever text could come from a user or a client: a static check, it runs with the linter
// (`bun run lint`). These tests render the pages with hostile text and check the escape hatches the scanner trusts.
import { expect, test } from 'bun:test'
import { themeScript } from '../src/web/client-assets'

// Tests sign in and create users, hashing passwords with argon2 on purpose: slow on a busy machine.

// The scanner proves every dynamic child asks for escaping; rendering each settings and administration page
// with hostile text in every field and parsing the result as a browser would proves the answer: the only
// scripts are the local copy and theme scripts, no element carries an event handler, and no link or image leaves the rules.
interface Markup {
  scripts: string[]
  handlers: string[]
  urls: string[]
}

async function markupOf(html: string): Promise<Markup> {
  const found: Markup = { scripts: [], handlers: [], urls: [] }
  const rewriter = new HTMLRewriter().on('*', {
    element(element) {
      if (element.tagName === 'script') found.scripts.push(element.getAttribute('src') ?? '(inline)')
      for (const [name, value] of element.attributes) {
        if (name.startsWith('on')) found.handlers.push(`${element.tagName} ${name}`)
        if (name === 'href' || name === 'src' || name === 'action') found.urls.push(value)
      }
    },
  })
  await rewriter.transform(new Response(html)).text()
  return found
}

test('settings and administration pages render hostile values as text', async () => {
  const { TokensPage } = await import('../src/settings/views/tokens')
  const { AppsPage } = await import('../src/settings/views/apps')
  const { ClientsPage } = await import('../src/settings/views/clients')
  const { PasswordPage } = await import('../src/settings/views/password')
  const { SettingsRegistrationPage } = await import('../src/settings/views/registration')
  const { AdminClientPage, AdminClientsPage, DeleteClientPage } = await import('../src/admin/views/clients')
  const { MembersPage, RemoveMemberPage } = await import('../src/admin/views/members')
  const evil = `"'><script>alert(1)</script><img src=x onerror=alert(1)>`
  const viewer = { email: evil, csrf: 'csrf', isAdmin: true }
  const client = {
    client_id: evil,
    client_name: evil,
    owner: { id: evil, name: evil, email: evil },
    redirect_uris: [evil],
    token_endpoint_auth_method: 'client_secret_basic',
    verified: false,
    registered_via: 'open_registration' as const,
    created_at: '2026-01-01T00:00:00.000Z',
    last_used_at: null,
    scope: evil,
    grant_types: [evil],
    response_types: ['code'],
    client_uri: `https://x.example/${evil}`,
    logo_uri: `https://x.example/${evil}`,
    tos_uri: `javascript:${evil}`,
    policy_uri: evil,
  }
  const member = {
    id: 2,
    organizationId: 1,
    sub: evil,
    email: evil,
    name: evil,
    role: 'member' as const,
    createdAt: 0,
    mustChangePassword: true,
  }
  const token = { id: 1, name: evil, scopes: [], createdAt: 0, lastUsedAt: null, expiresAt: null }
  const app = {
    client_id: evil,
    client_name: evil,
    verified: false,
    scopes: [evil],
    connected_at: client.created_at,
    last_used_at: null,
  }
  const pages = [
    TokensPage({
      viewer,
      tokens: [token],
      now: 0,
      error: evil,
      notice: evil,
      form: { name: evil, scopes: [], expiresInDays: evil },
      created: { name: evil, token: evil },
    }),
    AppsPage({ viewer, apps: [app], error: evil, notice: evil }),
    ClientsPage({
      viewer,
      clients: [client],
      error: evil,
      form: { name: evil, redirectUris: evil },
      created: { clientId: evil, clientSecret: evil, name: evil },
    }),
    PasswordPage({ viewer, required: true, next: evil, error: evil, notice: evil }),
    SettingsRegistrationPage({ viewer, created: { token: evil, expiresAt: 0 } }),
    AdminClientsPage({ viewer, clients: [client], notice: evil }),
    AdminClientPage({ viewer, client, publicUrl: 'http://threadhouse.test', rotatedSecret: evil, error: evil }),
    DeleteClientPage({ viewer, client }),
    MembersPage({
      viewer,
      actor: { id: 1, role: 'owner' },
      members: [member],
      signInUrl: evil,
      error: evil,
      notice: evil,
      form: { email: evil, name: evil, role: 'member' },
      added: { member, oneTimePassword: evil },
    }),
    RemoveMemberPage({ viewer, member }),
  ]
  for (const page of pages) {
    const html = await page
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    const markup = await markupOf(html)
    expect(markup.handlers).toEqual([])
    // Only this server's own scripts: the copy button's, and the theme's that every page runs.
    expect(markup.scripts.filter((src) => src !== '/assets/copy.js')).toEqual([themeScript.path])
    // Links and images stay on this server or go to https; a stored `javascript:` link is dropped.
    const strays = markup.urls.filter((url) => !/^(\/|#|https:\/\/x\.example\/)/.test(url))
    expect(strays).toEqual([])
  }
})

test('the only HTML a page inserts unescaped is the Markdown renderer’s output', async () => {
  // xss-scan trusts variables named `safe…` and expressions cast `as 'safe'`: each such escape hatch is listed
  // here, so a new one is a deliberate, reviewed change.
  const root = `${import.meta.dir}/..`
  const hatches: string[] = []
  for await (const path of new Bun.Glob('src/**/*.tsx').scan(root)) {
    const source = await Bun.file(`${root}/${path}`).text()
    for (const match of source.matchAll(/\b(?:const|let|var) (safe\w*) = (.+)$/gm)) hatches.push(`${path}: ${match[2]}`)
    for (const match of source.matchAll(/\{([^{}]+) as 'safe'\}/g)) hatches.push(`${path}: ${match[1]}`)
  }
  expect(hatches.sort()).toEqual([
    'src/shares/views/shares.tsx: renderMarkdown(block.text)',
    'src/threads/views/thread.tsx: renderMarkdown(block.text)',
  ])
})
