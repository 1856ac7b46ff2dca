-- The change feed's tombstones and horizon, and each thread's first place in the update order (src/threads/feed.ts).
-- Hand-edited after drizzle-kit: the horizon's one row, and the update-order triggers of 0006 rewritten. A write now
-- takes its place after tombstones too: a deleted thread's tombstone may hold the highest place there is, and the
-- next write must still come after it, or a feed that saw the deletion would never see that write. The insert's
-- statement also records created_seq, so a new thread costs no extra write.
CREATE TABLE `thread_feed_horizon` (
	`id` integer PRIMARY KEY NOT NULL,
	`update_seq` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `thread_tombstones` (
	`update_seq` integer PRIMARY KEY NOT NULL,
	`thread_id` text NOT NULL,
	`kind` text NOT NULL,
	`organization_id` integer NOT NULL,
	`owner_id` integer NOT NULL,
	`is_private` integer NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `thread_tombstones_org_idx` ON `thread_tombstones` (`organization_id`,`update_seq`);--> statement-breakpoint
CREATE INDEX `thread_tombstones_owner_idx` ON `thread_tombstones` (`owner_id`,`update_seq`);--> statement-breakpoint
CREATE INDEX `thread_tombstones_at_idx` ON `thread_tombstones` (`at`);--> statement-breakpoint
ALTER TABLE `threads` ADD `created_seq` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
INSERT INTO `thread_feed_horizon` (`id`, `update_seq`) VALUES (1, 0);--> statement-breakpoint
DROP TRIGGER `threads_update_order_insert`;--> statement-breakpoint
DROP TRIGGER `threads_update_order`;--> statement-breakpoint
CREATE TRIGGER `threads_update_order_insert` AFTER INSERT ON `threads` BEGIN
  UPDATE threads SET
    updated_at = max(new.updated_at, coalesce((SELECT updated_at FROM threads WHERE update_seq = (SELECT max(update_seq) FROM threads)), 0)),
    (update_seq, created_seq) = (SELECT n, n FROM (SELECT max((SELECT max(update_seq) FROM threads), coalesce((SELECT max(update_seq) FROM thread_tombstones), 0)) + 1 AS n))
  WHERE seq = new.seq;
  INSERT INTO search_pending (thread_seq, indexed_key) VALUES (new.seq, NULL);
END;--> statement-breakpoint
-- The first pending write keeps its key: it names the document the index holds until the rewrite.
CREATE TRIGGER `threads_update_order` AFTER UPDATE OF updated_at ON `threads` WHEN new.update_seq = old.update_seq BEGIN
  UPDATE threads SET
    updated_at = max(new.updated_at, old.updated_at, (SELECT updated_at FROM threads WHERE update_seq = (SELECT max(update_seq) FROM threads))),
    update_seq = max((SELECT max(update_seq) FROM threads), coalesce((SELECT max(update_seq) FROM thread_tombstones), 0)) + 1
  WHERE seq = new.seq;
  INSERT INTO search_pending (thread_seq, indexed_key)
    VALUES (new.seq, (old.organization_id << 40) | (1099511627775 - old.update_seq))
    ON CONFLICT (thread_seq) DO NOTHING;
END;
