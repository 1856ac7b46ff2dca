// The built-in development responder: a short deterministic reply that quotes the user's last message and
// names its attachments, streamed word by word with a fixed delay, so the whole product can be used without a model.
// The reply is Markdown that renders cleanly whatever was said: the message is quoted as a block quote, so its
// own Markdown (a code fence, a list) stays inside the quote instead of spilling into the reply. The turn number
// shows how many user messages reached the responder.
import type { GenerationRequest, Generator, GeneratorEvent } from '../types'
import { delay } from './retry'

export function echoReply(request: Pick<GenerationRequest, 'history'>): string {
  const users = request.history.filter((message) => message.role === 'user')
  const last = users.at(-1)
  const text = last?.contents.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n') ?? ''
  const files = (last?.contents ?? []).flatMap((block) => {
    const file = 'attachment_id' in block ? last?.attachments?.[block.attachment_id] : undefined
    return file ? [`${file.filename} (${file.mediaType})`] : []
  })
  const quoted = text
    .split(/\r?\n/)
    .map((line) => (line.trim() === '' ? '>' : `> ${line}`))
    .join('\n')
  const turn = users.length
  const parts = text.trim() === '' ? [`You sent no text in turn ${turn}.`] : [`You said, in turn ${turn}:`, quoted]
  if (files.length > 0) parts.push(`Attached: ${files.join(', ')}.`)
  return parts.join('\n\n')
}

/** Splits a reply into word-sized tokens that concatenate back to it exactly. */
export function tokenize(reply: string): string[] {
  return reply.match(/\s*\S+|\s+$/g) ?? []
}

export function echoGenerator(tokenDelayMs: number): Generator {
  return {
    async *generate(request): AsyncIterable<GeneratorEvent> {
      for (const token of tokenize(echoReply(request))) {
        if (tokenDelayMs > 0) await delay(tokenDelayMs, request.signal)
        request.signal.throwIfAborted()
        yield { type: 'text', text: token }
      }
    },
  }
}
