#!/usr/bin/env bash
# The end-to-end test in real VS Code (code-server + headless Chromium + playwright-core).
# Installs what it needs (cache: $OSCOVA_E2E_CACHE or ~/.cache/oscova-vscode-e2e), builds the .vsix,
# then runs e2e/e2e.mjs. With CI=true nothing may be missing or skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENT="$PWD"
REPO="$(cd .. && pwd)"

CACHE="$(bash e2e/setup.sh)"
export OSCOVA_E2E_NODE="$CACHE/node-24.22.3/package/bin/node"
export OSCOVA_E2E_CODE_SERVER="$CACHE/code-server-4.139.1/node_modules/.bin/code-server"

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
npm run --silent package >/dev/null

# The server under test: $OSCOVA_LSP, else the repository's venv. It is put on PATH so that the
# extension finds it the way a user's install is found (`oscova-lsp` on PATH).
OSCOVA_LSP="${OSCOVA_LSP:-$REPO/.venv/bin/oscova-lsp}"
if [ ! -x "$OSCOVA_LSP" ]; then
  echo "e2e: oscova-lsp not found at $OSCOVA_LSP (create ../.venv with the package installed, or set OSCOVA_LSP)" >&2
  exit 1
fi
export OSCOVA_LSP
export PATH="$(dirname "$OSCOVA_LSP"):$PATH"

exec node e2e/e2e.mjs "$CLIENT/oscova.vsix"
