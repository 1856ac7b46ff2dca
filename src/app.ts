// Builds the whole HTTP application from its dependencies. No side effects: nothing listens, no
// timer starts and no work is recovered until src/index.ts (or a test) says so.
import { Elysia } from 'elysia'
import { adminPages } from './admin/pages'
import { attachmentRoutes } from './attachments'
import type { FileInspector } from './attachments/inspector'
import { maxRequestBytes } from './attachments/limits'
import { attachmentNames } from './attachments/service'
import { auditRoutes } from './audit'
import { auditPages } from './audit/pages'
import { identity } from './auth'
import type { Config } from './config'
import { toolExecutor } from './connectors/executor'
import { connectorPages } from './connectors/pages'
import type { ToolCaller } from './connectors/ports'
import { pageTools, toolNames } from './connectors/thread-tools'
import { docs } from './docs'
import { answerRoutes } from './generation'
import { createGenerationEngine } from './generation/service'
import type { GenerationRunner } from './generation/types'
import { mcpRoutes } from './mcp'
import { metricsRoutes } from './metrics'
import { createMetrics } from './metrics/metrics'
import { modelRoutes } from './models'
import { type Catalogue, loadCatalogue } from './models/catalogue'
import { answerModels, getThreadSettings, listModels, modelChoice, updateThreadSettings } from './models/service'
import { oauthErrorSurface, oauthRoutes } from './oauth'
import { budgetStandings, composerNotice, quotaCheck } from './quotas/service'
import { settingsPages } from './settings/pages'
import { errorPlugin } from './shared/error-plugin'
import { DomainEvents } from './shared/events'
import { httpBasics } from './shared/http'
import type { Logger } from './shared/log'
import { AllowedMethods } from './shared/methods'
import { RateLimiter, sharedLimiter } from './shared/rate-limit'
import { responseSchemas } from './shared/responses'
import { type SecretBox, secretBox } from './shared/secret-box'
import { Heartbeats, OpenStreams } from './shared/streams/sse'
import type { Clock } from './shared/time'
import { shareRoutes } from './shares'
import { sharePages } from './shares/pages'
import { oidcSettings } from './signin/oidc'
import { oidcSignin } from './signin/oidc-pages'
import { signin } from './signin/pages'
import { type BlobStore, blobLocation, openBlobStore } from './storage/blobs'
import { storageHealth } from './storage/health'
import type { Store } from './store'
import { searchRoutes, threadFeedRoutes, threadRoutes } from './threads'
import { createConversation } from './threads/conversation'
import { ThreadFeed } from './threads/feed'
import { linksFor } from './threads/links'
import { type PageModels, type PageQuotas, threadPages } from './threads/pages'
import { usageRoutes } from './usage'
import { usagePages } from './usage/pages'
import { pageErrors } from './web/errors'
import { siteRoutes } from './web/site'
import { createDeliveryWorker, type DeliveryDeps } from './webhooks/delivery'
import { createWebhookEmitter, queueWebhookEvents } from './webhooks/events'
import { webhookPages } from './webhooks/pages'

export interface AppDeps {
  /** Every feature's repository, over whichever database the configuration names. */
  store: Store
  config: Config
  /**
   * The models on offer (src/models/catalogue.ts), read once at start-up; by default from `config` (MODELS_FILE,
   * LLM_MODELS or the LLM_* variables) with keys from process.env.
   */
  models?: Catalogue
  runner: GenerationRunner
  /** Checks uploaded files off the request thread; its owner closes it on shutdown, as with the runner. */
  inspector: FileInspector
  /** Where attachments' bytes are kept; by default the store the configuration names (UPLOADS_DIR or S3_BUCKET). */
  blobs?: BlobStore
  clock: Clock
  log: Logger
  /** Comment lines for silent SSE streams, every 15 s unless a test brings its own. */
  heartbeats?: Heartbeats
  /**
   * Whether every response body is checked against its schema at run time (default true, as in tests).
   * The server turns it off: bodies are built by code typed with the same schemas, the test suite runs
   * every route with the check on, and in production a failed check could only turn a drifted answer
   * into a 500. It costs about a third of a 50-thread list page's time in-process (TypeBox checks every
   * field and format of every item), so it is paid where it finds bugs, not on every request.
   */
  validateResponses?: boolean
  /** How often the change feed reads new changes (ThreadFeed): every second, or only when a test calls `poll()`. */
  feedPollMs?: number | null
  /** Webhook delivery's retry schedule, DNS resolver and polling, for tests; the defaults otherwise. */
  webhooks?: Pick<DeliveryDeps, 'retry' | 'resolve' | 'pollMs'>
  /**
   * Connects to the organizations' MCP servers (connectors/ports.ts): fetches their tool lists and calls their tools.
   * Without one, servers can be added and administered, and their tools wait to be fetched.
   */
  toolCaller?: ToolCaller
  /** Seals and opens stored secrets; by default a box over SECRETS_KEY and SECRETS_KEY_PREVIOUS. */
  secrets?: SecretBox
}

export function createApp(deps: AppDeps) {
  const links = linksFor(deps.config.PUBLIC_URL)
  // The operators' metrics, only with METRICS_TOKEN: without it nothing is counted and /metrics does not exist. The
  // features are told through ports (callbacks below); one registry per app, never a global one.
  const metrics = deps.config.METRICS_TOKEN === undefined ? null : createMetrics()
  // Created here, started by src/index.ts (or a test): the queue is in the database, sent by every instance.
  const webhooks = createDeliveryWorker({
    webhooks: deps.store.webhooks,
    clock: deps.clock,
    log: deps.log,
    allowPrivateNetworks: deps.config.WEBHOOKS_ALLOW_PRIVATE_NETWORKS,
    timeoutMs: deps.config.WEBHOOKS_TIMEOUT_MS,
    attempted: metrics?.delivery,
    ...deps.webhooks,
  })
  const store = deps.store
  const secrets =
    deps.secrets ??
    secretBox({ current: deps.config.SECRETS_KEY, previous: deps.config.SECRETS_KEY_PREVIOUS?.split(',') })
  const catalogue = deps.models ?? loadCatalogue(deps.config)
  const models = { catalogue, models: store.models }
  // The conversation's ModelChoice port (threads/conversation.ts): whether a regenerate's `model` may be used.
  const choice = modelChoice(models)
  // Which tools a thread's settings may name (models/service.ts ToolNames): the organization's, turned on.
  const tools = toolNames(store.mcpServers)
  // What the chat pages show of the models (threads/pages.tsx PageModels): threads/ does not import models/, which
  // imports it.
  const threadModels = { ...models, threads: store.threads, toolNames: tools }
  const pageModels: PageModels = {
    offered: async (caller) => (await listModels(models, caller.organizationId)).data,
    nameOf: (id) => catalogue.byId.get(id)?.name,
    settings: (caller, threadId) => getThreadSettings(threadModels, caller, threadId),
    updateSettings: (caller, threadId, changes) => updateThreadSettings(threadModels, caller, threadId, changes),
  }
  const defaultModel = catalogue.byId.get(catalogue.defaultId)
  const pageModel = {
    provider: defaultModel?.provider ?? deps.config.LLM_PROVIDER,
    model: defaultModel?.name ?? deps.config.LLM_MODEL ?? null,
    several: catalogue.models.length > 1,
  }
  // Monthly budgets (src/quotas/): the conversation's QuotaCheck port, and the composer's notice on the pages.
  const quotas = { quotas: store.quotas, clock: deps.clock }
  const pageQuotas: PageQuotas = { notice: (caller) => composerNotice(quotas, caller, deps.clock.now()) }
  // What follows a committed write (shared/events.ts): webhook deliveries are queued for the events they report.
  const events = new DomainEvents(deps.log)
  queueWebhookEvents(
    events,
    createWebhookEmitter({
      webhooks: store.webhooks,
      threads: store.threads,
      links,
      clock: deps.clock,
      log: deps.log,
      queued: () => webhooks.wake(),
    }),
  )
  if (metrics) events.on('answer.stored', ({ outcome, model, usage }) => metrics.answer(outcome, model, usage))
  const engine = createGenerationEngine({
    events,
    generations: store.generations,
    relay: store.relay,
    runner: deps.runner,
    clock: deps.clock,
    log: deps.log,
    concurrency: deps.config.GENERATION_CONCURRENCY,
    leaseMs: deps.config.GENERATION_LEASE_MS,
    models: answerModels(models),
    observer: metrics ? { failed: metrics.providerFailed, retried: metrics.providerRetried } : undefined,
    prices: (id) => catalogue.byId.get(id)?.price,
    // Without an MCP client (tests that need none) answers are offered no tools.
    tools: deps.toolCaller
      ? toolExecutor({
          servers: store.mcpServers,
          toolCalls: store.toolCalls,
          settings: store.models,
          caller: deps.toolCaller,
          clock: deps.clock,
          log: deps.log,
          limits: {
            maxRounds: deps.config.TOOLS_MAX_ROUNDS,
            deadlineMs: deps.config.TOOLS_ANSWER_DEADLINE_MS,
            callTimeoutMs: deps.config.MCP_TIMEOUT_MS,
          },
          supportsTools: (id) => {
            const provider = catalogue.byId.get(id)?.provider
            return provider !== undefined && provider !== 'echo'
          },
        })
      : undefined,
  })
  const blobs = deps.blobs ?? openBlobStore(blobLocation(deps.config))
  const storageAnswers = storageHealth(blobs, deps.log)
  const oidc = oidcSettings(deps.config)
  const perMinute = (max: number, refused?: () => void) =>
    max > 0 ? new RateLimiter({ max, windowMs: 60_000 }, deps.clock, refused) : undefined
  // Sign-in, password and token-endpoint attempts slow down guessing, so every instance on the database counts them
  // together; the per-address and per-token limits above stay in each process (shared/rate-limit.ts says why).
  const authPerMinute = deps.config.RATE_LIMIT_AUTH_PER_MINUTE
  const authLimiter =
    authPerMinute > 0
      ? sharedLimiter(
          store.rateLimits,
          'auth',
          { max: authPerMinute, windowMs: 60_000 },
          deps.clock,
          metrics?.refusals('auth'),
        )
      : undefined
  const feed = new ThreadFeed({ threads: store.threads, links, log: deps.log, clock: deps.clock }, deps.feedPollMs)
  // The one way a message is sent and its answer started (the API, the pages and MCP all go through it).
  const conversation = createConversation({
    threads: store.threads,
    answers: engine,
    events,
    clock: deps.clock,
    links,
    fileNames: (ids) => attachmentNames(store.attachments, ids),
    models: choice,
    quotas: quotaCheck(quotas),
  })
  const streams = new OpenStreams({
    perUser: deps.config.STREAM_LIMIT_PER_USER,
    total: deps.config.STREAM_LIMIT_TOTAL,
    backlogBytes: deps.config.STREAM_BACKLOG_BYTES,
    refused: metrics?.refusals('streams'),
  })
  // The instance is the engine's lease holder, as the database and the logs name it.
  metrics?.attach({
    instanceId: engine.stats().holder,
    answers: () => engine.stats(),
    openStreams: () => streams.count(),
  })
  // What every plugin may have: time, logs, the engine, limits, streams. No repository is in it: each plugin is
  // handed below the repositories its deps interface names (its own, and the few of other features' it reads).
  const shared = {
    clock: deps.clock,
    log: deps.log,
    engine,
    events,
    conversation,
    catalogue,
    tokenLimiter: perMinute(deps.config.RATE_LIMIT_API_PER_MINUTE, metrics?.refusals('token')),
    authLimiter,
    links,
    feed,
    heartbeats: deps.heartbeats ?? new Heartbeats(15_000),
    streams,
    uploadsDir: deps.config.UPLOADS_DIR,
    inspector: deps.inspector,
    blobs,
    publicUrl: deps.config.PUBLIC_URL,
    responses: responseSchemas(deps.validateResponses ?? true),
  }
  // Bearer tokens, resolved by auth() in every API plugin; the session cookie and CSRF key of every page.
  const bearer = { accessTokens: store.accessTokens, oauthGrants: store.oauthGrants, tokenCache: store.tokenCache }
  const pages = { sessions: store.sessions, serverKeys: store.serverKeys }
  const threadsAndFiles = { threads: store.threads, attachments: store.attachments }
  // No request needs more than an upload can hold, and the routes refuse a longer declared Content-Length
  // with their own 413 and JSON body, unread. Bun refuses a body at its own limit with a bare 413 before any
  // route sees it, so that limit is a backstop above the routes': it bounds how far a chunked body is read.
  const allowed = new AllowedMethods()
  const app = new Elysia({ normalize: false, serve: { maxRequestBodySize: 4 * maxRequestBytes } })
    .decorate('engine', engine)
    // For tests that hold a reaction to a committed write (an answer's end) open.
    .decorate('events', events)
    .decorate('webhooks', webhooks)
    .decorate('feed', feed)
    .use(
      errorPlugin(
        deps.log,
        allowed,
        [oauthErrorSurface],
        pageErrors({ sessions: store.sessions, clock: deps.clock, publicUrl: deps.config.PUBLIC_URL }, allowed),
      ),
    )
    .use(
      httpBasics({
        log: deps.log,
        config: deps.config,
        ipLimiter: perMinute(deps.config.RATE_LIMIT_IP_PER_MINUTE, metrics?.refusals('ip')),
        observe: metrics?.request,
      }),
    )
    .get(
      '/healthz',
      async ({ status }) => {
        await store.ping()
        return (await storageAnswers()) ? { status: 'ok' } : status(503, { status: 'storage_unavailable' })
      },
      { detail: { hide: true } },
    )
    .get(
      '/readyz',
      async ({ status }) => {
        await store.ping()
        return engine.accepting() ? { status: 'ready' } : status(503, { status: 'stopping' })
      },
      { detail: { hide: true } },
    )
    // Only with METRICS_TOKEN set; otherwise /metrics is the 404 of any unknown path.
    .use(metrics ? metricsRoutes({ metrics, token: deps.config.METRICS_TOKEN as string }) : new Elysia())
    .use(docs(deps.config.PUBLIC_URL))
    .use(siteRoutes())
    .use(identity({ ...shared, ...bearer }))
    .use(threadFeedRoutes({ ...shared, ...bearer }))
    .use(searchRoutes({ ...shared, ...bearer, threads: store.threads }))
    .use(
      threadRoutes({
        ...shared,
        ...bearer,
        ...threadsAndFiles,
        idempotency: store.idempotency,
        usage: store.usage,
        toolCalls: store.toolCalls,
        audit: store.audit,
      }),
    )
    .use(usageRoutes({ ...shared, ...bearer, usage: store.usage, currency: catalogue.currency }))
    .use(auditRoutes({ ...shared, ...bearer, audit: store.audit, users: store.users }))
    .use(modelRoutes({ ...shared, ...bearer, threads: store.threads, models: store.models, toolNames: tools }))
    .use(attachmentRoutes({ ...shared, ...bearer, ...threadsAndFiles, idempotency: store.idempotency }))
    .use(shareRoutes({ ...shared, ...bearer, ...threadsAndFiles, shares: store.shares }))
    .use(answerRoutes({ ...shared, ...bearer, threads: store.threads, generations: store.generations }))
    .use(signin({ ...shared, ...pages, users: store.users, audit: store.audit, externalSignIn: oidc?.name ?? null }))
    .use(oidcSignin({ ...shared, ...pages, users: store.users, audit: store.audit, oidc }))
    .use(
      threadPages({
        ...shared,
        ...pages,
        ...threadsAndFiles,
        usage: store.usage,
        toolCalls: store.toolCalls,
        generations: store.generations,
        audit: store.audit,
        model: pageModel,
        models: pageModels,
        tools: pageTools(store.mcpServers),
        quotas: pageQuotas,
      }),
    )
    .use(
      oauthRoutes({
        ...shared,
        ...pages,
        oauthClients: store.oauthClients,
        oauthGrants: store.oauthGrants,
        rateLimits: store.rateLimits,
        openRegistration: deps.config.OAUTH_OPEN_REGISTRATION,
        registrationRefused: metrics?.refusals('registration'),
      }),
    )
    .use(
      mcpRoutes({
        ...shared,
        ...bearer,
        ...threadsAndFiles,
        generations: store.generations,
        models: store.models,
        toolNames: tools,
      }),
    )
    .use(
      settingsPages({
        ...shared,
        ...pages,
        users: store.users,
        accessTokens: store.accessTokens,
        oauthGrants: store.oauthGrants,
        oauthClients: store.oauthClients,
      }),
    )
    .use(sharePages({ ...shared, ...pages, ...threadsAndFiles, shares: store.shares }))
    .use(
      adminPages({
        ...shared,
        ...pages,
        users: store.users,
        oauthClients: store.oauthClients,
        models: store.models,
        quotas: store.quotas,
      }),
    )
    .use(
      usagePages({
        ...shared,
        ...pages,
        usage: store.usage,
        users: store.users,
        currency: catalogue.currency,
        budgets: (caller) => budgetStandings(quotas, caller, deps.clock.now()),
      }),
    )
    .use(auditPages({ ...shared, ...pages, audit: store.audit, users: store.users }))
    .use(
      webhookPages({
        ...shared,
        ...pages,
        webhooks: store.webhooks,
        allowPrivateNetworks: deps.config.WEBHOOKS_ALLOW_PRIVATE_NETWORKS,
        wake: () => webhooks.wake(),
      }),
    )
    .use(
      connectorPages({
        ...shared,
        ...pages,
        mcpServers: store.mcpServers,
        secrets,
        toolCaller: deps.toolCaller,
        allowPrivateNetworks: deps.config.WEBHOOKS_ALLOW_PRIVATE_NETWORKS,
        outbound: { timeoutMs: deps.config.MCP_TIMEOUT_MS, maxResponseBytes: deps.config.MCP_RESPONSE_MAX_BYTES },
      }),
    )
  allowed.learn(app.routes)
  return app
}

export type App = ReturnType<typeof createApp>
