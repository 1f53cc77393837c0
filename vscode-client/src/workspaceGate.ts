/**
 * Whether this window holds an oscova workspace: a folder with `oscova.toml`, or a `pyproject.toml` with a
 * `[tool.oscova]` table. Other projects name files `*.agent.yaml` and `*.j2` too (BMAD personas, Ansible
 * roles); the server starts only where a workspace is declared, and as soon as one appears.
 */
import * as vscode from 'vscode';
import { declaresOscova } from './declaration';

const IGNORED = '**/{node_modules,.git,.venv,venv,__pycache__}/**';

/** Whether a workspace is declared under the window's folders. */
export async function hasWorkspace(): Promise<boolean> {
  if ((await vscode.workspace.findFiles('**/oscova.toml', IGNORED, 1)).length) return true;
  for (const uri of await vscode.workspace.findFiles('**/pyproject.toml', IGNORED, 50)) {
    try {
      if (declaresOscova(new TextDecoder().decode(await vscode.workspace.fs.readFile(uri)))) return true;
    } catch {
      // unreadable: not a declaration
    }
  }
  return false;
}

/** Calls `start` once a workspace is declared: now, or when an `oscova.toml` or `pyproject.toml` appears or
 * changes. `log` says why the server waits. */
export async function startWhenDeclared(start: () => Promise<void>, log: (line: string) => void): Promise<vscode.Disposable> {
  if (await hasWorkspace()) {
    await start();
    return new vscode.Disposable(() => undefined);
  }
  log('[client] no oscova.toml (or pyproject.toml with [tool.oscova]) in this window\'s folders: these '
    + '*.agent.yaml and template files belong to another tool, so the server does not start; it starts when one appears');
  const watcher = vscode.workspace.createFileSystemWatcher('**/{oscova.toml,pyproject.toml}');
  let started = false;
  const check = async () => {
    if (!started && await hasWorkspace()) {
      started = true;
      watcher.dispose();
      await start();
    }
  };
  watcher.onDidCreate(check);
  watcher.onDidChange(check);
  return watcher;
}
