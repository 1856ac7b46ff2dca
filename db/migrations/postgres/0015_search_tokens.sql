CREATE TABLE "search_rebuild" (
	"thread_seq" integer PRIMARY KEY NOT NULL
);
--> statement-breakpoint
ALTER TABLE "search_rebuild" ADD CONSTRAINT "search_rebuild_thread_seq_threads_seq_fk" FOREIGN KEY ("thread_seq") REFERENCES "public"."threads"("seq") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Issue 39's search: documents hold the tokens of src/threads/search-text.ts, their indexed prefixes, and the scope
-- and recency lexemes the search plans probe (src/threads/search.pg.ts). An old document can match none of those
-- queries, so the old documents go, and every thread is queued in `search_rebuild`, which the background indexer works
-- through, most recent first, without holding up searches (docs/architecture.md, "Search"). Hand-written after
-- drizzle-kit, which writes no data statements.
TRUNCATE "thread_search", "thread_search_overflow";--> statement-breakpoint
INSERT INTO "search_rebuild" ("thread_seq") SELECT "seq" FROM "threads";
