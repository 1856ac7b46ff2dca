// What several test files share during one `bun test` run (one Chromium, say), closed after the last file by
// test/support/preload.ts; in a worker of a parallel run, after each file, since a worker cannot know its last
// (what was closed starts again on its next use). This module needs no test runner, so scripts may load what
// registers here.
const closers: (() => Promise<void>)[] = []

/** Runs `close` after the last test file (in a parallel worker, after the current one). */
export function closeAfterRun(close: () => Promise<void>): void {
  closers.push(close)
}

/** Closes everything registered so far. */
export async function closeShared(): Promise<void> {
  await Promise.all(closers.splice(0).map((close) => close()))
}
