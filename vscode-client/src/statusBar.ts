/** The status bar item: the server's state and the runs in progress. */
import * as vscode from 'vscode';

export type ServerState = 'starting' | 'running' | 'stopped' | 'missing' | 'failed';

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('oscova.status', vscode.StatusBarAlignment.Left, 10);
  private state: ServerState = 'starting';
  private detail = '';
  private runs = 0;

  constructor(command: string) {
    this.item.name = 'Oscova';
    this.item.command = command;
    this.render();
    this.item.show();
  }

  setServer(state: ServerState, detail = ''): void {
    this.state = state;
    this.detail = detail;
    this.render();
  }

  setRuns(count: number): void {
    this.runs = count;
    this.render();
  }

  private render(): void {
    const icon = { starting: '$(loading~spin)', running: '$(check)', stopped: '$(circle-slash)', missing: '$(warning)', failed: '$(error)' }[this.state];
    const runs = this.runs ? ` $(play-circle) ${this.runs} run${this.runs === 1 ? '' : 's'}` : '';
    this.item.text = `${icon} Oscova${runs}`;
    const words = {
      starting: 'Oscova language server: starting',
      running: 'Oscova language server: running',
      stopped: 'Oscova language server: stopped',
      missing: 'Oscova language server: not found',
      failed: 'Oscova language server: failed to start',
    }[this.state];
    this.item.tooltip = `${words}${this.detail ? ` (${this.detail})` : ''}${this.runs ? `\n${this.runs} run(s) in progress` : ''}\nClick for actions`;
    this.item.backgroundColor = this.state === 'missing' || this.state === 'failed'
      ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
