// The random claim that marks which request holds an idempotency key: 128 bits, never shown to anyone.
export const newClaim = (): string => Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('hex')
