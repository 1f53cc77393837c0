/**
 * Runs: Run Agent… (the agent pick and the input box), the server's `oscova/runEvent` notifications into the
 * Run view, cancelling, and what the Run view offers on a finished run (its transcript, Compare with Previous
 * Run, Save Run as Test Case…). The state itself is `runModel.ts` (pure); the view is `runView.ts`.
 */
import * as vscode from 'vscode';
import { CancellationTokenSource } from 'vscode-languageclient/node';
import { offeredInput, pickAgent, runArgs, type RunArgs } from './agents';
import { isComparison, RunComparisons } from './compare';
import type { Ctx } from './ctx';
import { messageOf, UserError } from './errors';
import { applyError, applyResult, isActive, RunStore, type RunEvent, type RunResult, type RunState } from './runModel';
import { RunView } from './runView';
import { SERVER_COMMANDS } from './serverCommands';
import type { AgentTests } from './testing';
import { openTranscript, transcriptPath } from './transcripts';
import { refuseUntrustedRun } from './trust';
import type * as wire from './wire';

export class Runs implements vscode.Disposable {
  readonly store = new RunStore();
  readonly view: RunView;
  /** The `oscova.runAgent` requests in flight, by run key. */
  private readonly requests = new Map<string, CancellationTokenSource>();
  private readonly comparisons = new RunComparisons();
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly ctx: Ctx, private readonly tests: AgentTests) {
    this.view = new RunView(ctx.extension.extensionUri, this.store, {
      cancel: (key) => void this.cancel(key),
      openTranscript: (key) => void openTranscript(ctx, this.store.get(key)?.transcript, this.store.get(key)?.agentId),
      compare: (key) => void this.compareWithPrevious(key),
      saveTestCase: (key) => void this.saveTestCase(key),
    });
    this.subscriptions = [
      this.view, this.comparisons,
      ctx.onRunEvent((event) => this.onRunEvent(event)),
      ctx.onWillStop(() => this.serverStopped()),
    ];
  }

  /** "Run Agent…": refused in Restricted Mode; else the agent, its input, then the run in the Run view. */
  async run(arg?: RunArgs | vscode.Uri): Promise<void> {
    if (refuseUntrustedRun()) return;
    try {
      const args = runArgs(arg);
      const agent = await pickAgent(this.ctx, args, 'Run which agent?');
      if (!agent) return;
      const input = await vscode.window.showInputBox({
        title: `Run ${agent.name ?? agent.id}`,
        prompt: 'The input sent to the agent',
        value: offeredInput(args, agent),
        ignoreFocusOut: true,
      });
      if (input === undefined) return;
      await this.start({ agentId: agent.id, input, uri: args.uri ?? agent.uri, sessionId: args.sessionId }, agent.name);
    } catch (error) {
      this.ctx.showError(error);
    }
  }

  /** "Cancel Run": the given run (a key or the server's runId), the one in progress, or a pick among them. */
  async cancel(keyOrRunId?: string): Promise<void> {
    const given = keyOrRunId ? (this.store.get(keyOrRunId) ? keyOrRunId : this.store.keyOf(keyOrRunId)) : undefined;
    const key = given ?? await this.pickActive();
    const run = key ? this.store.get(key) : undefined;
    if (!run || !isActive(run)) return;
    const cts = this.requests.get(run.key);
    if (run.runId) {
      try {
        await this.ctx.request(SERVER_COMMANDS.cancelRun, { runId: run.runId } satisfies wire.CancelRunArguments);
      } catch (error) {
        this.ctx.output.appendLine(`[client] oscova.cancelRun failed: ${messageOf(error)}; cancelling the request`);
        cts?.cancel();
      }
      // The server ends the run with a `cancelled` event; should it not, the request is cancelled too.
      setTimeout(() => { if (isActive(this.store.get(run.key) ?? run)) cts?.cancel(); }, 5000);
    } else {
      cts?.cancel();
    }
  }

  async compareWithPrevious(key?: string): Promise<void> {
    const run = this.finishedRun(key);
    if (!run?.transcript) return;
    try {
      const args: wire.CompareRunsArguments = { transcript: transcriptPath(run.transcript) };
      const answer = await this.ctx.request<unknown>(SERVER_COMMANDS.compareRuns, args);
      if (!isComparison(answer)) throw new UserError('the server gave no comparison');
      await this.comparisons.open(answer);
    } catch (error) {
      this.ctx.showError(error);
    }
  }

  /** "Save Run as Test Case…": the run's transcript saved by the server under `.oscova/tests/`. */
  async saveTestCase(key?: string): Promise<void> {
    const run = this.finishedRun(key);
    if (!run?.runId) return;
    const name = await vscode.window.showInputBox({
      title: `Save the run of ${run.agentId} as a test case`,
      prompt: 'The case name (saved as .oscova/tests/<name>.jsonl; `/` makes folders)',
      value: run.agentId,
      validateInput: (v) => (/^[A-Za-z0-9][A-Za-z0-9_.-]*(\/[A-Za-z0-9][A-Za-z0-9_.-]*)*$/.test(v.trim()) ? undefined : 'Letters, digits, _ . - and / between folders'),
    });
    if (!name) return;
    try {
      const transcript = transcriptPath(run.transcript ?? '');
      const args: wire.SaveTestCaseArguments = { runId: transcript, name: name.trim(), uri: vscode.Uri.file(transcript).toString() };
      const saved = await this.ctx.request<Partial<Pick<wire.SavedCase, 'name' | 'gitignore'>>>(SERVER_COMMANDS.saveTestCase, args);
      await this.tests.refresh();
      void this.savedNotice(saved?.name ?? name, saved?.gitignore);
    } catch (error) {
      this.ctx.showError(error);
    }
  }

  /** On the workspace's first case the server sends the `.gitignore` lines that commit the cases and keep the
   * rest of `.oscova/` (transcripts, memory: this machine's) out; the notice offers to copy them. */
  private async savedNotice(name: string, gitignore: string[] | undefined): Promise<void> {
    if (!gitignore?.length) {
      void vscode.window.showInformationMessage(`Oscova: saved the test case ${name}.`);
      return;
    }
    const copy = 'Copy .gitignore lines';
    const choice = await vscode.window.showInformationMessage(
      `Oscova: saved the test case ${name}. Commit .oscova/tests/: a case is a fixture of your repository. `
        + `Keep the rest of .oscova/ out with these lines in the .gitignore beside oscova.toml: ${gitignore.join('  ')}`,
      copy,
    );
    if (choice === copy) await vscode.env.clipboard.writeText(gitignore.join('\n') + '\n');
  }

  private async start(args: Required<Pick<RunArgs, 'agentId' | 'input'>> & RunArgs, agentName?: string): Promise<void> {
    const run = this.store.begin(args.agentId, args.input);
    if (agentName) this.store.update(run.key, (r) => ({ ...r, agentName }));
    const cts = new CancellationTokenSource();
    this.requests.set(run.key, cts);
    this.view.show(run.key);
    this.updateStatus();
    this.showInstructions(run.key, args);
    const request: wire.RunAgentArguments = { agentId: args.agentId, input: args.input };
    if (args.uri) request.uri = args.uri;
    if (args.sessionId) request.sessionId = args.sessionId;
    try {
      const result = await this.ctx.request<RunResult>(SERVER_COMMANDS.runAgent, request, cts.token);
      this.store.update(run.key, (r) => applyResult(r, result, Date.now()));
    } catch (error) {
      const cancelled = cts.token.isCancellationRequested;
      this.store.update(run.key, (r) => (cancelled ? { ...applyError(r, '', Date.now()), status: 'cancelled', error: undefined } : applyError(r, messageOf(error), Date.now())));
    } finally {
      this.requests.delete(run.key);
      cts.dispose();
      this.view.changed(run.key);
      this.updateStatus();
    }
    const done = this.store.get(run.key);
    if (done?.status === 'failed' && !this.view.shown) {
      void vscode.window.showErrorMessage(`Oscova: ${done.agentId} failed: ${done.error}`, 'Show Run')
        .then((c) => { if (c) this.view.show(run.key, false); });
    } else if (done?.status === 'completed' && done.incomplete && !this.view.shown) {
      void vscode.window.showWarningMessage(`Oscova: ${done.agentId}: ${done.incomplete.message}`, 'Show Run')
        .then((c) => { if (c) this.view.show(run.key, false); });
    }
  }

  /** The assembled instructions, shown while the model works (a preview runs no model). */
  private showInstructions(key: string, args: Required<Pick<RunArgs, 'agentId' | 'input'>> & RunArgs): void {
    const preview: wire.PreviewPromptArguments = { agentId: args.agentId, input: args.input, uri: args.uri };
    void this.ctx.request<wire.Fields<wire.PreviewResult>>(SERVER_COMMANDS.previewPrompt, preview)
      .then((preview) => {
        const instructions = preview?.instructions;
        if (typeof instructions === 'string') {
          this.store.update(key, (r) => (r.instructions === undefined ? { ...r, instructions } : r));
          this.view.changed(key);
        }
      }, (error) => this.ctx.output.appendLine(`[client] preview for the Run view failed: ${messageOf(error)}`));
  }

  private onRunEvent(event: RunEvent): void {
    const known = typeof event?.runId === 'string' && this.store.keyOf(event.runId) !== undefined;
    const key = this.store.apply(event);
    if (!key) return;
    if (!known && !this.requests.has(key)) this.view.show(key); // a run started by something else
    this.view.changed(key);
    this.updateStatus();
  }

  /** The server stopped: its runs in progress will never end by themselves. */
  private serverStopped(): void {
    for (const run of this.store.active()) this.store.update(run.key, (r) => applyError(r, 'the language server stopped', Date.now()));
    this.updateStatus();
  }

  private async pickActive(): Promise<string | undefined> {
    const active = this.store.active();
    if (!active.length) {
      void vscode.window.showInformationMessage('Oscova: no run in progress.');
      return undefined;
    }
    if (active.length === 1) return active[0].key;
    const pick = await vscode.window.showQuickPick(active.map((r) => ({ label: r.agentId, description: r.input.slice(0, 80), key: r.key })), { title: 'Cancel which run?' });
    return pick?.key;
  }

  /** The run a command acts on: the given one, else the one the Run view shows, else the newest finished run. */
  private finishedRun(key?: string): RunState | undefined {
    const run = (key ? this.store.get(key) : undefined) ?? this.view.shown ?? [...this.store.all()].reverse().find((r) => !isActive(r));
    if (!run || isActive(run) || !run.transcript) {
      void vscode.window.showInformationMessage('Oscova: no finished run with a transcript yet.');
      return undefined;
    }
    return run;
  }

  private updateStatus(): void {
    this.ctx.status.setRuns(this.store.active().length);
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
  }
}
