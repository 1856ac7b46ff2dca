// TypeBox schemas of the models API: validation, TypeScript types and OpenAPI from one source.
import { type Static, t } from 'elysia'
import { integer } from '../shared/responses'

/** The longest per-thread instructions, in characters (UTF-16 units, as JavaScript counts them). */
export const instructionsMaxLength = 8000

/** How a thread names a tool: its MCP server's name (connectors/), a slash, and the tool's name on that server. */
export const toolNamePattern = '^[a-z0-9][a-z0-9-]{0,31}/[A-Za-z0-9_.-]{1,64}$'

/** The most tools a thread's list may name. */
export const threadToolsMax = 200

export namespace ModelsModel {
  export const model = t.Object(
    {
      id: t.String({ description: 'The ID to name this model by (thread settings, regenerate).' }),
      name: t.String({ description: 'The name people read.' }),
      provider: t.Union([t.Literal('echo'), t.Literal('openai'), t.Literal('anthropic')], {
        description: 'How the server reaches the model.',
      }),
      context_tokens: integer({ minimum: 1, description: "The model's context window, in tokens." }),
      default: t.Boolean({ description: "Whether this is the organization's default: exactly one is." }),
    },
    { additionalProperties: false },
  )
  export type model = Static<typeof model>

  export const modelList = t.Object(
    {
      data: t.Array(model, {
        description: "The models the caller's organization may use, in the server's order; exactly one is default.",
      }),
    },
    { additionalProperties: false },
  )
  export type modelList = Static<typeof modelList>

  export const threadSettings = t.Object(
    {
      model: t.Nullable(
        t.String({ description: "The thread's model; null: the organization's default (GET /api/v1/models)." }),
      ),
      instructions: t.Nullable(t.String({ description: "Added to the system prompt for this thread's answers." })),
      tools: t.Nullable(
        t.Array(t.String(), {
          description:
            'The tools of the organization’s MCP servers this thread’s answers may call, as `server/tool`; null: ' +
            'every tool the organization has on (those turned on later too); []: none. A listed tool the ' +
            'organization has since turned off is not offered.',
        }),
      ),
    },
    { additionalProperties: false },
  )
  export type threadSettings = Static<typeof threadSettings>

  export const updateThreadSettingsBody = t.Object(
    {
      model: t.Optional(
        t.Nullable(
          t.String({
            minLength: 1,
            maxLength: 100,
            description:
              'A model the organization may use (GET /api/v1/models); null: the organization’s default. Used from ' +
              'the thread’s next answer on.',
          }),
        ),
      ),
      instructions: t.Optional(
        t.Nullable(
          t.String({
            maxLength: instructionsMaxLength,
            description: `At most ${instructionsMaxLength} characters; null or an empty string removes them.`,
          }),
        ),
      ),
      tools: t.Optional(
        t.Nullable(
          t.Array(t.String({ pattern: toolNamePattern, description: 'A tool as `server/tool`.' }), {
            maxItems: threadToolsMax,
            uniqueItems: true,
            description:
              `At most ${threadToolsMax} tools as \`server/tool\`, each one the organization has on (400 ` +
              'otherwise); []: none; null: every tool the organization has on, those turned on later too.',
          }),
        ),
      ),
    },
    {
      additionalProperties: false,
      minProperties: 1,
      description: 'The fields to change; at least one.',
      examples: [
        { model: 'gpt-4o' },
        { instructions: 'Answer in French.' },
        { model: null },
        { tools: ['docs/search_docs'] },
      ],
    },
  )
  export type updateThreadSettingsBody = Static<typeof updateThreadSettingsBody>
}
