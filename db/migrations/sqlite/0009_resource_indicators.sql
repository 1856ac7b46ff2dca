-- RFC 8707 resource indicators: the protected resource (a path under PUBLIC_URL: /api/v1 or /mcp) that an
-- authorization asked for, kept on its code, its grant and each access token, which only that resource accepts.
-- Existing rows stay null: good for every resource, as before.
ALTER TABLE `oauth_access_tokens` ADD `resource` text;--> statement-breakpoint
ALTER TABLE `oauth_authorization_codes` ADD `resource` text;--> statement-breakpoint
ALTER TABLE `oauth_grants` ADD `resource` text;