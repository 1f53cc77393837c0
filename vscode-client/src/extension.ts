/**
 * The Oscova extension's activation (rust-analyzer's `main.ts`): it makes the context (`ctx.ts`: the output,
 * the status bar and the language server's lifecycle) and the features, and registers every client command
 * in one table below. Each concern has its module: `runs.ts` (Run Agent, the Run view, cancel, compare, save
 * as test case), `testing.ts` (the Test Explorer), `evalTests.ts` (evaluations there), `previews.ts` (Preview Prompt), `review.ts` (Review
 * Changes), `debug.ts` (the debugger), `transcripts.ts`, `apiKeys.ts`, `middleware.ts` (lenses, trust), `trust.ts`.
 *
 * The server's own commands (`oscova.runAgent`, `oscova.previewPrompt`, …) are registered by the language
 * client from `executeCommandProvider`; the extension only calls them (`Ctx.request`), under its own
 * `oscova.client.*` ids. A new command: its handler in its concern's module, one line in `registerCommands`,
 * its entry in package.json's `contributes.commands` (and in `statusMenu` when it belongs there).
 */
import * as vscode from 'vscode';
import { setApiKey } from './apiKeys';
import type { RunArgs } from './agents';
import { Ctx, STATUS_MENU_COMMAND } from './ctx';
import { debugAgent, registerDebugger } from './debug';
import type { DebugArgs } from './debugConfig';
import { previewPrompt, PreviewDocuments } from './previews';
import { reviewChanges } from './review';
import { Runs } from './runs';
import { AgentTests } from './testing';
import { EvalTests } from './evalTests';
import { showRunTranscript } from './transcripts';
import { startWhenDeclared } from './workspaceGate';

/** What the commands act on; made once per activation. */
interface Features {
  ctx: Ctx;
  runs: Runs;
  tests: AgentTests;
  evals: EvalTests;
  previews: PreviewDocuments;
}

let ctx: Ctx | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const server = new Ctx(context);
  ctx = server;
  const { version } = context.extension.packageJSON as { version: string };
  server.output.appendLine(`[client] the Oscova extension ${version} is activated`);
  const tests = new AgentTests((command, arg, token) => server.request(command, arg, token), (line) => server.output.appendLine(line));
  const evals = new EvalTests((command, arg, token) => server.request(command, arg, token), (line) => server.output.appendLine(line),
    server.onDidSendFileEvent);
  const features: Features = { ctx: server, tests, evals, runs: new Runs(server, tests), previews: new PreviewDocuments() };
  const restart = () => void server.restart();
  context.subscriptions.push(
    server, tests, evals, features.runs, features.previews,
    server.onDidStart(() => { void tests.refresh(); void evals.refresh(); }),
    vscode.workspace.onDidGrantWorkspaceTrust(restart),
    vscode.workspace.onDidChangeConfiguration((e) => { if (e.affectsConfiguration('oscova.server.command') || e.affectsConfiguration('oscova.server.preferInstalled')) restart(); }),
  );
  registerCommands(context, features);
  registerDebugger(context, () => server.adapterServer());
  context.subscriptions.push(await startWhenDeclared(() => server.start(), (line) => server.output.appendLine(line)));
}

export async function deactivate(): Promise<void> {
  await ctx?.stop();
  ctx = undefined;
}

/** Every `oscova.client.*` command (package.json's `contributes.commands` lists the same ids). */
function registerCommands(context: vscode.ExtensionContext, { ctx, runs, evals, previews }: Features): void {
  const command = (id: string, fn: (...args: never[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  command('oscova.client.runAgent', (arg?: RunArgs | vscode.Uri) => runs.run(arg));
  command('oscova.client.debugAgent', (args?: DebugArgs) => debugAgent(args ?? {}));
  command('oscova.client.previewPrompt', (arg?: RunArgs | vscode.Uri) => previewPrompt(ctx, previews, arg));
  command('oscova.client.cancelRun', (arg?: string | { runId?: string }) => runs.cancel(typeof arg === 'string' ? arg : arg?.runId));
  command('oscova.client.showRunTranscript', () => showRunTranscript(ctx, runs.store));
  command('oscova.client.showRunView', () => runs.view.show(undefined, false));
  command('oscova.client.compareWithPreviousRun', (key?: string) => runs.compareWithPrevious(key));
  command('oscova.client.saveRunAsTestCase', (key?: string) => runs.saveTestCase(key));
  command('oscova.client.runEval', (arg?: { uri?: string; case?: string }) => evals.runCase(arg));
  command('oscova.client.reviewChanges', () => reviewChanges(ctx, previews));
  command('oscova.client.setApiKey', () => setApiKey(ctx.extension, ctx.output, () => ctx.restart()));
  command('oscova.client.restartServer', () => ctx.restart());
  command('oscova.client.showOutput', () => ctx.output.show(true));
  command(STATUS_MENU_COMMAND, () => statusMenu(runs));
}

/** The status bar item's menu: the commands a user looks for there. */
async function statusMenu(runs: Runs): Promise<void> {
  const items = [
    { label: '$(play) Run Agent…', command: 'oscova.client.runAgent' },
    { label: '$(preview) Preview Prompt…', command: 'oscova.client.previewPrompt' },
    { label: '$(git-compare) Review Changes Against…', command: 'oscova.client.reviewChanges' },
    ...(runs.store.active().length ? [{ label: '$(debug-stop) Cancel Run', command: 'oscova.client.cancelRun' }] : []),
    { label: '$(window) Show Run View', command: 'oscova.client.showRunView' },
    { label: '$(history) Show Run Transcript', command: 'oscova.client.showRunTranscript' },
    { label: '$(key) Set API Key…', command: 'oscova.client.setApiKey' },
    { label: '$(debug-restart) Restart Server', command: 'oscova.client.restartServer' },
    { label: '$(output) Show Server Output', command: 'oscova.client.showOutput' },
  ];
  const pick = await vscode.window.showQuickPick(items, { title: 'Oscova' });
  if (pick) await vscode.commands.executeCommand(pick.command);
}
