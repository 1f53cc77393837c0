import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { LensCommand } from '../src/lens';
import { DEBUG_AGENT_COMMAND, SNIPPET_NAMES, debugAdapterArgs, debugConfiguration, resolvedConfiguration,
  withDebugLenses } from '../src/debugConfig';

const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));

test('a Debug agent lens goes beside each Run agent lens, with the same arguments', () => {
  const args = [{ agentId: 'helper', input: 'When?', uri: 'file:///ws/agents/helper.agent.yaml' }];
  const lenses: { command?: LensCommand }[] = [{ command: { title: 'Run agent', command: 'oscova.client.runAgent', arguments: args } },
    { command: { title: 'Preview prompt', command: 'oscova.client.previewPrompt', arguments: args } }];
  const shown = withDebugLenses(lenses, (_from, command) => ({ command }));
  assert.deepEqual(shown.map((l) => l.command?.title), ['Run agent', 'Debug agent', 'Preview prompt']);
  assert.equal(shown[1].command?.command, DEBUG_AGENT_COMMAND);
  assert.equal(shown[1].command?.arguments, args);
  assert.deepEqual(withDebugLenses([lenses[1]], (_f, command) => ({ command })), [lenses[1]]); // no run, no debug
});

test('the launch configuration names the agent, its input and the folder; trust is always sent', () => {
  const config = debugConfiguration({ agentId: 'helper' }, '/ws', 'When?');
  assert.deepEqual(config, { type: 'oscova', request: 'launch', name: 'Debug helper', agent: 'helper', input: 'When?', root: '/ws' });
  assert.equal(resolvedConfiguration(config, '/other', false).workspaceTrusted, false);
  assert.equal(resolvedConfiguration(config, '/other', true).root, '/ws');
  assert.equal(resolvedConfiguration({ ...config, root: undefined }, '/other', true).root, '/other');
});

test('the adapter is the server command with `debug`, without the language server transport flags', () => {
  assert.deepEqual(debugAdapterArgs([]), ['debug']);
  assert.deepEqual(debugAdapterArgs(['-m', 'oscova_lsp']), ['-m', 'oscova_lsp', 'debug']);
  assert.deepEqual(debugAdapterArgs(['--stdio', '--clientProcessId', '42']), ['debug']);
  assert.deepEqual(debugAdapterArgs(['--log-file', 'x', '--port=3']), ['--log-file', 'x', 'debug']);
});

test('the manifest contributes the debugger, its snippets, breakpoints and the Debug Agent command', () => {
  const debuggers = manifest.contributes.debuggers;
  assert.equal(debuggers[0].type, 'oscova');
  assert.deepEqual(debuggers[0].configurationSnippets.map((s: { label: string }) => s.label), SNIPPET_NAMES);
  const fork = debuggers[0].configurationSnippets[2].body;
  assert.equal(fork.liveFrom, 2);
  assert.ok(Object.keys(debuggers[0].configurationAttributes.launch.properties).includes('liveFrom'));
  assert.deepEqual(manifest.contributes.breakpoints.map((b: { language: string }) => b.language), ['yaml', 'jinja']);
  assert.ok(manifest.contributes.commands.some((c: { command: string }) => c.command === DEBUG_AGENT_COMMAND));
  assert.ok(manifest.activationEvents.includes('onDebugResolve:oscova'));
});
