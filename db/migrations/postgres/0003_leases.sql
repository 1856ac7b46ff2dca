-- Edited by hand: UNLOGGED (drizzle-kit cannot say it). The chunks of running answers need no crash safety, and
-- skipping the write-ahead log keeps their many small inserts cheap.
CREATE UNLOGGED TABLE "answer_chunks" (
	"message_id" text NOT NULL,
	"lease_id" text NOT NULL,
	"start" integer NOT NULL,
	"end" integer NOT NULL,
	"text" text NOT NULL,
	CONSTRAINT "answer_chunks_message_id_lease_id_start_pk" PRIMARY KEY("message_id","lease_id","start")
);
--> statement-breakpoint
ALTER TABLE "generations" ADD COLUMN "lease_id" text;--> statement-breakpoint
ALTER TABLE "generations" ADD COLUMN "leased_by" text;--> statement-breakpoint
ALTER TABLE "generations" ADD COLUMN "lease_expires_at" bigint;--> statement-breakpoint
ALTER TABLE "answer_chunks" ADD CONSTRAINT "answer_chunks_message_id_generations_message_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."generations"("message_id") ON DELETE cascade ON UPDATE no action;