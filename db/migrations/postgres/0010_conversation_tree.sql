CREATE TABLE "thread_settings" (
	"thread_id" text PRIMARY KEY NOT NULL,
	"model" text,
	"instructions" text
);
--> statement-breakpoint
ALTER TABLE "organizations" ADD COLUMN "allowed_models" text;--> statement-breakpoint
ALTER TABLE "organizations" ADD COLUMN "default_model" text;--> statement-breakpoint
ALTER TABLE "generations" ADD COLUMN "model" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "parent_id" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "model" text;--> statement-breakpoint
ALTER TABLE "thread_settings" ADD CONSTRAINT "thread_settings_thread_id_threads_id_fk" FOREIGN KEY ("thread_id") REFERENCES "public"."threads"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "messages_parent_idx" ON "messages" USING btree ("thread_id","parent_id");--> statement-breakpoint
-- Messages written before the tree: an answer follows the user message it answers, a user message the message
-- listed before it in its thread (summaries stand alone), so every existing thread is one path with one version each.
UPDATE "messages" SET "parent_id" = "reply_to" WHERE "role" = 'assistant';--> statement-breakpoint
UPDATE "messages" AS "m" SET "parent_id" = "p"."before" FROM (
	SELECT "id", lag("id") OVER (PARTITION BY "thread_id" ORDER BY "created_at", "id") AS "before" FROM "messages"
) AS "p" WHERE "p"."id" = "m"."id" AND "m"."role" = 'user' AND "p"."before" IS NOT NULL;
