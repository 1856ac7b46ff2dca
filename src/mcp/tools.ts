// The MCP server one request talks to: its tools, with descriptions written for a model, the scopes each needs
// (checked as the API checks them, refused as a tool error naming the scope), annotations, and results that are
// the API's objects in `structuredContent` with their JSON as text, as the MCP specification suggests.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js'
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  InitializeRequestSchema,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  ListToolsRequestSchema,
  PingRequestSchema,
  type ServerNotification,
  type ServerRequest,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import type * as z from 'zod/v4'
import { filesPerThread, imageLimits, mib, pdfLimits, textLimits } from '../attachments/limits'
import { refusalInWords } from '../attachments/service'
import { hasScope } from '../auth'
import type { Caller, Scope } from '../auth/model'
import { AppError } from '../shared/errors'
import { McpModel, maxAnswerWaitSeconds, maxToolArgumentValues } from './model'
import {
  type AnswerWait,
  answerChoice,
  answerOf,
  attachFile,
  awaitAnswer,
  listThreadPage,
  type McpDeps,
  modelsFor,
  rate,
  readThread,
  regenerate,
  searchThreads,
  send,
  startThread,
  threadNow,
  unreadAnswer,
} from './service'

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>

const instructions =
  'Threadhouse is where a team keeps its conversations with an AI assistant, as threads of messages. Find ' +
  'threads with search_threads or list_threads, read one with get_thread, start one with create_thread and ' +
  'continue it with send_message, which waits for the assistant’s answer. An answer that takes longer is ' +
  'fetched later with get_response; regenerate_response writes an answer again (list_models names the models ' +
  'a thread or an answer may use). When an answer asks a question with choices (a `user_get_choice` block), ' +
  'answer it with answer_choice. Every result carries `app_url` links: give them to the person so they can ' +
  'open the thread in Threadhouse.'

// Elicitation, the only thing the SDK validates JSON Schema for on a server, is never used here: one validator
// serves every request's server instead of a new Ajv instance per request.
const validator = new AjvJsonSchemaValidator()

/** The scopes a tool needs, shown in its description and its `_meta`. */
const scopeMetaKey = 'threadhouse/scopes'

// The annotations of the MCP specification, every hint stated rather than left to its default (which for
// destructiveHint is true). No tool reaches beyond Threadhouse's threads (openWorldHint false), and none destroys
// anything: a host may ask the person before a destructive tool, and none of these calls for that.
const readOnly: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
}
/** Each call adds something (a thread, a message, a file): a repeat adds it again. */
const additive: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
}
/** A call sets something to what its arguments say, so a repeat with the same arguments changes nothing more. */
const settling: ToolAnnotations = { ...additive, idempotentHint: true }

const readScopeNote =
  'Needs the threads:read scope (threads:read:own is enough to reach only the person’s own threads).'
const waitNote =
  `It waits for the answer up to wait_seconds (default ${maxAnswerWaitSeconds}), sending progress notifications ` +
  'with the answer’s text as it arrives when the client asked for progress; if the answer is not finished by then, ' +
  'the result has status `processing` and its message_id: call get_response with it later.'

function structured(value: object): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(value) }],
    structuredContent: value as Record<string, unknown>,
  }
}

function toolError(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true }
}

/** What a refused call tells the model: the API's message, and for a busy thread what to do about it. */
function refusal(error: AppError): string {
  if (error.code === 'conflict') {
    return `${error.message}. The thread is busy or has moved on: read it with get_thread, wait for any answer on its way with get_response, then try again.`
  }
  return refusalInWords(error)
}

function scopeRefusal(caller: Caller, scope: Scope): string {
  const held = [...caller.scopes].join(', ') || 'none'
  return (
    `This tool needs the ${scope} scope, which this connection's token does not have (it has: ${held}). ` +
    `Reconnect Threadhouse and allow ${scope}, or use a personal access token that has it.`
  )
}

/** The wait a tool call allows: its own bound, its cancellation, and progress when the client asked for it. */
function waitOf(extra: Extra, seconds: number | undefined): AnswerWait {
  const progressToken = extra._meta?.progressToken
  const wait: AnswerWait = { ms: (seconds ?? maxAnswerWaitSeconds) * 1000, signal: extra.signal }
  if (progressToken === undefined) return wait
  wait.onText = (text, end) => {
    const params = { progressToken, progress: end, message: text }
    // A client that went away learns nothing more; the answer goes on regardless.
    extra.sendNotification({ method: 'notifications/progress', params }).catch(() => {})
  }
  return wait
}

/** The requests this server answers, each with the schema the SDK checks it against before its handler runs. */
const requestSchemas = new Map<string, z.ZodType>([
  ['initialize', InitializeRequestSchema],
  ['ping', PingRequestSchema],
  ['tools/list', ListToolsRequestSchema],
  ['tools/call', CallToolRequestSchema],
])

/**
 * The JSON-RPC error for a request whose params its method does not take (tools/call `arguments` that are an array,
 * say), or null. Left to the SDK, the schema's failure is thrown inside the handler and answered as an internal error
 * (-32603) carrying the whole issue list; the specification's answer is -32602 Invalid params, and one issue says
 * enough. Arguments that are an object but do not match the tool's input schema are the tool's business: the SDK
 * answers them with a tool error the model can act on.
 */
export function invalidParams(message: JSONRPCMessage): JSONRPCErrorResponse | null {
  // A request has an id and a method; a cheap look, since each pass over a message costs as many values as it holds.
  if (!('method' in message && 'id' in message)) return null
  const schema = requestSchemas.get(message.method)
  const checked = schema?.safeParse(message)
  if (!checked || checked.success) return null
  const issue = checked.error.issues[0]
  // Named within params, which the message already says.
  const path = issue?.path[0] === 'params' ? issue.path.slice(1) : (issue?.path ?? [])
  const where = path.length ? `${path.join('.')}: ` : ''
  const error = {
    code: ErrorCode.InvalidParams,
    message: `Invalid params: ${where}${issue?.message ?? 'not accepted'}`,
  }
  return { jsonrpc: '2.0', id: message.id, error }
}

/** The MCP server for one request of this caller: stateless, it lives as long as the request. */
export function serverFor(deps: McpDeps, caller: Caller): McpServer {
  const server = new McpServer(
    { name: 'threadhouse', title: 'Threadhouse', version: '1.0.0' },
    { instructions, jsonSchemaValidator: validator, maxToolInputElements: maxToolArgumentValues },
  )

  /** Runs a tool body for a caller holding every scope it needs; refusals become tool errors, never a failed call. */
  const guarded =
    <Args>(scopes: Scope[], name: string, run: (args: Args, extra: Extra) => Promise<object>) =>
    async (args: Args, extra: Extra): Promise<CallToolResult> => {
      const missing = scopes.find((scope) => !hasScope(caller, scope))
      if (missing) return toolError(scopeRefusal(caller, missing))
      try {
        return structured(await run(args, extra))
      } catch (error) {
        if (error instanceof AppError) return toolError(refusal(error))
        deps.log.error('MCP tool failed', { tool: name, error: String(error) })
        return toolError('Threadhouse could not do this because of an error on its side; try again later.')
      }
    }
  const meta = (scopes: Scope[]) => ({ [scopeMetaKey]: scopes })
  /** Waits for the answer to a message just sent, if this token may read it back (as the API's poll needs). */
  const answerTo = (threadId: string, messageId: string, extra: Extra, seconds: number | undefined) =>
    hasScope(caller, 'threads:read')
      ? awaitAnswer(deps, caller, threadId, messageId, waitOf(extra, seconds))
      : Promise.resolve(unreadAnswer(deps, threadId, messageId))

  server.registerTool(
    'search_threads',
    {
      title: 'Search threads',
      description:
        'Full-text search of the threads the person can see: their own and the team’s non-private ones. Finds ' +
        'threads whose name and messages together contain every word of `q`, most recently updated first, one ' +
        `page at a time (pass \`last_id\` as \`after\` while \`has_more\`). Each thread comes with \`match\`: ` +
        'the passage that matched (from its newest message holding the most of the words, a file it attaches, or ' +
        `its name) and that message's ID, to read around it with get_thread. ${readScopeNote}`,
      inputSchema: McpModel.searchThreadsInput,
      outputSchema: McpModel.searchResults,
      annotations: readOnly,
      _meta: meta(['threads:read']),
    },
    guarded(['threads:read'], 'search_threads', (args) => searchThreads(deps, caller, args)),
  )

  server.registerTool(
    'list_threads',
    {
      title: 'List threads',
      description:
        'The threads the person can see, most recently updated first, one page at a time (pass `last_id` as ' +
        `\`after\` while \`has_more\`). \`owned\` narrows to their own or to others’. ${readScopeNote}`,
      inputSchema: McpModel.listThreadsInput,
      outputSchema: McpModel.threadList,
      annotations: readOnly,
      _meta: meta(['threads:read']),
    },
    guarded(['threads:read'], 'list_threads', (args) => listThreadPage(deps, caller, args)),
  )

  server.registerTool(
    'list_models',
    {
      title: 'List models',
      description:
        'The AI models the person’s organization may use, with the default marked. Pass a model’s `id` as `model` ' +
        'to create_thread or send_message to make it the thread’s model, or to regenerate_response for one answer. ' +
        'Any valid token may list them.',
      inputSchema: {},
      outputSchema: McpModel.modelList,
      annotations: readOnly,
      _meta: meta([]),
    },
    guarded([], 'list_models', () => modelsFor(deps, caller)),
  )

  server.registerTool(
    'get_thread',
    {
      title: 'Read a thread',
      description:
        'A thread and its messages, oldest first, one page at a time (pass `messages.last_id` as `after` while ' +
        '`messages.has_more`). Messages hold text, files (`attachment_id`) and questions with choices ' +
        `(\`user_get_choice\`). \`thread.state\` says whether it takes a new message (\`ready\`); \`model\` is the model ` +
        `that writes its next answer. ${readScopeNote}`,
      inputSchema: McpModel.getThreadInput,
      outputSchema: McpModel.threadWithMessages,
      annotations: readOnly,
      _meta: meta(['threads:read']),
    },
    guarded(['threads:read'], 'get_thread', (args) => readThread(deps, caller, args)),
  )

  server.registerTool(
    'create_thread',
    {
      title: 'Start a thread',
      description:
        'Starts a new thread owned by the person, visible to their team unless `is_private`. With `text`, that ' +
        `is its first message and the assistant answers it: ${waitNote} Without \`text\` the thread is empty and ` +
        'ready for send_message (upload files to it first with upload_attachment). `model` (see list_models) ' +
        'answers it with that model; without it, the organization’s default. Needs the threads:write scope ' +
        '(and threads:read to get the answer back).',
      inputSchema: McpModel.createThreadInput,
      outputSchema: McpModel.createdThread,
      annotations: additive,
      _meta: meta(['threads:write']),
    },
    guarded(['threads:write'], 'create_thread', async (args, extra) => {
      const created = await startThread(deps, caller, args)
      // Without a read scope, only the IDs and the link, as the API's POST answers: nothing to read back.
      if (!hasScope(caller, 'threads:read')) {
        if (created.message_id === null) return created
        return { ...created, answer: unreadAnswer(deps, created.thread_id, created.message_id) }
      }
      if (created.message_id === null) return { ...created, thread: await threadNow(deps, caller, created.thread_id) }
      const answer = await answerTo(created.thread_id, created.message_id, extra, args.wait_seconds)
      // The thread as the answer left it, not as it was when the answer was queued.
      return { ...created, thread: await threadNow(deps, caller, created.thread_id), answer }
    }),
  )

  server.registerTool(
    'send_message',
    {
      title: 'Send a message',
      description:
        'Sends a message in one of the person’s own threads and starts the assistant’s answer. The thread must ' +
        `be \`ready\`: a thread still answering refuses it (try again once that answer is done). ${waitNote} ` +
        '`model` (see list_models) makes that model the thread’s from this message on. ' +
        'Needs the threads:write scope (and threads:read to get the answer back).',
      inputSchema: McpModel.sendMessageInput,
      outputSchema: McpModel.answer,
      annotations: additive,
      _meta: meta(['threads:write']),
    },
    guarded(['threads:write'], 'send_message', async (args, extra) => {
      const sent = await send(deps, caller, args)
      return await answerTo(args.thread_id, sent.message_id, extra, args.wait_seconds)
    }),
  )

  server.registerTool(
    'regenerate_response',
    {
      title: 'Regenerate an answer',
      description:
        'Writes the assistant’s answer to one of the person’s messages again (`message_id`, a `user` message of the ' +
        'thread as get_thread lists it), optionally with another model (`model`, see list_models) for this answer ' +
        'only. The earlier answer stays as a version in Threadhouse, and any later messages leave the thread’s ' +
        `list. The thread must be \`ready\`, or \`error\`: regenerating the failed answer is how it goes on. ${waitNote} ` +
        'Only in the person’s own threads. Needs the threads:write scope (and threads:read to get the answer back).',
      inputSchema: McpModel.regenerateInput,
      outputSchema: McpModel.answer,
      annotations: additive,
      _meta: meta(['threads:write']),
    },
    guarded(['threads:write'], 'regenerate_response', async (args, extra) => {
      const queued = await regenerate(deps, caller, args)
      return await answerTo(args.thread_id, queued.message_id, extra, args.wait_seconds)
    }),
  )

  server.registerTool(
    'get_response',
    {
      title: 'Get an answer',
      description:
        'Where the assistant’s answer to a user message is: `processing` while it is on its way, else its ' +
        'messages. Use it with the `message_id` that send_message, answer_choice or create_thread returned with ' +
        `status \`processing\`. It does not wait: call it again a little later while it says \`processing\`. ${readScopeNote}`,
      inputSchema: McpModel.getResponseInput,
      outputSchema: McpModel.answer,
      annotations: readOnly,
      _meta: meta(['threads:read']),
    },
    guarded(['threads:read'], 'get_response', (args) => answerOf(deps, caller, args.thread_id, args.message_id)),
  )

  server.registerTool(
    'answer_choice',
    {
      title: 'Answer a question with choices',
      description:
        'Answers a question the assistant asked with choices (a `user_get_choice` block in the thread’s latest ' +
        'message) by picking one of its `choices`, as the person would with the buttons in Threadhouse. The ' +
        `assistant then goes on: ${waitNote} To answer in other words, use send_message. Only in the person’s own ` +
        'threads. Needs the threads:write and threads:read scopes.',
      inputSchema: McpModel.answerChoiceInput,
      outputSchema: McpModel.answer,
      // A question is answered once: a repeat finds it no longer open, and changes nothing.
      annotations: { ...additive, idempotentHint: true },
      _meta: meta(['threads:write', 'threads:read']),
    },
    guarded(['threads:write', 'threads:read'], 'answer_choice', async (args, extra) => {
      const sent = await answerChoice(deps, caller, args)
      return await answerTo(args.thread_id, sent.message_id, extra, args.wait_seconds)
    }),
  )

  server.registerTool(
    'upload_attachment',
    {
      title: 'Upload a file',
      description:
        'Uploads one file, base64-encoded, to one of the person’s own threads, for a later send_message to ' +
        `attach by its \`attachment.id\`. Accepted: images (JPEG, PNG, GIF, WebP, up to ${mib(imageLimits.maxBytes)}), ` +
        `PDF (up to ${mib(pdfLimits.maxBytes)} and ${pdfLimits.maxPages} pages) and text (plain, Markdown, CSV, up ` +
        `to ${mib(textLimits.maxBytes)}, UTF-8); at most ${filesPerThread} files per thread. The type is decided ` +
        'from the bytes, which are checked as an upload through the API is. Needs the threads:write scope.',
      inputSchema: McpModel.uploadAttachmentInput,
      outputSchema: McpModel.uploaded,
      annotations: additive,
      _meta: meta(['threads:write']),
    },
    guarded(['threads:write'], 'upload_attachment', (args) => attachFile(deps, caller, args)),
  )

  server.registerTool(
    'rate_message',
    {
      title: 'Rate an answer',
      description:
        'Rates one of the assistant’s messages as good (`positive: true`) or poor, with optional feedback text, ' +
        'in any thread the person can see. Rating the same message again replaces their earlier rating. Needs ' +
        'the threads:write scope.',
      inputSchema: McpModel.rateMessageInput,
      outputSchema: McpModel.rated,
      annotations: settling,
      _meta: meta(['threads:write']),
    },
    guarded(['threads:write'], 'rate_message', (args) => rate(deps, caller, args)),
  )

  return server
}
