/**
 * `oscova.review`'s answer (the JSON of `oscova-lsp review --format json`, version 1) as the Markdown the
 * pull-request comment holds: a summary table, then per workspace a collapsed section per agent. Pure: the
 * server decides everything, this only lays it out (unit-tested).
 */

import type * as wire from './wire';

// What this module lays out of the report (`wire.ReviewReport`), part by part.
export type ReviewChange = wire.ReviewChange;
export type ReviewAgent = Pick<wire.ReviewAgent, 'id' | 'status' | 'path' | 'causes' | 'changes' | 'request'>;
export type ReviewFinding = wire.ReviewFinding;
export type ReviewTest = wire.ReviewTest;
export type ReviewWorkspace = Pick<wire.ReviewWorkspace, 'root' | 'unchanged' | 'diagnostics' | 'tests'> & {
  notLoaded: Pick<wire.NotLoaded, 'kind' | 'name' | 'source'>[];
  agents: ReviewAgent[];
};
export type Review = Pick<wire.ReviewReport, 'version' | 'base' | 'trusted' | 'exitCode' | 'renderedAt' | 'summary' | 'notes'> & {
  workspaces: ReviewWorkspace[];
};

/** Whether an answer has the shape this module lays out. */
export function isReview(value: unknown): value is Review {
  const v = value as Review;
  return !!v && typeof v === 'object' && v.version === 1 && !!v.base && typeof v.base.commit === 'string'
    && Array.isArray(v.workspaces) && !!v.summary && typeof v.summary === 'object';
}

function fence(text: string, lang = ''): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  return `${ticks}${lang}\n${text}\n${ticks}`;
}

function code(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  const padded = text.startsWith('`') || text.endsWith('`') ? ` ${text} ` : text;
  return `${ticks}${padded.replace(/\|/g, '&#124;')}${ticks}`;
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function details(summary: string, body: string): string[] {
  return ['<details>', `<summary>${summary}</summary>`, '', body, '', '</details>', ''];
}

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;
const TEST_MARKS: Record<string, string> = { passed: '✅ passed', drifted: '❌ drifted', error: '❌ could not run', 'not replayed': '➖ not replayed' };
const MARKS: Record<string, string> = { error: '❌', warning: '⚠️', information: 'ℹ️', hint: '💡' };

export function reviewMarkdown(review: Review): string {
  const s = review.summary;
  const introduced = `${s.diagnosticsIntroduced ?? 0}${s.errorsIntroduced ? ` (${plural(s.errorsIntroduced, 'error')})` : ''}`;
  const out = ['## Oscova prompt review', '',
    `Base ${code(review.base.commit.slice(0, 12))} (${escapeHtml(review.base.chosen)}) → the work tree. Rendered offline at ${escapeHtml(review.renderedAt)} with fixed inputs.`, '',
    '| change | count |', '|---|---:|',
    `| agents changed | ${s.changed ?? 0} |`, `| agents added | ${s.added ?? 0} |`, `| agents removed | ${s.removed ?? 0} |`,
    `| agents unchanged | ${s.unchanged ?? 0} |`, `| diagnostics introduced | ${introduced} |`,
    `| diagnostics fixed | ${s.diagnosticsFixed ?? 0} |`, `| agent tests drifted | ${s.testsDrifted ?? 0} of ${s.testsReplayed ?? 0} replayed |`, ''];
  for (const workspace of review.workspaces) out.push(...workspaceMarkdown(workspace, review.trusted));
  if (review.notes.length) out.push('**Notes**', '', ...review.notes.map((n) => `- ${escapeHtml(n)}`), '');
  return out.join('\n').trimEnd() + '\n';
}

function workspaceMarkdown(w: ReviewWorkspace, trusted: boolean): string[] {
  const out = [`### Workspace ${code(w.root)}`, ''];
  if (w.notLoaded.length && !trusted) {
    out.push(`Not loaded (the workspace's own code): ${w.notLoaded.map((n) => `${n.kind} ${code(n.name)} (${code(n.source)})`).join(', ')}.`, '');
  }
  const changed = w.agents.filter((a) => a.status === 'changed');
  if (changed.length) out.push(`**Changed** (${changed.length})`, '');
  for (const a of changed) {
    const via = a.causes.map((c) => `<code>${escapeHtml(c)}</code>`).join(', ');
    const summary = `<code>${escapeHtml(a.id)}</code>: ${escapeHtml(a.changes.map((c) => c.part).join(', '))}${via ? ` — via ${via}` : ''}`;
    out.push(...details(summary, a.changes.map((c) => fence(c.diff, 'diff')).join('\n\n')));
  }
  for (const [status, title] of [['added', 'Added'], ['removed', 'Removed']] as const) {
    const agents = w.agents.filter((a) => a.status === status);
    if (agents.length) out.push(`**${title}** (${agents.length})`, '');
    for (const a of agents) out.push(...details(`<code>${escapeHtml(a.id)}</code> (<code>${escapeHtml(a.path)}</code>)`, fence(a.request ?? '')));
  }
  out.push(`${plural(w.unchanged, 'agent')} unchanged.`, '');
  for (const [findings, title] of [[w.diagnostics.introduced, 'Diagnostics introduced'], [w.diagnostics.fixed, 'Diagnostics fixed']] as const) {
    if (!findings.length) continue;
    out.push(`**${title}** (${findings.length})`, '');
    out.push(...findings.map((d) => `- ${MARKS[d.severity] ?? ''} ${code(`${d.path}:${d.line}:${d.character}`)} ${d.code}: ${escapeHtml(d.message)}`), '');
  }
  if (w.tests.length) {
    out.push('**Agent tests** of the agents that changed', '', '| test | agent | result |', '|---|---|---|');
    out.push(...w.tests.map((t) => `| ${code(t.name)} | ${code(t.agentId)} | ${TEST_MARKS[t.status] ?? t.status} |`), '');
    for (const t of w.tests) {
      if (t.difference || t.reason) {
        const body = [t.reason ? escapeHtml(t.reason) : '', t.difference ? fence(t.difference, 'diff') : ''].filter(Boolean).join('\n\n');
        out.push(...details(`<code>${escapeHtml(t.name)}</code>: ${t.difference ? 'first difference' : 'why'}`, body));
      }
    }
  }
  return out;
}
