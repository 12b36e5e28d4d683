// The Lab's second half, rendered offscreen: the replay cursor (the ranks view at moment t is
// the run state at t), and the tabs drawn from the shown step (experts heatmap = the router's
// counts, traffic matrix = the all-to-all rows, ledger = the formulas, charts over the steps).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <thread>

#include <imgui.h>

#include "app/app.h"
#include "app/assets.h"
#include "app/live/comm_ledger.h"
#include "app/live/job_runner.h"
#include "app/live/run_export.h"
#include "pixels.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"
#include "app/png_file.h"

namespace onegpu::app {
namespace {

struct ViewsApp {
  render::HeadlessContext ctx;
  ImGuiContext* imgui = ImGui::CreateContext();
  std::unique_ptr<App> app;
  render::Framebuffer fb{1600, 900};
  explicit ViewsApp(float scale = 1.0f) {
    Options o;
    app = std::make_unique<App>(find_assets(o), true, true, scale, 0);
    app->nav().set_lab(true);
    app->set_frame_ms(-1.0f);
    fb.bind();
  }
  ~ViewsApp() {
    app.reset();
    ImGui::DestroyContext(imgui);
  }
  void settle() { JobRunner::shared().wait_idle([&] { app->drain_events(); }); }
  std::vector<std::uint8_t> frame(const char* name = nullptr) {
    app->frame(1600, 900, 0.0f, 0.0);
    std::vector<std::uint8_t> px = fb.read_rgba();
    if (name) {
      std::filesystem::create_directories(ONEGPU_TEST_OUT);
      save_png(std::string(ONEGPU_TEST_OUT) + "/" + name + ".png", 1600, 900, px);
    }
    return px;
  }
  void run(std::vector<std::string> flags, int steps) {
    JobRunner& jr = JobRunner::shared();
    jr.configure(lab_train_args(flags));
    settle();
    ASSERT_TRUE(jr.status().error.empty()) << jr.status().error;
    for (int i = 0; i < steps; ++i) jr.step_whole();
    settle();
    frame();  // the first frame settles ImGui's layout
  }
  // `n` ops of the next step by hand: a step under way, as a learner leaves it.
  void step_ops(int n) {
    for (int i = 0; i < n; ++i) JobRunner::shared().step_op();
    settle();
    // The ops' events can reach the run state a moment after the runner goes idle (a CI run
    // once saw the step under way still missing): drained until it shows, as frames would.
    for (int i = 0; i < 400; ++i) {
      app->drain_events();
      const RunStep* s = app->run_state().latest();
      if (s && !s->complete) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
};

int count(const std::vector<std::uint8_t>& px, int x0, int y0, int x1, int y1, bool (*keep)(Rgb)) {
  Image im{1600, 900, &px};
  int n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) n += keep(im.at(x, y));
  return n;
}

TEST(LabReplay, RanksViewAtTheCursorIsTheRunStateThere) {
  ViewsApp t;
  t.run({"--pp", "2", "--dp", "2", "--ep", "2", "--batch", "8", "--seq", "16"}, 2);
  const RunStep* s = t.app->run_state().latest();
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->complete);
  double end = 0;
  for (const OpSpan& o : s->ops) end = std::max(end, o.vend);
  int busy_seen = 0;
  for (double f : {0.0, 0.13, 0.37, 0.5, 0.71, 0.94, 1.0}) {
    t.app->lab().scrub_to(t.app->run_state(), f);
    t.frame(f == 0.37 ? "lab_replay_037" : nullptr);
    const LabDrawn& d = t.app->lab().drawn();
    const double tau = f * end;
    EXPECT_NEAR(d.playhead, tau, 1e-12) << "the cursor at " << f << " of the step";
    ASSERT_EQ(d.rank_op.size(), 4u);
    for (int r = 0; r < 4; ++r) {
      // Independently: the ops rank r had under way at tau, straight from the spans.
      std::set<std::int32_t> under_way;
      for (const OpSpan& o : s->ops)
        if (o.rank == r && o.vbegin <= tau + 1e-12 && tau <= o.vend + 1e-12) under_way.insert((std::int32_t)o.id);
      if (under_way.empty()) {
        EXPECT_EQ(d.rank_op[(std::size_t)r], -1) << "GPU " << r + 1 << " idle at " << f;
      } else {
        EXPECT_TRUE(under_way.count(d.rank_op[(std::size_t)r])) << "GPU " << r + 1 << " at " << f;
        ++busy_seen;
      }
    }
  }
  EXPECT_GT(busy_seen, 6) << "the moments chosen catch GPUs at work";
}

// Each stage is named with the layers it holds: an interleaved stage's chunks apart (it said
// "layers 1–3" for layers 1 and 3), one layer as "layer N" (it said "layers 4–4").
TEST(LabRanks, StagesNameTheLayersTheyHold) {
  ViewsApp t;
  auto names = [&] {
    std::set<std::string> out;
    for (const render::LabelRecord& l : t.app->labels().labels())
      if (l.text.rfind("layer", 0) == 0) out.insert(l.text);
    return out;
  };
  t.run({"--pp", "2", "--vstages", "2", "--schedule", "interleaved", "--microbatches", "2", "--batch", "2", "--seq", "16"}, 1);
  t.frame();
  EXPECT_EQ(names(), (std::set<std::string>{"layers 1, 3", "layers 2, 4"}));
  t.run({"--pp", "4", "--microbatches", "4", "--batch", "4", "--seq", "16"}, 1);
  t.frame();
  EXPECT_EQ(names(), (std::set<std::string>{"layer 1", "layer 2", "layer 3", "layer 4"}));
  t.run({"--pp", "2", "--microbatches", "2", "--batch", "2", "--seq", "16"}, 1);
  t.frame();
  EXPECT_EQ(names(), (std::set<std::string>{"layers 1\u20132", "layers 3\u20134"}));
}

TEST(LabReplay, PlayMovesTheCursorAtItsSpeedAndStopsAtTheEnd) {
  ReplayCursor c;
  EXPECT_TRUE(c.live());
  c.speed = 2;
  c.play(0.01);
  c.advance(1.0, 0.01);  // 1 s at 2x: a quarter of an 8 s step
  EXPECT_NEAR(c.t, 0.01 * 2 / ReplayCursor::kStepSeconds, 1e-15);
  c.speed = 100;  // past the fastest: 10x
  c.advance(0.1, 0.01);
  EXPECT_NEAR(c.t, 0.01 * (2 + 1) / ReplayCursor::kStepSeconds, 1e-15);
  EXPECT_DOUBLE_EQ(c.speed, ReplayCursor::kMaxSpeed);
  c.advance(100.0, 0.01);
  EXPECT_DOUBLE_EQ(c.t, 0.01);
  EXPECT_FALSE(c.playing) << "stops at the end";
}

TEST(LabReplay, NextAndPreviousOpOfARank) {
  RunStep s;
  for (auto [b, e] : {std::pair{0.0, 1.0}, {2.0, 3.0}, {5.0, 6.0}}) {
    OpSpan o;
    o.vbegin = b, o.vend = e;
    s.ops.push_back(o);
  }
  const std::vector<std::uint32_t> lane{0, 1, 2};
  EXPECT_DOUBLE_EQ(op_jump(s, lane, 0.5, false, +1), 2.0);
  EXPECT_DOUBLE_EQ(op_jump(s, lane, 2.0, false, +1), 5.0);
  EXPECT_DOUBLE_EQ(op_jump(s, lane, 2.0, false, -1), 0.0);
  EXPECT_DOUBLE_EQ(op_jump(s, lane, 5.5, false, +1), 5.5) << "no op after the last: stay";
  EXPECT_EQ(op_at(s, lane, 4.0, false), nullptr) << "between ops: idle";
  EXPECT_EQ(op_at(s, lane, 2.5, false), &s.ops[1]);
}

TEST(LabTabs, ExpertsTrafficLedgerAndChartsComeFromTheStep) {
  ViewsApp t;
  t.run({"--pp", "2", "--dp", "2", "--ep", "2", "--batch", "8", "--seq", "16"}, 3);
  const RunStep* s = t.app->run_state().latest();
  ASSERT_NE(s, nullptr);
  const int L = 4, E = 16;
  ASSERT_EQ(s->router.size(), (std::size_t)(L * E));

  t.app->lab().set_tab(LabTab::Experts);
  t.frame();
  auto px = t.frame("lab_tab_experts");
  EXPECT_EQ(t.app->lab().drawn().tab, "experts");
  EXPECT_EQ(t.app->lab().drawn().heat, s->router) << "the heatmap is the router's own counts";
  for (int l = 0; l < L; ++l) {
    std::int64_t sum = 0;
    for (int e = 0; e < E; ++e) sum += s->router[(std::size_t)(l * E + e)];
    EXPECT_EQ(sum, 8 * 16 * 2) << "layer " << l + 1 << ": every token of the batch chose its top-2";
  }
  EXPECT_GT(count(px, 360, 420, 1290, 880, fills::amber), 2000) << "the heatmap's hot cells";

  t.app->lab().set_tab(LabTab::Traffic);
  t.frame();
  px = t.frame("lab_tab_traffic");
  const auto& m = t.app->lab().drawn().traffic;
  ASSERT_EQ(m.size(), 16u);
  std::int64_t rows = 0, matrix = 0;
  for (const TrafficRow& r : s->traffic) rows += r.rows;
  for (std::int64_t x : m) matrix += x;
  EXPECT_EQ(matrix, rows);
  EXPECT_GT(rows, 0);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(m[(std::size_t)(r * 4 + r)], 0) << "no rows to itself";
  EXPECT_EQ(m[0 * 4 + 2], 0) << "GPU 1 and GPU 3 are in different stages: no all-to-all between them";

  t.app->lab().set_tab(LabTab::Ledger);
  t.frame();
  t.frame("lab_tab_ledger");
  const LabDrawn& d = t.app->lab().drawn();
  ASSERT_EQ(d.ledger_measured.size(), (std::size_t)kTransfers);
  for (int i = 0; i < kTransfers; ++i)
    if (d.ledger_predicted[(std::size_t)i] >= 0) {
      EXPECT_NEAR(d.ledger_measured[(std::size_t)i], d.ledger_predicted[(std::size_t)i],
                  1e-9 * std::max(1.0, d.ledger_predicted[(std::size_t)i]))
          << transfer_name((Transfer)i);
    }

  t.app->lab().set_tab(LabTab::Charts);
  t.frame();
  px = t.frame("lab_tab_charts");
  EXPECT_GE(t.app->lab().drawn().chart_points, 3 * 5) << "three steps in each chart";
  EXPECT_GE(t.app->lab().drawn().memory_bands, 4) << "weights, gradients, optimizer, activations";
  EXPECT_GT(count(px, 1000, 420, 1290, 880, fills::lavender), 300) << "the weights' band";
}

// While a step is under way (a run training, or a learner's ops by hand), Experts and Traffic
// show the last step that finished: the one under way has no counts until it ends, and a
// training run's tabs stayed empty.
TEST(LabTabs, ExpertsAndTrafficShowTheLastFinishedStepWhileOneIsUnderWay) {
  ViewsApp t;
  t.run({"--dp", "2", "--ep", "2", "--batch", "8", "--seq", "16"}, 2);
  t.step_ops(3);
  const RunStep* under_way = t.app->run_state().latest();
  const RunStep* done = t.app->run_state().last_complete();
  ASSERT_NE(under_way, nullptr);
  ASSERT_NE(done, nullptr);
  ASSERT_FALSE(under_way->complete) << "three ops into step 3";
  ASSERT_EQ(done->step, 1);
  t.app->lab().set_tab(LabTab::Experts);
  t.frame();
  t.frame("lab_tab_experts_under_way");
  EXPECT_EQ(t.app->lab().drawn().heat, done->router) << "step 2's router counts";
  t.app->lab().set_tab(LabTab::Traffic);
  t.frame();
  t.frame();
  std::int64_t rows = 0, matrix = 0;
  for (const TrafficRow& r : done->traffic) rows += r.rows;
  for (std::int64_t x : t.app->lab().drawn().traffic) matrix += x;
  EXPECT_GT(rows, 0);
  EXPECT_EQ(matrix, rows) << "step 2's all-to-all rows";
}

// Fields changed after a run started do nothing until Apply, and the panel says so; the same
// fields again (or the run's own) say nothing.
TEST(LabPanel, ChangedFieldsSayTheyWaitForApply) {
  ViewsApp t;
  const std::vector<std::string> flags = {"--pp", "2", "--microbatches", "2", "--batch", "4", "--seq", "8"};
  t.app->lab().set_args(lab_train_args(flags));  // as the window does: the fields, then Apply
  t.run(flags, 1);
  t.frame();
  EXPECT_FALSE(t.app->lab().drawn().config_unapplied) << "the fields are the run's";
  cli::TrainArgs other = t.app->lab().args();
  other.dp = 2;
  t.app->lab().set_args(other);
  t.frame();
  EXPECT_TRUE(t.app->lab().drawn().config_unapplied) << "dp 2 is not what runs";
  other.dp = 1;
  t.app->lab().set_args(other);
  t.frame();
  EXPECT_FALSE(t.app->lab().drawn().config_unapplied) << "back to the run's fields";
  other.schedule = "gpipe";
  t.app->lab().set_args(other);
  t.frame();
  EXPECT_TRUE(t.app->lab().drawn().config_unapplied) << "another schedule";
  JobRunner::shared().configure(other);
  t.settle();
  t.frame();
  EXPECT_FALSE(t.app->lab().drawn().config_unapplied) << "applied";
}

// A run of hundreds of steps, more steps than the charts have pixel columns: every per-step
// series is a line across its chart (it drew as one dot at its end once steps were less than a
// pixel apart).
TEST(LabTabs, ALongRunsChartsAreLinesNotADot) {
  ViewsApp t;
  t.run({"--batch", "4", "--seq", "8"}, 300);
  t.app->lab().set_tab(LabTab::Charts);
  t.frame();
  t.frame("lab_tab_charts_long_run");
  // Nine series (train and held-out loss, tokens/s, virtual and wall step time, gradient norm,
  // learning rate, measured and textbook bubble) over charts ~240 pixels wide; held-out loss has
  // a point every tenth step.
  EXPECT_GT(t.app->lab().drawn().chart_points, 8 * 150);
}

// At a projector's text size (x2) and in a small window, the charts tab's titles and legends
// stay inside their charts (fewer charts a row, legends on more lines, the tab scrolls), and the
// ledger becomes a paragraph a transfer where its table's columns cannot all be whole.
TEST(LabTabs, ChartWordsAndLedgerFitAtAProjectorsTextScale) {
  for (float scale : {1.0f, 2.0f}) {
    ViewsApp t(scale);
    t.run({"--pp", "2", "--dp", "2", "--ep", "2", "--batch", "8", "--seq", "16"}, 3);
    for (auto [w, h] : {std::pair{1600, 900}, std::pair{1024, 600}}) {
      t.app->lab().set_tab(LabTab::Charts);
      for (int i = 0; i < 3; ++i) t.app->frame(w, h, 0.0f, 0.0);
      const LabDrawn& d = t.app->lab().drawn();
      EXPECT_GE(d.chart_words.size(), 7u + 4u) << "a title a chart, and the memory chart's legend";
      for (const auto& [word, frame] : d.chart_words) {
        EXPECT_GE(word.min.x, frame.min.x) << w << "x" << h << " text x" << scale;
        EXPECT_LE(word.max.x, frame.max.x) << w << "x" << h << " text x" << scale << ": a word runs past its chart";
        EXPECT_LE(word.max.y, frame.max.y) << w << "x" << h << " text x" << scale << ": a legend runs under its chart";
      }
      t.app->lab().set_tab(LabTab::Ledger);
      for (int i = 0; i < 3; ++i) t.app->frame(w, h, 0.0f, 0.0);
      EXPECT_EQ(t.app->lab().drawn().ledger_as_table, scale == 1.0f && w == 1600) << w << "x" << h << " text x" << scale;
    }
  }
}

}  // namespace
}  // namespace onegpu::app

namespace onegpu::app {
namespace {

// "What does 1F1B buy over GPipe here": the same step branched under GPipe computes the same
// loss bit for bit (same weights, same batch), on a different timeline: GPipe runs every
// forward before any backward, so its first stage holds more activations at its peak.
// The compare row (schedule, five fields, the Branch button) wraps onto a second line where
// the pane is narrow for it: at 1920x1080 with text 1.6 it ran past the pane's edge and the
// Branch button was out of sight.
// The experts grid numbers its columns evenly from 1 to the last, every column or every 2nd,
// 4th ... where two digits do not fit a cell (it numbered 1 to 9 of 16 and stopped).
TEST(LabTabs, ExpertColumnsAreNumberedEvenlyToTheLast) {
  for (float scale : {1.0f, 1.6f}) {
    ViewsApp t(scale);
    t.run({"--pp", "2", "--dp", "2", "--ep", "2", "--microbatches", "2", "--batch", "8", "--seq", "16"}, 1);
    for (auto [w, h] : {std::pair{1600, 900}, std::pair{1024, 640}}) {
      t.app->lab().set_tab(LabTab::Experts);
      for (int i = 0; i < 3; ++i) t.app->frame(w, h, 0.0f, 0.0);
      const std::vector<int>& n = t.app->lab().drawn().heat_numbered;
      const int E = t.app->run_state().run()->model.n_experts;
      ASSERT_GE(n.size(), 2u) << w << "x" << h << " text x" << scale;
      EXPECT_EQ(n.front(), 1);
      const int stride = n[1] - n[0];
      for (std::size_t i = 1; i < n.size(); ++i) EXPECT_EQ(n[i] - n[i - 1], stride) << w << "x" << h << " text x" << scale;
      EXPECT_GT(n.back() + stride, E) << w << "x" << h << " text x" << scale << ": the numbers stop before the last columns";
    }
  }
}

TEST(LabCompare, BranchButtonStaysInThePaneAtEveryTextScale) {
  for (float scale : {1.0f, 1.6f, 2.0f}) {
    ViewsApp t(scale);
    t.run({"--pp", "2", "--microbatches", "2", "--batch", "2", "--seq", "16"}, 1);
    for (auto [w, h] : {std::pair{1920, 1080}, std::pair{1600, 900}, std::pair{1024, 640}}) {
      t.app->lab().set_tab(LabTab::Compare);
      for (int i = 0; i < 3; ++i) t.app->frame(w, h, 0.0f, 0.0);
      const LabDrawn& d = t.app->lab().drawn();
      ASSERT_GT(d.compare_right, 0.0f) << w << "x" << h << " text x" << scale;
      EXPECT_GT(d.compare_branch.max.x, d.compare_branch.min.x);
      EXPECT_LE(d.compare_branch.max.x, d.compare_right + 1.0f) << w << "x" << h << " text x" << scale;
    }
  }
}

TEST(LabCompare, GPipeBranchOfAOneFOneBStep) {
  ViewsApp t;
  const std::vector<std::string> flags{"--pp", "2", "--microbatches", "4", "--schedule", "1f1b", "--batch", "8", "--seq", "16"};
  t.run(flags, 2);
  JobRunner& jr = JobRunner::shared();
  std::vector<std::string> other = flags;
  other.insert(other.end(), {"--schedule", "gpipe"});
  jr.branch(lab_train_args(other), 1);
  t.settle();
  ASSERT_TRUE(jr.status().error.empty()) << jr.status().error;
  t.app->drain_events();
  t.app->lab().set_tab(LabTab::Compare);
  t.frame();
  const auto px = t.frame("lab_compare_gpipe_1f1b");
  const LabDrawn& d = t.app->lab().drawn();
  ASSERT_TRUE(d.compared);
  EXPECT_EQ(d.compare_loss[0], d.compare_loss[1]) << "same weights, same batch: the same loss bit for bit";
  EXPECT_NE(d.compare_bubble[0], d.compare_bubble[1]) << "two schedules, two timelines";
  EXPECT_EQ(d.compare_lanes[0], 2);
  EXPECT_EQ(d.compare_lanes[1], 2);
  EXPECT_FALSE(d.compare_first_step_note) << "step 2 is not the run's first";
  // One time scale: the longer step reaches further right.
  EXPECT_EQ(d.compare_end[0] < d.compare_end[1], d.compare_x1[0] < d.compare_x1[1]);
  const RunStep* a = t.app->run_state().find(1);
  const RunStep* b = t.app->branch_state().find(1);
  ASSERT_TRUE(a && b);
  ASSERT_FALSE(a->memory.empty());
  ASSERT_FALSE(b->memory.empty());
  EXPECT_LT(a->memory[0].peak[3], b->memory[0].peak[3]) << "1F1B's first stage holds fewer microbatches' activations";
  // Branching the run's first step: its times carry one-time costs, and the pane says so.
  jr.branch(lab_train_args(other), 0);
  t.settle();
  ASSERT_TRUE(jr.status().error.empty()) << jr.status().error;
  t.app->drain_events();
  t.frame();
  t.frame("lab_compare_first_step");
  EXPECT_TRUE(t.app->lab().drawn().compared);
  EXPECT_TRUE(t.app->lab().drawn().compare_first_step_note);
  EXPECT_GT(count(px, 360, 480, 1290, 880, fills::amber), 2000) << "both timelines' forwards";
  EXPECT_GT(count(px, 360, 480, 1290, 880, fills::pink), 2000) << "and backwards";
}

// The oldest step the run state keeps whole has lost the step before it, whose fingerprint says
// what weights it began from: the history line keeps it, so the verdict still says whether the
// branch began from the same weights (it began from the runner's state kept before the step:
// the same bits), and says nothing else on its line.
TEST(LabCompare, TheOldestWholeStepStillSaysWhatItBeganFrom) {
  ViewsApp t;
  const std::vector<std::string> flags{"--pp", "2", "--microbatches", "2", "--batch", "4", "--seq", "8"};
  t.run(flags, 9);
  t.app->drain_events();
  const int oldest = t.app->run_state().steps().front().step;
  ASSERT_GT(oldest, 0);
  ASSERT_EQ(t.app->run_state().find(oldest - 1), nullptr) << "the step before is no longer kept whole";
  JobRunner& jr = JobRunner::shared();
  std::vector<std::string> other = flags;
  other.insert(other.end(), {"--schedule", "gpipe"});
  jr.branch(lab_train_args(other), oldest);
  t.settle();
  ASSERT_TRUE(jr.status().error.empty()) << jr.status().error;
  ASSERT_NE(jr.branched(), nullptr);
  EXPECT_EQ(jr.branched()->first, oldest) << "stepped by hand: a state was kept before every step";
  t.app->drain_events();
  t.app->lab().set_tab(LabTab::Compare);
  t.frame();
  t.frame("lab_compare_oldest_step");
  ASSERT_TRUE(t.app->lab().drawn().compared);
  EXPECT_EQ(t.app->lab().drawn().compare_began, "· both began from weights equal bit for bit");
}

// Mid-step by hand, Branch takes the last finished step (the one under way has no end yet to
// compare); while the run trains the button pauses it first (the branch runs on the runner's
// thread) and the step it named is the one compared.
TEST(LabCompare, BranchTakesTheLastFinishedStepAndPausesATrainingRun) {
  ViewsApp t;
  t.run({"--pp", "2", "--microbatches", "2", "--batch", "4", "--seq", "8"}, 2);
  t.step_ops(3);
  ASSERT_FALSE(t.app->run_state().latest()->complete);
  t.app->lab().set_tab(LabTab::Compare);
  t.frame();
  t.frame("lab_compare_mid_step");
  EXPECT_EQ(t.app->lab().drawn().compare_branch_step, 1) << "step 2, the last finished";
  EXPECT_TRUE(t.app->lab().drawn().compare_can_branch);
  JobRunner& jr = JobRunner::shared();
  jr.play(0);
  for (int i = 0; i < 200 && jr.status().mode != RunMode::Free; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (int i = 0; i < 400 && jr.status().steps_done < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  t.app->drain_events();
  t.frame();
  const LabDrawn& d = t.app->lab().drawn();
  EXPECT_TRUE(d.compare_can_branch) << "while it trains too";
  EXPECT_TRUE(d.compare_pauses_first) << "the button says it pauses the run";
  const int picked = d.compare_branch_step;
  EXPECT_GE(picked, 4);
  // A press (down, then up over the button), the run training on between the frames as in the
  // window (the button's words name a newer step each time): the run pauses, then the step the
  // button named as it was released is branched.
  ImGuiIO& io = ImGui::GetIO();
  const ImVec2 at{(d.compare_branch.min.x + d.compare_branch.max.x) * 0.5f, (d.compare_branch.min.y + d.compare_branch.max.y) * 0.5f};
  auto frame_later = [&] {
    const int done = jr.status().steps_done;
    for (int i = 0; i < 400 && jr.status().steps_done == done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    t.app->drain_events();
    t.frame();
  };
  io.MousePos = at;
  frame_later();
  io.MouseDown[0] = true;
  frame_later();
  io.MouseDown[0] = false;
  frame_later();
  const int named = t.app->lab().drawn().compare_branch_step;
  EXPECT_GT(named, picked) << "the run trained on between the frames";
  io.MousePos = {-1.0f, -1.0f};
  t.settle();
  EXPECT_EQ(jr.status().mode, RunMode::Paused) << "the press paused the run";
  ASSERT_TRUE(jr.status().error.empty()) << jr.status().error;
  ASSERT_NE(jr.branched(), nullptr);
  EXPECT_EQ(jr.branched()->step, named) << "the step the button named";
  t.app->drain_events();
  t.frame();
  t.frame("lab_compare_paused_by_branch");
  EXPECT_TRUE(t.app->lab().drawn().compared) << "still among the steps kept whole";
  EXPECT_FALSE(t.app->lab().drawn().compare_pauses_first) << "paused now";
}

// The timeline header's step buttons stay put whether the shown step is finished or under way
// ("step 2" or "step 3 (running)"): pressed again and again to walk back, they moved away.
TEST(LabTimeline, StepButtonsStayPutAsTheStepsWordsChange) {
  ViewsApp t;
  t.run({"--pp", "2", "--microbatches", "2", "--batch", "4", "--seq", "8"}, 2);
  t.app->lab().set_tab(LabTab::Timeline);
  t.frame();
  const float finished = t.app->lab().drawn().timeline_prev_x;
  t.step_ops(2);
  t.frame();
  ASSERT_FALSE(t.app->run_state().latest()->complete);
  const float under_way = t.app->lab().drawn().timeline_prev_x;
  ASSERT_GT(finished, 0.0f);
  EXPECT_NEAR(under_way, finished, 2.0f) << "\"step 2\" then \"step 3 (running)\"";
  // Nor when the steps' count gains a digit (step 9, then step 10).
  JobRunner::shared().step_whole();  // the step under way
  for (int i = 0; i < 6; ++i) JobRunner::shared().step_whole();
  t.settle();
  t.app->drain_events();
  t.frame();
  ASSERT_EQ(t.app->run_state().latest()->step, 8);
  const float nine = t.app->lab().drawn().timeline_prev_x;
  JobRunner::shared().step_whole();
  t.settle();
  t.app->drain_events();
  t.frame();
  ASSERT_EQ(t.app->run_state().latest()->step, 9);
  EXPECT_EQ(t.app->lab().drawn().timeline_prev_x, nine) << "\"step 9\" then \"step 10\"";
  EXPECT_NEAR(nine, finished, 2.0f);
}

// A trace read back shows its split in the configuration's fields, with a batch that split
// divides: the trace does not keep the batch, and the default one (4 texts over dp 2 x 4
// microbatches) opened the fields on a pink rule the viewer had not broken.
TEST(LabTrace, ARecordedRunsFieldsMakeARunThatCanBeApplied) {
  ViewsApp t;
  t.run({"--pp", "2", "--dp", "2", "--ep", "2", "--microbatches", "4", "--batch", "16", "--seq", "16"}, 2);
  std::filesystem::create_directories(ONEGPU_TEST_OUT);
  const std::string path = std::string(ONEGPU_TEST_OUT) + "/lab_trace_fields.json";
  ASSERT_EQ(export_trace(t.app->run_state(), path), 2);
  t.app->lab().set_args(lab_train_args({}));  // the fields as a fresh window has them: batch 4
  ASSERT_EQ(t.app->open_recorded(path), "");
  t.frame();
  t.frame("lab_trace_fields");
  const cli::TrainArgs& a = t.app->lab().args();
  EXPECT_EQ(a.dp, 2);
  EXPECT_EQ(a.pp, 2);
  EXPECT_EQ(a.microbatches, 4);
  EXPECT_EQ(a.batch % (a.dp * a.microbatches), 0) << "batch " << a.batch;
  EXPECT_EQ(t.app->lab().edit_error(), "") << "Apply can train the split shown";
  EXPECT_FALSE(t.app->lab().drawn().config_unapplied) << "the fields are the recorded run's, not changes";
}

// Leaving the Lab while its run trains pauses the run (it took a core from the chapters' own
// measured runs, unseen) and says so; opening the Lab again trains on at the same pace.
TEST(LabRun, WaitsWhileTheStoryIsShownAndTrainsOnWhenTheLabOpens) {
  ViewsApp t;
  t.run({"--batch", "4", "--seq", "8"}, 1);
  JobRunner& jr = JobRunner::shared();
  auto wait_for = [&](RunMode m) {
    for (int i = 0; i < 400 && jr.status().mode != m; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return jr.status().mode;
  };
  for (double pace : {0.0, 5.0}) {
    jr.play(pace);
    const RunMode going = pace > 0 ? RunMode::Paced : RunMode::Free;
    ASSERT_EQ(wait_for(going), going);
    t.frame();
    t.app->nav().set_lab(false);
    t.app->frame(1600, 900, 0.0f, 10.0);
    EXPECT_EQ(wait_for(RunMode::Paused), RunMode::Paused) << "pace " << pace;
    EXPECT_NE(t.app->toast_now(10.0).find("waits while the story is shown"), std::string::npos);
    const int steps = jr.status().steps_done;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(jr.status().steps_done, steps) << "no step trains behind the story";
    t.app->nav().set_lab(true);
    t.frame();
    EXPECT_EQ(wait_for(going), going) << "the Lab again: training on";
    EXPECT_DOUBLE_EQ(jr.status().ops_per_second, pace);
  }
  jr.pause();
  t.settle();
  // Paused when the story was shown: still paused when the Lab opens.
  t.app->nav().set_lab(false);
  t.app->frame(1600, 900, 0.0f, 20.0);
  t.app->nav().set_lab(true);
  t.frame();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(jr.status().mode, RunMode::Paused);
}

// The lanes' label column names every lane while they are tall enough to read, and each
// stage's band of lanes when they are not (64 GPUs in 1600x900): never a column of nothing.
TEST(LabTimeline, LanesAreNamedOneByOneOrByStage) {
  ViewsApp t;
  t.run({"--pp", "2", "--dp", "2", "--ep", "2", "--batch", "8", "--seq", "16"}, 1);
  t.frame();
  EXPECT_EQ(t.app->lab().drawn().lane_names, (std::vector<std::string>{"GPU 1", "GPU 2", "GPU 3", "GPU 4"}));
  t.run({"--pp", "4", "--dp", "16", "--batch", "64", "--seq", "8", "--microbatches", "4"}, 1);
  t.frame();
  const LabDrawn& d = t.app->lab().drawn();
  ASSERT_EQ(d.lanes, 64);
  ASSERT_FALSE(d.folded);
  EXPECT_LT(d.lane_y[0].second - d.lane_y[0].first, 13.0f) << "lanes too thin to name one by one";
  std::vector<std::string> want;
  for (int st = 0; st < 4; ++st)
    want.push_back("stage " + std::to_string(st + 1) + " GPU " + std::to_string(16 * st + 1) + "\u2013" + std::to_string(16 * st + 16));
  EXPECT_EQ(d.lane_names, want);
}

}  // namespace
}  // namespace onegpu::app
