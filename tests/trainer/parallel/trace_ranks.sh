#!/usr/bin/env bash
# trace_ranks.sh N TRACE -- COMMAND...: runs COMMAND (which must write TRACE and exit 0), then
# checks that the Chrome trace names exactly N processes (one per rank) and has complete events.
set -u
want=$1; trace=$2; shift 3
rm -f "$trace"
"$@" || { echo "FAIL: command exited $?"; exit 1; }
[ -s "$trace" ] || { echo "FAIL: $trace was not written"; exit 1; }
n=$(grep -o '"name":"process_name"' "$trace" | wc -l)
[ "$n" = "$want" ] || { echo "FAIL: $n processes in $trace, wanted $want"; exit 1; }
x=$(grep -o '"ph":"X"' "$trace" | wc -l)
[ "$x" -gt "$want" ] || { echo "FAIL: only $x complete events"; exit 1; }
last=$((want - 1))
grep -q "\"name\":\"rank $last " "$trace" || { echo "FAIL: no process for rank $last"; exit 1; }
echo "$n processes, $x complete events"
