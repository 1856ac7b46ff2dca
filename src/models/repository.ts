// The models feature's storage contract: an organization's choice of models, a thread's own settings, and what an
// answer's model is resolved from. Every method is one statement (repository.common.ts, both dialects).
import type { AuditEntry } from '../shared/audit'
import type { OrganizationChoice } from './choice'

/** A thread's settings: absent row = all null. */
export interface ThreadSettings {
  model: string | null
  instructions: string | null
  /** The tools its answers are offered, as `server/tool`; null: every tool the organization has on; []: none. */
  tools: string[] | null
}

/** What an answer about to run is resolved from (see choice.ts answerModel), with the thread's instructions. */
export interface AnswerSettings {
  organizationId: number
  requested: string | null
  threadModel: string | null
  instructions: string | null
  choice: OrganizationChoice
}

export interface ModelRepository {
  /** The organization's stored choice; null allows every configured model, with the configuration's default. */
  choice(organizationId: number): Promise<OrganizationChoice>

  /** Replaces the organization's choice (checked by the caller against the catalogue), recording `audit` with it. */
  setChoice(organizationId: number, choice: OrganizationChoice, audit: AuditEntry): Promise<void>

  /** The thread's settings (all null when it has none). */
  threadSettings(threadId: string): Promise<ThreadSettings>

  /**
   * Writes the fields given (an absent field keeps its value) and returns the settings as stored, in one statement
   * (an insert that updates the existing row). Null when the thread is gone.
   */
  saveThreadSettings(threadId: string, patch: Partial<ThreadSettings>): Promise<ThreadSettings | null>

  /**
   * For the answer to user message `messageId` of `threadId`: its queue entry's model, the thread's settings and
   * its organization's choice, in one read. Null when the thread is gone.
   */
  answerSettings(threadId: string, messageId: string): Promise<AnswerSettings | null>
}

/** A stored allow-list (of models, of a thread's tools): a JSON array of IDs as text, null for every one. */
export function allowedToColumn(allowed: string[] | null): string | null {
  return allowed === null ? null : JSON.stringify(allowed)
}

export function allowedFromColumn(column: string | null): string[] | null {
  if (column === null) return null
  const parsed: unknown = JSON.parse(column)
  return Array.isArray(parsed) ? parsed.filter((id): id is string => typeof id === 'string') : null
}
