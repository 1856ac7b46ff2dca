// The inspect worker: runs the byte checks of uploaded files (checks.ts) off the thread that answers requests,
// and hands each file's bytes back, transferred rather than copied, with the verdict.
import { checkBytes } from './checks'
import type { FromInspector, ToInspector } from './inspector'

declare const self: Worker

async function answer(request: ToInspector): Promise<void> {
  const { id, bytes } = request
  try {
    const verdict = await checkBytes(bytes, request.claim)
    self.postMessage({ id, bytes, verdict } satisfies FromInspector, [bytes.buffer])
  } catch (error) {
    // A check that throws is a bug, not a refusal: the upload fails as any unexpected error does.
    self.postMessage({ id, failure: String(error) } satisfies FromInspector)
  }
}

self.onmessage = (event: MessageEvent<ToInspector>) => {
  void answer(event.data)
}
