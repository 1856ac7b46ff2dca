// History conversion, checked on hand-made history objects: summaries, choices and their answers,
// and attachments (files the test puts in a local blob store; PDF text as the extract processes leave it beside the
// file: the text, or a mark saying why there is none).
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PDFDocument, StandardFonts } from 'pdf-lib'
import { storePdfText, unreadableReasons } from '../src/attachments/pdf-text'
import { anthropicMessages } from '../src/generation/providers/anthropic'
import { loadHistory, summaryHeading, toTurns } from '../src/generation/providers/conversation'
import { openaiMessages } from '../src/generation/providers/openai'
import type { HistoryMessage } from '../src/generation/types'
import { LocalBlobStore } from '../src/storage/blobs'

const folder = mkdtempSync(join(tmpdir(), 'threadhouse-conversation-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))
const blobs = new LocalBlobStore(folder)

// The smallest valid PNG: one transparent pixel.
const pixel = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
)

async function withFiles(): Promise<HistoryMessage> {
  await blobs.put('chart.png', pixel)
  const report = await PDFDocument.create()
  const font = await report.embedFont(StandardFonts.Helvetica)
  report.addPage().drawText('Q3 up 4%', { x: 50, y: 700, font, size: 12 })
  report.addPage().drawText('Outlook: steady', { x: 50, y: 700, font, size: 12 })
  await blobs.put('x.pdf', await report.save())
  await storePdfText(blobs, 'x.pdf', { text: 'Q3 up 4%\n\nOutlook: steady' })
  await blobs.put('scan.pdf', 'not really a PDF')
  await storePdfText(blobs, 'scan.pdf', { unreadable: unreadableReasons.damaged })
  await blobs.put('notes.md', '# Notes\nBuy milk.')
  return {
    id: 'm1',
    role: 'user',
    contents: [
      { type: 'text', text: 'Look at these' },
      { type: 'image', attachment_id: 'img' },
      { type: 'document', attachment_id: 'md' },
      { type: 'document', attachment_id: 'pdf' },
      { type: 'document', attachment_id: 'scan' },
      { type: 'document', attachment_id: 'gone' },
    ],
    attachments: {
      img: { filename: 'chart.png', mediaType: 'image/png', key: 'chart.png' },
      md: { filename: 'notes.md', mediaType: 'text/markdown', key: 'notes.md' },
      pdf: { filename: 'report.pdf', mediaType: 'application/pdf', key: 'x.pdf' },
      scan: { filename: 'scan.pdf', mediaType: 'application/pdf', key: 'scan.pdf' },
    },
  }
}

test('attachments become labelled parts: images as image input, documents as text', async () => {
  const [loaded] = await loadHistory([await withFiles()], 'inline', blobs)
  expect(loaded?.parts).toEqual([
    { type: 'text', text: 'Look at these' },
    { type: 'text', text: 'Image "chart.png":' },
    { type: 'image', mediaType: 'image/png', data: pixel.toString('base64') },
    { type: 'text', text: '<file name="notes.md">\n# Notes\nBuy milk.\n</file>' },
    { type: 'text', text: '<file name="report.pdf">\nQ3 up 4%\n\nOutlook: steady\n</file>' },
    {
      type: 'text',
      text: '[PDF "scan.pdf" attached; its text could not be read: the file is damaged or uses features the reader does not support]',
    },
    { type: 'text', text: '[An attachment that is no longer available]' },
  ])
  expect(await (await blobs.get('x.pdf.txt'))?.text()).toBe('Q3 up 4%\n\nOutlook: steady')
  const turns = toTurns(loaded ? [loaded] : [], 'offer')
  const openai = openaiMessages({ system: '', turns })
  expect(openai[0]?.content).toContainEqual({
    type: 'image_url',
    image_url: { url: `data:image/png;base64,${pixel.toString('base64')}` },
  })
  expect(anthropicMessages(turns)[0]?.content).toContainEqual({
    type: 'image',
    source: { type: 'base64', media_type: 'image/png', data: pixel.toString('base64') },
  })
})

test('a model without image input gets a textual stand-in', async () => {
  const [loaded] = await loadHistory([await withFiles()], 'describe', blobs)
  expect(loaded?.parts[1]).toEqual({ type: 'text', text: '[Image "chart.png" attached; this model cannot see images]' })
  expect(loaded?.parts.some((part) => part.type === 'image')).toBe(false)
})

const choice = {
  type: 'user_get_choice' as const,
  tool_use_id: 'call_1',
  question: 'Red or blue?',
  choices: ['Red', 'Blue'],
}

const history: HistoryMessage[] = [
  { id: 's', role: 'summary', contents: [{ type: 'text', text: 'They talked about paint.' }] },
  { id: 'u1', role: 'user', contents: [{ type: 'text', text: 'Pick a colour for me' }] },
  { id: 'a1', role: 'assistant', contents: [{ type: 'text', text: 'Happy to.' }, choice] },
  { id: 'u2', role: 'user', contents: [{ type: 'text', text: 'Blue' }] },
  // An interrupted answer that produced nothing leaves two user messages in a row.
  { id: 'u3', role: 'user', contents: [{ type: 'text', text: 'Navy, actually' }] },
]

test('summaries lead as user context, choices pair with the answer, user turns merge', async () => {
  const turns = toTurns(await loadHistory(history, 'inline', blobs), 'offer')
  expect(openaiMessages({ system: 'Be brief.', turns })).toEqual([
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: `${summaryHeading}\n\nThey talked about paint.\n\nPick a colour for me` },
    {
      role: 'assistant',
      content: 'Happy to.',
      tool_calls: [
        {
          id: 'call_1',
          type: 'function',
          function: { name: 'user_get_choice', arguments: '{"question":"Red or blue?","choices":["Red","Blue"]}' },
        },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: 'Blue' },
    { role: 'user', content: 'Navy, actually' },
  ])
  expect(anthropicMessages(turns)).toEqual([
    {
      role: 'user',
      content: [
        { type: 'text', text: summaryHeading },
        { type: 'text', text: 'They talked about paint.' },
        { type: 'text', text: 'Pick a colour for me' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Happy to.' },
        {
          type: 'tool_use',
          id: 'call_1',
          name: 'user_get_choice',
          input: { question: 'Red or blue?', choices: ['Red', 'Blue'] },
        },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'call_1', content: 'Blue' },
        { type: 'text', text: 'Navy, actually' },
      ],
    },
  ])
})

test('a choice nobody answered, or one sent to a model without tools, is written out as text', async () => {
  const unanswered = await loadHistory(history.slice(1, 3), 'inline', blobs)
  expect(toTurns(unanswered, 'offer').at(-1)).toEqual({
    role: 'assistant',
    text: 'Happy to.\n\n[I asked the user: Red or blue? Options: Red | Blue]',
  })
  const withheld = toTurns(await loadHistory(history, 'inline', blobs), 'withhold')
  expect(withheld.some((turn) => turn.role === 'assistant' && turn.choice)).toBe(false)
  expect(withheld.some((turn) => turn.role === 'user' && turn.answers)).toBe(false)
})
