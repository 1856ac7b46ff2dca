// Boot: config → start-up checks (storage, one server per SQLite file) → open the store (SQLite or PostgreSQL) and
// migrate → createApp → listen → recover queued work → search and file indexers → first run.
import { createApp } from './app'
import { startFileIndexer } from './attachments/file-texts'
import { createFileInspector } from './attachments/inspector'
import { sweepStaging, sweepStore } from './attachments/sweep'
import { createPdfTextExtractor } from './attachments/text-extractor'
import { firstRun } from './bootstrap'
import { ConfigError, loadConfig } from './config'
import { createMcpConnections } from './connectors/client'
import { lockDatabase } from './db/instance-lock'
import { createWorkerRunner } from './generation/runner'
import { type Catalogue, describeCatalogue, loadCatalogue, workerModels } from './models/catalogue'
import { createLogger } from './shared/log'
import { secretBox } from './shared/secret-box'
import { StartupError } from './shared/startup-error'
import { systemClock } from './shared/time'
import { checkBlobStore, listenFailure, prepareStorage } from './startup'
import { blobLocation, openBlobStore } from './storage/blobs'
import { type OpenedStore, openStore } from './store/open'
import { startSearchIndexer } from './threads/search'
import { startUpkeep } from './upkeep'

let config: ReturnType<typeof loadConfig>
let catalogue: Catalogue
try {
  config = loadConfig()
  // A bad entry of the models list stops the start here, named by its ID, as a bad variable does.
  catalogue = loadCatalogue(config)
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  console.error(`Configuration error: ${error.message}`)
  process.exit(1)
}

// What would fail later (the first upload into a read-only folder or an unreachable bucket, a second server on the
// same file) stops the start here, with one line, before anything is opened or logged.
// A SQLite file takes one server. PostgreSQL takes several instances, which share what they must through the database
// (docs/operations.md, Several instances).
let instanceLock: ReturnType<typeof lockDatabase> | undefined
let opened: OpenedStore
const blobs = openBlobStore(blobLocation(config))
try {
  prepareStorage(config)
  await checkBlobStore(blobs)
  if (config.DATABASE_URL === undefined) instanceLock = lockDatabase(config.DATABASE_PATH, config.SHUTDOWN_GRACE_MS)
  opened = await openStore(config)
} catch (error) {
  if (!(error instanceof StartupError)) throw error
  console.error(error.message)
  process.exit(1)
}
const { store } = opened

const log = createLogger(config.LOG_LEVEL)
const reportSwept = (count: number) => {
  if (count > 0) log.info('removed stray upload files left by a crash', { count })
}
// Before the server takes uploads: the staging folder, and a local store, whose sweep spares no file without a row.
// A bucket's sweep lists every key, which takes a while in a large one, and spares keys young enough to be uploads
// in flight: it runs once the server is up, as the upkeep's first sweep (below), and every hour after on both.
reportSwept(await sweepStaging(config.UPLOADS_DIR))
const storeIsLocal = blobs.description.kind === 'local'
if (storeIsLocal) reportSwept(await sweepStore(store.attachments, blobs))

// PDFs' text is read in one pool of extract processes, for the answers and for search alike.
const pdfText = createPdfTextExtractor(blobs, log, {
  processes: config.PDF_TEXT_PROCESSES,
  fileTimeoutMs: config.PDF_TEXT_TIMEOUT_MS,
  messageTimeoutMs: config.PDF_TEXT_MESSAGE_TIMEOUT_MS,
  memoryBytes: config.PDF_TEXT_MEMORY_MB * 1024 * 1024,
})
// The worker knows every model's settings (keys included); each answer names the model it is asked of.
const runner = createWorkerRunner(workerModels(catalogue), blobs.location, log, undefined, pdfText)
const inspector = createFileInspector(log)
// Connected MCP servers' headers and tokens are sealed under SECRETS_KEY; their requests follow the webhooks' rule.
const secrets = secretBox({ current: config.SECRETS_KEY, previous: config.SECRETS_KEY_PREVIOUS?.split(',') })
const toolCaller = createMcpConnections({
  servers: store.mcpServers,
  box: secrets,
  outbound: {
    allowPrivateNetworks: config.WEBHOOKS_ALLOW_PRIVATE_NETWORKS,
    timeoutMs: config.MCP_TIMEOUT_MS,
    maxResponseBytes: config.MCP_RESPONSE_MAX_BYTES,
  },
  resultMaxChars: config.TOOLS_RESULT_MAX_CHARS,
  log,
})
// Response bodies are checked against their schemas in tests, not on every production request: see
// AppDeps.validateResponses.
const app = createApp({
  store,
  config,
  models: catalogue,
  runner,
  inspector,
  blobs,
  clock: systemClock,
  log,
  secrets,
  toolCaller,
  validateResponses: false,
})
try {
  // Bun shares a port between processes that both ask (SO_REUSEPORT) and Elysia asks by default: a second
  // server on the same port would take half the requests, on its own database.
  app.listen({ port: config.PORT, hostname: config.HOST, idleTimeout: 60, reusePort: false })
} catch (error) {
  // Nothing has been recovered or started yet: there is nothing to give back.
  console.error(
    `Cannot listen on HOST ${config.HOST}, PORT ${config.PORT}: ${listenFailure(error, config.HOST, config.PORT)}`,
  )
  process.exit(1)
}
// Unfinished work is queued again before the first request can reach a thread: requests are only handled
// once this stretch after listen() yields to the event loop, and on SQLite recovery completes without doing so
// (its promise settles among microtasks), so keep no other await between the two.
await app.decorator.engine.recover()
// Webhook deliveries queued before a restart (or left mid-attempt by a crash) are sent from here on.
await app.decorator.webhooks.start()
// Search documents that writes left pending (including any a crash left) are rewritten in the background.
const indexer = startSearchIndexer(store.search, log)
// Attached files' text is read for search once their answers have ended: those left waiting by a restart at once,
// the rest as this instance's answers end (and every few seconds, for other instances' answers).
const files = startFileIndexer({ attachments: store.attachments, blobs, pdfText, clock: systemClock, log })
app.decorator.events.on('answer.stored', () => files.wake())
const upkeep = startUpkeep({ store, blobs, clock: systemClock, log })
// Which stores and which model this process uses, so an operator reading the log knows what they are looking at.
log.info('database', opened.description)
log.info('storage', blobs.description)
log.info('models', describeCatalogue(catalogue))
log.info('listening', { port: app.server?.port, url: config.PUBLIC_URL })
// Only once the server is up: credentials printed beside a failed start would never be printed again.
await firstRun(store, config, systemClock)

let stopping = false
async function shutdown(signal: string): Promise<void> {
  if (stopping) return
  stopping = true
  log.info('shutting down', { signal })
  // Stop listening first; running answers get a grace period to finish and reach their streams; what is
  // still unfinished then stays queued in the database for the next start.
  const closing = app.server?.stop(false)
  await app.decorator.engine.close(config.SHUTDOWN_GRACE_MS)
  await files.stop()
  await pdfText.close()
  await app.decorator.webhooks.stop()
  await inspector.close()
  await toolCaller.close()
  await app.stop(true)
  await closing
  indexer.stop()
  upkeep.stop()
  await opened.close()
  instanceLock?.release()
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))
