#!/usr/bin/env bash
# The conformance suite's client mode runs this with the scenario's server
# URL as its argument and the scenario's name in MCP_CONFORMANCE_SCENARIO:
# it runs examples/mcpcall ($MCPCALL) as that scenario needs (the tool to
# call and its arguments; the suite's own example client does the same).
set -euo pipefail
url="$1"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
initialize) exec "$MCPCALL" "$url" ;;
tools_call) exec "$MCPCALL" -call add_numbers -args '{"a":2,"b":3}' "$url" ;;
elicitation-sep1034-client-defaults) exec "$MCPCALL" -call test_client_elicitation_defaults "$url" ;;
sse-retry) exec "$MCPCALL" -call test_reconnection "$url" ;;
*)
	echo "client.sh: no mapping for scenario '${MCP_CONFORMANCE_SCENARIO:-}'" >&2
	exit 2
	;;
esac
