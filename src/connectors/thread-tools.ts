// What threads see of the organization's MCP servers: the tools a thread's settings may name (the models feature's
// ToolNames port, which checks a PATCH of `tools`) and the tools its page offers in the composer's Tools menu
// (threads/pages.tsx PageTools). Both read `offerable`: enabled tools without a problem on enabled servers, so a thread
// names only what an answer could be offered.
import type { ToolNames } from '../models/service'
import type { PageTool, PageTools } from '../threads/pages'
import type { McpServerRepository } from './repository'

/** A tool as thread settings name it. */
const threadName = (server: string, tool: string): string => `${server}/${tool}`

export function toolNames(servers: McpServerRepository): ToolNames {
  return {
    async unknown(organizationId, names) {
      const on = new Set(
        (await servers.offerable(organizationId)).map(({ server, tool }) => threadName(server.name, tool.name)),
      )
      return names.filter((name) => !on.has(name))
    },
  }
}

export function pageTools(servers: McpServerRepository): PageTools {
  return {
    async offered(caller) {
      return (await servers.offerable(caller.organizationId)).map(
        ({ server, tool }): PageTool => ({
          id: threadName(server.name, tool.name),
          server: server.name,
          name: tool.name,
          title: tool.title,
          description: tool.description,
          asksFirst: !server.trusted && !tool.readOnly,
        }),
      )
    },
  }
}
