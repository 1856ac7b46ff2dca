CREATE TABLE `thread_settings` (
	`thread_id` text PRIMARY KEY NOT NULL,
	`model` text,
	`instructions` text,
	FOREIGN KEY (`thread_id`) REFERENCES `threads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `organizations` ADD `allowed_models` text;--> statement-breakpoint
ALTER TABLE `organizations` ADD `default_model` text;--> statement-breakpoint
ALTER TABLE `generations` ADD `model` text;--> statement-breakpoint
ALTER TABLE `messages` ADD `parent_id` text;--> statement-breakpoint
ALTER TABLE `messages` ADD `model` text;--> statement-breakpoint
CREATE INDEX `messages_parent_idx` ON `messages` (`thread_id`,`parent_id`);--> statement-breakpoint
-- Messages written before the tree: an answer follows the user message it answers, a user message the message
-- listed before it in its thread (summaries stand alone), so every existing thread is one path with one version each.
UPDATE `messages` SET `parent_id` = `reply_to` WHERE `role` = 'assistant';--> statement-breakpoint
UPDATE `messages` SET `parent_id` = (
	SELECT `before`.`id` FROM `messages` AS `before`
	WHERE `before`.`thread_id` = `messages`.`thread_id`
		AND (`before`.`created_at` < `messages`.`created_at`
			OR (`before`.`created_at` = `messages`.`created_at` AND `before`.`id` < `messages`.`id`))
	ORDER BY `before`.`created_at` DESC, `before`.`id` DESC LIMIT 1
) WHERE `role` = 'user';
