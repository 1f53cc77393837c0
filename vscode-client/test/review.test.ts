import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isReview, reviewMarkdown, type Review } from '../src/reviewModel';

const review: Review = {
  version: 1, base: { ref: 'main', commit: '0123456789abcdef0123', chosen: 'the merge base with main' }, trusted: false,
  exitCode: 1, renderedAt: '2025-01-01T12:00:00+00:00',
  summary: { changed: 1, added: 1, removed: 0, unchanged: 3, diagnosticsIntroduced: 1, errorsIntroduced: 1, diagnosticsFixed: 0, testsReplayed: 1, testsDrifted: 1 },
  workspaces: [{
    root: '.', unchanged: 3, notLoaded: [{ kind: 'provider', name: 'tickets', source: 'providers.tickets:T' }],
    agents: [
      { id: 'writer', status: 'changed', path: 'agents/writer.agent.yaml', causes: ['templates/partials/persona.j2'],
        changes: [{ part: 'instructions', diff: '--- a\n+++ b\n@@ -1 +1 @@\n-old ```\n+new' }], request: null },
      { id: 'greeter', status: 'added', path: 'agents/greeter.agent.yaml', causes: [], changes: [], request: '## instructions\nHi <b>' },
    ],
    diagnostics: { introduced: [{ path: 'templates/intro.j2', line: 2, character: 4, code: 'OSC101', severity: 'error', message: '`tone` is not bound' }], fixed: [] },
    tests: [{ name: 'writer', path: '.oscova/tests/writer.jsonl', agentId: 'writer', status: 'drifted', difference: '-a\n+b' }],
  }],
  notes: ['`vendor/lib` at 0123 is a submodule <x>'],
};

test('the review is laid out as the pull-request comment: a summary table, then collapsed sections', () => {
  assert.ok(isReview(review));
  const md = reviewMarkdown(review);
  assert.match(md, /^## Oscova prompt review\n\nBase `0123456789ab` \(the merge base with main\) → the work tree\./);
  assert.match(md, /\| agents changed \| 1 \|\n\| agents added \| 1 \|/);
  assert.match(md, /\| diagnostics introduced \| 1 \(1 error\) \|/);
  assert.match(md, /\| agent tests drifted \| 1 of 1 replayed \|/);
  assert.match(md, /<summary><code>writer<\/code>: instructions — via <code>templates\/partials\/persona\.j2<\/code><\/summary>/);
  assert.match(md, /````diff\n--- a\n\+\+\+ b\n@@ -1 \+1 @@\n-old ```\n\+new\n````/); // a fence longer than the content's
  assert.match(md, /<summary><code>greeter<\/code> \(<code>agents\/greeter\.agent\.yaml<\/code>\)<\/summary>\n\n```\n## instructions\nHi <b>\n```/);
  assert.match(md, /3 agents unchanged\./);
  assert.match(md, /- ❌ `templates\/intro\.j2:2:4` OSC101: `tone` is not bound/);
  assert.match(md, /\| `writer` \| `writer` \| ❌ drifted \|/);
  assert.match(md, /Not loaded \(the workspace's own code\): provider `tickets`/);
  assert.match(md, /- `vendor\/lib` at 0123 is a submodule &lt;x&gt;/);
});

test('an answer of another shape is not taken for a review', () => {
  assert.equal(isReview(null), false);
  assert.equal(isReview({ version: 2, base: { commit: 'x' }, workspaces: [], summary: {} }), false);
  assert.equal(isReview({ agentId: 'x' }), false);
});
