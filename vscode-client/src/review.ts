/**
 * "Review Changes Against…": what every agent the work tree's change reaches will be sent, before and after,
 * rendered offline by the server (`oscova.review`), shown as the Markdown a pull-request comment holds
 * (`reviewModel.ts`). In Restricted Mode the workspace's own code is not imported, as for Preview Prompt.
 */
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { UserError } from './errors';
import { showMarkdown, type PreviewDocuments } from './previews';
import { isReview, reviewMarkdown } from './reviewModel';
import { SERVER_COMMANDS } from './serverCommands';
import { REVIEW_TRUST_MESSAGE } from './trust';
import type * as wire from './wire';

export async function reviewChanges(ctx: Ctx, documents: PreviewDocuments): Promise<void> {
  try {
    const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file');
    if (!folder) throw new UserError('open a folder of a git repository to review its changes');
    const base = await vscode.window.showInputBox({
      title: 'Oscova: Review Changes Against…', placeHolder: 'origin/main',
      prompt: 'A commit, branch or tag to compare the work tree with; empty: the merge base with the default branch',
    });
    if (base === undefined) return;
    if (!vscode.workspace.isTrusted) void vscode.window.showInformationMessage(REVIEW_TRUST_MESSAGE);
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Oscova: reviewing the change offline', cancellable: true },
      (_progress, token) => ctx.request<unknown>(SERVER_COMMANDS.review,
        { uri: folder.uri.toString(), base: base.trim() || undefined, trust: vscode.workspace.isTrusted } satisfies wire.ReviewArguments, token));
    if (!isReview(result)) throw new UserError('the server answered `oscova.review` in a shape this extension does not know; update them together');
    const uri = documents.put('review.md', reviewMarkdown(result));
    try {
      await vscode.commands.executeCommand('markdown.showPreview', uri);
    } catch {
      await showMarkdown(uri);
    }
  } catch (error) {
    ctx.showError(error);
  }
}
