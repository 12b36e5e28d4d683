#pragma once
// Video export, headless: frames rendered offscreen (as --headless renders a PNG) and fed as raw
// RGBA to ffmpeg through a pipe, which encodes them (H.264 in an .mp4, or whatever the file's
// extension tells ffmpeg):
//   onegpu --headless --chapter ID|all --video OUT.mp4 [--fps 30] [--size WxH] [--seconds S]
//   onegpu --headless --lab --open TRACE.json --video OUT.mp4 ...   a replay of the shown step
//   onegpu --headless --lab [train flags] --steps N --video OUT.mp4  the same, of a run's last step
// A chapter plays from t = 0 for its duration (or --seconds); `all` plays the story in order.
// A Lab replay moves the cursor through the step in ReplayCursor::kStepSeconds (or --seconds).
// ffmpeg must be on PATH (Debian's ffmpeg; scripts/deps installs it): without it, one line.
#include "app/options.h"

namespace onegpu::app {

// Frames a chapter of `duration` seconds gets at `fps` (at least one).
int video_frames(double seconds, int fps);

// Throws trainer::Error / render::Error with one line. Returns the exit status (0).
int run_video(const Options& o, int chapter_index);

}  // namespace onegpu::app
