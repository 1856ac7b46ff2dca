-- Search documents are rewritten after the write instead of inside it (README, "Performance"). Hand-edited
-- after drizzle-kit: the triggers are raw SQL. A write of `updated_at` still takes the next update_seq and
-- never moves updated_at back, but instead of rewriting the thread's document it records the thread in
-- search_pending with the key of the document the index holds; src/threads/search.ts rewrites the pending
-- documents in batches, and before any search reads the index. The documents already indexed are current.
CREATE TABLE `search_pending` (
	`thread_seq` integer PRIMARY KEY NOT NULL,
	`indexed_key` integer
);--> statement-breakpoint
DROP TRIGGER `threads_update_order_insert`;--> statement-breakpoint
DROP TRIGGER `threads_update_order`;--> statement-breakpoint
DROP TRIGGER `threads_search_delete`;--> statement-breakpoint
CREATE TRIGGER `threads_update_order_insert` AFTER INSERT ON `threads` BEGIN
  UPDATE threads SET
    updated_at = max(new.updated_at, coalesce((SELECT updated_at FROM threads WHERE update_seq = (SELECT max(update_seq) FROM threads)), 0)),
    update_seq = (SELECT max(update_seq) FROM threads) + 1
  WHERE seq = new.seq;
  INSERT INTO search_pending (thread_seq, indexed_key) VALUES (new.seq, NULL);
END;--> statement-breakpoint
-- The first pending write keeps its key: it names the document the index holds until the rewrite.
CREATE TRIGGER `threads_update_order` AFTER UPDATE OF updated_at ON `threads` WHEN new.update_seq = old.update_seq BEGIN
  UPDATE threads SET
    updated_at = max(new.updated_at, old.updated_at, (SELECT updated_at FROM threads WHERE update_seq = (SELECT max(update_seq) FROM threads))),
    update_seq = (SELECT max(update_seq) FROM threads) + 1
  WHERE seq = new.seq;
  INSERT INTO search_pending (thread_seq, indexed_key)
    VALUES (new.seq, (old.organization_id << 40) | (1099511627775 - old.update_seq))
    ON CONFLICT (thread_seq) DO NOTHING;
END;--> statement-breakpoint
-- A deleted thread's document goes at once, under the key the index holds for it: the pending one if any.
CREATE TRIGGER `threads_search_delete` AFTER DELETE ON `threads` BEGIN
  DELETE FROM thread_search WHERE rowid = (SELECT indexed_key FROM search_pending WHERE thread_seq = old.seq);
  DELETE FROM thread_search WHERE rowid = (old.organization_id << 40) | (1099511627775 - old.update_seq)
    AND NOT EXISTS (SELECT 1 FROM search_pending WHERE thread_seq = old.seq);
  DELETE FROM search_pending WHERE thread_seq = old.seq;
END;
