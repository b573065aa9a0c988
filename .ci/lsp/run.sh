#!/usr/bin/env bash
# Drives examples/lsp with vscode-jsonrpc, the JSON-RPC library of VS Code,
# as an editor would (Node 20+).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$here/../.." && go build -o "$tmp/lsp" ./examples/lsp)
cd "$here"
npm ci --no-audit --no-fund --loglevel=error
node editor.mjs "$tmp/lsp"
