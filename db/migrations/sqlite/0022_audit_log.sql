CREATE TABLE `audit_chains` (
	`organization_id` integer PRIMARY KEY NOT NULL,
	`last_seq` integer NOT NULL,
	`last_hash` text NOT NULL,
	`pruned_seq` integer DEFAULT 0 NOT NULL,
	`pruned_hash` text DEFAULT '0000000000000000000000000000000000000000000000000000000000000000' NOT NULL,
	`retention_days` integer DEFAULT 400 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `audit_events` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` integer NOT NULL,
	`seq` integer NOT NULL,
	`at` integer NOT NULL,
	`action` text NOT NULL,
	`outcome` text NOT NULL,
	`actor_kind` text NOT NULL,
	`actor_id` text,
	`actor_user_id` integer,
	`address` text,
	`user_agent` text,
	`target_kind` text,
	`target_id` text,
	`detail` text NOT NULL,
	`prev_hash` text NOT NULL,
	`hash` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `audit_events_chain_idx` ON `audit_events` (`organization_id`,`seq`);--> statement-breakpoint
CREATE INDEX `audit_events_actor_idx` ON `audit_events` (`organization_id`,`actor_user_id`,`seq`);--> statement-breakpoint
CREATE INDEX `audit_events_target_idx` ON `audit_events` (`organization_id`,`target_kind`,`target_id`,`seq`);--> statement-breakpoint
CREATE INDEX `audit_events_action_idx` ON `audit_events` (`organization_id`,`action`,`seq`);--> statement-breakpoint
CREATE INDEX `audit_events_time_idx` ON `audit_events` (`organization_id`,`at`);