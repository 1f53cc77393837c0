import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evalFilesOf, evalOutcomeOf, evalRunName, matrixHtml, modelsOf } from '../src/evalCases';

const LISTED = [
  { file: '/ws/a.eval.yaml', uri: 'file:///ws/a.eval.yaml', root: '/ws', agent: 'triage', models: ['default', 'local'], cases: [{ name: 'c', line: 3 }] },
  { file: '/ws/b.eval.yaml', uri: 'file:///ws/b.eval.yaml', root: '/ws', error: 'missing required key `agent`' },
  { uri: 42 },
];

test('the listing keeps well-formed entries and names each model once', () => {
  const files = evalFilesOf(LISTED);
  assert.deepEqual(files.map((f) => f.file), ['/ws/a.eval.yaml', '/ws/b.eval.yaml']);
  assert.deepEqual(modelsOf([...files, { ...files[0] }]), ['default', 'local']);
  assert.deepEqual(evalFilesOf({ not: 'a list' }), []);
});

test('a case passes only when every model met its pass rate, and its failures are listed by model', () => {
  const cell = (model: string, passed: number, ok: boolean, failures: { assertion: string; message: string }[] = []) =>
    ({ name: 'c', model, runs: 3, passed, passRate: passed / 3, ok, failures, tokens: 10, durationMs: 100 });
  const failed = evalOutcomeOf({ ok: false, evals: [{ file: 'a', agent: 't', cases: [
    cell('default', 3, true), cell('local', 1, false, [{ assertion: 'contains: "eu"', message: 'run 2: expected …' }])] }] }, 'c');
  assert.deepEqual(failed, { passed: false, durationMs: 200, diffs: [],
    message: 'default 3/3 ✓, local 1/3 ✗\n[local] contains: "eu"\n  run 2: expected …' });
  assert.equal(evalOutcomeOf({ ok: true, evals: [{ file: 'a', agent: 't', cases: [cell('default', 3, true)] }] }, 'c').passed, true);
  assert.equal(evalOutcomeOf({ ok: true, cancelled: true, evals: [{ file: 'a', agent: 't', cases: [cell('d', 3, true)] }] }, 'c').passed, false);
  assert.match(evalOutcomeOf({ ok: false, evals: [] }, 'c').message, /^c: no run/);
});

test('a drifted output is a diff of what was expected and what came; a failure without two sides is not', () => {
  const failures = [
    { assertion: 'equals: "eu-east"', message: 'run 1: expected the answer "eu-east"; the answer was "eu-west"', expected: 'eu-east', actual: 'eu-west' },
    { assertion: 'regex: "east"', message: 'run 1: expected the answer to match /east/' },
    { assertion: 'tools: {…}', message: 'run 2: tool calls (exact) differ', expected: 'read_file', actual: 'read_file\ncurrent_datetime' },
    { assertion: 'contains: "x"', message: 'run 3: …', expected: 'x', actual: 42 as unknown as string },
  ];
  const outcome = evalOutcomeOf({ ok: false, evals: [{ file: 'a', agent: 't', cases: [
    { name: 'c', model: 'local', runs: 3, passed: 0, passRate: 0, ok: false, failures, tokens: 0, durationMs: 0 }] }] }, 'c');
  assert.deepEqual(outcome.diffs, [
    { message: '[local] equals: "eu-east"\n  run 1: expected the answer "eu-east"; the answer was "eu-west"', expected: 'eu-east', actual: 'eu-west' },
    { message: '[local] tools: {…}\n  run 2: tool calls (exact) differ', expected: 'read_file', actual: 'read_file\ncurrent_datetime' },
  ]);
  assert.equal(outcome.message.split('\n[local] ').length, 5); // the summary still lists every failure
});

test('the results matrix colours each cell by its pass rate and escapes what files and models wrote', () => {
  const cell = (name: string, model: string, passed: number, ok: boolean) => ({ name, model, runs: 2, passed,
    passRate: passed / 2, ok, tokens: 40, durationMs: 1500,
    failures: ok ? [] : [{ assertion: 'contains: "x"', message: 'run 1: the answer was "<img src=x onerror=alert(1)>"' }] });
  const page = matrixHtml([
    { file: 'evals/<b>.eval.yaml', agent: 'triage', cell: cell('ok-case', 'default', 2, true) },
    { file: 'evals/<b>.eval.yaml', agent: 'triage', cell: cell('ok-case', 'local', 1, false) },
    { file: 'evals/<b>.eval.yaml', agent: 'triage', cell: cell('bad-case', 'local', 0, false) },
  ]);
  assert.match(page, /<tr><th>case<\/th><th>default<\/th><th>local<\/th><\/tr>/);
  assert.ok(page.includes('background:hsl(120,65%,82%)') && page.includes('background:hsl(60,65%,82%)') && page.includes('background:hsl(0,65%,82%)'));
  assert.ok(page.includes('<tr><th>bad-case</th><td>—</td>'));
  assert.ok(!page.includes('<img') && !page.includes('<b>') && page.includes('&lt;img src=x onerror=alert(1)&gt;'));
  assert.ok(page.includes("default-src 'none'") && !page.includes('<script'));
});

test('a run is named by the models it runs on, so that Test Results tells the runs of one profile from another', () => {
  assert.equal(evalRunName([]), 'Evaluations');
  assert.equal(evalRunName(['local']), 'Evaluations on local');
  assert.equal(evalRunName(['default', 'local']), 'Evaluations on default, local');
});
