CREATE TABLE `member_quotas` (
	`user_id` integer PRIMARY KEY NOT NULL,
	`tokens` integer,
	`cost_micros` integer,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `answer_usage` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`organization_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`thread_id` text NOT NULL,
	`question_id` text NOT NULL,
	`answer_id` text,
	`model` text NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`cached_input_tokens` integer DEFAULT 0 NOT NULL,
	`estimated` integer DEFAULT false NOT NULL,
	`cost_micros` integer,
	`currency` text,
	`first_token_ms` integer,
	`total_ms` integer,
	`outcome` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `answer_usage_org_created_idx` ON `answer_usage` (`organization_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `answer_usage_user_created_idx` ON `answer_usage` (`user_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `answer_usage_answer_idx` ON `answer_usage` (`answer_id`);--> statement-breakpoint
CREATE TABLE `usage_totals` (
	`period` text NOT NULL,
	`organization_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`tokens` integer DEFAULT 0 NOT NULL,
	`cost_micros` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`period`, `organization_id`, `user_id`)
);
--> statement-breakpoint
ALTER TABLE `organizations` ADD `quota_tokens` integer;--> statement-breakpoint
ALTER TABLE `organizations` ADD `quota_cost_micros` integer;--> statement-breakpoint
ALTER TABLE `organizations` ADD `member_quota_tokens` integer;--> statement-breakpoint
ALTER TABLE `organizations` ADD `member_quota_cost_micros` integer;