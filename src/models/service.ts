// What the models feature does, over the catalogue (fixed at start-up) and its repository: the models a caller's
// organization may use, a thread's settings, an organization's choice, and an answer's model as it is prepared.

import type { Caller } from '../auth/model'
import type { AnswerModels } from '../generation/types'
import { type AuditOrigin, auditEntry, target } from '../shared/audit'
import { invalidRequest, notFound } from '../shared/errors'
import type { ModelChoice } from '../threads/conversation'
import type { ThreadRepository } from '../threads/repository'
import { requireOwnedThread, requireVisibleThread } from '../threads/visibility'
import type { Catalogue, CatalogueModel } from './catalogue'
import {
  answerModel,
  choiceProblem,
  mayUseModel,
  type OrganizationChoice,
  organizationDefault,
  usableModels,
} from './choice'
import { type ModelsModel, threadToolsMax } from './model'
import type { ModelRepository, ThreadSettings } from './repository'

export interface ModelsDeps {
  catalogue: Catalogue
  models: ModelRepository
}

/** What reading and changing a thread's settings needs: the thread's visibility, and the tools a list may name. */
export interface ThreadSettingsDeps extends ModelsDeps {
  threads: ThreadRepository
  /** Which tools an organization has on, to check a thread's list (connectors/, through app.ts). */
  toolNames: ToolNames
}

/** The models feature's port to the organization's MCP servers (src/connectors/), which imports this feature. */
export interface ToolNames {
  /** Those of `names` (`server/tool`) that are not tools the organization has on, in the order given. */
  unknown(organizationId: number, names: string[]): Promise<string[]>
}

/** Whether the organization may use the model: configured, and allowed by its choice. */
export function modelChoice(deps: ModelsDeps): ModelChoice {
  return {
    async mayUse(organizationId, modelId) {
      return mayUseModel(deps.catalogue, await deps.models.choice(organizationId), modelId)
    },
  }
}

/** The engine's port: the answer's model (models/choice.ts answerModel) and the thread's instructions. */
export function answerModels(deps: ModelsDeps): AnswerModels {
  return {
    async prepare(threadId, messageId) {
      const settings = await deps.models.answerSettings(threadId, messageId)
      // The thread is gone (deleted meanwhile): nothing of it will be stored; the catalogue's default answers.
      if (!settings) return { model: deps.catalogue.defaultId, instructions: null }
      return { model: answerModel(deps.catalogue, settings), instructions: settings.instructions }
    },
  }
}

/**
 * The model a thread's next answer uses, as people are shown it: the thread's own while the organization may still
 * use it, else the organization's default (`fellBack`: the thread chose a model that is no longer on offer).
 */
export async function threadModel(
  deps: ModelsDeps,
  organizationId: number,
  threadId: string,
): Promise<{ id: string; name: string; fellBack: boolean }> {
  const [choice, settings] = await Promise.all([
    deps.models.choice(organizationId),
    deps.models.threadSettings(threadId),
  ])
  const id = answerModel(deps.catalogue, { requested: null, threadModel: settings.model, choice })
  const name = deps.catalogue.byId.get(id)?.name ?? id
  return { id, name, fellBack: settings.model !== null && settings.model !== id }
}

function toModel(model: CatalogueModel, defaultId: string): ModelsModel.model {
  return {
    id: model.id,
    name: model.name,
    provider: model.provider,
    context_tokens: model.contextTokens,
    default: model.id === defaultId,
  }
}

/** GET /api/v1/models: what the caller's organization may use, its default marked. */
export async function listModels(deps: ModelsDeps, organizationId: number): Promise<ModelsModel.modelList> {
  const choice = await deps.models.choice(organizationId)
  const defaultId = organizationDefault(deps.catalogue, choice)
  return { data: usableModels(deps.catalogue, choice).map((model) => toModel(model, defaultId)) }
}

/** The settings the API answers with (ModelsModel.threadSettings). */
function settingsView({ model, instructions, tools }: ThreadSettings): ModelsModel.threadSettings {
  return { model, instructions, tools }
}

/** A refusal naming the tools of a thread's list that the organization does not have on. */
async function requireToolsOn(deps: ThreadSettingsDeps, organizationId: number, names: string[]): Promise<void> {
  // The API's schema says so too; the thread page's form reaches this without one.
  if (names.length > threadToolsMax) throw invalidRequest(`Choose at most ${threadToolsMax} tools.`)
  const unknown = names.length === 0 ? [] : await deps.toolNames.unknown(organizationId, names)
  if (unknown.length === 0) return
  const quoted = unknown.map((name) => `"${name}"`).join(', ')
  throw invalidRequest(
    `${unknown.length === 1 ? 'The tool' : 'The tools'} ${quoted} ${unknown.length === 1 ? 'is' : 'are'} not on in ` +
      'your organization',
  )
}

export async function getThreadSettings(
  deps: ModelsDeps & { threads: ThreadRepository },
  caller: Caller,
  threadId: string,
): Promise<ModelsModel.threadSettings> {
  await requireVisibleThread(deps.threads, caller, threadId)
  return settingsView(await deps.models.threadSettings(threadId))
}

/**
 * PATCH …/settings: the owner's. A model the organization may not use is refused (400), as is a tool it does not have
 * on; empty instructions are none. The thread's answers use the new settings from the next one on (an answer already
 * running keeps its own).
 */
export async function updateThreadSettings(
  deps: ThreadSettingsDeps,
  caller: Caller,
  threadId: string,
  body: ModelsModel.updateThreadSettingsBody,
): Promise<ModelsModel.threadSettings> {
  await requireOwnedThread(deps.threads, caller, threadId, 'change its settings')
  const patch: Partial<ThreadSettings> = {}
  if (body.model !== undefined) {
    if (
      body.model !== null &&
      !mayUseModel(deps.catalogue, await deps.models.choice(caller.organizationId), body.model)
    ) {
      throw invalidRequest(`The model "${body.model}" is not available to your organization (see GET /api/v1/models)`)
    }
    patch.model = body.model
  }
  if (body.instructions !== undefined) patch.instructions = body.instructions?.trim() ? body.instructions : null
  if (body.tools !== undefined) {
    if (body.tools !== null) await requireToolsOn(deps, caller.organizationId, body.tools)
    patch.tools = body.tools
  }
  const saved = await deps.models.saveThreadSettings(threadId, patch)
  // Deleted between the check and the write: as for any thread that is not there.
  if (!saved) throw notFound('Thread')
  return settingsView(saved)
}

/** An organization's choice as the administration page and the CLI show it. */
export interface ChoiceView {
  /** Every configured model, with whether the organization may use it. */
  models: { id: string; name: string; provider: string; allowed: boolean }[]
  /** Whether every configured model is allowed (no list stored). */
  allowAll: boolean
  /** The default in effect. */
  defaultId: string
  /** The stored default, null when it follows the configuration's. */
  storedDefault: string | null
}

export async function viewChoice(deps: ModelsDeps, organizationId: number): Promise<ChoiceView> {
  const choice = await deps.models.choice(organizationId)
  const usable = new Set(usableModels(deps.catalogue, choice).map((model) => model.id))
  return {
    models: deps.catalogue.models.map((model) => ({
      id: model.id,
      name: model.name,
      provider: model.provider,
      allowed: usable.has(model.id),
    })),
    allowAll: choice.allowed === null,
    defaultId: organizationDefault(deps.catalogue, choice),
    storedDefault: choice.defaultModel,
  }
}

/**
 * Stores an owner's or admin's choice (the caller checks the role): `allowed` null allows every configured model,
 * and a default must be among the allowed. Throws a 400 AppError naming what is wrong.
 */
export async function setChoice(
  deps: ModelsDeps,
  organizationId: number,
  choice: OrganizationChoice,
  now: number,
  origin: AuditOrigin,
): Promise<void> {
  const problem = choiceProblem(deps.catalogue, choice)
  if (problem) throw invalidRequest(problem)
  await deps.models.setChoice(
    organizationId,
    choice,
    auditEntry(origin, now, {
      organizationId,
      action: 'settings.models_changed',
      target: target('organization', organizationId),
      // Null: every configured model is allowed; a null default follows the server's.
      detail: { allowed: choice.allowed, default_model: choice.defaultModel },
    }),
  )
}
