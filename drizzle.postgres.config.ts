import { defineConfig } from 'drizzle-kit'

// PostgreSQL migrations: `bun run db:generate:postgres`. SQLite's are in drizzle.config.ts.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/**/*.table.pg.ts',
  out: './db/migrations/postgres',
  casing: 'snake_case',
})
