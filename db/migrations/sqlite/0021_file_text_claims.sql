ALTER TABLE `attachment_texts` ADD `attempts` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `attachment_texts` ADD `lease_expires_at` integer;