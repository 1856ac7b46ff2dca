// Loaded before the test files (bunfig.toml): after the last file, closes what the files shared (after-run.ts).
import { afterAll } from 'bun:test'
import { closeShared } from './after-run'

afterAll(closeShared)
