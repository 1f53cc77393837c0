/** Run transcripts (`.oscova/runs/*.jsonl`): where a run's is, opening one, and Show Run Transcript. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import type { RunStore } from './runModel';

/** A transcript path as the server reports it (relative to the first workspace folder, or absolute). */
export function transcriptPath(transcript: string): string {
  if (path.isAbsolute(transcript)) return transcript;
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
  return path.resolve(folder, transcript);
}

export async function openTranscript(ctx: Ctx, transcript: string | undefined, agentId?: string): Promise<void> {
  if (!transcript) {
    void vscode.window.showInformationMessage(`Oscova: ${agentId ? `the run of ${agentId}` : 'this run'} has no transcript.`);
    return;
  }
  try {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(transcriptPath(transcript)));
    await vscode.window.showTextDocument(doc, { preview: true });
  } catch (error) {
    ctx.showError(error);
  }
}

/** "Show Run Transcript": the session's runs, newest first, then the other transcripts on disk. */
export async function showRunTranscript(ctx: Ctx, store: RunStore): Promise<void> {
  type Item = vscode.QuickPickItem & { file: string };
  const items: Item[] = [];
  const seen = new Set<string>();
  for (const run of [...store.all()].reverse()) {
    const file = run.transcript && transcriptPath(run.transcript);
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
  if (pick) await openTranscript(ctx, pick.file);
}

function statTime(file: string): number {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}
