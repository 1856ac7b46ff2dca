// Structured JSON logs, one object per line. Callers pass fields, never raw secrets or request bodies.
export type Level = 'debug' | 'info' | 'warn' | 'error'
const rank: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 }

export interface Logger {
  /** Whether lines at this level are written: hooks that exist only to log are not installed otherwise. */
  enabled(at: Level): boolean
  debug(msg: string, fields?: Record<string, unknown>): void
  info(msg: string, fields?: Record<string, unknown>): void
  warn(msg: string, fields?: Record<string, unknown>): void
  error(msg: string, fields?: Record<string, unknown>): void
}

/**
 * Standard error, with the lines of one turn of the event loop written in one go: a busy server logs a line per
 * request, and one write each cost a tenth of a simple request's throughput. Whatever is pending when the
 * process exits (process.exit included) is written then.
 */
function stderrInBatches(): (line: string) => void {
  let pending = ''
  const flush = (): void => {
    if (pending === '') return
    const lines = pending
    pending = ''
    process.stderr.write(lines)
  }
  process.on('exit', flush)
  return (line) => {
    if (pending === '') setImmediate(flush)
    pending += line
  }
}

let stderr: ((line: string) => void) | undefined

export function createLogger(level: Level, write?: (line: string) => void): Logger {
  write ??= stderr ??= stderrInBatches()
  const emit = (at: Level) => (msg: string, fields?: Record<string, unknown>) => {
    if (rank[at] < rank[level]) return
    write(`${JSON.stringify({ time: new Date().toISOString(), level: at, msg, ...fields })}\n`)
  }
  return {
    enabled: (at) => rank[at] >= rank[level],
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
  }
}

export const silentLogger: Logger = {
  enabled: () => false,
  debug() {},
  info() {},
  warn() {},
  error() {},
}
