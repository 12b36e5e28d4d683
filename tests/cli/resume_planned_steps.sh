#!/usr/bin/env bash
# A resume that names no --steps goes on to the step its run planned, bit for bit as the run
# that never stopped (the same held-out loss, printed to 4 places, and the same last loss line of
# a split run); --stop-at past that step is one line and exit 2, and so is --steps below the
# checkpoint's step. One GPU, then a dp 2 split.
# Usage: resume_planned_steps.sh ONEGPU
set -u
onegpu="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for split in "" "--dp 2"; do
  what=${split:-one GPU}
  # One GPU: the one-rank trainer (no split flag, --seq among them); a split: the parallel one.
  args="--batch 4 --quiet"; [ -n "$split" ] && args="$split --batch 8 --seq 16 --quiet"
  # shellcheck disable=SC2086
  whole=$("$onegpu" train $args --steps 6 2>/dev/null) || fail "$what: the whole run failed"
  # shellcheck disable=SC2086
  "$onegpu" train $args --steps 6 --stop-at 3 --save "$dir/part.ckpt" >/dev/null 2>&1 || fail "$what: the first half failed"
  # shellcheck disable=SC2086
  rest=$("$onegpu" train $args --resume "$dir/part.ckpt" 2>"$dir/err") || fail "$what: the resume failed: $(cat "$dir/err")"
  echo "$what, whole run:"; echo "$whole"
  echo "$what, stopped at 3 and resumed with no --steps:"; echo "$rest"
  echo "$rest" | grep -q "held-out loss .* after 6 steps" || fail "$what: the resume did not go on to step 6"
  [ "$(echo "$whole" | grep 'held-out')" = "$(echo "$rest" | grep 'held-out')" ] || fail "$what: the resumed run's held-out loss differs"
  if [ -n "$split" ]; then
    [ "$(echo "$whole" | grep '^loss')" = "$(echo "$rest" | grep '^loss')" ] || fail "$what: the resumed run's last loss differs"
  fi
  # shellcheck disable=SC2086
  "$onegpu" train $args --resume "$dir/part.ckpt" --stop-at 9 >/dev/null 2>"$dir/err"; rc=$?
  [ "$rc" -eq 2 ] || fail "$what: --stop-at past the checkpoint's last step gave exit $rc"
  grep -q "stop-at 9 is past the run's last step 6" "$dir/err" || fail "$what: --stop-at 9: $(cat "$dir/err")"
  # --steps below the checkpoint's step is the same one line for one GPU and a split run.
  # shellcheck disable=SC2086
  "$onegpu" train $args --resume "$dir/part.ckpt" --steps 2 >/dev/null 2>"$dir/err"; rc=$?
  [ "$rc" -eq 2 ] || fail "$what: --steps 2 below the checkpoint's step 3 gave exit $rc"
  grep -qx "onegpu train: error: --steps 2 is below the checkpoint's step 3" "$dir/err" || fail "$what: --steps 2: $(cat "$dir/err")"
  # --steps given moves the end.
  # shellcheck disable=SC2086
  longer=$("$onegpu" train $args --resume "$dir/part.ckpt" --steps 7 2>/dev/null) || fail "$what: --steps 7 failed"
  echo "$longer" | grep -q "after 7 steps" || fail "$what: --steps 7 did not end at step 7"
  rm -f "$dir/part.ckpt"
done
echo "ok"
