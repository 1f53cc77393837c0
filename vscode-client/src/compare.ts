/**
 * "Compare with previous run": the editor's diff view of two runs' model requests, as the server renders
 * them (`oscova.compareRuns`: the run before this one of the same agent, each model request as text).
 * The texts live in read-only virtual documents of the `oscova-compare` scheme.
 */
import * as vscode from 'vscode';
import { comparisonView, type Comparison } from './compareModel';

export { isComparison, type Comparison } from './compareModel';

export const COMPARE_SCHEME = 'oscova-compare';

export class RunComparisons implements vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly registration: vscode.Disposable;

  constructor() {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(COMPARE_SCHEME, {
      provideTextDocumentContent: (uri) => this.texts.get(uri.toString()) ?? '',
    });
  }

  /** Opens the diff view of a comparison the server answered. */
  async open(comparison: Comparison): Promise<void> {
    const view = comparisonView(comparison);
    const left = vscode.Uri.from({ scheme: COMPARE_SCHEME, path: view.left });
    const right = vscode.Uri.from({ scheme: COMPARE_SCHEME, path: view.right });
    this.texts.set(left.toString(), comparison.previous.requests);
    this.texts.set(right.toString(), comparison.current.requests);
    await vscode.commands.executeCommand('vscode.diff', left, right, view.title, { preview: true });
  }

  dispose(): void {
    this.registration.dispose();
    this.texts.clear();
  }
}
