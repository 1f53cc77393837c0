/** Workspace trust: what the extension refuses or shows partially in Restricted Mode, and the way to trust. */
import * as vscode from 'vscode';

export const RUN_TRUST_MESSAGE = 'Oscova runs agents only in a trusted workspace: a run imports the workspace\'s tools and providers and calls models.';
export const PREVIEW_TRUST_MESSAGE = 'Oscova: Restricted Mode. The preview shows what the built-in providers render; the workspace\'s own tools and providers are not loaded (their code would run) until you trust the workspace.';
export const REVIEW_TRUST_MESSAGE = 'Oscova: Restricted Mode. The review renders what the built-in providers contribute; the workspace\'s own tools and providers are not imported (their code would run) until you trust the workspace.';

/** Says `message`, with a button that opens the workspace trust editor. */
export function offerTrust(message: string, severity: 'warning' | 'information'): void {
  const shown = severity === 'warning'
    ? vscode.window.showWarningMessage(message, 'Manage Workspace Trust')
    : vscode.window.showInformationMessage(message, 'Manage Workspace Trust');
  void shown.then((choice) => { if (choice) void vscode.commands.executeCommand('workbench.trust.manage'); });
}

/** True (and says why) when a run must be refused: the workspace is not trusted. */
export function refuseUntrustedRun(): boolean {
  if (vscode.workspace.isTrusted) return false;
  offerTrust(RUN_TRUST_MESSAGE, 'warning');
  return true;
}
