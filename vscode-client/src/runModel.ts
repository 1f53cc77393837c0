/**
 * The Run view's model: `oscova/runEvent` notifications and the `oscova.runAgent` result reduced into
 * a plain object the webview renders. Pure (no VS Code), so it is unit-tested event by event.
 *
 * The events' fields are the server's (`wire.ts`, generated from its models): a field renamed there fails to
 * compile here. Their values are still checked one by one, for a server of another version.
 */
import type * as wire from './wire';

export type RunStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';

/** An event of a kind this client does not know, or from a server of another version. */
export interface OtherRunEvent {
  runId: string;
  seq?: number;
  kind: string;
  [key: string]: unknown;
}

/** An `oscova/runEvent` notification: one of the server's kinds (told apart by `kind`), or another. */
export type RunEvent = wire.RunEvent | OtherRunEvent;

export interface AnswerItem {
  type: 'answer';
  text: string;
  streaming: boolean;
  /** The observer's `message` for this text arrived (so a later copy is not shown twice). */
  confirmed?: boolean;
}
/** A reasoning model's thinking (`reasoning` events): shown apart from the answer, collapsible. */
export interface ReasoningItem { type: 'reasoning'; text: string; streaming: boolean }
export interface MessageItem { type: 'message'; role: string; source?: string; text: string }
export interface ToolItem {
  type: 'tool';
  callId: string;
  name: string;
  /** Arguments as pretty JSON (or the raw string when not JSON). */
  arguments: string;
  status: 'running' | 'done' | 'error' | 'denied';
  result?: string;
  error?: string;
  /** How long the tool ran (`toolResult`'s `durationMs`). */
  durationMs?: number;
  /** The agent that made the call, when an agent called as a tool made it (the event's `agentId`). */
  agentId?: string;
  /** The tool calls this call's agent made, when the tool is an agent (events whose `within` is this call). */
  calls?: ToolItem[];
}
export type RunItem = AnswerItem | ReasoningItem | MessageItem | ToolItem;

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** Input tokens the endpoint read from its prompt cache, where it reports them (`modelCall`'s `cachedInputTokens`). */
  cachedInputTokens?: number;
  /** Output tokens spent on reasoning (the endpoint's figure, else counted by the server). */
  reasoningTokens?: number;
}

/** What makes an answer other than the model's whole answer, said where it happened (`warning` event):
 * `cutOff` (the token limit), `contentFilter`, `repeatedCall` (the repeated-call guard), `toolChoiceIgnored`. */
export interface Warning {
  reason: string;
  agentId?: string;
  message: string;
}

/** What a provider left out of the prompt on purpose, and why (`notice` event; docs/runtime.md). */
export interface Notice {
  /** The provider's short type name (`PrivateNotesContextProvider`). */
  provider: string;
  /** Its full type name. */
  source?: string;
  /** A sentence for the user; never the left-out text itself. */
  message: string;
}

/** One model call (`modelCall` event): an agent used as a tool reports its own calls too. */
export interface ModelCall {
  agentId?: string;
  model: string;
  usage?: Usage;
  durationMs?: number;
  failed?: boolean;
  /** The prompt tokens the server counted before sending the request, beside the endpoint's own `inputTokens`. */
  predictedInputTokens?: number;
  /** False: `predictedInputTokens` is an estimate. */
  predictionExact?: boolean;
  finishReason?: string;
}

export interface RunState {
  /** Client-side key: the server's runId once known, else a local id. */
  key: string;
  runId?: string;
  agentId: string;
  agentName?: string;
  input: string;
  /** Assembled instructions (from `oscova.previewPrompt`). */
  instructions?: string;
  status: RunStatus;
  startedAt: number;
  endedAt?: number;
  items: RunItem[];
  error?: string;
  transcript?: string;
  lastSeq: number;
  /** Every model call of the run, in the order they ended. */
  modelCalls?: ModelCall[];
  /** The run's total (`completed`'s `usage`: every model call, nested agents' too). */
  usage?: Usage;
  /** What providers left out of the prompt, each provider and message once, in the order they came. */
  notices?: Notice[];
  /** Cut-offs, guards and ignored tool choices, in the order they happened. */
  warnings?: Warning[];
  /** Why a `completed` run's answer is incomplete (cut off, or stopped by a guard): not a plain success. */
  incomplete?: { reason: string; message: string };
}

export const TERMINAL: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled']);

export function isActive(run: RunState): boolean {
  return !TERMINAL.has(run.status);
}

export function durationMs(run: RunState, now: number): number {
  return (run.endedAt ?? now) - run.startedAt;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function newRun(key: string, agentId: string, input: string, now: number): RunState {
  return { key, agentId, input, status: 'pending', startedAt: now, items: [], lastSeq: -1 };
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function usageOf(value: unknown): Usage | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const u = value as Record<string, unknown>;
  const inputTokens = num(u.inputTokens) ?? 0;
  const outputTokens = num(u.outputTokens) ?? 0;
  const cached = num(u.cachedInputTokens);
  const reasoning = num(u.reasoningTokens);
  return { inputTokens, outputTokens, totalTokens: num(u.totalTokens) ?? inputTokens + outputTokens,
    ...(cached !== undefined ? { cachedInputTokens: cached } : {}),
    ...(reasoning !== undefined ? { reasoningTokens: reasoning } : {}) };
}

/** `275 (273 predicted)`: the endpoint's input tokens beside the count made before the request was sent. */
export function formatPredicted(call: ModelCall): string {
  const input = call.usage ? formatInput(call.usage) : '—';
  if (call.predictedInputTokens === undefined) return input;
  return `${input} (${call.predictionExact === false ? '≈ ' : ''}${call.predictedInputTokens} predicted)`;
}

function incompleteOf(value: unknown): { reason: string; message: string } | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const v = value as Record<string, unknown>;
  const message = str(v.message);
  return message ? { reason: str(v.reason) ?? 'incomplete', message } : undefined;
}

/** `23` input tokens, `23 (20 cached)` where the endpoint said how many it read from its cache. */
export function formatInput(usage: Usage): string {
  return usage.cachedInputTokens !== undefined ? `${usage.inputTokens} (${usage.cachedInputTokens} cached)` : String(usage.inputTokens);
}

/** `23 in · 9 out`, `23 in (20 cached) · 9 out` (the terminal summary's words). */
export function formatTokens(usage: Usage): string {
  const cached = usage.cachedInputTokens !== undefined ? ` (${usage.cachedInputTokens} cached)` : '';
  return `${usage.inputTokens} in${cached} · ${usage.outputTokens} out`;
}

/** The totals the Run view shows: tokens of every model call, time spent in model calls and in tools. */
export function callTotals(run: RunState): { modelCalls: number; usage: Usage; modelMs: number; toolCalls: number; toolMs: number } {
  const calls = run.modelCalls ?? [];
  const summed: Usage = calls.reduce((sum, c) => ({
    inputTokens: sum.inputTokens + (c.usage?.inputTokens ?? 0),
    outputTokens: sum.outputTokens + (c.usage?.outputTokens ?? 0),
    totalTokens: sum.totalTokens + (c.usage?.totalTokens ?? 0),
  }), { inputTokens: 0, outputTokens: 0, totalTokens: 0 });
  const reported = calls.filter((c) => c.usage?.cachedInputTokens !== undefined);
  if (reported.length) summed.cachedInputTokens = reported.reduce((sum, c) => sum + (c.usage?.cachedInputTokens ?? 0), 0);
  const tools = run.items.filter((i): i is ToolItem => i.type === 'tool' && typeof i.durationMs === 'number');
  return {
    modelCalls: calls.length,
    usage: run.usage ?? summed,
    modelMs: calls.reduce((sum, c) => sum + (c.durationMs ?? 0), 0),
    toolCalls: tools.length,
    toolMs: tools.reduce((sum, t) => sum + (t.durationMs ?? 0), 0),
  };
}

/** Any JSON-ish value as display text: strings as they are, others as pretty JSON. */
export function display(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') {
    const trimmed = value.trim();
    if ((trimmed.startsWith('{') && trimmed.endsWith('}')) || (trimmed.startsWith('[') && trimmed.endsWith(']'))) {
      try {
        return JSON.stringify(JSON.parse(trimmed), null, 2);
      } catch {
        return value;
      }
    }
    return value;
  }
  // A value JSON cannot write (a BigInt, a cycle; never in a notification) in its own words.
  try {
    // eslint-disable-next-line @typescript-eslint/no-base-to-string
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    // eslint-disable-next-line @typescript-eslint/no-base-to-string
    return String(value);
  }
}

/** A failure as words: the event's `error` may be a string or `{message}`. */
function errorText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { message?: unknown }).message === 'string') {
    return (value as { message: string }).message;
  }
  return value === undefined || value === null ? undefined : display(value);
}

/** `items` with `change` applied to the nested calls of the running tool call `within`: the innermost running
 * call of that id, at any depth (an agent called as a tool may call another). Unchanged when none runs. */
function underCaller<T extends RunItem>(items: T[], within: string, change: (calls: ToolItem[]) => ToolItem[]): T[] {
  for (let n = items.length - 1; n >= 0; n--) {
    const item = items[n];
    if (item?.type !== 'tool' || item.status !== 'running') continue;
    const calls = item.calls ?? [];
    const inner = underCaller(calls, within, change);
    if (inner !== calls) return items.map((i, m) => (m === n ? { ...item, calls: inner } : i));
    if (item.callId === within) return items.map((i, m) => (m === n ? { ...item, calls: change(calls) } : i));
  }
  return items;
}

function closeAnswer(items: RunItem[]): RunItem[] {
  const last = items[items.length - 1];
  if ((last?.type === 'answer' || last?.type === 'reasoning') && last.streaming) {
    return [...items.slice(0, -1), { ...last, streaming: false }];
  }
  return items;
}

function finish(run: RunState, status: RunStatus, now: number, error?: string): RunState {
  if (TERMINAL.has(run.status)) return run;
  return { ...run, status, endedAt: now, error: error ?? run.error, items: closeAnswer(run.items) };
}

/** Applies one `oscova/runEvent`. Duplicates (a seq already applied) and events after the end are ignored. */
export function reduce(run: RunState, event: RunEvent, now: number): RunState {
  if (typeof event.seq === 'number') {
    if (event.seq <= run.lastSeq) return run;
    run = { ...run, lastSeq: event.seq };
  }
  if (TERMINAL.has(run.status)) return run;
  const e = event;
  switch (e.kind) {
    case 'started': {
      return {
        ...run,
        runId: e.runId,
        status: 'running',
        agentId: str(e.agentId) ?? run.agentId,
        agentName: str(e.agentName) ?? run.agentName,
        input: str(e.input) ?? run.input,
        transcript: str(e.transcript) ?? run.transcript,
      };
    }
    case 'delta': {
      const text = str(e.text) ?? '';
      if (!text) return { ...run, status: 'running' };
      const last = run.items[run.items.length - 1];
      if (last?.type === 'answer' && last.streaming) {
        return { ...run, status: 'running', items: [...run.items.slice(0, -1), { ...last, text: last.text + text }] };
      }
      return { ...run, status: 'running', items: [...closeAnswer(run.items), { type: 'answer', text, streaming: true }] };
    }
    case 'reasoning': {
      const text = str(e.text) ?? '';
      if (!text) return { ...run, status: 'running' };
      const last = run.items[run.items.length - 1];
      if (last?.type === 'reasoning' && last.streaming) {
        return { ...run, status: 'running', items: [...run.items.slice(0, -1), { ...last, text: last.text + text }] };
      }
      return { ...run, status: 'running', items: [...closeAnswer(run.items), { type: 'reasoning', text, streaming: true }] };
    }
    case 'message': {
      const role = str(e.role) ?? 'assistant';
      const text = str(e.text) ?? '';
      const items = run.items;
      const last = items[items.length - 1];
      if (role === 'assistant') {
        if (!text) return run; // an assistant turn that only called tools
        // The observer's copy of what was streamed: that segment becomes final, not a second answer.
        const same = items.findIndex((i) => i.type === 'answer' && !i.confirmed && i.text === text);
        if (same >= 0) {
          return { ...run, items: items.map((i, n) => (n === same ? { type: 'answer', text, streaming: false, confirmed: true } : i)) };
        }
        if (last?.type === 'answer' && last.streaming) {
          return { ...run, items: [...items.slice(0, -1), { type: 'answer', text, streaming: false, confirmed: true }] };
        }
        return { ...run, items: [...closeAnswer(items), { type: 'answer', text, streaming: false, confirmed: true }] };
      }
      if (role === 'user' && text === run.input) return run; // the input, shown at the top
      if (role === 'tool' && items.some((i) => i.type === 'tool' && i.result === text)) return run;
      if (!text) return run;
      return { ...run, items: [...closeAnswer(items), { type: 'message', role, source: str(e.source), text }] };
    }
    case 'toolCall': {
      const within = str(e.within);
      if (within !== undefined) {
        const call: ToolItem = { type: 'tool', callId: str(e.callId) ?? '', name: str(e.name) ?? '(tool)', arguments: display(e.arguments),
          status: 'running' };
        const agentId = str(e.agentId);
        if (agentId !== undefined) call.agentId = agentId;
        return { ...run, status: 'running', items: underCaller(run.items, within, (calls) => [...calls, call]) };
      }
      const callId = str(e.callId) ?? `call-${run.items.length}`;
      if (run.items.some((i) => i.type === 'tool' && i.callId === callId)) return run;
      const tool: ToolItem = { type: 'tool', callId, name: str(e.name) ?? '(tool)', arguments: display(e.arguments), status: 'running' };
      return { ...run, status: 'running', items: [...closeAnswer(run.items), tool] };
    }
    case 'modelCall': {
      const call: ModelCall = { model: str(e.responseModel) ?? str(e.model) ?? '(model)' };
      const agentId = str(e.agentId);
      const usage = usageOf(e.usage);
      const durationMs = num(e.durationMs);
      const predicted = num(e.predictedInputTokens);
      const finishReason = str(e.finishReason);
      if (agentId !== undefined) call.agentId = agentId;
      if (usage !== undefined) call.usage = usage;
      if (durationMs !== undefined) call.durationMs = durationMs;
      if (e.failed === true) call.failed = true;
      if (predicted !== undefined) call.predictedInputTokens = predicted;
      if (e.predictionExact === false) call.predictionExact = false;
      if (finishReason !== undefined) call.finishReason = finishReason;
      return { ...run, modelCalls: [...(run.modelCalls ?? []), call] };
    }
    case 'toolResult': {
      const callId = str(e.callId);
      const error = errorText(e.error);
      const durationMs = num(e.durationMs);
      const timed = durationMs === undefined ? {} : { durationMs };
      const ended = (i: ToolItem): ToolItem => {
        if (error !== undefined) return { ...i, status: 'error' as const, error, ...timed };
        // A policy refusal carries `reason`, the setting that refused it (`[host] deny_tools`): shown instead.
        if (e.denied === true) return { ...i, status: 'denied' as const, result: str(e.reason) ?? display(e.result), ...timed };
        return { ...i, status: 'done' as const, result: display(e.result), ...timed };
      };
      const within = str(e.within);
      if (within !== undefined) {
        return { ...run, items: underCaller(run.items, within, (calls) => {
          let at = calls.length - 1;
          while (at >= 0 && !(calls[at]?.callId === callId && calls[at]?.status === 'running')) at--;
          return at < 0 ? calls : calls.map((c, n) => (n === at ? ended(c) : c));
        }) };
      }
      let matched = false;
      const items = run.items.map((i) => {
        if (matched || i.type !== 'tool' || i.callId !== callId) return i;
        matched = true;
        return ended(i);
      });
      if (!matched) {
        items.push({ type: 'tool', callId: callId ?? `call-${run.items.length}`, name: str(e.name) ?? '(tool)', arguments: '',
          status: error !== undefined ? 'error' : 'done', result: error === undefined ? display(e.result) : undefined, error, ...timed });
      }
      return { ...run, items };
    }
    case 'notice': {
      const message = str(e.message);
      const provider = str(e.provider) ?? str(e.source);
      if (!message || !provider) return run;
      const notice: Notice = { provider, source: str(e.source), message };
      if (notice.source === undefined) delete notice.source;
      // The same notice again (the provider asked again within the run) is shown once.
      if (run.notices?.some((n) => n.provider === provider && n.message === message)) return run;
      return { ...run, notices: [...(run.notices ?? []), notice] };
    }
    case 'warning': {
      const message = str(e.message);
      if (!message) return run;
      const warning: Warning = { reason: str(e.reason) ?? 'warning', message };
      const agentId = str(e.agentId);
      if (agentId !== undefined) warning.agentId = agentId;
      return { ...run, warnings: [...(run.warnings ?? []), warning] };
    }
    case 'completed': {
      const finished = finish(run, 'completed', now);
      const usage = usageOf(e.usage);
      const incomplete = incompleteOf(e.incomplete);
      let done: RunState = usage ? { ...finished, usage } : finished;
      if (incomplete) done = { ...done, incomplete };
      const reasoning = str(e.reasoning);
      if (reasoning && !done.items.some((i) => i.type === 'reasoning')) {
        done = { ...done, items: [{ type: 'reasoning', text: reasoning, streaming: false }, ...done.items] };
      }
      const text = str(e.text);
      const withText = text && !done.items.some((i) => i.type === 'answer')
        ? { ...done, items: [...done.items, { type: 'answer' as const, text, streaming: false }] }
        : done;
      return withText;
    }
    case 'failed':
      return finish(run, 'failed', now, errorText(e.error) ?? 'the run failed');
    case 'cancelled':
      return finish(run, 'cancelled', now);
    default:
      return run; // a kind this client does not know yet
  }
}

/** The `oscova.runAgent` result, which also arrives when the server sent no events (or lost some). */
export type RunResult = wire.Fields<wire.RunResult>;

export function applyResult(run: RunState, result: RunResult | null | undefined, now: number): RunState {
  if (!result || typeof result !== 'object') return run;
  let next: RunState = { ...run, runId: run.runId ?? str(result.runId), transcript: str(result.transcript) ?? run.transcript };
  const status = result.status;
  if (status === 'completed' || status === 'failed' || status === 'cancelled') {
    next = finish(next, status, now, status === 'failed' ? errorText(result.error) ?? 'the run failed' : undefined);
  }
  const incomplete = incompleteOf(result.incomplete);
  if (incomplete && status === 'completed' && !next.incomplete) next = { ...next, incomplete };
  if (typeof result.reasoning === 'string' && result.reasoning && !next.items.some((i) => i.type === 'reasoning')) {
    next = { ...next, items: [{ type: 'reasoning', text: result.reasoning, streaming: false }, ...next.items] };
  }
  if (typeof result.text === 'string' && result.text && !next.items.some((i) => i.type === 'answer')) {
    next = { ...next, items: [...next.items, { type: 'answer', text: result.text, streaming: false }] };
  }
  return next;
}

/** A request failure (the server answered with an error, or the connection went away). */
export function applyError(run: RunState, message: string, now: number): RunState {
  return finish(run, 'failed', now, message);
}

/** All runs of the session, newest last; routes events to the right run. */
export class RunStore {
  private runs = new Map<string, RunState>();
  private order: string[] = [];
  /** Runs the client started whose `started` event has not arrived yet, oldest first. */
  private unclaimed: string[] = [];
  private counter = 0;
  constructor(private readonly clock: () => number = Date.now, private readonly limit = 50) {}

  all(): RunState[] {
    return this.order.map((k) => this.runs.get(k)!);
  }

  get(key: string): RunState | undefined {
    return this.runs.get(key);
  }

  latest(): RunState | undefined {
    return this.runs.get(this.order[this.order.length - 1]);
  }

  active(): RunState[] {
    return this.all().filter(isActive);
  }

  /** A run the client is about to start; the next `started` event for its agent claims it. */
  begin(agentId: string, input: string): RunState {
    const key = `local-${++this.counter}`;
    const run = newRun(key, agentId, input, this.clock());
    this.put(run);
    this.unclaimed.push(key);
    return run;
  }

  update(key: string, change: (run: RunState) => RunState): RunState | undefined {
    const run = this.runs.get(key);
    if (!run) return undefined;
    const next = change(run);
    this.runs.set(key, next);
    if (next.runId || TERMINAL.has(next.status)) this.unclaimed = this.unclaimed.filter((k) => k !== key);
    return next;
  }

  /** Routes an event; returns the key of the run it changed. */
  apply(event: RunEvent): string | undefined {
    if (!event || typeof event.runId !== 'string' || typeof event.kind !== 'string') return undefined;
    let key = this.keyOf(event.runId);
    if (!key) {
      const started = event.kind === 'started' ? event : undefined; // which agent: what the run started (not a tool's)
      const agentId = str(started?.agentId);
      const claim = this.unclaimed.find((k) => !agentId || this.runs.get(k)!.agentId === agentId);
      if (claim) {
        key = claim;
        this.unclaimed = this.unclaimed.filter((k) => k !== claim);
        this.runs.set(claim, { ...this.runs.get(claim)!, runId: event.runId });
      } else {
        // A run started elsewhere (a code lens, another client command): shown all the same.
        key = event.runId;
        this.put({ ...newRun(key, agentId ?? '', str(started?.input) ?? '', this.clock()), runId: event.runId });
      }
    }
    const now = this.clock();
    this.runs.set(key, reduce(this.runs.get(key)!, event, now));
    return key;
  }

  keyOf(runId: string): string | undefined {
    for (const [key, run] of this.runs) if (run.runId === runId) return key;
    return undefined;
  }

  private put(run: RunState) {
    this.runs.set(run.key, run);
    this.order.push(run.key);
    while (this.order.length > this.limit) {
      const oldest = this.order.find((k) => !isActive(this.runs.get(k)!));
      if (!oldest) break;
      this.order = this.order.filter((k) => k !== oldest);
      this.runs.delete(oldest);
    }
  }
}
