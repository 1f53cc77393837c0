import assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import {
  envDirFor, interpreterCandidates, judgePython, prepare, PYTHON_PROBE, STAMP, type BundledInput, type BundledOutcome, type Effects, type PythonInfo,
  type ServerManifest,
} from '../src/bundledServer';

const manifest: ServerManifest = {
  server: 'oscova-lsp', version: '0.1.0', requirement: 'oscova-lsp==0.1.0', target: 'linux-x64',
  pythons: ['3.11', '3.12', '3.13'], pip: 'pip/pip-26.3-py3-none-any.whl', wheels: ['oscova_lsp-0.1.0-py3-none-any.whl'], digest: 'd1',
};

function python(executable: string, version: number[], extra: Partial<PythonInfo> = {}): PythonInfo {
  return { implementation: 'cpython', version, executable, base: executable, venv: true, ...extra };
}

/** A machine: interpreters that answer the probe, a file system in memory, and every program run recorded. */
class Machine implements Effects {
  files = new Map<string, string>();
  folders = new Set<string>();
  runs: string[][] = [];
  lines: string[] = [];
  clock = 1_000_000;
  failPip = '';
  failVersion = false;
  constructor(readonly pythons: Record<string, PythonInfo>) {}

  async run(command: string, args: string[]): Promise<string> {
    this.runs.push([command, ...args]);
    this.clock += 1000;
    if (args.includes(PYTHON_PROBE)) {
      const info = this.pythons[command];
      if (!info) throw new Error(`spawn ${command} ENOENT`);
      return `${JSON.stringify(info)}\n`;
    }
    if (args.includes('venv')) {
      const dir = args[args.length - 1];
      this.folders.add(dir);
      this.files.set(path.join(dir, 'bin', 'python'), '');
      return '';
    }
    if (args.includes('install')) {
      if (this.failPip) throw new Error(this.failPip);
      return 'Successfully installed oscova-lsp-0.1.0\n';
    }
    if (args.includes('compileall')) return '';
    if (args.includes('--version')) {
      if (this.failVersion) throw new Error("No module named 'pydantic_core._pydantic_core'");
      return 'oscova-lsp 0.1.0\n';
    }
    throw new Error(`unexpected ${command} ${args.join(' ')}`);
  }

  exists(file: string) { return this.files.has(file) || this.folders.has(file); }
  readText(file: string) { return this.files.get(file); }
  writeText(file: string, text: string) { this.files.set(file, text); }
  rename(from: string, to: string) {
    if (this.folders.has(to)) return false;
    for (const [k, v] of [...this.files]) {
      if (k.startsWith(`${from}/`)) { this.files.delete(k); this.files.set(to + k.slice(from.length), v); }
    }
    this.folders.delete(from);
    this.folders.add(to);
    return true;
  }
  remove(folder: string) {
    this.folders.delete(folder);
    for (const k of [...this.files.keys()]) if (k.startsWith(`${folder}/`)) this.files.delete(k);
  }
  list(folder: string) { return [...this.folders].filter((f) => path.dirname(f) === folder).map((f) => path.basename(f)); }
  age() { return 0; }
  log(line: string) { this.lines.push(line); }
  now() { return this.clock; }
  ran(what: string) { return this.runs.filter((r) => r.includes(what)).length; }
}

function input(candidates: string[]): BundledInput {
  return {
    manifest, bundledDir: '/ext/bundled', storageDir: '/storage/server', platform: 'linux',
    candidates: candidates.map((c) => ({ argv: [c], from: `${path.basename(c)} on PATH` })),
  };
}

async function activate(machine: Machine, candidates: string[]): Promise<BundledOutcome> {
  const prepared = await prepare(input(candidates), machine);
  if (prepared.kind === 'install') return prepared.install(() => undefined);
  return prepared.outcome;
}

test('first activation: an environment made with the Python on PATH, the wheels installed with no index, then stamped', async () => {
  const machine = new Machine({ '/usr/bin/python3': python('/usr/bin/python3', [3, 11, 7]) });
  const outcome = await activate(machine, ['/usr/bin/python3']);
  assert.ok(outcome.ok);
  const env = envDirFor(input([]), python('/usr/bin/python3', [3, 11, 7]));
  assert.match(path.basename(env), /^oscova-lsp-0\.1\.0-cp311-[0-9a-f]{12}$/);
  assert.deepEqual([outcome.command, ...outcome.args], [`${env}/bin/python`, '-P', '-m', 'oscova_lsp']);
  assert.equal(outcome.installed, 'now');
  assert.equal(outcome.version, 'oscova-lsp 0.1.0');
  const pip = machine.runs.find((r) => r.includes('install'))!;
  assert.ok(pip.includes('--no-index') && pip.includes('--isolated'), pip.join(' '));
  assert.equal(machine.ran('compileall'), 1, 'the modules are compiled after the install');
  assert.equal(pip[pip.indexOf('--find-links') + 1], '/ext/bundled/wheels');
  assert.equal(pip[2], '/ext/bundled/pip/pip-26.3-py3-none-any.whl/pip');
  assert.equal(pip[pip.length - 1], 'oscova-lsp==0.1.0');
  const stamp = JSON.parse(machine.files.get(path.join(env, STAMP))!);
  assert.equal(stamp.digest, 'd1');
  assert.equal(stamp.python.version, '3.11.7');
  assert.ok(machine.lines.some((l) => l.includes('installing the bundled server') && l.includes('no network')), machine.lines.join('\n'));
  assert.deepEqual(machine.list('/storage/server'), [path.basename(env)]); // nothing partial left
});

test('second activation: the stamp holds, nothing is installed', async () => {
  const machine = new Machine({ '/usr/bin/python3': python('/usr/bin/python3', [3, 11, 7]) });
  await activate(machine, ['/usr/bin/python3']);
  machine.runs = [];
  machine.lines = [];
  const outcome = await activate(machine, ['/usr/bin/python3']);
  assert.ok(outcome.ok);
  assert.equal(outcome.installed, 'before');
  assert.equal(machine.ran('venv') + machine.ran('install'), 0);
  assert.ok(machine.lines.some((l) => l.includes('nothing to install')), machine.lines.join('\n'));
});

test('another build of the extension installs again, and its old environment is removed', async () => {
  const machine = new Machine({ '/usr/bin/python3': python('/usr/bin/python3', [3, 11, 7]) });
  await activate(machine, ['/usr/bin/python3']);
  const old = machine.list('/storage/server');
  const next = { ...input(['/usr/bin/python3']), manifest: { ...manifest, digest: 'd2' } };
  const prepared = await prepare(next, machine);
  assert.equal(prepared.kind, 'install');
  const outcome = prepared.kind === 'install' ? await prepared.install(() => undefined) : undefined;
  assert.ok(outcome?.ok);
  assert.equal(machine.list('/storage/server').length, 1);
  assert.notDeepEqual(machine.list('/storage/server'), old);
});

test('an environment that no longer starts the server is installed again', async () => {
  const machine = new Machine({ '/usr/bin/python3': python('/usr/bin/python3', [3, 12, 1]) });
  await activate(machine, ['/usr/bin/python3']);
  machine.failVersion = true;
  const prepared = await prepare(input(['/usr/bin/python3']), machine);
  assert.equal(prepared.kind, 'install');
  assert.ok(machine.lines.some((l) => l.includes('does not start the server') && l.includes('installing it again')));
});

test('no Python: the message says what was looked at and what to install', async () => {
  const machine = new Machine({});
  const none = await activate(machine, []);
  assert.deepEqual(none, { ok: false, reason: 'no Python was found to run the bundled server (none selected in the Python extension, '
    + 'no python3 or python on PATH). Install Python 3.11–3.13, or select one in the Python extension' });
  const gone = await activate(machine, ['/usr/bin/python3']);
  assert.ok(!gone.ok);
  assert.match(gone.reason, /\/usr\/bin\/python3 \(python3 on PATH\) did not run: spawn \/usr\/bin\/python3 ENOENT/);
});

test('a Python too old, or newer than the wheels carried, is named; the next candidate is tried', async () => {
  const machine = new Machine({
    '/usr/bin/python3': python('/usr/bin/python3', [3, 10, 12]),
    '/opt/py314/bin/python3': python('/opt/py314/bin/python3', [3, 14, 0]),
    '/opt/py313/bin/python3': python('/opt/py313/bin/python3', [3, 13, 0]),
  });
  const old = await activate(machine, ['/usr/bin/python3']);
  assert.deepEqual(old, { ok: false, reason: 'no Python can run the bundled server: Python 3.10.12 (/usr/bin/python3) is too old: the server '
    + 'needs Python 3.11 or newer (this extension carries it for 3.11–3.13). Install Python 3.11–3.13, or select one in the Python extension' });
  machine.pythons['/usr/bin/python'] = python('/usr/bin/python', [3, 10, 12], { base: '/usr/bin/python3' });
  const twice = await activate(machine, ['/usr/bin/python3', '/usr/bin/python']);
  assert.ok(!twice.ok);
  assert.equal(twice.reason.match(/too old/g)?.length, 1, 'python3 and python of one interpreter are named once');
  const chosen = await activate(machine, ['/usr/bin/python3', '/opt/py314/bin/python3', '/opt/py313/bin/python3']);
  assert.ok(chosen.ok);
  assert.deepEqual(chosen.python.version, [3, 13, 0]);
  assert.match(judgePython(python('/p', [3, 14, 0]), manifest, 'linux')!, /newer than the versions this extension carries .*\(3\.11–3\.13\)/);
  assert.match(judgePython(python('/p', [3, 11, 0], { implementation: 'pypy' }), manifest, 'linux')!, /is pypy 3\.11\.0/);
  assert.match(judgePython(python('/p', [3, 11, 0], { venv: false }), manifest, 'linux')!, /no `venv` module .*apt install python3-venv/);
});

test('a failed install says why, leaves nothing behind, and is tried again next time', async () => {
  const machine = new Machine({ '/usr/bin/python3': python('/usr/bin/python3', [3, 11, 7]) });
  machine.failPip = 'ERROR: Could not find a version that satisfies the requirement pydantic-core==2.50.5\nERROR: No matching distribution';
  const failed = await activate(machine, ['/usr/bin/python3']);
  assert.ok(!failed.ok);
  assert.match(failed.reason, /^installing the bundled server into \/storage\/server\/oscova-lsp-0\.1\.0-cp311-\w+ failed: installing oscova-lsp==0\.1\.0 and its dependencies from the extension failed: ERROR: Could not find/);
  assert.deepEqual(machine.list('/storage/server'), []);
  machine.failPip = '';
  assert.equal((await prepare(input(['/usr/bin/python3']), machine)).kind, 'install');
});

test('two windows installing at once: the second uses the first one\'s environment', async () => {
  const machine = new Machine({ '/usr/bin/python3': python('/usr/bin/python3', [3, 11, 7]) });
  const a = await prepare(input(['/usr/bin/python3']), machine);
  const b = await prepare(input(['/usr/bin/python3']), machine);
  assert.ok(a.kind === 'install' && b.kind === 'install');
  const first = await a.install(() => undefined);
  const second = await b.install(() => undefined);
  assert.ok(first.ok && second.ok);
  assert.equal(first.command, second.command);
  assert.equal(machine.list('/storage/server').length, 1);
});

test('the environment is per base interpreter: two venvs of one Python share it, another Python gets its own', () => {
  const one = envDirFor(input([]), python('/ws/.venv/bin/python', [3, 11, 7], { base: '/usr/bin/python3.11' }));
  const two = envDirFor(input([]), python('/other/venv/bin/python', [3, 11, 7], { base: '/usr/bin/python3.11' }));
  const three = envDirFor(input([]), python('/opt/py312/bin/python3', [3, 12, 1]));
  assert.equal(one, two);
  assert.notEqual(one, three);
  assert.match(three, /-cp312-/);
});

test('Restricted Mode: no interpreter inside the workspace makes the environment, the Python extension\'s .venv included', () => {
  const files = new Set(['/ws/.venv/bin/python3', '/usr/bin/python3', '/usr/bin/python']);
  const env = { pathEnv: '/ws/.venv/bin:/usr/bin', platform: 'linux' as const, workspaceFolders: ['/ws'], isExecutable: (f: string) => files.has(f) };
  const untrusted = interpreterCandidates(['/ws/.venv/bin/python'], { ...env, trusted: false });
  assert.deepEqual(untrusted.candidates, [{ argv: ['/usr/bin/python'], from: 'python on PATH' }]);
  assert.deepEqual(untrusted.skipped, [
    "the Python extension's interpreter /ws/.venv/bin/python is inside the workspace, which is not trusted: not used",
    'python3 on PATH /ws/.venv/bin/python3 is inside the workspace, which is not trusted: not used',
  ]);
  const trusted = interpreterCandidates(['/ws/.venv/bin/python'], { ...env, trusted: true });
  assert.deepEqual(trusted.candidates.map((c) => c.argv[0]), ['/ws/.venv/bin/python', '/ws/.venv/bin/python3', '/usr/bin/python']);
});
