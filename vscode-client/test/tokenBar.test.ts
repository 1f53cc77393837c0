import assert from 'node:assert/strict';
import { test } from 'node:test';
import { previewMarkdown } from '../src/preview';
import { barLines, figure, tokenBar } from '../src/tokenBar';

// What `oscova-lsp preview helper --json` answered for tests/server/test_token_figures.py's helper (o200k_base).
const helper = {
  tools: [{ name: 'current_datetime', tokens: 24 }, { name: 'todo_read', tokens: 14 }, { name: 'todo_write', tokens: 44 }],
  tokens: {
    total: 188, instructions: 77, messages: 14, tools: 94, exact: true, tokenizer: 'o200k_base',
    byProvider: [{ type: 'tools', instructions: 0, messages: 0, tools: 24 }, { type: 'personal', instructions: 27, messages: 0, tools: 0 },
      { type: 'todo', instructions: 46, messages: 14, tools: 58 }],
    cacheable: { tokens: 99, endsAt: '`user_name` (personal) changes per user' },
  },
};

test('the bar has each tool, each provider\'s instructions and messages and the framing, in the endpoint\'s order', () => {
  const bar = tokenBar(helper);
  assert.ok(bar);
  assert.deepEqual(bar.segments.map((s) => [s.label, s.tokens, s.start]), [
    ['tool current_datetime', 24, 0], ['tool todo_read', 14, 24], ['tool todo_write', 44, 38], ['tool list framing', 12, 82],
    ['system message framing', 4, 94], ['personal instructions', 27, 98], ['todo instructions', 46, 125],
    ['todo messages', 14, 171], ['reply priming', 3, 185]]);
  assert.equal(bar.segments.reduce((n, s) => n + s.tokens, 0), 188); // every token is in one segment
  assert.deepEqual(bar.segments.map((s) => s.columns), [8, 4, 14, 4, 1, 9, 15, 4, 1]);
  assert.ok(bar.segments.every((s, i) => i === 0 || s.fill !== bar.segments[i - 1].fill));
  assert.equal(bar.segments[0].share, 24 / 188);
});

test('the cacheable prefix ends inside the part that changes, and the bar marks its column', () => {
  const bar = tokenBar(helper);
  assert.ok(bar?.cacheable);
  assert.deepEqual(bar.segments.map((s) => s.cacheable), ['all', 'all', 'all', 'all', 'all', 'part', 'none', 'none', 'none']);
  assert.equal(bar.cacheable.column, 31); // where `personal instructions` begins: one token of it is reusable
  const [drawn, mark] = barLines(bar);
  assert.equal(drawn.length, 60);
  assert.equal(drawn.slice(0, 8), '█'.repeat(8));
  assert.equal(mark, `${'─'.repeat(30)}┘ 99 of 188 tokens cacheable`);
  const none = tokenBar({ tokens: { ...helper.tokens, cacheable: { tokens: 0, endsAt: 'x' } }, tools: helper.tools });
  assert.equal(none && barLines(none)[1], 'no cacheable prefix: 0 of 188 tokens cacheable');
});

test('an estimate says so; a result without figures has no bar; garbage is no figure', () => {
  const estimated = tokenBar({ tokens: { total: 1240, instructions: 1100, messages: 140, tools: 0, exact: false, tokenizer: 'estimate',
    byProvider: [{ type: 'personal', instructions: 1090, messages: 0, tools: 0 }], cacheable: { tokens: 1020, endsAt: 'x' } } });
  assert.ok(estimated && !estimated.exact);
  assert.equal(barLines(estimated)[1].endsWith('≈ 1,020 of ≈ 1,240 tokens cacheable'), true);
  assert.equal(figure(1240, false), '≈ 1,240');
  assert.equal(figure(1240, true), '1,240');
  assert.equal(tokenBar({ instructions: 'x' }), undefined);
  assert.equal(tokenBar(null), undefined);
  const odd = tokenBar({ tokens: { total: 10, instructions: 'many', byProvider: 'no', cacheable: 'x' }, tools: [null, { tokens: -3 }] });
  assert.deepEqual(odd?.segments.map((s) => [s.label, s.tokens]), [['reply priming', 10]]);
  assert.equal(odd?.cacheable, undefined);
});

test('the preview document shows the figures, the bar and its legend', () => {
  const md = previewMarkdown('helper', undefined, { instructions: 'You help.', ...helper });
  assert.match(md, /## Tokens \(o200k_base\)\n\n188 tokens: instructions 77 · messages 14 · tools 94\n\n99 cacheable: the prefix ends where `user_name` \(personal\) changes per user/);
  assert.match(md, /```\n█{8}▓{4}▒{14}░{4}█▓{9}▒{15}░{4}█\n─{30}┘ 99 of 188 tokens cacheable\n```/);
  assert.match(md, /- `▓` personal instructions: 27 \(14 %\), the cacheable prefix ends inside\n- `▒` todo instructions: 46 \(24 %\)\n/);
  assert.match(md, /- `█` tool current_datetime: 24 \(13 %\), cacheable\n/);
  assert.doesNotMatch(previewMarkdown('x', undefined, { instructions: '' }), /## Tokens/);
});

test('the preview document carries the checker\'s caching warning with its figure', () => {
  const message = '`{{ user_name }}` on line 2 changes per user, so the request\'s cacheable prefix ends there: at least the 1,431 tokens of this template\'s fixed text after it are sent again for each user';
  const md = previewMarkdown('helper', undefined, {
    ...helper, tokens: { ...helper.tokens, caching: [{ code: 'OSC108', path: 'templates/helper.j2', line: 2, message }] } });
  assert.ok(md.includes(`> **OSC108** \`templates/helper.j2:2\`: ${message}`));
  assert.ok(!previewMarkdown('helper', undefined, helper).includes('OSC108'));
});
