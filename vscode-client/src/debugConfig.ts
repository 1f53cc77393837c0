/**
 * The debugger's plain parts (no `vscode` import, unit-tested): the launch configuration a "Debug agent"
 * lens starts, the lens beside each "Run agent" lens, and the adapter's command line (the language server's
 * command, with `debug`).
 */
import type { LensCommand } from './lens';

export const DEBUG_TYPE = 'oscova';
export const DEBUG_AGENT_COMMAND = 'oscova.client.debugAgent';

export interface DebugArgs { agentId?: string; input?: string; uri?: string }

export interface LaunchConfiguration {
  type: string;
  request: 'launch';
  name: string;
  agent?: string;
  input?: string;
  root?: string;
  replay?: string;
  liveFrom?: number;
  stopOnEntry?: boolean;
  functionBreakpoints?: string[];
  workspaceTrusted?: boolean;
  [key: string]: unknown;
}

/** The launch configuration of a "Debug agent" click: that agent on that input, in the folder's workspace. */
export function debugConfiguration(args: DebugArgs, root: string | undefined, input: string): LaunchConfiguration {
  const config: LaunchConfiguration = { type: DEBUG_TYPE, request: 'launch', name: `Debug ${args.agentId ?? 'agent'}`,
    agent: args.agentId, input };
  if (root) config.root = root;
  return config;
}

/** A configuration as VS Code hands it over before the launch: the workspace's trust always set (a run is
 * refused in Restricted Mode, by the adapter, in the runs' words), and the folder as the root by default. */
export function resolvedConfiguration(config: LaunchConfiguration, folder: string | undefined, trusted: boolean): LaunchConfiguration {
  const resolved: LaunchConfiguration = { ...config, type: config.type || DEBUG_TYPE, request: 'launch',
    name: config.name || 'Debug agent', workspaceTrusted: trusted };
  if (!resolved.root && folder) resolved.root = folder;
  return resolved;
}

/** Beside each "Run agent" lens, a "Debug agent" lens with the same agent and input (`make` builds one). */
export function withDebugLenses<T extends { command?: LensCommand }>(lenses: T[], make: (from: T, command: LensCommand) => T): T[] {
  return lenses.flatMap((lens) => {
    const command = lens.command;
    if (!command || (command.command !== 'oscova.runAgent' && command.command !== 'oscova.client.runAgent')) return [lens];
    return [lens, make(lens, { title: 'Debug agent', command: DEBUG_AGENT_COMMAND, arguments: command.arguments,
      tooltip: 'Run the agent under the debugger: stop before model calls and tool calls, inspect and edit what it sends' })];
  });
}

const SERVER_ONLY_FLAGS = /^--(stdio|tcp|clientProcessId|port|host)/;

/** The adapter's arguments: the language server's command line without its transport flags, then `debug`. */
export function debugAdapterArgs(serverArgs: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < serverArgs.length; i++) {
    const arg = serverArgs[i];
    if (SERVER_ONLY_FLAGS.test(arg)) {
      if (!arg.includes('=') && /^--(clientProcessId|port|host)$/.test(arg)) i++; // its value too
      continue;
    }
    kept.push(arg);
  }
  return [...kept, 'debug'];
}

/** The snippets launch.json offers (`configurationSnippets` in package.json holds the same three). */
export const SNIPPET_NAMES = ['Oscova: Debug an agent', 'Oscova: Replay a recorded run', 'Oscova: Fork a run from model call N'];
