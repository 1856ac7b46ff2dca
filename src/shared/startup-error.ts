// What start-up checks throw, wherever they live (the instance lock in db/, the store's opening, the checks in
// startup.ts): here, below all of them, so that none imports the composition code to stop a start.

/** Stops start-up; its message is the one line printed, already naming the variable at fault. */
export class StartupError extends Error {}

/** "EACCES: permission denied" out of Node's "EACCES: permission denied, open '/x'"; the path is named already. */
export function osReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  return message.split(', ')[0] ?? message
}
