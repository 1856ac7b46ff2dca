ALTER TABLE `mcp_oauth_flows` ADD `discovery_state` text;--> statement-breakpoint
ALTER TABLE `mcp_oauth_flows` ADD `client_information_sealed` text;