#!/usr/bin/env bash
# Every scale benchmark in one command, printing each figure as
# "figure: name = value unit". The benchmarks build only with the bench tag
# (go test -tags bench), which this script passes. Sizes can be lowered for
# a quick run:
#   PARLEY_BENCH_DELTAS (10000) PARLEY_BENCH_VIEWERS (1000) PARLEY_BENCH_STORM (1000)
#   PARLEY_BENCH_LOG (15000) PARLEY_BENCH_ASK_SESSIONS (50) PARLEY_BENCH_REPLICA_ASKS (20)
#   PARLEY_BENCH_MEM_SESSIONS (10) PARLEY_BENCH_REACH_ASKS (30)
# Figures depend on the machine and on what else runs on it. Arguments, if
# any, name the benchmarks to run (default: all).
#
#   scripts/bench.sh --save [names]    also writes the run's figures to
#                                      docs/bench/<UTC date-time>.md and prints its path
#   scripts/bench.sh --save-from F     writes that file from F, the saved output
#                                      of an earlier run, and runs nothing
set -euo pipefail
if [[ "${1:-}" == "--save-from" ]]; then
	[[ $# -eq 2 ]] || { echo "usage: scripts/bench.sh --save-from OUTPUT" >&2; exit 2; }
	from=$(realpath "$2") # before the cd: a path relative to where it was run
fi
cd "$(dirname "$0")/.."

# save writes the figures of the run saved in $1 to docs/bench/, in a file
# named for the run's UTC date and time, and prints its path. It writes
# nothing if a benchmark failed or the file is there already.
save() {
	if grep -qE '^(FAIL|panic)|^--- FAIL' "$1"; then
		echo "a benchmark failed: no figures saved" >&2
		return 1
	fi
	local at
	at=$(sed -n 's/^== machine: .*, \([0-9-]*T[0-9:]*Z\)$/\1/p' "$1" | head -n1)
	if [[ -z $at ]]; then
		echo "$1 has no \"== machine:\" line: not the output of scripts/bench.sh" >&2
		return 1
	fi
	# 2026-11-27T04:12:09Z → docs/bench/2026-11-27T0412Z.md (no colon in a file name).
	local file
	file=docs/bench/$(sed 's/^\([0-9-]*T\)\([0-9][0-9]\):\([0-9][0-9]\).*/\1\2\3Z/' <<<"$at").md
	if [[ -e $file ]]; then
		echo "$file is there already: left as it was" >&2
		return 1
	fi
	mkdir -p docs/bench
	awk -f /dev/stdin "$1" >"$file.new" <<-'AWK'
		/^== machine:/ {
			sub(/^== machine: /, ""); n = split($0, f, ", ")
			at = f[n]; sub(/T/, " ", at); sub(/:[0-9][0-9]Z$/, " UTC", at)
			printf "# Bench run of %s\n\n", at
			printf "One run of `scripts/bench.sh`, its figures as printed; the method is in\n[performance.md](../performance.md).\n\n"
			for (i = 1; i < n; i++) {
				if (f[i] ~ /^load /) load = substr(f[i], 6)
				else machine = machine (machine == "" ? "" : ", ") f[i]
			}
			printf "- Machine: %s\n", machine
			if (load != "") printf "- Load average (1, 5, 15 min) as it began: %s\n", load
			next
		}
		/^== commit:/ { sub(/^== commit: /, ""); printf "- Commit: %s\n", $0; next }
		/^== Benchmark/ { inask = 0; sub(/^== /, ""); ran = ran (ran == "" ? "" : ", ") "`" $0 "`"; next }
		/^figure: / {
			sub(/^figure: /, ""); i = index($0, " = ")
			figs = figs sprintf("| %s | %s |\n", substr($0, 1, i - 1), substr($0, i + 3)); next
		}
		/_test\.go:[0-9]+: [A-Z]: time=/ { next } # a replica's log line
		/^sessions=/ { inask = 1 }
		inask && /^sessions=|^  / { ask = ask $0 "\n" }
		END {
			printf "- Benchmarks: %s\n", ran
			if (figs != "") printf "\n| figure | value |\n|---|---|\n%s", figs
			if (ask != "") printf "\n`BenchmarkAskLatency`:\n\n```\n%s```\n", ask
		}
	AWK
	mv "$file.new" "$file"
	echo "$file"
}

case "${1:-}" in
--save-from)
	save "$from"
	exit
	;;
--save)
	shift
	out=$(mktemp)
	trap 'rm -f "$out"' EXIT
	"$0" "$@" | tee "$out"
	save "$out"
	exit
	;;
esac

# shellcheck disable=SC1091
source "${PARLEY_CACHE:-$HOME/.cache/parley}/env"

run() {
	echo "== $1"
	go test -tags bench ./server/ -run '^$' -bench "^$1\$" -benchtime=1x -count=1 -timeout 60m 2>&1 |
		grep -E '^figure:|^sessions=|^  |FAIL|panic' | grep -v '_test.go:[0-9]*: [A-Z]: time=' || true
}

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
mem=$(awk '/^MemTotal:/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
echo "== machine: $(nproc) cores${cpu:+ ($cpu)}, $mem, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
if commit=$(git rev-parse --short HEAD 2>/dev/null); then
	git diff --quiet HEAD -- . || commit+=" with local changes"
	echo "== commit: $commit"
fi
all=(BenchmarkRunLoopThroughput BenchmarkStreamThroughput BenchmarkCLIAlone BenchmarkBrowserLongStream BenchmarkFanout BenchmarkJoinStorm
	BenchmarkAnswerThroughReplica BenchmarkSessionMemory BenchmarkAskLatency
	BenchmarkReachPush BenchmarkReachAnswer BenchmarkReachFanout1000 BenchmarkFirstTurn)
for b in "${@:-${all[@]}}"; do
	run "$b"
done
