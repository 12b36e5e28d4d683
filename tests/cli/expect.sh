#!/usr/bin/env bash
# expect.sh RC REGEX [--one-line] [--file PATH] -- COMMAND...
# Runs COMMAND and checks its exit status, that its output matches REGEX, optionally that
# stderr is exactly one line, and that PATH was (or, with RC != 0, was not) written.
set -u
want_rc=$1; regex=$2; shift 2
one_line=0; file=""
while [ "$1" != "--" ]; do
  case "$1" in
    --one-line) one_line=1 ;;
    --file) file=$2; shift ;;
  esac
  shift
done
shift
[ -n "$file" ] && rm -f "$file"
err=$(mktemp); out=$(mktemp)
"$@" >"$out" 2>"$err"; rc=$?
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; rm -f "$out" "$err"; exit 1; }
[ "$rc" = "$want_rc" ] || fail "exit status $rc, wanted $want_rc"
cat "$out" "$err" | grep -Eq -- "$regex" || fail "output does not match /$regex/"
if [ $one_line = 1 ]; then
  n=$(wc -l <"$err"); [ "$n" = 1 ] || fail "stderr has $n lines, wanted one"
fi
if [ -n "$file" ]; then
  if [ "$want_rc" = 0 ]; then [ -s "$file" ] || fail "$file was not written"
  else [ ! -e "$file" ] || fail "$file was written despite the error"; fi
  ls "$file".tmp >/dev/null 2>&1 && fail "a temporary file was left behind"
fi
cat "$out"
rm -f "$out" "$err"
exit 0
