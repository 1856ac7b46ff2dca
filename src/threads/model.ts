// TypeBox schemas of the Threads API: validation, TypeScript types and OpenAPI from one source.
import { type Static, type TSchema, t } from 'elysia'
import { attachmentsPerMessage } from '../attachments/limits'
import { maxJsonBodyBytes } from '../shared/body'
import { integer } from '../shared/responses'
import { UsageModel } from '../usage/model'

const uuid = (description?: string) => t.String({ format: 'uuid', description })
const timestamp = (description: string) => t.String({ format: 'date-time', description })
/** The specification's limit on feedback_text, in characters. */
export const feedbackTextMaxChars = 1024
/** The longest thread name. */
export const threadNameMaxLength = 500
/**
 * The longest message text another client (MCP) may send, in UTF-16 units. The API sets no bound of its own on
 * `text`: its JSON body is limited to `maxJsonBodyBytes` (1 MiB), and no text longer than that many characters fits
 * in one, since every character takes at least one byte. The same bound keeps MCP, whose bodies may be larger for
 * uploads, from storing what the API never could.
 */
export const messageTextMaxLength = maxJsonBodyBytes

export namespace ThreadsModel {
  export const threadState = t.Union(
    [t.Literal('ready'), t.Literal('waiting'), t.Literal('active'), t.Literal('error'), t.Literal('interrupted')],
    { description: 'Processing state. A new message is accepted only in `ready`.' },
  )

  export const thread = t.Object(
    {
      id: uuid('Unique thread ID.'),
      name: t.Nullable(t.String()),
      state: threadState,
      is_private: t.Boolean(),
      archived: t.Boolean(),
      owner: t.Object({ id: t.String(), name: t.Nullable(t.String()) }, { additionalProperties: false }),
      created_at: timestamp('Creation time, ISO 8601 UTC.'),
      updated_at: timestamp('Time of the last update, ISO 8601 UTC.'),
      app_url: t.String({ description: 'Link to the thread in the web application.' }),
    },
    { additionalProperties: false },
  )
  export type thread = Static<typeof thread>

  export const textBlock = t.Object({ type: t.Literal('text'), text: t.String() }, { additionalProperties: false })
  export const imageBlock = t.Object(
    { type: t.Literal('image'), attachment_id: t.String() },
    { additionalProperties: false },
  )
  export const documentBlock = t.Object(
    { type: t.Literal('document'), attachment_id: t.String() },
    { additionalProperties: false },
  )
  export const choiceBlock = t.Object(
    { type: t.Literal('user_get_choice'), tool_use_id: t.String(), question: t.String(), choices: t.Array(t.String()) },
    { additionalProperties: false },
  )
  export const contentBlock = t.Union([textBlock, imageBlock, documentBlock, choiceBlock])
  export type contentBlock = Static<typeof contentBlock>

  export const message = t.Object(
    {
      id: uuid('Unique message ID.'),
      thread_id: uuid('Owning thread.'),
      role: t.Union([t.Literal('user'), t.Literal('assistant'), t.Literal('summary')]),
      contents: t.Array(contentBlock),
      created_at: timestamp('Creation time, ISO 8601 UTC.'),
      app_url: t.String({ description: 'Link to the message in the web application.' }),
    },
    { additionalProperties: false },
  )
  export type message = Static<typeof message>

  const envelope = <T extends TSchema>(item: T) =>
    t.Object(
      {
        data: t.Array(item),
        first_id: t.Nullable(t.String(), { description: 'ID of the first item; null when the page is empty.' }),
        last_id: t.Nullable(t.String(), { description: 'ID of the last item: pass it as `after` for the next page.' }),
        has_more: t.Boolean({ description: 'False when there are no more pages.' }),
        limit: integer({ minimum: 1, description: 'The limit applied to this request.' }),
      },
      { additionalProperties: false },
    )
  export const threadList = envelope(thread)
  export type threadList = Static<typeof threadList>
  export const messageList = envelope(message)
  export type messageList = Static<typeof messageList>

  const limit = t.Integer({
    minimum: 1,
    default: 50,
    description: 'Page size, default 50. Values above 200 are clamped to 200 (the applied limit is echoed).',
  })

  /** What a thread list and a search page take alike: the filters, the order and the page. */
  const listParameters = {
    owned: t.Optional(
      t.Boolean({ description: 'true: only threads the caller owns; false: only threads owned by others.' }),
    ),
    private: t.Optional(t.Boolean({ description: 'true: private threads only; false: public threads only.' })),
    archived: t.Optional(t.Boolean({ default: false, description: 'true includes archived threads.' })),
    sort_by: t.Optional(
      t.Union([t.Literal('updated_at'), t.Literal('created_at')], {
        default: 'updated_at',
        description:
          '`updated_at` sorts by the order in which updates happened (equal timestamps: the later update ' +
          'first when descending); `created_at` by creation time, then ID.',
      }),
    ),
    sort_dir: t.Optional(t.Union([t.Literal('asc'), t.Literal('desc')], { default: 'desc' })),
    updated_since: t.Optional(
      t.String({
        format: 'date-time',
        description:
          'Only threads updated after this time: RFC 3339 (ISO 8601 with `Z` or an offset) or a date; a time ' +
          'without a zone, or a day that does not exist, is 400. `updated_at` never moves back, even when the ' +
          'server clock does, so polling with the newest `updated_at` seen misses no update.',
      }),
    ),
    limit: t.Optional(limit),
    after: t.Optional(
      uuid(
        'Return threads after this thread ID (the previous page’s `last_id`), which must be visible to the ' +
          'caller. Cursors do not expire: with `sort_by=created_at` a thread made private since still marks ' +
          'the place, without being shown.',
      ),
    ),
  }

  export const listThreadsQuery = t.Object({
    ...listParameters,
    q: t.Optional(
      t.String({
        maxLength: 500,
        description:
          'Full-text search: threads whose name, active messages and their files hold every word of `q`, each as a ' +
          'prefix (`lyo` finds "Lyon") unless quoted (`"mark"`, `"weekend in lyon"` match exactly).',
      }),
    ),
  })
  export type listThreadsQuery = Static<typeof listThreadsQuery>

  export const searchQuery = t.Object({
    ...listParameters,
    q: t.String({
      maxLength: 500,
      description:
        'What to find, as `q` of the thread list finds it. A `q` without a word (blank, or only punctuation) ' +
        'finds nothing: an empty page.',
    }),
  })
  export type searchQuery = Static<typeof searchQuery>

  const range = t.Array(integer({ minimum: 0 }), { minItems: 2, maxItems: 2 })

  export const searchHit = t.Object(
    {
      thread,
      message_id: t.Nullable(
        t.String({
          description: 'The active message the passage is from (or that attached its file); null: the name.',
        }),
      ),
      attachment_id: t.Nullable(t.String({ description: 'The file the passage is from (its text or its name).' })),
      snippet: t.String({
        description:
          'The best passage, at most 200 characters (UTF-16 code units), cut at word boundaries, `…` where it is ' +
          'cut, whitespace runs shown as one space. Empty when the thread has no text left to show.',
      }),
      highlights: t.Array(range, {
        description:
          '`[start, end)` of each match in `snippet`, in UTF-16 code units (what JavaScript strings index), ' +
          'sorted and not overlapping.',
      }),
    },
    { additionalProperties: false },
  )
  export type searchHit = Static<typeof searchHit>
  export const searchResults = envelope(searchHit)
  export type searchResults = Static<typeof searchResults>

  export const listMessagesQuery = t.Object({
    limit: t.Optional(limit),
    after: t.Optional(uuid('Return messages after this message ID.')),
  })

  export const createThreadBody = t.Object(
    {
      text: t.Optional(t.String({ minLength: 1, description: 'Initial message; when omitted the thread is empty.' })),
      name: t.Optional(
        t.Nullable(
          t.String({
            maxLength: threadNameMaxLength,
            description:
              "Display name. Omitted or null: the thread is named after its first message's words (at most 80 " +
              'characters), now with `text`, or when its first message is sent.',
          }),
        ),
      ),
      is_private: t.Optional(t.Boolean({ description: 'true: only the owner can see the thread (default false).' })),
    },
    { additionalProperties: false, examples: [{ name: 'Trip', text: 'Plan a weekend in Lyon' }] },
  )
  export type createThreadBody = Static<typeof createThreadBody>

  export const createThreadResponse = t.Object(
    {
      thread_id: t.String(),
      message_id: t.Nullable(t.String(), { description: 'The initial message, or null when no text was sent.' }),
    },
    { additionalProperties: false },
  )

  export const sendMessageBody = t.Object(
    {
      text: t.String({ minLength: 1 }),
      attachment_ids: t.Optional(
        t.Array(t.String({ format: 'uuid' }), {
          maxItems: attachmentsPerMessage,
          description: 'Files uploaded to this thread, in display order.',
        }),
      ),
    },
    { additionalProperties: false, examples: [{ text: 'And if it rains?' }] },
  )
  export type sendMessageBody = Static<typeof sendMessageBody>

  export const sendMessageResponse = t.Object({ message_id: t.String() }, { additionalProperties: false })

  export const feedbackBody = t.Object(
    {
      positive: t.Boolean({ description: 'true = thumbs up, false = thumbs down.' }),
      // Not maxLength, which counts UTF-16 units: feedback.ts counts characters (code points).
      feedback_text: t.Optional(t.String({ description: `At most ${feedbackTextMaxChars} characters (code points).` })),
    },
    { additionalProperties: false, examples: [{ positive: false, feedback_text: 'Missed the question' }] },
  )
  export type feedbackBody = Static<typeof feedbackBody>

  export const updateThreadBody = t.Object(
    {
      name: t.Optional(
        t.Nullable(t.String({ maxLength: threadNameMaxLength, description: 'The new name; null removes it.' })),
      ),
      archived: t.Optional(t.Boolean()),
      is_private: t.Optional(t.Boolean({ description: 'true: only the owner can see the thread.' })),
    },
    {
      additionalProperties: false,
      minProperties: 1,
      description: 'The fields to change; at least one.',
      examples: [{ name: 'Lyon weekend' }, { archived: true }, { is_private: true }],
    },
  )
  export type updateThreadBody = Static<typeof updateThreadBody>

  export const continueThreadResponse = t.Object(
    {
      thread_id: t.String({ description: 'The new thread.' }),
      message_id: t.String({ description: 'Its `summary` message, quoting the end of the old thread.' }),
    },
    { additionalProperties: false },
  )

  export const regenerateBody = t.Object(
    {
      model: t.Optional(
        t.String({
          minLength: 1,
          description:
            'A model ID for this answer only (one the organization may use; 400 otherwise). Omitted: the ' +
            'thread’s model, else the organization’s default.',
        }),
      ),
    },
    { additionalProperties: false, examples: [{}] },
  )
  export type regenerateBody = Static<typeof regenerateBody>

  export const regenerateResponse = t.Object(
    { message_id: t.String({ description: 'The user message whose answer is generated again (the one named).' }) },
    { additionalProperties: false },
  )

  export const editResponse = t.Object(
    { message_id: t.String({ description: 'The new user message (a version of the one edited), now active.' }) },
    { additionalProperties: false },
  )

  export const versionList = t.Object(
    {
      data: t.Array(message, {
        description: 'The versions: the messages with the same parent and role, oldest first (all of them).',
      }),
      first_id: t.Nullable(t.String({ description: 'ID of the first (oldest) version.' })),
      last_id: t.Nullable(t.String({ description: 'ID of the last (newest) version.' })),
      has_more: t.Boolean({ description: 'Always false: every version is listed.' }),
      active_id: t.Nullable(
        t.String({ description: 'The version on the thread’s active path; null when none is (a branch left).' }),
      ),
    },
    { additionalProperties: false },
  )
  export type versionList = Static<typeof versionList>

  /** What an answer's model did with a tool of the organization's MCP servers (generation/tool-calls.repository.ts). */
  export const toolCall = t.Object(
    {
      id: uuid('The call.'),
      server: t.String({ description: 'The MCP server’s name in the organization (thread settings’ `server/tool`).' }),
      tool: t.String({ description: 'The tool’s name on that server.' }),
      arguments: t.Union([t.Record(t.String(), t.Unknown()), t.String()], {
        description: 'The arguments the model gave: a JSON object, or the text it wrote when that was not one.',
      }),
      outcome: t.Union(
        [
          t.Literal('ok'),
          t.Literal('error'),
          t.Literal('timeout'),
          t.Literal('denied'),
          t.Literal('refused'),
          t.Literal('awaiting_approval'),
          t.Literal('allowed'),
          t.Literal('running'),
          t.Literal('unknown'),
        ],
        {
          description:
            '`ok`: the tool answered; `error`: it failed, reported an error, or was given arguments it could not ' +
            'take; `timeout`: no answer in time; `denied`: the thread’s owner said no; `refused`: never called (a ' +
            'tool the thread is not offered); `awaiting_approval`: waits for the owner’s choice; `allowed`: ' +
            'allowed, not yet called; `running`: being called by a later answer; `unknown`: the server restarted ' +
            'while it ran, so whether it took effect is not known (it is never called again).',
        },
      ),
      result: t.Nullable(
        t.String({
          description:
            'What the model was told the tool answered, at most TOOLS_RESULT_MAX_CHARS characters (20,000 by ' +
            'default) with a note when it was cut; null when the tool gave nothing (not called, or still waiting).',
        }),
      ),
      result_truncated: t.Boolean({ description: 'Whether `result` was cut from a longer one.' }),
      error: t.Nullable(t.String({ description: 'Why it did not succeed, in a few words; null when it did.' })),
      duration_ms: t.Nullable(integer({ minimum: 0, description: 'How long the call took; null when not called.' })),
      round: integer({
        minimum: 1,
        description: 'Which of the answer’s requests to the model asked for it (calls of one round ran together).',
      }),
      started_at: timestamp('When the model asked for it, ISO 8601 UTC.'),
      decided_by: t.Nullable(
        t.String({ description: 'The user message that allowed or denied it; null when it needed no choice.' }),
      ),
    },
    { additionalProperties: false },
  )
  export type toolCall = Static<typeof toolCall>

  const toolCalls = (description: string) => t.Optional(t.Array(toolCall, { description }))

  export const messageDetails = t.Object(
    {
      id: uuid('The message.'),
      parent_id: t.Nullable(
        t.String({
          description:
            'The message it follows in the thread’s tree: for an answer, the user message it answers; for a user ' +
            'message, the message before it when it was sent; null for a thread’s first message and for summaries.',
        }),
      ),
      role: t.Union([t.Literal('user'), t.Literal('assistant'), t.Literal('summary')]),
      model: t.Nullable(
        t.String({ description: 'The model that wrote an answer; null for other messages and when not recorded.' }),
      ),
      version: integer({ minimum: 1, description: 'Its place among its versions, oldest first, from 1.' }),
      versions: integer({ minimum: 1, description: 'How many versions there are (1: none but itself).' }),
      active: t.Boolean({ description: 'Whether it is on the thread’s active path (listed by GET …/messages).' }),
      usage: t.Optional(
        t.Nullable(UsageModel.answerUsage, {
          description:
            'Assistant messages only: what the answer used (tokens, cost, timings); null when none was recorded ' +
            '(answers from before usage was recorded). Absent for other messages.',
        }),
      ),
      tool_calls: toolCalls(
        'Assistant messages only: the tools of the organization’s MCP servers the answer called, in order ([] ' +
          'when none). Absent for other messages.',
      ),
    },
    { additionalProperties: false },
  )
  export type messageDetails = Static<typeof messageDetails>

  export const threadParams = t.Object({ threadId: uuid() })
  export const messageParams = t.Object({ threadId: uuid(), messageId: uuid() })

  export const exportQuery = t.Object({
    format: t.Optional(
      t.Union([t.Literal('json'), t.Literal('markdown')], { description: 'json (the default) or markdown.' }),
    ),
  })

  export const exportedAttachment = t.Object(
    {
      id: uuid(),
      filename: t.String(),
      media_type: t.String(),
      size_bytes: integer({ minimum: 0 }),
      created_at: t.String({ format: 'date-time' }),
      download_path: t.String({
        description: 'The API path of its bytes, read with a token that may read the thread.',
      }),
    },
    { additionalProperties: false },
  )

  /** A message as the JSON export holds it: the API's Message with its place in the tree. */
  export const exportedMessage = t.Object(
    {
      ...message.properties,
      parent_id: t.Nullable(t.String({ description: 'The message it follows in the thread’s tree (see details).' })),
      model: t.Nullable(t.String({ description: 'The model that wrote an answer; null otherwise or unrecorded.' })),
      usage: t.Optional(
        t.Nullable(UsageModel.answerUsage, {
          description: 'Assistant messages only: what the answer used; null when none was recorded.',
        }),
      ),
      tool_calls: toolCalls('Assistant messages only: the tools the answer called, as in its details.'),
    },
    { additionalProperties: false },
  )
  export type exportedMessage = Static<typeof exportedMessage>

  export const threadExport = t.Object(
    {
      format: t.Literal('threadhouse.thread.v1'),
      exported_at: t.String({ format: 'date-time' }),
      thread,
      messages: t.Array(exportedMessage, {
        description: 'Every message the thread lists (its active path), oldest first, with parent and model.',
      }),
      other_messages: t.Array(exportedMessage, {
        description:
          'Every message of the thread not on its active path, oldest first: earlier versions (edits, ' +
          'regenerated answers), the branches they lead, and messages a summary replaced. With `messages`, ' +
          'the whole tree, through `parent_id`.',
      }),
      attachments: t.Array(exportedAttachment, { description: 'The files its messages attach.' }),
    },
    { additionalProperties: false },
  )
  export type threadExport = Static<typeof threadExport>
}
