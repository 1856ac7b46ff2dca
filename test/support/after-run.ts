// What several test files share during one `bun test` run (one Chromium, say), closed after the last file by
// test/support/preload.ts. This module needs no test runner, so scripts may load what registers here.
const closers: (() => Promise<void>)[] = []

/** Runs `close` once every test file has run. */
export function closeAfterRun(close: () => Promise<void>): void {
  closers.push(close)
}

/** Closes everything registered so far. */
export async function closeShared(): Promise<void> {
  await Promise.all(closers.splice(0).map((close) => close()))
}
