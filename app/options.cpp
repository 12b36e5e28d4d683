#include "app/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "app/cli/flags.h"
#include "app/cli/run_preset.h"
#include "app/cli/train_command.h"
#include "app/lab/lab_tabs.h"
#include "app/ui/key_commands.h"
#include "trainer/error.h"
#include "trainer/io/text.h"

namespace onegpu::app {

namespace {

using trainer::Error;

float parse_float(const std::string& s, const std::string& what) {
  // Strict (whole text, finite), and within float range: 1e308 is a number, but too large.
  const auto v = trainer::text::parse_number(s);
  if (!v) throw Error(what + " must be a number, not '" + trainer::text::printable(s) + "'");
  if (std::fabs(*v) > 1e9) throw Error(what + " is too large: '" + trainer::text::printable(s) + "'");
  return static_cast<float>(*v);
}

int parse_int(const std::string& s, const std::string& what) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw Error(what + " must be a whole number, not '" + trainer::text::printable(s) + "'");
  return v;
}

// `onegpu train` flags that name a split: a user who adds them to a chapter wants to see that
// split, which only the Lab can run live.
bool is_split_flag(const std::string& a) {
  for (const char* f : {"--dp", "--ep", "--pp", "--vstages", "--schedule", "--microbatches", "--link", "--batch", "--seq",
                        "--zero"})
    if (a == f) return true;
  return false;
}

// Flags of `onegpu train` that the Lab does not take: it keeps no checkpoints.
// --device cuda runs the Lab's ranks as virtual ranks on one GPU (the status bar says where).
bool is_lab_flag(const std::string& a) { return a != "--save" && a != "--resume"; }

// Flags that mean something only in the Lab (--lab, `onegpu lab`, `onegpu train --watch`).
bool lab_only(const std::string& a) {
  return a == "--play" || a == "--open" || a == "--compare" || a == "--ops" || a == "--preset";
}

// >>window-flags: the options of the window and of headless renders, one line a flag.
void add_window_flags(cli::Flags& f, Options& o, std::string& steps, std::set<std::string>& train_flags) {
  f.flag("--lab", "the Lab: a live run you split, step and watch (also: onegpu lab)", o.lab);
  f.text("--chapter", "ID", "open this chapter (default: the first; all: every one, for --video)", o.chapter);
  f.flag("--headless", "render without a window (EGL): needs --out or --video", o.headless);
  f.text("--out", "FILE.png", "headless: the picture", o.out);
  f.value("--size", "WxH", "headless image size (default 1600x900)", [&o](const std::string& s) {
    const auto x = s.find('x');
    if (x == std::string::npos) throw Error("--size must look like 1280x720, not '" + trainer::text::printable(s) + "'");
    o.width = parse_int(s.substr(0, x), "--size width");
    o.height = parse_int(s.substr(x + 1), "--size height");
    if (o.width < 64 || o.height < 64 || o.width > 8192 || o.height > 8192)
      throw Error("--size must be between 64x64 and 8192x8192, not '" + trainer::text::printable(s) + "'");
    o.size_given = true;
  });
  f.value("--at", "SECONDS|end", "headless: time into the chapter's animation (default: end)", [&o](const std::string& s) {
    if (s == "end") return o.at.reset();
    o.at = parse_float(s, "--at");
    if (*o.at < 0) throw Error("--at must be 0 or more seconds, or 'end'");
  });
  f.flag("--no-ui", "headless: the scene alone, without panels", o.no_ui);
  f.text("--video", "FILE.mp4", "headless: encode a video with ffmpeg", o.video);
  f.value("--fps", "N", "--video: frames a second, 1-120 (default 30)", [&o](const std::string& s) {
    o.fps = parse_int(s, "--fps");
    if (o.fps < 1 || o.fps > 120) throw Error("--fps must be between 1 and 120");
  });
  f.value("--seconds", "S", "--video: length of each chapter (default: its own)", [&o](const std::string& s) {
    o.seconds = parse_float(s, "--seconds");
    if (o.seconds <= 0 || o.seconds > 3600) throw Error("--seconds must be more than 0 and at most 3600");
  });
  f.text("--view", "TRACE.json", "open a recorded trace in the Lab (also: onegpu view)", o.view);
  f.text("--open", "TRACE.json", "the Lab: replay a trace (train --trace, the Lab's export)", o.view);
  f.value("--scrub", "F", "the Lab: the replay cursor at F (0..1) of the step", [&o](const std::string& s) {
    const float v = parse_float(s, "--scrub");
    if (v < 0 || v > 1) throw Error("--scrub is a share of the step, from 0 to 1");
    o.scrub = v;
  });
  f.value("--tab", "NAME", "the Lab: the bottom pane's tab", [&o](const std::string& s) {
    LabTab t;
    if (!lab_tab_from(s, t)) {
      std::string names;
      for (const char* n : kLabTabNames) names += std::string(names.empty() ? "" : ", ") + n;
      throw Error("--tab must be one of " + names + ", not '" + trainer::text::printable(s) + "'");
    }
    o.tab = s;
  });
  f.value("--compare", "'SPLIT FLAGS'", "headless Lab: branch the last step under another split",
          [&o](const std::string& v) {
            // "--schedule gpipe --ep 1": the split flags of the other run, as one argument.
            o.compare.clear();
            std::size_t p = 0;
            while (p < v.size()) {
              const std::size_t q = v.find(' ', p);
              const std::string w = v.substr(p, q == std::string::npos ? std::string::npos : q - p);
              if (!w.empty()) o.compare.push_back(w);
              if (q == std::string::npos) break;
              p = q + 1;
            }
            if (o.compare.empty())
              throw Error("--compare needs split flags, for example --compare '--schedule gpipe'");
          });
  f.value("--ops", "K", "headless Lab: ops to run by hand before the picture", [&o](const std::string& s) {
    o.lab_ops = parse_int(s, "--ops");
    if (o.lab_ops < 0 || o.lab_ops > 1000000) throw Error("--ops must be between 0 and 1000000");
  });
  f.flag("--play", "the Lab: start training at once", o.lab_play);
  f.text("--preset", "NAME|FILE", "the Lab: open on a run preset (assets/runs/NAME.json, or a file)", o.preset);
  f.flag("--list-chapters", "list chapter ids in story order", o.list_chapters);
  f.flag("--notes", "presenter notes for every chapter, as Markdown", o.notes);
  f.flag("--reduced-motion", "chapters open finished instead of animating (M toggles)", o.reduced_motion);
  f.flag("--fullscreen", "start fullscreen (F11 toggles)", o.fullscreen);
  f.value("--ui-scale", "X", "panel and text scale, 0.5-4 (default: the monitor's)", [&o](const std::string& s) {
    o.ui_scale = parse_float(s, "--ui-scale");
    if (o.ui_scale < 0.5f || o.ui_scale > 4.0f) throw Error("--ui-scale must be between 0.5 and 4");
  });
  f.value("--frames", "N", "window: quit after N frames", [&o](const std::string& s) {
    o.frames = parse_int(s, "--frames");
    if (o.frames < 1) throw Error("--frames must be at least 1");
  });
  f.text("--screenshot", "FILE.png", "window: save the last frame", o.screenshot);
  f.text("--shaders", "DIR", "read shaders from DIR", o.shader_dir);
  f.text("--font", "FILE", "use this font file", o.font);
  f.flag("--version", "print the version", o.version);
  // --steps: in a headless Lab the steps run before the picture, else train's own flag.
  f.text("--steps", "N", "headless Lab: whole steps to run first; in the window, train's --steps", steps);
  // Every other flag of `onegpu train` is taken as typed and handed to the Lab's parser
  // (cli::parse_train_args checks it); the same list, so a new train flag needs no line here.
  cli::TrainArgs ignored;
  cli::Flags train("onegpu train", "");
  cli::add_train_flags(train, ignored);
  for (const auto& name : f.take_unchecked(
           train, [](const std::string& n) { return n != "--steps" && is_lab_flag(n); },
           "Train flags, for the Lab (see onegpu train --help)"))
    train_flags.insert(name);
}

}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  std::string steps;
  std::set<std::string> train_flags;
  cli::Flags f("onegpu", "watch a tiny mixture-of-experts model train, split across GPUs");
  f.errors(" (see onegpu --help)", /*words_are_options=*/true);
  add_window_flags(f, o, steps, train_flags);
  try {
    if (!f.parse(args)) {
      o.help = true;
      return o;
    }
    // What some flags mean depends on --lab and --headless, known only now.
    std::string split;  // the split flags given, as `onegpu lab` would take them
    for (const auto& [name, value] : f.in_order()) {
      const bool unknown_here = !o.lab && (lab_only(name) || (train_flags.count(name) && !is_split_flag(name)));
      if (unknown_here) throw Error("unknown option '" + name + "' (see onegpu --help)");
      if (name == "--steps") {
        if (o.lab && o.headless) {
          o.lab_steps = parse_int(value, "--steps");
          if (o.lab_steps < 0 || o.lab_steps > 100000) throw Error("--steps must be between 0 and 100000");
        } else if (o.lab) {
          o.lab_args.insert(o.lab_args.end(), {name, value});
        } else {
          throw Error("unknown option '--steps' (see onegpu --help)");
        }
      } else if (train_flags.count(name)) {
        if (o.lab) {
          o.lab_args.push_back(name);
          if (f.takes_value(name)) o.lab_args.push_back(value);
        } else {
          split += " " + name + " " + value;
        }
      }
    }
    if (!o.preset.empty()) {
      // The preset's flags go first, so a flag typed beside it wins (the last value is kept).
      const cli::RunPreset p = cli::load_run_preset(o.preset);
      o.lab_args.insert(o.lab_args.begin(), p.flags.begin(), p.flags.end());
    }
    if (f.given("--open")) {  // only with --lab (checked above)
      if (!o.lab_args.empty() || o.lab_steps || o.lab_ops || o.lab_play)
        throw Error("--open replays a recorded trace: give it without train flags, --steps or --ops");
      o.lab = false;  // the Lab opens on the recording, not on a run of its own
    }
    if (!o.lab && o.view.empty() && (o.scrub || !o.tab.empty()))
      throw Error("--scrub and --tab are for the Lab (--lab or --open FILE.json)");
    if (!split.empty()) throw Error("chapters play recorded runs; to run this split live, try: onegpu lab" + split);
    if (!o.view.empty() && o.lab) throw Error("--view opens a recorded trace: give it without train flags");
    if (!o.view.empty() && !o.chapter.empty()) throw Error("--view and --chapter do not go together");
    if (!o.lab && (o.lab_steps || o.lab_ops)) throw Error("--steps and --ops are for --lab");
    if (o.lab_steps > 0 && o.lab_ops > 0) throw Error("give --steps or --ops, not both");
    if (o.headless && o.out.empty() && o.video.empty()) throw Error("--headless needs --out FILE.png (or --video FILE.mp4)");
    if (!o.out.empty() && !o.video.empty()) throw Error("give --out FILE.png or --video FILE.mp4, not both");
    if (!o.video.empty() && !o.headless) throw Error("--video renders without a window: add --headless");
    if (o.chapter == "all" && o.video.empty()) throw Error("--chapter all is for --video (the whole story as one video)");
    if (!o.headless && !o.out.empty()) throw Error("--out is for --headless renders; in the window use --screenshot");
  } catch (const Error& e) {
    throw OptionsError(e.what());
  }
  return o;
}

// The options, as CLI11 lists them from the flags above.
std::string flags_help() {
  Options o;
  std::string steps;
  std::set<std::string> train_flags;
  cli::Flags f("onegpu", "");
  add_window_flags(f, o, steps, train_flags);
  const std::string h = f.help();
  const auto at = h.find("Options:");  // the usage lines above say more than CLI11's one
  return at == std::string::npos ? h : h.substr(at);
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
  onegpu lab --preset NAME|FILE                           the Lab on a run preset (assets/runs/*.json)
  onegpu lab --open TRACE.json                            replay a trace (train --trace or the Lab's export)
  onegpu --headless --lab --open TRACE.json --out FILE.png [--scrub F] [--tab NAME]
                                                          render it, the cursor at F (0..1) of the step
  onegpu --headless --lab [train flags] --steps N --compare 'SPLIT FLAGS' --out FILE.png
                                                          branch the last step under another split
  onegpu view TRACE.json                                  the same as lab --open
  onegpu <command> ...                                    trainer commands (see below)

)" + flags_help() + R"(
)" + keys_help();
}

}  // namespace onegpu::app
