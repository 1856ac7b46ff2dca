import { defineConfig } from 'drizzle-kit'

export default defineConfig({
  dialect: 'sqlite',
  // Every feature's SQLite tables, where the feature keeps them; PostgreSQL's are *.table.pg.ts.
  schema: './src/**/*.table.ts',
  out: './db/migrations/sqlite',
  casing: 'snake_case',
})
