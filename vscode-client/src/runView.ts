/** The Run view: one webview panel showing the selected run (the newest by default), updated live. */
import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import type { RunState, RunStore } from './runModel';

export interface RunViewActions {
  cancel(key: string): void;
  openTranscript(key: string): void;
  /** "Compare with previous run" and "Save as test case" (compare.ts, testing.ts). */
  compare?(key: string): void;
  saveTestCase?(key: string): void;
}

export class RunView implements vscode.Disposable {
  static readonly viewType = 'oscova.runView';
  private panel: vscode.WebviewPanel | undefined;
  private shownKey: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ready = false;

  constructor(private readonly extensionUri: vscode.Uri, private readonly store: RunStore, private readonly actions: RunViewActions) {}

  /** Opens (or reveals) the view on a run; without a key, the newest run. */
  show(key?: string, preserveFocus = true): void {
    this.shownKey = key ?? this.store.latest()?.key;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel(RunView.viewType, 'Oscova Run', { viewColumn: vscode.ViewColumn.Beside, preserveFocus }, {
        enableScripts: true,
        retainContextWhenHidden: false,
        localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')],
      });
      this.ready = false;
      this.panel.webview.html = this.html(this.panel.webview);
      this.panel.webview.onDidReceiveMessage((message: { type?: string; key?: string }) => {
        if (message?.type === 'ready') {
          this.ready = true;
          this.post();
        } else if (message?.type === 'cancel' && typeof message.key === 'string') {
          this.actions.cancel(message.key);
        } else if (message?.type === 'openTranscript' && typeof message.key === 'string') {
          this.actions.openTranscript(message.key);
        } else if (message?.type === 'compare' && typeof message.key === 'string') {
          this.actions.compare?.(message.key);
        } else if (message?.type === 'saveTestCase' && typeof message.key === 'string') {
          this.actions.saveTestCase?.(message.key);
        }
      });
      this.panel.onDidChangeViewState(() => { if (this.panel?.visible) this.post(); });
      this.panel.onDidDispose(() => { this.panel = undefined; this.ready = false; });
    } else {
      this.panel.reveal(undefined, preserveFocus);
    }
    this.post();
  }

  get shown(): RunState | undefined {
    return this.shownKey ? this.store.get(this.shownKey) : undefined;
  }

  /** A run changed: redraw when it is the one shown (at most every 50 ms while streaming). */
  changed(key: string): void {
    if (!this.panel) return;
    if (this.shownKey !== key) {
      // A newer run takes over the view when the shown one has finished.
      const shown = this.shown;
      if (shown && shown.status !== 'pending' && shown.status !== 'running' && this.store.latest()?.key === key) this.shownKey = key;
      else return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => { this.timer = undefined; this.post(); }, 50);
  }

  private post(): void {
    if (!this.panel || !this.ready) return;
    const run = this.shown;
    this.panel.title = run ? `Run: ${run.agentName ?? run.agentId}` : 'Oscova Run';
    void this.panel.webview.postMessage({ type: 'state', run, now: Date.now() });
  }

  private html(webview: vscode.Webview): string {
    const nonce = crypto.randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js')).toString();
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'run.css')).toString();
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
      `img-src ${webview.cspSource}`,
      `font-src ${webview.cspSource}`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>Oscova Run</title>
</head>
<body>
<main id="root" aria-live="polite"></main>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.panel?.dispose();
  }
}
