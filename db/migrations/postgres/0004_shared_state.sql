-- State several instances on this database share. Rate-limit windows are UNLOGGED (written by hand: Drizzle cannot
-- say so): counts need no write-ahead log, and a crash that empties them only starts the windows again.
CREATE UNLOGGED TABLE "rate_limit_windows" (
	"key" text PRIMARY KEY NOT NULL,
	"started_at" bigint NOT NULL,
	"ends_at" bigint NOT NULL,
	"count" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "server_keys" (
	"name" text PRIMARY KEY NOT NULL,
	"key" text NOT NULL,
	"created_at" bigint NOT NULL
);
