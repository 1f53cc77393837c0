import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyError, applyResult, callTotals, formatDuration, newRun, reduce, RunStore, type RunEvent, type RunState } from '../src/runModel';

const ev = (seq: number, kind: string, fields: Record<string, unknown> = {}): RunEvent => ({ runId: 'r1', seq, kind, ...fields });

function play(events: RunEvent[], start: RunState = newRun('k', 'writer', 'hello', 1000)): RunState {
  return events.reduce((run, e, i) => reduce(run, e, 2000 + i * 100), start);
}

test('a streamed run with a tool call becomes input, tool item with result, then the final answer', () => {
  const run = play([
    ev(1, 'started', { agentId: 'writer', agentName: 'Writer', input: 'hello', transcript: '.oscova/runs/r1.jsonl' }),
    ev(2, 'message', { role: 'user', source: 'external', text: 'hello' }),
    ev(3, 'delta', { text: 'Let me ' }),
    ev(4, 'delta', { text: 'check.' }),
    ev(5, 'toolCall', { callId: 'c1', name: 'current_datetime', arguments: { tz: 'UTC' } }),
    ev(6, 'message', { role: 'assistant', source: 'external', text: 'Let me check.', toolCalls: [{ callId: 'c1' }] }),
    ev(7, 'toolResult', { callId: 'c1', name: 'current_datetime', result: '2025-01-01T00:00:00Z' }),
    ev(8, 'message', { role: 'tool', source: 'external', text: '' }),
    ev(9, 'delta', { text: 'It is ' }),
    ev(10, 'delta', { text: 'midnight.' }),
    ev(11, 'message', { role: 'assistant', source: 'external', text: 'It is midnight.' }),
    ev(12, 'completed', { text: 'Let me check.It is midnight.', usage: { totalTokens: 9 } }),
  ]);
  assert.equal(run.status, 'completed');
  assert.equal(run.agentName, 'Writer');
  assert.equal(run.runId, 'r1');
  assert.equal(run.transcript, '.oscova/runs/r1.jsonl');
  assert.equal(run.endedAt, 2000 + 11 * 100);
  assert.deepEqual(run.items.map((i) => i.type), ['answer', 'tool', 'answer']);
  assert.deepEqual(run.items[0], { type: 'answer', text: 'Let me check.', streaming: false, confirmed: true });
  assert.deepEqual(run.items[1], { type: 'tool', callId: 'c1', name: 'current_datetime', arguments: '{\n  "tz": "UTC"\n}', status: 'done', result: '2025-01-01T00:00:00Z' });
  assert.deepEqual(run.items[2], { type: 'answer', text: 'It is midnight.', streaming: false, confirmed: true });
});

test('deltas stream into one open answer segment', () => {
  const run = play([ev(1, 'started'), ev(2, 'delta', { text: 'a' }), ev(3, 'delta', { text: 'b' })]);
  assert.equal(run.status, 'running');
  assert.deepEqual(run.items, [{ type: 'answer', text: 'ab', streaming: true }]);
});

test('duplicate and stale seq numbers are ignored', () => {
  const run = play([ev(1, 'started'), ev(2, 'delta', { text: 'a' }), ev(2, 'delta', { text: 'a' }), ev(1, 'delta', { text: 'x' })]);
  assert.deepEqual(run.items, [{ type: 'answer', text: 'a', streaming: true }]);
});

test('events after the end do not change the run', () => {
  const run = play([ev(1, 'started'), ev(2, 'cancelled', { text: '' }), ev(3, 'delta', { text: 'late' }), ev(4, 'completed')]);
  assert.equal(run.status, 'cancelled');
  assert.deepEqual(run.items, []);
});

test('a failure keeps its words; an error object gives its message', () => {
  assert.equal(play([ev(1, 'started'), ev(2, 'failed', { error: 'OPENAI_API_KEY is not set' })]).error, 'OPENAI_API_KEY is not set');
  assert.equal(play([ev(1, 'started'), ev(2, 'failed', { error: { message: 'endpoint unreachable' } })]).error, 'endpoint unreachable');
  const closed = play([ev(1, 'started'), ev(2, 'delta', { text: 'par' }), ev(3, 'failed', { error: 'model error' })]);
  assert.equal(closed.status, 'failed');
  assert.deepEqual(closed.items, [{ type: 'answer', text: 'par', streaming: false }]);
});

test('tool errors and denials are shown as such', () => {
  const run = play([
    ev(1, 'toolCall', { callId: 'a', name: 'read_file', arguments: '{"path": "x"}' }),
    ev(2, 'toolCall', { callId: 'b', name: 'write_file', arguments: {} }),
    ev(3, 'toolResult', { callId: 'a', error: 'PermissionError: outside the workspace' }),
    ev(4, 'toolResult', { callId: 'b', result: 'denied', denied: true }),
  ]);
  assert.equal(run.items[0].type === 'tool' && run.items[0].arguments, '{\n  "path": "x"\n}');
  assert.equal(run.items[0].type === 'tool' && run.items[0].status, 'error');
  assert.equal(run.items[0].type === 'tool' && run.items[0].error, 'PermissionError: outside the workspace');
  assert.equal(run.items[1].type === 'tool' && run.items[1].status, 'denied');
});

test('a tool the host policy refused shows which setting refused it', () => {
  const run = play([
    ev(1, 'toolCall', { callId: 't', name: 'todo_write', arguments: {} }),
    ev(2, 'toolResult', { callId: 't', result: "Denied: the host's policy does not allow the tool todo_write.",
      denied: true, reason: '`[host] deny_tools` in oscova.toml lists it' }),
  ]);
  assert.equal(run.items[0].type === 'tool' && run.items[0].status, 'denied');
  assert.equal(run.items[0].type === 'tool' && run.items[0].result, '`[host] deny_tools` in oscova.toml lists it');
});

test('provider messages other than the input are listed; the input is not repeated', () => {
  const run = play([
    ev(1, 'message', { role: 'user', source: 'external', text: 'hello' }),
    ev(2, 'message', { role: 'user', source: 'TodoListContextProvider', text: 'Your todo list is empty.' }),
  ]);
  assert.deepEqual(run.items, [{ type: 'message', role: 'user', source: 'TodoListContextProvider', text: 'Your todo list is empty.' }]);
});

test('unknown kinds are ignored', () => {
  const start = newRun('k', 'a', 'i', 0);
  assert.equal(reduce(start, ev(1, 'somethingNew'), 5).items.length, 0);
});

test('the command result completes a run whose events never came, and adds the text', () => {
  const run = applyResult(newRun('k', 'a', 'i', 0), { runId: 'r9', status: 'completed', text: 'done', transcript: '/t.jsonl' }, 50);
  assert.equal(run.status, 'completed');
  assert.equal(run.runId, 'r9');
  assert.equal(run.transcript, '/t.jsonl');
  assert.deepEqual(run.items, [{ type: 'answer', text: 'done', streaming: false }]);
  assert.equal(run.endedAt, 50);
  const failed = applyResult(newRun('k', 'a', 'i', 0), { status: 'failed', error: 'no endpoint configured' }, 9);
  assert.equal(failed.error, 'no endpoint configured');
  // A result after the events changes nothing that the events said.
  const streamed = play([ev(1, 'started'), ev(2, 'delta', { text: 'x' }), ev(3, 'completed', { text: 'x' })]);
  assert.deepEqual(applyResult(streamed, { status: 'completed', text: 'x' }, 99_999).items, streamed.items);
  assert.equal(applyResult(streamed, { status: 'completed' }, 99_999).endedAt, streamed.endedAt);
});

test('a request error fails the run', () => {
  assert.equal(applyError(newRun('k', 'a', 'i', 0), 'connection closed', 3).error, 'connection closed');
});

test('the store routes events to the run the client began, by agent, and adopts runs started elsewhere', () => {
  let now = 0;
  const store = new RunStore(() => ++now);
  const a = store.begin('writer', 'one');
  const b = store.begin('triage', 'two');
  assert.equal(store.apply({ runId: 'rb', seq: 1, kind: 'started', agentId: 'triage' }), b.key);
  assert.equal(store.apply({ runId: 'ra', seq: 1, kind: 'started', agentId: 'writer' }), a.key);
  assert.equal(store.apply({ runId: 'ra', seq: 2, kind: 'delta', text: 'hi' }), a.key);
  assert.equal(store.get(a.key)!.items.length, 1);
  assert.equal(store.get(b.key)!.items.length, 0);
  const other = store.apply({ runId: 'rx', seq: 1, kind: 'started', agentId: 'lens', input: 'from a lens' });
  assert.equal(other, 'rx');
  assert.equal(store.get('rx')!.input, 'from a lens');
  assert.equal(store.active().length, 3);
  store.apply({ runId: 'rx', seq: 2, kind: 'completed' });
  assert.deepEqual(store.active().map((r) => r.agentId), ['writer', 'triage']);
  assert.equal(store.latest()!.key, 'rx');
  assert.equal(store.apply({ kind: 'delta' } as unknown as RunEvent), undefined);
});

test('the store forgets the oldest finished runs past its limit, never active ones', () => {
  const store = new RunStore(() => 0, 2);
  const first = store.begin('a', '');
  store.begin('b', '');
  store.begin('c', '');
  assert.equal(store.all().length, 3); // all active: nothing dropped
  store.update(first.key, (r) => applyError(r, 'x', 1));
  store.begin('d', '');
  assert.deepEqual(store.all().map((r) => r.agentId), ['b', 'c', 'd']);
});

test('durations read naturally', () => {
  assert.equal(formatDuration(420), '420 ms');
  assert.equal(formatDuration(1530), '1.5 s');
  assert.equal(formatDuration(125_000), '2 min 5 s');
});

test('a notice says what a provider left out, beside the timeline, once per provider and message', () => {
  const message = 'The private notes were left out of the prompt: it is a symlink that leads outside the user\'s own notes folder';
  const source = 'oscova_runtime.providers.private_notes.PrivateNotesContextProvider';
  const run = play([
    ev(1, 'started'),
    ev(2, 'notice', { source, provider: 'PrivateNotesContextProvider', message }),
    ev(3, 'delta', { text: 'Hel' }),
    ev(4, 'notice', { source, provider: 'PrivateNotesContextProvider', message }),
    ev(5, 'notice', { source: 'x.Other', message: 'Other left out.' }),
    ev(6, 'delta', { text: 'lo' }),
    ev(7, 'completed'),
  ]);
  assert.deepEqual(run.notices, [
    { provider: 'PrivateNotesContextProvider', source, message },
    { provider: 'x.Other', source: 'x.Other', message: 'Other left out.' },
  ]);
  assert.deepEqual(run.items, [{ type: 'answer', text: 'Hello', streaming: false }]);
  assert.equal(run.status, 'completed');
  assert.equal(play([ev(1, 'started'), ev(2, 'notice', { provider: 'P' })]).notices, undefined, 'a notice without a message shows nothing');
});

test('the tool calls of an agent called as a tool go under the call that made them, not beside it', () => {
  const run = play([
    ev(1, 'toolCall', { callId: 'outer', name: 'echo', arguments: { query: 'read the notes' } }),
    ev(2, 'toolCall', { callId: 'inner', name: 'read_file', arguments: { path: 'notes.md' }, agentId: 'echo', within: 'outer' }),
    ev(3, 'toolResult', { callId: 'inner', name: 'read_file', result: 'Buy milk.', agentId: 'echo', within: 'outer', durationMs: 2 }),
    ev(4, 'toolCall', { callId: 'again', name: 'read_file', arguments: { path: 'x.md' }, agentId: 'echo', within: 'outer' }),
    ev(5, 'toolResult', { callId: 'again', name: 'read_file', error: 'no such file', agentId: 'echo', within: 'outer' }),
    ev(6, 'toolResult', { callId: 'outer', name: 'echo', result: 'The notes say: Buy milk.', durationMs: 9 }),
  ]);
  assert.equal(run.items.length, 1);
  const [outer] = run.items;
  assert.ok(outer?.type === 'tool');
  assert.equal(outer.status, 'done');
  assert.deepEqual(outer.calls?.map((c) => [c.name, c.agentId, c.status, c.result ?? c.error]),
    [['read_file', 'echo', 'done', 'Buy milk.'], ['read_file', 'echo', 'error', 'no such file']]);
  assert.deepEqual(callTotals(run).toolCalls, 1); // the nested calls' time is inside their caller's
});
