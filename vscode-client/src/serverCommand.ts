/**
 * Which command starts the language server. Pure: the file system, the Python extension and the bundled server
 * are passed in, so the order of preference is unit-tested without VS Code.
 *
 * Order: the `oscova.server.command` setting; the server the extension carries (`bundledServer.ts`, in a
 * platform package), unless `oscova.server.preferInstalled` puts an installed one first; an installed server:
 * `oscova-lsp` on PATH, `python -P -m oscova_lsp` with the interpreter the Python extension selected (when it
 * can import `oscova_lsp`), in a trusted workspace `oscova-lsp` from the workspace's own `.venv` / `venv`.
 * When the bundled server cannot be set up (no suitable Python, a failed install) an installed one is used.
 *
 * No start path imports from the workspace: the console script puts its own folder on `sys.path`, `-P`
 * keeps the current directory off it (so does the server's `__main__`), and the probe runs with `-P` in the
 * extension's folder. In an untrusted workspace no program or interpreter inside a workspace folder is
 * started (a workspace's venv or a `python` it ships is the workspace's code).
 */
import * as path from 'node:path';
import type { BundledOutcome } from './bundledServer';

export interface ServerCommand {
  command: string;
  args: string[];
  /** Where it came from, for the output channel and the not-found message. */
  source: 'setting' | 'path' | 'python-extension' | 'workspace-venv' | 'bundled';
  /** The bundled server's `--version` and environment, known before it starts. */
  bundled?: Extract<BundledOutcome, { ok: true }>;
}

/** Where each source is, in the output channel's words. */
export const SOURCE_WORDS: Record<ServerCommand['source'], string> = {
  setting: 'the `oscova.server.command` setting',
  path: '`oscova-lsp` on PATH',
  'python-extension': "the Python extension's interpreter",
  'workspace-venv': "the workspace's virtual environment",
  bundled: 'the server bundled with the extension',
};

export interface ResolveInput {
  /** `oscova.server.command`: argv, or a single program as a string. */
  configured: unknown;
  pathEnv: string | undefined;
  platform: NodeJS.Platform;
  workspaceFolders: string[];
  trusted: boolean;
  /** True when `file` exists and is executable. */
  isExecutable: (file: string) => boolean;
  /** The Python extension's interpreter for the workspace (argv, e.g. `['/venv/bin/python']`), if any. */
  pythonInterpreter?: () => Promise<string[] | undefined>;
  /** Whether that interpreter can import `oscova_lsp`. */
  pythonHasServer?: (interpreter: string[]) => Promise<boolean>;
  /** The server the extension carries, set up if need be; absent in a package that carries none. */
  bundled?: () => Promise<BundledOutcome>;
  /** `oscova.server.preferInstalled`: an installed server before the bundled one. */
  preferInstalled?: boolean;
}

export type Resolution =
  | { ok: true; server: ServerCommand; note?: string }
  /** `bundled`: the reason is the bundled server's (and no installed one was found either). */
  | { ok: false; reason: string; interpreter?: string[]; bundled?: boolean };

export const SERVER_EXECUTABLE = 'oscova-lsp';
/** After the interpreter's argv: `-P` keeps the current directory (the workspace) off `sys.path`. */
export const PYTHON_SERVER_ARGS = ['-P', '-m', 'oscova_lsp'];
/** Whether an interpreter has the server, without importing from its working directory. */
export const PYTHON_PROBE_ARGS = ['-P', '-c', 'import oscova_lsp'];
/** oscova-lsp is not on PyPI: pip installs it from its Git repository (or `pip install .` in a clone). */
export const REPOSITORY = 'https://github.com/oscova/oscova-lsp';
export const PIP_REQUIREMENT = `oscova-lsp @ git+${REPOSITORY}`;

/** The setting as argv, or undefined when it is unset or empty. */
export function configuredArgv(value: unknown): string[] | undefined {
  if (typeof value === 'string') return value.trim() ? [value.trim()] : undefined;
  if (Array.isArray(value)) {
    const argv = value.filter((v): v is string => typeof v === 'string');
    if (argv.length && argv[0].trim()) return argv;
  }
  return undefined;
}

function executableNames(name: string, platform: NodeJS.Platform): string[] {
  return platform === 'win32' ? [`${name}.exe`, `${name}.cmd`, `${name}.bat`, name] : [name];
}

/** `name` looked up on PATH like a shell would; absolute or relative paths are checked as they are. */
export function which(name: string, pathEnv: string | undefined, platform: NodeJS.Platform,
  isExecutable: (file: string) => boolean): string | undefined {
  const p = platform === 'win32' ? path.win32 : path.posix;
  if (name.includes('/') || (platform === 'win32' && name.includes('\\'))) {
    return isExecutable(name) ? name : undefined;
  }
  const separator = platform === 'win32' ? ';' : ':';
  for (const dir of (pathEnv ?? '').split(separator)) {
    if (!dir || !p.isAbsolute(dir)) continue; // a relative entry (`.`) names whatever folder we are in
    for (const candidate of executableNames(name, platform)) {
      const full = p.join(dir, candidate);
      if (isExecutable(full)) return full;
    }
  }
  return undefined;
}

/** True when `file` is one of the folders or inside one. */
export function insideFolders(file: string, folders: string[], platform: NodeJS.Platform): boolean {
  const p = platform === 'win32' ? path.win32 : path.posix;
  return folders.some((folder) => {
    const rel = p.relative(p.resolve(folder), p.resolve(file));
    return rel === '' || (!rel.startsWith('..') && !p.isAbsolute(rel));
  });
}

export async function resolveServerCommand(input: ResolveInput): Promise<Resolution> {
  const p = input.platform === 'win32' ? path.win32 : path.posix;
  // Untrusted: nothing the workspace ships is started.
  const allowed = (file: string) => input.trusted || !insideFolders(file, input.workspaceFolders, input.platform);
  const configured = configuredArgv(input.configured);
  if (configured) {
    let program = configured[0];
    // A relative program path in the setting is relative to the first workspace folder.
    if ((program.startsWith('./') || program.startsWith('../')) && input.workspaceFolders.length) {
      program = p.resolve(input.workspaceFolders[0], program);
    }
    const found = which(program, input.pathEnv, input.platform, input.isExecutable);
    if (!found) {
      return { ok: false, reason: `\`oscova.server.command\` names \`${configured[0]}\`, which was not found or is not executable` };
    }
    if (!allowed(found)) {
      return { ok: false, reason: `\`oscova.server.command\` names \`${configured[0]}\`, which is inside the workspace: it is started only once the workspace is trusted` };
    }
    return { ok: true, server: { command: found, args: configured.slice(1), source: 'setting' } };
  }

  let bundledReason: string | undefined;
  const tryBundled = async (): Promise<Resolution | undefined> => {
    const outcome = await input.bundled?.();
    if (!outcome) return undefined;
    if (outcome.ok) return { ok: true, server: { command: outcome.command, args: outcome.args, source: 'bundled', bundled: outcome } };
    bundledReason = outcome.reason;
    return undefined;
  };
  if (!input.preferInstalled) {
    const bundled = await tryBundled();
    if (bundled) return bundled;
  }
  const installed = await findInstalled(input, allowed);
  if (installed.ok) {
    return bundledReason ? { ...installed, note: `the bundled server could not be used (${bundledReason}); started an installed one instead` } : installed;
  }
  if (input.preferInstalled) {
    const bundled = await tryBundled();
    if (bundled) return bundled;
  }
  return bundledReason ? { ok: false, reason: bundledReason, interpreter: installed.interpreter, bundled: true } : installed;
}

/** An installed server: on PATH, in the Python extension's interpreter, in a trusted workspace's venv. */
async function findInstalled(input: ResolveInput, allowed: (file: string) => boolean): Promise<Resolution> {
  const p = input.platform === 'win32' ? path.win32 : path.posix;
  const onPath = which(SERVER_EXECUTABLE, input.pathEnv, input.platform, input.isExecutable);
  if (onPath && allowed(onPath)) return { ok: true, server: { command: onPath, args: [], source: 'path' } };

  let interpreter: string[] | undefined;
  if (input.pythonInterpreter) {
    interpreter = await input.pythonInterpreter();
    if (interpreter?.length && !allowed(interpreter[0])) interpreter = undefined;
    if (interpreter?.length && input.pythonHasServer && await input.pythonHasServer(interpreter)) {
      return {
        ok: true,
        server: { command: interpreter[0], args: [...interpreter.slice(1), ...PYTHON_SERVER_ARGS], source: 'python-extension' },
      };
    }
  }

  // A workspace's own virtual environment is code from the workspace: only when it is trusted.
  if (input.trusted) {
    const bin = input.platform === 'win32' ? 'Scripts' : 'bin';
    for (const folder of input.workspaceFolders) {
      for (const venv of ['.venv', 'venv']) {
        for (const name of executableNames(SERVER_EXECUTABLE, input.platform)) {
          const candidate = p.join(folder, venv, bin, name);
          if (input.isExecutable(candidate)) {
            return { ok: true, server: { command: candidate, args: [], source: 'workspace-venv' } };
          }
        }
      }
    }
  }
  return { ok: false, reason: 'the Oscova language server (`oscova-lsp`) was not found', interpreter };
}

/** The command that installs the server, with the selected interpreter when there is one. */
export function installCommand(interpreter: string[] | undefined, platform: NodeJS.Platform): string {
  const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : platform === 'win32' ? `"${s}"` : `'${s.replace(/'/g, `'\\''`)}'`);
  const python = interpreter?.length ? interpreter.map(quote) : [platform === 'win32' ? 'py' : 'python3'];
  return [...python, '-m', 'pip', 'install', platform === 'win32' ? `"${PIP_REQUIREMENT}"` : `'${PIP_REQUIREMENT}'`].join(' ');
}
