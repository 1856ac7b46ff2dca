// What the audit log records (src/audit/ keeps it, docs/audit.md explains it): the closed list of actions, who acts
// and from where, what is acted on, and the entry a feature hands its repository so that the event is written in the
// act's own transaction. It lives here, below every feature, because every feature that acts names it while
// src/audit/ imports auth/ for its routes: the features never import src/audit/, and the store hands each
// repository the audit log's appender (db/dialect.ts, AuditAppend).
//
// Entries hold facts, never secrets or content: IDs, roles, scopes, names people gave things, a URL's origin only
// (a webhook's path and query may carry a token), never a token, password, message or thread title.
import { clientIpOf } from './http'

/** Every action the log records, with what it means; docs/audit.md lists the same, with each one's detail. */
export const auditActions = {
  'signin.succeeded': 'Someone signed in and a session opened (password or OpenID Connect).',
  'signin.failed': 'A sign-in was refused: wrong password, or an unknown email (recorded in no organization).',
  signout: 'Someone signed out, ending their session.',
  'password.changed': 'Someone chose a new password; their other sessions ended.',
  'password.reset': 'The operator set a one-time password; the person’s sessions ended.',
  'token.created': 'A personal access token was created.',
  'token.revoked': 'A personal access token was revoked.',
  'oauth.consent_given': 'Someone allowed an OAuth client to act for them (a code was issued).',
  'oauth.grant_revoked': 'An OAuth grant was revoked with its tokens: by its client, or for a reused code or token.',
  'oauth.app_revoked': 'Someone disconnected an app: every grant they gave it was revoked.',
  'oauth.client_registered': 'An OAuth client was created or registered.',
  'oauth.client_secret_rotated': 'An OAuth client’s secret was replaced.',
  'oauth.client_deleted': 'An OAuth client was deleted with its grants and tokens.',
  'oauth.registration_token_created': 'A single-use registration token was made.',
  'member.added': 'A person was added to the organization (or came back to it).',
  'member.role_changed': 'A member’s role changed.',
  'member.removed': 'A member was removed: sessions, tokens and grants ended.',
  'webhook.endpoint_added': 'A webhook endpoint was added.',
  'webhook.endpoint_removed': 'A webhook endpoint was deleted.',
  'mcp_server.added': 'A remote MCP server was connected.',
  'mcp_server.removed': 'A remote MCP server was removed.',
  'settings.retention_changed': 'The threads’ retention period changed.',
  'settings.audit_retention_changed': 'The audit events’ retention period changed.',
  'settings.quota_changed': 'A monthly budget changed.',
  'settings.models_changed': 'The organization’s choice of models changed.',
  'settings.sharing_changed': 'Share links were turned on or off for the organization.',
  'thread.deleted': 'A thread was deleted.',
  'thread.exported': 'A thread was exported.',
  'thread.shared': 'A share link to a thread was made.',
  'thread.share_revoked': 'A share link was revoked.',
  'audit.pruned': 'Events older than the audit retention period were deleted; the chain goes on from the next one.',
} as const

export type AuditAction = keyof typeof auditActions

/** The actions' names, in the list's order. */
export const auditActionNames = Object.keys(auditActions) as [AuditAction, ...AuditAction[]]

export function isAuditAction(value: string): value is AuditAction {
  return Object.hasOwn(auditActions, value)
}

/**
 * How the actor proved who they are: a browser session, a personal access token, an OAuth access token (its grant's
 * ID), an OAuth client's own credentials, a registration token; or nobody (`anonymous`: a failed sign-in, an open
 * registration) and the operator or the server itself (`system`: the CLI, first run, the upkeep).
 */
export const actorKinds = [
  'session',
  'personal_access_token',
  'oauth_access_token',
  'oauth_client',
  'registration_token',
  'system',
  'anonymous',
] as const
export type ActorKind = (typeof actorKinds)[number]

export interface AuditActor {
  kind: ActorKind
  /** The credential's ID (a session's, a token's, a grant's, a client's client_id); null for system and anonymous. */
  id: string | null
  /** The person acting; null when no one signed in acts (system, anonymous, a client alone). */
  userId: number | null
}

/** What an event is about. */
export const targetKinds = [
  'user',
  'session',
  'personal_access_token',
  'oauth_client',
  'oauth_grant',
  'registration_token',
  'organization',
  'webhook_endpoint',
  'mcp_server',
  'thread',
  'share',
] as const
export type TargetKind = (typeof targetKinds)[number]

export interface AuditTarget {
  kind: TargetKind
  id: string
}

export const auditOutcomes = ['success', 'failure'] as const
export type AuditOutcome = (typeof auditOutcomes)[number]

/** A small object of facts: flat, strings, whole numbers, booleans, null, or lists of strings. */
export type AuditDetailValue = string | number | boolean | null | readonly string[]
export type AuditDetail = Readonly<Record<string, AuditDetailValue>>

/** The organization of events that belong to none: sign-ins by unknown emails, open client registration. */
export const noOrganization = 0

/** One event, as a feature hands it to its repository; the audit log adds the chain's place and hashes. */
export interface AuditEntry {
  at: number
  /** The organization whose chain the event joins; `noOrganization` for the installation's own. */
  organizationId: number
  action: AuditAction
  outcome: AuditOutcome
  actor: AuditActor
  /** The client address as the server resolved it (TRUST_PROXY), or null for the CLI and the upkeep. */
  address: string | null
  userAgent: string | null
  target: AuditTarget | null
  detail: AuditDetail
}

/** Who acts and from where: what a route or page knows of its request, handed to the service it calls. */
export interface AuditOrigin {
  actor: AuditActor
  address: string | null
  userAgent: string | null
}

/** The operator's CLI, first run and the upkeep. */
export const systemOrigin: AuditOrigin = {
  actor: { kind: 'system', id: null, userId: null },
  address: null,
  userAgent: null,
}

/** User agents are kept to this many characters: enough to tell browsers and tools apart. */
export const userAgentLength = 256

/** The request's address and user agent, with the actor a route or page resolved. */
export function requestOrigin(request: Request, actor: AuditActor): AuditOrigin {
  const agent = request.headers.get('user-agent')
  return { actor, address: clientIpOf(request), userAgent: agent ? agent.slice(0, userAgentLength) : null }
}

/** Nobody signed in: a sign-in attempt, an open registration. */
export const anonymousActor: AuditActor = { kind: 'anonymous', id: null, userId: null }

const credentialKinds: Record<string, ActorKind> = {
  pat: 'personal_access_token',
  grant: 'oauth_access_token',
  session: 'session',
}

/** The actor behind an API caller's credential (auth's Caller: `pat:12`, `grant:5`, `session:40`). */
export function credentialActor(credential: string, userId: number): AuditActor {
  const colon = credential.indexOf(':')
  const kind = credentialKinds[credential.slice(0, colon)]
  if (colon < 0 || kind === undefined) throw new Error(`no audit actor for the credential ${credential}`)
  return { kind, id: credential.slice(colon + 1), userId }
}

/** A browser session's person. */
export function sessionActor(sessionId: number, userId: number): AuditActor {
  return { kind: 'session', id: String(sessionId), userId }
}

export interface AuditFacts {
  organizationId: number
  action: AuditAction
  target: AuditTarget | null
  detail?: AuditDetail
  outcome?: AuditOutcome
}

/** The entry for an act: who and where from `origin`, what from `facts`. */
export function auditEntry(origin: AuditOrigin, at: number, facts: AuditFacts): AuditEntry {
  return {
    at,
    organizationId: facts.organizationId,
    action: facts.action,
    outcome: facts.outcome ?? 'success',
    actor: origin.actor,
    address: origin.address,
    userAgent: origin.userAgent,
    target: facts.target,
    detail: facts.detail ?? {},
  }
}

/** A target of `kind` by an ID of any type. */
export function target(kind: TargetKind, id: string | number): AuditTarget {
  return { kind, id: String(id) }
}

/**
 * A URL as the log may keep it: its origin only. Webhook and MCP URLs are secrets of a kind: services put tokens in
 * their paths and queries (`https://hooks.example/services/T0/B0/xyz`).
 */
export function urlOrigin(url: string): string {
  try {
    return new URL(url).origin
  } catch {
    return ''
  }
}

/** Where acts that write nothing else record themselves (src/audit/'s repository): a failed sign-in, an export. */
export interface AuditLog {
  append(entry: AuditEntry): Promise<void>
}

/** An OAuth client acting with its own credentials (the token and revocation endpoints), by its client_id. */
export function clientActor(clientId: string): AuditActor {
  return { kind: 'oauth_client', id: clientId, userId: null }
}
