/**
 * Which agent a command acts on: the arguments a code lens, the explorer or the palette gives, and the pick
 * among the agents the server lists (`oscova.listAgents`, which also says each one's `exampleInput`).
 */
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { SERVER_COMMANDS } from './serverCommands';
import type * as wire from './wire';

/** One agent as `oscova.listAgents` lists it (or only its id, when the server does not list it). */
export type AgentInfo = Pick<wire.AgentListing, 'id'> & Partial<wire.AgentListing>;

/** What a run or a preview is asked for: by a code lens (`{agentId, input, uri}`), by a URI, or by nothing. */
export type RunArgs = Partial<wire.RunAgentArguments>;

export function runArgs(arg?: RunArgs | vscode.Uri): RunArgs {
  if (arg instanceof vscode.Uri) return { uri: arg.toString() };
  if (arg && typeof arg === 'object') return { ...arg };
  return {};
}

/** The input to offer: the one given, else the agent's `example_input` as the server read it. */
export function offeredInput(args: RunArgs, agent: AgentInfo): string | undefined {
  return args.input ?? agent.exampleInput ?? undefined;
}

export async function pickAgent(ctx: Ctx, args: RunArgs, title: string): Promise<AgentInfo | undefined> {
  // Only a file on disk names a workspace root (a preview or an untitled document does not).
  const active = vscode.window.activeTextEditor?.document.uri;
  const activeUri = args.uri ?? (active?.scheme === 'file' ? active.toString() : undefined);
  const scope: wire.ScopeArguments = activeUri ? { uri: activeUri } : {};
  const agents = (await ctx.request<AgentInfo[] | null>(SERVER_COMMANDS.listAgents, scope)) ?? [];
  if (args.agentId) return agents.find((a) => a.id === args.agentId) ?? { id: args.agentId, uri: args.uri ?? undefined };
  if (!agents.length) {
    void vscode.window.showInformationMessage('Oscova: no agent definitions (*.agent.yaml) in this workspace.');
    return undefined;
  }
  const ofFile = activeUri ? agents.filter((a) => a.uri === activeUri) : [];
  if (args.uri && ofFile.length === 1) return ofFile[0];
  const items = [...ofFile, ...agents.filter((a) => !ofFile.includes(a))].map((a) => ({
    label: a.id,
    description: a.name && a.name !== a.id ? a.name : undefined,
    detail: a.uri ? vscode.workspace.asRelativePath(vscode.Uri.parse(a.uri)) : undefined,
    agent: a,
  }));
  return (await vscode.window.showQuickPick(items, { title, placeHolder: 'Agent id', matchOnDescription: true, matchOnDetail: true }))?.agent;
}
