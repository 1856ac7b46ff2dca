// A webhook receiver on a loopback port: it records every request (headers and body as sent) and answers as the test
// says, by default 204.
export interface ReceivedHook {
  headers: Record<string, string>
  body: string
}

export interface Receiver extends AsyncDisposable {
  url: string
  port: number
  received: ReceivedHook[]
  /** Answers the `n`th request (from 0); may hold it open by returning a promise that settles later. */
  answer: (n: number) => Response | Promise<Response>
}

export function webhookReceiver(answer: Receiver['answer'] = () => new Response(null, { status: 204 })): Receiver {
  const received: ReceivedHook[] = []
  const receiver: Receiver = {
    url: '',
    port: 0,
    received,
    answer,
    async [Symbol.asyncDispose]() {
      await server.stop(true)
    },
  }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const n = received.length
      received.push({ headers: Object.fromEntries(request.headers), body: await request.text() })
      return receiver.answer(n)
    },
  })
  receiver.url = `http://127.0.0.1:${server.port}/hooks`
  receiver.port = server.port ?? 0
  return receiver
}
