// What a tool's result becomes for the model and for storage: text only, since the model is told the result as a
// tool result's text and the stored call keeps the same. Other content is named rather than carried (an image's bytes
// or a blob would be megabytes of base64 no model should read as text), and the whole is cut to TOOLS_RESULT_MAX_CHARS.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import type { CallOutcome } from './ports'

/** The outcome of a result the server gave: `error` when it says the tool failed (`isError`), else `ok`. */
export function resultText(result: CallToolResult, maxChars: number): CallOutcome {
  const parts = result.content.map(describe)
  const text = parts.length > 0 ? parts.join('\n') : structured(result)
  const shown = cut(text, maxChars)
  if (result.isError !== true) return { status: 'ok', text: shown, chars: text.length, error: null }
  return { status: 'error', text: shown, chars: text.length, error: reasonOf(text) }
}

function describe(block: CallToolResult['content'][number]): string {
  switch (block.type) {
    case 'text':
      return block.text
    case 'image':
    case 'audio':
      return `[${block.type}: ${block.mimeType}]`
    case 'resource_link':
      return `[resource: ${block.uri}]`
    case 'resource':
      return 'text' in block.resource && typeof block.resource.text === 'string'
        ? block.resource.text
        : `[resource: ${block.resource.uri}]`
  }
}

/** The structured result as JSON, the only text a result without content has; empty when it has neither. */
function structured(result: CallToolResult): string {
  return result.structuredContent === undefined ? '' : JSON.stringify(result.structuredContent)
}

/** `text` within `maxChars`, the note counted in, saying how long it was. */
function cut(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text
  const note = (shown: number) =>
    `\n…[truncated: the result had ${text.length} characters; the first ${shown} are shown]`
  // The note's own length depends on the number it gives; shown characters only ever shrink, so one pass settles it.
  const shown = Math.max(0, maxChars - note(maxChars).length)
  return text.slice(0, shown) + note(shown)
}

/** A short reason for the stored call: the failure's first line, cut. */
function reasonOf(text: string): string {
  const line = text.trim().split('\n', 1)[0] ?? ''
  const short = line.length > 200 ? `${line.slice(0, 199)}…` : line
  return short === '' ? 'the tool reported an error without saying why' : short
}
