// Feedback: each person's rating of an assistant message, one per person per message.
import type { Caller } from '../auth/model'
import { invalidRequest, notFound } from '../shared/errors'
import { feedbackTextMaxChars, type ThreadsModel } from './model'
import type { ThreadRepository } from './repository'
import { requireVisibleThread } from './visibility'

/** Rates an assistant message of a thread the caller can see; a repeat replaces the caller's rating. */
export async function submitFeedback(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
  messageId: string,
  body: ThreadsModel.feedbackBody,
  now: number,
): Promise<void> {
  if (body.feedback_text !== undefined && [...body.feedback_text].length > feedbackTextMaxChars) {
    throw invalidRequest(`feedback_text may have at most ${feedbackTextMaxChars} characters`)
  }
  await requireVisibleThread(threads, caller, threadId)
  const message = await threads.findMessage(threadId, messageId)
  if (!message) throw notFound('Message')
  if (message.role !== 'assistant') throw invalidRequest('Feedback can be given only on assistant messages')
  await threads.rate({
    messageId,
    userId: caller.userId,
    positive: body.positive,
    text: body.feedback_text ?? null,
    now,
  })
}
