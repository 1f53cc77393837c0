/**
 * Set API Key…: a model's key in VS Code's secret storage, given to the server as the environment variable
 * its `[models.*] api_key_env` names (`apiKeyEnv.ts` reads those; the server restarts to see a change).
 */
import * as vscode from 'vscode';
import { distinctEnvs, modelKeys, secretKey, type ModelKey } from './apiKeyEnv';

/** The global-state key of the variable names that have a stored key. */
const KNOWN_ENVS = 'oscova.apiKeyEnvs';

/** The stored keys, by variable name: what the server's environment adds to this process's. */
export async function storedKeys(context: vscode.ExtensionContext): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const name of context.globalState.get<string[]>(KNOWN_ENVS, [])) {
    const value = await context.secrets.get(secretKey(name));
    if (value) env[name] = value;
  }
  return env;
}

/** `[models.*] api_key_env` of the workspace's host configurations. */
async function workspaceModelKeys(): Promise<ModelKey[]> {
  const files = [
    ...await vscode.workspace.findFiles('**/oscova.toml', '**/{node_modules,.git,.venv,venv}/**', 50),
    ...await vscode.workspace.findFiles('pyproject.toml', undefined, 10),
  ];
  const keys: ModelKey[] = [];
  for (const file of files) {
    try {
      const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(file));
      keys.push(...modelKeys(text, file.fsPath));
    } catch {
      // unreadable: skipped
    }
  }
  return keys;
}

/** The variable the key goes in: the one the workspace names, a pick among several, or one typed in. */
async function chooseEnv(): Promise<string | undefined> {
  const keys = await workspaceModelKeys();
  const envs = distinctEnvs(keys);
  if (envs.length === 1) return envs[0];
  if (envs.length > 1) {
    const pick = await vscode.window.showQuickPick(envs.map((e) => ({
      label: e, description: `models: ${keys.filter((k) => k.env === e).map((k) => k.model).join(', ')}`,
    })), { title: 'Set the key of which model?' });
    return pick?.label;
  }
  return vscode.window.showInputBox({
    title: 'Oscova: API key variable',
    prompt: 'No `[models.*] api_key_env` found in oscova.toml: the environment variable the key goes in',
    value: 'OPENAI_API_KEY',
    validateInput: (v) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(v) ? undefined : 'An environment variable name'),
  });
}

/** "Set API Key…": stores (or, left empty, removes) the key, then restarts the server with it. */
export async function setApiKey(context: vscode.ExtensionContext, output: vscode.LogOutputChannel,
  restart: () => Promise<void>): Promise<void> {
  const env = await chooseEnv();
  if (!env) return;
  const value = await vscode.window.showInputBox({
    title: `Oscova: ${env}`,
    prompt: `The API key, stored in VS Code's secret storage and given to the language server as ${env}. Leave empty to remove it.`,
    password: true,
    ignoreFocusOut: true,
  });
  if (value === undefined) return;
  const known = new Set(context.globalState.get<string[]>(KNOWN_ENVS, []));
  if (value) {
    await context.secrets.store(secretKey(env), value);
    known.add(env);
  } else {
    await context.secrets.delete(secretKey(env));
    known.delete(env);
  }
  await context.globalState.update(KNOWN_ENVS, [...known]);
  output.appendLine(`[client] ${value ? 'stored' : 'removed'} the key for ${env}; restarting the server`);
  await restart();
  void vscode.window.showInformationMessage(`Oscova: ${value ? 'the key is set' : 'the key is removed'} (${env}); the server was restarted.`);
}
