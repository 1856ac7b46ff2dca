// An inactivity deadline for one request. The SDKs' own timeout stops at the response headers, but a
// stream can also stall halfway; this one restarts on every piece received and aborts the request
// (and its socket) when the provider has been silent for too long.

export class IdleDeadline implements Disposable {
  private readonly controller = new AbortController()
  private timer: ReturnType<typeof setTimeout> | undefined
  private expired = false
  /** Aborts when the caller cancels or the deadline passes: hand this one to the SDK. */
  readonly signal: AbortSignal

  constructor(
    private readonly ms: number,
    cancel: AbortSignal,
  ) {
    this.signal = AbortSignal.any([cancel, this.controller.signal])
    this.touch()
  }

  /** Something arrived: the provider gets another full period. */
  touch(): void {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.expired = true
      this.controller.abort(new DOMException('The provider went silent', 'TimeoutError'))
    }, this.ms)
  }

  get timedOut(): boolean {
    return this.expired
  }

  [Symbol.dispose](): void {
    clearTimeout(this.timer)
  }
}
