/**
 * The debugger in VS Code: the `oscova` debug type runs `oscova-lsp debug` (the language server's command with
 * `debug`), fills in the workspace folder and its trust, and "Debug agent" (a lens beside "Run agent", and a
 * command) starts a session for one agent and input. The adapter does the rest (docs/debugging.md).
 */
import * as vscode from 'vscode';
import { DEBUG_TYPE, debugAdapterArgs, debugConfiguration, resolvedConfiguration, type DebugArgs,
  type LaunchConfiguration } from './debugConfig';

export interface AdapterServer { command: string; args: string[]; env: NodeJS.ProcessEnv }

export function registerDebugger(context: vscode.ExtensionContext, server: () => Promise<AdapterServer | undefined>): void {
  context.subscriptions.push(
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, {
      async createDebugAdapterDescriptor(session) {
        const found = await server();
        if (!found) throw new Error('the Oscova language server (oscova-lsp) was not found; see Oscova: Show Output');
        const cwd = session.workspaceFolder?.uri.fsPath ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
        return new vscode.DebugAdapterExecutable(found.command, debugAdapterArgs(found.args), { env: stringEnv(found.env), cwd });
      },
    }),
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, {
      resolveDebugConfiguration(folder, config) {
        if (!config.type && !config.request && !config.name) return undefined; // no launch.json: VS Code offers the snippets
        return resolvedConfiguration(config as LaunchConfiguration, folder?.uri.fsPath, vscode.workspace.isTrusted);
      },
    }),
  );
}

/** Debug Agent… (`oscova.client.debugAgent`, registered in extension.ts): asks for the input, starts a session. */
export async function debugAgent(args: DebugArgs): Promise<boolean> {
  const input = await vscode.window.showInputBox({ title: `Debug ${args.agentId ?? 'agent'}`,
    prompt: 'The input the agent is asked', value: args.input ?? '' });
  if (input === undefined) return false;
  const uri = args.uri ? vscode.Uri.parse(args.uri) : vscode.window.activeTextEditor?.document.uri;
  const folder = uri ? vscode.workspace.getWorkspaceFolder(uri) : vscode.workspace.workspaceFolders?.[0];
  return vscode.debug.startDebugging(folder, debugConfiguration(args, folder?.uri.fsPath, input));
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));
}
