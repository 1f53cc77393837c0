/**
 * The server a platform package carries (docs/vscode.md): its wheels under `bundled/`, installed once into a
 * private environment in the extension's global storage, with a Python the user has; started from there on
 * every later activation, without network and without installing again (a stamp records what was installed).
 *
 * The file system and processes are passed in (`Effects`), so what is decided — which Python, whether the
 * stamp holds, what the messages say — is unit-tested without them; `nodeEffects` are the real ones, and
 * `ctx.ts` adds the progress notification.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { insideFolders, which } from './serverCommand';

/** `bundled/server.json`, written by scripts/package.mjs. */
export interface ServerManifest {
  server: string;
  version: string;
  /** What pip installs, e.g. `oscova-lsp==0.1.0`. */
  requirement: string;
  target: string;
  /** The CPython versions (`3.11`, …) the wheels cover, oldest first. */
  pythons: string[];
  /** The pip wheel, relative to `bundled/`. */
  pip: string;
  wheels: string[];
  /** A digest of the wheel set: an environment installed from another set is installed again. */
  digest: string;
}

/** What the probe says of an interpreter. */
export interface PythonInfo {
  implementation: string;
  version: number[];
  executable: string;
  /** The interpreter a virtual environment made from it runs (a venv's own base), symlinks resolved. */
  base: string;
  venv: boolean;
}

/** What is recorded in an environment once its install has succeeded. */
export interface Stamp {
  server: string;
  version: string;
  digest: string;
  python: { version: string; base: string };
  installedAt: string;
  seconds: number;
}

export interface Effects {
  /** Runs a program (never in the workspace); resolves with its stdout, rejects with its stderr's end. */
  run(command: string, args: string[], timeoutMs: number): Promise<string>;
  exists(file: string): boolean;
  readText(file: string): string | undefined;
  writeText(file: string, text: string): void;
  /** Renames a folder; false when the target exists (another window installed it first). */
  rename(from: string, to: string): boolean;
  remove(folder: string): void;
  list(folder: string): string[];
  /** Milliseconds since the folder was last changed, or undefined when it is gone. */
  age(folder: string): number | undefined;
  log(line: string): void;
  now(): number;
}

export interface BundledInput {
  manifest: ServerManifest;
  /** The extension's `bundled/` folder. */
  bundledDir: string;
  /** Where environments are made: `<global storage>/server`. */
  storageDir: string;
  platform: NodeJS.Platform;
  /** Interpreters to try, in order, each as argv (the Python extension's, then `python3` and `python` on PATH);
   * none of them inside an untrusted workspace. */
  candidates: { argv: string[]; from: string }[];
}

/** The server to start, or why there is none. */
export type BundledOutcome =
  | { ok: true; command: string; args: string[]; version: string; python: PythonInfo; envDir: string; installed: 'now' | 'before'; seconds?: number }
  | { ok: false; reason: string };

/** Either the server is ready, or it must be installed first (`install`, which `ctx.ts` runs under a progress
 * notification), or there is no Python to install it with. */
export type Preparation =
  | { kind: 'ready'; outcome: Extract<BundledOutcome, { ok: true }> }
  | { kind: 'install'; python: PythonInfo; envDir: string; install: (report: (step: string) => void) => Promise<BundledOutcome> }
  | { kind: 'failed'; outcome: Extract<BundledOutcome, { ok: false }> };

/** The interpreters to try, in order: the Python extension's, then `python3` and `python` on PATH (`python` alone
 * on Windows). In an untrusted workspace none inside a workspace folder (a `.venv` the Python extension selected,
 * a PATH entry pointing into the workspace): `skipped` says which were left out. */
export function interpreterCandidates(selected: string[] | undefined, env: {
  pathEnv: string | undefined; platform: NodeJS.Platform; trusted: boolean; workspaceFolders: string[]; isExecutable: (file: string) => boolean;
}): { candidates: BundledInput['candidates']; skipped: string[] } {
  const allowed = (file: string) => env.trusted || !insideFolders(file, env.workspaceFolders, env.platform);
  const candidates: BundledInput['candidates'] = [];
  const skipped: string[] = [];
  const add = (argv: string[], from: string) => {
    if (allowed(argv[0])) candidates.push({ argv, from });
    else skipped.push(`${from} ${argv[0]} is inside the workspace, which is not trusted: not used`);
  };
  if (selected?.length) add(selected, "the Python extension's interpreter");
  for (const name of env.platform === 'win32' ? ['python'] : ['python3', 'python']) {
    const found = which(name, env.pathEnv, env.platform, env.isExecutable);
    if (found) add([found], `${name} on PATH`);
  }
  return { candidates, skipped };
}

/** Printed as one line of JSON by `python -I -c PROBE`. */
export const PYTHON_PROBE = 'import importlib.util, json, os, sys; print(json.dumps({"implementation": sys.implementation.name, '
  + '"version": list(sys.version_info[:3]), "executable": sys.executable, '
  + '"base": os.path.realpath(getattr(sys, "_base_executable", sys.executable)), '
  + '"venv": importlib.util.find_spec("venv") is not None}))';
/** The server's arguments after an environment's interpreter: `-P` keeps the current directory off `sys.path`. */
export const ENV_SERVER_ARGS = ['-P', '-m', 'oscova_lsp'];
export const STAMP = 'oscova-stamp.json';
const PROBE_MS = 15_000;
const VENV_MS = 120_000;
const PIP_MS = 600_000;
const VERSION_MS = 30_000;

export function versionText(version: number[]): string {
  return version.join('.');
}

/** `3.11–3.13`, or `3.11` alone. */
export function supportedRange(manifest: ServerManifest): string {
  const { pythons } = manifest;
  return pythons.length > 1 ? `${pythons[0]}–${pythons[pythons.length - 1]}` : pythons[0];
}

/** Why this interpreter cannot run the bundled server, or undefined when it can. */
export function judgePython(info: PythonInfo, manifest: ServerManifest, platform: NodeJS.Platform): string | undefined {
  const where = info.executable;
  const minor = `${info.version[0]}.${info.version[1]}`;
  const range = supportedRange(manifest);
  if (info.implementation !== 'cpython') {
    return `${where} is ${info.implementation} ${versionText(info.version)}; the server's compiled dependencies are carried for CPython ${range}`;
  }
  if (!manifest.pythons.includes(minor)) {
    const [oldest] = manifest.pythons[0].split('.').map(Number).slice(1);
    const tooOld = info.version[0] < 3 || (info.version[0] === 3 && info.version[1] < oldest);
    return tooOld
      ? `Python ${versionText(info.version)} (${where}) is too old: the server needs Python ${manifest.pythons[0]} or newer (this extension carries it for ${range})`
      : `Python ${versionText(info.version)} (${where}) is newer than the versions this extension carries the server's compiled dependencies for (${range})`;
  }
  if (!info.venv) {
    return `Python ${versionText(info.version)} (${where}) has no \`venv\` module${platform === 'linux' ? ' (on Debian and Ubuntu: `sudo apt install python3-venv`)' : ''}`;
  }
  return undefined;
}

/** The environment's folder for this build and this base interpreter. */
export function envDirFor(input: BundledInput, info: PythonInfo): string {
  const { manifest } = input;
  const hash = createHash('sha256').update(`${info.base}\n${manifest.digest}`).digest('hex').slice(0, 12);
  return path.join(input.storageDir, `${manifest.server}-${manifest.version}-cp${info.version[0]}${info.version[1]}-${hash}`);
}

export function envPython(envDir: string, platform: NodeJS.Platform): string {
  return platform === 'win32' ? path.win32.join(envDir, 'Scripts', 'python.exe') : path.posix.join(envDir, 'bin', 'python');
}

/** Whether the stamp says this environment holds this build's server for this interpreter's version. */
export function stampHolds(stamp: Stamp | undefined, manifest: ServerManifest, info: PythonInfo): boolean {
  if (!stamp) return false;
  const minor = (v: string) => v.split('.').slice(0, 2).join('.');
  return stamp.server === manifest.server && stamp.version === manifest.version && stamp.digest === manifest.digest
    && minor(stamp.python.version) === minor(versionText(info.version));
}

function parseStamp(text: string | undefined): Stamp | undefined {
  if (!text) return undefined;
  try {
    const value = JSON.parse(text) as Partial<Stamp>;
    return typeof value.digest === 'string' && typeof value.python?.version === 'string' ? value as Stamp : undefined;
  } catch {
    return undefined;
  }
}

function firstLines(text: string, count = 12): string {
  const lines = text.split('\n').map((l) => l.trimEnd()).filter(Boolean);
  return lines.slice(-count).join('\n');
}

/** The first interpreter that can run the server, or the reasons none can. */
export async function choosePython(input: BundledInput, effects: Effects): Promise<{ info: PythonInfo } | { reasons: string[] }> {
  const reasons: string[] = [];
  const seen = new Set<string>();
  for (const candidate of input.candidates) {
    const key = candidate.argv.join('\0');
    if (seen.has(key)) continue;
    seen.add(key);
    let info: PythonInfo;
    try {
      const out = await effects.run(candidate.argv[0], [...candidate.argv.slice(1), '-I', '-c', PYTHON_PROBE], PROBE_MS);
      info = JSON.parse(out.trim().split('\n').pop() ?? '') as PythonInfo;
    } catch (error) {
      reasons.push(`${candidate.argv[0]} (${candidate.from}) did not run: ${firstLines(messageOf(error), 1)}`);
      continue;
    }
    const same = `${info.base}\0${versionText(info.version)}`; // `python3` and `python` of one environment: said once
    if (seen.has(same)) continue;
    seen.add(same);
    const why = judgePython(info, input.manifest, input.platform);
    if (!why) {
      effects.log(`[client] Python ${versionText(info.version)} for the bundled server: ${info.executable} (${candidate.from})`);
      return { info };
    }
    reasons.push(why);
  }
  return { reasons };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `oscova-lsp X.Y.Z` from `--version`, checked to be the server's. */
async function serverVersion(envDir: string, input: BundledInput, effects: Effects): Promise<string> {
  const out = await effects.run(envPython(envDir, input.platform), [...ENV_SERVER_ARGS, '--version'], VERSION_MS);
  const version = out.trim().split('\n').pop() ?? '';
  if (!version.startsWith(`${input.manifest.server} `)) throw new Error(`\`--version\` printed "${version}"`);
  return version;
}

/** Finds the installed environment, or says what installing it takes. */
export async function prepare(input: BundledInput, effects: Effects): Promise<Preparation> {
  const chosen = await choosePython(input, effects);
  if ('reasons' in chosen) {
    const range = supportedRange(input.manifest);
    const reason = chosen.reasons.length
      ? `no Python can run the bundled server: ${chosen.reasons.join('; ')}. Install Python ${range}, or select one in the Python extension`
      : `no Python was found to run the bundled server (none selected in the Python extension, no python3 or python on PATH). `
        + `Install Python ${range}, or select one in the Python extension`;
    return { kind: 'failed', outcome: { ok: false, reason } };
  }
  const { info } = chosen;
  const envDir = envDirFor(input, info);
  const python = envPython(envDir, input.platform);
  const stamp = parseStamp(effects.readText(path.join(envDir, STAMP)));
  if (stampHolds(stamp, input.manifest, info) && effects.exists(python)) {
    try {
      const version = await serverVersion(envDir, input, effects);
      effects.log(`[client] the bundled server is installed in ${envDir} (${stamp!.installedAt}): nothing to install`);
      return { kind: 'ready', outcome: { ok: true, command: python, args: [...ENV_SERVER_ARGS], version, python: info, envDir, installed: 'before' } };
    } catch (error) {
      effects.log(`[client] the environment in ${envDir} does not start the server (${firstLines(messageOf(error), 3)}): installing it again`);
    }
  }
  return { kind: 'install', python: info, envDir, install: (report) => install(input, effects, info, envDir, report) };
}

/** Makes the environment in a folder of its own, installs the wheels into it (no index: nothing is downloaded),
 * checks that it starts, stamps it, and moves it into place. */
async function install(input: BundledInput, effects: Effects, info: PythonInfo, envDir: string,
  report: (step: string) => void): Promise<BundledOutcome> {
  const { manifest } = input;
  const started = effects.now();
  const partial = `${envDir}.partial-${started.toString(36)}`;
  const pyv = versionText(info.version);
  effects.log(`[client] installing the bundled server (${manifest.requirement}, ${manifest.wheels.length} wheels carried by the extension, `
    + `no network) for Python ${pyv} (${info.executable}) into ${envDir}`);
  const step = async (what: string, command: string, args: string[], timeoutMs: number) => {
    report(what);
    const t = effects.now();
    try {
      const out = await effects.run(command, args, timeoutMs);
      effects.log(`[client]   ${what}: ${((effects.now() - t) / 1000).toFixed(1)} s`);
      return out;
    } catch (error) {
      throw new Error(`${what} failed: ${firstLines(messageOf(error))}`, { cause: error });
    }
  };
  try {
    await step(`creating a Python ${pyv} environment`, info.executable, ['-I', '-m', 'venv', '--without-pip', partial], VENV_MS);
    const pip = path.join(input.bundledDir, manifest.pip, 'pip');
    await step(`installing ${manifest.requirement} and its dependencies from the extension`, envPython(partial, input.platform),
      ['-I', pip, 'install', '--isolated', '--no-index', '--find-links', path.join(input.bundledDir, 'wheels'), '--only-binary', ':all:',
        '--no-cache-dir', '--disable-pip-version-check', '--no-input', '--no-warn-script-location', '--no-compile', manifest.requirement], PIP_MS);
    report('checking that the server starts');
    const version = await serverVersion(partial, input, effects).catch((error: unknown) => {
      throw new Error(`the installed server does not start: ${firstLines(messageOf(error))}`, { cause: error });
    });
    const seconds = Math.round((effects.now() - started) / 100) / 10;
    const stamp: Stamp = {
      server: manifest.server, version: manifest.version, digest: manifest.digest,
      python: { version: pyv, base: info.base }, installedAt: new Date(effects.now()).toISOString(), seconds,
    };
    effects.writeText(path.join(partial, STAMP), `${JSON.stringify(stamp, null, 2)}\n`);
    if (effects.exists(envDir) && !stampHolds(parseStamp(effects.readText(path.join(envDir, STAMP))), manifest, info)) {
      effects.remove(envDir); // a broken or older environment in the way
    }
    if (!effects.rename(partial, envDir)) {
      effects.remove(partial); // another window installed the same one first: use it
      effects.log(`[client] another window installed the same environment first: using ${envDir}`);
    }
    removeStale(input, effects, envDir);
    effects.log(`[client] installed the bundled server in ${seconds.toFixed(1)} s: ${version}`);
    compileInBackground(envDir, input, effects);
    return { ok: true, command: envPython(envDir, input.platform), args: [...ENV_SERVER_ARGS], version, python: info, envDir, installed: 'now', seconds };
  } catch (error) {
    effects.remove(partial);
    const reason = `installing the bundled server into ${envDir} failed: ${messageOf(error)}`;
    effects.log(`[client] ${reason}`);
    return { ok: false, reason };
  }
}

/** pip installed without compiling (twice as fast here); the server's first start compiles what it imports, and
 * this compiles the rest on one core while the server starts, so that later starts read bytecode even where
 * PYTHONDONTWRITEBYTECODE is set. */
function compileInBackground(envDir: string, input: BundledInput, effects: Effects): void {
  const started = effects.now();
  effects.run(envPython(envDir, input.platform), ['-I', '-m', 'compileall', '-q', '-j', '1', envDir], PIP_MS).then(
    () => effects.log(`[client] compiled the environment's modules in ${((effects.now() - started) / 1000).toFixed(1)} s`),
    (error: unknown) => effects.log(`[client] compiling the environment's modules failed (the server compiles what it imports): ${firstLines(messageOf(error), 3)}`),
  );
}

/** Environments of other builds of the extension, and installs abandoned more than an hour ago. */
function removeStale(input: BundledInput, effects: Effects, keep: string): void {
  for (const name of effects.list(input.storageDir)) {
    const folder = path.join(input.storageDir, name);
    if (folder === keep) continue;
    if (name.includes('.partial-')) {
      if ((effects.age(folder) ?? 0) > 3_600_000) effects.remove(folder);
      continue;
    }
    const stamp = parseStamp(effects.readText(path.join(folder, STAMP)));
    if (name.startsWith(`${input.manifest.server}-`) && stamp && stamp.digest !== input.manifest.digest) {
      effects.log(`[client] removing the environment of another build of the extension: ${folder}`);
      effects.remove(folder);
    }
  }
}

/** The real file system and processes; programs run in `cwd` (the extension's folder, never the workspace). */
export function nodeEffects(cwd: string, log: (line: string) => void): Effects {
  return {
    run: (command, args, timeout) => new Promise((resolve, reject) => {
      execFile(command, args, { cwd, timeout, maxBuffer: 32 << 20, encoding: 'utf8' }, (error, stdout, stderr) => {
        if (error) reject(new Error((stderr || stdout).trim() || error.message));
        else resolve(stdout);
      });
    }),
    exists: (file) => fs.existsSync(file),
    readText: (file) => {
      try {
        return fs.readFileSync(file, 'utf8');
      } catch {
        return undefined;
      }
    },
    writeText: (file, text) => fs.writeFileSync(file, text),
    rename: (from, to) => {
      try {
        fs.renameSync(from, to);
        return true;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOTEMPTY' || code === 'EEXIST') return false;
        throw error;
      }
    },
    remove: (folder) => fs.rmSync(folder, { recursive: true, force: true }),
    list: (folder) => {
      try {
        return fs.readdirSync(folder);
      } catch {
        return [];
      }
    },
    age: (folder) => {
      try {
        return Date.now() - fs.statSync(folder).mtimeMs;
      } catch {
        return undefined;
      }
    },
    log,
    now: () => Date.now(),
  };
}
