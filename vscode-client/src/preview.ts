/** `oscova.previewPrompt`'s result (`wire.PreviewResult`, each value checked) as a Markdown document. Pure. */
import { display } from './runModel';
import { barLines, fields, figure, tokenBar } from './tokenBar';
import type * as wire from './wire';

function fence(text: string, lang = ''): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  return `${ticks}${lang}\n${text}\n${ticks}`;
}

function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if (typeof v.text === 'string') return v.text;
    if (typeof v.content === 'string') return v.content;
  }
  return display(value);
}

/** A value of the answer in a sentence: a string as it is, anything else as JSON. */
function word(value: unknown): string {
  return typeof value === 'string' ? value : display(value);
}

const CACHEABLE_WORDS = { all: 'cacheable', part: 'the cacheable prefix ends inside', none: '' } as const;

/** What the request costs: the figures, the bar of shares in the endpoint's order and its legend; none without figures. */
export function tokensMarkdown(result: unknown): string[] {
  const bar = tokenBar(result);
  if (!bar) return [];
  const tokens = fields<wire.PromptTokens>(fields<wire.PreviewResult>(result).tokens);
  const n = (key: 'instructions' | 'messages' | 'tools') => figure(typeof tokens[key] === 'number' ? tokens[key] : 0, bar.exact);
  const out = [`## Tokens (${bar.exact ? bar.tokenizer : 'estimated'})`, '',
    `${figure(bar.total, bar.exact)} tokens: instructions ${n('instructions')} · messages ${n('messages')} · tools ${n('tools')}`, ''];
  if (bar.cacheable) out.push(`${figure(bar.cacheable.tokens, bar.exact)} cacheable: the prefix ends where ${bar.cacheable.endsAt}`, '');
  const warnings: unknown[] = Array.isArray(tokens.warnings) ? tokens.warnings : [];
  const notes = [tokens.note, ...warnings].filter((x) => typeof x === 'string' && x);
  for (const note of notes) out.push(`> ${word(note)}`, '');
  const caching: unknown[] = Array.isArray(tokens.caching) ? tokens.caching : [];
  for (const advice of caching) { // the checker's OSC102 / OSC108 on this agent's templates, word for word
    const a = fields<wire.CachingAdvice>(advice);
    out.push(`> **${word(a.code)}** \`${word(a.path)}:${word(a.line)}\`: ${word(a.message)}`, '');
  }
  out.push(fence(barLines(bar).join('\n')), '');
  for (const s of bar.segments) {
    const where = CACHEABLE_WORDS[s.cacheable];
    out.push(`- \`${s.fill}\` ${s.label}: ${figure(s.tokens, bar.exact)} (${Math.round(s.share * 100)} %)${where ? `, ${where}` : ''}`);
  }
  out.push('');
  return out;
}

export function previewMarkdown(agentId: string, input: string | undefined, result: unknown): string {
  const r = fields<wire.PreviewResult>(result);
  const out: string[] = [`# Prompt preview: \`${agentId}\``, ''];
  const notLoaded = Array.isArray(r.notLoaded) ? r.notLoaded : [];
  if (r.trusted === false) {
    out.push('> **Restricted Mode**: the workspace is not trusted, so its own tools and providers were not loaded',
      '> (importing them would run their code). Trust the workspace to preview them.', '');
    for (const n of notLoaded) {
      const item = fields<wire.NotLoaded>(n);
      const source = item.source ? ` (\`${word(item.source)}\`)` : '';
      out.push(`- ${word(item.kind ?? 'item')} \`${word(item.name ?? '?')}\`${source}: ${word(item.reason ?? 'not loaded')}`);
    }
    if (notLoaded.length) out.push('');
  }
  if (input) out.push('## Input', '', fence(input), '');
  out.push(...tokensMarkdown(r));
  out.push('## Instructions', '', fence(asText(r.instructions ?? '')), '');
  const messages = Array.isArray(r.messages) ? r.messages : [];
  out.push(`## Messages (${messages.length})`, '');
  for (const m of messages) {
    const msg = fields<wire.ConversationMessage>(m);
    const who = [msg.role, msg.source].filter((x) => typeof x === 'string' && x).join(' · ');
    out.push(`**${who || 'message'}**`, '', fence(asText(m)), '');
  }
  const tools: unknown[] = Array.isArray(r.tools) ? r.tools : [];
  out.push(`## Tools (${tools.length})`, '');
  for (const t of tools) {
    const tool = fields<wire.PreviewTool>(t && typeof t === 'object' ? t : { name: t });
    const name = typeof tool.name === 'string' ? tool.name : display(t);
    out.push(`- \`${name}\`${typeof tool.description === 'string' && tool.description ? ` — ${tool.description.split('\n')[0]}` : ''}`);
  }
  if (tools.length) out.push('');
  // What the run leaves off an agent called as a tool (its memory), one line each.
  const notes = Array.isArray(r.notes) ? r.notes.filter((n): n is string => typeof n === 'string') : [];
  for (const note of notes) out.push(`> note: ${note}`, '');
  const providers = Array.isArray(r.providers) ? r.providers : [];
  out.push(`## Providers (${providers.length})`, '');
  for (const p of providers) {
    if (p && typeof p === 'object') {
      const name = word(fields<wire.PreviewProvider>(p).type ?? '?');
      const rest = Object.entries(p as Record<string, unknown>).filter(([k]) => !['type', 'name'].includes(k))
        .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join('; ');
      out.push(`- \`${name}\`${rest ? ` — ${rest}` : ''}`);
    } else out.push(`- \`${display(p)}\``);
  }
  return out.join('\n') + '\n';
}
