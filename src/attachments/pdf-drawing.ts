// What reading a PDF's pages costs a text extractor, counted at upload from the parsed document: the operators its
// pages run and the form XObjects they draw, forms drawn inside forms multiplied out. A page of 2 KB can draw a form
// ten times, which draws another ten times, six levels down: a million forms, minutes of pdf.js. Counting costs one
// pass over each content stream, whatever the nesting, since each form's cost is counted once and then multiplied.
import { decodePDFRawStream, PDFArray, PDFDict, type PDFDocument, PDFName, PDFRawStream, PDFStream } from 'pdf-lib'

export interface DrawingLimits {
  operators: number
  forms: number
}

interface Cost {
  operators: number
  forms: number
}

const overflowing: Cost = { operators: Number.POSITIVE_INFINITY, forms: Number.POSITIVE_INFINITY }

/** PDF whitespace and delimiters (ISO 32000-1, 7.2.2): what ends a name or an operator. */
const ends = new Uint8Array(256)
for (const code of [0, 9, 10, 12, 13, 32, 0x28, 0x29, 0x3c, 0x3e, 0x5b, 0x5d, 0x7b, 0x7d, 0x2f, 0x25]) ends[code] = 1
const isSpace = (code: number) => code === 32 || code === 10 || code === 13 || code === 9 || code === 12 || code === 0

/** A name as written, its `#xx` escapes decoded. */
function nameAt(bytes: Uint8Array, start: number, end: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start)
    .toString('latin1')
    .replace(/#([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
}

/**
 * The operators of a content stream, and how often each XObject name is drawn (`/Name Do`). Strings, comments and
 * inline images are skipped as a reader skips them; numbers, names and other operands are not operators.
 */
function scan(bytes: Uint8Array): { operators: number; draws: Map<string, number> } {
  const draws = new Map<string, number>()
  let operators = 0
  let lastName = ''
  const length = bytes.length
  let at = 0
  while (at < length) {
    const code = bytes[at] as number
    if (isSpace(code)) at++
    else if (code === 0x25) {
      while (at < length && bytes[at] !== 10 && bytes[at] !== 13) at++
    } else if (code === 0x28) {
      let depth = 1
      at++
      while (at < length && depth > 0) {
        const inside = bytes[at]
        if (inside === 0x5c) at += 2
        else {
          if (inside === 0x28) depth++
          else if (inside === 0x29) depth--
          at++
        }
      }
    } else if (code === 0x3c && bytes[at + 1] !== 0x3c) {
      while (at < length && bytes[at] !== 0x3e) at++
      at++
    } else if (code === 0x2f) {
      const start = ++at
      while (at < length && !ends[bytes[at] as number]) at++
      lastName = nameAt(bytes, start, at)
    } else if (ends[code]) at++
    else {
      const start = at
      while (at < length && !ends[bytes[at] as number]) at++
      // Numbers (and the keywords true, false, null) are operands.
      if ((code >= 0x30 && code <= 0x39) || code === 0x2b || code === 0x2d || code === 0x2e) continue
      const word = at - start
      if (word === 4 && (code === 0x74 || code === 0x6e)) continue
      if (word === 5 && code === 0x66) continue
      operators++
      if (word === 2 && code === 0x44 && bytes[start + 1] === 0x6f) draws.set(lastName, (draws.get(lastName) ?? 0) + 1)
      // An inline image's data runs to `EI` between whitespace.
      if (word === 2 && code === 0x42 && bytes[start + 1] === 0x49) {
        while (
          at < length &&
          !(
            isSpace(bytes[at - 1] as number) &&
            bytes[at] === 0x45 &&
            bytes[at + 1] === 0x49 &&
            ends[bytes[at + 2] ?? 32]
          )
        )
          at++
        at += 2
      }
    }
  }
  return { operators, draws }
}

/** A stream's decoded bytes; empty when it cannot be decoded, which a reader would not draw either. */
function decoded(stream: PDFStream): Uint8Array {
  try {
    return stream instanceof PDFRawStream ? decodePDFRawStream(stream).decode() : stream.getContents()
  } catch {
    return new Uint8Array()
  }
}

/**
 * Whether the pages of `document` run more operators or draw more forms than `limits`, counting each form as often
 * as it is drawn, through every level; a form that draws itself (directly or not) is beyond any limit.
 */
export function drawingBeyond(document: PDFDocument, limits: DrawingLimits): keyof DrawingLimits | null {
  const context = document.context
  /** Each form's cost, counted once: null while being counted, so that a cycle is caught. */
  const forms = new Map<PDFStream, Cost | null>()

  function cost(bytes: Uint8Array, resources: PDFDict | undefined): Cost {
    const { operators, draws } = scan(bytes)
    const total: Cost = { operators, forms: 0 }
    const xobjects = resources?.lookupMaybe(PDFName.of('XObject'), PDFDict)
    for (const [name, times] of draws) {
      const form = xobjects?.lookupMaybe(PDFName.of(name), PDFStream)
      if (!form || form.dict.lookupMaybe(PDFName.of('Subtype'), PDFName) !== PDFName.of('Form')) continue
      const inner = formCost(form, resources)
      total.operators += times * inner.operators
      total.forms += times * (1 + inner.forms)
      if (total.operators > limits.operators || total.forms > limits.forms) return total
    }
    return total
  }

  function formCost(form: PDFStream, inherited: PDFDict | undefined): Cost {
    const known = forms.get(form)
    if (known === null) return overflowing
    if (known) return known
    forms.set(form, null)
    // A form without resources of its own uses its page's, as older files expect and pdf.js allows.
    const counted = cost(decoded(form), form.dict.lookupMaybe(PDFName.of('Resources'), PDFDict) ?? inherited)
    forms.set(form, counted)
    return counted
  }

  /** Pages that share their contents and resources (a template) are counted once. */
  const pages = new Map<unknown, Map<PDFDict | undefined, Cost>>()
  const total: Cost = { operators: 0, forms: 0 }
  for (const page of document.getPages()) {
    const contents = page.node.Contents()
    const resources = page.node.Resources()
    let counted = pages.get(contents)?.get(resources)
    if (!counted) {
      counted = pageCost(contents, resources)
      pages.set(contents, (pages.get(contents) ?? new Map()).set(resources, counted))
    }
    total.operators += counted.operators
    total.forms += counted.forms
    if (total.forms > limits.forms) return 'forms'
    if (total.operators > limits.operators) return 'operators'
  }
  return null

  function pageCost(contents: PDFStream | PDFArray | undefined, resources: PDFDict | undefined): Cost {
    const streams =
      contents instanceof PDFArray
        ? contents.asArray().map((item) => context.lookupMaybe(item, PDFStream))
        : [contents instanceof PDFStream ? contents : undefined]
    return cost(
      Buffer.concat(streams.flatMap((stream) => (stream ? [decoded(stream), Buffer.from(' ')] : []))),
      resources,
    )
  }
}
