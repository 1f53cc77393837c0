/**
 * Agent tests in the Test Explorer (`vscode.tests`): the cases under `.oscova/tests/` of the workspace,
 * listed by the server (`oscova.listTests`) and replayed by it one by one (`oscova.runTest`), so the
 * extension runs exactly what `oscova-lsp test` runs. A drifted case fails with the diff of what was
 * recorded and what the agent sends now. In Restricted Mode the cases are listed but never replayed
 * (a replay builds the agent, which imports the workspace's providers).
 */
import * as vscode from 'vscode';
import { messageOf } from './errors';
import { casesOf, describeCase, outcomeOf, type TestCaseInfo, type TestCaseResult } from './testCases';
import { offerTrust } from './trust';
import type * as wire from './wire';

export type ServerRequest = <T>(command: string, arg: unknown, token?: vscode.CancellationToken) => Promise<T>;

export const TEST_COMMANDS = { list: 'oscova.listTests', run: 'oscova.runTest' } as const;
const TRUST_MESSAGE = 'Oscova replays agent tests only in a trusted workspace: a replay builds the agent, which imports the workspace\'s providers.';

export class AgentTests implements vscode.Disposable {
  readonly controller = vscode.tests.createTestController('oscova.agentTests', 'Oscova Agent Tests');
  private readonly disposables: vscode.Disposable[] = [this.controller];
  private refreshing: Promise<void> | undefined;

  constructor(private readonly request: ServerRequest, private readonly log: (line: string) => void) {
    const { controller } = this;
    controller.resolveHandler = async (item) => { if (!item) await this.refresh(); };
    controller.refreshHandler = () => this.refresh();
    controller.createRunProfile('Run', vscode.TestRunProfileKind.Run, (req, token) => this.run(req, token, false), true);
    controller.createRunProfile('Update expectations', vscode.TestRunProfileKind.Run, (req, token) => this.run(req, token, true), false);
    const watcher = vscode.workspace.createFileSystemWatcher('**/.oscova/tests/**/*.jsonl');
    const changed = () => void this.refresh();
    this.disposables.push(watcher, watcher.onDidCreate(changed), watcher.onDidDelete(changed));
  }

  /** Lists the cases again (at most one listing at a time). */
  refresh(): Promise<void> {
    if (!this.refreshing) this.refreshing = this.list().finally(() => { this.refreshing = undefined; });
    return this.refreshing;
  }

  private async list(): Promise<void> {
    let cases: TestCaseInfo[];
    try {
      cases = casesOf(await this.request<unknown>(TEST_COMMANDS.list, {}));
    } catch (error) {
      this.log(`[tests] listing the agent tests failed: ${messageOf(error)}`);
      return;
    }
    const items = cases.map((info) => {
      const item = this.controller.createTestItem(info.uri, info.name, vscode.Uri.parse(info.uri));
      item.description = describeCase(info);
      item.error = info.error;
      return item;
    });
    this.controller.items.replace(items);
  }

  private async run(req: vscode.TestRunRequest, token: vscode.CancellationToken, update: boolean): Promise<void> {
    const run = this.controller.createTestRun(req);
    const queue: vscode.TestItem[] = [];
    const excluded = new Set(req.exclude ?? []);
    (req.include ?? [...collect(this.controller.items)]).forEach((item) => { if (!excluded.has(item)) queue.push(item); });
    try {
      if (!vscode.workspace.isTrusted) {
        for (const item of queue) run.errored(item, new vscode.TestMessage(TRUST_MESSAGE));
        offerTrust(TRUST_MESSAGE, 'warning');
        return;
      }
      for (const item of queue) run.enqueued(item);
      for (const item of queue) {
        if (token.isCancellationRequested) { run.skipped(item); continue; }
        run.started(item);
        let result: TestCaseResult | undefined;
        try {
          result = await this.request<TestCaseResult>(TEST_COMMANDS.run, { uri: item.id, update } satisfies wire.RunTestArguments, token);
        } catch (error) {
          run.errored(item, new vscode.TestMessage(messageOf(error)));
          continue;
        }
        const outcome = outcomeOf(result);
        if (outcome.kind === 'passed') {
          run.passed(item, outcome.durationMs);
          if (result?.status === 'updated') run.appendOutput(`${item.label}: updated; the recording now holds what the agent sends\r\n`, undefined, item);
        } else if (outcome.kind === 'failed') {
          // The diff view (recorded → now) when the difference has two sides; open the failure to see it.
          const message = outcome.expected !== undefined && outcome.actual !== undefined
            ? vscode.TestMessage.diff(outcome.message, outcome.expected, outcome.actual)
            : new vscode.TestMessage(outcome.message);
          if (item.uri) message.location = new vscode.Location(item.uri, new vscode.Position(0, 0));
          run.failed(item, message, outcome.durationMs);
          run.appendOutput(`${outcome.message.replace(/\n/g, '\r\n')}\r\n`, undefined, item);
        } else {
          run.errored(item, new vscode.TestMessage(outcome.message), outcome.durationMs);
        }
      }
    } finally {
      run.end();
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

function* collect(items: vscode.TestItemCollection): Generator<vscode.TestItem> {
  const all: vscode.TestItem[] = [];
  items.forEach((item) => all.push(item));
  yield* all;
}
