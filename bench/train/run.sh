#!/usr/bin/env bash
# bench/train: onegpu's CPU backend against the same model in PyTorch eager, same shapes.
# The two sides run in alternation, one model and thread count at a time (ours, theirs, ours,
# theirs, ... for `rounds` rounds), and each side keeps its best window: load from other
# processes on a shared machine then hits both sides alike instead of whichever ran second.
# Prints every run, the load average at start and end, each side's best, the ratio and
# onegpu's share of the FMA peak.
# Usage: bench/train/run.sh [BUILD_DIR] [steps] [rounds]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
steps="${2:-20}"
rounds="${3:-3}"
bin="$build/bench/train/bench_train"
[ -x "$bin" ] || { echo "bench/train: $bin not built (configure with benchmarks on)" >&2; exit 2; }
have_torch=1
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "bench/train: PyTorch baseline skipped: Debian's python3-torch is not installed (ONEGPU_WITH_TORCH=1 scripts/deps)" >&2
  have_torch=0
elif ! readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 | grep -q openblas; then
  # Debian's torch multiplies through whatever libblas.so.3 points at; the reference BLAS is
  # some 20 times slower than OpenBLAS, and a baseline run on it is not a fair one.
  echo "bench/train: PyTorch baseline skipped: libblas.so.3 is not OpenBLAS (ONEGPU_WITH_TORCH=1 scripts/deps installs libopenblas0-pthread)" >&2
  have_torch=0
fi
echo "load_average start: $(cut -d' ' -f1-3 /proc/loadavg)"
peaks=$("$bin" peak)
echo "$peaks"
declare -A ours theirs
best() { awk -v a="${1:-0}" -v b="$2" 'BEGIN { print (b > a ? b : a) }'; }
for ((r = 1; r <= rounds; ++r)); do
  for model in story scale; do
    for threads in 1 2; do
      line=$("$bin" "$steps" "$model" "$threads" nopeak)
      echo "round=$r $line"
      tps=$(echo "$line" | sed 's/.*tokens_per_s=\([0-9.]*\).*/\1/')
      ours[$model/$threads]=$(best "${ours[$model/$threads]:-0}" "$tps")
      if [ "$have_torch" = 1 ]; then
        # Old OpenBLAS guards, unset only here (see FACTS.md): the baseline gets its fastest BLAS.
        line=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 "$here/torch_moe.py" "$steps" "$model" "$threads")
        echo "round=$r $line"
        tps=${line##*tokens_per_s=}
        theirs[$model/$threads]=$(best "${theirs[$model/$threads]:-0}" "$tps")
      fi
    done
  done
done
# Two microbatches of 4 texts a step: two threads each take a whole one (ours only: the
# baseline's step is the one-microbatch step above). In alternation too, after the rounds above.
declare -A pairs
for ((r = 1; r <= rounds; ++r)); do
  for model in story scale; do
    for threads in 1 2; do
      line=$("$bin" "$steps" "$model" "$threads" nopeak "" 2)
      echo "round=$r $line"
      tps=$(echo "$line" | sed 's/.*tokens_per_s=\([0-9.]*\).*/\1/')
      pairs[$model/$threads]=$(best "${pairs[$model/$threads]:-0}" "$tps")
    done
  done
done
echo "load_average end: $(cut -d' ' -f1-3 /proc/loadavg)"
for model in story scale; do
  for threads in 1 2; do
    o=${ours[$model/$threads]}
    peak=$(echo "$peaks" | grep "threads=$threads " | sed 's/.*gflops=//')
    gf=$("$bin" flops "$model")
    awk -v o="$o" -v t="${theirs[$model/$threads]:-0}" -v m="$model" -v th="$threads" -v f="$gf" -v p="$peak" \
      'BEGIN { g = o * f / 1e9;
               printf "best model=%s threads=%d onegpu_tokens_per_s=%.0f torch_tokens_per_s=%.0f", m, th, o, t;
               if (t > 0) printf " ratio=%.2f", o / t;
               printf " onegpu_gflops=%.1f peak_fraction=%.3f\n", g, g / p }'
  done
  awk -v a="${ours[$model/1]}" -v b="${ours[$model/2]}" -v c="${pairs[$model/1]}" -v d="${pairs[$model/2]}" -v m="$model" \
    'BEGIN { printf "scaling model=%s onegpu_two_threads_over_one=%.2f", m, b / a;
             printf " two_microbatches_a_step: one_thread_tokens_per_s=%.0f two_threads_tokens_per_s=%.0f two_threads_over_one=%.2f\n", c, d, d / c }'
done
