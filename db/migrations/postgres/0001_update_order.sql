-- Written by hand (drizzle-kit cannot express triggers). Every write of a thread's updated_at takes the next
-- update_seq from the one-row clock and never moves updated_at back, as SQLite's triggers do. The clock's row
-- stays locked until the writing transaction ends, so sequences commit in order: a reader that follows
-- update_seq (updated_since, keyset cursors, the search queue) never sees seq N+1 before N. Writers of threads
-- therefore serialise on that row; write updated_at last in a transaction, once.
INSERT INTO "thread_update_clock" ("id", "update_seq", "updated_at") VALUES (1, 0, 0);--> statement-breakpoint
CREATE FUNCTION "threads_update_order"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "thread_update_clock"
    SET "update_seq" = "update_seq" + 1, "updated_at" = GREATEST("updated_at", NEW."updated_at")
    WHERE "id" = 1
    RETURNING "update_seq", "updated_at" INTO NEW."update_seq", NEW."updated_at";
  -- The thread's search document is rewritten after the write, by the thread search (src/threads/).
  INSERT INTO "search_pending" ("thread_seq") VALUES (NEW."seq") ON CONFLICT DO NOTHING;
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER "threads_update_order" BEFORE INSERT OR UPDATE OF "updated_at" ON "threads"
  FOR EACH ROW EXECUTE FUNCTION "threads_update_order"();--> statement-breakpoint
CREATE FUNCTION "threads_search_forget"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "search_pending" WHERE "thread_seq" = OLD."seq";
  RETURN OLD;
END
$$;--> statement-breakpoint
CREATE TRIGGER "threads_search_forget" AFTER DELETE ON "threads"
  FOR EACH ROW EXECUTE FUNCTION "threads_search_forget"();
