CREATE TABLE `attachments` (
	`id` text PRIMARY KEY NOT NULL,
	`thread_id` text NOT NULL,
	`kind` text NOT NULL,
	`media_type` text NOT NULL,
	`filename` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`resized` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`thread_id`) REFERENCES `threads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `attachments_thread_idx` ON `attachments` (`thread_id`,`id`);