/**
 * Preview Prompt…, and the read-only Markdown documents (`oscova-preview:` URIs) that hold what the server
 * rendered: a prompt preview, a review.
 */
import * as vscode from 'vscode';
import { offeredInput, pickAgent, runArgs, type RunArgs } from './agents';
import type { Ctx } from './ctx';
import { previewMarkdown } from './preview';
import { SERVER_COMMANDS } from './serverCommands';
import { offerTrust, PREVIEW_TRUST_MESSAGE } from './trust';
import type * as wire from './wire';

const PREVIEW_SCHEME = 'oscova-preview';

export class PreviewDocuments implements vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, {
    onDidChange: this.changed.event,
    provideTextDocumentContent: (uri) => this.texts.get(uri.toString()) ?? '',
  });

  /** The document `/<name>` holding `markdown` (replacing what it held). */
  put(name: string, markdown: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${name}` });
    this.texts.set(uri.toString(), markdown);
    this.changed.fire(uri);
    return uri;
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
    this.texts.clear();
  }
}

/** Opens a Markdown document as text, beside the editor or in its place. */
export async function showMarkdown(uri: vscode.Uri, viewColumn?: vscode.ViewColumn): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(uri);
  await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
  await vscode.window.showTextDocument(doc, { preview: true, viewColumn });
}

/** "Preview Prompt…": what the agent would be sent, assembled by the server without calling a model. */
export async function previewPrompt(ctx: Ctx, documents: PreviewDocuments, arg?: RunArgs | vscode.Uri): Promise<void> {
  // Safe in Restricted Mode (the server imports no workspace code then), but partial: say why.
  if (!vscode.workspace.isTrusted) offerTrust(PREVIEW_TRUST_MESSAGE, 'information');
  try {
    const args = runArgs(arg);
    const agent = await pickAgent(ctx, args, 'Preview the prompt of which agent?');
    if (!agent) return;
    const input = offeredInput(args, agent);
    const request: wire.PreviewPromptArguments = { agentId: agent.id, input, uri: args.uri ?? agent.uri };
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: `Oscova: assembling the prompt of ${agent.id}` },
      () => ctx.request<unknown>(SERVER_COMMANDS.previewPrompt, request));
    await showMarkdown(documents.put(`${agent.id}.md`, previewMarkdown(agent.id, input, result)), vscode.ViewColumn.Beside);
  } catch (error) {
    ctx.showError(error);
  }
}
