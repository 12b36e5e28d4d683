#pragma once
// The Lab: the live run on one screen. A user picks a split, runs it free or at a pace, or
// steps it by hand (one op, one microbatch, one step), and watches
//   - the ranks view: the run's GPUs as stages (rows) x data-parallel copies (columns), with
//     each rank's measured memory and the op it is running (lab_ranks.cpp);
//   - the timeline: one lane per rank on the virtual (or wall) clock, zoom, pan, hover
//     (lab_timeline.cpp);
//   - the bubbles: each rank's idle share beside the schedule's textbook figure (lab_bubbles.cpp);
//   - the configuration, controls, status and by-hand read-outs (lab_panel.cpp).
// Everything it draws comes from the run state (app/live/run_state.h); the only way back to
// the run is a command to the job runner.
#include <cstdint>
#include <string>
#include <vector>

#include <glm/vec2.hpp>

#include "app/live/job_runner.h"
#include "app/live/run_state.h"
#include "render/canvas.h"

struct ImFont;

namespace onegpu::app {

struct LabFonts {
  ImFont* body = nullptr;
  ImFont* title = nullptr;
  ImFont* small = nullptr;
};

// Where the Lab's pieces sit in the window (pixels, top-left origin).
struct LabLayout {
  float x = 0, y = 0, w = 0, h = 0;  // the ranks view (the render canvas draws there)
};

// Per-step lookups the views share, rebuilt when the step record grows.
struct StepIndex {
  int step = -1;
  std::size_t spans = 0;
  std::vector<std::vector<std::uint32_t>> by_rank;  // span indices per rank, in time order
  std::vector<std::int32_t> by_op;                  // op id -> span index (-1: not yet)
  double end_virtual = 0, end_wall = 0;             // latest span end (s from the step's start)
  void update(const RunStep& s, int world, std::size_t ops);
};

// The train flags given to `onegpu lab` as the run they name (defaults filled in as `onegpu
// train` fills them). Throws trainer::Error with one line; the split itself is checked by
// JobRunner::check.
cli::TrainArgs lab_train_args(const std::vector<std::string>& flags);

// What the last frame drew, for tests (and nothing else).
struct LabDrawn {
  int lanes = 0;
  bool folded = false;
  std::vector<std::pair<float, float>> lane_y;  // each lane's top and bottom, window pixels
  float timeline_x0 = 0, timeline_x1 = 0;
  std::size_t rects = 0;  // rectangles the timeline drew (spans after merging)
  bool bubble_shown = false;
  double bubble = 0, textbook = 0;
  glm::vec2 ranks_viewport{0};
  std::vector<render::Rect> labels;  // the ranks view's words, viewport pixels (y up)
};

class Lab {
 public:
  explicit Lab(JobRunner& runner);

  // The configuration in the panel (and what "Apply" builds). Not applied by itself.
  void set_args(const cli::TrainArgs& a);
  const cli::TrainArgs& args() const { return edit_; }

  // The ImGui panels; returns where the ranks view goes.
  LabLayout panels(const RunState& rs, float fb_w, float fb_h, float scale, const LabFonts& fonts);
  // The ranks view, drawn on the screen canvas (pixels, origin bottom-left) of `viewport`.
  void ranks(render::Canvas& screen, glm::vec2 viewport, const RunState& rs, float scale);
  // A key while the Lab is open: ' ' run/pause, '.' one op, 'm' one microbatch, 's' one step,
  // 'f' fit the timeline and follow the run again.
  void key(char k);

  // The step the views show (the latest unless the user picked one), and the playhead on it.
  const RunStep* shown(const RunState& rs) const;
  double playhead(const RunState& rs) const;
  bool wall_clock() const { return wall_clock_; }
  const LabDrawn& drawn() const { return drawn_; }
  const std::string& edit_error() const { return edit_error_; }

 private:
  // lab_panel.cpp
  void config_panel(const RunnerStatus& st, float scale, const LabFonts& fonts);
  void controls_panel(const RunnerStatus& st, float scale, const LabFonts& fonts);
  void status_panel(const RunState& rs, const RunnerStatus& st, float scale, const LabFonts& fonts);
  void by_hand_panel(const RunState& rs, const RunnerStatus& st, float scale, const LabFonts& fonts);
  void full_size_panel(float scale, const LabFonts& fonts);  // lab_fullsize.cpp
  // lab_readout.cpp: one rank's by-hand read-outs, on the canvas
  void readout(render::Canvas& c, const render::Rect& area, const RunState& rs, float label);
  // lab_timeline.cpp
  void timeline(const RunState& rs, float scale, const LabFonts& fonts);
  // lab_bubbles.cpp
  void bubbles(const RunState& rs, float scale, const LabFonts& fonts);

  JobRunner& runner_;
  cli::TrainArgs edit_;
  std::string edit_error_, edit_note_;
  float pace_ = 4.0f;  // ops per second when paced
  bool paced_ = false;
  // Timeline view: [view0_, view1_] seconds from the step's start; follow_ fits it to the step.
  double view0_ = 0, view1_ = 1;
  bool follow_ = true;
  bool wall_clock_ = false;
  int pick_step_ = -1;       // -1: the latest
  double pick_time_ = -1;    // playhead set by a click on the ruler (-1: live)
  std::uint64_t seen_generation_ = 0;
  std::string viewing_;  // the file of a recorded run on screen ("" for the live run)
  std::uint64_t config_generation_ = ~0ull;  // the run the configuration header was last set for
  mutable StepIndex index_;
  LabDrawn drawn_;
};

}  // namespace onegpu::app
