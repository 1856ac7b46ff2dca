ALTER TABLE "mcp_oauth_flows" ADD COLUMN "discovery_state" text;--> statement-breakpoint
ALTER TABLE "mcp_oauth_flows" ADD COLUMN "client_information_sealed" text;