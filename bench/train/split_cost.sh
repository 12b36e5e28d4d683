#!/usr/bin/env bash
# bench/train: where the two-thread CPU step loses against one thread. For each model, in
# alternation for `rounds` rounds, bench_train runs the whole microbatch on one thread, the two
# shards one after the other on one thread (`shards`), and the two shards on two threads; each
# keeps its best tokens/s and its least CPU ms a step. Then:
#   cutting_cost   = one thread whole / one thread shards   (what the shards cost with no threads)
#   two_over_one   = two threads / one thread whole          (the figure run.sh prints)
#   two_over_cut   = two threads / one thread shards         (what the threads give the shards)
#   procs_over_one = two one-thread processes at once, their tokens/s added / one thread whole
#                    (what this machine's two cores give at best: no sharing at all)
#   two_over_procs = two threads / two processes             (how near the threads come to that)
#   twin_over_procs = two one-thread trainers in one process (bench_train's `twin`), their tokens/s
#                    added / two processes (what sharing one process costs: its host pool and
#                    address space, and nothing of the model)
# With microbatches 2 (or more), a step holds that many microbatches of 4 texts: two threads
# then run two whole microbatches at once, and `shards` runs that pair on one thread, so
# cutting_cost is what adding the weight pieces apart from the backward costs by itself.
# Usage: bench/train/split_cost.sh [BUILD_DIR] [steps] [rounds] [microbatches]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
steps="${2:-20}"
rounds="${3:-3}"
micro="${4:-1}"
bin="$build/bench/train/bench_train"
[ -x "$bin" ] || { echo "bench/train: $bin not built (configure with benchmarks on)" >&2; exit 2; }
echo "load_average start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A tps cpu
for ((r = 1; r <= rounds; ++r)); do
  for model in story scale; do
    for mode in whole shards two procs twin; do
      case $mode in
        whole) line=$("$bin" "$steps" "$model" 1 nopeak "" "$micro") ;;
        shards) line=$("$bin" "$steps" "$model" 1 nopeak shards "$micro") ;;
        two) line=$("$bin" "$steps" "$model" 2 nopeak "" "$micro") ;;
        procs) line="$( ("$bin" "$steps" "$model" 1 nopeak "" "$micro" & "$bin" "$steps" "$model" 1 nopeak "" "$micro"; wait) | tr '\n' ' ')" ;;
        twin) line="$("$bin" "$steps" "$model" 2 nopeak twin "$micro" | tr '\n' ' ')" ;;
      esac
      echo "round=$r mode=$mode $line"
      k=$model/$mode
      # Two processes (or twins): their tokens/s added, their CPU ms a step averaged.
      t=$(echo "$line" | grep -o 'tokens_per_s=[0-9.]*' | cut -d= -f2 | awk '{ s += $1 } END { print s }')
      c=$(echo "$line" | grep -o 'cpu_ms_per_step=[0-9.]*' | cut -d= -f2 | awk '{ s += $1; n++ } END { print s / n }')
      tps[$k]=$(awk -v a="${tps[$k]:-0}" -v b="$t" 'BEGIN { print (b > a ? b : a) }')
      cpu[$k]=$(awk -v a="${cpu[$k]:-1e300}" -v b="$c" 'BEGIN { print (b < a ? b : a) }')
    done
  done
done
echo "load_average end: $(cut -d' ' -f1-3 /proc/loadavg)"
for model in story scale; do
  awk -v m="$model" -v w="${tps[$model/whole]}" -v s="${tps[$model/shards]}" -v t="${tps[$model/two]}" \
    -v cw="${cpu[$model/whole]}" -v cs="${cpu[$model/shards]}" -v ct="${cpu[$model/two]}" \
    -v mb="$micro" -v p="${tps[$model/procs]}" -v tw="${tps[$model/twin]}" \
    'BEGIN { printf "split model=%s microbatches=%d whole_tokens_per_s=%.0f shards_tokens_per_s=%.0f two_tokens_per_s=%.0f two_processes_tokens_per_s=%.0f twin_tokens_per_s=%.0f", m, mb, w, s, t, p, tw;
             printf " cpu_ms_whole=%.2f cpu_ms_shards=%.2f cpu_ms_two=%.2f", cw, cs, ct;
             printf " cutting_cost=%.2f two_over_one=%.2f two_over_cut=%.2f procs_over_one=%.2f two_over_procs=%.2f twin_over_procs=%.2f\n", w / s, t / w, t / s, p / w, t / p, tw / p }'
done
