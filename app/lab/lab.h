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
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <glm/vec2.hpp>

#include "app/lab/lab_replay.h"
#include "app/lab/lab_tabs.h"
#include "app/live/job_runner.h"
#include "app/live/run_state.h"
#include "app/ui/frame_damage.h"
#include "render/canvas.h"

struct ImFont;
using ImU32 = unsigned int;

namespace onegpu::app {

struct LabFonts {
  ImFont* body = nullptr;
  ImFont* title = nullptr;
  ImFont* small = nullptr;
};

// The background the Lab's tiled panels draw: none. They cover the window around the ranks
// view without overlapping, so App::frame_lab clears the frame to the style's (opaque) window
// colour instead, which gives the same pixels without shading each of them again.
inline constexpr ImU32 kLabPanelBg = 0;

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
  bool config_unapplied = false;  // the configuration's fields differ from the run's: "changed: Apply runs it"
  std::vector<std::pair<float, float>> lane_y;  // each lane's top and bottom, window pixels
  std::vector<std::string> lane_names;  // the lanes' label column: a name a lane, or a stage's band ("stage 2 GPU 9–16")
  float timeline_x0 = 0, timeline_x1 = 0;
  float timeline_prev_x = -1;  // the timeline header's ◀ (window pixels; -1: not drawn)
  std::size_t rects = 0;  // rectangles the timeline drew (spans after merging)
  int lanes_whole = 0, lanes_appended = 0;  // the retained lanes: drawn again whole / spans appended this frame
  // The retained lanes' pixels that changed this frame (window pixels; none: nothing changed): the
  // whole layer, or a box per lane that gained spans (one box over all of them would reach across
  // the lanes' staircase and redraw most of the timeline each frame).
  std::vector<PixelBox> lanes_dirty;
  bool bubble_shown = false;
  double bubble = 0, textbook = 0;
  glm::vec2 ranks_viewport{0};
  std::vector<render::Rect> labels;  // the ranks view's words, viewport pixels (y up)
  std::vector<render::Rect> chips;   // the ranks view's chips (drawn as chips, not field cells), same pixels
  bool message_in_view = false;  // the Files section's last message (written, or why not) in the panel's view
  bool by_hand_in_view = false;  // the side panel's BY HAND section in view (drawn paused): whole, or from its heading down
  std::vector<std::string> readout_columns;  // one rank by hand: the read-outs beside the chip ("head", "gradients", "update")
  double playhead = 0;                // the moment the ranks view showed
  std::vector<std::int32_t> rank_op;  // op id each rank ran at that moment (-1: none)
  int step = -1;                      // the step shown
  std::string tab;                    // the bottom pane's tab drawn
  bool tabs_settling = false;         // the tab bar is still scrolling a tab into view (or selecting one)
  float tab_x0 = 0, tab_x1 = 0;       // the shown tab's own button, window pixels (past the bar: scrolled off)
  float tab_bar_x0 = 0, tab_bar_x1 = 0;  // the tab bar
  std::vector<std::int64_t> heat;     // experts tab: tokens per [layer * experts + expert]
  std::vector<int> heat_numbered;     // experts tab: the columns numbered over the grid (from 1)
  std::vector<std::int64_t> traffic;  // traffic tab: rows sent [from * world + to]
  std::vector<double> ledger_measured, ledger_predicted;  // ledger tab: bytes per Transfer
  bool ledger_as_table = false;       // ledger tab: a table (false: a paragraph a transfer, too narrow for one)
  bool compared = false;              // compare tab: both steps drawn
  double compare_loss[2] = {0, 0}, compare_bubble[2] = {0, 0}, compare_end[2] = {0, 0};
  int compare_lanes[2] = {0, 0};
  bool compare_first_step_note = false;  // the compared step is the run's first: its times warned of
  std::string compare_began;             // what the verdict says of the weights they began from ("": nothing)
  // compare tab: the Branch button's box and the pane's right edge (window pixels, y down)
  render::Rect compare_branch{};
  int compare_branch_step = -1;     // the step "Branch step N" would branch (from 0)
  bool compare_can_branch = false;  // and whether the button takes a press now
  bool compare_pauses_first = false;  // the run trains: the button pauses it, then branches
  bool compare_can_cancel = false;  // a branch is running: its Cancel button is shown
  float compare_right = 0;
  float compare_x1[2] = {0, 0};       // where each timeline's step ends, window pixels (one scale)
  int chart_points = 0;               // charts tab: points drawn over the steps
  int memory_bands = 0;               // charts tab: memory categories drawn for the selected GPU
  // charts tab: each title and legend entry's box, with the frame of the chart it names
  // (window pixels, y down), so a test can tell that none runs past its chart.
  std::vector<std::pair<render::Rect, render::Rect>> chart_words;
};



struct TimelineLayer;

class Lab {
 public:
  explicit Lab(JobRunner& runner);
  ~Lab();

  // The configuration in the panel (and what "Apply" builds). Not applied by itself.
  void set_args(const cli::TrainArgs& a);
  // A run preset (a name in assets/runs or a file) into the configuration, read by the loader
  // `onegpu lab --preset` uses (lab_panel.cpp). Not applied by itself. A bad one leaves the
  // configuration as it was and keeps the one-line reason, shown in pink under the preset row.
  bool load_preset(const std::string& name_or_file);
  const std::string& preset_error() const { return preset_error_; }
  const cli::TrainArgs& args() const { return edit_; }

  // The ImGui panels; returns where the ranks view goes.
  LabLayout panels(const RunState& rs, float fb_w, float fb_h, float scale, const LabFonts& fonts);
  // The ranks view, drawn on the screen canvas (pixels, origin bottom-left) of `viewport`.
  void ranks(render::Canvas& screen, glm::vec2 viewport, const RunState& rs, float scale);
  // A key while the Lab is open: ' ' run/pause, '.' one op, 'm' one microbatch, 's' one step,
  // 'f' fit the timeline and follow the run again; replay: 'p' play/pause, '[' / ']' the
  // selected rank's previous / next op.
  void key(char k);

  // Replay: put the cursor at `fraction` (0..1) of the shown step (headless --scrub, tests).
  void scrub_to(const RunState& rs, double fraction);
  const ReplayCursor& cursor() const { return replay_; }
  // True while a replay plays: a window that draws only on demand must keep drawing.
  // Frames are owed while a replay plays, and for the frames a new Files message takes to be
  // drawn and scrolled into view (an idle window would otherwise stop before it shows).
  bool animating() const { return replay_.playing || message_scrolled_ != message_serial_ || scroll_frames_ > 0; }
  void select_rank(int r) { sel_rank_ = r; }
  void set_tab(LabTab t) { tab_ = t, tab_pending_ = true; }
  // Compare (lab_compare.cpp): the run state of the last branch, and what it branched from.
  void set_branch(const RunState* rs, const BranchRun* b) { branch_rs_ = rs, branch_ = b; }
  cli::TrainArgs& compare_args() { return compare_; }

  // Files (lab_files.cpp): what the panel asked the app to do after this frame ("" if nothing),
  // and a line for the panel (error: shown in pink).
  std::string take_open_request();
  std::string take_png_request();
  void request_png(const std::string& path);
  void set_message(std::string m, bool error) { message_ = std::move(m), message_error_ = error, ++message_serial_; }
  const std::string& message() const { return message_; }

  // The step the views show (the latest unless the user picked one), and the playhead on it.
  const RunStep* shown(const RunState& rs) const;
  // The step the Experts and Traffic tabs show: shown(), or the last one finished while the
  // latest is under way and no step was picked (a step's counts come at its end).
  // *earlier (if given): whether that is the last finished step rather than shown()'s.
  const RunStep* shown_counted(const RunState& rs, bool* earlier = nullptr) const;
  double playhead(const RunState& rs) const;
  bool wall_clock() const { return wall_clock_; }
  const LabDrawn& drawn() const { return drawn_; }
  // The timeline's lanes kept in a retained layer between frames (lab_timeline_layer.h); off:
  // drawn whole into the window every frame (the tests compare the two).
  void set_retained(bool on) { retained_ = on; }
  const std::string& edit_error() const { return edit_error_; }

 private:
  // lab_panel.cpp
  void config_panel(const RunnerStatus& st, float scale, const LabFonts& fonts);
  void preset_row(float scale, const LabFonts& fonts);
  void controls_panel(const RunnerStatus& st, float scale, const LabFonts& fonts);
  void status_panel(const RunState& rs, const RunnerStatus& st, const LabFonts& fonts);
  void by_hand_panel(const RunState& rs, const RunnerStatus& st, const LabFonts& fonts);
  void files_panel(const RunState& rs, const LabFonts& fonts);  // lab_files.cpp
  void full_size_panel(float scale, const LabFonts& fonts);  // lab_fullsize.cpp
  // lab_readout.cpp: one rank's by-hand read-outs, on the canvas
  void readout(render::Canvas& c, const render::Rect& area, const RunState& rs, float label);
  // lab_timeline.cpp
  void timeline(const RunState& rs, float scale, const LabFonts& fonts);
  // lab_bubbles.cpp
  void bubbles(const RunState& rs, float scale, const LabFonts& fonts);
  // lab.cpp: the bottom pane's tabs
  void bottom_pane(const RunState& rs, float scale, const LabFonts& fonts);
  // lab_charts.cpp, lab_experts.cpp (experts and traffic), lab_ledger.cpp, lab_compare.cpp
  void charts(const RunState& rs, float scale, const LabFonts& fonts);
  void experts(const RunState& rs, float scale, const LabFonts& fonts);
  void traffic(const RunState& rs, float scale, const LabFonts& fonts);
  void ledger(const RunState& rs, float scale, const LabFonts& fonts);
  void compare(const RunState& rs, float scale, const LabFonts& fonts);
  // lab_scrubber.cpp: the replay row under the timeline
  void scrubber(const RunState& rs, float scale, const LabFonts& fonts, bool row);
  // The rows the replay row takes in `width` pixels (its items wrap where they do not fit).
  int replay_rows(float width, float scale, const LabFonts& fonts) const;
  double step_end() const { return wall_clock_ ? index_.end_wall : index_.end_virtual; }

  JobRunner& runner_;
  cli::TrainArgs edit_;
  std::string edit_error_, edit_note_;
  float pace_ = 4.0f;  // ops per second when paced
  bool paced_ = false;
  // Timeline view: [view0_, view1_] seconds from the step's start; follow_ fits it to the step.
  double view0_ = 0, view1_ = 1;
  bool follow_ = true;
  // Following a running step, the axis holds (the last step's length, or a quarter more than
  // the step so far) while the step grows into it, instead of rescaling every frame.
  double follow_hold_ = 0, last_fit_ = 0;
  int hold_step_ = -1;
  bool wall_clock_ = false;
  int pick_step_ = -1;       // -1: the latest
  ReplayCursor replay_;      // the playhead: a click on the ruler or the scrubber sets it (live until then)
  int sel_rank_ = 0;         // the rank whose ops '[' and ']' jump between (a click on its lane)
  LabTab tab_ = LabTab::Timeline;
  bool tab_pending_ = false;  // set_tab asked for a tab: select it on the next frame
  char replay_key_ = 0;       // a replay key pressed since the last frame
  int traffic_layer_ = -1;    // the traffic tab's layer (-1: all summed)
  const RunState* branch_rs_ = nullptr;
  const BranchRun* branch_ = nullptr;
  cli::TrainArgs compare_;     // the other split, as the compare tab's fields hold it
  bool compare_init_ = false;  // compare_ was filled from the live run once
  char open_path_[512] = "";
  char preset_path_[512] = "";           // the preset row's file field (lab_panel.cpp)
  std::vector<std::string> preset_names_;  // assets/runs, listed when the preset list opens
  std::string preset_shown_, preset_note_, preset_error_;
  char export_base_[256] = "onegpu-lab";
  std::string open_request_, png_request_, message_;
  bool message_error_ = false;
  int message_serial_ = 0, message_scrolled_ = 0;  // a new message is scrolled into view once
  int scroll_frames_ = 0;  // frames still owed to a scroll asked for (SetScrollY shows next frame)
  std::uint64_t seen_generation_ = 0;
  std::string viewing_;  // the file of a recorded run on screen ("" for the live run)
  std::uint64_t config_generation_ = ~0ull;  // the run the configuration header was last set for
  bool config_open_request_ = false;          // load_preset: open the configuration header
  mutable StepIndex index_;
  LabDrawn drawn_;
  // Where the run stood when the BY HAND section was last drawn paused (steps done, in a step,
  // next op): when a press moves it on, the section is brought into view (lab_panel.cpp).
  std::optional<std::tuple<int, bool, std::int64_t>> by_hand_seen_;
  bool retained_ = true;
  std::unique_ptr<TimelineLayer> lanes_layer_;
};

}  // namespace onegpu::app
