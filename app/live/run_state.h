#pragma once
// The run state: everything the screens know of a run, filled only from its events. App::frame
// drains every ring of the live run once per frame into it (drain()); a recorded run is the
// same thing fed from a saved list of events (consume()). Screens draw from here and never
// read trainer objects.
//
// Bounds: the last kFullSteps steps are kept whole (every op's span, memory, router counts,
// traffic); every finished step also leaves one StepLine, and the last kHistoryLines lines are
// kept (about 5 MB at most). A 512-rank step is about 330,000 spans (24 MB), so the full
// record is kept for a few steps only.
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "app/live/job_runner.h"
#include "trainer/engine/virtual_clock.h"
#include "trainer/events/event.h"

namespace onegpu::app {

// One op as a rank ran it (from an engine event; a collective gives one span per member).
struct OpSpan {
  std::uint32_t id = 0;  // op id in the step's plan
  std::int32_t rank = 0;
  std::int32_t microbatch = -1;
  trainer::EventKind kind = trainer::EventKind::Forward;
  std::uint8_t detail = 0;
  std::int16_t layer = -1, chunk = -1, peer = -1;
  double vbegin = 0, vend = 0;    // virtual seconds from the step's start
  std::int64_t wbegin = 0, wend = 0;  // wall ns (steady clock)
  std::int64_t bytes = 0;
  double measured_s = 0;          // the op's measured cost
};

inline constexpr int kMemCategories = trainer::kMemCategoryCount;
struct RankMemory {
  std::array<std::int64_t, kMemCategories> current{}, peak{};  // at the step's end / over it
};

struct TrafficRow {
  std::int32_t layer = 0, from = 0, to = 0;
  std::int64_t rows = 0;
};

// A by-hand run's read-out (trainer::ProbeKind): next-token guesses, per-layer gradient norms,
// how far the update moved each layer.
struct ProbeValue {
  trainer::ProbeKind kind = trainer::ProbeKind::NextToken;
  std::int32_t microbatch = -1;
  std::int16_t layer = -1;
  std::int64_t id = 0;  // token id (NextToken, Target, Context)
  double value = 0;
};

struct RunStep {
  int step = 0;
  bool complete = false;
  bool by_hand = false;
  std::vector<OpSpan> ops;  // in the order they finished (arrival order per lane)
  // Activation bytes of a rank after each of its compute ops: (op id, bytes).
  std::vector<std::pair<std::uint32_t, std::int64_t>> activations;
  std::vector<RankMemory> memory;  // per rank, from the step's end (empty until then)
  std::vector<std::int64_t> router;  // [layer * experts + expert]: rows routed this step
  std::vector<TrafficRow> traffic;   // forward dispatch, rank -> rank per layer
  std::vector<double> microbatch_loss;  // Loss events, in arrival order
  std::vector<ProbeValue> probes;       // in arrival order
  std::array<std::int64_t, trainer::kEventKindCount> bytes_by_kind{};  // per op kind, all ranks
  double loss = 0, grad_norm = 0, tokens_per_s = 0;  // tokens_per_s NaN: stepped by hand
  double lr = std::nan(""), heldout = std::nan("");  // NaN: not reported (a trace; most steps' held-out)
  std::uint64_t weights_fingerprint = 0;  // FNV-1a of the weights after the update (0: not taken)
  double virtual_s = 0;           // the step on the virtual clock
  double wall_s = 0;              // on the wall clock (engine step and update)
  std::int64_t wall_begin = 0;    // first op's wall begin (ns), for a wall-clock timeline
  // Derived once complete, from the spans (trainer::summarize over the plan):
  std::vector<double> rank_idle;  // share of the pipeline's time each rank had no compute
  double bubble = 0;              // mean over stages of their ranks' idle share
  double textbook = 0;            // the schedule's figure (trainer::textbook_bubble)
  bool spans_whole = false;       // every op of the plan has its span (nothing dropped)
};

struct StepLine {
  int step = 0;
  double loss = 0, grad_norm = 0, tokens_per_s = 0, bubble = 0, textbook = 0, virtual_s = 0, wall_s = 0;
  double lr = 0, heldout = 0;  // NaN when the step did not report them
  std::uint64_t weights_fingerprint = 0;  // after the update (0: not taken); Compare reads the step before a branch's
};

class RunState {
 public:
  static constexpr std::size_t kFullSteps = 6;
  static constexpr std::size_t kHistoryLines = 100000;

  // A new run: forgets the old one.
  void attach(std::shared_ptr<const LiveRun> run);
  const LiveRun* run() const { return run_.get(); }
  std::uint64_t generation() const { return run_ ? run_->generation : 0; }

  // Drains every lane of the run's stream once. Returns the events taken.
  std::size_t drain();
  // One event (drain() calls it; a recorded run is replayed through it).
  void consume(const trainer::Event& e);

  const std::deque<RunStep>& steps() const { return steps_; }  // oldest first
  const RunStep* latest() const { return steps_.empty() ? nullptr : &steps_.back(); }
  const RunStep* last_complete() const;
  const RunStep* find(int step) const;
  const std::deque<StepLine>& history() const { return history_; }
  // Each rank's memory as last reported (at build time, then at every step's end).
  const std::vector<RankMemory>& resident() const { return resident_; }

  // Events lost, per lane and in all (from the stream's counters and its Dropped markers).
  std::uint64_t dropped() const;
  const std::vector<std::uint64_t>& dropped_per_lane() const { return dropped_; }
  double ring_fill() const { return fill_; }  // fullest lane before the last drain, 0..1
  std::uint64_t events_seen() const { return seen_; }

  // A step's spans as the engine's Timeline (by op id; ops with no span keep zeros).
  trainer::Timeline timeline(const RunStep& s) const;

 private:
  RunStep& record(int step);
  void close(RunStep& s);
  void trim();

  std::shared_ptr<const LiveRun> run_;
  std::deque<RunStep> steps_;
  RunStep scratch_;
  std::deque<StepLine> history_;
  std::vector<RankMemory> resident_;
  std::vector<std::uint64_t> dropped_, marked_;
  double fill_ = 0;
  std::uint64_t seen_ = 0;
};

}  // namespace onegpu::app
