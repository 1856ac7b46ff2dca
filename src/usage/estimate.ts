// Token counts the server estimates when a provider reports none (the echo responder, servers that ignore
// `stream_options.include_usage`, answers stopped or failed before the provider's report): about four characters
// per token of text, the same rule as the context budget (generation/providers/compaction.ts), plus four tokens per
// message for roles and separators and a thousand per image. Such counts are marked `estimated`.

export interface TokenCounts {
  inputTokens: number
  outputTokens: number
  cachedInputTokens: number
}

const charsPerToken = 4
const tokensPerMessage = 4
const tokensPerImage = 1000

export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / charsPerToken)
}

/** A message's blocks as the estimate sees them: text, an image, or another file (named only). */
export type EstimatedBlock = { type: string; text?: string }

/** The prompt's tokens: each message's text, images at a flat rate, and the per-message charge. */
export function estimatePromptTokens(messages: { contents: EstimatedBlock[] }[]): number {
  let tokens = 0
  for (const message of messages) {
    tokens += tokensPerMessage
    for (const block of message.contents) {
      if (block.type === 'text') tokens += estimateTextTokens(block.text ?? '')
      else if (block.type === 'image') tokens += tokensPerImage
      else tokens += estimateTextTokens(JSON.stringify(block))
    }
  }
  return tokens
}
