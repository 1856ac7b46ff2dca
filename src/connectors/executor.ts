// The tools an answer calls (generation/tools.ts AnswerTools): which of the organization's tools the thread offers
// the model, and each round of calls the model asks for. A call that may change something on a server nobody trusted
// waits for the thread's owner: the answer ends with an approval question, and the owner's next message starts the
// answer that continues the chain (it is decided here, exactly once). Every call is made at most once: a call is
// recorded `running` before it is sent, and one found `running` by a later answer was cut short by a crash or a lost
// lease and is recorded `unknown`, never sent again. Failures of a server's making reach the model as tool errors;
// they never fail the answer.

import type { ChoiceBlock } from '../generation/providers/choice-tool'
import type { CallEnd, ToolCallRecord, ToolCallRepository, ToolRoundRecord } from '../generation/tool-calls.repository'
import {
  type AnswerTools,
  approvalAnswer,
  approvalChoices,
  LostLease,
  type ToolAnswer,
  type ToolPlan,
} from '../generation/tools'
import type {
  HistoryMessage,
  OfferedTool,
  ToolCallRequest,
  ToolCallResult,
  ToolRound,
  ToolRoundReply,
} from '../generation/types'
import type { ModelRepository } from '../models/repository'
import { newId } from '../shared/ids'
import type { Logger } from '../shared/log'
import { isObject } from '../shared/objects'
import type { Clock } from '../shared/time'
import type { ToolCaller } from './ports'
import type { McpServerRepository, OfferableTool } from './repository'

export interface ToolLimits {
  /** TOOLS_MAX_ROUNDS: rounds of calls per answer; 0 turns tools off. */
  maxRounds: number
  /** TOOLS_ANSWER_DEADLINE_MS: from an answer's first round; a continuation after an approval starts a fresh one. */
  deadlineMs: number
  /** MCP_TIMEOUT_MS: the longest one call may take. */
  callTimeoutMs: number
}

export interface ToolExecutorDeps {
  servers: McpServerRepository
  toolCalls: ToolCallRepository
  /** The thread's `tools` setting and its organization (src/models/). */
  settings: Pick<ModelRepository, 'threadSettings' | 'answerSettings'>
  caller: ToolCaller
  clock: Clock
  limits: ToolLimits
  /** Whether a configured model can be offered tools (the echo responder cannot). */
  supportsTools(model: string): boolean
  log: Logger
}

/** Calls of one round run at most this many at a time. */
const callsAtOnce = 4
/** Arguments longer than this (in bytes) are not sent, and only their start is kept. */
export const maxArgumentBytes = 64 * 1024
/**
 * The arguments shown in an approval question, as compact JSON. Longer ones are cut with a note saying how much is
 * left out: the owner must not Allow arguments they were never shown without knowing it.
 */
const questionArgumentChars = 1000

const told = {
  notOffered: (name: string) => `The tool ${name} is not available to this answer.`,
  limit: 'The answer reached its deadline or round limit before this call was made.',
  unknown: 'The server restarted while this call ran; whether it took effect is unknown.',
  denied: "The thread's owner denied this call.",
  deniedWithWords: "The thread's owner denied this call; what they wrote instead follows.",
  deadline: 'The tool did not answer before the deadline of this answer.',
}

/** A tool as the model is offered it, with what calling it needs. */
interface Offer {
  modelName: string
  offer: OfferableTool
}

/** What a prepared answer's rounds need, kept beside the engine's own ToolAnswer object for as long as it lives. */
interface RunState {
  organizationId: number
  /** The thread's list of `server/tool`, or null for every tool the organization has on. */
  allowed: string[] | null
  chainId: string
  runId: string
  /** Added to the model's round number to give the chain's: a continuation numbers its rounds on. */
  offset: number
  /** Rounds of this run so far (resumed ones included). */
  rounds: number
  deadline: number
}

/**
 * The name a model calls a tool by: `<server>__<tool>` in the characters both vendors accept, at most 64 of them; a
 * longer name, or one another tool already has once cleaned, ends in a hash of the tool's full name instead.
 */
function modelNames(offerable: OfferableTool[]): Offer[] {
  const taken = new Set<string>()
  return offerable.map((offer) => {
    const full = `${offer.server.name}/${offer.tool.name}`
    let name = `${offer.server.name}__${offer.tool.name}`.replace(/[^A-Za-z0-9_-]/g, '_')
    if (name.length > 64 || taken.has(name)) {
      const hash = new Bun.CryptoHasher('sha256').update(full).digest('hex').slice(0, 8)
      name = `${name.slice(0, 55)}_${hash}`
    }
    taken.add(name)
    return { modelName: name, offer }
  })
}

/** The approval question about a call: `approve_` and the call's ID without dashes, so it is found again. */
export function approvalBlock(call: Pick<ToolCallRecord, 'id' | 'toolName' | 'serverName' | 'arguments'>): ChoiceBlock {
  let shown = call.arguments
  try {
    const parsed: unknown = JSON.parse(call.arguments === '' ? '{}' : call.arguments)
    shown = isObject(parsed) && Object.keys(parsed).length === 0 ? '' : JSON.stringify(parsed)
  } catch {}
  const hidden = shown.length - questionArgumentChars
  if (hidden > 0) {
    shown = `${shown.slice(0, questionArgumentChars)}… (${hidden} more characters: the call's details show them all)`
  }
  const what = `${call.toolName} on ${call.serverName}`
  return {
    type: 'user_get_choice',
    tool_use_id: `approve_${call.id.replaceAll('-', '')}`,
    question: shown === '' ? `Allow ${what}?` : `Allow ${what} with ${shown}?`,
    choices: [...approvalChoices],
  }
}

/** The offered tool a recorded call names, if the answer still offers it. */
function offerOf(offers: Offer[], call: Pick<ToolCallRecord, 'serverId' | 'toolName'>): OfferableTool | undefined {
  return offers.find(({ offer }) => offer.server.id === call.serverId && offer.tool.name === call.toolName)?.offer
}

/** How a call ends that waited (for a person, or across a crash) while the thread stopped offering its tool. */
function noLongerOffered(call: Pick<ToolCallRecord, 'modelName'>): CallEnd {
  const result = `The call was not made: the tool ${call.modelName} is no longer offered to this thread.`
  return {
    status: 'refused',
    result,
    resultChars: result.length,
    error: 'no longer offered to this thread',
    durationMs: null,
  }
}

/**
 * How an allowed call ends that was never started (its answer was cut short) once the reply that allowed it is no
 * longer on the thread's branch: the owner edited it (into a Deny, say), and an Allow they took back is not obeyed.
 */
function allowReplaced(): CallEnd {
  const error = 'the reply that allowed it was replaced'
  const result = `The call was not made: ${error}.`
  return { status: 'refused', result, resultChars: result.length, error, durationMs: null }
}

/** The arguments as a call needs them, or why they cannot be sent. */
function parseArguments(text: string): { args: Record<string, unknown> } | { problem: string } {
  if (Buffer.byteLength(text) > maxArgumentBytes) return { problem: 'the arguments are larger than 64 KiB' }
  try {
    const parsed: unknown = JSON.parse(text.trim() === '' ? '{}' : text)
    return isObject(parsed) ? { args: parsed } : { problem: 'the arguments are not a JSON object' }
  } catch {
    return { problem: 'the arguments are not valid JSON' }
  }
}

/** What the model is told of a call that has ended (or never ran). */
function resultOf(call: Pick<ToolCallRecord, 'toolUseId' | 'status' | 'result' | 'error'>): ToolCallResult {
  const content =
    call.result ??
    (call.status === 'unknown' ? told.unknown : call.error ? `The call failed: ${call.error}` : told.limit)
  return { id: call.toolUseId, content, isError: call.status !== 'ok' }
}

/** A recorded round as the model's loop reads it. */
function toolRound(round: ToolRoundRecord, calls: ToolCallRecord[]): ToolRound {
  const own = calls.filter((call) => call.round === round.round)
  return {
    text: round.text,
    calls: own.map((call) => ({ id: call.toolUseId, name: call.modelName, arguments: call.arguments })),
    results: own.map(resultOf),
  }
}

export function toolExecutor(deps: ToolExecutorDeps): AnswerTools {
  const { toolCalls, limits, clock } = deps
  /** Each prepared answer's state, by the engine's ToolAnswer object: gone with the job. */
  const states = new WeakMap<ToolAnswer, RunState>()

  const fenceOf = (answer: ToolAnswer) => ({ questionId: answer.messageId, lease: answer.lease })

  /** The tools the thread offers, by the name the model calls them. */
  async function offersOf(organizationId: number, allowed: string[] | null): Promise<Offer[]> {
    const all = await deps.servers.offerable(organizationId)
    const wanted = allowed === null ? null : new Set(allowed)
    return modelNames(wanted ? all.filter(({ server, tool }) => wanted.has(`${server.name}/${tool.name}`)) : all)
  }

  /** One call sent, bounded by MCP_TIMEOUT_MS, the answer's deadline and its stop; its end recorded and returned. */
  async function send(
    answer: ToolAnswer,
    call: { id: string; offer: OfferableTool; args: Record<string, unknown> },
    deadline: number,
    signal: AbortSignal,
  ): Promise<CallEnd> {
    const started = clock.now()
    const left = deadline - started
    const fence = fenceOf(answer)
    if (left <= 0) {
      const end: CallEnd = {
        status: 'error',
        result: told.limit,
        resultChars: null,
        error: 'deadline reached',
        durationMs: 0,
      }
      await toolCalls.endCall(call.id, end, fence, started)
      return end
    }
    const timer = AbortSignal.timeout(Math.min(limits.callTimeoutMs, left))
    let outcome: Awaited<ReturnType<ToolCaller['call']>>
    try {
      outcome = await deps.caller.call(
        call.offer.server,
        call.offer.tool.name,
        call.args,
        AbortSignal.any([signal, timer]),
      )
    } catch (error) {
      // The caller reports a server's failures as outcomes; this is ours, and still only the call's.
      deps.log.error('tool call failed', { callId: call.id, error: String(error) })
      const text = 'The tool could not be called.'
      outcome = { status: 'error', text, chars: text.length, error: 'the call could not be made' }
    }
    // Cut short by the answer's deadline rather than by the tool's own timeout or a stop: a timeout all the same.
    // A stop, a shutdown or a lost lease leaves the caller's `unknown`: the server may have acted on the call.
    if (timer.aborted && !signal.aborted && (outcome.status === 'error' || outcome.status === 'unknown')) {
      outcome = { status: 'timeout', text: told.deadline, chars: told.deadline.length, error: 'the answer’s deadline' }
    }
    const ended = clock.now()
    const end: CallEnd = {
      status: outcome.status,
      result: outcome.text,
      resultChars: outcome.chars,
      error: outcome.error,
      durationMs: ended - started,
    }
    await toolCalls.endCall(call.id, end, fence, ended)
    return end
  }

  /** Runs `work` on each item, at most `callsAtOnce` at a time. */
  async function pooled<T>(items: T[], work: (item: T) => Promise<void>): Promise<void> {
    const queue = [...items]
    const lane = async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item)
    }
    await Promise.all(Array.from({ length: Math.min(callsAtOnce, items.length) }, lane))
  }

  /**
   * The decided calls of the chain that still have to happen: an allowed one is sent (once: `startCall` moves it from
   * allowed to running, and only the answer that did so sends it), a denied one gets its result. A call that waits
   * for a person while the thread no longer offers its tool (its tools, or its model, changed meanwhile) is refused,
   * rather than asked about or left waiting: the reply that met it decides nothing and reaches the model as a turn.
   * An allowed call whose deciding reply left the branch (edited after an interrupted answer) is refused too.
   */
  async function carryOut(
    answer: ToolAnswer,
    calls: ToolCallRecord[],
    offers: Offer[],
    history: HistoryMessage[],
    now: number,
    signal: AbortSignal,
  ): Promise<void> {
    const fence = fenceOf(answer)
    const ids = new Set(history.map((message) => message.id))
    const oldest = history.find((message) => message.role !== 'summary')?.id
    // As for rounds (prepare's ofBranch): a reply summarised out of the history is older than all of it.
    const onBranch = (id: string | null) => id !== null && (ids.has(id) || (oldest !== undefined && id < oldest))
    for (const call of calls) {
      if (call.status === 'denied' && call.finishedAt === null) {
        const decider = history.find((message) => message.id === call.decidedBy)
        const words = decider && approvalAnswer(decider.contents) === 'other'
        const result = words ? told.deniedWithWords : told.denied
        const end: CallEnd = { status: 'denied', result, resultChars: result.length, error: null, durationMs: null }
        if (!(await toolCalls.endCall(call.id, end, fence, now))) throw new LostLease()
      }
      if (call.status === 'awaiting_approval' && !offerOf(offers, call)) {
        if (!(await toolCalls.endCall(call.id, noLongerOffered(call), fence, now))) throw new LostLease()
      }
      if (call.status !== 'allowed') continue
      if (!onBranch(call.decidedBy)) {
        if (!(await toolCalls.endCall(call.id, allowReplaced(), fence, now))) throw new LostLease()
        continue
      }
      const found = offerOf(offers, call)
      // Arguments were checked when the call was recorded; a tool turned off since is not called.
      const parsed = parseArguments(call.arguments)
      if (!found || 'problem' in parsed) {
        if (!(await toolCalls.endCall(call.id, noLongerOffered(call), fence, now))) throw new LostLease()
        continue
      }
      if (!(await toolCalls.startCall(call.id, fence, now))) throw new LostLease()
      // A continuation's wait for the person is not counted: the call gets the whole deadline.
      await send(answer, { id: call.id, offer: found, args: parsed.args }, now + limits.deadlineMs, signal)
    }
  }

  return {
    async prepare(answer, history, now, signal = new AbortController().signal) {
      // A continuation: the question answers the approval the previous answer ended with.
      const at = history.findIndex((message) => message.id === answer.messageId)
      const question = history[at]
      const before = history[at - 1]
      const block = before?.role === 'assistant' ? before.contents.at(-1) : undefined
      const approvalId = block?.type === 'user_get_choice' ? block.tool_use_id : null
      const toolsOn = limits.maxRounds > 0 && deps.supportsTools(answer.model)
      if (!toolsOn && approvalId === null) return null
      const [{ tools: allowed }, context] = await Promise.all([
        deps.settings.threadSettings(answer.threadId),
        deps.settings.answerSettings(answer.threadId, answer.messageId),
      ])
      if (!context) return null
      const offers = toolsOn && allowed?.length !== 0 ? await offersOf(context.organizationId, allowed) : []
      const asked = approvalId === null ? null : await toolCalls.byApproval(answer.threadId, approvalId)
      // Without tools an answer has no chain to go on with, unless it answers an approval: that call still has to end.
      if (offers.length === 0 && asked === null) return null
      const runId = await toolCalls.runOf(answer.messageId)
      if (runId === null) return null
      const fence = fenceOf(answer)

      const verdict = question ? approvalAnswer(question.contents) : 'other'
      // A call whose tool the thread no longer offers is not decided: carryOut refuses it.
      if (asked?.status === 'awaiting_approval' && offerOf(offers, asked)) {
        // Of racing deciders (a regenerate, another instance) one wins; the others find the decision made and use it.
        await toolCalls.decide(asked.id, verdict === 'allow' ? 'allowed' : 'denied', answer.messageId, now)
      }
      const chainId = asked?.chainId ?? runId

      // The chain as this branch of the thread knows it: rounds recorded for earlier questions, and this run's own.
      // An earlier run for this same question (the answer before a regenerate) is left out, as is a branch that
      // grew from a later message; a question summarised out of the history is older than all of it.
      const ids = new Set(history.map((message) => message.id))
      const oldest = history.find((message) => message.role !== 'summary')?.id
      const ofBranch = (round: ToolRoundRecord) =>
        round.questionId === answer.messageId
          ? round.runId === runId
          : ids.has(round.questionId) || (oldest !== undefined && round.questionId < oldest)
      let chain = await toolCalls.chain(chainId)

      // Calls cut short by a crash or a lost lease: whether they took effect is unknown, and they are never sent again.
      for (const call of chain.calls.filter((each) => each.status === 'running')) {
        const end: CallEnd = {
          status: 'unknown',
          result: told.unknown,
          resultChars: null,
          error: 'interrupted',
          durationMs: null,
        }
        if (!(await toolCalls.endCall(call.id, end, fence, now))) throw new LostLease()
      }
      const included = new Set(chain.rounds.filter(ofBranch).map((round) => round.round))
      await carryOut(
        answer,
        chain.calls.filter((call) => included.has(call.round)),
        offers,
        history,
        now,
        signal,
      )
      chain = await toolCalls.chain(chainId)
      const rounds = chain.rounds.filter(ofBranch)
      const calls = chain.calls.filter((call) => included.has(call.round))
      const own = rounds.filter((round) => round.runId === runId)
      const resumed = own.map((round) => toolRound(round, calls))
      const resumedUsage = own.flatMap((round) => (round.usage ? [round.usage] : []))
      const hide = [
        ...new Set(chain.calls.flatMap((call) => (call.answerId && ids.has(call.answerId) ? [call.answerId] : []))),
      ]
      // An exact Allow or Deny that decided the call is said by its result; other words reach the model as a turn.
      const decided = chain.calls.find((call) => call.id === asked?.id)?.decidedBy === answer.messageId
      if (decided && question && verdict !== 'other') hide.push(question.id)
      const offered: OfferedTool[] = offers.map(({ modelName, offer }) => ({
        name: modelName,
        description: offer.tool.description || offer.tool.title || offer.tool.name,
        inputSchema: offer.tool.inputSchema,
      }))
      const deadline = (own[0]?.createdAt ?? now) + limits.deadlineMs
      const lastRound = Math.max(0, ...chain.rounds.map((round) => round.round))
      states.set(answer, {
        organizationId: context.organizationId,
        // Nothing offered now is offered in a later round either.
        allowed: offers.length === 0 ? [] : allowed,
        chainId,
        runId,
        offset: lastRound - rounds.length,
        rounds: own.length,
        deadline,
      })

      // One approval at a time, in the order of the chain: the next waits for a person, and the model is not asked.
      const waiting = calls.find((call) => call.status === 'awaiting_approval')
      const plan: ToolPlan = {
        offered,
        rounds: rounds.map((round) => toolRound(round, calls)),
        final: own.length >= limits.maxRounds || now >= deadline,
        ...(rounds[0] && asked ? { question: rounds[0].questionId } : {}),
        hide,
        resumed,
        resumedUsage,
      }
      if (waiting) {
        const ask = approvalBlock(waiting)
        if (waiting.approvalId === null && !(await toolCalls.askApproval(waiting.id, ask.tool_use_id, fence))) {
          throw new LostLease()
        }
        return { ...plan, ask }
      }
      return plan
    },

    async round(answer, { round, text, calls, usage }, signal) {
      const state = states.get(answer)
      if (!state) throw new Error('tool round of an answer that was not prepared')
      const now = clock.now()
      const fence = fenceOf(answer)
      // Read again each round: a tool turned off meanwhile is refused rather than called.
      const offers = await offersOf(state.organizationId, state.allowed)
      const byName = new Map(offers.map((each) => [each.modelName, each.offer]))
      const chainRound = round + state.offset
      const toSend: { id: string; offer: OfferableTool; args: Record<string, unknown> }[] = []
      const records = calls.map((call: ToolCallRequest, position) => {
        const offer = byName.get(call.name)
        const [server = '', tool = call.name] = call.name.includes('__') ? call.name.split('__', 2) : ['', call.name]
        const parsed = parseArguments(call.arguments)
        const base = {
          id: newId(),
          threadId: answer.threadId,
          chainId: state.chainId,
          round: chainRound,
          position,
          runId: state.runId,
          toolUseId: call.id,
          modelName: call.name,
          serverId: offer?.server.id ?? null,
          serverName: offer?.server.name ?? server,
          toolName: offer?.tool.name ?? tool,
          // Oversized arguments are not kept whole either: the record is bounded as the call is.
          arguments:
            Buffer.byteLength(call.arguments) > maxArgumentBytes ? `${call.arguments.slice(0, 1000)}…` : call.arguments,
          approvalId: null,
          decidedBy: null,
          decidedAt: null,
          startedAt: now,
        }
        const ended = (status: 'refused' | 'error', result: string, error: string) =>
          ({ ...base, status, result, resultChars: result.length, error, finishedAt: now, durationMs: 0 }) as const
        if (!offer) return ended('refused', told.notOffered(call.name), 'not offered')
        if ('problem' in parsed) return ended('error', `The call was not made: ${parsed.problem}.`, parsed.problem)
        const open = { result: null, resultChars: null, error: null, finishedAt: null, durationMs: null }
        if (!offer.server.trusted && !offer.tool.readOnly)
          return { ...base, ...open, status: 'awaiting_approval' as const }
        toSend.push({ id: base.id, offer, args: parsed.args })
        return { ...base, ...open, status: 'running' as const }
      })
      const recorded: ToolRoundRecord = {
        chainId: state.chainId,
        round: chainRound,
        runId: state.runId,
        questionId: answer.messageId,
        threadId: answer.threadId,
        text,
        usage: usage ?? null,
        createdAt: now,
      }
      // Lost: the lease's loss stops the generator; the model is told nothing more.
      if (!(await toolCalls.recordRound(recorded, records, fence))) return { reply: { next: 'pause' } }
      state.rounds += 1
      const ends = new Map<string, CallEnd>()
      await pooled(toSend, async (call) => {
        ends.set(call.id, await send(answer, call, state.deadline, signal))
      })

      const waiting = records.find((call) => call.status === 'awaiting_approval')
      if (waiting) {
        const ask = approvalBlock(waiting)
        if (!(await toolCalls.askApproval(waiting.id, ask.tool_use_id, fence))) return { reply: { next: 'pause' } }
        return { reply: { next: 'pause' }, ask }
      }
      const results = records.map((record) => resultOf({ ...record, ...ends.get(record.id) }))
      const spent = state.rounds >= limits.maxRounds || clock.now() >= state.deadline
      const reply: ToolRoundReply = { next: spent ? 'final' : 'continue', results }
      return { reply }
    },
  }
}
