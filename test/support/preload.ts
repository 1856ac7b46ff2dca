// Loaded before the test files (bunfig.toml). On PostgreSQL runs, starts the run's cluster and S3 server first, so
// that no test pays for them inside its own timeout; after the last file, closes what the files shared
// (after-run.ts). In a worker of `bun test --parallel`, these hooks run around every file instead: a worker
// cannot know which file is its last, so the PostgreSQL run stays serial (one cluster for the whole run).
import { afterAll, beforeAll, setDefaultTimeout } from 'bun:test'
import { closeShared } from './after-run'
import { onPostgres } from './backend'
import { sharedPostgres } from './postgres'
import { runS3 } from './s3'

// The suite's one time budget, for every test and hook, is the package scripts' --timeout: Bun applies a preload's
// setDefaultTimeout to the first file of a serial run only. The same number here serves `bun test FILE`. Browser
// and real-process tests wait on conditions; the budget only bounds a test that would otherwise hang.
setDefaultTimeout(120_000)

if (onPostgres && process.env.BUN_TEST_WORKER_ID) {
  throw new Error('The PostgreSQL run is serial: bun run test:postgres (see .ci/run)')
}
if (onPostgres) beforeAll(() => Promise.all([sharedPostgres(), runS3()]).then(() => {}))
afterAll(closeShared)
