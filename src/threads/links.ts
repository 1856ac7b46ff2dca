// Where threads and messages live in the web application, and the API's thread and message objects, which carry
// those addresses as `app_url`.
import { toIso } from '../shared/time'
import type { ThreadsModel } from './model'
import type { MessageRow, ThreadRow } from './repository'

export interface Links {
  threadUrl(threadId: string): string
  messageUrl(threadId: string, messageId: string): string
}

export function linksFor(publicUrl: string): Links {
  return {
    threadUrl: (threadId) => `${publicUrl}/threads/${threadId}`,
    messageUrl: (threadId, messageId) => `${publicUrl}/threads/${threadId}#message-${messageId}`,
  }
}

export function toThread(row: ThreadRow, links: Links): ThreadsModel.thread {
  return {
    id: row.id,
    name: row.name,
    state: row.state,
    is_private: row.isPrivate,
    archived: row.archived,
    owner: { id: row.ownerSub, name: row.ownerName },
    created_at: toIso(row.createdAt),
    updated_at: toIso(row.updatedAt),
    app_url: links.threadUrl(row.id),
  }
}

export function toMessage(row: MessageRow, links: Links): ThreadsModel.message {
  return {
    id: row.id,
    thread_id: row.threadId,
    role: row.role,
    contents: row.contents,
    created_at: toIso(row.createdAt),
    app_url: links.messageUrl(row.threadId, row.id),
  }
}
