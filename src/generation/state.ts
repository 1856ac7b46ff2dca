// When an answer is final for its readers. The specification promises `done`, and a 200 poll, only once the
// thread is back in `ready`: while it is waiting, active or being stopped, an answer is still on its way.
export const busyThreadStates: ReadonlySet<string> = new Set(['waiting', 'active', 'interrupted'])
