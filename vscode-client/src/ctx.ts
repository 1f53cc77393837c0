/**
 * The extension's context (rust-analyzer's `ctx.ts`): the output channel, the status bar, and the language
 * server's lifecycle: which command starts it (`serverCommand.ts`; the bundled server's environment,
 * `bundledServer.ts`, set up here under a progress notification), its environment (the stored API keys),
 * start, stop, restart, and the one way to call its commands (`request`). Features hear the server through
 * `onRunEvent`, `onDidStart` and `onWillStop` instead of being called from here.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { interpreterCandidates, nodeEffects, prepare, versionText, type BundledOutcome, type ServerManifest } from './bundledServer';
import type { AdapterServer } from './debug';
import {
  ExecuteCommandRequest,
  LanguageClient,
  State,
  TransportKind,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { storedKeys } from './apiKeys';
import { messageOf, UserError } from './errors';
import { middleware } from './middleware';
import { isExecutable, pythonHasServer, pythonInterpreter } from './python';
import type { RunEvent } from './runModel';
import { installCommand, REPOSITORY, resolveServerCommand, SOURCE_WORDS, type Resolution, type ServerCommand } from './serverCommand';
import { StatusBar } from './statusBar';

/** The status bar item's click: the quick pick of the extension's commands (registered in extension.ts). */
export const STATUS_MENU_COMMAND = 'oscova.client.statusMenu';

export class Ctx implements vscode.Disposable {
  readonly output = vscode.window.createOutputChannel('Oscova', { log: true });
  readonly status = new StatusBar(STATUS_MENU_COMMAND);
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  /** The command the server was started with: the debugger runs the same one with `debug`. */
  private launched: { command: string; args: string[] } | undefined;
  private readonly runEvents = new vscode.EventEmitter<RunEvent>();
  private readonly started = new vscode.EventEmitter<void>();
  private readonly stopping = new vscode.EventEmitter<void>();
  private readonly filesSent = new vscode.EventEmitter<vscode.Uri>();
  /** `oscova/runEvent` notifications of the running server. */
  readonly onRunEvent = this.runEvents.event;
  /** The server started (and answered `initialize`). */
  readonly onDidStart = this.started.event;
  /** The server is about to stop (or restart): what is in flight will get no answer. */
  readonly onWillStop = this.stopping.event;
  /** A watched file changed and the server has been told (`workspace/didChangeWatchedFiles`, which the client
   * sends 250 ms late, batched): a listing asked for now sees the change. */
  readonly onDidSendFileEvent = this.filesSent.event;

  constructor(readonly extension: vscode.ExtensionContext) {}

  start(): Promise<void> {
    if (!this.starting) this.starting = this.startServer().finally(() => { this.starting = undefined; });
    return this.starting;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.stopping.fire();
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

  /** The debug adapter's command and environment: the server's, once its start has been tried. */
  async adapterServer(): Promise<AdapterServer | undefined> {
    await this.starting?.catch(() => undefined);
    return this.launched && { ...this.launched, env: { ...process.env, ...await storedKeys(this.extension) } };
  }

  /** Executes one of the server's commands (`workspace/executeCommand`), once it has started. */
  async request<T>(command: string, arg: unknown, token?: vscode.CancellationToken): Promise<T> {
    if (this.starting) await this.starting;
    const client = this.client;
    if (!client || !client.isRunning()) throw new UserError('the Oscova language server is not running (see Oscova: Restart Server)');
    const offered = client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
    if (!offered.includes(command)) throw new UserError(`this version of oscova-lsp does not offer \`${command}\`; update the server`);
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] }, token) as Promise<T>;
  }

  /** A command's failure: shown; logged too unless it is a `UserError`. */
  showError(error: unknown): void {
    const text = messageOf(error);
    if (!(error instanceof UserError)) this.output.appendLine(`[client] ${text}`);
    void vscode.window.showErrorMessage(`Oscova: ${text}`);
  }

  private async startServer(): Promise<void> {
    this.status.setServer('starting');
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
    const config = vscode.workspace.getConfiguration('oscova');
    let interpreter: Promise<string[] | undefined> | undefined;
    const selected = () => (interpreter ??= pythonInterpreter());
    const manifest = this.manifest();
    const resolution = await resolveServerCommand({
      configured: config.get('server.command'),
      preferInstalled: config.get<boolean>('server.preferInstalled', false),
      pathEnv: process.env.PATH,
      platform: process.platform,
      workspaceFolders: folders,
      trusted: vscode.workspace.isTrusted,
      isExecutable,
      pythonInterpreter: selected,
      pythonHasServer: (interpreter) => pythonHasServer(interpreter, this.extension.extensionUri.fsPath),
      bundled: manifest && (() => this.bundledServer(manifest, folders, selected)),
    });
    if (!resolution.ok) {
      this.status.setServer('missing', resolution.reason);
      this.output.appendLine(`[client] ${resolution.reason} (searched PATH=${process.env.PATH ?? ''})`);
      void (resolution.bundled ? this.notifyBundledFailed(resolution.reason) : this.notifyMissing(resolution));
      return;
    }
    if (resolution.note) this.output.appendLine(`[client] ${resolution.note}`);
    const { command, args, source } = resolution.server;
    this.launched = { command, args };
    this.output.appendLine(`[client] starting ${[command, ...args].join(' ')} (${source})`);
    void this.logVersion(resolution.server);
    // The server's environment: this process's, plus the API keys stored with Set API Key.
    const env: NodeJS.ProcessEnv = { ...process.env, ...await storedKeys(this.extension) };
    const executable = { command, args, transport: TransportKind.stdio, options: { env, cwd: folders[0] } };
    const serverOptions: ServerOptions = { run: executable, debug: executable };
    const client = new LanguageClient('oscova', 'Oscova Language Server', serverOptions, this.clientOptions());
    this.client = client;
    client.onDidChangeState((e) => {
      if (this.client !== client) return;
      if (e.newState === State.Running) this.status.setServer('running', source);
      else if (e.newState === State.Starting) this.status.setServer('starting');
      else this.status.setServer('stopped');
    });
    client.onNotification('oscova/runEvent', (event: RunEvent) => this.runEvents.fire(event));
    try {
      await client.start();
      this.started.fire();
    } catch (error) {
      this.status.setServer('failed', messageOf(error));
      this.output.appendLine(`[client] the server failed to start: ${messageOf(error)}`);
      void vscode.window.showErrorMessage(`Oscova: the language server failed to start: ${messageOf(error)}`, 'Show Output')
        .then((choice) => { if (choice) this.output.show(); });
    }
  }

  private clientOptions(): LanguageClientOptions {
    const config = vscode.workspace.getConfiguration('oscova');
    return {
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
      middleware: {
        ...middleware(),
        workspace: { didChangeWatchedFile: async (event, next) => { await next(event); this.filesSent.fire(vscode.Uri.parse(event.uri)); } },
      },
    };
  }

  /** The platform package's `bundled/server.json`, or undefined in a package that carries no server. */
  private manifest(): { manifest: ServerManifest; dir: string } | undefined {
    const dir = path.join(this.extension.extensionUri.fsPath, 'bundled');
    try {
      return { manifest: JSON.parse(fs.readFileSync(path.join(dir, 'server.json'), 'utf8')) as ServerManifest, dir };
    } catch {
      return undefined;
    }
  }

  /** The bundled server: its environment found by its stamp, or installed now under a progress notification. Tried
   * with the Python extension's interpreter, then `python3` and `python` on PATH; in an untrusted workspace none
   * inside it. */
  private async bundledServer({ manifest, dir }: { manifest: ServerManifest; dir: string }, folders: string[],
    selected: () => Promise<string[] | undefined>): Promise<BundledOutcome> {
    const { candidates, skipped } = interpreterCandidates(await selected(), {
      pathEnv: process.env.PATH, platform: process.platform, trusted: vscode.workspace.isTrusted, workspaceFolders: folders, isExecutable,
    });
    for (const line of skipped) this.output.appendLine(`[client] ${line}`);
    const storageDir = path.join(this.extension.globalStorageUri.fsPath, 'server');
    try {
      fs.mkdirSync(storageDir, { recursive: true });
    } catch (error) {
      return { ok: false, reason: `the extension's storage folder ${storageDir} cannot be made: ${messageOf(error)}` };
    }
    const input = { manifest, bundledDir: dir, storageDir, platform: process.platform, candidates };
    const effects = nodeEffects(dir, (line) => this.output.appendLine(line));
    const prepared = await prepare(input, effects);
    if (prepared.kind !== 'install') return prepared.outcome;
    return vscode.window.withProgress({
      location: vscode.ProgressLocation.Notification,
      title: 'Oscova: installing the language server (once)',
    }, (progress) => prepared.install((step) => progress.report({ message: step })));
  }

  /** Which server started, from where, and its version (`--version`; the bundled server's is known already). */
  private async logVersion(server: ServerCommand): Promise<void> {
    const where = SOURCE_WORDS[server.source];
    if (server.bundled) {
      const { version, python, envDir, installed, seconds } = server.bundled;
      const how = installed === 'now' ? `installed now in ${seconds?.toFixed(1)} s` : 'installed before';
      this.output.appendLine(`[client] ${version}: ${where}, in a Python ${versionText(python.version)} environment at ${envDir} (${how})`);
      return;
    }
    const version = await new Promise<string>((resolve) => {
      execFile(server.command, [...server.args, '--version'], { cwd: this.extension.extensionUri.fsPath, timeout: 30_000, encoding: 'utf8' },
        (error, stdout, stderr) => resolve(error ? `version unknown (\`--version\`: ${(stderr || error.message).trim().split('\n').pop()})` : stdout.trim()));
    });
    this.output.appendLine(`[client] ${version}: ${where}, ${server.command}`);
  }

  private async notifyBundledFailed(reason: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(`Oscova: the language server cannot start: ${reason}.`, 'Show Output', 'Retry', 'Open Settings');
    if (choice === 'Show Output') this.output.show();
    else if (choice === 'Retry') await this.restart();
    else if (choice === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', '@ext:oscova.oscova server');
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

  dispose(): void {
    this.output.dispose();
    this.status.dispose();
    this.runEvents.dispose();
    this.started.dispose();
    this.stopping.dispose();
    this.filesSent.dispose();
  }
}
