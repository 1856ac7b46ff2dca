CREATE TABLE "mcp_oauth_flows" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"server_id" text NOT NULL,
	"user_id" integer NOT NULL,
	"code_verifier_sealed" text NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "mcp_server_oauth" (
	"server_id" text PRIMARY KEY NOT NULL,
	"client_information_sealed" text,
	"tokens_sealed" text,
	"discovery_state" text,
	"authorized_by" integer,
	"authorized_at" bigint
);
--> statement-breakpoint
CREATE TABLE "mcp_server_tools" (
	"server_id" text NOT NULL,
	"name" text NOT NULL,
	"title" text,
	"description" text DEFAULT '' NOT NULL,
	"input_schema" text NOT NULL,
	"output_schema" text,
	"annotations" text,
	"read_only" boolean DEFAULT false NOT NULL,
	"enabled" boolean NOT NULL,
	"problem" text,
	"first_seen_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "mcp_server_tools_server_id_name_pk" PRIMARY KEY("server_id","name")
);
--> statement-breakpoint
CREATE TABLE "mcp_servers" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" integer NOT NULL,
	"name" text NOT NULL,
	"url" text NOT NULL,
	"auth" text NOT NULL,
	"headers_sealed" text,
	"header_names" text DEFAULT '[]' NOT NULL,
	"trusted" boolean DEFAULT false NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"last_error" text,
	"tools_refreshed_at" bigint,
	"created_by" integer,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tool_calls" (
	"id" text PRIMARY KEY NOT NULL,
	"thread_id" text NOT NULL,
	"chain_id" text NOT NULL,
	"round" integer NOT NULL,
	"position" integer NOT NULL,
	"run_id" text NOT NULL,
	"answer_id" text,
	"tool_use_id" text NOT NULL,
	"model_name" text NOT NULL,
	"server_id" text,
	"server_name" text NOT NULL,
	"tool_name" text NOT NULL,
	"arguments" text NOT NULL,
	"status" text NOT NULL,
	"result" text,
	"result_chars" integer,
	"error" text,
	"approval_id" text,
	"decided_by" text,
	"decided_at" bigint,
	"started_at" bigint NOT NULL,
	"finished_at" bigint,
	"duration_ms" bigint
);
--> statement-breakpoint
CREATE TABLE "tool_rounds" (
	"chain_id" text NOT NULL,
	"round" integer NOT NULL,
	"run_id" text NOT NULL,
	"question_id" text NOT NULL,
	"thread_id" text NOT NULL,
	"text" text NOT NULL,
	"input_tokens" bigint,
	"output_tokens" bigint,
	"cached_input_tokens" bigint,
	"created_at" bigint NOT NULL,
	CONSTRAINT "tool_rounds_chain_id_round_pk" PRIMARY KEY("chain_id","round")
);
--> statement-breakpoint
ALTER TABLE "generations" ADD COLUMN "run_id" text;--> statement-breakpoint
ALTER TABLE "thread_settings" ADD COLUMN "tools" text;--> statement-breakpoint
ALTER TABLE "mcp_oauth_flows" ADD CONSTRAINT "mcp_oauth_flows_server_id_mcp_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."mcp_servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_oauth_flows" ADD CONSTRAINT "mcp_oauth_flows_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_server_oauth" ADD CONSTRAINT "mcp_server_oauth_server_id_mcp_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."mcp_servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_server_oauth" ADD CONSTRAINT "mcp_server_oauth_authorized_by_users_id_fk" FOREIGN KEY ("authorized_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_server_tools" ADD CONSTRAINT "mcp_server_tools_server_id_mcp_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."mcp_servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD CONSTRAINT "mcp_servers_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD CONSTRAINT "mcp_servers_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_calls" ADD CONSTRAINT "tool_calls_thread_id_threads_id_fk" FOREIGN KEY ("thread_id") REFERENCES "public"."threads"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_rounds" ADD CONSTRAINT "tool_rounds_question_id_generations_message_id_fk" FOREIGN KEY ("question_id") REFERENCES "public"."generations"("message_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_rounds" ADD CONSTRAINT "tool_rounds_thread_id_threads_id_fk" FOREIGN KEY ("thread_id") REFERENCES "public"."threads"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "mcp_oauth_flows_expires_idx" ON "mcp_oauth_flows" USING btree ("expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_servers_org_name_idx" ON "mcp_servers" USING btree ("organization_id","name");--> statement-breakpoint
CREATE INDEX "tool_calls_chain_idx" ON "tool_calls" USING btree ("chain_id","round","position");--> statement-breakpoint
CREATE INDEX "tool_calls_answer_idx" ON "tool_calls" USING btree ("answer_id");--> statement-breakpoint
CREATE INDEX "tool_calls_thread_idx" ON "tool_calls" USING btree ("thread_id");--> statement-breakpoint
CREATE INDEX "tool_calls_run_idx" ON "tool_calls" USING btree ("run_id");--> statement-breakpoint
CREATE UNIQUE INDEX "tool_calls_approval_idx" ON "tool_calls" USING btree ("approval_id");--> statement-breakpoint
CREATE INDEX "tool_rounds_thread_idx" ON "tool_rounds" USING btree ("thread_id");--> statement-breakpoint
CREATE INDEX "tool_rounds_question_idx" ON "tool_rounds" USING btree ("question_id");