// Which methods a path answers, read from the app's own route table, so that a known path asked with another
// method gets 405 and an `Allow` header (RFC 9110 §15.5.6) instead of a 404 that says the path does not exist.
interface Route {
  method: string
  path: string
}

/** An Elysia path pattern as a regular expression: `:name` is one segment, `*` anything. */
function patternOf(path: string): RegExp {
  const source = path
    .split('/')
    .map((segment) => {
      if (segment === '*') return '.*'
      if (segment.startsWith(':')) return '[^/]+'
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    })
    .join('/')
  return new RegExp(`^${source}$`)
}

export class AllowedMethods {
  private table: { pattern: RegExp; methods: Set<string> }[] | undefined
  private routes: readonly Route[] = []

  /** The app's route table, given once every feature has added its routes; read on first use. */
  learn(routes: readonly Route[]): void {
    this.routes = routes
    this.table = undefined
  }

  /** The methods the path answers, HEAD wherever GET is (Bun answers it); empty for an unknown path. */
  of(path: string): string[] {
    this.table ??= this.build()
    const methods = new Set<string>()
    for (const entry of this.table) {
      if (entry.pattern.test(path)) for (const method of entry.methods) methods.add(method)
    }
    if (methods.has('GET')) methods.add('HEAD')
    return [...methods].sort()
  }

  private build(): { pattern: RegExp; methods: Set<string> }[] {
    const byPath = new Map<string, Set<string>>()
    for (const route of this.routes) {
      const methods = byPath.get(route.path) ?? new Set<string>()
      methods.add(route.method)
      byPath.set(route.path, methods)
    }
    return [...byPath].map(([path, methods]) => ({ pattern: patternOf(path), methods }))
  }
}
