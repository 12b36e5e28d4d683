#!/usr/bin/env bash
# train_processes.sh ONEGPU
# One process per rank on this machine, as torchrun and mpirun start them: rank 0 prints
# exactly what the same split on virtual ranks in one process prints (bitwise losses: the
# all-reduce sums in rank order), the other ranks print nothing, and a rank whose peer never
# comes is one line and exit status 2 within the timeout.
set -u
onegpu=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*; do echo "--- $f"; cat "$f"; done; exit 1; }
port=$((20000 + ($$ % 20000)))

# torchrun-style, dp 2; mpirun-style, pp 2 (a pipeline's hand-offs); torchrun-style, ep 2 (all-to-all).
for split in "--dp 2" "--pp 2" "--dp 2 --ep 2"; do
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
