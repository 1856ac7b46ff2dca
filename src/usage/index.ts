// The usage API: GET /api/v1/usage. HTTP in, HTTP out; behaviour in service.ts.
import { Elysia, t } from 'elysia'
import { type AuthDeps, auth } from '../auth'
import { AuthModel } from '../auth/model'
import type { Responses } from '../shared/responses'
import type { Clock } from '../shared/time'
import { maxRangeDays, UsageModel } from './model'
import type { UsageRepository } from './repository'
import { usageCsv, usageReport } from './service'

export interface UsageRoutesDeps extends AuthDeps {
  usage: UsageRepository
  /** The currency of the models' prices (models/catalogue.ts); null when no model has one. */
  currency: string | null
  clock: Clock
  responses: Responses
}

const error = AuthModel.error

export const usageRoutes = (deps: UsageRoutesDeps) =>
  new Elysia({ name: 'usage', prefix: '/api/v1' }).use(auth(deps)).get(
    '/usage',
    async ({ caller, query, set }) => {
      const report = await usageReport(
        { usage: deps.usage, currency: deps.currency, now: deps.clock.now() },
        caller,
        query,
      )
      if (query.format !== 'csv') return report
      set.headers['content-type'] = 'text/csv; charset=utf-8'
      set.headers['content-disposition'] =
        `attachment; filename="usage-${report.from.slice(0, 10)}-${report.to.slice(0, 10)}.csv"`
      return usageCsv(report)
    },
    {
      scope: 'threads:read',
      query: UsageModel.usageQuery,
      response: deps.responses({
        200: t.Union([UsageModel.usageList, t.String()]),
        400: error,
        401: error,
        403: AuthModel.scopeError,
      }),
      detail: {
        operationId: 'getUsage',
        summary: 'Tokens and cost of answers, summed by day, member, model or thread',
        tags: ['Usage'],
        description:
          'An addition to the specification. Sums the answers that ran (complete, stopped or failed) in the range: ' +
          'the caller’s own (answers in threads they own), or with `scope=organization` every member’s (owners ' +
          'and admins; 403 `forbidden` for members). Needs `threads:read` (or `threads:read:own`). Defaults: from ' +
          'the first day of the current month (UTC) through today, grouped by day. Dates are ISO 8601; 400 when ' +
          `\`from\` is after \`to\` or the range is longer than ${maxRangeDays} days. Usage is kept when a thread ` +
          'is deleted. `cost` sums the answers whose model has a price in the models list (none is guessed), in ' +
          '`currency`. `format=csv` answers `text/csv` with the header row `key,answers,input_tokens,' +
          'output_tokens,cost` (an unpriced cost is empty).',
      },
    },
  )
