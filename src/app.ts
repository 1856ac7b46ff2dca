// Builds the whole HTTP application from its dependencies. No side effects: nothing listens, no
// timer starts and no work is recovered until src/index.ts (or a test) says so.
import { Elysia } from 'elysia'
import { identity } from './auth'
import type { Config } from './config'
import type { Db } from './db/client'
import { docs } from './docs'
import { responses } from './generation'
import { createGenerationEngine } from './generation/service'
import { Heartbeats } from './generation/sse'
import type { GenerationRunner } from './generation/types'
import { errorPlugin } from './shared/errors'
import type { Logger } from './shared/log'
import { responseSchemas } from './shared/responses'
import type { Clock } from './shared/time'
import { threadRoutes } from './threads'
import { linksFor } from './threads/service'

export interface AppDeps {
  db: Db
  config: Pick<Config, 'PUBLIC_URL' | 'GENERATION_CONCURRENCY'>
  runner: GenerationRunner
  clock: Clock
  log: Logger
  /** How often idle SSE streams get a comment line; 15 s unless a test needs it sooner. */
  heartbeatMs?: number
  /**
   * Whether every response body is checked against its schema at run time (default true, as in tests).
   * The server turns it off: bodies are built by code typed with the same schemas, the test suite runs
   * every route with the check on, and in production a failed check could only turn a drifted answer
   * into a 500. It costs about a third of a 50-thread list page's time in-process (TypeBox checks every
   * field and format of every item), so it is paid where it finds bugs, not on every request.
   */
  validateResponses?: boolean
}

export function createApp(deps: AppDeps) {
  const engine = createGenerationEngine({
    db: deps.db,
    runner: deps.runner,
    clock: deps.clock,
    log: deps.log,
    concurrency: deps.config.GENERATION_CONCURRENCY,
  })
  const shared = {
    db: deps.db,
    clock: deps.clock,
    engine,
    links: linksFor(deps.config.PUBLIC_URL),
    heartbeats: new Heartbeats(deps.heartbeatMs ?? 15_000),
    responses: responseSchemas(deps.validateResponses ?? true),
  }
  return new Elysia({ normalize: false })
    .decorate('engine', engine)
    .use(errorPlugin(deps.log))
    .onAfterHandle(({ set }) => {
      set.headers['x-content-type-options'] = 'nosniff'
    })
    .get(
      '/healthz',
      () => {
        deps.db.$client.query('select 1').get()
        return { status: 'ok' }
      },
      { detail: { hide: true } },
    )
    .get('/', ({ redirect }) => redirect('/swagger', 302), { detail: { hide: true } })
    .use(docs(deps.config.PUBLIC_URL))
    .use(identity(shared))
    .use(threadRoutes(shared))
    .use(responses(shared))
}

export type App = ReturnType<typeof createApp>
