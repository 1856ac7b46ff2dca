// Boot: config → open db → migrate → createApp → recover queued work → search indexer → listen → first run.
import { createApp } from './app'
import { createFileInspector } from './attachments/inspector'
import { sweepUploads } from './attachments/service'
import { firstRun } from './bootstrap'
import { ConfigError, loadConfig } from './config'
import { migrateDatabase, openDatabase } from './db/client'
import { createWorkerRunner } from './generation/runner'
import { describeProvider, providerSettings } from './generation/settings'
import { createLogger } from './shared/log'
import { systemClock } from './shared/time'
import { startSearchIndexer } from './threads/search'
import { startUpkeep } from './upkeep'

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
const swept = await sweepUploads(db, config.UPLOADS_DIR)
if (swept > 0) log.info('removed stray upload files left by a crash', { count: swept })

const settings = providerSettings(config)
log.info('generator', describeProvider(settings))
const runner = createWorkerRunner(settings, log)
const inspector = createFileInspector(log)
// Response bodies are checked against their schemas in tests, not on every production request: see
// AppDeps.validateResponses.
const app = createApp({ db, config, runner, inspector, clock: systemClock, log, validateResponses: false })
// Unfinished work is queued again before the first request can reach a thread.
app.decorator.engine.recover()
// Search documents that writes left pending (including any a crash left) are rewritten in the background.
const indexer = startSearchIndexer(db, log)
const upkeep = startUpkeep(db, systemClock, log)
try {
  app.listen({ port: config.PORT, hostname: config.HOST, idleTimeout: 60 })
} catch (error) {
  console.error(`Cannot listen on HOST ${config.HOST}, PORT ${config.PORT}: ${(error as Error).message}`)
  // Recovery has already claimed unfinished answers: give their attempts back, as a shutdown does.
  await app.decorator.engine.close()
  await inspector.close()
  process.exit(1)
}
log.info('listening', { port: app.server?.port, url: config.PUBLIC_URL })
// Only once the server is up: credentials printed beside a failed start would never be printed again.
await firstRun(db, config, systemClock)

let stopping = false
async function shutdown(signal: string): Promise<void> {
  if (stopping) return
  stopping = true
  log.info('shutting down', { signal })
  // Stop listening first; running answers get a grace period to finish and reach their streams; what is
  // still unfinished then stays queued in the database for the next start.
  const closing = app.server?.stop(false)
  await app.decorator.engine.close(config.SHUTDOWN_GRACE_MS)
  await inspector.close()
  await app.stop(true)
  await closing
  indexer.stop()
  upkeep.stop()
  db.$client.close()
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))
