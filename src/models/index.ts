// The models API: GET /api/v1/models, and a thread's settings (its model and instructions) under
// /api/v1/threads/{id}/settings. HTTP in, HTTP out; behaviour in service.ts.
import { Elysia } from 'elysia'
import { type AuthDeps, auth } from '../auth'
import { AuthModel } from '../auth/model'
import { jsonBodies, jsonBody } from '../shared/body'
import type { Responses } from '../shared/responses'
import { ThreadsModel } from '../threads/model'
import type { ThreadRepository } from '../threads/repository'
import type { Catalogue } from './catalogue'
import { instructionsMaxLength, ModelsModel, threadToolsMax } from './model'
import type { ModelRepository } from './repository'
import { getThreadSettings, listModels, type ToolNames, updateThreadSettings } from './service'

export interface ModelsRoutesDeps extends AuthDeps {
  catalogue: Catalogue
  models: ModelRepository
  toolNames: ToolNames
  threads: ThreadRepository
  responses: Responses
}

const error = AuthModel.error
const readErrors = { 401: error, 403: AuthModel.scopeError, 404: error }
const ownerErrors = { 400: error, 401: error, 403: AuthModel.scopeError, 404: error }

export const modelRoutes = (deps: ModelsRoutesDeps) =>
  new Elysia({ name: 'models', prefix: '/api/v1' })
    .use(auth(deps))
    .use(jsonBodies)
    .get('/models', ({ caller }) => listModels(deps, caller.organizationId), {
      scope: 'any',
      response: deps.responses({ 200: ModelsModel.modelList, 401: error }),
      detail: {
        operationId: 'listModels',
        summary: "List the models the caller's organization may use",
        tags: ['Models'],
        description:
          'Any valid token. The server’s configured models that the organization’s owners and admins allowed, in ' +
          'the server’s order; exactly one has `default: true`: the model a thread without one of its own uses. ' +
          'An addition to the specification.',
      },
    })
    .get('/threads/:threadId/settings', ({ caller, params }) => getThreadSettings(deps, caller, params.threadId), {
      scope: 'threads:read',
      params: ThreadsModel.threadParams,
      response: deps.responses({ 200: ModelsModel.threadSettings, 400: error, ...readErrors }),
      detail: {
        operationId: 'getThreadSettings',
        summary: "Get a thread's model, instructions and tools",
        tags: ['Models'],
        description:
          'For anyone who can read the thread (404 otherwise). `model` null: the thread uses its organization’s ' +
          'default; `instructions` null: none; `tools` null: every tool of the organization’s MCP servers that ' +
          'the organization has on, [] none. An addition to the specification.',
      },
    })
    .patch(
      '/threads/:threadId/settings',
      ({ caller, params, body }) => updateThreadSettings(deps, caller, params.threadId, body),
      {
        scope: 'threads:write',
        params: ThreadsModel.threadParams,
        ...jsonBody(ModelsModel.updateThreadSettingsBody),
        response: deps.responses({ 200: ModelsModel.threadSettings, ...ownerErrors }),
        detail: {
          operationId: 'updateThreadSettings',
          summary: "Change a thread's model, instructions or tools",
          tags: ['Models'],
          description:
            'Owner only (403 `forbidden` for other members who can see it, 404 for threads the caller cannot see). ' +
            'Send `model`, `instructions`, `tools` or any of them. `model` must be one of `GET /api/v1/models` ' +
            '(400 otherwise); ' +
            'null returns the thread to the organization’s default. The thread’s answers use it from the next one ' +
            'on; a model later removed from the server or the organization’s choice falls back to the default. ' +
            `\`instructions\` (at most ${instructionsMaxLength} characters, 400 beyond) are added to the system ` +
            'prompt for this thread’s answers; null or an empty string removes them. `tools` names the tools of the ' +
            `organization’s MCP servers its answers may call, at most ${threadToolsMax}, each \`server/tool\` ` +
            '(such as `docs/search_docs`) and one the organization has on: a tool that is not, or another ' +
            'organization’s, is 400 naming it. [] offers none; null offers every tool the organization has on, ' +
            'those turned on later too. Answers the settings. None of them moves the thread’s `updated_at`. An ' +
            'addition to the specification.',
        },
      },
    )
