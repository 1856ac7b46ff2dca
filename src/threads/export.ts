// A thread as one document to keep or move elsewhere: JSON with everything needed to rebuild it (the thread, every
// message the API lists, every other version in the thread's tree, each with its parent and model, and each
// attachment's description and download path), or Markdown for people to read (the listed path only).

import type { AttachmentRepository } from '../attachments/repository'
import type { Caller } from '../auth/model'
import type { ToolCallRepository } from '../generation/tool-calls.repository'
import { type AuditLog, type AuditOrigin, auditEntry, target } from '../shared/audit'
import { toIso } from '../shared/time'
import type { UsageRepository } from '../usage/repository'
import { answerUsages } from '../usage/service'
import { type Links, toMessage, toThread } from './links'
import { attachmentIdsOf } from './messages'
import type { ThreadsModel } from './model'
import type { ThreadRepository, TreeMessageRow } from './repository'
import { toolCallLine, toolCallsOf } from './tool-calls'
import { requireVisibleThread } from './visibility'

type ThreadExport = ThreadsModel.threadExport

/**
 * The thread as the caller may read it: 404 when it does not exist for them, as for reading it. An export writes
 * nothing else, so its audit event is written on its own, once the export is built and before it is answered: an
 * export the log does not show never leaves the server.
 */
export async function exportThread(
  deps: {
    threads: ThreadRepository
    attachments: AttachmentRepository
    usage: UsageRepository
    toolCalls: ToolCallRepository
    links: Links
    audit: AuditLog
  },
  caller: Caller,
  threadId: string,
  now: number,
  act: { origin: AuditOrigin; format: 'json' | 'markdown' },
): Promise<ThreadExport> {
  const thread = await requireVisibleThread(deps.threads, caller, threadId)
  // One read of the whole tree, in list order: the active path is exactly what GET …/messages lists.
  const tree = await deps.threads.threadTree(threadId)
  // Each answer's usage and tool calls, one read each: kept by answer ID, so a deleted thread's rows are never shown.
  const answerIds = tree.filter((row) => row.role === 'assistant').map((row) => row.id)
  const [usage, toolCalls] = await Promise.all([
    answerUsages(deps.usage, answerIds),
    toolCallsOf(deps.toolCalls, answerIds),
  ])
  const exported = (row: TreeMessageRow): ThreadsModel.exportedMessage => ({
    ...toMessage(row, deps.links),
    parent_id: row.parentId,
    model: row.model,
    ...(row.role === 'assistant' ? { usage: usage.get(row.id) ?? null, tool_calls: toolCalls.get(row.id) ?? [] } : {}),
  })
  const messages = tree.filter((row) => row.active).map(exported)
  const others = tree.filter((row) => !row.active).map(exported)
  const ids = [...new Set(tree.flatMap((row) => attachmentIdsOf(row.contents)))]
  const files = ids.length === 0 ? [] : await deps.attachments.listByIds(ids)
  await deps.audit.append(
    auditEntry(act.origin, now, {
      organizationId: caller.organizationId,
      action: 'thread.exported',
      target: target('thread', threadId),
      detail: { format: act.format, owner_id: thread.ownerId },
    }),
  )
  return {
    format: 'threadhouse.thread.v1',
    exported_at: toIso(now),
    thread: toThread(thread, deps.links),
    messages,
    other_messages: others,
    attachments: files
      .filter((file) => file.threadId === threadId)
      .map((file) => ({
        id: file.id,
        filename: file.filename,
        media_type: file.mediaType,
        size_bytes: file.sizeBytes,
        created_at: toIso(file.createdAt),
        download_path: `/api/v1/threads/${threadId}/attachments/${file.id}`,
      })),
  }
}

const roleTitles = { user: 'User', assistant: 'Assistant', summary: 'Summary of earlier messages' } as const

/** The export as Markdown: the messages' text as written (it is Markdown already), files and choices named. */
export function exportMarkdown(exported: ThreadExport): string {
  const { thread } = exported
  const files = new Map(exported.attachments.map((file) => [file.id, file]))
  const lines = [
    `# ${thread.name ?? 'Untitled thread'}`,
    '',
    `- Owner: ${thread.owner.name}`,
    `- Created: ${thread.created_at}; last updated: ${thread.updated_at}`,
    `- State: ${thread.state}${thread.archived ? ', archived' : ''}${thread.is_private ? ', private' : ''}`,
    `- Link: ${thread.app_url}`,
    `- Exported: ${exported.exported_at}`,
  ]
  for (const message of exported.messages) {
    lines.push('', `## ${roleTitles[message.role]} · ${message.created_at}`, '')
    // What the answer did before it wrote (its calls come before the text that reads their results), one line each.
    const calls = message.tool_calls ?? []
    for (const call of calls) lines.push(`- ${toolCallLine(call)}`)
    if (calls.length > 0) lines.push('')
    for (const block of message.contents) {
      if (block.type === 'text') lines.push(block.text, '')
      else if (block.type === 'user_get_choice') {
        lines.push(`> ${block.question}`, '>', ...block.choices.map((choice) => `> - ${choice}`), '')
      } else {
        const file = files.get(block.attachment_id)
        lines.push(`Attached: ${file ? `${file.filename} (${file.media_type})` : block.attachment_id}`, '')
      }
    }
  }
  return `${lines.join('\n').trimEnd()}\n`
}

/** The export's headers: a download named after the thread, in either format (the API's and the web app's). */
export function exportHeaders(format: 'json' | 'markdown', threadId: string): Record<string, string> {
  const markdown = format === 'markdown'
  return {
    'content-type': markdown ? 'text/markdown; charset=utf-8' : 'application/json',
    'content-disposition': `attachment; filename="thread-${threadId}.${markdown ? 'md' : 'json'}"`,
  }
}

/** The export as a download, for the web app's links: the same document and headers as the API's. */
export function exportResponse(exported: ThreadExport, format: 'json' | 'markdown', threadId: string): Response {
  const body = format === 'markdown' ? exportMarkdown(exported) : JSON.stringify(exported)
  return new Response(body, { headers: exportHeaders(format, threadId) })
}
