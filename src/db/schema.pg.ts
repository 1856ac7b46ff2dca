// Every PostgreSQL table, re-exported from the feature that owns it, for Drizzle and drizzle-kit.
export * from '../attachments/attachments.table.pg'
export * from '../auth/auth.table.pg'
export * from '../auth/sessions.table.pg'
export * from '../generation/generations.table.pg'
export * from '../oauth/oauth.table.pg'
export * from '../shared/rate-limit.table.pg'
export * from '../shared/server-keys.table.pg'
export * from '../threads/threads.table.pg'
