// The MCP tools' input and output schemas, in zod because the MCP SDK validates with it and turns it into the
// JSON Schema that tools/list shows. Arguments carry the API's names and limits, and results the API's objects
// (src/threads/model.ts), so that what a model learns from one works with the other.
import * as z from 'zod/v4'
import { attachmentsPerMessage, filenameMaxLength, imageLimits, pdfLimits, textLimits } from '../attachments/limits'
import { maxPageSize } from '../threads/listing'
import { feedbackTextMaxChars, messageTextMaxLength, threadNameMaxLength } from '../threads/model'

/** The largest single file an upload accepts, whatever its type. */
export const maxFileBytes = Math.max(imageLimits.maxBytes, pdfLimits.maxBytes, textLimits.maxBytes)

/** The same file in base64: four characters per three bytes, padded. */
export const maxBase64Length = Math.ceil(maxFileBytes / 3) * 4

/**
 * The largest JSON-RPC body the endpoint reads: one file in base64 and room for the rest of the call. Read by
 * readJson (src/shared/body.ts) before the transport sees it, within this bound whatever Content-Length said, and
 * never parsed when nested too deep or too wide. Only an upload_attachment call may use it: every other message, and
 * an upload's arguments besides its file, are held to the API's JSON bound (`maxJsonBodyBytes`), so that message
 * texts stay within what the API takes too.
 */
export const maxMcpBodyBytes = maxBase64Length + 64 * 1024

/** The most values (array elements and object members) a tool call's arguments may hold; the SDK refuses more. */
export const maxToolArgumentValues = 1000

/**
 * The most array elements and object members a JSON-RPC message may hold, counted before it is parsed: a tool
 * call's arguments and as much again for the rest (the envelope, an initialize request's capabilities). What the MCP
 * SDK does with a message (validating it, copying it) costs in proportion to this count, not to its bytes.
 */
export const maxMcpMessageValues = 2 * maxToolArgumentValues

/** How long send_message, answer_choice and create_thread wait for the answer at most, unless told less. */
export const maxAnswerWaitSeconds = 45

export namespace McpModel {
  const uuid = (description: string) => z.string().uuid().describe(description)
  const threadId = uuid('The thread’s ID (`id` of a thread, or `thread_id` in results).')
  const messageId = uuid('The message’s ID.')
  const limit = (fallback: number) =>
    z
      .number()
      .int()
      .min(1)
      .max(maxPageSize)
      .optional()
      .describe(`Page size, default ${fallback}, at most ${maxPageSize}.`)
  const waitSeconds = z
    .number()
    .int()
    .min(0)
    .max(maxAnswerWaitSeconds)
    .optional()
    .describe(
      `How long to wait for the answer, in seconds: 0 to ${maxAnswerWaitSeconds}, default ${maxAnswerWaitSeconds}. ` +
        'When it passes first, the result has status `processing`: call get_response later.',
    )

  // The API's objects, as src/threads/model.ts describes them.
  const thread = z.object({
    id: z.string(),
    name: z.string().nullable(),
    state: z
      .enum(['ready', 'waiting', 'active', 'error', 'interrupted'])
      .describe('A new message is accepted only in `ready`; `waiting` and `active` mean an answer is on its way.'),
    is_private: z.boolean(),
    archived: z.boolean(),
    owner: z.object({ id: z.string(), name: z.string().nullable() }),
    created_at: z.string(),
    updated_at: z.string(),
    app_url: z.string().describe('Link to the thread in the web application, for the person.'),
  })
  const contentBlock = z.union([
    z.object({ type: z.literal('text'), text: z.string() }),
    z.object({ type: z.literal('image'), attachment_id: z.string() }),
    z.object({ type: z.literal('document'), attachment_id: z.string() }),
    z
      .object({
        type: z.literal('user_get_choice'),
        tool_use_id: z.string(),
        question: z.string(),
        choices: z.array(z.string()),
      })
      .describe('A question the assistant asked: answer it with answer_choice.'),
  ])
  const message = z.object({
    id: z.string(),
    thread_id: z.string(),
    role: z.enum(['user', 'assistant', 'summary']),
    contents: z.array(contentBlock),
    created_at: z.string(),
    app_url: z.string().describe('Link to the message in the web application.'),
  })
  const page = <T extends z.ZodType>(item: T) =>
    z.object({
      data: z.array(item),
      first_id: z.string().nullable(),
      last_id: z.string().nullable().describe('Pass it as `after` for the next page.'),
      has_more: z.boolean(),
      limit: z.number().int(),
    })

  /** Where an answer is: still on its way, or ended with the messages it produced. */
  export const answer = z.object({
    thread_id: z.string(),
    message_id: z.string().describe('The user message the answer replies to: give it to get_response.'),
    status: z
      .enum(['processing', 'complete', 'error', 'interrupted'])
      .describe(
        '`processing`: not finished yet (call get_response later). `complete`: done. `error`: it failed and the ' +
          'thread is in `error`. `interrupted`: it was stopped. `messages` holds what was answered, if anything.',
      ),
    messages: z.array(message).describe('The answer’s messages (assistant replies), oldest first.'),
    error: z.string().optional().describe('Why the answer failed or stopped.'),
    app_url: z.string().describe('Link to the thread in the web application.'),
  })
  export type answer = z.infer<typeof answer>

  export const searchThreadsInput = {
    q: z
      .string()
      .min(1)
      .max(500)
      .describe('Words to find: threads whose name and messages together contain every word.'),
    limit: limit(20),
    after: uuid('The previous page’s `last_id`, for the next page.').optional(),
    archived: z.boolean().optional().describe('true includes archived threads (default false).'),
  }
  export const listThreadsInput = {
    limit: limit(20),
    after: uuid('The previous page’s `last_id`, for the next page.').optional(),
    owned: z
      .boolean()
      .optional()
      .describe('true: only the person’s own threads; false: only other people’s. Default: both.'),
    archived: z.boolean().optional().describe('true includes archived threads (default false).'),
  }
  export const threadList = page(thread)
  /** A found thread: the thread, and the passage it was found by (GET /api/v1/search). */
  export const searchResults = page(
    thread.extend({
      match: z
        .object({
          snippet: z
            .string()
            .describe('The best passage, at most 200 characters, `…` where it is cut; empty when none is left.'),
          message_id: z
            .string()
            .nullable()
            .describe('The message it is from (or that attached its file): read it with get_thread. Null: the name.'),
          attachment_id: z.string().nullable().describe('The file it is from (its text or name), if any.'),
          highlights: z
            .array(z.array(z.number().int()).length(2))
            .describe('`[start, end)` of each matched word in `snippet`, in UTF-16 code units.'),
        })
        .describe('Where the thread matched `q`.'),
    }),
  )
  export type searchResults = z.infer<typeof searchResults>

  export const getThreadInput = {
    thread_id: threadId,
    limit: limit(50),
    after: uuid('The previous page’s `messages.last_id`, for the next page of messages.').optional(),
  }
  const modelRef = z
    .object({ id: z.string(), name: z.string() })
    .describe('The model that writes the thread’s next answer: its own, or the organization’s default.')
  export const threadWithMessages = z.object({
    thread,
    messages: page(message).describe('The thread’s messages, oldest first, one page.'),
    model: modelRef,
  })
  export const modelList = z.object({
    data: z.array(
      z.object({
        id: z.string().describe('Give it as `model` to create_thread, send_message or regenerate_response.'),
        name: z.string(),
        provider: z.string(),
        context_tokens: z.number().int(),
        default: z.boolean().describe('The organization’s default: what a thread without a model of its own uses.'),
      }),
    ),
  })
  const modelInput = z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('A model’s `id` from list_models: the thread answers with it from this message on.')

  export const createThreadInput = {
    name: z
      .string()
      .max(threadNameMaxLength)
      .optional()
      .describe('A title for the thread; without one it is named after its first message.'),
    is_private: z.boolean().optional().describe('true: only the person can see it. Default false: the team can.'),
    text: z
      .string()
      .min(1)
      .max(messageTextMaxLength)
      .optional()
      .describe('The first message. When given, the answer is waited for.'),
    model: modelInput,
    wait_seconds: waitSeconds,
  }
  export const createdThread = z.object({
    thread_id: z.string(),
    thread: thread
      .optional()
      .describe('The thread as the answer left it; absent for a token without a read scope, as in the API.'),
    message_id: z.string().nullable().describe('The first message, or null when no text was given.'),
    app_url: z.string().describe('Link to the thread in the web application.'),
    answer: answer.optional().describe('The answer to `text`, when it was given.'),
  })

  export const sendMessageInput = {
    thread_id: threadId,
    text: z.string().min(1).max(messageTextMaxLength).describe('The message.'),
    attachment_ids: z
      .array(z.string().uuid())
      .max(attachmentsPerMessage)
      .optional()
      .describe('Files uploaded to this thread with upload_attachment, in the order to show them.'),
    model: modelInput,
    wait_seconds: waitSeconds,
  }

  export const regenerateInput = {
    thread_id: threadId,
    message_id: messageId.describe(
      'The user message whose answer to write again: one of the thread’s listed messages, with role `user`.',
    ),
    model: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('A model’s `id` from list_models, for this answer only; default: the thread’s model.'),
    wait_seconds: waitSeconds,
  }

  export const getResponseInput = { thread_id: threadId, message_id: messageId }

  export const answerChoiceInput = {
    thread_id: threadId,
    message_id: uuid('The assistant message holding the `user_get_choice` question.'),
    choice: z.string().min(1).max(messageTextMaxLength).describe('One of the question’s `choices`, as written there.'),
    wait_seconds: waitSeconds,
  }

  export const uploadAttachmentInput = {
    thread_id: threadId,
    filename: z.string().min(1).max(filenameMaxLength).describe('The file’s name, with its extension.'),
    content_base64: z.string().min(1).max(maxBase64Length).describe('The file’s bytes, base64-encoded.'),
    media_type: z
      .string()
      .max(255)
      .optional()
      .describe('Its media type, if known. The type is decided from the bytes; one that contradicts them is refused.'),
  }
  export const uploaded = z.object({
    thread_id: z.string(),
    attachment: z
      .object({ id: z.string(), filename: z.string() })
      .describe('Give `id` in send_message’s attachment_ids.'),
    app_url: z.string(),
  })

  export const rateMessageInput = {
    thread_id: threadId,
    message_id: uuid('The assistant message to rate.'),
    positive: z.boolean().describe('true: a good answer; false: a poor one.'),
    // Counted in characters by the service, as the API does: zod would count UTF-16 units.
    feedback_text: z
      .string()
      .optional()
      .describe(`What was good or poor about it, at most ${feedbackTextMaxChars} characters.`),
  }
  export const rated = z.object({
    thread_id: z.string(),
    message_id: z.string(),
    positive: z.boolean(),
    feedback_text: z.string().nullable(),
    app_url: z.string(),
  })
}
