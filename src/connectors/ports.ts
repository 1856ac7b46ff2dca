// What the MCP client (client.ts) gives the rest of the feature: calling a server's tool and fetching its tool list.
// Types only, so that the administration pages and the tool executor are written against them on their own.
import type { McpServerRow, McpServerStatus } from './repository'

/**
 * How one tool call went: failures of the server's making are outcomes, never exceptions. `unknown` is a call the
 * caller's signal cancelled while it ran: its request may have reached the server, which may have acted on it.
 */
export interface CallOutcome {
  status: 'ok' | 'error' | 'timeout' | 'unknown'
  /** What the model is told (cut to TOOLS_RESULT_MAX_CHARS, with a note when it was). */
  text: string
  /** The full result's length, in characters. */
  chars: number
  /** A short reason when it did not succeed. */
  error: string | null
}

/** How fetching a server's tool list went: the server's new status, the tools it lists, and why it failed. */
export interface RefreshOutcome {
  status: McpServerStatus
  tools: number
  error: string | null
}

export interface ToolCaller {
  /**
   * One `tools/call`, bounded by MCP_TIMEOUT_MS, MCP_RESPONSE_MAX_BYTES and `signal`; never throws for the server's
   * sake: failures come back as outcomes.
   */
  call(server: McpServerRow, tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallOutcome>
  /** Connects, lists the tools, stores them (replaceTools) and the server's status. */
  refresh(server: McpServerRow): Promise<RefreshOutcome>
  /** The server changed or was removed: its pooled client is dropped. */
  forget(serverId: string): void
}
