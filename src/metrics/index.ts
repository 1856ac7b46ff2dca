// GET /metrics: the Prometheus text exposition of metrics.ts, for a scraper holding METRICS_TOKEN. The route exists
// only when the token is set (app.ts adds it then), so without one /metrics is the 404 of any unknown path. It is
// kept out of the OpenAPI document: it is the operator's, not the API's.
import { Elysia } from 'elysia'
import { AppError } from '../shared/errors'
import { hashSecret, secretsEqual } from '../shared/security'
import type { Metrics } from './metrics'

export interface MetricsRouteDeps {
  metrics: Metrics
  /** METRICS_TOKEN. */
  token: string
}

function unauthorized(message: string): AppError {
  return new AppError(401, 'unauthorized', message, {}, { 'www-authenticate': 'Bearer realm="metrics"' })
}

export const metricsRoutes = ({ metrics, token }: MetricsRouteDeps) => {
  // Compared as hashes: equal lengths, in constant time, so neither the token's length nor a prefix leaks.
  const expected = hashSecret(token)
  return new Elysia({ name: 'metrics' }).get(
    '/metrics',
    async ({ request }) => {
      const header = request.headers.get('authorization')
      if (header === null) throw unauthorized('A bearer token is required')
      const given = /^Bearer +(\S+) *$/i.exec(header)?.[1]
      if (given === undefined || !secretsEqual(hashSecret(given), expected)) {
        throw unauthorized('The bearer token is not the metrics token')
      }
      const { body, contentType } = await metrics.scrape()
      return new Response(body, { headers: { 'content-type': contentType, 'cache-control': 'no-store' } })
    },
    { detail: { hide: true } },
  )
}
