CREATE TABLE "thread_search_overflow" (
	"thread_seq" integer NOT NULL,
	"part" integer NOT NULL,
	"document" "tsvector" NOT NULL,
	CONSTRAINT "thread_search_overflow_thread_seq_part_pk" PRIMARY KEY("thread_seq","part")
);
--> statement-breakpoint
ALTER TABLE "thread_search_overflow" ADD CONSTRAINT "thread_search_overflow_thread_seq_thread_search_thread_seq_fk" FOREIGN KEY ("thread_seq") REFERENCES "public"."thread_search"("thread_seq") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "thread_search_overflow_document_idx" ON "thread_search_overflow" USING gin ("document");