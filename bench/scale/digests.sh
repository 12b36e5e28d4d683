#!/usr/bin/env bash
# bench/scale: "the trace unchanged" on several splits. Runs `scale_bench --digest --workers 1`
# of a build (and of a baseline binary, if given) on each split below and prints one line of
# hashes per split (losses, weights, unit-cost timeline, memory figures, communication peaks,
# routing, replicas); with a baseline, each split is marked same or DIFFERENT (naming the
# hashes that differ) and the exit status is 1 if any differ. The communication peaks count
# when a message landed on the host, so they follow the order the engine's workers run ops
# in; everything else depends only on each rank's program.
# The splits cover every schedule, ZeRO-1, no first-step broadcast, ep = 1 (whole blocks),
# interleaved stages and the storyboard's 512 ranks.
# Usage: bench/scale/digests.sh [BUILD_DIR] [BASELINE_BINARY]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
base="${2:-}"
bin="$build/bench/scale/scale_bench"
[ -x "$bin" ] || { echo "bench/scale: $bin not built (configure with benchmarks on)" >&2; exit 2; }
splits=(
  ""                                                                            # 512 ranks, 2 steps
  "--dp 8 --ep 8 --pp 8 --batch 64 --steps 3"
  "--dp 4 --ep 2 --pp 4 --microbatches 4 --batch 32 --schedule gpipe --steps 3"
  "--dp 4 --ep 4 --pp 4 --vstages 2 --microbatches 4 --batch 32 --schedule interleaved --steps 3"
  "--dp 8 --ep 4 --pp 4 --batch 64 --schedule zb-h1 --steps 3"
  "--dp 8 --ep 4 --pp 2 --microbatches 2 --batch 32 --zero 1 --steps 3"
  "--dp 8 --ep 2 --pp 4 --batch 64 --no-broadcast --steps 3"
  "--dp 2 --ep 1 --pp 4 --microbatches 4 --batch 16 --steps 3"
  "--dp 2 --ep 2 --pp 1 --microbatches 2 --batch 8 --steps 3"
)
digest() {  # $1: binary, then flags: the digest lines joined into one
  local b=$1
  shift
  "$b" --digest --workers 1 "$@" | awk '/^digest/ { printf "%s=%s ", $2, $3 }'
}
differ=0
for s in "${splits[@]}"; do
  # shellcheck disable=SC2086
  this=$(digest "$bin" $s)
  if [ -n "$base" ]; then
    # shellcheck disable=SC2086
    theirs=$(digest "$base" $s)
    mark=same
    if [ "$this" != "$theirs" ]; then  # name the observables that differ
      which=$(join <(tr ' ' '\n' <<<"$this" | sed -n 's/=/ /p' | sort) <(tr ' ' '\n' <<<"$theirs" | sed -n 's/=/ /p' | sort) |
        awk '$2 != $3 { printf "%s%s", n++ ? "," : "", $1 }')
      mark="DIFFERENT (${which:-fields})"
      differ=1
    fi
    echo "[${s:-512 ranks}] $mark: $this"
    [ "$mark" = same ] || echo "  baseline: $theirs"
  else
    echo "[${s:-512 ranks}] $this"
  fi
done
exit $differ
