#!/usr/bin/env bash
# Every scale benchmark in one command, printing each figure as
# "figure: name = value unit". Sizes can be lowered for a quick run:
#   PARLEY_BENCH_DELTAS (10000) PARLEY_BENCH_VIEWERS (1000) PARLEY_BENCH_STORM (1000)
#   PARLEY_BENCH_LOG (15000) PARLEY_BENCH_ASK_SESSIONS (50) PARLEY_BENCH_REPLICA_ASKS (20)
#   PARLEY_BENCH_MEM_SESSIONS (10)
# Figures depend on the machine and on what else runs on it. Arguments, if
# any, name the benchmarks to run (default: all).
#
#   scripts/bench.sh --readme          also rewrites the block in docs/performance.md of
#                                      figures (between the bench markers)
#   scripts/bench.sh --readme-from F   rewrites it from F, the saved output
#                                      of an earlier run, and runs nothing
set -euo pipefail
if [[ "${1:-}" == "--readme-from" ]]; then
	from=$(realpath "$2") # before the cd: a path relative to where it was run
fi
cd "$(dirname "$0")/.."

# readme writes the figures of the run saved in $1 between docs/performance.md's
# "<!-- bench:begin -->" and "<!-- bench:end -->" lines.
readme() {
	if grep -qE '^(FAIL|panic)|^--- FAIL' "$1"; then
		echo "a benchmark failed: docs/performance.md left as it was" >&2
		return 1
	fi
	if ! grep -q '<!-- bench:begin -->' docs/performance.md || ! grep -q '<!-- bench:end -->' docs/performance.md; then
		echo "docs/performance.md has no bench markers" >&2
		return 1
	fi
	local block
	block=$(mktemp)
	trap 'rm -f "$block" docs/performance.md.new' RETURN
	awk '
		/^== machine:/ { sub(/^== machine: /, ""); printf "Run of `scripts/bench.sh`: %s.\n\n| figure | value |\n|---|---|\n", $0; next }
		/^figure: / {
			sub(/^figure: /, ""); i = index($0, " = ")
			printf "| %s | %s |\n", substr($0, 1, i - 1), substr($0, i + 3); next
		}
		/_test\.go:[0-9]+: [A-Z]: time=/ { next } # a replica'"'"'s log line
		/^sessions=/ { inask = 1 }
		/^== / && !/^== BenchmarkAskLatency/ { inask = 0 }
		inask && /^sessions=|^  / { ask = ask $0 "\n" }
		END { if (ask != "") printf "\n`BenchmarkAskLatency`:\n\n```\n%s```\n", ask }
	' "$1" >"$block"
	awk -v block="$block" '
		/<!-- bench:begin -->/ { print; while ((getline line < block) > 0) print line; skip = 1; next }
		/<!-- bench:end -->/ { skip = 0 }
		!skip { print }
	' docs/performance.md >docs/performance.md.new
	mv docs/performance.md.new docs/performance.md
	echo "== docs/performance.md: figures rewritten from $1"
}

case "${1:-}" in
--readme-from)
	readme "$from"
	exit
	;;
--readme)
	shift
	if [[ $# -gt 0 ]]; then
		echo "--readme runs every benchmark: the block holds a whole run" >&2
		exit 2
	fi
	out=$(mktemp)
	trap 'rm -f "$out"' EXIT
	"$0" | tee "$out"
	readme "$out"
	exit
	;;
esac

# shellcheck disable=SC1091
source "${PARLEY_CACHE:-$HOME/.cache/parley}/env"

run() {
	echo "== $1"
	go test ./server/ -run '^$' -bench "^$1\$" -benchtime=1x -count=1 -timeout 60m 2>&1 |
		grep -E '^figure:|^sessions=|^  |FAIL|panic' | grep -v '_test.go:[0-9]*: [A-Z]: time=' || true
}

echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
all=(BenchmarkRunLoopThroughput BenchmarkStreamThroughput BenchmarkCLIAlone BenchmarkBrowserLongStream BenchmarkFanout BenchmarkJoinStorm
	BenchmarkAnswerThroughReplica BenchmarkSessionMemory BenchmarkAskLatency)
for b in "${@:-${all[@]}}"; do
	run "$b"
done
