// Reading server-sent events with the eventsource-parser package, as a client would: kept apart from helpers.ts
// (which needs bun:test) so that benchmarks can read streams too.
import { createParser, type EventSourceMessage } from 'eventsource-parser'

export async function* parseEvents(response: Response): AsyncGenerator<EventSourceMessage> {
  const queue: EventSourceMessage[] = []
  const parser = createParser({ onEvent: (event) => queue.push(event) })
  const reader = response.body?.pipeThrough(new TextDecoderStream()).getReader()
  if (!reader) return
  try {
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      parser.feed(value)
      while (queue.length > 0) yield queue.shift() as EventSourceMessage
    }
  } finally {
    // Leaving early (break, return) is the client going away: the stream is cancelled, as a socket close would.
    await reader.cancel()
  }
}
