// What several test files share during one `bun test` run (one Chromium, say), closed after the last file by
// test/support/preload.ts; in a worker of a parallel run, after each file, since a worker cannot know its last
// (what was closed starts again on its next use). This module needs no test runner, so scripts may load what
// registers here.
const closers: { name: string; close: () => Promise<void> }[] = []

/**
 * How long one closer may take. Closing is teardown, not a test: one that hangs (a browser or a server stuck on a
 * machine loaded far past its cores) is named on stderr and left to the process's exit, rather than failing a run
 * whose tests all passed with a nameless hook timeout.
 */
const closeBoundMs = 30_000

/** Runs `close` after the last test file (in a parallel worker, after the current one); `name` is for a hang. */
export function closeAfterRun(close: () => Promise<void>, name = 'a shared resource'): void {
  closers.push({ name, close })
}

/** Closes everything registered so far. */
export async function closeShared(): Promise<void> {
  await Promise.all(
    closers.splice(0).map(async ({ name, close }) => {
      let timer: ReturnType<typeof setTimeout> | undefined
      const bound = new Promise<'hung'>((resolve) => {
        timer = setTimeout(() => resolve('hung'), closeBoundMs)
      })
      const outcome = await Promise.race([close().then(() => 'closed' as const), bound])
      clearTimeout(timer)
      if (outcome === 'hung') console.error(`test teardown: ${name} did not close within ${closeBoundMs / 1000} s`)
    }),
  )
}
