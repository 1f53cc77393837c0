import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { previewMarkdown } from '../src/preview';
import { insideFolders, PYTHON_PROBE_ARGS, PYTHON_SERVER_ARGS, resolveServerCommand, type ResolveInput } from '../src/serverCommand';

function input(files: string[], extra: Partial<ResolveInput> = {}): ResolveInput {
  const set = new Set(files);
  return {
    configured: [], pathEnv: '/usr/bin', platform: 'linux', workspaceFolders: ['/ws'], trusted: false,
    isExecutable: (f) => set.has(f), ...extra,
  };
}

test('an untrusted workspace starts nothing it ships: not its interpreter, nor a program on PATH or in the setting inside it', async () => {
  let probed = false;
  const venvPython = await resolveServerCommand(input([], {
    pythonInterpreter: async () => ['/ws/.venv/bin/python'], pythonHasServer: async () => { probed = true; return true; },
  }));
  assert.equal(venvPython.ok, false);
  assert.equal(probed, false, 'the workspace interpreter is not even probed');
  assert.equal((await resolveServerCommand(input(['/ws/bin/oscova-lsp'], { pathEnv: '/ws/bin:/usr/bin' }))).ok, false);
  const setting = await resolveServerCommand(input(['/ws/tools/oscova-lsp'], { configured: ['./tools/oscova-lsp'] }));
  assert.match(!setting.ok ? setting.reason : '', /inside the workspace: it is started only once the workspace is trusted/);
  // Trusted, the same are fine; an interpreter outside the workspace is fine either way.
  assert.equal((await resolveServerCommand(input(['/ws/bin/oscova-lsp'], { pathEnv: '/ws/bin', trusted: true }))).ok, true);
  const outside = await resolveServerCommand(input([], { pythonInterpreter: async () => ['/usr/bin/python3'], pythonHasServer: async () => true }));
  assert.deepEqual(outside, { ok: true, server: { command: '/usr/bin/python3', args: ['-P', '-m', 'oscova_lsp'], source: 'python-extension' } });
});

test('a relative PATH entry is never searched (it names whatever folder the editor runs in)', async () => {
  const r = await resolveServerCommand(input(['oscova-lsp', './oscova-lsp'], { pathEnv: '.:bin', trusted: true }));
  assert.equal(r.ok, false);
});

test('insideFolders', () => {
  assert.equal(insideFolders('/ws', ['/ws'], 'linux'), true);
  assert.equal(insideFolders('/ws/a/b', ['/x', '/ws'], 'linux'), true);
  assert.equal(insideFolders('/ws2/a', ['/ws'], 'linux'), false);
  assert.equal(insideFolders('/ws/../etc/x', ['/ws'], 'linux'), false);
  assert.equal(insideFolders('C:\\WS\\venv\\python.exe', ['C:\\ws'], 'win32'), true);
});

// The real interpreter in a folder that holds a module named like the server (a workspace could): the
// probe and the start arguments must not import it, where a plain `python -m` / `-c` would.
const python = ['python3', 'python'].find((p) => spawnSync(p, ['-c', 'import sys; assert sys.version_info >= (3, 11)']).status === 0);

test('the probe and the server start do not import from the working directory', { skip: python ? false : 'no Python 3.11+ on PATH' }, () => {
  const dir = mkdtempSync(join(os.tmpdir(), 'oscova-trust-'));
  try {
    const ws = join(dir, 'ws');
    const marker = join(dir, 'marker');
    mkdirSync(join(ws, 'oscova_lsp'), { recursive: true });
    const evil = `open(${JSON.stringify(marker)}, 'w').close()\n`;
    writeFileSync(join(ws, 'oscova_lsp', '__init__.py'), evil);
    writeFileSync(join(ws, 'oscova_lsp', '__main__.py'), evil);
    spawnSync(python!, [...PYTHON_PROBE_ARGS], { cwd: ws });
    spawnSync(python!, [...PYTHON_SERVER_ARGS, '--help'], { cwd: ws });
    assert.equal(existsSync(marker), false);
    spawnSync(python!, ['-c', 'import oscova_lsp'], { cwd: ws }); // what the flag prevents
    assert.equal(existsSync(marker), true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a Restricted Mode preview says what was not loaded and why', () => {
  const md = previewMarkdown('helper', undefined, {
    instructions: 'You help Alice.', trusted: false, providers: [],
    notLoaded: [{ kind: 'tool', name: 'stamp', source: 'evil_tool:stamp', reason: 'not loaded: workspace not trusted' }],
  });
  assert.match(md, /\*\*Restricted Mode\*\*/);
  assert.match(md, /- tool `stamp` \(`evil_tool:stamp`\): not loaded: workspace not trusted/);
  assert.doesNotMatch(previewMarkdown('helper', undefined, { instructions: 'x', trusted: true, notLoaded: [] }), /Restricted Mode/);
});
