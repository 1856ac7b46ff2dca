// Administration → MCP servers: the organization's connected servers with their state, a form to add one (name, URL,
// static headers, trust), and a page per server with its tools (each one's on/off switch, whether it is read-only,
// why it can never be offered), a Refresh button, trust and delete, and Authorize for a server that signs in with
// OAuth. Header values and tokens are secrets: never rendered; header names are, followed by •••.
import { escapeHtml } from '@kitajs/html'
import { CsrfField, ErrorAlert, Notice, TableRegion, Time } from '../../web/components'
import { AdminFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'
import type { McpOAuthRow, McpServerRow, McpServerStatus, McpToolRow } from '../repository'
import type { ServerWithTools } from '../service'

export const serversPath = '/admin/mcp-servers'

export function serverPath(serverId: string): string {
  return `${serversPath}/${encodeURIComponent(serverId)}`
}

export interface ServerFormValues {
  name: string
  url: string
  /** Header lines were typed: their values are never written back, so a refused form asks for them again. */
  retypeHeaders: boolean
  trusted: boolean
  /** It signs in with OAuth: authorized in the browser once added. */
  oauth: boolean
}

export const emptyServerForm: ServerFormValues = {
  name: '',
  url: '',
  retypeHeaders: false,
  trusted: false,
  oauth: false,
}

const statusLabels: Record<McpServerStatus, string> = {
  pending: 'Tools not fetched yet',
  ok: 'Connected',
  needs_authorization: 'Needs authorization',
  error: 'Cannot connect',
}

function StatusView({ server }: { server: McpServerRow }): JSX.Element {
  return (
    <>
      <span class={server.status === 'ok' ? 'badge subtle' : 'badge'} safe>
        {statusLabels[server.status]}
      </span>
      {server.lastError ? (
        <>
          <br />
          <span class="muted" safe>
            {server.lastError}
          </span>
        </>
      ) : null}
    </>
  )
}

/** The authentication, with the header names and never their values. */
function AuthView({ server }: { server: McpServerRow }): JSX.Element {
  if (server.auth === 'oauth') return 'OAuth'
  if (server.headerNames.length === 0) return 'None'
  return (
    <>
      {server.headerNames.map((name, index) => (
        <>
          {index > 0 ? ', ' : ''}
          <code safe>{`${name}: •••`}</code>
        </>
      ))}
    </>
  )
}

function toolCount(tools: McpToolRow[]): string {
  const on = tools.filter((tool) => tool.enabled && tool.problem === null).length
  return `${on} of ${tools.length} on`
}

function AddServerForm({ viewer, form }: { viewer: Viewer; form: ServerFormValues }): JSX.Element {
  return (
    <form method="post" action={serversPath} class="card stack">
      <CsrfField token={viewer.csrf} />
      <h2>Connect a server</h2>
      <p class="muted">
        A remote MCP server over Streamable HTTP. Its tools are listed once it is added (or, for a server that signs in
        with OAuth, once you have authorized it), and answers in your organization may call the ones that are on.
      </p>
      <div class="field">
        <label for="server-name">Name</label>
        <input
          id="server-name"
          name="name"
          type="text"
          required
          maxlength="32"
          pattern="[a-z0-9][a-z0-9\-]{0,31}"
          value={escapeHtml(form.name)}
          aria-describedby="server-name-help"
        />
        <span id="server-name-help" class="muted">
          Lower-case letters, digits and dashes, such as docs. Thread settings name its tools by it, so it cannot be
          changed.
        </span>
      </div>
      <div class="field">
        <label for="server-url">URL</label>
        <input id="server-url" name="url" type="url" required maxlength="2000" value={escapeHtml(form.url)} />
      </div>
      <div class="field">
        <label for="server-headers">Headers (optional)</label>
        <textarea
          id="server-headers"
          name="headers"
          rows="3"
          spellcheck="false"
          aria-describedby="server-headers-help"
        ></textarea>
        <span id="server-headers-help" class="muted">
          {form.retypeHeaders ? <strong>Type the headers again: their values are never shown back. </strong> : ''}
          One "Name: value" a line, such as Authorization: Bearer followed by an API key the server gave you. Values are
          stored encrypted and never shown again.
        </span>
      </div>
      <div class="check">
        <input id="server-oauth" name="oauth" type="checkbox" value="true" checked={form.oauth} />
        <label for="server-oauth">
          Signs in with OAuth{' '}
          <span class="muted">
            no headers: after adding it, Authorize on its page takes you to its sign-in and consent
          </span>
        </label>
      </div>
      <div class="check">
        <input id="server-trusted" name="trusted" type="checkbox" value="true" checked={form.trusted} />
        <label for="server-trusted">
          Trusted{' '}
          <span class="muted">its tools that may change something run without asking the thread’s owner first</span>
        </label>
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Connect server
        </button>
      </div>
    </form>
  )
}

export interface McpServersPageProps {
  viewer: Viewer
  servers: ServerWithTools[]
  notice?: string | null
  error?: string | null
  form?: ServerFormValues
}

export function McpServersPage(props: McpServersPageProps): JSX.Element {
  return (
    <AdminFrame viewer={props.viewer} current={serversPath} title="MCP servers">
      <section aria-labelledby="mcp-servers-title">
        <h2 id="mcp-servers-title">MCP servers of your organization</h2>
        <Notice text={props.notice ?? null} />
        <ErrorAlert text={props.error} />
        {props.servers.length === 0 ? (
          <p class="muted">Your organization has no MCP servers yet.</p>
        ) : (
          <TableRegion label="MCP servers">
            <table>
              <caption class="visually-hidden">MCP servers of your organization</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">URL</th>
                  <th scope="col">Authentication</th>
                  <th scope="col">Tools</th>
                  <th scope="col">State</th>
                </tr>
              </thead>
              <tbody>
                {props.servers.map(({ server, tools }) => (
                  <tr>
                    <th scope="row">
                      <a href={escapeHtml(serverPath(server.id))} safe>
                        {server.name}
                      </a>
                      {server.trusted ? (
                        <>
                          {' '}
                          <span class="badge subtle">Trusted</span>
                        </>
                      ) : null}
                    </th>
                    <td>
                      <code safe>{server.url}</code>
                    </td>
                    <td>
                      <AuthView server={server} />
                    </td>
                    <td safe>{toolCount(tools)}</td>
                    <td>
                      <StatusView server={server} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        )}
      </section>
      <AddServerForm viewer={props.viewer} form={props.form ?? emptyServerForm} />
    </AdminFrame>
  )
}

function PostButton(props: {
  viewer: Viewer
  action: string
  label: string
  ariaLabel: string
  fields?: Record<string, string>
}): JSX.Element {
  return (
    <form method="post" action={escapeHtml(props.action)} class="inline">
      <CsrfField token={props.viewer.csrf} />
      {Object.entries(props.fields ?? {}).map(([name, value]) => (
        <input type="hidden" name={escapeHtml(name)} value={escapeHtml(value)} />
      ))}
      <button type="submit" aria-label={escapeHtml(props.ariaLabel)} safe>
        {props.label}
      </button>
    </form>
  )
}

/**
 * What the model would be given (the argument schema) and what the server claims of the tool (its annotations): for
 * admins to judge before turning it on, and its size, since every answer offered it carries the schema.
 */
function ToolDefinition({ tool }: { tool: McpToolRow }): JSX.Element {
  const definition = JSON.stringify({ inputSchema: tool.inputSchema, annotations: tool.annotations }, null, 2)
  const size = JSON.stringify(tool.inputSchema ?? null).length
  return (
    <details class="tool-definition">
      <summary safe>{`Schema and annotations · ${size.toLocaleString('en-US')} characters`}</summary>
      <pre safe>{definition}</pre>
    </details>
  )
}

function ToolRowView({ viewer, server, tool }: { viewer: Viewer; server: McpServerRow; tool: McpToolRow }) {
  const action = `${serverPath(server.id)}/tools/${encodeURIComponent(tool.name)}`
  return (
    <tr>
      <th scope="row">
        <code safe>{tool.name}</code>
        {tool.title ? (
          <>
            <br />
            <span class="muted" safe>
              {tool.title}
            </span>
          </>
        ) : null}
      </th>
      <td>
        <span safe>{tool.description}</span>
        <ToolDefinition tool={tool} />
      </td>
      <td>
        {tool.readOnly ? (
          <span class="badge subtle">Read-only</span>
        ) : server.trusted ? (
          'May change things; runs without asking (trusted server)'
        ) : (
          'May change things; asks first'
        )}
      </td>
      <td>
        {tool.problem !== null ? (
          <>
            <span class="badge">Never offered</span>{' '}
            <span class="muted" safe>
              {tool.problem}
            </span>
          </>
        ) : tool.enabled ? (
          'On'
        ) : (
          'Off'
        )}
      </td>
      <td>
        {tool.problem !== null ? null : (
          <PostButton
            viewer={viewer}
            action={action}
            label={tool.enabled ? 'Turn off' : 'Turn on'}
            ariaLabel={`${tool.enabled ? 'Turn off' : 'Turn on'} ${tool.name}`}
            fields={{ enabled: tool.enabled ? 'false' : 'true' }}
          />
        )}
      </td>
    </tr>
  )
}

export interface McpServerPageProps {
  viewer: Viewer
  server: McpServerRow
  tools: McpToolRow[]
  /** The OAuth state of a server that signs in with OAuth (when it was authorized). */
  oauth?: McpOAuthRow | null
  notice?: string | null
  error?: string | null
}

export function McpServerPage({ viewer, server, tools, oauth, notice, error }: McpServerPageProps): JSX.Element {
  const authorized = oauth?.tokensSealed ? (oauth.authorizedAt ?? null) : null
  const path = serverPath(server.id)
  return (
    <AdminFrame viewer={viewer} current={serversPath} title={`MCP server ${server.name}`}>
      <p>
        <a href={serversPath}>← All MCP servers</a>
      </p>
      <section aria-labelledby="mcp-server-title" class="stack">
        <h2 id="mcp-server-title" safe>
          {server.name}
        </h2>
        <Notice text={notice ?? null} />
        <ErrorAlert text={error} />
        <dl class="details">
          <dt>URL</dt>
          <dd>
            <code safe>{server.url}</code>
          </dd>
          <dt>Authentication</dt>
          <dd>
            <AuthView server={server} />
          </dd>
          <dt>State</dt>
          <dd>
            <StatusView server={server} />
          </dd>
          {server.auth === 'oauth' ? (
            <>
              <dt>Authorized</dt>
              <dd>
                <Time at={authorized} never="Not yet" />
              </dd>
            </>
          ) : null}
          <dt>Tools fetched</dt>
          <dd>
            <Time at={server.toolsRefreshedAt} never="Never" />
          </dd>
          <dt>Trusted</dt>
          <dd>
            {server.trusted
              ? 'Yes: its tools run without asking the thread’s owner first'
              : 'No: its tools that may change something ask the thread’s owner first'}
          </dd>
        </dl>
        <div class="actions">
          {server.auth === 'oauth' ? (
            <>
              <PostButton
                viewer={viewer}
                action={`${path}/authorize`}
                label={authorized === null ? 'Authorize' : 'Authorize again'}
                ariaLabel={`Authorize ${server.name}`}
              />{' '}
            </>
          ) : null}
          <PostButton viewer={viewer} action={`${path}/refresh`} label="Refresh tools" ariaLabel="Refresh tools" />{' '}
          <PostButton
            viewer={viewer}
            action={`${path}/trust`}
            label={server.trusted ? 'Stop trusting' : 'Trust'}
            ariaLabel={server.trusted ? `Stop trusting ${server.name}` : `Trust ${server.name}`}
            fields={{ trusted: server.trusted ? 'false' : 'true' }}
          />{' '}
          <a class="button danger" href={escapeHtml(`${path}/delete`)} aria-label={escapeHtml(`Delete ${server.name}`)}>
            Delete…
          </a>
        </div>
      </section>
      <section aria-labelledby="mcp-tools-title">
        <h2 id="mcp-tools-title">Tools</h2>
        {tools.length === 0 ? (
          <p class="muted">No tools are listed. Refresh to fetch the server’s list.</p>
        ) : (
          <TableRegion label="Tools">
            <table>
              <caption class="visually-hidden">The server’s tools</caption>
              <thead>
                <tr>
                  <th scope="col">Tool</th>
                  <th scope="col">Description</th>
                  <th scope="col">Effect</th>
                  <th scope="col">State</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {tools.map((tool) => (
                  <ToolRowView viewer={viewer} server={server} tool={tool} />
                ))}
              </tbody>
            </table>
          </TableRegion>
        )}
      </section>
    </AdminFrame>
  )
}

export function DeleteServerPage({ viewer, server }: { viewer: Viewer; server: McpServerRow }): JSX.Element {
  return (
    <AdminFrame viewer={viewer} current={serversPath} title="Delete MCP server">
      <form method="post" action={escapeHtml(`${serverPath(server.id)}/delete`)} class="card stack">
        <CsrfField token={viewer.csrf} />
        <h2 safe>{`Delete ${server.name}?`}</h2>
        <p>
          Answers in your organization can no longer call its tools, and its stored headers or tokens are erased. Tool
          calls already made stay in their threads.
        </p>
        <div class="actions">
          <button type="submit" class="danger-solid">
            Delete server
          </button>{' '}
          <a href={escapeHtml(serverPath(server.id))}>Cancel</a>
        </div>
      </form>
    </AdminFrame>
  )
}
