#!/usr/bin/env bash
# CPU share of a still story window. Opens a chapter under a private Xvfb display, waits for its
# animation and background jobs to finish, then reads the process's CPU time (/proc/PID/stat,
# user + system) twice, SECONDS apart; 100% is one core busy. The baseline, in the same run, is
# the same window forced to draw every frame (--frames, as every frame was drawn before the
# window drew on demand).
#   bash bench/idle_cpu.sh [BUILD_DIR] [CHAPTER] [SETTLE_SECONDS] [SECONDS]
set -euo pipefail
build=${1:-build} chapter=${2:-gpu} settle=${3:-15} secs=${4:-10}
display=:$((90 + RANDOM % 100))
Xvfb "$display" -screen 0 1600x900x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
app=
trap 'kill $app $xvfb 2>/dev/null || true' EXIT
sleep 1
hz=$(getconf CLK_TCK)
measure() {  # $1: label, then the window's extra flags
  local label=$1
  shift
  DISPLAY=$display "$build/onegpu" --chapter "$chapter" "$@" >/dev/null 2>&1 &
  app=$!
  sleep "$settle"
  local a b
  a=$(awk '{print $14 + $15}' "/proc/$app/stat")
  sleep "$secs"
  b=$(awk '{print $14 + $15}' "/proc/$app/stat")
  kill "$app"
  wait "$app" 2>/dev/null || true
  awk -v a="$a" -v b="$b" -v hz="$hz" -v s="$secs" -v c="$chapter" -v l="$label" \
    'BEGIN { printf "%-28s chapter %s: %5.1f%% of one core over %d s\n", l, c, 100 * (b - a) / hz / s, s }'
}
measure "still window, on demand:"
measure "drawing every frame (before):" --frames 100000000
