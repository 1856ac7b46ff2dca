// Structured JSON logs, one object per line. Callers pass fields, never raw secrets or request bodies.
type Level = 'debug' | 'info' | 'warn' | 'error'
const rank: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 }

export interface Logger {
  /** Whether debug lines are written: hooks that exist only to log at debug are not installed otherwise. */
  readonly debugEnabled: boolean
  debug(msg: string, fields?: Record<string, unknown>): void
  info(msg: string, fields?: Record<string, unknown>): void
  warn(msg: string, fields?: Record<string, unknown>): void
  error(msg: string, fields?: Record<string, unknown>): void
}

export function createLogger(level: Level, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const emit = (at: Level) => (msg: string, fields?: Record<string, unknown>) => {
    if (rank[at] < rank[level]) return
    write(`${JSON.stringify({ time: new Date().toISOString(), level: at, msg, ...fields })}\n`)
  }
  return {
    debugEnabled: level === 'debug',
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
  }
}

export const silentLogger: Logger = { debugEnabled: false, debug() {}, info() {}, warn() {}, error() {} }
