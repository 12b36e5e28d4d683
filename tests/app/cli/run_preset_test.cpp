// app/cli/run_preset.h: the shipped presets load and make a valid split; bad files are one
// line naming the file and the key.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "app/cli/run_preset.h"
#include "app/cli/train_command.h"
#include "trainer/error.h"
#include "trainer/model/config.h"
#include "trainer/parallel/parallel_trainer.h"

using namespace onegpu;
namespace fs = std::filesystem;

namespace {

fs::path write(const std::string& name, const std::string& body) {
  const fs::path p = fs::path(::testing::TempDir()) / name;
  std::ofstream(p, std::ios::binary) << body;
  return p;
}

std::string preset_error_of(const std::string& body) {
  try {
    cli::read_run_preset(write("bad_preset.json", body));
  } catch (const trainer::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(RunPreset, EveryShippedPresetLoadsAndSplits) {
  const auto names = cli::preset_names();
  ASSERT_GE(names.size(), 5u) << cli::presets_dir();
  for (const auto& n : names) {
    const cli::RunPreset p = cli::load_run_preset(n);
    EXPECT_EQ(p.name, n);
    EXPECT_FALSE(p.about.empty()) << n;
    cli::TrainArgs a = cli::parse_train_args(p.flags);
    cli::fill_defaults(a);
    EXPECT_NO_THROW(trainer::parallel_run_config(trainer::model_preset(a.model), cli::parallel_options(a))) << n;
  }
  const cli::RunPreset s = cli::load_run_preset("stages");
  const cli::TrainArgs a = cli::parse_train_args(s.flags);
  EXPECT_EQ(a.model, "story8");
  EXPECT_EQ(a.pp, 2);
  EXPECT_EQ(a.dp, 2);
  EXPECT_EQ(a.ep, 2);
  EXPECT_EQ(a.microbatches, 4);
  EXPECT_EQ(a.batch, 8);
  EXPECT_EQ(a.seq, 16);
}

TEST(RunPreset, AFileByPathAndUnknownNames) {
  const fs::path f = write("mine.json", R"({"about": "mine", "pp": 2, "seq": 8})");
  const cli::RunPreset p = cli::load_run_preset(f.string());
  EXPECT_EQ(p.name, "mine");
  EXPECT_EQ(p.flags, (std::vector<std::string>{"--pp", "2", "--seq", "8"}));
  try {
    cli::load_run_preset("no-such-preset");
    FAIL();
  } catch (const trainer::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("unknown preset 'no-such-preset'; presets: "), std::string::npos) << m;
    EXPECT_NE(m.find("stages"), std::string::npos) << m;
  }
  EXPECT_THROW(cli::load_run_preset("/no/such/file.json"), trainer::Error);
  EXPECT_THROW(cli::load_run_preset(""), trainer::Error);
}

TEST(RunPreset, BadFilesAreOneLineNamingTheKey) {
  for (auto [body, want] : std::vector<std::pair<std::string, std::string>>{
           {"", "JSON"},
           {"{\"pp\": 2", "JSON"},
           {"[1, 2]", "must be one JSON object"},
           {"{\"pp\": 2, \"pp\": 4}", "duplicate"},
           {"{\"pipeline\": 2}", "unknown key 'pipeline' (a preset may hold about, model"},
           {"{\"pp\": \"2\"}", "'pp' must be a whole number"},
           {"{\"pp\": 2.5}", "'pp' must be a whole number"},
           {"{\"pp\": 1e30}", "'pp' must be a whole number"},
           {"{\"model\": 3}", "'model' must be text"},
           {"{\"about\": [\"x\"]}", "'about' must be text"},
           {"{\"model\": \"huge\"}", "huge"},
           {"{\"dp\": 0}", "--dp must be between 1 and"},
           {"{\"dp\": -2}", "--dp must be between 1 and"},
           {"{\"seed\": -1}", "--seed expects a whole number"},
           {"{\"steps\": 5}", "unknown key 'steps'"},
           {"{\"schedule\": \"zigzag\"}", "unknown schedule 'zigzag'"},
           {"{\"zero\": 2}", "--zero must be 0 or 1"},
           {"{\"dp\": 2, \"ep\": 3}", "ep must divide dp (ep=3, dp=2)"},
           {"{\"pp\": 3}", "layers must split over pp x vstages"},
           {"{\"link\": \"\"}", "--link needs a value, got an empty one"},
           {"{\"a\": {\"b\": {\"c\": {\"d\": {\"e\": {\"f\": {\"g\": {\"h\": {\"i\": 1}}}}}}}}}", "JSON"},
       }) {
    const std::string m = preset_error_of(body);
    EXPECT_EQ(m.rfind("preset ", 0), 0u) << body << " -> " << m;
    EXPECT_NE(m.find("bad_preset.json: "), std::string::npos) << body << " -> " << m;
    EXPECT_NE(m.find(want), std::string::npos) << body << " -> " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  // Not a regular file, or too large for a preset: refused before reading.
  EXPECT_NE(preset_error_of(std::string(70 << 10, ' ')).find("larger than 64 KB"), std::string::npos);
  try {
    cli::read_run_preset(::testing::TempDir());
    FAIL();
  } catch (const trainer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
  }
}

TEST(RunPreset, TheAssetsFolderCanBeMoved) {
  const fs::path dir = fs::path(::testing::TempDir()) / "onegpu_assets_elsewhere";
  fs::create_directories(dir / "runs");
  std::ofstream(dir / "runs" / "tiny.json") << R"({"about": "tiny", "seq": 8})";
  ::setenv("ONEGPU_ASSETS", dir.c_str(), 1);
  EXPECT_EQ(cli::preset_names(), (std::vector<std::string>{"tiny"}));
  EXPECT_EQ(cli::load_run_preset("tiny").flags, (std::vector<std::string>{"--seq", "8"}));
  ::unsetenv("ONEGPU_ASSETS");
  fs::remove_all(dir);
}
