#!/usr/bin/env bash
# The OpenRPC documents package openrpc makes, checked with the OpenRPC
# project's own packages (pinned in package-lock.json; Node 20+): the test
# document and the realtime demo's against @open-rpc/meta-schema, and the
# demo's declarations (openrpc/jsonrpc-ts) against @open-rpc/typings'.
# Both documents are the ones Go tests hold current (TestDocument,
# TestPageTypes). Bounded: 5 minutes.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
npm ci --no-audit --no-fund --loglevel=error
timeout 300 node check.mjs ../../openrpc/testdata/board.json \
	--typings ../../examples/realtime/static/openrpc.json \
	--ours ../../examples/realtime/static/api.d.ts \
	--client ../../browser/jsonrpc.d.ts
