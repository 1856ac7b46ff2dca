// One answer the engine (service.ts) holds a place for, and where it stands. An answer waiting for a place is only
// its IDs in the engine's queue; it becomes a Job when it takes one of the GENERATION_CONCURRENCY places, and it
// leaves the engine once its end is stored. Its states, each left only forward:
//
//   claiming   → preparing   the claim won; gone if it was lost (its listeners follow the answer where it runs)
//   preparing  → generating  its history read; → storing at once if stopped meanwhile; gone at a shutdown (the
//                            claim is given back)
//   generating → storing     the runner's one end: done, error or cancelled
//   storing    → gone        its end stored once, its place freed
//
// A database error while claiming or preparing moves it to storing as failed. A queued answer stopped before it
// took a place is made a Job only to be stored as stopped.
import type { Logger } from '../shared/log'
import type { ThreadsModel } from '../threads/model'
import type { Hub, LiveAnswer } from './hub'
import type { AnswerRelay } from './relay'
import type { Compaction, EndedAnswer, PendingAnswer } from './repository'
import type { ToolAnswer } from './tools'
import type { TokenUsage } from './types'
import type { Prices, UsageMeter } from './usage'

export type JobState =
  /** Its claim under a proposed lease is under way. */
  | 'claiming'
  /** The claim is won (the lease is held) and its history is being read; the runner does not know it yet. */
  | 'preparing'
  /** The runner has it: tokens, blocks and a summary come in until exactly one end. */
  | 'generating'
  /** It ended: how is being stored, once. */
  | 'storing'

export type Outcome = EndedAnswer['outcome']

export class Job implements PendingAnswer {
  state: JobState = 'claiming'
  /** A stop was asked for (here, or heard from another instance, or the lease was lost): it ends `interrupted`. */
  stopping = false
  /** The lease this engine claims the answer under: proposed while `claiming`, then `held` if the claim won. */
  lease: string | null = null
  held = false
  /** What the runner produced besides text (the text is the hub's), and the history's compaction if any. */
  readonly blocks: ThreadsModel.contentBlock[] = []
  compaction?: Compaction
  /** The configured model asked for this answer, once it is prepared. */
  model: string | null = null
  /** Set when the generator is handed the answer: only an answer that ran has usage. */
  meter?: UsageMeter
  /** The answer as its tools know it (generation/tools.ts), once prepared with tools: the same object every round. */
  tools?: ToolAnswer
  /** Aborts the tool calls under way: a stop, a lost lease or a shutdown. */
  readonly toolAbort = new AbortController()
  /** Where the text of the round under way starts in the hub's text: what came before is earlier rounds'. */
  roundOffset = 0
  /** The provider's last report for the answer's own request, handed to the next round of calls. */
  lastUsage?: TokenUsage
  /** Text resumed after a takeover: the model's next text is a new round's, set apart as the loop sets rounds. */
  separate = false
  /** The rounds of calls under way: the answer's end is stored once they have recorded how they ended. */
  readonly toolRounds = new Set<Promise<unknown>>()
  /** How much of the text has been handed to the relay, and the hand-over under way. */
  private published = 0
  private publishing?: Promise<void>
  /** Set on entering `storing`: what a stop whose generator let go at once waits for. */
  stored?: Promise<void>
  /** Its hub entry, when a regenerate replaced it while this answer was being stored (Hub.replace): ended here. */
  replaced?: LiveAnswer

  constructor(
    readonly messageId: string,
    readonly threadId: string,
  ) {}

  /** The claim was won under `lease`. */
  claimed(): void {
    this.state = 'preparing'
    this.held = true
  }

  /**
   * Moves to `storing` once and stores the end with `persist`: a worker that fails after a failed start must not
   * store the answer twice, so later ends get the first one's promise.
   */
  settle(persist: () => Promise<void>): Promise<void> {
    if (this.state !== 'storing') {
      this.state = 'storing'
      this.stored = persist()
    }
    return this.stored as Promise<void>
  }

  /** The answer as it ended, with `text` (the hub's) as its first block when there is any. */
  ended(outcome: Outcome, error: string | null, text: string, prices?: Prices): EndedAnswer & { lease: string | null } {
    const contents: ThreadsModel.contentBlock[] =
      text === '' ? [...this.blocks] : [{ type: 'text', text }, ...this.blocks]
    const { messageId, threadId, compaction, lease, model } = this
    // A job made by the engine without a models port runs its runner's only model: it is named as the row's model.
    const usage = this.meter?.read({ outcome, contents, compaction }, model ?? 'default', prices)
    return { messageId, threadId, outcome, error, contents, compaction, lease, model, usage }
  }

  /**
   * Hands the text generated since the last hand-over (the hub's) to the relay; one at a time, so chunks arrive in
   * order. A hand-over that fails is tried again with the next token (or at the end); one refused for a lost lease
   * is not. Only the lease's holder publishes.
   */
  publish(relay: AnswerRelay, hub: Hub, log: Logger): void {
    if (!this.held || this.lease === null || this.publishing) return
    const text = hub.text(this.messageId)
    if (this.published >= text.length) return
    const start = this.published
    this.published = text.length
    const chunk = { messageId: this.messageId, lease: this.lease, start, end: text.length, text: text.slice(start) }
    this.publishing = relay.publish(chunk).then(
      () => {
        this.publishing = undefined
        this.publish(relay, hub, log)
      },
      (error) => {
        this.published = start
        this.publishing = undefined
        log.warn('could not publish an answer to other instances', { messageId: this.messageId, error: String(error) })
      },
    )
  }
}
