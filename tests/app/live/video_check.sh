#!/usr/bin/env bash
# video_check.sh ONEGPU OUT.mp4 FRAMES WxH -- ARGS...: renders a video with `ONEGPU ARGS --video
# OUT.mp4` and checks with ffprobe that it holds FRAMES frames of WxH. Skips (77) without ffmpeg.
set -u
onegpu=$1 out=$2 frames=$3 size=$4; shift 5
if ! command -v ffmpeg >/dev/null || ! command -v ffprobe >/dev/null; then
  echo "SKIP: ffmpeg/ffprobe not installed (scripts/deps installs Debian's ffmpeg)"; exit 77
fi
rm -f "$out"
"$onegpu" "$@" --video "$out" || { echo "FAIL: onegpu exited $?"; exit 1; }
got=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames,width,height -of csv=p=0 "$out")
want="${size%x*},${size#*x},$frames"
[ "$got" = "$want" ] || { echo "FAIL: ffprobe says $got (width,height,frames), wanted $want"; exit 1; }
echo "ok: $out has $frames frames of $size"
