import { t } from 'elysia'
import { ThreadsModel } from '../threads/model'

export namespace GenerationModel {
  export const processing = t.Object({ status: t.Literal('processing') }, { additionalProperties: false })
  export const finished = t.Object(
    {
      status: t.Union([t.Literal('complete'), t.Literal('error'), t.Literal('interrupted')], {
        description:
          '`complete`: the answer is done and the thread went back to `ready`. `error`: generation failed and ' +
          'the thread is in `error`; `interrupted`: the answer was stopped. In both cases `messages` holds ' +
          'the partial answer, if any.',
      }),
      messages: t.Array(ThreadsModel.message),
    },
    { additionalProperties: false },
  )
}
