#!/usr/bin/env bash
# bench/train: onegpu's CPU backend against the same model in PyTorch eager, same shapes, same
# process-free conditions, one after the other. Prints both and the ratio per model/threads.
# Usage: bench/train/run.sh [BUILD_DIR] [steps]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
steps="${2:-20}"
bin="$build/bench/train/bench_train"
[ -x "$bin" ] || { echo "bench/train: $bin not built (configure with benchmarks on)" >&2; exit 2; }
ours=$("$bin" "$steps")
echo "$ours"
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "bench/train: PyTorch baseline skipped: Debian's python3-torch is not installed" >&2
  exit 0
fi
# Old OpenBLAS guards, unset only here (see FACTS.md): the baseline gets its fastest BLAS.
theirs=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 "$here/torch_moe.py" "$steps")
echo "$theirs"
while read -r _ model threads tps _; do
  t=$(echo "$theirs" | grep " $model $threads " | sed 's/.*tokens_per_s=//')
  o=${tps#tokens_per_s=}
  [ -n "$t" ] && awk -v o="$o" -v t="$t" -v m="$model" -v th="$threads" \
    'BEGIN { printf "ratio %s %s onegpu/torch=%.2f\n", m, th, o / t }'
done < <(echo "$ours" | grep '^onegpu')
