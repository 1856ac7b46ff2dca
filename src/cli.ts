// Operator CLI (see docs/operations.md, "Operator CLI"). Prints its result on stdout and exits 0, or one error
// line on stderr and exits 1. A printed secret is always the last line of stdout, alone. `--help` and `help`
// read nothing but this file: no configuration, no database. Only `migrate` and `restore` create a database;
// every other command refuses to run without one, so a mistyped DATABASE_PATH never starts an empty one.
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { auditRetentionRange, parseAuditRetentionDays, setAuditRetention, verifyAuditLog } from './audit/service'
import { isRole } from './auth/members'
import { roles } from './auth/model'
import { createPersonalAccessToken, parseScopes } from './auth/personal-access-tokens'
import { createUser, findUserByEmail } from './auth/users'
import { type Config, ConfigError, isDatabaseUrl, loadConfig } from './config'
import { addServer, describeRefresh, listServers, parseHeaderLines, removeServer } from './connectors/service'
import { type Db, MissingDatabaseError, migrateDatabase, openDatabase } from './db/client'
import { loadCatalogue } from './models/catalogue'
import { setChoice, viewChoice } from './models/service'
import { createRegistrationToken } from './oauth/registration'
import { backup, type Counts, restore } from './operations/backup'
import { OperationError } from './operations/errors'
import { migrateAndReport } from './operations/migrations'
import { listUsers, resetPassword } from './operations/users'
import type { Budget } from './quotas/repository'
import {
  type BudgetChange,
  describeBudget,
  parseCost,
  parseTokens,
  periodOf,
  setMemberDefault,
  setMemberOverride,
  setOrganizationBudget,
  viewBudgets,
} from './quotas/service'
import { noOrganization, systemOrigin } from './shared/audit'
import { AppError } from './shared/errors'
import { secretBox } from './shared/secret-box'
import { StartupError } from './shared/startup-error'
import { systemClock, toIso } from './shared/time'
import { checkBlobStore } from './startup'
import { type BlobStore, blobLocation, openBlobStore } from './storage/blobs'
import { type Store, sqliteStore } from './store'
import { type OpenedStore, openStore } from './store/open'
import { formatCost } from './usage/price'
import { webhookEventTypes } from './webhooks/events'
import { createEndpoint, parseEventFilter } from './webhooks/service'

class UsageError extends Error {}

/** For the commands that copy the SQLite file itself: PostgreSQL's backups are pg_dump's. */
function sqliteFileOnly(command: string): UsageError {
  return new UsageError(
    `${command} copies the SQLite file; with DATABASE_URL use pg_dump and pg_restore (see docs/operations.md)`,
  )
}

interface Context {
  values: Record<string, string | undefined>
  /** The values of the options that may be given more than once (`multiple`), in order; empty when not given. */
  lists: Record<string, string[]>
  config: Config
  out: (line: string) => void
  now: number
  /**
   * The SQLite database at DATABASE_PATH with its migrations applied; a missing one is refused, never created. For
   * the commands that copy the SQLite file itself: refused on PostgreSQL.
   */
  database(): Db
  /** The repositories over the configured database (DATABASE_URL or DATABASE_PATH), migrations applied. */
  store(): Promise<Store>
}

interface Command {
  /** What follows the command's name on its usage line. */
  usage: string
  /** One line for the command list. */
  summary: string
  /**
   * Its placeholder (as in the usage line) and what it means; a string unless `flag` (a switch that takes no value,
   * read as `true`); `multiple`: a string that may be given more than once, read from `lists`.
   */
  options: Record<string, { placeholder: string; description: string; flag?: true; multiple?: true }>
  /** More for `<command> --help`, one line each. */
  details?: string[]
  run(context: Context): Promise<void> | void
}

function required(values: Record<string, string | undefined>, name: string): string {
  const value = values[name]
  if (!value) throw new UsageError(`--${name} is required`)
  return value
}

/** The ID of the organization `--org` names; a usage error when there is none. */
async function organizationOf(users: Store['users'], slug: string): Promise<number> {
  const organizationId = await users.organizationIdBySlug(slug)
  if (organizationId === null) throw new UsageError(`No organization with slug ${slug}`)
  return organizationId
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`
}

function describeCounts(counts: Counts): string {
  return [
    plural(counts.organizations, 'organization'),
    plural(counts.users, 'user'),
    plural(counts.threads, 'thread'),
    plural(counts.messages, 'message'),
    plural(counts.attachments, 'attachment'),
  ].join(', ')
}

/** The configured blob store, and how output lines name it: UPLOADS_DIR's folder, or the bucket. */
function configuredFiles(config: Config): { blobs: BlobStore; name: string } {
  const blobs = openBlobStore(blobLocation(config))
  const where = blobs.description
  return { blobs, name: where.kind === 'local' ? config.UPLOADS_DIR : `bucket ${where.bucket}` }
}

/** A field of a tab-separated line: tabs and line breaks would split it. */
function field(value: string | null): string {
  return (value ?? '').replace(/[\t\r\n]+/g, ' ')
}

/** quota:set's switch, named apart: a quoted key opening an object reads as a command (docs-consistency.test.ts). */
const memberDefaultFlag = {
  placeholder: '',
  description: 'sets the budget each member has unless they have their own',
  flag: true,
} as const

const commands: Record<string, Command> = {
  migrate: {
    usage: '',
    summary: 'Creates the database at DATABASE_PATH if it is missing and applies pending migrations.',
    options: {},
    details: [
      'The server does the same at every start; this does it ahead of a start, or without one.',
      'It does not create the first organization and owner: the first start on a database without users does.',
    ],
    async run({ config, out, store }) {
      if (config.DATABASE_URL !== undefined) {
        await store()
        out('The PostgreSQL database DATABASE_URL names is up to date')
        return
      }
      const path = config.DATABASE_PATH
      const { created, applied, latest } = migrateAndReport(path)
      if (created) out(`Created ${path} and applied ${plural(applied.length, 'migration')} (up to ${latest})`)
      else if (applied.length > 0)
        out(`Applied ${plural(applied.length, 'migration')} to ${path}: ${applied.join(', ')}`)
      else out(`${path} is up to date (latest migration ${latest})`)
    },
  },
  'user:create': {
    usage: '--email E --password P [--name N] [--org SLUG] [--role owner|admin|member]',
    summary: 'Creates a user; --org defaults to default (a new slug creates that organization), --role to member.',
    options: {
      email: { placeholder: 'E', description: 'the email they sign in with (stored lower-cased)' },
      password: { placeholder: 'P', description: 'their password, at least 8 characters' },
      name: { placeholder: 'N', description: 'the name shown for them' },
      org: { placeholder: 'SLUG', description: 'their organization (default: default); a new slug creates it' },
      role: { placeholder: 'ROLE', description: 'owner, admin or member (default: member)' },
    },
    async run({ values, out, now, store }) {
      const role = values.role ?? 'member'
      if (!isRole(role)) throw new UsageError(`--role must be one of ${roles.join(', ')}`)
      const organizationSlug = values.org ?? 'default'
      const user = await createUser(
        (await store()).users,
        {
          email: required(values, 'email'),
          password: required(values, 'password'),
          name: values.name ?? null,
          organizationSlug,
          role,
        },
        now,
        systemOrigin,
      )
      out(`Created user ${values.email?.trim().toLowerCase()} (id ${user.id}, sub ${user.sub}) in ${organizationSlug}`)
    },
  },
  'user:list': {
    usage: '',
    summary: 'Lists every user, tab-separated: email, name, organization, role, created (UTC), status.',
    options: {},
    details: [
      'One header line, then one line per user, by organization and then email.',
      'Status is active, must-change-password (a one-time password is pending) or removed.',
    ],
    async run({ out, store }) {
      const users = await listUsers((await store()).users)
      out(['email', 'name', 'organization', 'role', 'created', 'status'].join('\t'))
      for (const user of users) {
        out(
          [user.email, field(user.name), user.organizationSlug, user.role, toIso(user.createdAt), user.status].join(
            '\t',
          ),
        )
      }
    },
  },
  'user:reset-password': {
    usage: '--email E',
    summary: "Sets a new one-time password (printed last) and ends the user's web sessions.",
    options: { email: { placeholder: 'E', description: 'the user whose password to reset' } },
    details: [
      'The user must choose their own password at the next sign-in. Their personal access tokens and',
      'OAuth grants stay valid; removing them from the organization ends those too.',
    ],
    async run({ values, out, now, store }) {
      const email = required(values, 'email')
      const reset = await resetPassword((await store()).users, email, now)
      if (!reset) throw new UsageError(`No user with email ${email}`)
      out(
        `New one-time password for ${reset.email}, to be replaced at the next sign-in; ` +
          `ended ${plural(reset.endedSessions, 'web session')}.`,
      )
      out(reset.oneTimePassword)
    },
  },
  'token:create': {
    usage: '--email E --scopes "S1 S2" [--name N]',
    summary: 'Creates a personal access token for the user and prints it last.',
    options: {
      email: { placeholder: 'E', description: 'the user the token acts for' },
      scopes: {
        placeholder: '"S1 S2"',
        description: 'space-separated: threads:read, threads:read:own, threads:write, audit:read (owners and admins)',
      },
      name: { placeholder: 'N', description: 'a label shown in their settings (default: cli)' },
    },
    async run({ values, out, now, store }) {
      const { users, accessTokens } = await store()
      const email = required(values, 'email')
      const user = await findUserByEmail(users, email)
      if (!user) throw new UsageError(`No user with email ${email}`)
      const scopes = parseScopes(required(values, 'scopes'))
      const token = await createPersonalAccessToken(
        accessTokens,
        { user, name: values.name ?? 'cli', scopes },
        now,
        systemOrigin,
      )
      out(`Personal access token for ${user.email} with scopes: ${scopes.join(' ')}`)
      out(token)
    },
  },
  'registration-token:create': {
    usage: '--email E',
    summary: "Creates a single-use, 60-minute RFC 7591 registration token for the user's organization.",
    options: { email: { placeholder: 'E', description: 'a user of the organization the client will belong to' } },
    details: ['The token is printed last; send it as "Authorization: Bearer <token>" to POST /oauth/register.'],
    async run({ values, out, now, store }) {
      const email = required(values, 'email')
      const user = await findUserByEmail((await store()).users, email)
      if (!user) throw new UsageError(`No user with email ${email}`)
      const created = await createRegistrationToken((await store()).oauthClients, user, now, systemOrigin)
      out(
        `Registration token for ${user.email}'s organization: single use, valid until ${toIso(created.expiresAt)}. ` +
          'Send it as "Authorization: Bearer <token>" to POST /oauth/register.',
      )
      out(created.token)
    },
  },
  'webhook:create': {
    usage: '--org SLUG --url URL [--events E1,E2]',
    summary: 'Adds a webhook endpoint to the organization and prints its signing secret last.',
    options: {
      org: { placeholder: 'SLUG', description: 'the organization whose threads send events to it' },
      url: { placeholder: 'URL', description: 'where events are posted (https:// or http://)' },
      events: {
        placeholder: 'E1,E2',
        description: `comma-separated, among ${webhookEventTypes.join(', ')} (default: all)`,
      },
    },
    details: [
      'Deliveries are signed as Standard Webhooks specifies (webhook-id, webhook-timestamp, webhook-signature);',
      'verify them with the printed whsec_ secret. Private and loopback addresses are refused unless',
      'WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true. Admins manage endpoints on the Administration → Webhooks page.',
    ],
    async run({ values, config, out, now, store }) {
      const slug = required(values, 'org')
      const url = required(values, 'url')
      const events = parseEventFilter(values.events ?? '')
      const { users, webhooks } = await store()
      const organizationId = await organizationOf(users, slug)
      const created = await createEndpoint(
        webhooks,
        { organizationId, createdBy: null, url, events },
        { allowPrivateNetworks: config.WEBHOOKS_ALLOW_PRIVATE_NETWORKS },
        now,
        systemOrigin,
      )
      out(
        `Webhook endpoint ${created.endpoint.id} for ${slug}: ${created.endpoint.url} (${events?.join(', ') ?? 'all events'})`,
      )
      out(created.secret)
    },
  },
  'mcp-server:add': {
    usage: '--org SLUG --name NAME --url URL [--header "Name: value"]... [--headers-stdin] [--trusted]',
    summary: 'Connects a remote MCP server to the organization and prints its id last; headers are stored encrypted.',
    options: {
      org: { placeholder: 'SLUG', description: 'the organization whose answers may call its tools' },
      name: {
        placeholder: 'NAME',
        description: 'lower-case letters, digits and dashes, at most 32; thread settings name its tools by it',
      },
      url: { placeholder: 'URL', description: 'its Streamable HTTP endpoint (https:// or http://)' },
      header: {
        placeholder: '"Name: value"',
        description: 'a header sent with every request to it, such as an API key; may be repeated',
        multiple: true,
      },
      'headers-stdin': {
        placeholder: '',
        description:
          'reads more such header lines from standard input, one per line, so no value is in the process list',
        flag: true,
      },
      trusted: {
        placeholder: '',
        description: "its tools that may change something run without asking the thread's owner first",
        flag: true,
      },
    },
    details: [
      'Header values are sealed with SECRETS_KEY, which must be set, and are never shown again. A value holding a',
      'Threadhouse token is refused. Private and loopback addresses are refused unless',
      'WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true. Servers that sign in with OAuth are added on the administration page.',
      "The first line says how fetching its tool list went; the last line is the server's id alone.",
    ],
    async run({ values, lists, config, out, now, store }) {
      const slug = required(values, 'org')
      const name = required(values, 'name')
      const url = required(values, 'url')
      // A value given with --header is visible to anyone who can list processes, and stays in shell history.
      const piped =
        values['headers-stdin'] === 'true' ? (await Bun.stdin.text()).split('\n').filter((line) => line.trim()) : []
      const headers = parseHeaderLines([...(lists.header ?? []), ...piped])
      const { users, mcpServers } = await store()
      const organizationId = await organizationOf(users, slug)
      const added = await addServer(
        {
          servers: mcpServers,
          box: secretBox({ current: config.SECRETS_KEY, previous: config.SECRETS_KEY_PREVIOUS?.split(',') }),
          // The CLI opens no MCP connection: the tool list is fetched from the administration page's Refresh.
          caller: null,
          allowPrivateNetworks: config.WEBHOOKS_ALLOW_PRIVATE_NETWORKS,
        },
        { organizationId, createdBy: null, name, url, headers, trusted: values.trusted === 'true' },
        now,
        systemOrigin,
      )
      const { server } = added
      const auth = server.headerNames.length > 0 ? `headers ${server.headerNames.join(', ')}` : 'no authentication'
      out(
        `MCP server ${server.name} added to ${slug} at ${server.url} (${auth}${server.trusted ? ', trusted' : ''}); ` +
          describeRefresh(added.refresh),
      )
      out(server.id)
    },
  },
  'mcp-server:list': {
    usage: '--org SLUG',
    summary: "Lists the organization's MCP servers, tab-separated: id, name, url, auth, trusted, tools, status.",
    options: { org: { placeholder: 'SLUG', description: 'the organization' } },
    details: [
      'One header line, then one line per server by name. auth is none, headers or oauth (header values are never',
      'shown); trusted is yes or no; tools is on/listed; status is pending, ok, needs_authorization or error.',
    ],
    async run({ values, out, store }) {
      const slug = required(values, 'org')
      const { users, mcpServers } = await store()
      const organizationId = await organizationOf(users, slug)
      out(['id', 'name', 'url', 'auth', 'trusted', 'tools', 'status'].join('\t'))
      for (const { server, tools } of await listServers(mcpServers, organizationId)) {
        const on = tools.filter((tool) => tool.enabled && tool.problem === null).length
        const trusted = server.trusted ? 'yes' : 'no'
        out(
          [
            server.id,
            server.name,
            field(server.url),
            server.auth,
            trusted,
            `${on}/${tools.length}`,
            server.status,
          ].join('\t'),
        )
      }
    },
  },
  'mcp-server:remove': {
    usage: '--org SLUG --name NAME',
    summary: 'Removes an MCP server from the organization, with its tools and stored secrets.',
    options: {
      org: { placeholder: 'SLUG', description: 'the organization' },
      name: { placeholder: 'NAME', description: 'the server to remove' },
    },
    details: ['Answers can no longer call its tools; tool calls already made stay in their threads.'],
    async run({ values, out, now, store }) {
      const slug = required(values, 'org')
      const name = required(values, 'name')
      const { users, mcpServers } = await store()
      const organizationId = await organizationOf(users, slug)
      const server = await mcpServers.byName(organizationId, name)
      if (!server) throw new UsageError(`No MCP server named ${name} in ${slug}`)
      await removeServer({ servers: mcpServers }, organizationId, server.id, now, systemOrigin)
      out(`Removed MCP server ${name} (${server.id}) from ${slug}`)
    },
  },
  'models:list': {
    usage: '[--org SLUG]',
    summary: "Lists the configured models, tab-separated; with --org, the organization's choice among them.",
    options: { org: { placeholder: 'SLUG', description: 'the organization whose allowed models and default to show' } },
    details: [
      'Columns: id, name, provider, context_tokens, default (yes for one model), and with --org allowed (yes/no).',
      'The models come from MODELS_FILE, LLM_MODELS or the LLM_* variables (docs/configuration.md, Models).',
    ],
    async run({ values, config, out, store }) {
      const catalogue = loadCatalogue(config)
      const header = ['id', 'name', 'provider', 'context_tokens', 'default']
      if (values.org === undefined) {
        out(header.join('\t'))
        for (const model of catalogue.models) {
          const isDefault = model.id === catalogue.defaultId ? 'yes' : 'no'
          out([model.id, field(model.name), model.provider, model.contextTokens, isDefault].join('\t'))
        }
        return
      }
      const { users, models } = await store()
      const organizationId = await organizationOf(users, values.org)
      const view = await viewChoice({ catalogue, models }, organizationId)
      out([...header, 'allowed'].join('\t'))
      for (const model of view.models) {
        const context = catalogue.byId.get(model.id)?.contextTokens
        const isDefault = model.id === view.defaultId ? 'yes' : 'no'
        const allowed = model.allowed ? 'yes' : 'no'
        out([model.id, field(model.name), model.provider, context, isDefault, allowed].join('\t'))
      }
    },
  },
  'models:set': {
    usage: '--org SLUG [--allow ID1,ID2|--allow all] [--default ID]',
    summary: 'Chooses the models an organization may use and its default (what its owners and admins do on the web).',
    options: {
      org: { placeholder: 'SLUG', description: 'the organization' },
      allow: {
        placeholder: 'ID1,ID2',
        description: 'comma-separated model IDs it may use, or all: every configured model, later ones too',
      },
      default: {
        placeholder: 'ID',
        description: 'the model its threads use unless they name one; "" follows the server\'s default',
      },
    },
    details: [
      'At least one of --allow and --default. What is not given keeps its value. The default must be among the',
      'allowed models. A thread whose model is no longer allowed is answered by the default.',
    ],
    async run({ values, config, out, now, store }) {
      const slug = required(values, 'org')
      if (values.allow === undefined && values.default === undefined) {
        throw new UsageError('Give --allow, --default or both')
      }
      const catalogue = loadCatalogue(config)
      const { users, models } = await store()
      const organizationId = await organizationOf(users, slug)
      const stored = await models.choice(organizationId)
      const allowed =
        values.allow === undefined
          ? stored.allowed
          : values.allow.trim() === 'all'
            ? null
            : values.allow
                .split(',')
                .map((id) => id.trim())
                .filter((id) => id !== '')
      const defaultModel = values.default === undefined ? stored.defaultModel : values.default.trim() || null
      await setChoice({ catalogue, models }, organizationId, { allowed, defaultModel }, now, systemOrigin)
      const view = await viewChoice({ catalogue, models }, organizationId)
      const usable = view.models.filter((model) => model.allowed).map((model) => model.id)
      out(`${slug} may use ${view.allowAll ? 'every configured model' : usable.join(', ')}; default ${view.defaultId}`)
    },
  },
  'quota:set': {
    usage: '--org SLUG [--email EMAIL | --member-default] [--tokens N] [--cost AMOUNT] [--remove]',
    summary: "Sets a monthly budget: the organization's, each member's (--member-default) or one member's (--email).",
    options: {
      org: { placeholder: 'SLUG', description: 'the organization' },
      email: { placeholder: 'EMAIL', description: "the member whose own budget to set (replaces each member's)" },
      'member-default': memberDefaultFlag,
      tokens: { placeholder: 'N', description: 'tokens a month (input and output), or none for no limit' },
      cost: { placeholder: 'AMOUNT', description: "cost a month in the models' currency (such as 12.50), or none" },
      remove: {
        placeholder: '',
        description: "with --email: removes their own budget; they have each member's again",
        flag: true,
      },
    },
    details: [
      "Without --email or --member-default it sets the organization's budget, for everyone together.",
      "What is not given keeps its value; a member given their own budget starts from each member's.",
      'Budgets run by calendar month in UTC. Over one, answers are refused (429) until the next month.',
    ],
    async run({ values, out, now, store }) {
      const slug = required(values, 'org')
      const remove = values.remove === 'true'
      const memberDefault = values['member-default'] === 'true'
      if (values.email !== undefined && memberDefault)
        throw new UsageError('Give --email or --member-default, not both')
      if (remove && values.email === undefined) throw new UsageError('--remove needs --email')
      if (remove && (values.tokens !== undefined || values.cost !== undefined)) {
        throw new UsageError('--remove takes no --tokens or --cost')
      }
      if (!remove && values.tokens === undefined && values.cost === undefined) {
        throw new UsageError('Give --tokens, --cost or both')
      }
      const change: BudgetChange = {
        ...(values.tokens !== undefined && { tokens: parseTokens(values.tokens) }),
        ...(values.cost !== undefined && { costMicros: parseCost(values.cost) }),
      }
      const { users, quotas } = await store()
      const organizationId = await organizationOf(users, slug)
      const act = { now, origin: systemOrigin }
      if (values.email !== undefined) {
        const user = await findUserByEmail(users, values.email)
        if (!user || user.organizationId !== organizationId) {
          throw new UsageError(`No member ${values.email} in ${slug}`)
        }
        const budget = await setMemberOverride({ quotas }, organizationId, user.id, remove ? null : change, act)
        out(
          budget === null
            ? `${user.email} has each member's budget of ${slug} again`
            : `${user.email}'s own budget in ${slug}: ${describeBudget(budget)}`,
        )
        return
      }
      if (memberDefault) {
        out(
          `Each member's budget in ${slug}: ${describeBudget(await setMemberDefault({ quotas }, organizationId, change, act))}`,
        )
        return
      }
      out(`${slug}'s budget: ${describeBudget(await setOrganizationBudget({ quotas }, organizationId, change, act))}`)
    },
  },
  'quota:show': {
    usage: '--org SLUG',
    summary: "Prints an organization's monthly budgets and this month's use, tab-separated.",
    options: { org: { placeholder: 'SLUG', description: 'the organization' } },
    details: [
      "Columns: budget (organization, member-default, or a member's email), tokens, cost (none: no limit),",
      'used_tokens and used_cost this month in UTC (empty for member-default).',
    ],
    async run({ values, out, now, store }) {
      const slug = required(values, 'org')
      const { users, quotas } = await store()
      const organizationId = await organizationOf(users, slug)
      const budgets = await viewBudgets({ quotas }, organizationId)
      const period = periodOf(now)
      const limits = (budget: Budget) => [
        budget.tokens === null ? 'none' : String(budget.tokens),
        budget.costMicros === null ? 'none' : formatCost(budget.costMicros).replaceAll(',', ''),
      ]
      const used = async (userId: number) => {
        const totals = await quotas.monthTotals(organizationId, userId, period)
        const spent = userId === 0 ? totals.organization : totals.member
        return [String(spent.tokens), formatCost(spent.costMicros).replaceAll(',', '')]
      }
      out(['budget', 'tokens', 'cost', 'used_tokens', 'used_cost'].join('\t'))
      out(['organization', ...limits(budgets.organization), ...(await used(0))].join('\t'))
      out(['member-default', ...limits(budgets.memberDefault), '', ''].join('\t'))
      for (const override of budgets.overrides) {
        out([field(override.email), ...limits(override), ...(await used(override.userId))].join('\t'))
      }
    },
  },
  'audit:verify': {
    usage: '[--org SLUG]',
    summary: "Checks the audit log's hash chains (every organization's, or one); names the first broken event.",
    options: { org: { placeholder: 'SLUG', description: "only this organization's chain" } },
    details: [
      'Reads every kept event in order and checks that each is the next place in its chain, names the hash of',
      'the one before it and hashes to its own; the last must be the one the chain head names. Prints one line',
      'per chain (its events, places and the hash of its last event, worth keeping elsewhere: a rewritten chain',
      'ends in another), then exits 1 naming the first broken event, if any. Chain 0 holds the events of no',
      'organization (sign-ins by unknown emails, open registrations). Works while the server runs.',
    ],
    async run({ values, out, store }) {
      const { users, audit } = await store()
      const only = values.org === undefined ? undefined : await organizationOf(users, values.org)
      const slugs = new Map((await users.organizationSlugs()).map(({ id, slug }) => [id, slug]))
      const nameOf = (id: number) => (id === noOrganization ? '(no organization)' : (slugs.get(id) ?? `#${id}`))
      const reports = await verifyAuditLog(audit, only)
      if (reports.length === 0) out(only === undefined ? 'No audit events yet' : `No audit events in ${values.org}`)
      let broken: string | null = null
      for (const report of reports) {
        const places =
          report.firstSeq === null ? '' : ` (places ${report.firstSeq}-${report.lastSeq ?? report.firstSeq})`
        const state = report.broken ? 'BROKEN' : 'ok'
        out(
          `${state} ${nameOf(report.organizationId)}: ${plural(report.events, 'event')} checked${places}` +
            (report.headHash ? `, last hash ${report.headHash}` : ''),
        )
        if (report.broken && broken === null) {
          const event = report.broken.event
          const which = event
            ? `event ${event.id} (place ${event.seq}, ${event.action} at ${toIso(event.at)})`
            : 'its first event'
          broken = `The audit chain of ${nameOf(report.organizationId)} is broken at ${which}: ${report.broken.reason}`
        }
      }
      if (broken !== null) throw new OperationError(broken)
    },
  },
  'audit:retention': {
    usage: '--org SLUG [--days N]',
    summary: 'Shows, or with --days sets, how many days an organization keeps its audit events (default 400).',
    options: {
      org: { placeholder: 'SLUG', description: 'the organization' },
      days: {
        placeholder: 'N',
        description: `whole days, from ${auditRetentionRange.min} to ${auditRetentionRange.max}`,
      },
    },
    details: [
      "Separate from the threads' retention. The hourly upkeep deletes older events; the chain goes on from the",
      'first event kept. A change is recorded in the log, by the system. Owners and admins set it on',
      'Administration → Audit too.',
    ],
    async run({ values, out, now, store }) {
      const slug = required(values, 'org')
      const { users, audit } = await store()
      const organizationId = await organizationOf(users, slug)
      if (values.days !== undefined) {
        await setAuditRetention(audit, organizationId, parseAuditRetentionDays(values.days), now, systemOrigin)
      }
      out(`${slug} keeps audit events for ${plural(await audit.retentionOf(organizationId), 'day')}`)
    },
  },
  backup: {
    usage: '--to DIR',
    summary: 'Copies the database and the uploads into a new folder DIR, consistently, while the server runs.',
    options: { to: { placeholder: 'DIR', description: 'the backup folder to create; it must not exist yet' } },
    details: [
      'DIR holds backup.json (when it was made, row counts, files), threadhouse.sqlite (the database as',
      'one file, copied from one snapshot with VACUUM INTO) and uploads/ (the files of every attachment in',
      'that snapshot, from UPLOADS_DIR or, with S3_BUCKET, downloaded from the bucket). Files uploaded after',
      'the snapshot wait for the next backup. DIR appears only once complete; until then the copy is written',
      'to DIR.partial-<random>.',
    ],
    async run({ values, config, out, now, database }) {
      const target = required(values, 'to')
      const files = configuredFiles(config)
      const result = await backup(database(), { blobs: files.blobs, uploadsDir: config.UPLOADS_DIR }, target, now)
      if (result.leftOut.length > 0) {
        out(`Left out ${plural(result.leftOut.length, 'attachment')} removed while the backup ran`)
      }
      out(
        // The folder in full: `bun run` works from the repository, not from where the operator typed the command.
        `Backed up ${config.DATABASE_PATH} and ${files.name} to ${resolve(target)}: ${describeCounts(result.counts)}; ` +
          `${plural(result.files, 'file')}, ${result.bytes} bytes`,
      )
    },
  },
  restore: {
    usage: '--from DIR',
    summary: 'Replaces the database and the uploads with those of a backup; the server must be stopped.',
    options: { from: { placeholder: 'DIR', description: 'a folder written by backup' } },
    details: [
      'Refuses while a server, or another command, has the database open. Checks the backup first',
      '(integrity check, row counts, files), then replaces DATABASE_PATH (removing its -wal and -shm files)',
      'and the files: the contents of UPLOADS_DIR (dot-files stay) or, with S3_BUCKET, the attachments in',
      'the bucket (other objects stay). It checks the result the same way. If it stops half-way, run it',
      'again. The next start applies any migrations newer than the backup.',
    ],
    async run({ values, config, out }) {
      if (config.DATABASE_URL !== undefined) throw sqliteFileOnly('restore')
      const source = required(values, 'from')
      const files = configuredFiles(config)
      const result = await restore(source, { databasePath: config.DATABASE_PATH, blobs: files.blobs })
      out(
        `Restored ${source} (made ${result.createdAt}) into ${config.DATABASE_PATH} and ${files.name}: ` +
          `${describeCounts(result.counts)}; ${plural(result.files, 'file')}; integrity check ok`,
      )
    },
  },
  'db:copy': {
    usage: '[--to URL]',
    summary: 'Copies a stopped SQLite installation and its files into an empty PostgreSQL database and bucket.',
    options: {
      to: {
        placeholder: 'URL',
        description: 'the PostgreSQL database to fill, postgres://user:password@host:5432/name (default: DATABASE_URL)',
      },
    },
    details: [
      'Copies DATABASE_PATH: refuses while a server or another command has it open. The PostgreSQL database must',
      'exist and hold no rows; its migrations are applied first. Every row goes over in one transaction, with its',
      'IDs, times and hashes, so passwords, tokens and sessions keep working; the counts are checked before it',
      'commits, and a failure or a difference commits nothing. The files of every attachment in UPLOADS_DIR go to',
      'the bucket when S3_BUCKET and the other S3_* variables are set (before any row), and stay in UPLOADS_DIR',
      'otherwise. The search index is built at the end. Give the URL in DATABASE_URL to keep its password out of',
      'the command line; no output repeats it. Step by step: docs/operations.md, "Moving from SQLite to PostgreSQL".',
    ],
    async run({ values, config, out }) {
      const url = values.to ?? config.DATABASE_URL
      if (url === undefined) throw new UsageError('--to is required unless DATABASE_URL is set')
      if (!isDatabaseUrl(url)) {
        throw new UsageError(
          '--to must be a PostgreSQL URL such as postgres://user:password@host:5432/threadhouse (the value is not shown)',
        )
      }
      if (config.DATABASE_URL !== undefined && url !== config.DATABASE_URL) {
        throw new UsageError('--to and DATABASE_URL name different databases; give one of them')
      }
      const files = configuredFiles(config)
      if (files.blobs.description.kind === 's3') await checkBlobStore(files.blobs)
      // Loaded only here: the other commands never load the PostgreSQL tables and driver.
      const { copyToPostgres } = await import('./operations/db-copy')
      const { storeName } = await import('./operations/store-files')
      const result = await copyToPostgres(
        { databasePath: config.DATABASE_PATH, uploadsDir: config.UPLOADS_DIR },
        { url, blobs: files.blobs },
      )
      const { database, host } = result.database
      const local = files.blobs.description.kind === 'local'
      out(
        `Copied ${config.DATABASE_PATH} into the PostgreSQL database ${database} at ${host}; ` +
          (local
            ? `the files stay in ${config.UPLOADS_DIR}`
            : `the files went to ${storeName(files.blobs.description)}`),
      )
      const rows: [string, string][] = [
        ...result.tables.map(({ name, rows }): [string, string] => [name, String(rows)]),
        [
          'attachment files',
          `${result.files.total} (${result.files.bytes} bytes${local ? '' : `, ${result.files.copied} copied`})`,
        ],
      ]
      const width = Math.max(...rows.map(([name]) => name.length))
      for (const [name, value] of rows) out(`  ${name.padEnd(width)}  ${value}`)
      out(
        `Counts checked: every table holds as many rows as in SQLite and every file is in place; ` +
          `search index built for ${plural(result.indexed, 'thread')}`,
      )
    },
  },
}

const helpCommand = {
  usage: '[COMMAND]',
  summary: 'Lists the commands, or describes one (as does `bun run cli COMMAND --help`).',
}

function overview(): string {
  const entries = [...Object.entries(commands), ['help', helpCommand] as const]
  return [
    'Usage: bun run cli <command> [options]',
    '',
    'Commands:',
    ...entries.flatMap(([name, { usage, summary }]) => [`  ${`${name} ${usage}`.trimEnd()}`, `      ${summary}`]),
    '',
    'Commands read the same variables as the server (DATABASE_PATH, UPLOADS_DIR, S3_*) and work while it runs,',
    'except restore and db:copy. Only migrate and restore create a missing database.',
  ].join('\n')
}

function commandHelp(name: string, command: Command): string {
  const options = [
    ...Object.entries(command.options).map(([option, { placeholder, description }]) => [
      `--${option} ${placeholder}`.trimEnd(),
      description,
    ]),
    ['--help', 'shows this help'],
  ]
  const width = Math.max(...options.map(([left]) => left?.length ?? 0))
  return [
    `Usage: bun run cli ${`${name} ${command.usage}`.trimEnd()}`,
    '',
    command.summary,
    '',
    'Options:',
    ...options.map(([left, right]) => `  ${left?.padEnd(width)}  ${right}`),
    ...(command.details ? ['', ...command.details] : []),
  ].join('\n')
}

function find(name: string): Command {
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined
  if (!command) throw new UsageError(`Unknown command "${name}"; see \`bun run cli help\``)
  return command
}

const isHelpFlag = (arg: string): boolean => arg === '--help' || arg === '-h'

/** The help text `argv` asks for, or null when it asks for a command to run. */
function helpFor(argv: string[]): string | null {
  const [name, ...rest] = argv
  if (name === undefined) return null
  if (name === 'help' || isHelpFlag(name)) {
    if (rest.length > 1) throw new UsageError('help takes at most one command')
    const topic = rest[0]
    return topic === undefined || topic === 'help' || isHelpFlag(topic) ? overview() : commandHelp(topic, find(topic))
  }
  return rest.some(isHelpFlag) ? commandHelp(name, find(name)) : null
}

export async function runCli(argv: string[], out: (line: string) => void): Promise<void> {
  const help = helpFor(argv)
  if (help !== null) {
    out(help)
    return
  }
  const [name, ...rest] = argv
  if (name === undefined) throw new UsageError('No command; see `bun run cli help`')
  const command = find(name)
  let values: Record<string, string | undefined>
  const lists: Record<string, string[]> = {}
  try {
    const options = Object.fromEntries(
      Object.entries(command.options).map(([option, { flag, multiple }]) => [
        option,
        { type: flag ? 'boolean' : 'string', ...(multiple && { multiple: true }) },
      ]),
    )
    const parsed = parseArgs({
      args: rest,
      options: options as Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>,
      strict: true,
    }).values
    values = {}
    for (const [option, value] of Object.entries(parsed)) {
      if (Array.isArray(value)) lists[option] = value.map(String)
      else values[option] = value === true ? 'true' : (value as string)
    }
  } catch (error) {
    throw new UsageError(`${(error as Error).message}; see \`bun run cli ${name} --help\``)
  }
  const config = loadConfig()
  let db: Db | undefined
  let opened: OpenedStore | undefined
  const database = (): Db => {
    if (config.DATABASE_URL !== undefined) throw sqliteFileOnly(name)
    if (db) return db
    try {
      db = openDatabase(config.DATABASE_PATH, { mustExist: true })
    } catch (error) {
      if (!(error instanceof MissingDatabaseError)) throw error
      throw new UsageError(
        `There is no database at ${config.DATABASE_PATH}; start the server once (bun run start) or create it with bun run cli migrate`,
      )
    }
    migrateDatabase(db)
    return db
  }
  const store = async (): Promise<Store> => {
    if (config.DATABASE_URL === undefined) return sqliteStore(database())
    opened ??= await openStore(config)
    return opened.store
  }
  try {
    await command.run({ values, lists, config, out, now: systemClock.now(), database, store })
  } finally {
    db?.$client.close()
    await opened?.close()
  }
}

if (import.meta.main) {
  try {
    await runCli(process.argv.slice(2), (line) => console.log(line))
  } catch (error) {
    const known =
      error instanceof UsageError ||
      error instanceof AppError ||
      error instanceof ConfigError ||
      error instanceof StartupError ||
      error instanceof OperationError
    const message = error instanceof Error ? error.message : String(error)
    // One line, as the contract promises, whatever the message held.
    console.error(`error: ${known ? message : `unexpected failure: ${message}`}`.replace(/\s*\n\s*/g, ' '))
    process.exit(1)
  }
}
