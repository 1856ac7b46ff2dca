// Small PDFs that cost a reader far more than their size: forms that draw forms (each level multiplies the work),
// and pages of deflated drawing operators. Written by hand with zlib, object by object, so that nothing a PDF
// library does on saving (or refuses to save) changes what the file says.
import { deflateSync } from 'node:zlib'

/** A PDF from its objects' bodies (object 1 is the catalog), with a correct cross-reference table. */
function pdfOf(objects: (string | Uint8Array)[]): Uint8Array {
  const parts: Uint8Array[] = []
  const offsets: number[] = []
  let length = 0
  const push = (part: string | Uint8Array) => {
    const bytes = typeof part === 'string' ? Buffer.from(part, 'latin1') : part
    parts.push(bytes)
    length += bytes.length
  }
  push('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n')
  objects.forEach((body, index) => {
    offsets.push(length)
    push(`${index + 1} 0 obj\n`)
    push(body)
    push('\nendobj\n')
  })
  const xref = length
  push(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`)
  for (const offset of offsets) push(`${String(offset).padStart(10, '0')} 00000 n \n`)
  push(`trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`)
  return new Uint8Array(Buffer.concat(parts))
}

/** A deflated stream object with `dictionary` entries besides its Length and Filter. */
function stream(operators: string, dictionary = ''): Uint8Array {
  const data = deflateSync(Buffer.from(operators, 'latin1'))
  return Buffer.concat([
    Buffer.from(`<< ${dictionary} /Length ${data.length} /Filter /FlateDecode >>\nstream\n`, 'latin1'),
    data,
    Buffer.from('\nendstream', 'latin1'),
  ])
}

const font = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'

/**
 * One page that draws a form `fanout` times; that form draws the next `fanout` times, and so on `depth` levels
 * down, where the last form shows one glyph: `fanout ^ depth` form invocations (10^6 by default) in about 2 KB.
 */
export function nestedForms({ depth = 6, fanout = 10 } = {}): Uint8Array {
  // 1 catalog, 2 pages, 3 page, 4 page contents, 5 font, 6… the forms, outermost first.
  const form = (level: number) => 6 + level
  const draws = (level: number) => `q /X${level} Do Q `.repeat(fanout)
  const objects: (string | Uint8Array)[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R /Resources << /XObject << /X0 ${form(0)} 0 R >> >> >>`,
    stream(draws(0)),
    font,
  ]
  for (let level = 0; level < depth; level++) {
    const last = level === depth - 1
    const resources = last ? '/Font << /F1 5 0 R >>' : `/XObject << /X${level + 1} ${form(level + 1)} 0 R >>`
    const body = last ? 'BT /F1 1 Tf 10 10 Td (x) Tj ET' : draws(level + 1)
    objects.push(stream(body, `/Type /XObject /Subtype /Form /BBox [0 0 200 200] /Resources << ${resources} >>`))
  }
  return pdfOf(objects)
}

/**
 * `pages` pages that all run one deflated content stream of `operators` path operators (a move, a line and a stroke
 * per three): its data counts once toward the inflation limit, its operators once per page. 30 million by default.
 */
export function operatorFlood({ pages = 100, operators = 300_000 } = {}): Uint8Array {
  const kids = Array.from({ length: pages }, (_, index) => `${4 + index} 0 R`).join(' ')
  const objects: (string | Uint8Array)[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`,
    stream('1 1 m 2 2 l S\n'.repeat(Math.ceil(operators / 3))),
  ]
  for (let index = 0; index < pages; index++) {
    objects.push('<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 3 0 R >>')
  }
  return pdfOf(objects)
}

/** A page of ordinary text, for comparison: what a real document costs to read. */
export function plainText(text = 'Quarterly report'): Uint8Array {
  return pdfOf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 600 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    stream(`BT /F1 12 Tf 10 100 Td (${text}) Tj ET`),
    font,
  ])
}
