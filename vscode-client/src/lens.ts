/**
 * Code lenses from the server name the server's commands (`oscova.runAgent {agentId, input, uri}`),
 * which is what editors without a client extension execute. In VS Code the click goes through the
 * client command instead, which asks for the input (prefilled with the lens's) and opens the Run view.
 */
export const LENS_REWRITES: Readonly<Record<string, string>> = {
  'oscova.runAgent': 'oscova.client.runAgent',
  'oscova.previewPrompt': 'oscova.client.previewPrompt',
  'oscova.runEval': 'oscova.client.runEval',
};

export interface LensCommand { command: string; title: string; arguments?: unknown[]; tooltip?: string }

/** The command a lens click runs in VS Code: the client command for runs and previews, else unchanged. */
export function rewriteLensCommand<T extends LensCommand>(command: T): T {
  const target = LENS_REWRITES[command.command];
  return target ? { ...command, command: target } : command;
}

/** The lenses shown: in an untrusted workspace no `Run agent` (a run is refused there; a preview is not). */
export function visibleLenses<T extends { command?: LensCommand }>(lenses: T[], trusted: boolean): T[] {
  return trusted ? lenses : lenses.filter((lens) => lens.command?.command !== 'oscova.runAgent');
}
