ALTER TABLE "attachment_texts" ADD COLUMN "attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "attachment_texts" ADD COLUMN "lease_expires_at" bigint;