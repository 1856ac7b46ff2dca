// Which configured models an organization may use, its default, and which model an answer is asked of. Pure
// functions over the catalogue and an organization's stored choice; the service (service.ts) reads the choice.
import type { Catalogue, CatalogueModel } from './catalogue'

/** An organization's choice as stored: null allows every configured model, and null defers to the catalogue. */
export interface OrganizationChoice {
  allowed: string[] | null
  defaultModel: string | null
}

export const noChoice: OrganizationChoice = { allowed: null, defaultModel: null }

/**
 * The configured models the organization may use, in the catalogue's order. IDs it allowed that are no longer
 * configured drop out; an allow-list left with none falls back to the catalogue's default alone, so that every
 * organization always has a model to answer with.
 */
export function usableModels(catalogue: Catalogue, choice: OrganizationChoice): CatalogueModel[] {
  if (choice.allowed === null) return catalogue.models
  const allowed = new Set(choice.allowed)
  const usable = catalogue.models.filter((model) => allowed.has(model.id))
  return usable.length > 0 ? usable : catalogue.models.filter((model) => model.id === catalogue.defaultId)
}

/**
 * The organization's default as it stands: its own when that is still configured and allowed, else the
 * catalogue's default when allowed, else the first model it may use.
 */
export function organizationDefault(catalogue: Catalogue, choice: OrganizationChoice): string {
  const usable = usableModels(catalogue, choice)
  const ids = new Set(usable.map((model) => model.id))
  if (choice.defaultModel !== null && ids.has(choice.defaultModel)) return choice.defaultModel
  if (ids.has(catalogue.defaultId)) return catalogue.defaultId
  return (usable[0] as CatalogueModel).id
}

export function mayUseModel(catalogue: Catalogue, choice: OrganizationChoice, modelId: string): boolean {
  return usableModels(catalogue, choice).some((model) => model.id === modelId)
}

/** What an answer's model is resolved from, as it is prepared. */
export interface AnswerContext {
  /** The model this answer was asked of (a regenerate's choice): generations.model. */
  requested: string | null
  /** The thread's own setting. */
  threadModel: string | null
  choice: OrganizationChoice
}

/**
 * The answer's model: what it was asked of, else the thread's model, else the organization's default. A model no
 * longer configured or no longer allowed falls back to the organization's default: the answer then names the model
 * that actually wrote it.
 */
export function answerModel(catalogue: Catalogue, context: AnswerContext): string {
  const wanted = context.requested ?? context.threadModel
  if (wanted !== null && mayUseModel(catalogue, context.choice, wanted)) return wanted
  return organizationDefault(catalogue, context.choice)
}

/** Checks an allow-list and default an owner or admin chose; null when fine, else why not, in a sentence. */
export function choiceProblem(catalogue: Catalogue, choice: OrganizationChoice): string | null {
  const unknown = [...(choice.allowed ?? []), ...(choice.defaultModel === null ? [] : [choice.defaultModel])].find(
    (id) => !catalogue.byId.has(id),
  )
  if (unknown !== undefined) return `"${unknown}" is not a configured model`
  if (choice.allowed !== null && choice.allowed.length === 0) return 'Allow at least one model'
  if (choice.defaultModel !== null && choice.allowed !== null && !choice.allowed.includes(choice.defaultModel)) {
    return `The default model "${choice.defaultModel}" must be among the allowed models`
  }
  return null
}
