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

const BUNDLED = { ok: true as const, command: '/storage/env/bin/python', args: ['-P', '-m', 'oscova_lsp'], version: 'oscova-lsp 0.1.0',
  python: { implementation: 'cpython', version: [3, 11, 7], executable: '/usr/bin/python3', base: '/usr/bin/python3', venv: true },
  envDir: '/storage/env', installed: 'before' as const };

test('the bundled server comes before an installed one; the setting before both', async () => {
  const r = await resolveServerCommand(input(['/usr/bin/oscova-lsp'], { bundled: async () => BUNDLED }));
  assert.ok(r.ok);
  assert.equal(r.server.source, 'bundled');
  assert.deepEqual([r.server.command, ...r.server.args], ['/storage/env/bin/python', '-P', '-m', 'oscova_lsp']);
  let set = false;
  const bundled = async () => { set = true; return BUNDLED; };
  const s = await resolveServerCommand(input(['/opt/oscova-lsp'], { bundled, configured: ['/opt/oscova-lsp'] }));
  assert.ok(s.ok && s.server.source === 'setting');
  assert.equal(set, false, 'the bundled server is not set up when the setting names one');
});

test('oscova.server.preferInstalled: an installed server first, the bundled one when none is installed', async () => {
  let set = 0;
  const bundled = async () => { set += 1; return BUNDLED; };
  const installed = await resolveServerCommand(input(['/usr/bin/oscova-lsp'], { bundled, preferInstalled: true }));
  assert.ok(installed.ok && installed.server.source === 'path');
  assert.equal(set, 0);
  const none = await resolveServerCommand(input([], { bundled, preferInstalled: true }));
  assert.ok(none.ok && none.server.source === 'bundled');
  // Untrusted: the workspace's venv is no installed server, so the bundled one starts.
  const untrusted = await resolveServerCommand(input(['/ws/.venv/bin/oscova-lsp'], { bundled, preferInstalled: true, trusted: false }));
  assert.ok(untrusted.ok && untrusted.server.source === 'bundled');
});

test('when the bundled server cannot be set up, an installed one starts and the output says why', async () => {
  const bundled = async () => ({ ok: false as const, reason: 'no Python was found to run the bundled server' });
  const r = await resolveServerCommand(input(['/usr/bin/oscova-lsp'], { bundled }));
  assert.ok(r.ok && r.server.source === 'path');
  assert.equal(r.note, 'the bundled server could not be used (no Python was found to run the bundled server); started an installed one instead');
  const none = await resolveServerCommand(input([], { bundled }));
  assert.deepEqual(none, { ok: false, reason: 'no Python was found to run the bundled server', interpreter: undefined, bundled: true });
});
