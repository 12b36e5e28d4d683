#!/usr/bin/env bash
# bench/scale: the 512-rank run (issue 15, goal 5) of this build, in alternation with a
# baseline build of scale_bench (for example one built from main before a change), so that
# the machine's load hits both alike. Prints each run's set-up seconds, seconds per step, CPU
# seconds and peak resident memory, and the load average at start and end (the figures mean
# little on a loaded machine: compare CPU seconds, or rerun when idle).
# Usage: bench/scale/run.sh [BUILD_DIR] [BASELINE_BINARY] [rounds] [-- scale_bench flags]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
base="${2:-}"
rounds="${3:-2}"
shift $(( $# < 3 ? $# : 3 ))
[ "${1:-}" = "--" ] && shift
bin="$build/bench/scale/scale_bench"
[ -x "$bin" ] || { echo "bench/scale: $bin not built (configure with benchmarks on)" >&2; exit 2; }
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
run() {  # $1: label, $2: binary, then flags
  local label=$1 b=$2
  shift 2
  "$b" "$@" | awk -v l="$label" '
    /^setup_s/ { setup = $2 }
    /^step [0-9]+:/ { steps = steps " " $4 }
    /^cpu_s/ { cpu = $2; rss = $NF }
    END { printf "%-8s setup_s %s  step_s%s  cpu_s %s  peak_rss_mb %s\n", l, setup, steps, cpu, rss }'
}
for ((i = 1; i <= rounds; ++i)); do
  [ -n "$base" ] && run baseline "$base" "$@"
  run this "$bin" "$@"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
