CREATE TABLE `shares` (
	`id` text PRIMARY KEY NOT NULL,
	`thread_id` text NOT NULL,
	`organization_id` integer NOT NULL,
	`created_by` integer NOT NULL,
	`token_hash` text NOT NULL,
	`include_files` integer NOT NULL,
	`thread_name` text,
	`snapshot` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`thread_id`) REFERENCES `threads`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `shares_tokenHash_unique` ON `shares` (`token_hash`);--> statement-breakpoint
CREATE INDEX `shares_thread_idx` ON `shares` (`thread_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `shares_created_by_idx` ON `shares` (`created_by`,`created_at`);--> statement-breakpoint
CREATE INDEX `shares_organization_idx` ON `shares` (`organization_id`,`created_at`);--> statement-breakpoint
ALTER TABLE `organizations` ADD `sharing_enabled` integer DEFAULT true NOT NULL;