/**
 * The Test Explorer's model: the agent tests the server lists (`oscova.listTests`) and the outcome of one
 * replay (`oscova.runTest`), as plain data. Pure (no VS Code), so it is unit-tested.
 */

import type * as wire from './wire';

/** A case as `oscova.listTests` lists it (the editor's answers always carry its `uri`). */
export type TestCaseInfo = Pick<wire.CaseListing, 'name' | 'path' | 'root' | 'agentId' | 'input' | 'error'>
  & Required<Pick<wire.CaseListing, 'uri'>>;

/** One replay, as `oscova.runTest` answers it: what this module reads of it. */
export type TestCaseResult = Pick<wire.CaseRunResult, 'name' | 'status'>
  & Partial<Pick<wire.CaseRunResult, 'uri' | 'agentId' | 'durationMs' | 'difference' | 'error'>>;

export type Outcome =
  | { kind: 'passed'; durationMs?: number }
  /** `expected` / `actual`: the two sides for the editor's diff view, when the difference has two sides. */
  | { kind: 'failed'; message: string; expected?: string; actual?: string; durationMs?: number }
  | { kind: 'errored'; message: string; durationMs?: number };

/** The cases of a `oscova.listTests` answer that are well formed, by name (a bad answer lists nothing). */
export function casesOf(answer: unknown): TestCaseInfo[] {
  if (!Array.isArray(answer)) return [];
  const cases = (answer as unknown[]).filter((c): c is TestCaseInfo => {
    const info = c as Partial<Record<keyof TestCaseInfo, unknown>> | null;
    return !!info && typeof info === 'object' && typeof info.name === 'string' && typeof info.uri === 'string' && typeof info.path === 'string';
  });
  return cases.sort((a, b) => a.name.localeCompare(b.name) || a.uri.localeCompare(b.uri));
}

/** What the test item shows beside its name: the agent it replays, and its input. */
export function describeCase(info: TestCaseInfo): string {
  const input = typeof info.input === 'string' ? info.input.replace(/\s+/g, ' ').trim() : '';
  const shown = input.length > 60 ? `${input.slice(0, 59)}…` : input;
  return [info.agentId ?? '', shown ? `“${shown}”` : ''].filter(Boolean).join(' · ');
}

/**
 * The two sides of a unified diff, hunk by hunk: what was recorded (context and `-` lines) and what the
 * agent sends now (context and `+` lines), so the editor's diff view can show them side by side.
 */
export function sidesOfDiff(diff: string): { expected: string; actual: string } {
  const expected: string[] = [];
  const actual: string[] = [];
  let inHunk = false;
  for (const line of diff.split('\n')) {
    if (line.startsWith('@@')) {
      if (inHunk) { expected.push('⋯'); actual.push('⋯'); }
      inHunk = true;
      continue;
    }
    if (!inHunk || line.startsWith('\\')) continue; // file headers (--- / +++), "\ No newline at end of file"
    if (line.startsWith('-')) expected.push(line.slice(1));
    else if (line.startsWith('+')) actual.push(line.slice(1));
    else {
      const text = line.startsWith(' ') ? line.slice(1) : line;
      expected.push(text);
      actual.push(text);
    }
  }
  while (expected.length && expected[expected.length - 1] === '' && actual[actual.length - 1] === '') {
    expected.pop();
    actual.pop();
  }
  if (!inHunk) return sidesOfCallDifference(diff);
  return { expected: expected.join('\n'), actual: actual.join('\n') };
}

/** A tool call whose arguments differ (`now: name {…}` then `recorded: name {…}`): one line a side. */
function sidesOfCallDifference(difference: string): { expected: string; actual: string } {
  const lines = difference.split('\n');
  const now = lines.find((l) => l.startsWith('now: '));
  const recorded = lines.find((l) => l.startsWith('recorded: '));
  if (now === undefined) return { expected: '', actual: '' };
  return { expected: recorded?.slice('recorded: '.length) ?? '(no recorded call)', actual: now.slice('now: '.length) };
}

/** The outcome of a `oscova.runTest` answer, for `TestRun.passed` / `failed` / `errored`; a drift carries the
 * two sides of the diff view `TestMessage.diff` opens (recorded → now). */
export function outcomeOf(result: TestCaseResult | null | undefined): Outcome {
  if (!result || typeof result !== 'object' || typeof result.status !== 'string') {
    return { kind: 'errored', message: 'the server gave no result for this case' };
  }
  const durationMs = typeof result.durationMs === 'number' ? result.durationMs : undefined;
  if (result.status === 'passed' || result.status === 'updated') return { kind: 'passed', durationMs };
  if (result.status === 'failed') {
    const difference = result.difference ?? '';
    const sides = sidesOfDiff(difference);
    const first = result.error ? `${result.error}\n` : '';
    const message = `${first}${result.agentId ?? 'The agent'} now sends something other than what was recorded:\n${difference}`;
    // Without two sides (the run now ends otherwise) there is nothing to show side by side: a plain message.
    if (!sides.expected && !sides.actual) return { kind: 'failed', message, durationMs };
    return { kind: 'failed', message, ...sides, durationMs };
  }
  return { kind: 'errored', message: result.error ?? `the case could not run (${result.status})`, durationMs };
}
