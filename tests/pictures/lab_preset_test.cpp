// The Lab's preset row (app/lab/lab_panel.cpp): a preset from assets/runs fills the configuration
// without running it; a bad preset file gives the same one line `onegpu lab --preset` prints, in
// pink under the row, and neither the configuration nor the running run changes.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include <imgui.h>

#include "app/app.h"
#include "app/assets.h"
#include "app/cli/run_preset.h"
#include "app/live/job_runner.h"
#include "app/png_file.h"
#include "pixels.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"
#include "trainer/error.h"

namespace onegpu::app {
namespace {

const std::string kBadPreset = std::string(ONEGPU_SOURCE_DIR) + "/tests/app/live/fixtures/bad_preset.json";

// What `onegpu lab --preset FILE` says of a file (the loader both use).
std::string cli_refusal(const std::string& file) {
  try {
    cli::load_run_preset(file);
  } catch (const trainer::Error& e) {
    return e.what();
  }
  return "";
}

struct PresetLab {
  render::HeadlessContext ctx;
  ImGuiContext* imgui = ImGui::CreateContext();
  std::unique_ptr<App> app;
  PresetLab() {
    Options o;
    app = std::make_unique<App>(find_assets(o), true, true, 1.0f, 0);
    app->nav().set_lab(true);
  }
  ~PresetLab() {
    app.reset();
    ImGui::DestroyContext(imgui);
  }
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

int pink_in_panel(const std::vector<std::uint8_t>& px) {
  Image im{1600, 900, &px};
  int n = 0;
  for (int y = 0; y < 900; ++y)
    for (int x = 0; x < 360; ++x) n += fills::pink(im.at(x, y));
  return n;
}

TEST(LabPresets, TheListHoldsTheShippedPresets) {
  const auto names = cli::preset_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "stages"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "one-of-512"), names.end());
}

// A shipped preset fills the fields (as `onegpu lab --preset stages` would start them); a bad
// file then leaves them as they were and writes its one line in pink in the side panel. (The
// Lab's first frame starts whatever the fields hold; the next test has a run going.)
TEST(LabPresets, APresetFillsTheFieldsAndABadOneIsAPinkLine) {
  PresetLab t;
  Lab& lab = t.app->lab();
  ASSERT_TRUE(lab.load_preset("stages"));
  const cli::TrainArgs stages = lab_train_args(cli::load_run_preset("stages").flags);
  EXPECT_EQ(lab.args().pp, stages.pp);
  EXPECT_EQ(lab.args().dp, stages.dp);
  EXPECT_EQ(lab.args().microbatches, stages.microbatches);
  EXPECT_GT(stages.pp, 1);
  EXPECT_TRUE(lab.preset_error().empty());
  const int pink_before = pink_in_panel(t.shot("lab_preset_loaded"));

  EXPECT_FALSE(lab.load_preset(kBadPreset));
  EXPECT_EQ(lab.preset_error(), cli_refusal(kBadPreset));
  EXPECT_NE(lab.preset_error().find("unknown key 'pipeline'"), std::string::npos) << lab.preset_error();
  EXPECT_EQ(lab.args().pp, stages.pp) << "the configuration stays as it was";
  EXPECT_EQ(lab.args().dp, stages.dp);
  const int pink_after = pink_in_panel(t.shot("lab_preset_bad"));
  EXPECT_GT(pink_after - pink_before, 40) << "the reason, written in pink under the preset row";
  // A good one clears the line.
  ASSERT_TRUE(lab.load_preset("one-gpu"));
  EXPECT_TRUE(lab.preset_error().empty());
}

// A refused preset's pink line stays in view when a run starts after it (the configuration
// folds away when a run starts; it folded the line away unread, which made the test above fail
// when the first frame's run finished building between its two frames).
TEST(LabPresets, ARefusedPresetsLineStaysWhenARunStarts) {
  PresetLab t;
  JobRunner& jr = JobRunner::shared();
  const int pink_before = pink_in_panel(t.shot("lab_preset_fold_before"));
  EXPECT_FALSE(t.app->lab().load_preset(kBadPreset));
  const int pink_refused = pink_in_panel(t.shot("lab_preset_fold_refused"));
  EXPECT_GT(pink_refused - pink_before, 40);
  const auto was = jr.live();
  jr.configure(lab_train_args({"--dp", "2", "--ep", "2", "--seq", "16"}));
  jr.wait_idle([&] { t.app->drain_events(); });
  ASSERT_NE(jr.live(), nullptr);
  ASSERT_NE(jr.live(), was) << "a new run started";
  EXPECT_GT(pink_in_panel(t.shot("lab_preset_fold_after")) - pink_before, 40) << "the pink line, still in view";
}

// With a run going, a preset changes the panel's fields only, and a bad one not even those.
TEST(LabPresets, ABadPresetLeavesTheRunningRunAlone) {
  PresetLab t;
  JobRunner& jr = JobRunner::shared();
  const cli::TrainArgs good = lab_train_args({"--dp", "2", "--ep", "2", "--seq", "16"});
  jr.configure(good);
  jr.wait_idle([&] { t.app->drain_events(); });
  const auto before = jr.live();
  ASSERT_NE(before, nullptr);
  t.app->lab().set_args(good);
  t.shot("lab_preset_running_before");  // the first frame: the run is going, nothing is started
  ASSERT_TRUE(t.app->lab().load_preset("stages"));
  jr.wait_idle([&] { t.app->drain_events(); });
  EXPECT_EQ(jr.live(), before) << "a preset fills the fields; Apply runs it";
  t.app->lab().set_args(good);
  EXPECT_FALSE(t.app->lab().load_preset(kBadPreset));
  EXPECT_FALSE(t.app->lab().load_preset("no-such-preset"));
  EXPECT_NE(t.app->lab().preset_error().find("unknown preset 'no-such-preset'; presets: "), std::string::npos);
  EXPECT_EQ(t.app->lab().args().dp, 2);
  EXPECT_EQ(t.app->lab().args().ep, 2);
  t.shot("lab_preset_running");
  jr.wait_idle([&] { t.app->drain_events(); });
  EXPECT_EQ(jr.live(), before) << "nothing was applied";
}

}  // namespace
}  // namespace onegpu::app
