#pragma once
// The command line of the story app (sub-commands such as `train` are parsed elsewhere).
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace onegpu::app {

struct OptionsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  bool help = false;
  bool version = false;
  bool list_chapters = false;
  bool notes = false;          // print the presenter notes (Markdown) and exit
  bool reduced_motion = false; // chapters open finished instead of animating (M toggles)
  bool headless = false;
  std::string chapter;        // id; empty means the first chapter
  std::string out;            // headless PNG
  int width = 1600, height = 900;
  bool size_given = false;
  std::optional<float> at;    // seconds into the chapter; empty means its end
  bool no_ui = false;         // headless: the scene alone, without panels
  bool fullscreen = false;
  float ui_scale = 0.0f;      // 0: from the monitor's content scale
  int frames = 0;             // window: quit after this many frames (smoke tests)
  std::string screenshot;     // window: PNG of the last frame before quitting
  std::string shader_dir;     // override where shaders are read from
  std::string font;           // override the font file
  // The Lab (`onegpu lab ...`, `--lab`, `onegpu train ... --watch`): the train flags given
  // (parsed by cli::parse_train_args), and for headless renders how far to run first.
  bool lab = false;
  std::vector<std::string> lab_args;
  int lab_steps = 0;          // --headless --lab: whole steps to run before the picture
  int lab_ops = 0;            // --headless --lab: ops to run by hand before the picture
  bool lab_play = false;      // start training at once (train --watch)
  std::string preset;         // the Lab: a run preset's name or file (app/cli/run_preset.h), its flags in lab_args
  std::string view;           // a trace to open in the Lab (`onegpu view FILE.json`, `onegpu lab --open FILE.json`)
  std::optional<double> scrub;  // the Lab: the replay cursor at this fraction (0..1) of the shown step
  std::string tab;            // the Lab: the bottom pane's tab (timeline, charts, experts, ...)
  std::vector<std::string> compare;
  std::string video;          // headless: encode frames to this file with ffmpeg (app/video.h)
  int fps = 30;
  double seconds = 0;         // --video: length of each chapter (or the replay); 0: its own  // headless Lab: branch the last step under these split flags
};

// Throws OptionsError with a one-line message on bad input.
Options parse_options(const std::vector<std::string>& args);
std::string usage();

}  // namespace onegpu::app
