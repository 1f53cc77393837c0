/** `oscova.previewPrompt`'s result as a Markdown document. Pure. */
import { display } from './runModel';

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

export function previewMarkdown(agentId: string, input: string | undefined, result: unknown): string {
  const r = (result && typeof result === 'object' ? result : {}) as Record<string, unknown>;
  const out: string[] = [`# Prompt preview: \`${agentId}\``, ''];
  const notLoaded = Array.isArray(r.notLoaded) ? r.notLoaded : [];
  if (r.trusted === false) {
    out.push('> **Restricted Mode**: the workspace is not trusted, so its own tools and providers were not loaded',
      '> (importing them would run their code). Trust the workspace to preview them.', '');
    for (const n of notLoaded) {
      const item = (n && typeof n === 'object' ? n : {}) as Record<string, unknown>;
      const source = item.source ? ` (\`${word(item.source)}\`)` : '';
      out.push(`- ${word(item.kind ?? 'item')} \`${word(item.name ?? '?')}\`${source}: ${word(item.reason ?? 'not loaded')}`);
    }
    if (notLoaded.length) out.push('');
  }
  if (input) out.push('## Input', '', fence(input), '');
  out.push('## Instructions', '', fence(asText(r.instructions ?? '')), '');
  const messages = Array.isArray(r.messages) ? r.messages : [];
  out.push(`## Messages (${messages.length})`, '');
  for (const m of messages) {
    const msg = (m && typeof m === 'object' ? m : {}) as Record<string, unknown>;
    const who = [msg.role, msg.source].filter((x) => typeof x === 'string' && x).join(' · ');
    out.push(`**${who || 'message'}**`, '', fence(asText(m)), '');
  }
  const tools = Array.isArray(r.tools) ? r.tools : [];
  out.push(`## Tools (${tools.length})`, '');
  for (const t of tools) {
    const tool = (t && typeof t === 'object' ? t : { name: t }) as Record<string, unknown>;
    const name = typeof tool.name === 'string' ? tool.name : display(t);
    out.push(`- \`${name}\`${typeof tool.description === 'string' && tool.description ? ` — ${tool.description.split('\n')[0]}` : ''}`);
  }
  if (tools.length) out.push('');
  const providers = Array.isArray(r.providers) ? r.providers : [];
  out.push(`## Providers (${providers.length})`, '');
  for (const p of providers) {
    if (p && typeof p === 'object') {
      const prov = p as Record<string, unknown>;
      const name = word(prov.type ?? prov.name ?? prov.stateKey ?? '?');
      const rest = Object.entries(prov).filter(([k]) => !['type', 'name'].includes(k))
        .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join('; ');
      out.push(`- \`${name}\`${rest ? ` — ${rest}` : ''}`);
    } else out.push(`- \`${display(p)}\``);
  }
  return out.join('\n') + '\n';
}
