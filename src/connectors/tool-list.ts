// A server's tool list as Threadhouse keeps it. Every tool listed is kept, so that admins see what the server offers,
// but a tool with a `problem` is never offered to a model: its name could not be a model's tool name, or its schema
// is not one the providers (and the SDK's validator) take, or it is large enough to crowd every prompt it is in.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js'
import { PaginatedResultSchema } from '@modelcontextprotocol/sdk/types.js'
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import * as z from 'zod/v4'
import { isObject } from '../shared/objects'
import type { DiscoveredTool } from './repository'

export const toolLimits = {
  /** Tools kept per server: past them the list is cut, since each one offered costs every prompt its schema. */
  tools: 200,
  /** Pages of `tools/list` read: a server handing out cursors forever is stopped. */
  pages: 50,
  nameChars: 64,
  schemaBytes: 16 * 1024,
  descriptionChars: 4 * 1024,
}

const toolName = /^[A-Za-z0-9_.-]{1,64}$/

/** Each listed tool is checked here rather than by the SDK's schema, which fails the whole list for one bad tool. */
const LooseToolList = PaginatedResultSchema.extend({ tools: z.array(z.unknown()) })

export type OutputValidator = JsonSchemaValidator<unknown>

export interface ToolList {
  tools: DiscoveredTool[]
  /** The validators of the output schemas of tools without a problem, by name: `call` checks results with them. */
  outputs: Map<string, OutputValidator>
}

/** Pages through `tools/list`, up to toolLimits.tools tools, checking each. */
export async function discoverTools(client: Client, options: RequestOptions): Promise<ToolList> {
  const checker = new AjvJsonSchemaValidator()
  const tools: DiscoveredTool[] = []
  const outputs = new Map<string, OutputValidator>()
  const seen = new Set<string>()
  let cursor: string | undefined
  for (let page = 0; page < toolLimits.pages && tools.length < toolLimits.tools; page++) {
    const result = await client.request(
      { method: 'tools/list', params: cursor === undefined ? {} : { cursor } },
      LooseToolList,
      options,
    )
    for (const listed of result.tools) {
      const checked = checkTool(listed, checker)
      // The stored list is keyed by name: a name listed twice keeps its first tool.
      if (checked === null || seen.has(checked.tool.name)) continue
      seen.add(checked.tool.name)
      tools.push(checked.tool)
      if (checked.output) outputs.set(checked.tool.name, checked.output)
      if (tools.length === toolLimits.tools) break
    }
    cursor = result.nextCursor
    if (cursor === undefined) break
  }
  return { tools, outputs }
}

/**
 * A listed tool as stored, with its `problem` if it has one, and its output schema's validator; null for an entry
 * without a name, which nothing could show or call.
 */
export function checkTool(
  listed: unknown,
  checker: jsonSchemaValidator = new AjvJsonSchemaValidator(),
): { tool: DiscoveredTool; output: OutputValidator | null } | null {
  if (!isObject(listed) || typeof listed.name !== 'string' || listed.name === '') return null
  const problems: string[] = []
  // Kept short for storage and pages; such a name already has its problem.
  const name = listed.name.slice(0, 200)
  if (!toolName.test(listed.name)) {
    problems.push(`its name is not 1 to ${toolLimits.nameChars} letters, digits, '_', '.' or '-'`)
  }
  const description = typeof listed.description === 'string' ? listed.description : ''
  if (description.length > toolLimits.descriptionChars) {
    problems.push(`its description is longer than ${toolLimits.descriptionChars} characters`)
  }
  const input = checkSchema('inputSchema', listed.inputSchema, checker)
  const output = listed.outputSchema === undefined ? null : checkSchema('outputSchema', listed.outputSchema, checker)
  if (input.problem) problems.push(input.problem)
  if (output?.problem) problems.push(output.problem)
  const problem = problems.length > 0 ? problems.join('; ') : null
  return {
    tool: {
      name,
      title: typeof listed.title === 'string' ? listed.title.slice(0, 200) : null,
      description: description.slice(0, toolLimits.descriptionChars),
      inputSchema: input.stored,
      outputSchema: output?.stored ?? null,
      annotations: isObject(listed.annotations) ? listed.annotations : null,
      problem,
    },
    output: problem === null ? (output?.validator ?? null) : null,
  }
}

/** A schema is an object schema (`type: 'object'`), within the size bound, that the SDK's validator compiles. */
function checkSchema(
  field: 'inputSchema' | 'outputSchema',
  schema: unknown,
  checker: jsonSchemaValidator,
): { stored: unknown; problem: string | null; validator: OutputValidator | null } {
  const bytes = Buffer.byteLength(JSON.stringify(schema) ?? '')
  // Not stored: admins are told the size, and the database does not keep what is never offered.
  if (bytes > toolLimits.schemaBytes) {
    return {
      stored: null,
      problem: `its ${field} is larger than ${toolLimits.schemaBytes / 1024} KiB`,
      validator: null,
    }
  }
  if (!isObject(schema) || schema.type !== 'object') {
    return { stored: schema ?? null, problem: `its ${field} is not a JSON Schema of type 'object'`, validator: null }
  }
  try {
    return { stored: schema, problem: null, validator: checker.getValidator(schema as JsonSchemaType) }
  } catch (error) {
    const why = error instanceof Error ? error.message.slice(0, 200) : 'invalid'
    return { stored: schema, problem: `its ${field} is not a valid JSON Schema: ${why}`, validator: null }
  }
}
