// Boot: config → open db → migrate → first run → createApp → listen → recover queued work.
import { createApp } from './app'
import { firstRun } from './bootstrap'
import { ConfigError, loadConfig } from './config'
import { migrateDatabase, openDatabase } from './db/client'
import { createWorkerRunner } from './generation/runner'
import { createLogger } from './shared/log'
import { systemClock } from './shared/time'

let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig()
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  console.error(`Configuration error: ${error.message}`)
  process.exit(1)
}

const log = createLogger(config.LOG_LEVEL)
const db = openDatabase(config.DATABASE_PATH)
migrateDatabase(db)
await firstRun(db, config, systemClock)

const runner = createWorkerRunner({ provider: config.LLM_PROVIDER, echoTokenDelayMs: config.ECHO_TOKEN_DELAY_MS }, log)
// Response bodies are checked against their schemas in tests, not on every production request: see
// AppDeps.validateResponses.
const app = createApp({ db, config, runner, clock: systemClock, log, validateResponses: false })
app.listen({ port: config.PORT, hostname: config.HOST, idleTimeout: 60 })
log.info('listening', { port: app.server?.port, url: config.PUBLIC_URL })
app.decorator.engine.recover()

let stopping = false
async function shutdown(signal: string): Promise<void> {
  if (stopping) return
  stopping = true
  log.info('shutting down', { signal })
  // Unfinished answers stay queued in the database and are run again at the next start. Open streams
  // are cut (not left hanging), so their clients reconnect to the next process.
  await app.decorator.engine.close()
  await app.stop(true)
  db.$client.close()
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))
