#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package-lock.json), both ways:
#   server mode against examples/mcptool -http, the scenarios that need no
#   tool of the suite's own "everything" server;
#   client mode against examples/mcpcall (httprpc.Dial), through client.sh.
# No expected-failures file: every scenario must pass (check.mjs). Node 20
# lacks fs.globSync, which the suite's bundle imports: node20-fs-glob.mjs
# supplies it (see there). Each scenario is bounded in time.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
mcptool_pid=""
cleanup() {
	if [ -n "$mcptool_pid" ]; then kill "$mcptool_pid" 2>/dev/null || true; wait "$mcptool_pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
(cd "$here/../.." && go build -o "$tmp/mcptool" ./examples/mcptool && go build -o "$tmp/mcpcall" ./examples/mcpcall)
cd "$here"
npm ci --no-audit --no-fund --loglevel=error
suite() { timeout 120 node --import ./node20-fs-glob.mjs node_modules/@modelcontextprotocol/conformance/dist/index.js "$@"; }

mkdir -p "$tmp/root" && echo "conformance" > "$tmp/root/readme.txt"
"$tmp/mcptool" -http 127.0.0.1:0 -root "$tmp/root" -log-level info 2> "$tmp/mcptool.log" &
mcptool_pid=$!
url=""
for _ in $(seq 100); do
	url="$(sed -n 's/.*serving MCP at \(http:[^" ]*\).*/\1/p' "$tmp/mcptool.log")"
	[ -n "$url" ] && break
	sleep 0.1
done
if [ -z "$url" ]; then echo "mcptool -http printed no address:"; cat "$tmp/mcptool.log"; exit 1; fi

failed=0
server() { # scenario [check.mjs flags]
	local s="$1"; shift
	echo "--- server $s ($url)"
	if ! suite server --url "$url" --scenario "$s" -o "$tmp/server-$s" > "$tmp/server-$s.log" 2>&1; then
		cat "$tmp/server-$s.log"; failed=1
	fi
	node check.mjs "$tmp/server-$s" "$@" || { cat "$tmp/server-$s.log"; failed=1; }
}
server server-initialize
server ping
server logging-set-level
server tools-list
server dns-rebinding-protection --require localhost-host-rebinding-rejected --require localhost-host-valid-accepted
server server-sse-multiple-streams
server server-sse-polling --require server-sse-priming-event --require server-sse-retry-field --allow-warning server-sse-disconnect-resume

export MCPCALL="$tmp/mcpcall"
for s in initialize tools_call elicitation-sep1034-client-defaults sse-retry; do
	echo "--- client $s (examples/mcpcall)"
	if ! suite client --command "$here/client.sh" --scenario "$s" --timeout 30000 -o "$tmp/client-$s" > "$tmp/client-$s.log" 2>&1; then
		cat "$tmp/client-$s.log"; failed=1
	fi
	node check.mjs "$tmp/client-$s" || { cat "$tmp/client-$s.log"; failed=1; }
done
if [ "$failed" != 0 ]; then echo "mcpconformance: FAILED"; exit 1; fi
echo "mcpconformance: every scenario passed"
