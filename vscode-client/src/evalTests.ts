/**
 * Evaluations in the Test Explorer beside the agent tests: each `*.eval.yaml` file and its cases, listed by
 * the server (`oscova.listEvals`) and run by it (`oscova.runEval`, as `oscova-lsp eval` runs them). The
 * `Run` profile uses each evaluation's own models; a `Run on MODEL` profile is added for each model the
 * evaluations name. In Restricted Mode the evaluations are listed but never run.
 */
import * as vscode from 'vscode';
import { evalFilesOf, evalOutcomeOf, evalRunName, matrixHtml, modelsOf, type EvalCell, type EvalOutcome, type EvalResult } from './evalCases';
import type { ServerRequest } from './testing';
import type * as wire from './wire';

export const EVAL_COMMANDS = { list: 'oscova.listEvals', run: 'oscova.runEval' } as const;
const TRUST_MESSAGE = 'Oscova runs evaluations only in a trusted workspace: a run builds the agent, which imports the workspace\'s code.';

export class EvalTests implements vscode.Disposable {
  readonly controller = vscode.tests.createTestController('oscova.evals', 'Oscova Evaluations');
  private readonly disposables: vscode.Disposable[] = [this.controller];
  private readonly profiles = new Map<string, vscode.TestRunProfile>();
  private refreshing: Promise<void> | undefined;
  private listAgain = false;
  private panel: vscode.WebviewPanel | undefined;

  /** `fileEvents`: the watched files the server has been told changed (its listing then holds the change). */
  constructor(private readonly request: ServerRequest, private readonly log: (line: string) => void,
    fileEvents: vscode.Event<vscode.Uri>) {
    const { controller } = this;
    controller.resolveHandler = async (item) => { if (!item) await this.refresh(); };
    controller.refreshHandler = () => this.refresh();
    controller.createRunProfile('Run', vscode.TestRunProfileKind.Run, (req, token) => this.run(req, token, []), true);
    // Not a watcher of its own: its event can come before the server hears of the file, and the listing is the server's.
    this.disposables.push(fileEvents((uri) => { if (/\.eval\.ya?ml$/.test(uri.path)) void this.refresh(); }));
  }

  /** Lists the evaluations; asked while a listing is under way, lists once more after it (which may predate the change). */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.listAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.listAgain = false;
        await this.list();
      } while (this.listAgain);
    })().finally(() => { this.refreshing = undefined; });
    return this.refreshing;
  }

  /** Runs one case (a `Run eval` lens) with the default profile, in the Test Explorer. */
  async runCase(arg?: { uri?: string; case?: string }): Promise<void> {
    await this.refresh();
    const file = arg?.uri ? this.controller.items.get(arg.uri) : undefined;
    const item = file && arg?.case ? file.children.get(`${arg.uri}#${arg.case}`) : file;
    if (!item) { void vscode.window.showWarningMessage('Oscova: that evaluation case is not listed; save the file first.'); return; }
    const source = new vscode.CancellationTokenSource();
    try {
      await this.run(new vscode.TestRunRequest([item]), source.token, []);
    } finally {
      source.dispose();
    }
  }

  private async list(): Promise<void> {
    let files;
    try {
      files = evalFilesOf(await this.request<unknown>(EVAL_COMMANDS.list, {}));
    } catch (error) {
      this.log(`[evals] listing the evaluations failed: ${String((error as Error)?.message ?? error)}`);
      return;
    }
    this.controller.items.replace(files.map((info) => {
      const uri = vscode.Uri.parse(info.uri);
      const item = this.controller.createTestItem(info.uri, vscode.workspace.asRelativePath(uri), uri);
      item.description = info.agent ? `agent ${info.agent}` : undefined;
      item.error = info.error;
      item.children.replace((info.cases ?? []).map((c) => {
        const child = this.controller.createTestItem(`${info.uri}#${c.name}`, c.name, uri);
        child.range = new vscode.Range(c.line, 0, c.line, 0);
        return child;
      }));
      return item;
    }));
    for (const model of modelsOf(files)) {
      if (!this.profiles.has(model)) {
        this.profiles.set(model, this.controller.createRunProfile(`Run on ${model}`, vscode.TestRunProfileKind.Run,
          (req, token) => this.run(req, token, [model]), false));
      }
    }
  }

  private cases(req: vscode.TestRunRequest): vscode.TestItem[] {
    const excluded = new Set(req.exclude ?? []);
    const roots: vscode.TestItem[] = [];
    if (req.include) roots.push(...req.include); else this.controller.items.forEach((i) => roots.push(i));
    const out: vscode.TestItem[] = [];
    for (const item of roots) {
      if (excluded.has(item)) continue;
      if (item.children.size === 0) out.push(item);
      else item.children.forEach((child) => { if (!excluded.has(child)) out.push(child); });
    }
    return out;
  }

  private async run(req: vscode.TestRunRequest, token: vscode.CancellationToken, models: string[]): Promise<void> {
    const run = this.controller.createTestRun(req, evalRunName(models));
    const queue = this.cases(req);
    const cells: { file: string; agent: string; cell: EvalCell }[] = [];
    try {
      if (!vscode.workspace.isTrusted) {
        for (const item of queue) run.errored(item, new vscode.TestMessage(TRUST_MESSAGE));
        return;
      }
      for (const item of queue) run.enqueued(item);
      for (const item of queue) {
        if (token.isCancellationRequested) { run.skipped(item); continue; }
        run.started(item);
        const [uri, name] = item.id.split('#');
        try {
          const args: wire.RunEvalArguments = { uri, case: name, models };
          const result = await this.request<EvalResult>(EVAL_COMMANDS.run, args, token);
          const outcome = evalOutcomeOf(result, name);
          for (const e of result.evals) for (const cell of e.cases) cells.push({ file: e.file, agent: e.agent, cell });
          run.appendOutput(`${name}: ${outcome.message.replace(/\n/g, '\r\n')}\r\n`, undefined, item);
          if (outcome.passed) run.passed(item, outcome.durationMs);
          else run.failed(item, this.messages(item, outcome), outcome.durationMs);
        } catch (error) {
          run.errored(item, new vscode.TestMessage(String((error as Error)?.message ?? error)));
        }
      }
    } finally {
      run.end();
      if (cells.length) this.showResults(cells);
    }
  }

  /** A failed case's messages at its line: the summary, then a diff view (expected → actual) per drifted output. */
  private messages(item: vscode.TestItem, outcome: EvalOutcome): vscode.TestMessage[] {
    const messages = [new vscode.TestMessage(outcome.message),
      ...outcome.diffs.map((d) => vscode.TestMessage.diff(d.message, d.expected, d.actual))];
    if (item.uri && item.range) for (const m of messages) m.location = new vscode.Location(item.uri, item.range);
    return messages;
  }

  /** The results view: the matrix of the run that just ended (a webview without scripts). */
  private showResults(cells: { file: string; agent: string; cell: EvalCell }[]): void {
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel('oscova.evalResults', 'Oscova Evaluation', { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: false });
      this.panel.onDidDispose(() => { this.panel = undefined; });
    }
    this.panel.webview.html = matrixHtml(cells, this.panel.webview.cspSource);
    this.panel.reveal(undefined, true);
  }

  dispose(): void {
    this.panel?.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
