-- Search documents keep which column each word is in, not its positions (FTS5 detail=column), and the index is
-- rebuilt as one segment. Searches only ever ask for single words in a column (src/threads/search.ts), never
-- phrases or NEAR, so positions were stored and never used: at 1M messages the index shrinks from 167 to 106
-- MiB and a rewrite of a thread's document costs a little less. The bulk insert leaves dozens of segments that
-- every search must consult, which made a default-order search 2-4 times slower than over one segment; merging
-- them (`optimize`) takes about 8 s at 1M messages, once (README, "Performance"). Custom migration: drizzle-kit
-- cannot express virtual tables. Every document is rebuilt from the threads as they are, so nothing is left
-- pending.
DROP TABLE `thread_search`;--> statement-breakpoint
CREATE VIRTUAL TABLE `thread_search` USING fts5(body, owner, content='', contentless_delete=1, detail=column, tokenize='unicode61 remove_diacritics 2');--> statement-breakpoint
INSERT INTO `thread_search` (thread_search, rank) VALUES ('automerge', 16);--> statement-breakpoint
INSERT INTO `thread_search` (rowid, body, owner)
  SELECT (t.organization_id << 40) | (1099511627775 - t.update_seq),
    coalesce(t.name, '') || char(10) || coalesce((SELECT group_concat(m.text, char(10)) FROM messages m WHERE m.thread_id = t.id AND m.active = 1), ''),
    'u' || t.owner_id
  FROM threads t;--> statement-breakpoint
INSERT INTO `thread_search` (thread_search) VALUES ('optimize');--> statement-breakpoint
DELETE FROM `search_pending`;
