#!/usr/bin/env bash
# train_processes.sh ONEGPU
# One process per rank on this machine, as torchrun and mpirun start them: rank 0 prints
# exactly what the same split on virtual ranks in one process prints (bitwise losses: the
# all-reduce sums in rank order; ZeRO-1 too), the other ranks print nothing, and a rank whose
# peer never comes is one line and exit status 2 within the timeout. --save writes the file
# one process writes; --resume goes on from it bitwise either way; a bad checkpoint is one
# line and exit status 2 on every process. Under mpirun itself too, where it is installed.
set -u
onegpu=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*; do echo "--- $f"; cat "$f"; done; exit 1; }
port=$((20000 + ($$ % 20000)))

# Two processes of `onegpu train ARGS...`, torchrun-style, on port $port (then the next one).
two() {
  local tag=$1
  shift
  port=$((port + 1))
  for r in 1 0; do
    env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port ONEGPU_DIST_TIMEOUT=30 \
      "$onegpu" train "$@" >"$dir/$tag$r.out" 2>"$dir/$tag$r.err" &
    eval "pid$r=$!"
  done
  wait "$pid0"
  rc0=$?
  wait "$pid1"
  rc1=$?
}

# torchrun-style, dp 2; mpirun-style, pp 2 (a pipeline's hand-offs); torchrun-style, ep 2
# (all-to-all); ZeRO-1 (reduce-scatter, all-gather).
for split in "--dp 2" "--pp 2" "--dp 2 --ep 2" "--dp 2 --zero 1"; do
  args="$split --steps 4 --batch 8 --seq 32 --quiet"
  "$onegpu" train $args --log "$dir/one.jsonl" >"$dir/one.out" 2>"$dir/one.err" || fail "one process: $split"
  port=$((port + 1))
  for r in 1 0; do
    if [ "$split" != "--pp 2" ]; then
      env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port ONEGPU_DIST_TIMEOUT=30 \
        "$onegpu" train $args --log "$dir/r$r.jsonl" >"$dir/r$r.out" 2>"$dir/r$r.err" &
    else
      env OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=$r MASTER_PORT=$port ONEGPU_DIST_TIMEOUT=30 \
        "$onegpu" train $args --log "$dir/r$r.jsonl" >"$dir/r$r.out" 2>"$dir/r$r.err" &
    fi
    eval "pid$r=$!"
  done
  wait "$pid0" || fail "rank 0 failed: $split"
  wait "$pid1" || fail "rank 1 failed: $split"
  cmp -s "$dir/one.out" "$dir/r0.out" || fail "rank 0 printed another run than one process: $split"
  # Every digit of every step's loss and gradient norm (the log holds the doubles in full).
  for k in loss grad_norm; do
    grep -q "\"$k\":" "$dir/one.jsonl" || fail "the log has no $k"
    [ "$(grep -o "\"$k\": *[^,]*" "$dir/one.jsonl")" = "$(grep -o "\"$k\": *[^,]*" "$dir/r0.jsonl")" ] || fail "$k differs: $split"
  done
  [ "$(grep -c . "$dir/r0.jsonl")" = 4 ] || fail "rank 0 logged other than 4 steps"
  [ ! -e "$dir/r1.jsonl" ] || fail "rank 1 wrote a log: $split"
  grep -q "one process each" "$dir/r0.err" || fail "rank 0 did not say the run is one process a rank"
  [ ! -s "$dir/r1.out" ] && [ ! -s "$dir/r1.err" ] || fail "rank 1 printed something: $split"
done

# Checkpoints, ZeRO-1 with experts: one process and two stop at step 2 and save the same file;
# two processes resume from one's file, one process from theirs, and both end as the run that
# never stopped (its log of 4 steps, every digit).
args="--dp 2 --ep 2 --zero 1 --steps 4 --batch 8 --seq 32 --quiet"
"$onegpu" train $args --log "$dir/whole.jsonl" >"$dir/whole.out" 2>/dev/null || fail "one process, 4 steps"
"$onegpu" train $args --stop-at 2 --save "$dir/one.ckpt" --log "$dir/one.jsonl" >/dev/null 2>"$dir/one.err" || fail "one process saving"
two s $args --stop-at 2 --save "$dir/two.ckpt" --log "$dir/two.jsonl"
[ $rc0 = 0 ] && [ $rc1 = 0 ] || fail "two processes saving"
grep -q "saved $dir/two.ckpt" "$dir/s0.err" || fail "rank 0 did not say it saved"
cmp -s "$dir/one.ckpt" "$dir/two.ckpt" || fail "two processes wrote another checkpoint than one process"
two r $args --resume "$dir/one.ckpt" --log "$dir/two.jsonl"
[ $rc0 = 0 ] && [ $rc1 = 0 ] || fail "two processes resuming"
grep -q "resumed $dir/one.ckpt at step 2" "$dir/r0.err" || fail "rank 0 did not say it resumed"
"$onegpu" train $args --resume "$dir/two.ckpt" --log "$dir/one.jsonl" >"$dir/one.out" 2>/dev/null || fail "one process resuming"
for k in loss grad_norm; do
  want=$(grep -o "\"$k\": *[^,]*" "$dir/whole.jsonl")
  [ "$(grep -o "\"$k\": *[^,]*" "$dir/two.jsonl")" = "$want" ] || fail "$k: two processes resumed differ from the run that never stopped"
  [ "$(grep -o "\"$k\": *[^,]*" "$dir/one.jsonl")" = "$want" ] || fail "$k: one process resumed from two's file differs"
done
cmp -s "$dir/whole.out" "$dir/r0.out" || fail "the resumed processes printed another ending"

# A bad checkpoint on every process: no such file; a file of another split (batch 16).
for bad in "$dir/none.ckpt" "$dir/one.ckpt"; do
  two b --dp 2 --ep 2 --steps 4 --batch 16 --seq 32 --quiet --resume "$bad"
  [ $rc0 = 2 ] && [ $rc1 = 2 ] || fail "a bad checkpoint ($bad): exit status $rc0 and $rc1, wanted 2"
  for r in 0 1; do
    [ "$(wc -l <"$dir/b$r.err")" = 1 ] || fail "a bad checkpoint ($bad): rank $r said more or less than one line"
  done
  cmp -s "$dir/b0.err" "$dir/b1.err" || fail "a bad checkpoint ($bad): the ranks said different things"
  case $bad in
    *none.ckpt) want="cannot open $dir/none.ckpt" ;;
    *) want="was saved by a run split dp 2 × ep 2 × pp 1, vstages 1, 1f1b, microbatches 1, batch 8 × 32 tokens, not" ;;
  esac
  grep -q "$want" "$dir/b0.err" || fail "a bad checkpoint ($bad): the wrong line"
done

# Under mpirun itself (Debian's OpenMPI, installed by scripts/deps), with experts split (an
# all-to-all) and a pipeline: the two processes print and log what one process does.
if command -v mpirun >/dev/null; then
  args="--dp 2 --ep 2 --steps 3 --batch 8 --seq 32 --quiet"
  "$onegpu" train $args --log "$dir/one.jsonl" >"$dir/one.out" 2>/dev/null || fail "one process (for mpirun)"
  port=$((port + 1))
  # OpenMPI refuses root unless told (CI runs as root); --oversubscribe: two processes on any core count.
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MASTER_PORT=$port ONEGPU_DIST_TIMEOUT=30 \
    timeout 120 mpirun --oversubscribe -np 2 -x MASTER_PORT -x ONEGPU_DIST_TIMEOUT \
    "$onegpu" train $args --log "$dir/mpi.jsonl" >"$dir/mpi.out" 2>"$dir/mpi.err" || fail "mpirun -np 2"
  grep -q "one process each" "$dir/mpi.err" || fail "under mpirun the run did not say it is one process a rank"
  grep -q "mpirun" "$dir/mpi.err" || fail "under mpirun the run did not name its launcher"
  cmp -s "$dir/one.out" "$dir/mpi.out" || fail "mpirun's processes printed another run than one process"
  for k in loss grad_norm; do
    [ "$(grep -o "\"$k\": *[^,]*" "$dir/one.jsonl")" = "$(grep -o "\"$k\": *[^,]*" "$dir/mpi.jsonl")" ] || fail "$k differs under mpirun"
  done
else
  echo "train_processes.sh: mpirun not installed here (scripts/deps installs openmpi-bin): its part skipped"
fi

# Rank 0 alone: its peer never comes.
port=$((port + 1))
start=$(date +%s)
env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port ONEGPU_DIST_TIMEOUT=1 \
  "$onegpu" train --dp 2 --steps 1 >"$dir/alone.out" 2>"$dir/alone.err"
rc=$?
[ $rc = 2 ] || fail "a missing peer: exit status $rc, wanted 2"
[ "$(wc -l <"$dir/alone.err")" = 1 ] || fail "a missing peer: not one line"
grep -q "rendezvous: rank 0 heard from 1 of 2 ranks within 1 s (missing: 1)" "$dir/alone.err" || fail "a missing peer: the wrong line"
[ $(($(date +%s) - start)) -le 10 ] || fail "a missing peer took more than 10 s"
cat "$dir/one.out"
