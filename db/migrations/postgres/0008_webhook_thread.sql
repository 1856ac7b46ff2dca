ALTER TABLE "webhook_deliveries" ADD COLUMN "thread_id" text;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_thread_idx" ON "webhook_deliveries" USING btree ("thread_id");