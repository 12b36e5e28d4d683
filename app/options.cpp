#include "app/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "app/lab/lab_tabs.h"
#include "trainer/io/text.h"

namespace onegpu::app {

namespace {

int parse_int(const std::string& s, const std::string& what) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) throw OptionsError(what + " must be a whole number, not '" + s + "'");
  return v;
}

float parse_float(const std::string& s, const std::string& what) {
  // Strict (whole text, finite), and within float range: 1e308 is a number, but too large.
  const auto v = trainer::text::parse_number(s);
  if (!v) throw OptionsError(what + " must be a number, not '" + trainer::text::printable(s) + "'");
  if (std::fabs(*v) > 1e9) throw OptionsError(what + " is too large: '" + trainer::text::printable(s) + "'");
  return static_cast<float>(*v);
}

// `onegpu train` flags that name a split: a user who adds them to a chapter wants to see that
// split, which only the Lab can run live.
bool is_split_flag(const std::string& a) {
  for (const char* f : {"--dp", "--ep", "--pp", "--vstages", "--schedule", "--microbatches", "--link", "--batch", "--seq",
                        "--zero"})
    if (a == f) return true;
  return false;
}

// The flags of `onegpu train` that the Lab passes on (parse_train_args checks their values).
bool is_train_flag(const std::string& a) {
  if (is_split_flag(a)) return true;
  for (const char* f : {"--model", "--steps", "--seed", "--threads", "--corpus", "--workers", "--log", "--trace",
                        "--trace-steps", "--stop-at"})
    if (a == f) return true;
  return false;
}

}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  auto value = [&](std::size_t& i, const std::string& flag) -> const std::string& {
    if (i + 1 >= args.size()) throw OptionsError(flag + " needs a value (see --help)");
    return args[++i];
  };
  std::string split;  // the split flags seen, as the Lab takes them
  bool headless_given = false;
  bool opened = false;  // `lab --open FILE`: a recorded run, replayed with no training  // --steps: steps to run headless; in the window, train's flag
  for (const auto& a : args) {
    if (a == "--lab") o.lab = true;
    if (a == "--headless") headless_given = true;
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--lab") continue;
    if (o.lab && a == "--play") o.lab_play = true;
    else if (o.lab && a == "--open") {
      o.view = value(i, a);
      opened = true;
    } else if (a == "--scrub") {
      const float f = parse_float(value(i, a), "--scrub");
      if (f < 0 || f > 1) throw OptionsError("--scrub is a share of the step, from 0 to 1");
      o.scrub = f;
    } else if (o.lab && a == "--compare") {
      // "--schedule gpipe --ep 1": the split flags of the other run, as one argument.
      const std::string& v = value(i, a);
      std::size_t p = 0;
      while (p < v.size()) {
        const std::size_t q = v.find(' ', p);
        const std::string w = v.substr(p, q == std::string::npos ? std::string::npos : q - p);
        if (!w.empty()) o.compare.push_back(w);
        if (q == std::string::npos) break;
        p = q + 1;
      }
      if (o.compare.empty()) throw OptionsError("--compare needs split flags, for example --compare '--schedule gpipe'");
    } else if (a == "--tab") {
      o.tab = value(i, a);
      LabTab t;
      if (!lab_tab_from(o.tab, t)) {
        std::string names;
        for (const char* n : kLabTabNames) names += std::string(names.empty() ? "" : ", ") + n;
        throw OptionsError("--tab must be one of " + names + ", not '" + trainer::text::printable(o.tab) + "'");
      }
    }
    else if (o.lab && a == "--steps" && headless_given) {
      o.lab_steps = parse_int(value(i, a), "--steps");
      if (o.lab_steps < 0 || o.lab_steps > 100000) throw OptionsError("--steps must be between 0 and 100000");
    } else if (o.lab && a == "--ops") {
      o.lab_ops = parse_int(value(i, a), "--ops");
      if (o.lab_ops < 0 || o.lab_ops > 1000000) throw OptionsError("--ops must be between 0 and 1000000");
    } else if (o.lab && a == "--quiet") {
      o.lab_args.push_back(a);
    } else if (o.lab && is_train_flag(a)) {
      o.lab_args.push_back(a);
      o.lab_args.push_back(value(i, a));
    } else if (is_split_flag(a)) split += " " + a + " " + value(i, a);
    else if (a == "-h" || a == "--help") o.help = true;
    else if (a == "--version") o.version = true;
    else if (a == "--list-chapters") o.list_chapters = true;
    else if (a == "--notes") o.notes = true;
    else if (a == "--reduced-motion") o.reduced_motion = true;
    else if (a == "--headless") o.headless = true;
    else if (a == "--chapter") o.chapter = value(i, a);
    else if (a == "--view") o.view = value(i, a);
    else if (a == "--out") o.out = value(i, a);
    else if (a == "--video") o.video = value(i, a);
    else if (a == "--fps") {
      o.fps = parse_int(value(i, a), "--fps");
      if (o.fps < 1 || o.fps > 120) throw OptionsError("--fps must be between 1 and 120");
    } else if (a == "--seconds") {
      o.seconds = parse_float(value(i, a), "--seconds");
      if (o.seconds <= 0 || o.seconds > 3600) throw OptionsError("--seconds must be more than 0 and at most 3600");
    }
    else if (a == "--no-ui") o.no_ui = true;
    else if (a == "--fullscreen") o.fullscreen = true;
    else if (a == "--shaders") o.shader_dir = value(i, a);
    else if (a == "--font") o.font = value(i, a);
    else if (a == "--screenshot") o.screenshot = value(i, a);
    else if (a == "--frames") {
      o.frames = parse_int(value(i, a), "--frames");
      if (o.frames < 1) throw OptionsError("--frames must be at least 1");
    } else if (a == "--ui-scale") {
      o.ui_scale = parse_float(value(i, a), "--ui-scale");
      if (o.ui_scale < 0.5f || o.ui_scale > 4.0f) throw OptionsError("--ui-scale must be between 0.5 and 4");
    } else if (a == "--size") {
      const std::string& s = value(i, a);
      auto x = s.find('x');
      if (x == std::string::npos) throw OptionsError("--size must look like 1280x720, not '" + s + "'");
      o.width = parse_int(s.substr(0, x), "--size width");
      o.height = parse_int(s.substr(x + 1), "--size height");
      if (o.width < 64 || o.height < 64 || o.width > 8192 || o.height > 8192)
        throw OptionsError("--size must be between 64x64 and 8192x8192, not '" + s + "'");
      o.size_given = true;
    } else if (a == "--at") {
      const std::string& s = value(i, a);
      if (s == "end") o.at.reset();
      else {
        o.at = parse_float(s, "--at");
        if (*o.at < 0) throw OptionsError("--at must be 0 or more seconds, or 'end'");
      }
    } else {
      throw OptionsError("unknown option '" + a + "' (see onegpu --help)");
    }
  }
  if (opened) {
    if (!o.lab_args.empty() || o.lab_steps || o.lab_ops || o.lab_play)
      throw OptionsError("--open replays a recorded trace: give it without train flags, --steps or --ops");
    o.lab = false;  // the Lab opens on the recording, not on a run of its own
  }
  if (!o.lab && o.view.empty() && (o.scrub || !o.tab.empty()))
    throw OptionsError("--scrub and --tab are for the Lab (--lab or --open FILE.json)");
  if (!split.empty())
    throw OptionsError("chapters play recorded runs; to run this split live, try: onegpu lab" + split);
  if (!o.view.empty() && o.lab) throw OptionsError("--view opens a recorded trace: give it without train flags");
  if (!o.view.empty() && !o.chapter.empty()) throw OptionsError("--view and --chapter do not go together");
  if (!o.lab && (o.lab_steps || o.lab_ops)) throw OptionsError("--steps and --ops are for --lab");
  if (o.lab_steps > 0 && o.lab_ops > 0) throw OptionsError("give --steps or --ops, not both");
  if (o.headless && o.out.empty() && o.video.empty()) throw OptionsError("--headless needs --out FILE.png (or --video FILE.mp4)");
  if (!o.out.empty() && !o.video.empty()) throw OptionsError("give --out FILE.png or --video FILE.mp4, not both");
  if (!o.video.empty() && !o.headless) throw OptionsError("--video renders without a window: add --headless");
  if (o.chapter == "all" && o.video.empty()) throw OptionsError("--chapter all is for --video (the whole story as one video)");
  if (!o.headless && !o.out.empty()) throw OptionsError("--out is for --headless renders; in the window use --screenshot");
  return o;
}

std::string usage() {
  return R"(onegpu — watch a tiny mixture-of-experts model train, split across GPUs

Usage:
  onegpu [--chapter ID] [--fullscreen] [--ui-scale X]     open the story window
  onegpu --list-chapters                                  list chapter ids in story order
  onegpu --notes > notes.md                               presenter notes for every chapter, as Markdown
  onegpu --headless --chapter ID --out FILE.png [--size WxH] [--at SECONDS|end] [--no-ui]
                                                          render one frame without a window
  onegpu --headless --chapter ID|all --video OUT.mp4 [--fps 30] [--size WxH] [--seconds S]
                                                          a video of a chapter (all: the story), via ffmpeg
  onegpu --headless --lab (--open TRACE.json | [train flags] --steps N) --video OUT.mp4
                                                          a video of the Lab replaying the step
  onegpu lab [train flags]                                the Lab: a live run you split, step and watch
  onegpu train ... --watch                                train in the Lab instead of the terminal
  onegpu --headless --lab [train flags] [--steps N | --ops K] --out FILE.png [--size WxH]
                                                          run N steps (or K ops by hand), render the Lab
  onegpu lab --open TRACE.json                            replay a trace (train --trace or the Lab's export)
  onegpu --headless --lab --open TRACE.json --out FILE.png [--scrub F] [--tab NAME]
                                                          render it, the cursor at F (0..1) of the step
  onegpu --headless --lab [train flags] --steps N --compare 'SPLIT FLAGS' --out FILE.png
                                                          branch the last step under another split
  onegpu view TRACE.json                                  the same as lab --open
  onegpu <command> ...                                    trainer commands (see below)

Options:
  --chapter ID        open this chapter (default: the first)
  --size WxH          headless image size (default 1600x900)
  --at SECONDS|end    headless: time into the chapter's animation (default: end)
  --no-ui             headless: the scene alone, without panels
  --ui-scale X        panel and text scale, 0.5–4 (default: the monitor's)
  --fullscreen        start fullscreen (F11 toggles)
  --reduced-motion    chapters open finished instead of animating (M toggles)
  --frames N          window: quit after N frames; --screenshot FILE saves the last one
  --shaders DIR       read shaders from DIR; --font FILE use this font for scene text
  --version, --help

Keys: Right/Space/Page Down next · Left/Page Up previous · Home/End first/last · R replay
      Enter the chapter's button · B or . blank · H hide panels · M reduced motion · F1 or ? keys
      Tab chapter list · L the Lab · Ctrl+= / Ctrl+- / Ctrl+0 UI scale · F11 fullscreen
      Mouse wheel over the picture: next / previous · Esc twice or Ctrl+Q quit
In the Lab: Space run/pause · . one op · M one microbatch · S one step · F fit the timeline
      (wheel zooms, drag pans, double-click fits, a click on the ruler sets the playhead)
      P replay play/pause · [ ] the selected GPU's previous/next op · tabs: timeline, charts,
      experts, traffic, ledger, compare · L or Esc back to the story
)";
}

}  // namespace onegpu::app
