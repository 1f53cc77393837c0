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
