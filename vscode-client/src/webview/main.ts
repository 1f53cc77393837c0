/**
 * The Run view's script (runs inside the webview). It renders the `RunState` the extension posts with
 * DOM APIs and `textContent` only: model output and tool results are never parsed as HTML.
 */
import type { Notice, RunItem, RunState, Warning } from '../runModel';
import { callTotals, durationMs, formatDuration, formatPredicted, formatTokens, isActive } from '../runModel';

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const root = document.getElementById('root')!;
let current: RunState | undefined;
let offset = 0; // extension clock minus ours, so durations tick between updates
const open = new Set<string>(((vscode.getState() as { open?: string[] } | undefined)?.open) ?? []);

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: (Node | string | undefined)[]) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const child of children) if (child !== undefined) node.append(child);
  return node;
}

function details(id: string, summary: Node | string, body: Node, className: string, defaultOpen = false): HTMLDetailsElement {
  const d = el('details', { class: className, 'data-id': id }, el('summary', {}, summary), body);
  d.open = open.has(id) || (defaultOpen && !open.has(`closed:${id}`));
  d.addEventListener('toggle', () => {
    if (d.open) { open.add(id); open.delete(`closed:${id}`); } else { open.delete(id); open.add(`closed:${id}`); }
    vscode.setState({ open: [...open] });
  });
  return d;
}

function statusLabel(run: RunState): string {
  if (run.status === 'completed' && run.incomplete) return 'Incomplete';
  return { pending: 'Starting…', running: 'Running', completed: 'Completed', failed: 'Failed', cancelled: 'Cancelled' }[run.status];
}

function renderItem(run: RunState, item: RunItem, index: number): HTMLElement {
  switch (item.type) {
    case 'answer':
      return el('div', { class: `answer${item.streaming ? ' streaming' : ''}`, 'data-testid': 'answer' }, item.text);
    case 'reasoning':
      // Apart from the answer, collapsible: open while it streams, folded once the answer starts.
      return details(`${run.key}:reasoning:${index}`, item.streaming ? 'Thinking…' : 'Reasoning',
        el('div', { class: 'reasoning-text', 'data-testid': 'reasoning' }, item.text), 'reasoning', item.streaming);
    case 'message':
      return el('div', { class: `message role-${item.role}` },
        el('div', { class: 'label' }, `${item.role}${item.source ? ` · ${item.source}` : ''}`),
        el('div', { class: 'text' }, item.text));
    case 'tool': {
      const body = el('div', { class: 'tool-body' },
        el('div', { class: 'label' }, 'Arguments'), el('pre', { class: 'arguments' }, item.arguments || '{}'));
      if (item.status === 'done') body.append(el('div', { class: 'label' }, 'Result'), el('pre', { class: 'result' }, item.result ?? ''));
      if (item.status === 'error') body.append(el('div', { class: 'label' }, 'Error'), el('pre', { class: 'result error' }, item.error ?? ''));
      if (item.status === 'denied') body.append(el('div', { class: 'label' }, 'Denied'), el('pre', { class: 'result error' }, item.result || 'The call was not approved.'));
      if (item.calls?.length) {  // an agent called as a tool: its own tool calls, under this one
        body.append(el('div', { class: 'nested-calls', 'data-testid': 'nested-calls' },
          ...item.calls.map((call, n) => renderItem(run, call, n))));
      }
      const icon = { running: '⏳', error: '✖', denied: '⊘', done: '✔' }[item.status];
      const summary = el('span', {}, el('span', { class: `tool-status ${item.status}` }, icon), ' ',
        item.agentId !== undefined ? el('span', { class: 'tool-agent' }, `${item.agentId} → `) : undefined, el('code', {}, item.name),
        item.durationMs !== undefined ? el('span', { class: 'call-time', 'data-testid': 'tool-time' }, ` · ${formatDuration(item.durationMs)}`) : undefined);
      return details(`${run.key}:tool:${item.agentId ?? ''}:${item.callId}:${index}`, summary, body, `tool ${item.status}`, true);
    }
  }
}

/** What providers left out of the prompt and why (`notice` events): beside the instructions they concern. */
function renderNotices(notices: Notice[] | undefined): HTMLElement | undefined {
  if (!notices?.length) return undefined;
  return el('section', { class: 'notices', 'data-testid': 'notices' },
    el('div', { class: 'label' }, 'Left out of the prompt'),
    ...notices.map((n) => el('div', { class: 'notice', 'data-testid': 'notice', title: n.source ?? n.provider },
      el('code', {}, n.provider), `: ${n.message}`)));
}

/** Cut-offs, guards and ignored tool choices, where they happened (`warning` events). */
function renderWarnings(warnings: Warning[] | undefined): HTMLElement | undefined {
  if (!warnings?.length) return undefined;
  return el('section', { class: 'warnings', 'data-testid': 'warnings' },
    ...warnings.map((w) => el('div', { class: 'warning', 'data-testid': 'warning', title: w.reason }, `⚠ ${w.message}`)));
}

/** Every model call with its tokens and time, and the totals (tools included): what the run cost. */
function renderCalls(run: RunState): HTMLElement | undefined {
  const calls = run.modelCalls ?? [];
  if (!calls.length) return undefined;
  const totals = callTotals(run);
  const rows = calls.map((c) => el('tr', {},
    el('td', {}, c.agentId ?? ''), el('td', {}, el('code', {}, c.model)),
    el('td', { class: 'num', 'data-testid': 'call-input' }, formatPredicted(c)),
    el('td', { class: 'num' }, c.usage ? String(c.usage.outputTokens)
      + (c.usage.reasoningTokens !== undefined ? ` (${c.usage.reasoningTokens} reasoning)` : '') : '—'),
    el('td', { class: 'num' }, c.durationMs !== undefined ? formatDuration(c.durationMs) : '—')));
  const table = el('table', { class: 'calls', 'data-testid': 'model-calls' },
    el('thead', {}, el('tr', {}, el('th', {}, 'Agent'), el('th', {}, 'Model'), el('th', { class: 'num' }, 'In'),
      el('th', { class: 'num' }, 'Out'), el('th', { class: 'num' }, 'Time'))),
    el('tbody', {}, ...rows));
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  const summary = `${plural(totals.modelCalls, 'model call')} · ${formatTokens(totals.usage)} · ${formatDuration(totals.modelMs)}`
    + (totals.toolCalls ? `; ${plural(totals.toolCalls, 'tool call')} · ${formatDuration(totals.toolMs)}` : '');
  return details(`${run.key}:calls`, el('span', { 'data-testid': 'calls-summary' }, summary), table, 'calls-section');
}

function render() {
  const run = current;
  root.replaceChildren();
  if (!run) {
    root.append(el('p', { class: 'empty' }, 'No run yet. Use “Oscova: Run Agent…” or the Run agent code lens.'));
    return;
  }
  const now = Date.now() + offset;
  const header = el('header', {},
    el('h1', {}, run.agentName ? `${run.agentName} ` : '', el('code', {}, run.agentId)),
    el('span', { class: `status ${run.status}${run.incomplete ? ' incomplete' : ''}`, 'data-testid': 'status' }, statusLabel(run)),
    el('span', { class: 'duration', 'data-testid': 'duration' }, formatDuration(durationMs(run, now))));
  const tokens = run.modelCalls?.length ? callTotals(run).usage.totalTokens : undefined;
  if (tokens !== undefined) header.append(el('span', { class: 'tokens', 'data-testid': 'tokens' }, `${tokens} tokens`));
  if (isActive(run)) {
    const cancel = el('button', { type: 'button', 'data-testid': 'cancel' }, 'Cancel');
    cancel.addEventListener('click', () => vscode.postMessage({ type: 'cancel', key: run.key }));
    header.append(cancel);
  } else if (run.transcript) {
    const transcript = el('button', { type: 'button', class: 'secondary' }, 'Open transcript');
    transcript.addEventListener('click', () => vscode.postMessage({ type: 'openTranscript', key: run.key }));
    header.append(transcript);
    const compare = el('button', { type: 'button', class: 'secondary', 'data-testid': 'compare' }, 'Compare with previous run');
    compare.addEventListener('click', () => vscode.postMessage({ type: 'compare', key: run.key }));
    header.append(compare);
    if (run.status === 'completed') {
      const save = el('button', { type: 'button', class: 'secondary', 'data-testid': 'save-case' }, 'Save as test case');
      save.addEventListener('click', () => vscode.postMessage({ type: 'saveTestCase', key: run.key }));
      header.append(save);
    }
  }
  root.append(header);
  root.append(el('section', { class: 'input' }, el('div', { class: 'label' }, 'Input'), el('div', { class: 'text', 'data-testid': 'input' }, run.input)));
  root.append(details(`${run.key}:instructions`, 'Instructions',
    el('pre', { class: 'instructions' }, run.instructions ?? (isActive(run) ? 'Assembling…' : 'Not available')), 'instructions'));
  const notices = renderNotices(run.notices);
  if (notices) root.append(notices);
  const timeline = el('section', { class: 'timeline', 'data-testid': 'timeline' });
  run.items.forEach((item, i) => timeline.append(renderItem(run, item, i)));
  if (!run.items.length && isActive(run)) timeline.append(el('div', { class: 'waiting' }, 'Waiting for the model…'));
  root.append(timeline);
  const warnings = renderWarnings(run.warnings);
  if (warnings) root.append(warnings);
  if (run.incomplete) root.append(el('div', { class: 'incomplete', role: 'alert', 'data-testid': 'incomplete' }, `Incomplete: ${run.incomplete.message}`));
  const calls = renderCalls(run);
  if (calls) root.append(calls);
  if (run.error) root.append(el('div', { class: 'error', role: 'alert', 'data-testid': 'error' }, run.error));
}

window.addEventListener('message', (event: MessageEvent) => {
  const message = event.data as { type?: string; run?: RunState; now?: number };
  if (message?.type === 'state') {
    current = message.run;
    if (typeof message.now === 'number') offset = message.now - Date.now();
    render();
  }
});
setInterval(() => { if (current && isActive(current)) { const d = root.querySelector('.duration'); if (d) d.textContent = formatDuration(durationMs(current, Date.now() + offset)); } }, 250);
render();
vscode.postMessage({ type: 'ready' });
