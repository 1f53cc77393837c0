import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callTotals, formatInput, formatTokens, newRun, reduce, type RunEvent, type RunState } from '../src/runModel';

const ev = (seq: number, kind: string, fields: Record<string, unknown> = {}): RunEvent => ({ runId: 'r1', seq, kind, ...fields });

function play(events: RunEvent[]): RunState {
  return events.reduce((run, e, i) => reduce(run, e, 2000 + i * 100), newRun('k', 'coordinator', 'hi', 1000));
}

// The events of a run that calls the agent `repeater` as a tool and `read_file` (as the server sends them).
const delegated = [
  ev(1, 'started', { agentId: 'coordinator', agentName: 'Coordinator', input: 'hi' }),
  ev(2, 'toolCall', { callId: 'c1', name: 'repeater', arguments: { query: 'q' } }),
  ev(3, 'toolCall', { callId: 'c2', name: 'read_file', arguments: { path: 'notes.txt' } }),
  ev(4, 'modelCall', { agentId: 'coordinator', model: 'fake-model', responseModel: 'fake-model-2025', durationMs: 12.5,
    usage: { inputTokens: 23, outputTokens: 9, totalTokens: 32 } }),
  ev(5, 'modelCall', { agentId: 'repeater', model: 'fake-model', durationMs: 4, usage: { inputTokens: 5, outputTokens: 3, totalTokens: 8 } }),
  ev(6, 'toolResult', { callId: 'c1', name: 'repeater', result: 'launch on Tuesday', durationMs: 20.2 }),
  ev(7, 'toolResult', { callId: 'c2', name: 'read_file', result: 'The launch is on Tuesday.', durationMs: 1.3 }),
  ev(8, 'modelCall', { agentId: 'coordinator', model: 'fake-model', responseModel: 'fake-model-2025', durationMs: 8,
    usage: { inputTokens: 41, outputTokens: 6, totalTokens: 47 } }),
  ev(9, 'delta', { text: 'It is on Tuesday.' }),
];

test('each model call keeps its agent, model, tokens and duration, in the order they ended', () => {
  const run = play(delegated);
  assert.deepEqual(run.modelCalls, [
    { agentId: 'coordinator', model: 'fake-model-2025', usage: { inputTokens: 23, outputTokens: 9, totalTokens: 32 }, durationMs: 12.5 },
    { agentId: 'repeater', model: 'fake-model', usage: { inputTokens: 5, outputTokens: 3, totalTokens: 8 }, durationMs: 4 },
    { agentId: 'coordinator', model: 'fake-model-2025', usage: { inputTokens: 41, outputTokens: 6, totalTokens: 47 }, durationMs: 8 },
  ]);
  assert.equal(formatTokens(run.modelCalls?.[0].usage ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0 }), '23 in · 9 out');
});

test('each tool call keeps its duration', () => {
  const run = play(delegated);
  const tools = run.items.filter((i) => i.type === 'tool');
  assert.deepEqual(tools.map((t) => t.type === 'tool' && [t.name, t.status, t.durationMs]), [['repeater', 'done', 20.2], ['read_file', 'done', 1.3]]);
});

test('totals: while running they add up the calls; at the end the run\'s own total is shown', () => {
  const running = callTotals(play(delegated));
  assert.deepEqual(running, { modelCalls: 3, usage: { inputTokens: 69, outputTokens: 18, totalTokens: 87 }, modelMs: 24.5, toolCalls: 2, toolMs: 21.5 });
  const done = play([...delegated, ev(10, 'completed', { text: 'It is on Tuesday.', usage: { inputTokens: 69, outputTokens: 18, totalTokens: 87 } })]);
  assert.deepEqual(done.usage, { inputTokens: 69, outputTokens: 18, totalTokens: 87 });
  assert.deepEqual(callTotals(done).usage, { inputTokens: 69, outputTokens: 18, totalTokens: 87 });
});

test('a server without usage or durations (an older one) still gives a well-formed run', () => {
  const run = play([ev(1, 'started'), ev(2, 'toolCall', { callId: 'c1', name: 't' }), ev(3, 'toolResult', { callId: 'c1', result: 'ok' }),
    ev(4, 'modelCall', { model: 'm', usage: 'garbage', durationMs: 'slow' }), ev(5, 'completed', { text: 'x' })]);
  assert.deepEqual(run.modelCalls, [{ model: 'm' }]);
  const tool = run.items.find((i) => i.type === 'tool');
  assert.ok(tool && tool.type === 'tool' && !('durationMs' in tool));
  assert.deepEqual(callTotals(run), { modelCalls: 1, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, modelMs: 0, toolCalls: 0, toolMs: 0 });
});

test('cached input tokens are shown where the endpoint reported them, and summed over the calls that did', () => {
  const run = play([
    ev(1, 'started'),
    ev(2, 'modelCall', { model: 'm', usage: { inputTokens: 1200, outputTokens: 9, totalTokens: 1209, cachedInputTokens: 1024 } }),
    ev(3, 'modelCall', { model: 'm', usage: { inputTokens: 40, outputTokens: 2, totalTokens: 42 } }),
    ev(4, 'modelCall', { model: 'm', usage: { inputTokens: 1300, outputTokens: 5, totalTokens: 1305, cachedInputTokens: 1152 } }),
  ]);
  const [first, second] = run.modelCalls ?? [];
  assert.equal(first.usage?.cachedInputTokens, 1024);
  assert.equal(formatInput(first.usage ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0 }), '1200 (1024 cached)');
  assert.equal(formatTokens(second.usage ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0 }), '40 in · 2 out');
  assert.deepEqual(callTotals(run).usage, { inputTokens: 2540, outputTokens: 16, totalTokens: 2556, cachedInputTokens: 2176 });
  assert.equal(formatTokens(callTotals(run).usage), '2540 in (2176 cached) · 16 out');
  const done = play([ev(1, 'started'), ev(2, 'completed', { text: 'x',
    usage: { inputTokens: 10, outputTokens: 1, totalTokens: 11, cachedInputTokens: 0 } })]);
  assert.equal(formatTokens(done.usage ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0 }), '10 in (0 cached) · 1 out');
});

test('an endpoint that does not report cached tokens shows none, and a bad value is ignored', () => {
  const run = play([ev(1, 'started'), ev(2, 'modelCall', { model: 'm', usage: { inputTokens: 5, outputTokens: 1, cachedInputTokens: 'many' } })]);
  assert.deepEqual(run.modelCalls?.[0].usage, { inputTokens: 5, outputTokens: 1, totalTokens: 6 });
  assert.equal('cachedInputTokens' in callTotals(run).usage, false);
});
