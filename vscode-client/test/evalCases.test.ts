import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evalFilesOf, evalOutcomeOf, modelsOf } from '../src/evalCases';

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
  assert.deepEqual(failed, { passed: false, durationMs: 200,
    message: 'default 3/3 ✓, local 1/3 ✗\n[local] contains: "eu"\n  run 2: expected …' });
  assert.equal(evalOutcomeOf({ ok: true, evals: [{ file: 'a', agent: 't', cases: [cell('default', 3, true)] }] }, 'c').passed, true);
  assert.equal(evalOutcomeOf({ ok: true, cancelled: true, evals: [{ file: 'a', agent: 't', cases: [cell('d', 3, true)] }] }, 'c').passed, false);
  assert.match(evalOutcomeOf({ ok: false, evals: [] }, 'c').message, /^c: no run/);
});
