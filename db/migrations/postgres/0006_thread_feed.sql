-- The change feed's tombstones and horizon, and each thread's first place in the update order (src/threads/feed.ts).
-- Hand-edited after drizzle-kit: the horizon's one row, and the update-order function of 0001 records created_seq
-- on insert. Tombstones take their place from thread_update_clock, as thread writes do.
CREATE TABLE "thread_feed_horizon" (
	"id" integer PRIMARY KEY NOT NULL,
	"update_seq" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "thread_tombstones" (
	"update_seq" bigint PRIMARY KEY NOT NULL,
	"thread_id" text NOT NULL,
	"kind" text NOT NULL,
	"organization_id" integer NOT NULL,
	"owner_id" integer NOT NULL,
	"is_private" boolean NOT NULL,
	"at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "threads" ADD COLUMN "created_seq" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "thread_tombstones_org_idx" ON "thread_tombstones" USING btree ("organization_id","update_seq");--> statement-breakpoint
CREATE INDEX "thread_tombstones_owner_idx" ON "thread_tombstones" USING btree ("owner_id","update_seq");--> statement-breakpoint
CREATE INDEX "thread_tombstones_at_idx" ON "thread_tombstones" USING btree ("at");--> statement-breakpoint
INSERT INTO "thread_feed_horizon" ("id", "update_seq") VALUES (1, 0);--> statement-breakpoint
CREATE OR REPLACE FUNCTION "threads_update_order"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "thread_update_clock"
    SET "update_seq" = "update_seq" + 1, "updated_at" = GREATEST("updated_at", NEW."updated_at")
    WHERE "id" = 1
    RETURNING "update_seq", "updated_at" INTO NEW."update_seq", NEW."updated_at";
  IF TG_OP = 'INSERT' THEN
    NEW."created_seq" := NEW."update_seq";
  END IF;
  -- The thread's search document is rewritten after the write, by the thread search (src/threads/).
  INSERT INTO "search_pending" ("thread_seq") VALUES (NEW."seq") ON CONFLICT DO NOTHING;
  RETURN NEW;
END
$$;
