-- Full-text search over thread names and message text (FTS5; drizzle-kit cannot express virtual tables).
-- External-content tables keyed by each table's explicit integer primary key, kept in sync by triggers.
CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='messages', content_rowid='seq', tokenize='unicode61 remove_diacritics 2');
--> statement-breakpoint
CREATE VIRTUAL TABLE threads_fts USING fts5(name, content='threads', content_rowid='seq', tokenize='unicode61 remove_diacritics 2');
--> statement-breakpoint
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts(rowid, text) VALUES (new.seq, new.text);
END;
--> statement-breakpoint
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
  INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.seq, old.text);
END;
--> statement-breakpoint
CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
  INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.seq, old.text);
  INSERT INTO messages_fts(rowid, text) VALUES (new.seq, new.text);
END;
--> statement-breakpoint
CREATE TRIGGER threads_fts_insert AFTER INSERT ON threads WHEN new.name IS NOT NULL BEGIN
  INSERT INTO threads_fts(rowid, name) VALUES (new.seq, new.name);
END;
--> statement-breakpoint
CREATE TRIGGER threads_fts_delete AFTER DELETE ON threads WHEN old.name IS NOT NULL BEGIN
  INSERT INTO threads_fts(threads_fts, rowid, name) VALUES ('delete', old.seq, old.name);
END;
--> statement-breakpoint
CREATE TRIGGER threads_fts_update AFTER UPDATE OF name ON threads BEGIN
  INSERT INTO threads_fts(threads_fts, rowid, name) SELECT 'delete', old.seq, old.name WHERE old.name IS NOT NULL;
  INSERT INTO threads_fts(rowid, name) SELECT new.seq, new.name WHERE new.name IS NOT NULL;
END;
