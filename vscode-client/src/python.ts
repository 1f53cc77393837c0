/** The Python extension's interpreter, and whether it can start the server: what `serverCommand.ts` asks. */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { PYTHON_PROBE_ARGS } from './serverCommand';

/** The parts of the Python extension's API read here (its `environments` API, else the older `settings`). */
interface PythonApi {
  environments?: {
    getActiveEnvironmentPath?(resource?: vscode.Uri): { path?: string } | undefined;
    resolveEnvironment?(env: { path?: string }): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
  };
  settings?: { getExecutionDetails?(resource?: vscode.Uri): { execCommand?: string[] } | undefined };
}

export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The interpreter the Python extension selected for the workspace, when it is installed. */
export async function pythonInterpreter(): Promise<string[] | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>('ms-python.python');
  if (!ext) return undefined;
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    const envs = api?.environments;
    if (envs?.getActiveEnvironmentPath) {
      const active = envs.getActiveEnvironmentPath(resource);
      const resolved = active && envs.resolveEnvironment ? await envs.resolveEnvironment(active) : undefined;
      const exe = resolved?.executable?.uri?.fsPath ?? active?.path;
      if (exe) return [exe];
    }
    const command = api?.settings?.getExecutionDetails?.(resource)?.execCommand;
    return command?.length ? command : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the interpreter can import `oscova_lsp`: with `-P`, in the extension's own folder (never the workspace). */
export function pythonHasServer(interpreter: string[], cwd: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(interpreter[0], [...interpreter.slice(1), ...PYTHON_PROBE_ARGS], { timeout: 15000, cwd }, (error) => resolve(!error));
  });
}
