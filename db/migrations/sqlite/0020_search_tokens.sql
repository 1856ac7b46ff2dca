CREATE TABLE `search_rebuild` (
	`thread_seq` integer PRIMARY KEY NOT NULL,
	FOREIGN KEY (`thread_seq`) REFERENCES `threads`(`seq`) ON UPDATE no action ON DELETE cascade
);--> statement-breakpoint
-- Issue 39's search: documents hold the tokens of src/threads/search-text.ts (folded words, pairs of characters in
-- scripts without spaces, files' names and text), made in JavaScript and joined by spaces, so the index must split
-- only at those spaces: the `ascii` tokenizer keeps every non-ASCII character in a token and splits at ASCII
-- punctuation and spaces, which no token holds (unicode61 would split Thai, Devanagari or Hebrew words at their marks
-- and fold what search-text.ts already folded). `prefix='2 3 4'` indexes each token's first 2-4 characters (FTS5
-- counts characters), which unquoted words of that length are looked up by. Hand-written after drizzle-kit: it
-- cannot express virtual tables. The documents cannot be built in SQL, so the index starts empty and every thread
-- is queued in `search_rebuild`, which the background indexer works through, most recent first, without holding up
-- searches (docs/architecture.md, "Search").
DROP TABLE `thread_search`;--> statement-breakpoint
CREATE VIRTUAL TABLE `thread_search` USING fts5(body, owner, content='', contentless_delete=1, detail=column, tokenize='ascii', prefix='2 3 4');--> statement-breakpoint
INSERT INTO `thread_search` (thread_search, rank) VALUES ('automerge', 16);--> statement-breakpoint
-- Pending threads no longer have a document in the index.
UPDATE `search_pending` SET `indexed_key` = NULL;--> statement-breakpoint
INSERT INTO `search_rebuild` (`thread_seq`) SELECT `seq` FROM `threads`;
