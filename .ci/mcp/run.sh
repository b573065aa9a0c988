#!/usr/bin/env bash
# MCP both ways, against the real npm packages that package-lock.json pins
# (Node 20+): the official TypeScript SDK's Client drives examples/mcptool,
# over stdio and over Streamable HTTP (through a proxy that cuts the
# connections mid-call, which the SDK must resume), then examples/agent's
# host drives the reference servers everything and filesystem, everything
# over stdio and over Streamable HTTP (its tests, with REQUIRE_MCP=1 so
# that they cannot skip), then the SDK's Streamable HTTP client and server
# against httprpc.SessionServer and httprpc.Dial.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$here/../.." && go build -o "$tmp/mcptool" ./examples/mcptool)
cd "$here"
npm ci --no-audit --no-fund --loglevel=error
node client.mjs "$tmp/mcptool"
node client.mjs --http "$tmp/mcptool"
cd "$here/../.."
REQUIRE_MCP=1 go test -race -count=1 -run '^TestMCP' ./examples/agent
# httprpc against the SDK's Streamable HTTP transport, both ways.
REQUIRE_MCP=1 go test -race -count=1 -run 'TypeScriptSDK$' ./httprpc
