// The attachment repository's contract, as the services rely on it: the counted insert that holds a thread's
// quota, lookups that never cross threads, and reads of any number of IDs (a sweep's).
import { expect, test } from 'bun:test'
import type { NewAttachment } from '../src/attachments/repository'
import { harness } from './support/helpers'

function file(index = 0): NewAttachment {
  return {
    id: Bun.randomUUIDv7(),
    kind: 'text',
    mediaType: 'text/plain',
    filename: `note-${index}.txt`,
    sizeBytes: 1,
    resized: false,
    createdAt: 0,
  }
}

const files = (count: number): NewAttachment[] => Array.from({ length: count }, (_, index) => file(index))

async function setup() {
  const h = await harness()
  const owner = await h.user()
  const thread = async () =>
    (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body.thread_id as string
  return { h, attachments: h.store.attachments, first: await thread(), second: await thread() }
}

test('a counted insert stores every file within the limit, and none past it', async () => {
  const { h, attachments, first } = await setup()
  await using _ = h
  expect(await attachments.insertWithinQuota(first, files(3), 4)).toEqual({ inserted: true })
  expect(await attachments.insertWithinQuota(first, files(2), 4)).toEqual({ inserted: false, stored: 3 })
  expect(await attachments.countInThread(first)).toBe(3)
  expect(await attachments.insertWithinQuota(first, files(1), 4)).toEqual({ inserted: true })
  expect(await attachments.countInThread(first)).toBe(4)
})

test('lookups and removals stay within their thread', async () => {
  const { h, attachments, first, second } = await setup()
  await using _ = h
  const [mine, theirs] = [file(), file()]
  await attachments.insertWithinQuota(first, [mine], 25)
  await attachments.insertWithinQuota(second, [theirs], 25)
  const { id } = mine
  expect(await attachments.findInThread(first, id)).toEqual({ ...mine, threadId: first })
  expect(await attachments.findInThread(second, id)).toBeNull()
  await attachments.deleteFromThread(second, [id])
  expect(await attachments.countInThread(first)).toBe(1)
  await attachments.deleteFromThread(first, [id])
  expect({ first: await attachments.countInThread(first), second: await attachments.countInThread(second) }).toEqual({
    first: 0,
    second: 1,
  })
})

test('listByIds reads any number of IDs, leaving out those without a row', async () => {
  const { h, attachments, first } = await setup()
  await using _ = h
  const stored = files(1200)
  expect(await attachments.insertWithinQuota(first, stored, stored.length)).toEqual({ inserted: true })
  const asked = [...stored.map((file) => file.id), Bun.randomUUIDv7()]
  const found = await attachments.listByIds(asked)
  expect(found.map((row) => row.id).sort()).toEqual(stored.map((file) => file.id).sort())
  expect(await attachments.listByIds([])).toEqual([])
})
