ALTER TABLE `webhook_deliveries` ADD `thread_id` text;--> statement-breakpoint
CREATE INDEX `webhook_deliveries_thread_idx` ON `webhook_deliveries` (`thread_id`);