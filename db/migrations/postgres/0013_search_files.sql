CREATE TABLE "attachment_texts" (
	"attachment_id" text PRIMARY KEY NOT NULL,
	"state" text NOT NULL,
	"text" text,
	"words" text,
	"truncated" boolean DEFAULT false NOT NULL,
	"indexed_at" bigint
);
--> statement-breakpoint
CREATE TABLE "search_terms" (
	"term" text COLLATE "C" PRIMARY KEY NOT NULL
);
--> statement-breakpoint
ALTER TABLE "attachment_texts" ADD CONSTRAINT "attachment_texts_attachment_id_attachments_id_fk" FOREIGN KEY ("attachment_id") REFERENCES "public"."attachments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "attachment_texts_pending_idx" ON "attachment_texts" USING btree ("state") WHERE "attachment_texts"."state" = 'pending';;--> statement-breakpoint
-- Files messages attached before search read files: queued, so the file indexer reads them gradually after the upgrade.
INSERT INTO "attachment_texts" ("attachment_id", "state")
SELECT DISTINCT "block"->>'attachment_id', 'pending'
FROM "messages", jsonb_array_elements("messages"."contents"::jsonb) AS "block"
WHERE "block"->>'type' IN ('image', 'document')
	AND "block"->>'attachment_id' IN (SELECT "id" FROM "attachments")
ON CONFLICT DO NOTHING;
