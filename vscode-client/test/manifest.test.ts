import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { declaresOscova } from '../src/declaration';

const root = join(__dirname, '..', '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const SERVER_COMMANDS = ['oscova.runAgent', 'oscova.previewPrompt', 'oscova.cancelRun', 'oscova.evictAgent',
  'oscova.invalidateAgents', 'oscova.invalidateAll', 'oscova.listAgents', 'oscova.listTests', 'oscova.runTest',
  'oscova.saveTestCase', 'oscova.compareRuns', 'oscova.review', 'oscova.listEvals', 'oscova.runEval'];

test('client command ids never collide with the commands the server advertises', () => {
  const ids: string[] = manifest.contributes.commands.map((c: { command: string }) => c.command);
  for (const id of ids) {
    assert.ok(!SERVER_COMMANDS.includes(id), id);
    assert.match(id, /^oscova\.client\./);
  }
  const source = readFileSync(join(root, 'src', 'extension.ts'), 'utf8');
  for (const [, id] of source.matchAll(/registerCommand\(id|command\('([^']+)'/g)) {
    if (id) assert.ok(!SERVER_COMMANDS.includes(id), `registers ${id}`);
  }
});

test('engines.vscode and @types/vscode are pinned at or below code-server 1.139', () => {
  assert.equal(manifest.engines.vscode, '^1.91.0');
  assert.equal(manifest.devDependencies['@types/vscode'], '1.91.0');
});

test('restricted mode is limited, and the server command cannot come from an untrusted workspace', () => {
  const trust = manifest.capabilities.untrustedWorkspaces;
  assert.equal(trust.supported, 'limited');
  assert.deepEqual(trust.restrictedConfigurations, ['oscova.server.command', 'oscova.server.preferInstalled']);
});

test('the languages, grammar and schema the manifest names exist', () => {
  const jinja = manifest.contributes.languages.find((l: { id: string }) => l.id === 'jinja');
  assert.deepEqual(jinja.extensions, ['.j2', '.jinja', '.jinja2']);
  for (const p of [jinja.configuration, manifest.contributes.grammars[0].path]) {
    assert.ok(existsSync(join(root, p)), p);
    JSON.parse(readFileSync(join(root, p), 'utf8'));
  }
});

test('nothing is contributed to files of other tools that share our names', () => {
  // `*.agent.yaml` and `*.j2` are BMAD's personas and Ansible's templates too: no schema is pushed onto them
  // through the YAML extension, and opening one activates nothing. The server checks what a workspace declares.
  assert.equal(manifest.contributes.yamlValidation, undefined);
  assert.deepEqual(manifest.activationEvents,
    ['workspaceContains:**/oscova.toml', 'workspaceContains:**/pyproject.toml', 'onDebugResolve:oscova']);
});

test('a pyproject.toml declares a workspace only with a [tool.oscova] table', () => {
  assert.ok(declaresOscova('[project]\nname = "x"\n\n[tool.oscova]\n'));
  assert.ok(declaresOscova('[tool.oscova.models.default]\nmodel = "m"\n'));
  assert.ok(!declaresOscova('[project]\nname = "oscova"\n[tool.ruff]\n'));
  assert.ok(!declaresOscova('# [tool.oscova] is documented elsewhere\n[tool.oscovax]\n'));
});

test('the committed JSON Schema is what `oscova-lsp schema` prints', async (t) => {
  const { findOscovaLsp, generate, schemaPath, evalSchemaPath } = await import(join(root, 'scripts', 'generate-schema.mjs'));
  const exe = findOscovaLsp();
  if (!exe) {
    if (process.env.CI) assert.fail('oscova-lsp not found: set OSCOVA_LSP or install the server into ../.venv');
    t.skip('oscova-lsp not installed');
    return;
  }
  assert.equal(readFileSync(schemaPath, 'utf8'), generate(exe), 'stale schema: run `npm run schema`');
  assert.equal(readFileSync(evalSchemaPath, 'utf8'), generate(exe, '--eval'), 'stale schema: run `npm run schema`');
  assert.ok(execFileSync(exe, ['schema'], { encoding: 'utf8' }).includes('example_input'));
});

test('docs/architecture.md names only modules of src/ that exist in its vscode-client section', () => {
  const doc = readFileSync(join(root, '..', 'docs', 'architecture.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### `vscode-client/`'), doc.indexOf('### `tests/`'));
  const named = new Set([...section.matchAll(/`(?:src\/)?((?:webview\/)?[A-Za-z]+\.ts)`/g)].map((m) => m[1]));
  const modules = [...readdirSync(join(root, 'src')), ...readdirSync(join(root, 'src', 'webview')).map((f) => `webview/${f}`)]
    .filter((f) => f.endsWith('.ts'));
  assert.ok(named.size > 5, 'the section names the modules worth knowing');
  assert.deepEqual([...named].filter((n) => !modules.includes(n)), [], 'names in the code map that are no module');
});
