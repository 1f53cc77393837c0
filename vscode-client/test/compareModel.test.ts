import assert from 'node:assert/strict';
import { test } from 'node:test';
import { comparisonView, isComparison } from '../src/compareModel';

const comparison = {
  agentId: 'billing/agent',
  previous: { transcript: '/w/.oscova/runs/a.jsonl', runId: 'aaa111', requests: '# model request 1\n## instructions\nOld.\n' },
  current: { transcript: '/w/.oscova/runs/b.jsonl', runId: 'bbb222', requests: '# model request 1\n## instructions\nNew.\n' },
};

test('the diff view shows the previous run on the left and this run on the right, named by run id', () => {
  const view = comparisonView(comparison);
  assert.equal(view.left, '/billing_agent/aaa111/requests.md');
  assert.equal(view.right, '/billing_agent/bbb222/requests.md');
  assert.equal(view.title, 'billing/agent: model requests of run aaa111 ↔ bbb222');
});

test('only an answer with both runs\' requests is a comparison', () => {
  assert.ok(isComparison(comparison));
  assert.ok(!isComparison({ ...comparison, previous: undefined }));
  assert.ok(!isComparison({ ...comparison, current: { runId: 'x' } }));
  assert.ok(!isComparison(null));
});
