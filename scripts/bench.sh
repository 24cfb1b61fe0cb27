#!/usr/bin/env bash
# Every scale benchmark in one command, printing each figure as
# "figure: name = value unit" (the README's "Scale" section is made from
# this output). Sizes can be lowered for a quick run:
#   PARLEY_BENCH_DELTAS (10000) PARLEY_BENCH_VIEWERS (1000) PARLEY_BENCH_STORM (1000)
#   PARLEY_BENCH_LOG (15000) PARLEY_BENCH_ASK_SESSIONS (50) PARLEY_BENCH_REPLICA_ASKS (20)
#   PARLEY_BENCH_MEM_SESSIONS (10)
# Figures depend on the machine and on what else runs on it. Arguments, if
# any, name the benchmarks to run (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
source "${PARLEY_CACHE:-$HOME/.cache/parley}/env"

run() {
	echo "== $1"
	go test ./server/ -run '^$' -bench "^$1\$" -benchtime=1x -count=1 -timeout 60m 2>&1 |
		grep -E '^figure:|^sessions=|^  |FAIL|panic' | grep -v '_test.go:[0-9]*: [A-Z]: time=' || true
}

echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
all=(BenchmarkRunLoopThroughput BenchmarkStreamThroughput BenchmarkFanout BenchmarkJoinStorm
	BenchmarkAnswerThroughReplica BenchmarkSessionMemory BenchmarkAskLatency)
for b in "${@:-${all[@]}}"; do
	run "$b"
done
