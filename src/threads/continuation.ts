// Continuing a thread that ended in `error`, the one way on that the specification allows: a new thread,
// seeded with a `summary` message that quotes the end of the old conversation. The summary is a deterministic
// extract, not a model's summary: the model just failed on this thread, and an extract can be neither wrong
// nor slow. It says so, so that neither the reader nor the model takes it for more than it is.
import type { Caller } from '../auth/model'
import { conflict } from '../shared/errors'
import { escapeMarkdown } from '../web/markdown'
import type { Links } from './links'
import { attachmentIdsOf } from './messages'
import { type ThreadsModel, threadNameMaxLength } from './model'
import type { ThreadRepository } from './repository'
import { requireVisibleThread } from './visibility'

/** How many of the old thread's last messages the extract quotes. */
export const quotedMessages = 6
/** Characters kept of each quoted message; longer ones are cut with an ellipsis. */
export const quotedCharacters = 2000

interface QuotedMessage {
  role: ThreadsModel.message['role']
  contents: ThreadsModel.contentBlock[]
}

const speakers: Record<QuotedMessage['role'], string> = {
  user: 'User',
  assistant: 'Assistant',
  summary: 'Earlier summary',
}

function shorten(text: string, limit: number): string {
  const characters = [...text]
  return characters.length <= limit ? text : `${characters.slice(0, limit).join('').trimEnd()} …`
}

/** A block as Markdown: text as it is, files by name, a question with its choices. */
function describeBlock(block: ThreadsModel.contentBlock, filenames: Map<string, string>): string {
  switch (block.type) {
    case 'text':
      return block.text
    case 'image':
      return `\\[image: ${escapeMarkdown(filenames.get(block.attachment_id) ?? 'attachment')}\\]`
    case 'document':
      return `\\[document: ${escapeMarkdown(filenames.get(block.attachment_id) ?? 'attachment')}\\]`
    case 'user_get_choice':
      return `${block.question} (choices: ${block.choices.join(' / ')})`
  }
}

/**
 * Quotes a message as a Markdown block quote. Its own Markdown is kept: whatever it holds (even a code fence left
 * open by shortening) ends with the quote, and the renderer makes any of it safe.
 */
function quote(message: QuotedMessage, filenames: Map<string, string>): string {
  const written = message.contents.map((block) => describeBlock(block, filenames)).join('\n')
  const text = shorten(written.trim(), quotedCharacters)
  const lines = text.split('\n').map((line) => `> ${line}`)
  return `**${speakers[message.role]}:**\n\n${lines.join('\n')}`
}

/** The seed of the new thread; see README, "Web application". */
export function continuationSummary(
  old: { name: string | null; appUrl: string },
  history: QuotedMessage[],
  filenames: Map<string, string>,
): string {
  const quoted = history.slice(-quotedMessages)
  const left = history.length - quoted.length
  const title = old.name === null ? 'an untitled thread' : `“${escapeMarkdown(old.name)}”`
  return [
    `**Continued from ${title}, which stopped with an error:** ${old.appUrl}`,
    `This is an automatic extract of its last ${quoted.length} ${quoted.length === 1 ? 'message' : 'messages'}, ` +
      `quoted as written (long ones shortened), not a summary written by a model.` +
      (left > 0 ? ` ${left} earlier ${left === 1 ? 'message is' : 'messages are'} left out.` : ''),
    ...quoted.map((message) => quote(message, filenames)),
  ].join('\n\n')
}

/** The display names of attachments by ID, as the attachments feature knows them; unknown IDs are left out. */
export type FileNames = (ids: string[]) => Promise<Map<string, { filename: string }>>

/**
 * Creates a thread for the caller that continues one in `error` (409 otherwise): same privacy, the old name
 * marked as continued, and a `summary` message quoting the end of the old conversation. It starts `ready`, and
 * no answer starts until the caller sends a message. Any member who can see the old thread may continue it.
 */
export async function continueThread(
  threads: ThreadRepository,
  fileNames: FileNames,
  caller: Caller,
  threadId: string,
  links: Links,
  now: number,
): Promise<{ thread_id: string; message_id: string }> {
  const old = await requireVisibleThread(threads, caller, threadId)
  if (old.state !== 'error') {
    throw conflict(`The thread is ${old.state}; only a thread in error is continued in a new thread`)
  }
  const history = await threads.activeMessages(threadId)
  const quotedIds = history.slice(-quotedMessages).flatMap((message) => attachmentIdsOf(message.contents))
  const names = await fileNames(quotedIds)
  const text = continuationSummary(
    { name: old.name, appUrl: links.threadUrl(old.id) },
    history,
    new Map([...names].map(([id, { filename }]) => [id, filename])),
  )
  const name = old.name === null ? null : [...`${old.name} (continued)`].slice(0, threadNameMaxLength).join('')
  const created = await threads.createThread({
    organizationId: caller.organizationId,
    ownerId: caller.userId,
    name,
    isPrivate: old.isPrivate,
    first: { role: 'summary', contents: [{ type: 'text', text }] },
    now,
  })
  return { thread_id: created.threadId, message_id: created.messageId as string }
}
