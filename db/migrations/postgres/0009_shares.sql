CREATE TABLE "shares" (
	"id" text PRIMARY KEY NOT NULL,
	"thread_id" text NOT NULL,
	"organization_id" integer NOT NULL,
	"created_by" integer NOT NULL,
	"token_hash" text NOT NULL,
	"include_files" boolean NOT NULL,
	"thread_name" text,
	"snapshot" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "shares_tokenHash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
ALTER TABLE "organizations" ADD COLUMN "sharing_enabled" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "shares" ADD CONSTRAINT "shares_thread_id_threads_id_fk" FOREIGN KEY ("thread_id") REFERENCES "public"."threads"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "shares" ADD CONSTRAINT "shares_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "shares" ADD CONSTRAINT "shares_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "shares_thread_idx" ON "shares" USING btree ("thread_id","created_at");--> statement-breakpoint
CREATE INDEX "shares_created_by_idx" ON "shares" USING btree ("created_by","created_at");--> statement-breakpoint
CREATE INDEX "shares_organization_idx" ON "shares" USING btree ("organization_id","created_at");