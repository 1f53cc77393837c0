import assert from 'node:assert/strict';
import { test } from 'node:test';
import { casesOf, describeCase, outcomeOf, sidesOfDiff } from '../src/testCases';

const DIFF = `--- recorded
+++ now
@@ -1,4 +1,4 @@
 # request 1
 ## instructions
-You help alice.
+You help alice kindly.
 ## messages
@@ -9,2 +9,3 @@
 user: When is the launch?
+user: And where?
 ## tools
`;

test('a unified diff splits into the recorded side and the side the agent sends now', () => {
  const { expected, actual } = sidesOfDiff(DIFF);
  assert.equal(expected, '# request 1\n## instructions\nYou help alice.\n## messages\n⋯\nuser: When is the launch?\n## tools');
  assert.equal(actual, '# request 1\n## instructions\nYou help alice kindly.\n## messages\n⋯\nuser: When is the launch?\nuser: And where?\n## tools');
});

test('a failed case becomes a diff message naming the agent; passed and updated pass; others error', () => {
  const failed = outcomeOf({ name: 'helper', status: 'failed', agentId: 'helper', difference: DIFF, durationMs: 12 });
  assert.equal(failed.kind, 'failed');
  if (failed.kind !== 'failed') return;
  assert.match(failed.message, /^helper now sends something other than what was recorded:\n--- recorded/);
  assert.ok(failed.actual?.includes('You help alice kindly.'));
  assert.ok(failed.expected?.includes('You help alice.'));
  assert.equal(failed.durationMs, 12);
  assert.deepEqual(outcomeOf({ name: 'a', status: 'passed', durationMs: 3 }), { kind: 'passed', durationMs: 3 });
  assert.equal(outcomeOf({ name: 'a', status: 'updated' }).kind, 'passed');
  assert.deepEqual(outcomeOf({ name: 'a', status: 'error', error: 'No agent definition has the id \'gone\'' }),
    { kind: 'errored', message: 'No agent definition has the id \'gone\'', durationMs: undefined });
  assert.equal(outcomeOf(null).kind, 'errored');
});

test('a drifted tool call inside an agent called as a tool opens as a diff of the two calls', () => {
  const difference = 'the tool call r1 (inside the tool call call_2) differs in the tool-call arguments\n'
    + 'now: read_file {"path": "data/other.txt"}\nrecorded: read_file {"path": "data/notes.txt"}';
  const failed = outcomeOf({ name: 'desk', status: 'failed', agentId: 'helpdesk', difference });
  assert.equal(failed.kind, 'failed');
  if (failed.kind !== 'failed') return;
  assert.equal(failed.expected, 'read_file {"path": "data/notes.txt"}');
  assert.equal(failed.actual, 'read_file {"path": "data/other.txt"}');
});

test('a case whose requests match but whose run now ends otherwise has no sides to compare', () => {
  const failed = outcomeOf({ name: 'a', status: 'failed', agentId: 'a',
    difference: 'the agent sent what was recorded, but the run now ends failed, or with another answer' });
  assert.equal(failed.kind, 'failed');
  if (failed.kind !== 'failed') return;
  assert.equal(failed.expected, undefined);
  assert.equal(failed.actual, undefined);
  assert.match(failed.message, /the run now ends failed/);
});

test('the listing keeps well-formed cases, sorted by name, and describes each by agent and input', () => {
  const cases = casesOf([
    { name: 'zeta', path: '/w/.oscova/tests/zeta.jsonl', uri: 'file:///w/.oscova/tests/zeta.jsonl', root: '/w', agentId: 'helper', input: 'x' },
    { name: 'alpha', path: '/w/.oscova/tests/alpha.jsonl', uri: 'file:///w/.oscova/tests/alpha.jsonl', root: '/w', agentId: 'echo', input: '  many\n words ' + 'y'.repeat(80) },
    { name: 42 },
    null,
  ]);
  assert.deepEqual(cases.map((c) => c.name), ['alpha', 'zeta']);
  assert.equal(describeCase(cases[1]), 'helper · “x”');
  assert.match(describeCase(cases[0]), /^echo · “many words y+…”$/);
  assert.equal(describeCase(cases[0]).length, 'echo · “”'.length + 60);
  assert.deepEqual(casesOf({ not: 'a list' }), []);
});
