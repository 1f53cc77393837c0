/**
 * "Review Changes Against…": asks for a base, has the server review the work tree's change offline
 * (`oscova.review`, the JSON of `oscova-lsp review --format json`) and lays its answer out as the Markdown a
 * pull-request comment holds (`reviewModel.ts`). In Restricted Mode the workspace's own code is not imported,
 * as for Preview Prompt.
 */
import * as vscode from 'vscode';
import { isReview, reviewMarkdown } from './reviewModel';

export const REVIEW_COMMAND = 'oscova.review';

const REVIEW_TRUST_MESSAGE = 'Oscova: Restricted Mode. The review renders what the built-in providers contribute; the workspace\'s own tools and providers are not imported (their code would run) until you trust the workspace.';

/** Sends a server command (the extension's `serverCommand`). */
export type AskServer = (command: string, arg: unknown, token?: vscode.CancellationToken) => Promise<unknown>;

/** A review that cannot be asked for or read, in a sentence for the user. */
export class ReviewRefused extends Error {}

/** The review's Markdown, or undefined when the user dismissed the question. */
export async function askForReview(ask: AskServer): Promise<string | undefined> {
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file');
  if (!folder) throw new ReviewRefused('open a folder of a git repository to review its changes');
  const base = await vscode.window.showInputBox({
    title: 'Oscova: Review Changes Against…', placeHolder: 'origin/main',
    prompt: 'A commit, branch or tag to compare the work tree with; empty: the merge base with the default branch',
  });
  if (base === undefined) return undefined;
  if (!vscode.workspace.isTrusted) void vscode.window.showInformationMessage(REVIEW_TRUST_MESSAGE);
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Oscova: reviewing the change offline', cancellable: true },
    (_progress, token) => ask(REVIEW_COMMAND,
      { uri: folder.uri.toString(), base: base.trim() || undefined, trust: vscode.workspace.isTrusted }, token));
  if (!isReview(result)) throw new ReviewRefused('the server answered `oscova.review` in a shape this extension does not know; update them together');
  return reviewMarkdown(result);
}

/** Shows a Markdown document in the preview, or as a Markdown editor where the preview is not available. */
export async function showMarkdown(uri: vscode.Uri): Promise<void> {
  try {
    await vscode.commands.executeCommand('markdown.showPreview', uri);
  } catch {
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
    await vscode.window.showTextDocument(doc, { preview: true });
  }
}
