import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyResult, formatPredicted, newRun, reduce, type RunEvent, type RunState } from '../src/runModel';

const ev = (seq: number, kind: string, fields: Record<string, unknown> = {}): RunEvent => ({ runId: 'r1', seq, kind, ...fields });

function play(events: RunEvent[]): RunState {
  return events.reduce((run, e, i) => reduce(run, e, 2000 + i * 100), newRun('k', 'thinker', 'hi', 1000));
}

test('reasoning streams into its own item, apart from the answer, and folds when the answer starts', () => {
  const streaming = play([ev(1, 'started'), ev(2, 'reasoning', { text: 'They greet me; ' }), ev(3, 'reasoning', { text: 'I greet back.' })]);
  assert.deepEqual(streaming.items, [{ type: 'reasoning', text: 'They greet me; I greet back.', streaming: true }]);
  const answered = play([ev(1, 'started'), ev(2, 'reasoning', { text: 'They greet me.' }), ev(3, 'delta', { text: 'Hello!' }),
    ev(4, 'completed', { text: 'Hello!', reasoning: 'They greet me.' })]);
  assert.deepEqual(answered.items, [
    { type: 'reasoning', text: 'They greet me.', streaming: false },
    { type: 'answer', text: 'Hello!', streaming: false },
  ]);
});

test('a reasoning-only reply has reasoning and no answer, never the reasoning as the answer', () => {
  const run = play([ev(1, 'started'), ev(2, 'reasoning', { text: 'Thinking at length' }), ev(3, 'completed', { text: '', reasoning: 'Thinking at length' })]);
  assert.deepEqual(run.items.map((i) => i.type), ['reasoning']);
});

test('the result brings the reasoning when no event did', () => {
  const run = applyResult(newRun('k', 'thinker', 'hi', 1000), { status: 'completed', text: 'Yes.', reasoning: 'Because.' }, 2000);
  assert.deepEqual(run.items, [{ type: 'reasoning', text: 'Because.', streaming: false }, { type: 'answer', text: 'Yes.', streaming: false }]);
});

test('warnings are kept where they happened, and an incomplete answer is not a plain success', () => {
  const message = 'The answer of `short` was cut off: it reached its token limit (`max_tokens` 12)';
  const run = play([ev(1, 'started'), ev(2, 'delta', { text: 'The launch is on' }),
    ev(3, 'warning', { reason: 'cutOff', agentId: 'short', message }),
    ev(4, 'completed', { text: 'The launch is on', incomplete: { reason: 'cutOff', message } })]);
  assert.deepEqual(run.warnings, [{ reason: 'cutOff', agentId: 'short', message }]);
  assert.equal(run.status, 'completed');
  assert.deepEqual(run.incomplete, { reason: 'cutOff', message });
  const viaResult = applyResult(newRun('k', 'short', 'hi', 1000), { status: 'completed', text: 'x', incomplete: { reason: 'cutOff', message } }, 2000);
  assert.deepEqual(viaResult.incomplete, { reason: 'cutOff', message });
});

test('a model call shows the endpoint\'s input tokens beside the prediction, and its reasoning tokens', () => {
  const run = play([ev(1, 'started'), ev(2, 'modelCall', { agentId: 'thinker', model: 'm', durationMs: 3, finishReason: 'stop',
    predictedInputTokens: 273, usage: { inputTokens: 275, outputTokens: 12, totalTokens: 287, reasoningTokens: 8 } }),
  ev(3, 'modelCall', { model: 'm', predictedInputTokens: 40, predictionExact: false })]);
  const [first, second] = run.modelCalls ?? [];
  assert.equal(formatPredicted(first), '275 (273 predicted)');
  assert.equal(first.usage?.reasoningTokens, 8);
  assert.equal(first.finishReason, 'stop');
  assert.equal(formatPredicted(second), '— (≈ 40 predicted)');
});
