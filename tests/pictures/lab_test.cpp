// The Lab rendered headless as `onegpu --headless --lab ...` renders it: one rank stepped by
// hand, a pp2 x dp2 x ep2 run after two steps, and the 512-rank step. Each picture has as many
// lanes (or folded stages) as its run has, forward and backward drawn in every lane, the bubble
// read-out beside the schedule's textbook figure, and no word of the ranks view over another.
#include <gtest/gtest.h>

#include "trainer/memory/footprint.h"

#include <cstdlib>
#include <filesystem>
#include <memory>

#include <imgui.h>

#include "app/app.h"
#include "app/assets.h"
#include "app/headless.h"
#include "app/live/job_runner.h"
#include "render/headless_context.h"
#include "pixels.h"
#include "render/framebuffer.h"
#include "app/png_file.h"

namespace onegpu::app {
namespace {

HeadlessImage lab_shot(const char* name, std::vector<std::string> flags, int steps, int ops, int w = 1600, int h = 900,
                       float ui_scale = 1.0f) {
  Options o;
  o.ui_scale = ui_scale;
  o.headless = true;
  o.lab = true;
  o.lab_args = std::move(flags);
  o.lab_steps = steps;
  o.lab_ops = ops;
  o.width = w;
  o.height = h;
  HeadlessImage img = render_headless_lab(o);
  std::filesystem::create_directories(ONEGPU_TEST_OUT);
  save_png(std::string(ONEGPU_TEST_OUT) + "/lab_" + name + ".png", img.width, img.height, img.rgba);
  return img;
}

// Pixels of a lane's band (window pixels, rows top to bottom) that match.
int count_in_lane(const HeadlessImage& img, int lane, bool (*keep)(Rgb)) {
  Image im{img.width, img.height, &img.rgba};
  const auto [ya, yb] = img.lab.lane_y[(std::size_t)lane];
  int n = 0;
  for (int y = (int)ya + 1; y < (int)yb - 1; ++y)
    for (int x = (int)img.lab.timeline_x0; x < (int)img.lab.timeline_x1; ++x) n += keep(im.at(x, y));
  return n;
}

bool teal(Rgb c) { return c.g > 90 && c.b > 80 && c.r < c.g - 20; }

void words_apart(const LabDrawn& d) {
  ASSERT_FALSE(d.labels.empty());
  for (std::size_t i = 0; i < d.labels.size(); ++i) {
    const render::Rect& a = d.labels[i];
    EXPECT_GE(a.min.x, -0.5f) << "word " << i << " leaves the view on the left";
    EXPECT_LE(a.max.x, d.ranks_viewport.x + 0.5f) << "word " << i << " leaves the view on the right";
    EXPECT_GE(a.min.y, -0.5f);
    EXPECT_LE(a.max.y, d.ranks_viewport.y + 0.5f);
    for (std::size_t j = i + 1; j < d.labels.size(); ++j) {
      const render::Rect& b = d.labels[j];
      const bool apart = a.max.x <= b.min.x || b.max.x <= a.min.x || a.max.y <= b.min.y || b.max.y <= a.min.y;
      EXPECT_TRUE(apart) << "words " << i << " and " << j << " overlap";
    }
    // A word is inside a chip (its name, its experts) or clear of every chip: never across a
    // chip's border.
    for (std::size_t k = 0; k < d.chips.size(); ++k) {
      const render::Rect& c = d.chips[k];
      const bool apart = a.max.x <= c.min.x || c.max.x <= a.min.x || a.max.y <= c.min.y || c.max.y <= a.min.y;
      const bool inside = c.min.x <= a.min.x && a.max.x <= c.max.x && c.min.y <= a.min.y && a.max.y <= c.max.y;
      EXPECT_TRUE(apart || inside) << "word " << i << " crosses chip " << k << "'s border";
    }
  }
}

// The ranks view's words at both window sizes the pictures use and at three text sizes, for the
// three runs the proof names: apart from each other, inside the view, never across a chip.
TEST(LabPictures, RanksViewWordsFitEverySizeAndTextScale) {
  const std::vector<std::pair<const char*, std::vector<std::string>>> runs = {
      {"pp2_dp2_ep2", {"--pp", "2", "--dp", "2", "--ep", "2", "--microbatches", "2", "--batch", "8", "--seq", "16"}},
      {"64_ranks", {"--model", "scale", "--pp", "8", "--dp", "8", "--ep", "8", "--microbatches", "8", "--batch", "64", "--seq", "8"}},
      {"512_ranks", {"--model", "scale", "--dp", "64", "--ep", "8", "--pp", "8", "--schedule", "gpipe", "--microbatches", "1",
                     "--batch", "64", "--seq", "8"}}};
  for (const auto& [name, flags] : runs)
    for (const auto& [w, h] : {std::pair{1600, 900}, std::pair{1024, 600}})
      for (float scale : {1.0f, 1.5f, 2.0f}) {
        if (std::string(name) != "pp2_dp2_ep2" && scale == 1.5f) continue;  // the big runs: x1 and x2
        const std::string shot = std::string(name) + "_" + std::to_string(w) + "_x" + std::to_string((int)(scale * 10));
        SCOPED_TRACE(shot);
        const HeadlessImage img = lab_shot(shot.c_str(), flags, 1, 0, w, h, scale);
        words_apart(img.lab);
        if (std::string(name) == "pp2_dp2_ep2") { EXPECT_EQ(img.lab.chips.size(), 4u); }
      }
}

TEST(LabPictures, OneRankStepByHand) {
  // Seven ops by hand: the four layers' forwards (the last with the head and loss) and three
  // layers' backwards.
  const HeadlessImage img = lab_shot("one_rank_ops7", {"--seq", "16"}, 0, 7);
  ASSERT_EQ(img.lab.lanes, 1);
  EXPECT_FALSE(img.lab.folded);
  EXPECT_GT(count_in_lane(img, 0, fills::amber), 1000) << "the forwards";
  EXPECT_GT(count_in_lane(img, 0, fills::pink), 1000) << "the backwards so far";
  EXPECT_FALSE(img.lab.bubble_shown) << "no step is finished yet";
  words_apart(img.lab);
  // One op in: the read-outs' notes ("not reached yet ...") stay in their own columns.
  words_apart(lab_shot("one_rank_ops1", {"--seq", "16"}, 0, 1).lab);
}

// A small window with the presenter's text size up: the read-outs beside the chip still fit
// their columns, and no word lands on another.
TEST(LabPictures, OneRankReadOutsFitASmallWindowWithLargeText) {
  for (float scale : {1.0f, 1.6f, 2.0f}) {
    const HeadlessImage img = lab_shot(scale == 1.0f ? "one_rank_small" : scale < 2 ? "one_rank_small_x16" : "one_rank_small_x2",
                                       {"--seq", "16"}, 2, 0, 1024, 600, scale);
    SCOPED_TRACE(scale);
    ASSERT_EQ(img.lab.lanes, 1);
    words_apart(img.lab);
  }
}

// At a projector's text size the tab bar cannot show every tab: the one asked for (--tab, the
// rightmost here) is scrolled into view in the picture, not left selected off to the right.
TEST(LabPictures, ATabAskedForIsInViewWhereTheTabsDoNotAllFit) {
  Options o;
  o.ui_scale = 2.0f;
  o.headless = true;
  o.lab = true;
  o.lab_args = {"--seq", "16"};
  o.lab_steps = 1;
  o.width = 1600;
  o.height = 900;
  o.tab = "compare";
  const HeadlessImage img = render_headless_lab(o);
  save_png(std::string(ONEGPU_TEST_OUT) + "/lab_tab_compare_x2.png", img.width, img.height, img.rgba);
  ASSERT_EQ(img.lab.tab, "compare");
  EXPECT_FALSE(img.lab.tabs_settling);
  ASSERT_LT(img.lab.tab_bar_x0, img.lab.tab_bar_x1);
  EXPECT_GE(img.lab.tab_x0, img.lab.tab_bar_x0 - 0.5f);
  EXPECT_LE(img.lab.tab_x1, img.lab.tab_bar_x1 + 0.5f) << "the Compare tab is past the bar's end";
}

TEST(LabPictures, Pp2Dp2Ep2AfterTwoSteps) {
  const HeadlessImage img =
      lab_shot("pp2_dp2_ep2", {"--pp", "2", "--dp", "2", "--ep", "2", "--microbatches", "2", "--batch", "8", "--seq", "16"}, 2, 0);
  ASSERT_EQ(img.lab.lanes, 4) << "one lane per GPU";
  EXPECT_FALSE(img.lab.folded);
  for (int l = 0; l < 4; ++l) {
    EXPECT_GT(count_in_lane(img, l, fills::amber), 100) << "lane " << l;
    EXPECT_GT(count_in_lane(img, l, fills::pink), 100) << "lane " << l;
  }
  ASSERT_TRUE(img.lab.bubble_shown);
  EXPECT_DOUBLE_EQ(img.lab.textbook, 1.0 / 3.0);  // (p-1)/(m+p-1), p = m = 2
  EXPECT_GT(img.lab.bubble, 0.0);
  EXPECT_LT(img.lab.bubble, 1.0);
  words_apart(img.lab);
}

TEST(LabPictures, FiveHundredTwelveRanksFoldByStage) {
  const HeadlessImage img = lab_shot("512_ranks",
                                     {"--model", "scale", "--dp", "64", "--ep", "8", "--pp", "8", "--schedule", "gpipe",
                                      "--microbatches", "1", "--batch", "64", "--seq", "8"},
                                     1, 0);
  ASSERT_EQ(img.lab.lanes, 8) << "one folded lane per stage";
  EXPECT_TRUE(img.lab.folded);
  for (int l = 0; l < 8; ++l)
    EXPECT_GT(count_in_lane(img, l, fills::amber) + count_in_lane(img, l, fills::pink) + count_in_lane(img, l, teal), 20)
        << "stage " << l;
  ASSERT_TRUE(img.lab.bubble_shown);
  EXPECT_DOUBLE_EQ(img.lab.textbook, 7.0 / 8.0);
  words_apart(img.lab);
}

}  // namespace
}  // namespace onegpu::app

namespace onegpu::app {
namespace {

// The Lab in an offscreen App of our own, for tests that act on it between frames.
struct LabApp {
  render::HeadlessContext ctx;
  ImGuiContext* imgui = ImGui::CreateContext();
  std::unique_ptr<App> app;
  LabApp() {
    Options o;
    app = std::make_unique<App>(find_assets(o), true, true, 1.0f, 0);
    app->nav().set_lab(true);
  }
  ~LabApp() {
    app.reset();
    ImGui::DestroyContext(imgui);
  }
  void settle() { JobRunner::shared().wait_idle([&] { app->drain_events(); }); }
  // Two frames (the first settles ImGui's layout), kept as a PNG under the test output.
  std::vector<std::uint8_t> shot(const char* name) {
    render::Framebuffer fb(1600, 900);
    fb.bind();
    app->set_frame_ms(-1.0f);
    app->frame(1600, 900, 0.0f, 0.0);
    app->frame(1600, 900, 0.0f, 0.1);
    std::vector<std::uint8_t> px = fb.read_rgba();
    std::filesystem::create_directories(ONEGPU_TEST_OUT);
    save_png(std::string(ONEGPU_TEST_OUT) + "/" + name + ".png", 1600, 900, px);
    return px;
  }
};

int count(const std::vector<std::uint8_t>& px, int x0, int y0, int x1, int y1, bool (*keep)(Rgb)) {
  Image im{1600, 900, &px};
  int n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) n += keep(im.at(x, y));
  return n;
}

// A split that cannot be made, typed into the panel: the rule appears inline (in the
// backward colour, under the fields), Apply is refused, and the running run is untouched.
TEST(LabPictures, BadConfigurationInThePanelIsAnInlineError) {
  LabApp t;
  JobRunner& jr = JobRunner::shared();
  const cli::TrainArgs good = lab_train_args({"--dp", "2", "--ep", "2", "--seq", "16"});
  jr.configure(good);
  t.settle();
  const auto before = jr.live();
  ASSERT_NE(before, nullptr);
  cli::TrainArgs bad = good;
  bad.ep = 3;  // ep must divide dp
  t.app->lab().set_args(bad);
  EXPECT_EQ(t.app->lab().edit_error(), JobRunner::check(bad));
  EXPECT_NE(t.app->lab().edit_error().find("ep must divide dp"), std::string::npos);
  const auto px = t.shot("lab_bad_config");
  EXPECT_GT(count(px, 0, 0, 360, 900, fills::pink), 40) << "the rule, written in the side panel";
  t.settle();
  EXPECT_EQ(jr.live(), before) << "nothing was applied";
}

// ZeRO-1 from the Lab: the run's spans hold the reduce-scatter (first step) and the
// all-gather (second), and each rank's optimizer bytes are its piece, as the formula says.
TEST(LabPictures, ZeroOneRunShowsItsCollectivesAndHalvesTheOptimizer) {
  LabApp t;
  JobRunner& jr = JobRunner::shared();
  const cli::TrainArgs a = lab_train_args({"--dp", "2", "--zero", "1", "--seq", "16", "--workers", "1"});
  ASSERT_EQ(a.zero, 1);
  jr.configure(a);
  t.settle();
  for (int i = 0; i < 2; ++i) {
    jr.step_whole();
    t.settle();
  }
  t.app->drain_events();
  int rs = 0, ag = 0, ar = 0;
  for (const RunStep& s : t.app->run_state().steps())
    for (const OpSpan& o : s.ops) {
      rs += o.kind == trainer::EventKind::ReduceScatter;
      ag += o.kind == trainer::EventKind::AllGather;
      ar += o.kind == trainer::EventKind::AllReduce;
    }
  EXPECT_GT(rs, 0);
  EXPECT_GT(ag, 0);
  EXPECT_EQ(ar, 0);
  trainer::ModelConfig m = trainer::model_preset("story");
  m.vocab = (int)jr.live()->tokenizer->vocab_size();
  trainer::FootprintSplit fs;
  fs.dp = 2;
  fs.microbatches = a.microbatches;
  fs.zero = 1;
  const RunStep* last = t.app->run_state().last_complete();
  ASSERT_NE(last, nullptr);
  EXPECT_GT(last->bytes_by_kind[(std::size_t)trainer::EventKind::AllGather], 0);
  EXPECT_GT(last->bytes_by_kind[(std::size_t)trainer::EventKind::ReduceScatter], 0);
  const auto& mem = last->memory;
  ASSERT_EQ(mem.size(), 2u);
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(mem[(std::size_t)r].current[(std::size_t)trainer::MemCategory::Optimizer],
              trainer::rank_footprint(m, fs, r)[trainer::MemCategory::Optimizer]);
}

// Rings far too small for a step: what was lost is counted per lane in the run state and
// said in the status bar, in the backward colour.
TEST(LabPictures, LostEventsAreCountedAndShown) {
  LabApp t;
  JobRunner& jr = JobRunner::shared();
  jr.configure(lab_train_args({"--pp", "2", "--microbatches", "4", "--seq", "16", "--workers", "1"}), 16);
  t.settle();
  jr.step_whole();
  jr.wait_idle();  // no draining meanwhile: the engine's lane overflows
  t.app->drain_events();
  ASSERT_GT(t.app->run_state().dropped(), 0u);
  EXPECT_GT(t.app->run_state().dropped_per_lane()[0], 0u) << "the one worker's lane";
  const auto px = t.shot("lab_lost_events");
  EXPECT_GT(count(px, 0, 900 - 28, 800, 900, fills::pink), 30) << "the status bar says events were lost";
  EXPECT_FALSE(t.app->lab().drawn().bubble_shown && t.app->lab().drawn().bubble > 0)
      << "no bubble figure from a step with missing spans";
}

// An engineer on a small window with the text up: the timeline's lanes come before the replay
// row, each tall enough for its GPU's name (1024x640 at text 1.5 had kept the replay row and
// left four lanes a strip 30 px tall, nameless); at 1600x900 the replay row is there too.
TEST(LabPictures, TimelineLanesKeepTheirNamesInASmallWindowWithLargeText) {
  const std::vector<std::string> run = {"--pp", "2", "--dp", "2", "--ep", "2", "--microbatches", "2", "--batch", "8", "--seq", "16"};
  const std::vector<std::string> gpus = {"GPU 1", "GPU 2", "GPU 3", "GPU 4"};
  for (float scale : {1.5f, 2.0f}) {
    SCOPED_TRACE(scale);
    const HeadlessImage img = lab_shot(scale < 2 ? "timeline_small_x15" : "timeline_small_x2", run, 1, 0, 1024, 640, scale);
    ASSERT_EQ(img.lab.lanes, 4);
    EXPECT_EQ(img.lab.lane_names, gpus);
    for (const auto& [top, bottom] : img.lab.lane_y) EXPECT_GE(bottom - top, 13.0f * scale * 0.9f);
  }
  EXPECT_EQ(lab_shot("timeline_big", run, 1, 0).lab.lane_names, gpus);
}

// The window's App in the Lab on a small pp=2 dp=2 run, drawn frame by frame offscreen at
// w x h and text scale `scale`, as the window draws it.
struct LabFrames {
  render::HeadlessContext ctx;
  ImGuiContext* imgui = ImGui::CreateContext();
  std::unique_ptr<App> app;
  int w, h;
  std::unique_ptr<render::Framebuffer> fb;

  LabFrames(float scale, int width, int height) : w(width), h(height) {
    app = std::make_unique<App>(find_assets(Options{}), true, true, scale, 0);
    app->nav().set_lab(true);
    JobRunner& jr = JobRunner::shared();
    jr.configure(lab_train_args({"--pp", "2", "--dp", "2", "--microbatches", "2", "--batch", "8", "--seq", "16"}));
    settle();
    fb = std::make_unique<render::Framebuffer>(w, h);
    fb->bind();
    app->set_frame_ms(-1.0f);
  }
  ~LabFrames() {
    app.reset();
    ImGui::DestroyContext(imgui);
  }
  void settle() { JobRunner::shared().wait_idle([&] { app->drain_events(); }); }
  void frames(int n) {
    for (int i = 0; i < n; ++i) app->frame(w, h, 0.0f, 0.1 * i);
  }
  const LabDrawn& drawn() const { return app->lab().drawn(); }
};

// A learner on a small window with the text up for a projector: the side panel's BY HAND
// section (what runs next, what just ran) lies below the panel's fold, under the buttons that
// step. A press that moves the run on brings it into view; the first look at a run does not
// scroll the panel (its title and configuration stay on top).
TEST(LabPictures, ByHandSectionComesIntoViewWhenAPressMovesTheRun) {
  LabFrames t(2.0f, 1024, 640);
  t.frames(2);
  EXPECT_FALSE(t.drawn().by_hand_in_view) << "at text 2 in 1024x640 the section starts below the fold";
  t.frames(2);
  EXPECT_FALSE(t.drawn().by_hand_in_view) << "nothing pressed: the panel stays where it was";
  for (int i = 0; i < 3; ++i) JobRunner::shared().step_op();
  t.settle();
  t.frames(2);  // the press seen, then the panel scrolled
  EXPECT_TRUE(t.drawn().by_hand_in_view);
}

// The Files section lies below the panel's fold in a small window: a press on Open (or PNG,
// trace, JSONL) whose answer is a line under the buttons scrolls that line into view once, or
// the press seemed to do nothing (a trace that could not be read said so out of sight).
TEST(LabPictures, AFilesMessageComesIntoView) {
  LabFrames t(1.0f, 1024, 600);
  t.frames(2);
  t.app->lab().set_message("cannot read trace /nowhere/run.json", true);
  t.frames(1);
  EXPECT_FALSE(t.drawn().message_in_view) << "in 1024x600 the Files section starts below the fold";
  t.frames(2);  // the message seen, then the panel scrolled
  EXPECT_TRUE(t.drawn().message_in_view);
}

}  // namespace
}  // namespace onegpu::app
