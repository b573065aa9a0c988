#!/usr/bin/env bash
# Drives examples/conformance with the vscode-jsonrpc LSP client (Node 20+).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$here/../.." && go build -o "$tmp/conformance" ./examples/conformance)
cd "$here"
if [[ -f package-lock.json ]]; then
  npm ci --no-audit --no-fund
else
  npm install --no-audit --no-fund
fi
node lsp-client.mjs "$tmp/conformance"
