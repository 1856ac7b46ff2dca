// One way to send and one way to react to a write: answers start only through the conversation use case
// (src/threads/conversation.ts), and reactions to committed writes run through the domain events, whose subscribers
// run in order and cannot fail the write they follow.
import { expect, test } from 'bun:test'
import { DomainEvents } from '../src/shared/events'
import { createLogger } from '../src/shared/log'

const root = `${import.meta.dir}/..`

test('only the conversation use case starts answers: no other source file calls the engine’s enqueue', async () => {
  const mentions: string[] = []
  for await (const path of new Bun.Glob('src/**/*.{ts,tsx}').scan(root)) {
    // The webhook delivery queue has an `enqueue` of its own, unrelated to answers; so do streams' controllers.
    if (path.startsWith('src/webhooks/')) continue
    if (/(?<!controller\.)\benqueue\b/.test(await Bun.file(`${root}/${path}`).text())) mentions.push(path)
  }
  // The engine defines it; the use case calls it.
  expect(mentions.sort()).toEqual(['src/generation/service.ts', 'src/threads/conversation.ts'])
})

test('domain events reach their subscribers in order; a failing one is logged and the others still run', async () => {
  const lines: string[] = []
  const events = new DomainEvents(createLogger('error', (line) => lines.push(line)))
  const heard: string[] = []
  events.on('thread.created', async (event) => {
    await Promise.resolve()
    heard.push(`first ${event.threadId}`)
  })
  events.on('thread.created', () => {
    throw new Error('receiver down')
  })
  events.on('thread.created', (event) => {
    heard.push(`third ${event.threadId}`)
  })
  events.on('thread.deleted', (event) => {
    heard.push(`deleted ${event.threadId}`)
  })

  await events.emit({ type: 'thread.created', threadId: 't1' })

  expect(heard).toEqual(['first t1', 'third t1'])
  expect(lines).toHaveLength(1)
  expect(JSON.parse(lines[0] as string)).toMatchObject({ event: 'thread.created', error: 'Error: receiver down' })
})
