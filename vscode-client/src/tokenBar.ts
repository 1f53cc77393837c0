/**
 * The preview's `tokens` (`oscova.previewPrompt`: `{total, instructions, messages, tools, byProvider, exact,
 * tokenizer, cacheable}`, each tool's `tokens`) as a bar of shares, in the order the endpoint reads the request:
 * each tool, the tool list's framing, the system message's framing, each provider's instructions, each
 * provider's messages, the input and history, the reply's priming; with the column where the cacheable prefix
 * ends. Pure, so the segments are unit-tested; `preview.ts` draws them.
 */
import type * as wire from './wire';

export type SegmentKind = 'tool' | 'instructions' | 'messages' | 'format';

export interface BarSegment {
  label: string;
  kind: SegmentKind;
  tokens: number;
  /** Its part of the total, 0..1. */
  share: number;
  /** Tokens of the request before it. */
  start: number;
  /** Columns it takes in the bar (at least one). */
  columns: number;
  /** Whether it lies in the cacheable prefix: all of it, part of it (the prefix ends inside), or none. */
  cacheable: 'all' | 'part' | 'none';
  /** The character that draws it: neighbours never share one (four, in turn). */
  fill: string;
}

export interface TokenBar {
  total: number;
  exact: boolean;
  tokenizer: string;
  segments: BarSegment[];
  /** The cacheable prefix: its tokens, why it ends there, and the bar's column where it ends. */
  cacheable?: { tokens: number; endsAt: string; column: number };
}

export const BAR_WIDTH = 60;
const FILLS = ['█', '▓', '▒', '░'];

type Part = Omit<BarSegment, 'share' | 'start' | 'columns' | 'cacheable' | 'fill'>;

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}

/** An object of the answer read as message `T` (`wire.ts`): its fields by their names, each value still to check. */
export function fields<T>(value: unknown): wire.Fields<T> {
  return value && typeof value === 'object' && !Array.isArray(value) ? value : {};
}

function list<T>(value: unknown): wire.Fields<T>[] {
  return Array.isArray(value) ? value.map((item) => fields<T>(item)) : [];
}

/** The request's parts in the endpoint's order; what the providers and tools do not account for is framing. */
function parts(tokens: wire.Fields<wire.PromptTokens>, tools: wire.Fields<wire.PreviewTool>[]): Part[] {
  const providers = list<wire.ProviderTokens>(tokens.byProvider);
  const sum = (key: 'instructions' | 'messages') => providers.reduce((n, p) => n + count(p[key]), 0);
  const perTool: Part[] = tools.filter((t) => count(t.tokens) > 0)
    .map((t) => ({ label: `tool ${typeof t.name === 'string' ? t.name : '?'}`, kind: 'tool', tokens: count(t.tokens) }));
  const toolTotal = count(tokens.tools);
  const toolsNamed = perTool.reduce((n, t) => n + t.tokens, 0);
  const found: Part[] = [
    ...perTool,
    { label: 'tool list framing', kind: 'format', tokens: Math.max(0, toolTotal - toolsNamed) },
    { label: 'system message framing', kind: 'format', tokens: Math.max(0, count(tokens.instructions) - sum('instructions')) },
    ...providers.map((p): Part => ({ label: `${String(p.type)} instructions`, kind: 'instructions', tokens: count(p.instructions) })),
    ...providers.map((p): Part => ({ label: `${String(p.type)} messages`, kind: 'messages', tokens: count(p.messages) })),
    { label: 'input and history', kind: 'format', tokens: Math.max(0, count(tokens.messages) - sum('messages')) },
  ];
  const named = toolTotal + count(tokens.instructions) + count(tokens.messages);
  found.push({ label: 'reply priming', kind: 'format', tokens: Math.max(0, count(tokens.total) - named) });
  return found.filter((p) => p.tokens > 0);
}

/** The bar of a preview result (`oscova.previewPrompt`'s answer), or undefined when it has no token figures. */
export function tokenBar(result: unknown, width = BAR_WIDTH): TokenBar | undefined {
  const r = fields<wire.PreviewResult>(result);
  const tokens = fields<wire.PromptTokens>(r.tokens);
  const total = count(tokens.total);
  if (!total) return undefined;
  const prefix = fields<wire.Cacheable>(tokens.cacheable);
  const cut = typeof prefix.tokens === 'number' ? Math.min(count(prefix.tokens), total) : undefined;
  const segments: BarSegment[] = [];
  let start = 0;
  let column = 0;
  let cutColumn: number | undefined;
  for (const part of parts(tokens, list<wire.PreviewTool>(r.tools))) {
    const columns = Math.max(1, Math.round(width * part.tokens / total));
    const end = start + part.tokens;
    const cacheable = cut === undefined || cut <= start ? 'none' : cut >= end ? 'all' : 'part';
    if (cut !== undefined && cutColumn === undefined && cut < end) {
      cutColumn = column + Math.round(columns * Math.max(0, cut - start) / part.tokens);
    }
    const fill = FILLS[segments.length % FILLS.length];
    segments.push({ ...part, share: part.tokens / total, start, columns, cacheable, fill });
    start = end;
    column += columns;
  }
  const bar: TokenBar = { total, exact: tokens.exact === true, tokenizer: typeof tokens.tokenizer === 'string' ? tokens.tokenizer : 'estimate', segments };
  if (cut !== undefined) {
    bar.cacheable = { tokens: cut, endsAt: typeof prefix.endsAt === 'string' ? prefix.endsAt : '', column: cutColumn ?? column };
  }
  return bar;
}

/** `1,240`, or `≈ 1,240` for an estimate (the server's `figure`). */
export function figure(tokens: number, exact: boolean): string {
  const text = tokens.toLocaleString('en-US');
  return exact ? text : `≈ ${text}`;
}

/** The bar drawn in text, and under it a bracket over the cacheable prefix that ends where the prefix does. */
export function barLines(bar: TokenBar): string[] {
  const lines = [bar.segments.map((s) => s.fill.repeat(s.columns)).join('')];
  const prefix = bar.cacheable;
  if (prefix) {
    const words = `${figure(prefix.tokens, bar.exact)} of ${figure(bar.total, bar.exact)} tokens cacheable`;
    lines.push(prefix.column > 0 ? `${'─'.repeat(prefix.column - 1)}┘ ${words}` : `no cacheable prefix: ${words}`);
  }
  return lines;
}
