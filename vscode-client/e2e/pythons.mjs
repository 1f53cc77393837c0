// The bundled server with each CPython a platform package carries wheels for: for each version in
// bundled/server.json, an interpreter of that version (python3.X on PATH, else ~/.pyenv/versions/3.X*), a fresh
// storage folder, the extension's own install (out/src/bundledServer.js: the venv, pip from the carried wheel,
// no index), then `oscova-lsp check` of the repository's examples from that environment, and a second
// preparation that finds the stamp and installs nothing. Called by e2e/run.sh after packaging (with CI=true
// a version without an interpreter here fails).
//   node e2e/pythons.mjs
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const client = join(here, '..');
const repo = join(client, '..');
const CI = ['true', '1'].includes(String(process.env.CI).toLowerCase());
const { nodeEffects, prepare } = createRequire(import.meta.url)(join(client, 'out', 'src', 'bundledServer.js'));
const bundledDir = join(client, 'bundled');
const manifest = JSON.parse(readFileSync(join(bundledDir, 'server.json'), 'utf8'));

function interpreter(version) {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const candidate = join(dir, `python${version}`);
    if (dir && existsSync(candidate) && !dir.includes('.pyenv/shims')) return candidate;
  }
  const pyenv = join(os.homedir(), '.pyenv', 'versions');
  const found = existsSync(pyenv) ? readdirSync(pyenv).filter((v) => v === version || v.startsWith(`${version}.`)).sort().pop() : undefined;
  return found ? join(pyenv, found, 'bin', `python${version}`) : undefined;
}

const results = [];
let failed = 0;
for (const version of manifest.pythons) {
  const python = interpreter(version);
  if (!python) {
    const message = `no Python ${version} here (python${version} on PATH or under ~/.pyenv/versions)`;
    if (CI) { console.log(`[pythons] FAILED ${version}: ${message}`); failed += 1; } else console.log(`[pythons] NOT TESTED ${version}: ${message}`);
    continue;
  }
  const storageDir = mkdtempSync(join(os.tmpdir(), `oscova-bundled-${version}-`));
  const lines = [];
  try {
    const input = { manifest, bundledDir, storageDir, platform: process.platform, candidates: [{ argv: [python], from: `python${version}` }] };
    const effects = nodeEffects(client, (line) => lines.push(line));
    const t0 = Date.now();
    const first = await prepare(input, effects);
    if (first.kind !== 'install') throw new Error(`a fresh storage folder needs an install, got ${first.kind}: ${JSON.stringify(first)}`);
    const outcome = await first.install(() => undefined);
    if (!outcome.ok) throw new Error(outcome.reason);
    const seconds = (Date.now() - t0) / 1000;
    const check = spawnSync(outcome.command, [...outcome.args, 'check', join(repo, 'examples', 'broken')], { cwd: client, encoding: 'utf8' });
    if (!/OSC0\d\d/.test(check.stdout)) throw new Error(`oscova-lsp check examples/broken printed no diagnostics (exit ${check.status}):\n${check.stdout}\n${check.stderr}`);
    // The modules are compiled in the background after the install: wait for it (and for its size with bytecode).
    const deadline = Date.now() + 300_000;
    while (!lines.some((l) => l.includes("compil")) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
    const compiled = lines.find((l) => l.includes('compil')) ?? 'not compiled within 5 minutes';
    if (!compiled.includes('compiled the environment')) throw new Error(compiled);
    const size = execFileSync('du', ['-sm', outcome.envDir], { encoding: 'utf8' }).split('\t')[0];
    const t1 = Date.now();
    const second = await prepare(input, effects);
    if (second.kind !== 'ready') throw new Error(`the second preparation did not find the stamp: ${second.kind}`);
    results.push(`${version}: ${outcome.version} with Python ${outcome.python.version.join('.')} installed in ${seconds.toFixed(1)} s (${size} MB; ${compiled.replace(/^\[client\] /, '')}), `
      + `check found ${new Set(check.stdout.match(/OSC\d{3}/g)).size} codes; found again in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    console.log(`[pythons] ${results[results.length - 1]}`);
  } catch (error) {
    failed += 1;
    console.log(`[pythons] FAILED ${version} (${python}): ${error.message}\n${lines.join('\n')}`);
  } finally {
    rmSync(storageDir, { recursive: true, force: true, maxRetries: 5 });
  }
}
console.log(`pythons: ${results.length} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
