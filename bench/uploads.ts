// Scenario 6: the upload files (made here with sharp and pdf-lib, at the sizes the issue names), clients that
// upload them through a real server, and the in-process cost of checking each, which is how long a request
// thread doing the checks itself would be blocked per file.
import { PDFDocument, StandardFonts } from 'pdf-lib'
import sharp from 'sharp'
import { checkBytes } from '../src/attachments/checks'
import { imageLimits, pdfLimits, textLimits } from '../src/attachments/limits'
import { type Measure, percentile, type Server, sampleRss, settle } from './load'
import { vocabulary } from './words'

const words = vocabulary(2000)

export interface UploadFile {
  label: string
  name: string
  bytes: Uint8Array
}

export interface Pair {
  token: string
  threadId: string
}

/** Noise does not compress, so its JPEG size follows its pixel count: scale until just under the limit. */
async function jpegNear(target: number): Promise<Uint8Array> {
  let width = 1600
  for (let attempt = 0; ; attempt++) {
    const height = Math.round(width * 0.75)
    const noise = { type: 'gaussian' as const, mean: 128, sigma: 40 }
    const bytes = await sharp({ create: { width, height, channels: 3, noise, background: '#808080' } })
      .jpeg({ quality: 85 })
      .toBuffer()
    if ((bytes.length <= target && bytes.length > target * 0.95) || attempt === 6) {
      if (bytes.length > target) throw new Error(`could not make a JPEG under ${target} bytes`)
      return new Uint8Array(bytes)
    }
    width = Math.floor(width * Math.sqrt((target * 0.98) / bytes.length))
  }
}

function sentence(seed: number, count: number): string {
  return Array.from({ length: count }, (_, i) => words[(seed * 31 + i * 7) % words.length]).join(' ')
}

async function pdfWith(pages: number, linesPerPage: number): Promise<Uint8Array> {
  const document = await PDFDocument.create()
  const font = await document.embedFont(StandardFonts.Helvetica)
  for (let page = 0; page < pages; page++) {
    const sheet = document.addPage([595, 842])
    for (let line = 0; line < linesPerPage; line++) {
      sheet.drawText(sentence(page * 1000 + line, 12), { x: 40, y: 800 - (line % 100) * 8, size: 6, font })
    }
  }
  return document.save()
}

/** A 100-page PDF of text, its lines per page scaled until the file is just under the limit. */
async function pdfNear(target: number, pages: number): Promise<Uint8Array> {
  let lines = 60
  for (let attempt = 0; ; attempt++) {
    const bytes = await pdfWith(pages, lines)
    if ((bytes.length <= target && bytes.length > target * 0.95) || attempt === 6) {
      if (bytes.length > target) throw new Error(`could not make a PDF under ${target} bytes`)
      return bytes
    }
    lines = Math.floor(lines * ((target * 0.98) / bytes.length))
  }
}

function textOf(size: number): Uint8Array {
  let text = ''
  for (let line = 0; text.length < size; line++) text += `${sentence(line, 14)}.\n`
  return new TextEncoder().encode(text.slice(0, size))
}

export async function uploadFiles(): Promise<UploadFile[]> {
  return [
    { label: 'JPEG 3 MiB', name: 'photo.jpg', bytes: await jpegNear(imageLimits.maxBytes) },
    {
      label: 'PDF 2.5 MiB, 100 pages',
      name: 'report.pdf',
      bytes: await pdfNear(pdfLimits.maxBytes, pdfLimits.maxPages),
    },
    { label: 'text 0.5 MiB', name: 'notes.txt', bytes: textOf(textLimits.maxBytes) },
  ]
}

/** The checks of one file as the upload route runs them, timed in this process: what one file costs a thread. */
export async function checkMs(file: UploadFile, rounds = 5): Promise<number> {
  const samples: number[] = []
  for (let round = 0; round < rounds; round++) {
    const started = performance.now()
    const verdict = await checkBytes(file.bytes, { filename: file.name, declaredType: '' })
    if (!verdict.accepted) throw new Error(`${file.name} was refused: ${verdict.problem}`)
    samples.push(performance.now() - started)
  }
  return percentile(samples, 50)
}

/** Threads handed out in turn, each at most 25 times: the thread quota of uploaded files. */
export function threadRotation(pairs: Pair[]): () => Pair {
  let next = 0
  return () => {
    if (next >= pairs.length * 25) throw new Error('scenario 6 ran out of thread quota; give it more threads')
    return pairs[next++ % pairs.length] as Pair
  }
}

async function uploadOnce(server: Server, pair: Pair, file: UploadFile): Promise<boolean> {
  const body = new FormData()
  body.append('attachments[0]', new File([file.bytes], file.name))
  const reply = await fetch(`${server.url}/api/v1/threads/${pair.threadId}/attachments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${pair.token}` },
    body,
  })
  await reply.arrayBuffer()
  return reply.status === 201
}

/** `clients` loops uploading the files in turn until `until` resolves; latency per upload and uploads/s. */
export async function uploadLoop(
  server: Server,
  files: UploadFile[],
  clients: number,
  nextThread: () => Pair,
  until: Promise<unknown>,
): Promise<Measure> {
  const stopRss = sampleRss(server.pid)
  const latencies: number[] = []
  let failures = 0
  let stopped = false
  void until.then(() => {
    stopped = true
  })
  async function loop(client: number): Promise<void> {
    for (let turn = client; !stopped; turn++) {
      const started = performance.now()
      const ok = await uploadOnce(server, nextThread(), files[turn % files.length] as UploadFile)
      if (ok) latencies.push(performance.now() - started)
      else failures++
    }
  }
  const began = performance.now()
  await Promise.all(Array.from({ length: clients }, (_, client) => loop(client)))
  const elapsed = (performance.now() - began) / 1000
  return {
    rps: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    rss: stopRss(),
    failures,
    requests: latencies.length,
  }
}

/** Uploads of one file for `seconds`: one client gives the time an upload takes, four the throughput. */
export async function timedUploads(
  server: Server,
  file: UploadFile,
  clients: number,
  nextThread: () => Pair,
  seconds: number,
): Promise<Measure> {
  await settle(server)
  return uploadLoop(server, [file], clients, nextThread, Bun.sleep(seconds * 1000))
}
