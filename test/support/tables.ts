// Every SQLite table, re-exported from the feature that owns it, for tests that set up or inspect rows directly
// (`h.tables`, support/backend.ts). The server has no such list: each feature imports its own tables.
export * from '../../src/attachments/attachments.table'
export * from '../../src/auth/auth.table'
export * from '../../src/auth/sessions.table'
export * from '../../src/generation/generations.table'
export * from '../../src/idempotency/idempotency.table'
export * from '../../src/oauth/oauth.table'
export * from '../../src/shares/shares.table'
export * from '../../src/threads/threads.table'
export * from '../../src/usage/usage.table'
export * from '../../src/webhooks/webhooks.table'
