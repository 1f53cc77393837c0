#!/usr/bin/env bash
# The end-to-end tests in real VS Code (code-server + headless Chromium + playwright-core), on the platform
# package of this machine (oscova-linux-x64.vsix here, which carries the server):
#   1. e2e/pythons.mjs: the carried server installed and run with each supported CPython;
#   2. e2e/e2e.mjs: the extension with a configured server (`oscova.server.command` wins over the carried one);
#   3. e2e/bundled.mjs: install the .vsix and it works, with the carried server, in a network namespace with
#      loopback alone (`unshare -n`), twice (the second activation installs nothing).
# OSCOVA_E2E_SCENARIOS picks some (e.g. "bundled"; default: "pythons configured bundled").
# Installs what it needs (cache: $OSCOVA_E2E_CACHE or ~/.cache/oscova-vscode-e2e). With CI=true nothing may be
# missing or skipped.
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
case "$(uname -m)" in
  x86_64) TARGET=linux-x64 ;;
  aarch64) TARGET=linux-arm64 ;;
  *) echo "e2e: no platform package for $(uname -m)" >&2; exit 1 ;;
esac
npm run --silent build >/dev/null
node scripts/package.mjs --target "$TARGET"
VSIX="$CLIENT/oscova-$TARGET.vsix"

# The configured server of scenario 2, and the harness's own oscova-lsp (it writes fixtures): $OSCOVA_LSP,
# else the repository's venv. Never on the PATH of scenario 3.
OSCOVA_LSP="${OSCOVA_LSP:-$REPO/.venv/bin/oscova-lsp}"
if [ ! -x "$OSCOVA_LSP" ]; then
  echo "e2e: oscova-lsp not found at $OSCOVA_LSP (create ../.venv with the package installed, or set OSCOVA_LSP)" >&2
  exit 1
fi
export OSCOVA_LSP

for scenario in ${OSCOVA_E2E_SCENARIOS:-pythons configured bundled}; do
  case "$scenario" in
    pythons)
      echo "== e2e: the carried server with each supported CPython"
      node e2e/pythons.mjs ;;
    configured)
      echo "== e2e: a configured server (oscova.server.command)"
      PATH="$(dirname "$OSCOVA_LSP"):$PATH" node e2e/e2e.mjs "$VSIX" ;;
    bundled)
      echo "== e2e: install the .vsix and it works (the carried server, no network)"
      if unshare -n true 2>/dev/null && command -v ip >/dev/null; then
        unshare -n -- sh -c 'ip link set lo up && exec node e2e/bundled.mjs "$1"' sh "$VSIX"
      else
        echo "e2e: unshare -n is not allowed here: the network stays, and pip is pointed at nothing" >&2
        node e2e/bundled.mjs "$VSIX"
      fi ;;
    *) echo "e2e: unknown scenario $scenario" >&2; exit 1 ;;
  esac
done
