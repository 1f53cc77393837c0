/**
 * The Oscova extension: starts `oscova-lsp` through vscode-languageclient, and adds what needs editor UI
 * around the server's commands (agent pick and input box, the Run view, API keys, workspace trust).
 *
 * The server's own commands (`oscova.runAgent`, `oscova.previewPrompt`, …) are registered by the
 * language client from `executeCommandProvider`; this file only calls them, under `oscova.client.*` ids.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  CancellationTokenSource,
  ExecuteCommandRequest,
  LanguageClient,
  State,
  TransportKind,
  type LanguageClientOptions,
  type Middleware,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { distinctEnvs, modelKeys, secretKey, type ModelKey } from './apiKeyEnv';
import { rewriteLensCommand, visibleLenses } from './lens';
import { previewMarkdown } from './preview';
import { applyError, applyResult, isActive, RunStore, type RunEvent, type RunResult } from './runModel';
import { RunView } from './runView';
import { installCommand, PYTHON_PROBE_ARGS, REPOSITORY, resolveServerCommand, type Resolution } from './serverCommand';
import { StatusBar } from './statusBar';
import { isComparison, RunComparisons } from './compare';
import { AgentTests } from './testing';
import { EvalTests } from './evalTests';
import { exampleInputFromYaml } from './yamlScalar';

const SERVER_COMMANDS = {
  runAgent: 'oscova.runAgent',
  previewPrompt: 'oscova.previewPrompt',
  cancelRun: 'oscova.cancelRun',
  listAgents: 'oscova.listAgents',
} as const;

const PREVIEW_SCHEME = 'oscova-preview';
const KNOWN_ENVS = 'oscova.apiKeyEnvs';
const TRUST_MESSAGE = 'Oscova runs agents only in a trusted workspace: a run imports the workspace\'s tools and providers and calls models.';
const PREVIEW_TRUST_MESSAGE = 'Oscova: Restricted Mode. The preview shows what the built-in providers render; the workspace\'s own tools and providers are not loaded (their code would run) until you trust the workspace.';

interface AgentInfo { id: string; name?: string; uri?: string; exposedAsTool?: boolean; exampleInput?: string; example_input?: string }
interface RunArgs { agentId?: string; input?: string; uri?: string; sessionId?: string }

let extension: OscovaExtension | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<OscovaExtension> {
  extension = new OscovaExtension(context);
  await extension.start();
  return extension;
}

export async function deactivate(): Promise<void> {
  await extension?.stop();
  extension = undefined;
}

export class OscovaExtension {
  readonly output = vscode.window.createOutputChannel('Oscova', { log: true });
  readonly store = new RunStore();
  private client: LanguageClient | undefined;
  private readonly status = new StatusBar('oscova.client.statusMenu');
  private readonly runView: RunView;
  private readonly requests = new Map<string, CancellationTokenSource>();
  private readonly previews = new Map<string, string>();
  private readonly previewChanged = new vscode.EventEmitter<vscode.Uri>();
  private starting: Promise<void> | undefined;
  readonly tests: AgentTests;
  readonly evals: EvalTests;
  private readonly comparisons = new RunComparisons();

  constructor(private readonly context: vscode.ExtensionContext) {
    this.tests = new AgentTests((command, arg, token) => this.serverCommand(command, arg, token), (line) => this.output.appendLine(line));
    this.evals = new EvalTests((command, arg, token) => this.serverCommand(command, arg, token), (line) => this.output.appendLine(line));
    context.subscriptions.push(this.tests, this.evals, this.comparisons);
    this.runView = new RunView(context.extensionUri, this.store, {
      cancel: (key) => void this.cancelRun(key),
      openTranscript: (key) => void this.openTranscript(this.store.get(key)?.transcript, this.store.get(key)?.agentId),
      compare: (key) => void this.compareWithPrevious(key),
      saveTestCase: (key) => void this.saveTestCase(key),
    });
    const command = (id: string, fn: (...args: any[]) => unknown) =>
      context.subscriptions.push(vscode.commands.registerCommand(id, fn));
    command('oscova.client.runAgent', (arg?: RunArgs | vscode.Uri) => this.runAgent(arg));
    command('oscova.client.previewPrompt', (arg?: RunArgs | vscode.Uri) => this.previewPrompt(arg));
    command('oscova.client.cancelRun', (arg?: string | { runId?: string }) => this.cancelRun(typeof arg === 'string' ? arg : arg?.runId));
    command('oscova.client.showRunTranscript', () => this.showRunTranscript());
    command('oscova.client.showRunView', () => this.runView.show(undefined, false));
    command('oscova.client.compareWithPreviousRun', (key?: string) => this.compareWithPrevious(key));
    command('oscova.client.saveRunAsTestCase', (key?: string) => this.saveTestCase(key));
    command('oscova.client.setApiKey', () => this.setApiKey());
    command('oscova.client.restartServer', () => this.restart());
    command('oscova.client.showOutput', () => this.output.show(true));
    command('oscova.client.statusMenu', () => this.statusMenu());
    command('oscova.client.runEval', (arg?: { uri?: string; case?: string }) => this.evals.runCase(arg));
    context.subscriptions.push(
      this.output, this.status, this.runView, this.previewChanged,
      vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, {
        onDidChange: this.previewChanged.event,
        provideTextDocumentContent: (uri) => this.previews.get(uri.toString()) ?? '',
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.restart()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('oscova.server.command')) void this.restart();
      }),
    );
  }

  // ------------------------------------------------------------------------------------- server

  async start(): Promise<void> {
    if (!this.starting) this.starting = this.startServer().finally(() => { this.starting = undefined; });
    return this.starting;
  }

  private async startServer(): Promise<void> {
    this.status.setServer('starting');
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
    const resolution = await resolveServerCommand({
      configured: vscode.workspace.getConfiguration('oscova').get('server.command'),
      pathEnv: process.env.PATH,
      platform: process.platform,
      workspaceFolders: folders,
      trusted: vscode.workspace.isTrusted,
      isExecutable,
      pythonInterpreter: () => pythonInterpreter(),
      pythonHasServer: (interpreter) => pythonHasServer(interpreter, this.context.extensionUri.fsPath),
    });
    if (!resolution.ok) {
      this.status.setServer('missing', resolution.reason);
      this.output.appendLine(`[client] ${resolution.reason} (searched PATH=${process.env.PATH ?? ''})`);
      void this.notifyMissing(resolution);
      return;
    }
    const { command, args, source } = resolution.server;
    this.output.appendLine(`[client] starting ${[command, ...args].join(' ')} (${source})`);
    const env = await this.serverEnvironment();
    const executable = { command, args, transport: TransportKind.stdio, options: { env, cwd: folders[0] } };
    const serverOptions: ServerOptions = { run: executable, debug: executable };
    const config = vscode.workspace.getConfiguration('oscova');
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'yaml', pattern: '**/*.agent.{yaml,yml}' },
        { scheme: 'file', pattern: '**/*.agent.{yaml,yml}' },
        { scheme: 'file', language: 'jinja' },
        { scheme: 'file', pattern: '**/*.{j2,jinja,jinja2}' },
        { scheme: 'file', pattern: '**/oscova.toml' },
        { scheme: 'file', pattern: '**/pyproject.toml' },
        { scheme: 'file', pattern: '**/*.eval.{yaml,yml}' },
      ],
      outputChannel: this.output,
      traceOutputChannel: this.output,
      synchronize: {
        configurationSection: 'oscova',
        fileEvents: [
          vscode.workspace.createFileSystemWatcher('**/*.{agent.yaml,agent.yml,j2,jinja,jinja2,eval.yaml,eval.yml}'),
          vscode.workspace.createFileSystemWatcher('**/oscova.toml'),
        ],
      },
      initializationOptions: {
        debounce: config.get('debounce'),
        lint: { ignore: config.get('lint.ignore'), severity: config.get('lint.severity') },
        workspaceTrusted: vscode.workspace.isTrusted,
      },
      middleware: this.middleware(),
    };
    const client = new LanguageClient('oscova', 'Oscova Language Server', serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((e) => {
      if (this.client !== client) return;
      if (e.newState === State.Running) this.status.setServer('running', source);
      else if (e.newState === State.Starting) this.status.setServer('starting');
      else this.status.setServer('stopped');
    });
    client.onNotification('oscova/runEvent', (event: RunEvent) => this.onRunEvent(event));
    try {
      await client.start();
      void this.tests.refresh();
      void this.evals.refresh();
    } catch (error) {
      this.status.setServer('failed', messageOf(error));
      this.output.appendLine(`[client] the server failed to start: ${messageOf(error)}`);
      void vscode.window.showErrorMessage(`Oscova: the language server failed to start: ${messageOf(error)}`, 'Show Output')
        .then((choice) => { if (choice) this.output.show(); });
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    for (const run of this.store.active()) this.store.update(run.key, (r) => applyError(r, 'the language server stopped', Date.now()));
    this.updateRuns();
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.output.appendLine(`[client] stopping the server: ${messageOf(error)}`);
      }
    }
  }

  async restart(): Promise<void> {
    await this.starting?.catch(() => undefined);
    await this.stop();
    await this.start();
  }

  /** The server's environment: this process's, plus the API keys stored with Set API Key. */
  private async serverEnvironment(): Promise<NodeJS.ProcessEnv> {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of this.context.globalState.get<string[]>(KNOWN_ENVS, [])) {
      const value = await this.context.secrets.get(secretKey(name));
      if (value) env[name] = value;
    }
    return env;
  }

  private async notifyMissing(resolution: Extract<Resolution, { ok: false }>): Promise<void> {
    const install = installCommand(resolution.interpreter, process.platform);
    const configured = resolution.reason.startsWith('`oscova.server.command`');
    const choice = await vscode.window.showWarningMessage(
      configured
        ? `Oscova: ${resolution.reason}.`
        : `Oscova: the language server (oscova-lsp) was not found. Install it with \`${install}\` (or \`pip install .\` in a clone of ${REPOSITORY}), or set \`oscova.server.command\`.`,
      ...(configured ? [] : ['Install in Terminal', 'Copy Install Command']), 'Open Settings', 'Retry');
    if (choice === 'Install in Terminal') {
      const terminal = vscode.window.createTerminal('Install oscova-lsp');
      terminal.show();
      terminal.sendText(install);
      void vscode.window.showInformationMessage('Oscova: restart the server once the installation is done.', 'Restart Server')
        .then((again) => { if (again) void this.restart(); });
    } else if (choice === 'Copy Install Command') {
      await vscode.env.clipboard.writeText(install);
    } else if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'oscova.server.command');
    } else if (choice === 'Retry') {
      await this.restart();
    }
  }

  private middleware(): Middleware {
    const rewrite = (lens: vscode.CodeLens): vscode.CodeLens => {
      if (lens.command) lens.command = rewriteLensCommand(lens.command);
      return lens;
    };
    return {
      // Code lenses name the server's commands (which is what other editors execute); in VS Code the
      // click goes through the client command, which asks for the input and opens the Run view.
      // In Restricted Mode a run is refused: no Run lens (the server offers none either).
      provideCodeLenses: async (document, token, next) => {
        const lenses = await next(document, token);
        return lenses && visibleLenses(lenses, vscode.workspace.isTrusted).map(rewrite);
      },
      resolveCodeLens: async (lens, token, next) => {
        const resolved = await next(lens, token);
        return resolved ? rewrite(resolved) : resolved;
      },
      executeCommand: async (command, args, next) => {
        if (command === SERVER_COMMANDS.runAgent && !vscode.workspace.isTrusted) {
          void vscode.window.showWarningMessage(TRUST_MESSAGE, 'Manage Workspace Trust')
            .then((c) => { if (c) void vscode.commands.executeCommand('workbench.trust.manage'); });
          return null;
        }
        return next(command, args);
      },
    };
  }

  private async serverCommand<T>(command: string, arg: unknown, token?: vscode.CancellationToken): Promise<T> {
    if (this.starting) await this.starting;
    const client = this.client;
    if (!client || !client.isRunning()) throw new UserError('the Oscova language server is not running (see Oscova: Restart Server)');
    const offered = client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
    if (!offered.includes(command)) throw new UserError(`this version of oscova-lsp does not offer \`${command}\`; update the server`);
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] }, token) as Promise<T>;
  }

  // --------------------------------------------------------------------------------------- runs

  private onRunEvent(event: RunEvent): void {
    const known = typeof event?.runId === 'string' && this.store.keyOf(event.runId) !== undefined;
    const key = this.store.apply(event);
    if (!key) return;
    if (!known && !this.requests.has(key)) this.runView.show(key); // a run started by something else
    this.runView.changed(key);
    this.updateRuns();
  }

  private updateRuns(): void {
    this.status.setRuns(this.store.active().length);
  }

  private refuseUntrusted(): boolean {
    if (vscode.workspace.isTrusted) return false;
    void vscode.window.showWarningMessage(TRUST_MESSAGE, 'Manage Workspace Trust')
      .then((c) => { if (c) void vscode.commands.executeCommand('workbench.trust.manage'); });
    return true;
  }

  async runAgent(arg?: RunArgs | vscode.Uri): Promise<void> {
    if (this.refuseUntrusted()) return;
    try {
      const args = await this.runArgs(arg);
      if (!args) return;
      const agent = await this.pickAgent(args, 'Run which agent?');
      if (!agent) return;
      const input = await vscode.window.showInputBox({
        title: `Run ${agent.name ?? agent.id}`,
        prompt: 'The input sent to the agent',
        value: args.input ?? agent.exampleInput ?? agent.example_input ?? await exampleInputOf(agent.uri),
        ignoreFocusOut: true,
      });
      if (input === undefined) return;
      await this.startRun({ agentId: agent.id, input, uri: args.uri ?? agent.uri, sessionId: args.sessionId }, agent.name);
    } catch (error) {
      this.showError(error);
    }
  }

  private async startRun(args: Required<Pick<RunArgs, 'agentId' | 'input'>> & RunArgs, agentName?: string): Promise<void> {
    const run = this.store.begin(args.agentId, args.input);
    if (agentName) this.store.update(run.key, (r) => ({ ...r, agentName }));
    const cts = new CancellationTokenSource();
    this.requests.set(run.key, cts);
    this.runView.show(run.key);
    this.updateRuns();
    // The assembled instructions, shown while the model works (a preview runs no model).
    void this.serverCommand<{ instructions?: unknown }>(SERVER_COMMANDS.previewPrompt, { agentId: args.agentId, input: args.input, uri: args.uri })
      .then((preview) => {
        if (typeof preview?.instructions === 'string') {
          this.store.update(run.key, (r) => (r.instructions === undefined ? { ...r, instructions: preview.instructions as string } : r));
          this.runView.changed(run.key);
        }
      }, (error) => this.output.appendLine(`[client] preview for the Run view failed: ${messageOf(error)}`));
    const request: Record<string, unknown> = { agentId: args.agentId, input: args.input };
    if (args.uri) request.uri = args.uri;
    if (args.sessionId) request.sessionId = args.sessionId;
    try {
      const result = await this.serverCommand<RunResult>(SERVER_COMMANDS.runAgent, request, cts.token);
      this.store.update(run.key, (r) => applyResult(r, result, Date.now()));
    } catch (error) {
      const cancelled = cts.token.isCancellationRequested;
      this.store.update(run.key, (r) => (cancelled ? { ...applyError(r, '', Date.now()), status: 'cancelled', error: undefined } : applyError(r, messageOf(error), Date.now())));
    } finally {
      this.requests.delete(run.key);
      cts.dispose();
      this.runView.changed(run.key);
      this.updateRuns();
    }
    const done = this.store.get(run.key);
    if (done?.status === 'failed' && !this.runView.shown) {
      void vscode.window.showErrorMessage(`Oscova: ${done.agentId} failed: ${done.error}`, 'Show Run')
        .then((c) => { if (c) this.runView.show(run.key, false); });
    }
  }

  async cancelRun(keyOrRunId?: string): Promise<void> {
    let key = keyOrRunId ? (this.store.get(keyOrRunId) ? keyOrRunId : this.store.keyOf(keyOrRunId)) : undefined;
    if (!key) {
      const active = this.store.active();
      if (!active.length) {
        void vscode.window.showInformationMessage('Oscova: no run in progress.');
        return;
      }
      if (active.length === 1) key = active[0].key;
      else {
        const pick = await vscode.window.showQuickPick(active.map((r) => ({ label: r.agentId, description: r.input.slice(0, 80), key: r.key })), { title: 'Cancel which run?' });
        key = pick?.key;
      }
    }
    const run = key ? this.store.get(key) : undefined;
    if (!run || !isActive(run)) return;
    const cts = this.requests.get(run.key);
    if (run.runId) {
      try {
        await this.serverCommand(SERVER_COMMANDS.cancelRun, { runId: run.runId });
      } catch (error) {
        this.output.appendLine(`[client] oscova.cancelRun failed: ${messageOf(error)}; cancelling the request`);
        cts?.cancel();
      }
      // The server ends the run with a `cancelled` event; should it not, the request is cancelled too.
      setTimeout(() => { if (isActive(this.store.get(run.key) ?? run)) cts?.cancel(); }, 5000);
    } else {
      cts?.cancel();
    }
  }

  async previewPrompt(arg?: RunArgs | vscode.Uri): Promise<void> {
    // Safe in Restricted Mode (the server imports no workspace code then), but partial: say why.
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showInformationMessage(PREVIEW_TRUST_MESSAGE, 'Manage Workspace Trust')
        .then((c) => { if (c) void vscode.commands.executeCommand('workbench.trust.manage'); });
    }
    try {
      const args = await this.runArgs(arg);
      if (!args) return;
      const agent = await this.pickAgent(args, 'Preview the prompt of which agent?');
      if (!agent) return;
      const input = args.input ?? agent.exampleInput ?? agent.example_input ?? await exampleInputOf(agent.uri);
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: `Oscova: assembling the prompt of ${agent.id}` },
        () => this.serverCommand<unknown>(SERVER_COMMANDS.previewPrompt, { agentId: agent.id, input, uri: args.uri ?? agent.uri }));
      const uri = vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${agent.id}.md` });
      this.previews.set(uri.toString(), previewMarkdown(agent.id, input, result));
      this.previewChanged.fire(uri);
      const doc = await vscode.workspace.openTextDocument(uri);
      await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
      await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
    } catch (error) {
      this.showError(error);
    }
  }

  /** Arguments from a code lens (`{agentId, input, uri}`), an explorer/editor URI, or nothing. */
  private async runArgs(arg?: RunArgs | vscode.Uri): Promise<RunArgs | undefined> {
    if (arg instanceof vscode.Uri) return { uri: arg.toString() };
    if (arg && typeof arg === 'object') return { ...arg };
    return {};
  }

  private async pickAgent(args: RunArgs, title: string): Promise<AgentInfo | undefined> {
    // Only a file on disk names a workspace root (a preview or an untitled document does not).
    const active = vscode.window.activeTextEditor?.document.uri;
    const activeUri = args.uri ?? (active?.scheme === 'file' ? active.toString() : undefined);
    const agents = (await this.serverCommand<AgentInfo[] | null>(SERVER_COMMANDS.listAgents, activeUri ? { uri: activeUri } : {})) ?? [];
    if (args.agentId) return agents.find((a) => a.id === args.agentId) ?? { id: args.agentId, uri: args.uri };
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

  // --------------------------------------------------------------------------------- transcripts

  async showRunTranscript(): Promise<void> {
    type Item = vscode.QuickPickItem & { file: string };
    const items: Item[] = [];
    const seen = new Set<string>();
    for (const run of [...this.store.all()].reverse()) {
      const file = run.transcript && this.transcriptPath(run.transcript);
      if (file && !seen.has(file)) {
        seen.add(file);
        items.push({ label: run.agentId, description: `${run.status} · ${new Date(run.startedAt).toLocaleTimeString()}`, detail: run.input.slice(0, 100), file });
      }
    }
    const files = await vscode.workspace.findFiles('**/.oscova/runs/*.{jsonl,json}', '**/node_modules/**', 200);
    const stated = files.map((f) => ({ file: f.fsPath, mtime: statTime(f.fsPath) })).sort((a, b) => b.mtime - a.mtime);
    for (const { file, mtime } of stated) {
      if (seen.has(file)) continue;
      seen.add(file);
      items.push({ label: path.basename(file), description: new Date(mtime).toLocaleString(), detail: vscode.workspace.asRelativePath(file), file });
    }
    if (!items.length) {
      void vscode.window.showInformationMessage('Oscova: no run transcripts yet (runs are saved under .oscova/runs/).');
      return;
    }
    const pick = items.length === 1 ? items[0] : await vscode.window.showQuickPick(items, { title: 'Open which run transcript?' });
    if (pick) await this.openTranscript(pick.file);
  }

  private transcriptPath(transcript: string): string {
    if (path.isAbsolute(transcript)) return transcript;
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
    return path.resolve(folder, transcript);
  }

  private async openTranscript(transcript: string | undefined, agentId?: string): Promise<void> {
    if (!transcript) {
      void vscode.window.showInformationMessage(`Oscova: ${agentId ? `the run of ${agentId}` : 'this run'} has no transcript.`);
      return;
    }
    try {
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(this.transcriptPath(transcript)));
      await vscode.window.showTextDocument(doc, { preview: true });
    } catch (error) {
      this.showError(error);
    }
  }

  // ------------------------------------------------------------------ compare, save as test case

  /** The run a command acts on: the given one, else the one the Run view shows, else the newest finished run. */
  private finishedRun(key?: string) {
    const run = (key ? this.store.get(key) : undefined) ?? this.runView.shown ?? [...this.store.all()].reverse().find((r) => !isActive(r));
    if (!run || isActive(run) || !run.transcript) {
      void vscode.window.showInformationMessage('Oscova: no finished run with a transcript yet.');
      return undefined;
    }
    return run;
  }

  async compareWithPrevious(key?: string): Promise<void> {
    const run = this.finishedRun(key);
    if (!run?.transcript) return;
    try {
      const answer = await this.serverCommand<unknown>('oscova.compareRuns', { transcript: this.transcriptPath(run.transcript) });
      if (!isComparison(answer)) throw new UserError('the server gave no comparison');
      await this.comparisons.open(answer);
    } catch (error) {
      this.showError(error);
    }
  }

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
      const transcript = this.transcriptPath(run.transcript ?? '');
      const saved = await this.serverCommand<{ name?: string }>('oscova.saveTestCase', { runId: transcript, name: name.trim(), uri: vscode.Uri.file(transcript).toString() });
      await this.tests.refresh();
      void vscode.window.showInformationMessage(`Oscova: saved the test case ${saved?.name ?? name}.`);
    } catch (error) {
      this.showError(error);
    }
  }

  // ------------------------------------------------------------------------------------ API keys

  /** `[models.*] api_key_env` of the workspace's host configurations. */
  async modelKeys(): Promise<ModelKey[]> {
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

  async setApiKey(): Promise<void> {
    const keys = await this.modelKeys();
    const envs = distinctEnvs(keys);
    let env: string | undefined;
    if (envs.length === 1) env = envs[0];
    else if (envs.length > 1) {
      const pick = await vscode.window.showQuickPick(envs.map((e) => ({
        label: e, description: `models: ${keys.filter((k) => k.env === e).map((k) => k.model).join(', ')}`,
      })), { title: 'Set the key of which model?' });
      env = pick?.label;
      if (!env) return;
    } else {
      env = await vscode.window.showInputBox({
        title: 'Oscova: API key variable',
        prompt: 'No `[models.*] api_key_env` found in oscova.toml: the environment variable the key goes in',
        value: 'OPENAI_API_KEY',
        validateInput: (v) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(v) ? undefined : 'An environment variable name'),
      });
      if (!env) return;
    }
    const value = await vscode.window.showInputBox({
      title: `Oscova: ${env}`,
      prompt: `The API key, stored in VS Code's secret storage and given to the language server as ${env}. Leave empty to remove it.`,
      password: true,
      ignoreFocusOut: true,
    });
    if (value === undefined) return;
    const known = new Set(this.context.globalState.get<string[]>(KNOWN_ENVS, []));
    if (value) {
      await this.context.secrets.store(secretKey(env), value);
      known.add(env);
    } else {
      await this.context.secrets.delete(secretKey(env));
      known.delete(env);
    }
    await this.context.globalState.update(KNOWN_ENVS, [...known]);
    this.output.appendLine(`[client] ${value ? 'stored' : 'removed'} the key for ${env}; restarting the server`);
    await this.restart();
    void vscode.window.showInformationMessage(`Oscova: ${value ? 'the key is set' : 'the key is removed'} (${env}); the server was restarted.`);
  }

  // -------------------------------------------------------------------------------------- misc

  private async statusMenu(): Promise<void> {
    const items = [
      { label: '$(play) Run Agent…', command: 'oscova.client.runAgent' },
      { label: '$(preview) Preview Prompt…', command: 'oscova.client.previewPrompt' },
      ...(this.store.active().length ? [{ label: '$(debug-stop) Cancel Run', command: 'oscova.client.cancelRun' }] : []),
      { label: '$(window) Show Run View', command: 'oscova.client.showRunView' },
      { label: '$(history) Show Run Transcript', command: 'oscova.client.showRunTranscript' },
      { label: '$(key) Set API Key…', command: 'oscova.client.setApiKey' },
      { label: '$(debug-restart) Restart Server', command: 'oscova.client.restartServer' },
      { label: '$(output) Show Server Output', command: 'oscova.client.showOutput' },
    ];
    const pick = await vscode.window.showQuickPick(items, { title: 'Oscova' });
    if (pick) await vscode.commands.executeCommand(pick.command);
  }

  private showError(error: unknown): void {
    const text = messageOf(error);
    if (!(error instanceof UserError)) this.output.appendLine(`[client] ${text}`);
    void vscode.window.showErrorMessage(`Oscova: ${text}`);
  }
}

class UserError extends Error {}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (error && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message;
  return String(error);
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function statTime(file: string): number {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

/** The interpreter the Python extension selected for the workspace, when it is installed. */
async function pythonInterpreter(): Promise<string[] | undefined> {
  const ext = vscode.extensions.getExtension('ms-python.python');
  if (!ext) return undefined;
  try {
    const api: any = ext.isActive ? ext.exports : await ext.activate();
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    const envs = api?.environments;
    if (envs?.getActiveEnvironmentPath) {
      const active = envs.getActiveEnvironmentPath(resource);
      const resolved = active && envs.resolveEnvironment ? await envs.resolveEnvironment(active) : undefined;
      const exe: string | undefined = resolved?.executable?.uri?.fsPath ?? active?.path;
      if (exe) return [exe];
    }
    const command: string[] | undefined = api?.settings?.getExecutionDetails?.(resource)?.execCommand;
    return command?.length ? command : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the interpreter can import `oscova_lsp`: with `-P`, in the extension's own folder (never the workspace). */
function pythonHasServer(interpreter: string[], cwd: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(interpreter[0], [...interpreter.slice(1), ...PYTHON_PROBE_ARGS], { timeout: 15000, cwd }, (error) => resolve(!error));
  });
}

/** `example_input` of a definition file (a top-level plain or quoted scalar), when the server did not say. */
async function exampleInputOf(uri: string | undefined): Promise<string | undefined> {
  if (!uri) return undefined;
  try {
    const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.parse(uri)));
    return exampleInputFromYaml(text);
  } catch {
    return undefined;
  }
}
