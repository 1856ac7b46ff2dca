CREATE TABLE `mcp_oauth_flows` (
	`state_hash` text PRIMARY KEY NOT NULL,
	`server_id` text NOT NULL,
	`user_id` integer NOT NULL,
	`code_verifier_sealed` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`server_id`) REFERENCES `mcp_servers`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `mcp_oauth_flows_expires_idx` ON `mcp_oauth_flows` (`expires_at`);--> statement-breakpoint
CREATE TABLE `mcp_server_oauth` (
	`server_id` text PRIMARY KEY NOT NULL,
	`client_information_sealed` text,
	`tokens_sealed` text,
	`discovery_state` text,
	`authorized_by` integer,
	`authorized_at` integer,
	FOREIGN KEY (`server_id`) REFERENCES `mcp_servers`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`authorized_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE TABLE `mcp_server_tools` (
	`server_id` text NOT NULL,
	`name` text NOT NULL,
	`title` text,
	`description` text DEFAULT '' NOT NULL,
	`input_schema` text NOT NULL,
	`output_schema` text,
	`annotations` text,
	`read_only` integer DEFAULT false NOT NULL,
	`enabled` integer NOT NULL,
	`problem` text,
	`first_seen_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`server_id`, `name`),
	FOREIGN KEY (`server_id`) REFERENCES `mcp_servers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `mcp_servers` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` integer NOT NULL,
	`name` text NOT NULL,
	`url` text NOT NULL,
	`auth` text NOT NULL,
	`headers_sealed` text,
	`header_names` text DEFAULT '[]' NOT NULL,
	`trusted` integer DEFAULT false NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`last_error` text,
	`tools_refreshed_at` integer,
	`created_by` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `mcp_servers_org_name_idx` ON `mcp_servers` (`organization_id`,`name`);--> statement-breakpoint
CREATE TABLE `tool_calls` (
	`id` text PRIMARY KEY NOT NULL,
	`thread_id` text NOT NULL,
	`chain_id` text NOT NULL,
	`round` integer NOT NULL,
	`position` integer NOT NULL,
	`run_id` text NOT NULL,
	`answer_id` text,
	`tool_use_id` text NOT NULL,
	`model_name` text NOT NULL,
	`server_id` text,
	`server_name` text NOT NULL,
	`tool_name` text NOT NULL,
	`arguments` text NOT NULL,
	`status` text NOT NULL,
	`result` text,
	`result_chars` integer,
	`error` text,
	`approval_id` text,
	`decided_by` text,
	`decided_at` integer,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	`duration_ms` integer,
	FOREIGN KEY (`thread_id`) REFERENCES `threads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `tool_calls_chain_idx` ON `tool_calls` (`chain_id`,`round`,`position`);--> statement-breakpoint
CREATE INDEX `tool_calls_answer_idx` ON `tool_calls` (`answer_id`);--> statement-breakpoint
CREATE INDEX `tool_calls_thread_idx` ON `tool_calls` (`thread_id`);--> statement-breakpoint
CREATE INDEX `tool_calls_run_idx` ON `tool_calls` (`run_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `tool_calls_approval_idx` ON `tool_calls` (`approval_id`);--> statement-breakpoint
CREATE TABLE `tool_rounds` (
	`chain_id` text NOT NULL,
	`round` integer NOT NULL,
	`run_id` text NOT NULL,
	`question_id` text NOT NULL,
	`thread_id` text NOT NULL,
	`text` text NOT NULL,
	`input_tokens` integer,
	`output_tokens` integer,
	`cached_input_tokens` integer,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`chain_id`, `round`),
	FOREIGN KEY (`question_id`) REFERENCES `generations`(`message_id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`thread_id`) REFERENCES `threads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `tool_rounds_thread_idx` ON `tool_rounds` (`thread_id`);--> statement-breakpoint
CREATE INDEX `tool_rounds_question_idx` ON `tool_rounds` (`question_id`);--> statement-breakpoint
ALTER TABLE `generations` ADD `run_id` text;--> statement-breakpoint
ALTER TABLE `thread_settings` ADD `tools` text;