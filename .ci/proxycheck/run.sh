#!/usr/bin/env bash
# Proof that users outside the repository can require every published
# module: a file-based module proxy of the work tree (internal/release's
# proxy command: module zips made by golang.org/x/mod/zip, at the version
# the next release tags), then, in a fresh module in a temporary directory,
# with no workspace and our modules kept out of the checksum database,
#   - go get the core and cluster modules, build and run a program that
#     uses both (main.go.txt: a cluster Topic on an embedded NATS server);
#   - go run github.com/peerwire/jsonrpc/examples/realtime@VERSION -h.
# Other modules come from the machine's module cache read as a proxy, then
# from its GOPROXY; the module cache is a fresh one, so that a version
# served from the tree never mixes with one cached by an earlier run.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=$PWD/.ci/proxycheck

tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

version=$(GOWORK=off go -C internal/release run . proxy "$tmp/proxy")
echo "file proxy of the work tree at $version in $tmp/proxy"

upstream=$(go env GOPROXY)
cache=$(go env GOMODCACHE)
export GOWORK=off GOFLAGS=-mod=mod GONOSUMDB=github.com/peerwire/jsonrpc
export GOMODCACHE="$tmp/modcache"
export GOPROXY="file://$tmp/proxy,file://$cache/cache/download,$upstream"

mkdir "$tmp/user"
cd "$tmp/user"
go mod init example.com/user >/dev/null 2>&1
go get "github.com/peerwire/jsonrpc@$version" "github.com/peerwire/jsonrpc/cluster@$version"
cp "$here/main.go.txt" main.go
go build -o user .
./user

# go run pkg@version refuses a module with replace directives; -h makes
# the demo print its flags and exit.
if ! go run "github.com/peerwire/jsonrpc/examples/realtime@$version" -h >"$tmp/help" 2>&1 || ! grep -q -- -addr "$tmp/help"; then
	cat "$tmp/help"
	echo "go run github.com/peerwire/jsonrpc/examples/realtime@$version -h failed"
	exit 1
fi
echo "ok: the core, cluster and examples/realtime at $version resolve and build from outside the repository"
