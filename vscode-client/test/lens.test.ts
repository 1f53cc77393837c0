import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rewriteLensCommand, visibleLenses } from '../src/lens';

test('run and preview lenses go through the client commands, with the same arguments', () => {
  const args = [{ agentId: 'writer', input: 'Draft the notes', uri: 'file:///ws/agents/writer.agent.yaml' }];
  assert.deepEqual(rewriteLensCommand({ title: 'Run agent', command: 'oscova.runAgent', arguments: args }),
    { title: 'Run agent', command: 'oscova.client.runAgent', arguments: args });
  assert.equal(rewriteLensCommand({ title: 'Preview prompt', command: 'oscova.previewPrompt' }).command, 'oscova.client.previewPrompt');
});

test('other commands are left alone', () => {
  const lens = { title: '3 references', command: 'editor.action.showReferences', arguments: [] };
  assert.equal(rewriteLensCommand(lens), lens);
  assert.equal(rewriteLensCommand({ title: 'x', command: 'oscova.cancelRun' }).command, 'oscova.cancelRun');
});

test('an untrusted workspace shows no Run lens; previews stay', () => {
  const lenses = [
    { command: { title: 'Run agent', command: 'oscova.runAgent' } },
    { command: { title: 'Preview prompt', command: 'oscova.previewPrompt' } },
    {},
  ];
  assert.deepEqual(visibleLenses(lenses, true), lenses);
  assert.deepEqual(visibleLenses(lenses, false).map((l) => l.command?.command), ['oscova.previewPrompt', undefined]);
});

test('the token lens, once the server resolved it, opens the preview through the client command with its title', () => {
  const args = [{ agentId: 'writer', uri: 'file:///ws/agents/writer.agent.yaml' }];
  const resolved = { title: '≈ 1,240 tokens · 1,020 cacheable', command: 'oscova.previewPrompt', arguments: args, tooltip: 'estimated' };
  assert.deepEqual(rewriteLensCommand(resolved), { ...resolved, command: 'oscova.client.previewPrompt' });
  // Unresolved (no command yet) it stays, in Restricted Mode too: a preview is allowed there.
  const unresolved = [{ command: { title: 'Run agent', command: 'oscova.runAgent' } }, {}];
  assert.equal(visibleLenses(unresolved, false).length, 1);
});
