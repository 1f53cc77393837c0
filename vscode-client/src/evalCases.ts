/**
 * Evaluations as the server lists and runs them (`oscova.listEvals`, `oscova.runEval`), reduced to what the
 * Test Explorer shows: pure, no `vscode` import, so it is unit-tested.
 */

export interface EvalCaseInfo { name: string; line: number }
export interface EvalFileInfo {
  file: string; uri: string; root: string; agent?: string; models?: string[]; repeat?: number;
  passRate?: number; cases?: EvalCaseInfo[]; error?: string;
}
export interface EvalCell {
  name: string; model: string; runs: number; passed: number; passRate: number; ok: boolean;
  failures: { assertion: string; message: string }[]; tokens: number; durationMs: number;
}
export interface EvalResult { evals: { file: string; agent: string; cases: EvalCell[] }[]; ok: boolean; cancelled?: boolean }

/** The evaluation files of a listing, each with a list of cases (a file that does not validate has none). */
export function evalFilesOf(listed: unknown): EvalFileInfo[] {
  if (!Array.isArray(listed)) return [];
  return listed.filter((e): e is EvalFileInfo => !!e && typeof e === 'object' && typeof e.uri === 'string'
    && typeof e.file === 'string');
}

/** Every model the listed evaluations name (a run profile each), in order, once. */
export function modelsOf(files: EvalFileInfo[]): string[] {
  return [...new Set(files.flatMap((f) => f.models ?? []))];
}

export type EvalOutcome = { passed: boolean; message: string; durationMs: number };

/** One case's outcome over the models it ran on: passed when every model met the pass rate; the message
 * names each cell (`default 3/3 ✓, local 1/3 ✗`) and lists the failures below. */
export function evalOutcomeOf(result: EvalResult, caseName: string): EvalOutcome {
  const cells = result.evals.flatMap((e) => e.cases).filter((c) => c.name === caseName);
  if (cells.length === 0) return { passed: false, message: `${caseName}: no run${result.cancelled ? ' (cancelled)' : ''}`, durationMs: 0 };
  const summary = cells.map((c) => `${c.model} ${c.passed}/${c.runs} ${c.ok ? '✓' : '✗'}`).join(', ');
  const failures = cells.flatMap((c) => c.failures.map((f) => `[${c.model}] ${f.assertion}\n  ${f.message}`));
  return {
    passed: cells.every((c) => c.ok) && !result.cancelled,
    message: [summary, ...failures].join('\n'),
    durationMs: cells.reduce((sum, c) => sum + c.durationMs, 0),
  };
}
