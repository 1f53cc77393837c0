import assert from 'node:assert/strict';
import { test } from 'node:test';
import { configuredArgv, installCommand, resolveServerCommand, which, type ResolveInput } from '../src/serverCommand';

function input(files: string[], extra: Partial<ResolveInput> = {}): ResolveInput {
  const set = new Set(files);
  return {
    configured: [],
    pathEnv: '/usr/local/bin:/usr/bin',
    platform: 'linux',
    workspaceFolders: ['/ws'],
    trusted: true,
    isExecutable: (f) => set.has(f),
    ...extra,
  };
}

test('the setting wins, as argv or as a single program', async () => {
  const r = await resolveServerCommand(input(['/usr/bin/python3', '/usr/local/bin/oscova-lsp'], { configured: ['python3', '-m', 'oscova_lsp'] }));
  assert.deepEqual(r, { ok: true, server: { command: '/usr/bin/python3', args: ['-m', 'oscova_lsp'], source: 'setting' } });
  const s = await resolveServerCommand(input(['/opt/venv/bin/oscova-lsp'], { configured: '/opt/venv/bin/oscova-lsp' }));
  assert.deepEqual(s, { ok: true, server: { command: '/opt/venv/bin/oscova-lsp', args: [], source: 'setting' } });
  const rel = await resolveServerCommand(input(['/ws/.venv/bin/oscova-lsp'], { configured: ['./.venv/bin/oscova-lsp', '--stdio'] }));
  assert.deepEqual(rel, { ok: true, server: { command: '/ws/.venv/bin/oscova-lsp', args: ['--stdio'], source: 'setting' } });
});

test('a setting naming a missing program is an error, not a silent fallback', async () => {
  const r = await resolveServerCommand(input(['/usr/local/bin/oscova-lsp'], { configured: ['/nope/oscova-lsp'] }));
  assert.equal(r.ok, false);
  assert.match(!r.ok ? r.reason : '', /oscova\.server\.command.*\/nope\/oscova-lsp/);
});

test('oscova-lsp on PATH comes before the Python extension', async () => {
  let asked = false;
  const r = await resolveServerCommand(input(['/usr/bin/oscova-lsp'], { pythonInterpreter: async () => { asked = true; return ['/py']; } }));
  assert.deepEqual(r, { ok: true, server: { command: '/usr/bin/oscova-lsp', args: [], source: 'path' } });
  assert.equal(asked, false);
});

test('without oscova-lsp on PATH, python -P -m oscova_lsp with the selected interpreter when it has the server', async () => {
  const r = await resolveServerCommand(input([], {
    pythonInterpreter: async () => ['/envs/a/bin/python', '-X', 'utf8'],
    pythonHasServer: async (i) => i[0] === '/envs/a/bin/python',
  }));
  assert.deepEqual(r, { ok: true, server: { command: '/envs/a/bin/python', args: ['-X', 'utf8', '-P', '-m', 'oscova_lsp'], source: 'python-extension' } });
  const no = await resolveServerCommand(input([], { trusted: false, pythonInterpreter: async () => ['/envs/b/bin/python'], pythonHasServer: async () => false }));
  assert.deepEqual(no, { ok: false, reason: 'the Oscova language server (`oscova-lsp`) was not found', interpreter: ['/envs/b/bin/python'] });
});

test("the workspace's own venv only in a trusted workspace", async () => {
  const files = ['/ws/.venv/bin/oscova-lsp'];
  assert.deepEqual(await resolveServerCommand(input(files)), { ok: true, server: { command: '/ws/.venv/bin/oscova-lsp', args: [], source: 'workspace-venv' } });
  assert.equal((await resolveServerCommand(input(files, { trusted: false }))).ok, false);
});

test('Windows: PATH with ; and .exe', async () => {
  const r = await resolveServerCommand(input(['C:\\py\\Scripts\\oscova-lsp.exe'], { platform: 'win32', pathEnv: 'C:\\Windows;C:\\py\\Scripts', workspaceFolders: ['C:\\ws'] }));
  assert.deepEqual(r, { ok: true, server: { command: 'C:\\py\\Scripts\\oscova-lsp.exe', args: [], source: 'path' } });
});

test('helpers', () => {
  assert.deepEqual(configuredArgv([]), undefined);
  assert.deepEqual(configuredArgv(''), undefined);
  assert.deepEqual(configuredArgv(['', 'x']), undefined);
  assert.deepEqual(configuredArgv([1, 'a']), ['a']);
  assert.equal(which('oscova-lsp', '', 'linux', () => true), undefined);
  // Not on PyPI: the install command names the Git repository, quoted for the shell (a space and `@` in it).
  assert.equal(installCommand(undefined, 'linux'), "python3 -m pip install 'oscova-lsp @ git+https://github.com/oscova/oscova-lsp'");
  assert.equal(installCommand(['/my env/bin/python'], 'linux'),
    "'/my env/bin/python' -m pip install 'oscova-lsp @ git+https://github.com/oscova/oscova-lsp'");
  assert.equal(installCommand(undefined, 'win32'), 'py -m pip install "oscova-lsp @ git+https://github.com/oscova/oscova-lsp"');
});
