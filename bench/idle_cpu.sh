#!/usr/bin/env bash
# CPU share of a still story window: opens a chapter under a private Xvfb display, waits for its
# animation and background jobs to finish, then reads the process's CPU time (/proc/PID/stat,
# user + system) twice, SECONDS apart. 100% is one core busy.
#   bash bench/idle_cpu.sh [BUILD_DIR] [CHAPTER] [SETTLE_SECONDS] [SECONDS]
set -euo pipefail
build=${1:-build} chapter=${2:-gpu} settle=${3:-15} secs=${4:-10}
display=:$((90 + RANDOM % 100))
Xvfb "$display" -screen 0 1600x900x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
trap 'kill $app $xvfb 2>/dev/null || true' EXIT
sleep 1
DISPLAY=$display "$build/onegpu" --chapter "$chapter" >/dev/null 2>&1 &
app=$!
sleep "$settle"
ticks() { awk '{print $14 + $15}' "/proc/$app/stat"; }
hz=$(getconf CLK_TCK)
a=$(ticks); sleep "$secs"; b=$(ticks)
awk -v a="$a" -v b="$b" -v hz="$hz" -v s="$secs" -v c="$chapter" \
  'BEGIN { printf "still window, chapter %s: %.1f%% of one core over %d s\n", c, 100 * (b - a) / hz / s, s }'
