#!/usr/bin/env bash
# Runs every benchmark of the bench module ROUNDS times, interleaved
# (W1 W1echo ... Idle, then again), appending to one results file, then
# prints benchstat's tables and cmd/ratios' (medians): each row against the
# raw limit of its transport, cost per KiB, ours against the other libraries.
#
#   bench/run.sh                 # 6 rounds, results in bench/results/
#   ROUNDS=3 BENCHTIME=0.2s bench/run.sh
#   BENCH='W1$|W2' bench/run.sh  # a subset (a -bench regexp)
#   CLUSTER=0 bench/run.sh       # without the cluster module's benchmarks
#   IDLE=0 bench/run.sh          # without the idle connections (default: 19,000)
#   GOS="go1.26.8 go1.27.3" bench/run.sh  # on both releases, interleaved
#   OTEL=0 bench/run.sh          # without the otel module's overhead rows
#
# GOS lists Go toolchains (GOTOOLCHAIN values: a release not installed is
# fetched by the go command from the module proxy); default: the go on
# PATH. Each gets its own test binary and results file
# (results/<date>-<toolchain>.txt); a round runs every binary in turn, so
# that noise hits every release alike. The tables are printed per
# release, then benchstat's comparison of the releases.
#
# Then, unless OTEL=0, it runs the otel module's BenchmarkW1 (W1 over a
# Pipe without the module, with it on no-op providers and with the SDK
# sampling every call) ROUNDS times per release, interleaved, and prints
# benchstat's side-by-side table (-col /otel: each against the module's
# absence). Then, unless CLUSTER=0, it runs the cluster module's benchmarks (NATS
# stays out of this module: they live in cluster/bench_test.go): one
# broadcast to 3 x 1,000 WebSocket clients over three nodes against
# 1 x 3,000 on one node, and a call to a named Peer on another node
# against one on the node that holds it; ROUNDS runs each.
#
# Then, unless FANOUT=0, the fan-out workload (cmd/fanout, issue 34): one
# node publishes 200 broadcasts of a 100-byte object back to back to 1,000
# WebSocket subscribers in another process, ours (jsonrpc.Group, topic.Hub
# on Memory; each with and without PackNotifications) against centrifuge
# (without and with history), each server measured in turn within a pass:
# FPASSES passes (default 3) of FROUNDS rounds (default 2) per release,
# the releases in turn; about 2 minutes per release. BENCH=Fanout runs it
# alone.
#
# Needs about 4-7 minutes on 2 cores with the defaults (one round of all
# the workloads takes some 45 s at BENCHTIME=0.3s).
set -euo pipefail

cd "$(dirname "$0")"
# bench is its own module, outside the root go.work workspace.
export GOWORK=off
ROUNDS=${ROUNDS:-6}
BENCHTIME=${BENCHTIME:-0.3s}
BENCH=${BENCH:-.}
OUT=${OUT:-results/$(date +%Y%m%d-%H%M%S).txt}
GOS=${GOS:-$(go env GOVERSION)}

mkdir -p .bin results
export GOBIN="$PWD/.bin"
if [ ! -x .bin/benchstat ]; then
	echo "installing benchstat into bench/.bin" >&2
	go install golang.org/x/perf/cmd/benchstat@latest
fi

start=$(date +%s)
go build -o .bin/ratios ./cmd/ratios
FANOUT=${FANOUT:-1}
if [ "$BENCH" = Fanout ]; then FANOUT=1 CLUSTER=0; fi
# out names the results file of toolchain $1: OUT itself for a single
# toolchain, OUT with -<toolchain> before .txt for several.
out() {
	if [ "$(echo $GOS | wc -w)" = 1 ]; then echo "$OUT"; else echo "${OUT%.txt}-$1.txt"; fi
}
# fout names the fan-out results file of toolchain $1.
fout() { echo "${OUT%.txt}-fanout-$1.txt"; }
for g in $GOS; do
	GOTOOLCHAIN=$g go version >&2
	if [ "$BENCH" != Fanout ]; then
		GOTOOLCHAIN=$g go test -c -o ".bin/bench-$g.test" .
		: >"$(out "$g")"
	fi
	if [ "$FANOUT" != 0 ]; then
		GOTOOLCHAIN=$g go build -o ".bin/fanout-$g" ./cmd/fanout
		: >"$(fout "$g")"
	fi
done

# A round whose binary fails (a benchmark's b.Fatal) is reported and the
# run goes on, so that the other rounds and releases still count; run.sh
# then exits non-zero.
failed=""
[ "$BENCH" = Fanout ] && ROUNDS=0
for i in $(seq 1 "$ROUNDS"); do
	for g in $GOS; do
		echo "round $i/$ROUNDS, $g ($(($(date +%s) - start))s)" >&2
		if ! "./.bin/bench-$g.test" -test.run='^$' -test.bench="$BENCH" \
			-test.benchtime="$BENCHTIME" -test.benchmem -test.timeout=30m >>"$(out "$g")"; then
			echo "round $i, $g: a benchmark failed (see $(out "$g"))" >&2
			failed="$failed $i/$g"
		fi
	done
done
elapsed=$(($(date +%s) - start))

cols=()
[ "$ROUNDS" = 0 ] || for g in $GOS; do
	f=$(out "$g")
	cols+=("$g=$f")
	echo
	echo "# $g: benchstat (median ± 95% CI over $ROUNDS interleaved rounds; raw results in bench/$f)"
	echo
	./.bin/benchstat "$f"
	echo
	echo "# $g: ratios to the raw limit and the JSON floor of the same transport, cost per KiB, ours vs the other libraries (medians of $ROUNDS rounds)"
	./.bin/ratios "$f"
done
if [ "${#cols[@]}" -gt 1 ]; then
	echo
	echo "# the releases side by side (benchstat)"
	echo
	./.bin/benchstat "${cols[@]}"
fi
echo
echo "total: ${elapsed}s for $ROUNDS rounds of $GOS"

if [ "$FANOUT" != 0 ]; then
	FPASSES=${FPASSES:-3}
	FROUNDS=${FROUNDS:-2}
	fstart=$(date +%s)
	for i in $(seq 1 "$FPASSES"); do
		for g in $GOS; do
			echo "fan-out pass $i/$FPASSES, $g ($(($(date +%s) - fstart))s)" >&2
			if ! "./.bin/fanout-$g" -rounds "$FROUNDS" >>"$(fout "$g")"; then
				echo "fan-out pass $i, $g: failed (see $(fout "$g"))" >&2
				failed="$failed fanout-$i/$g"
			fi
		done
	done
	fcols=()
	for g in $GOS; do
		f=$(fout "$g")
		fcols+=("$g=$f")
		echo
		echo "# $g: fan-out, 1,000 subscribers in another process, 200 broadcasts back to back (medians and ranges of $FPASSES x $FROUNDS rounds; raw results in bench/$f)"
		echo
		"./.bin/fanout-$g" -summary "$f" || true
		echo
		./.bin/benchstat -col /impl -filter '.unit:(sec/op OR allocs/pub OR wireB/sub)' "$f" || true
	done
	if [ "${#fcols[@]}" -gt 1 ]; then
		echo
		echo "# fan-out, the releases side by side (benchstat)"
		echo
		./.bin/benchstat -filter '.unit:(sec/op OR allocs/pub)' "${fcols[@]}" || true
	fi
	echo
	echo "fan-out total: $(($(date +%s) - fstart))s for $FPASSES passes of $FROUNDS rounds of $GOS"
fi
if [ -n "$failed" ]; then
	echo "FAILED rounds (round/toolchain):$failed" >&2
fi

if [ "${OTEL:-1}" != 0 ]; then
	# The otel module's overhead (issue 33): its BenchmarkW1, W1 over a
	# Pipe without the module, on no-op providers, with the SDK sampling
	# every call, ... (see otel/bench_test.go), for each release in GOS,
	# ROUNDS interleaved rounds. It builds in the root workspace (go.work),
	# which holds the otel module and the core it instruments.
	OOUT="${OUT%.txt}-otel"
	ocols=()
	for g in $GOS; do
		(cd ../otel && env -u GOWORK GOTOOLCHAIN=$g go test -c -o "../bench/.bin/otel-$g.test" .)
		: >"$OOUT-$g.txt"
		ocols+=("$g=$OOUT-$g.txt")
	done
	for i in $(seq 1 "$ROUNDS"); do
		for g in $GOS; do
			echo "otel round $i/$ROUNDS, $g" >&2
			"./.bin/otel-$g.test" -test.run='^$' -test.bench='^BenchmarkW1$' \
				-test.benchtime="$BENCHTIME" -test.benchmem >>"$OOUT-$g.txt"
		done
	done
	for g in $GOS; do
		echo
		echo "# $g: the otel module's W1 side by side (median ± 95% CI over $ROUNDS rounds, each column against otel=none; raw results in bench/$OOUT-$g.txt)"
		echo
		./.bin/benchstat -col /otel "$OOUT-$g.txt"
	done
	if [ "${#ocols[@]}" -gt 1 ]; then
		echo
		echo "# the otel module's W1, the releases side by side (benchstat)"
		echo
		./.bin/benchstat "${ocols[@]}"
	fi
fi

if [ "${CLUSTER:-1}" != 0 ]; then
	COUT="${OUT%.txt}-cluster.txt"
	echo "cluster benchmarks ($ROUNDS runs each)" >&2
	(cd ../cluster && env -u GOWORK go test -run='^$' -bench=. -benchtime=1s \
		-benchmem -count="$ROUNDS" -timeout=30m .) >"$COUT"
	echo
	echo "# cluster/ (NATS): broadcast to 3,000 WebSocket clients, one node vs three; named call, local vs across nodes (median ± 95% CI; raw results in bench/$COUT)"
	echo
	./.bin/benchstat "$COUT"
fi
if [ "${IDLE:-19000}" != 0 ]; then
	# Idle connections: clients in a child process, server figures per
	# connection after a forced GC (cmd/idleconns), ours and raw
	# coder/websocket, on each release. About a minute per line at 19,000.
	echo
	echo "# idle WebSocket connections (cmd/idleconns -n ${IDLE:-19000}): per connection, after a forced GC"
	for g in $GOS; do
		for impl in ours raw; do
			GOTOOLCHAIN=$g go run ./cmd/idleconns -impl "$impl" -n "${IDLE:-19000}" | sed -n 1,2p ||
				failed="$failed idle/$impl/$g"
		done
	done
fi
[ -z "$failed" ]
