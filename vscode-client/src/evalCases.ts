/**
 * Evaluations as the server lists and runs them (`oscova.listEvals`, `oscova.runEval`), reduced to what the
 * Test Explorer shows: pure, no `vscode` import, so it is unit-tested.
 */

import type * as wire from './wire';

export type EvalCaseInfo = wire.EvalCaseListing;
/** An evaluation file as `oscova.listEvals` lists it. */
export type EvalFileInfo = wire.EvalListing;
/** One case on one model. */
export type EvalCell = wire.EvalCaseResult;
/** `expected` / `actual`: what a drifted output (`equals`, `contains`, `tools`, `tool_called`) was to be and was. */
export type EvalFailure = wire.EvalFailure;
/** What this module reads of `oscova.runEval`'s answer. */
export type EvalResult = Pick<wire.EvalRunResult, 'evals' | 'ok'> & Partial<Pick<wire.EvalRunResult, 'cancelled'>>;

/** The evaluation files of a listing, each with a list of cases (a file that does not validate has none). */
export function evalFilesOf(listed: unknown): EvalFileInfo[] {
  if (!Array.isArray(listed)) return [];
  return listed.filter((e: unknown): e is EvalFileInfo => !!e && typeof e === 'object'
    && typeof (e as { uri?: unknown }).uri === 'string' && typeof (e as { file?: unknown }).file === 'string');
}

/** Every model the listed evaluations name (a run profile each), in order, once. */
export function modelsOf(files: EvalFileInfo[]): string[] {
  return [...new Set(files.flatMap((f) => f.models ?? []))];
}

/** The name of a run in Test Results, which lists each run under it: the models of a "Run on <model>" profile,
 * or the ones each evaluation names (the default profile: `models` empty). */
export function evalRunName(models: string[]): string {
  return models.length ? `Evaluations on ${models.join(', ')}` : 'Evaluations';
}

/** A failure with two sides, for the editor's diff view (`TestMessage.diff`). */
export type EvalDiff = { message: string; expected: string; actual: string };
export type EvalOutcome = { passed: boolean; message: string; durationMs: number; diffs: EvalDiff[] };

/** One case's outcome over the models it ran on: passed when every model met the pass rate; the message
 * names each cell (`default 3/3 ✓, local 1/3 ✗`) and lists the failures below; each failure of a drifted
 * output is a diff too (expected → actual). */
export function evalOutcomeOf(result: EvalResult, caseName: string): EvalOutcome {
  const cells = result.evals.flatMap((e) => e.cases).filter((c) => c.name === caseName);
  if (cells.length === 0) return { passed: false, message: `${caseName}: no run${result.cancelled ? ' (cancelled)' : ''}`, durationMs: 0, diffs: [] };
  const summary = cells.map((c) => `${c.model} ${c.passed}/${c.runs} ${c.ok ? '✓' : '✗'}`).join(', ');
  const described = (model: string, f: EvalFailure) => `[${model}] ${f.assertion}\n  ${f.message}`;
  const diffs = cells.flatMap((c) => c.failures.filter((f) => typeof f.expected === 'string' && typeof f.actual === 'string')
    .map((f) => ({ message: described(c.model, f), expected: f.expected as string, actual: f.actual as string })));
  return {
    passed: cells.every((c) => c.ok) && !result.cancelled,
    message: [summary, ...cells.flatMap((c) => c.failures.map((f) => described(c.model, f)))].join('\n'),
    durationMs: cells.reduce((sum, c) => sum + c.durationMs, 0),
    diffs,
  };
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** The results matrix as a script-free HTML page: a table per evaluation file, a row per case, a column per
 * model, each cell coloured by its pass rate (red 0 → green 1) with the pass count, tokens and time; the
 * failures below. Everything from files and models is escaped. */
export function matrixHtml(cells: { file: string; agent: string; cell: EvalCell }[], cspSource = ''): string {
  const files = [...new Set(cells.map((c) => c.file))];
  const parts: string[] = [];
  for (const file of files) {
    const own = cells.filter((c) => c.file === file);
    const models = [...new Set(own.map((c) => c.cell.model))];
    const cases = [...new Set(own.map((c) => c.cell.name))];
    parts.push(`<h2>${escapeHtml(file)} <small>(agent ${escapeHtml(own[0].agent)})</small></h2>`);
    parts.push(`<table><tr><th>case</th>${models.map((m) => `<th>${escapeHtml(m)}</th>`).join('')}</tr>`);
    for (const name of cases) {
      const row = models.map((model) => {
        const found = own.find((c) => c.cell.name === name && c.cell.model === model)?.cell;
        if (!found) return '<td>—</td>';
        const rate = found.runs ? found.passed / found.runs : 0;
        return `<td style="background:hsl(${Math.round(120 * rate)},65%,82%);color:#222">${found.ok ? '✓' : '✗'} ${found.passed}/${found.runs}`
          + `<br><small>${found.tokens} tok · ${(found.durationMs / 1000).toFixed(1)}s</small></td>`;
      });
      parts.push(`<tr><th>${escapeHtml(name)}</th>${row.join('')}</tr>`);
    }
    parts.push('</table>');
    for (const { cell } of own.filter((c) => !c.cell.ok)) {
      parts.push(`<h3>✗ ${escapeHtml(cell.name)} on ${escapeHtml(cell.model)}</h3><pre>${escapeHtml(
        cell.failures.map((f) => `${f.assertion}\n  ${f.message}`).join('\n'))}</pre>`);
    }
  }
  const csp = `default-src 'none'; style-src 'unsafe-inline'${cspSource ? ' ' + cspSource : ''}`;
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${csp}">`
    + '<style>table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #888;padding:.4em .8em;text-align:left}pre{white-space:pre-wrap}</style>'
    + `</head><body><h1>Oscova evaluation</h1>${parts.join('\n') || '<p>No evaluation has run yet.</p>'}</body></html>`;
}
