// Every table, re-exported from the feature that owns it, for Drizzle and drizzle-kit.
export * from '../attachments/attachments.table'
export * from '../auth/auth.table'
export * from '../auth/sessions.table'
export * from '../generation/generations.table'
export * from '../idempotency/idempotency.table'
export * from '../oauth/oauth.table'
export * from '../threads/threads.table'
export * from '../webhooks/webhooks.table'
