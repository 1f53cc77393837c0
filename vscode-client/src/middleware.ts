/**
 * What VS Code changes about the server's own features (vscode-languageclient middleware): code lenses go
 * through the client's commands, and a run is refused in Restricted Mode.
 */
import * as vscode from 'vscode';
import type { Middleware } from 'vscode-languageclient/node';
import { withDebugLenses } from './debugConfig';
import { rewriteLensCommand, visibleLenses } from './lens';
import { SERVER_COMMANDS } from './serverCommands';
import { refuseUntrustedRun } from './trust';

export function middleware(): Middleware {
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
      return lenses && withDebugLenses(visibleLenses(lenses, vscode.workspace.isTrusted).map(rewrite),
        (from, command) => new vscode.CodeLens(from.range, command));
    },
    resolveCodeLens: async (lens, token, next) => {
      const resolved = await next(lens, token);
      return resolved ? rewrite(resolved) : resolved;
    },
    executeCommand: (command, args, next): vscode.ProviderResult<unknown> => {
      if (command === SERVER_COMMANDS.runAgent && refuseUntrustedRun()) return null;
      return next(command, args) as vscode.ProviderResult<unknown>;
    },
  };
}
