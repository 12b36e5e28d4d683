// The train/predict/sample command lines: bad input is one clear line and exit status 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "app/cli/train_command.h"
#include "trainer/data/story_corpus.h"
#include "trainer/error.h"
#include "trainer/io/json.h"
#include "trainer/io/safetensors.h"

using onegpu::cli::parse_predict_args;
using onegpu::cli::parse_train_args;
using onegpu::trainer::Error;

namespace {
int call(int (*fn)(int, char**), std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return fn((int)argv.size(), argv.data());
}
}  // namespace

TEST(Cli, TrainArgsParse) {
  auto a = parse_train_args({"--model", "scale", "--steps", "20", "--batch", "8", "--microbatches", "4", "--seed",
                             "7", "--log", "x.jsonl", "--save", "c.st"});
  EXPECT_EQ(a.model, "scale");
  EXPECT_EQ(a.steps, 20);
  EXPECT_EQ(a.batch, 8);
  EXPECT_EQ(a.microbatches, 4);
  EXPECT_EQ(a.seed, 7u);
  EXPECT_EQ(a.log, "x.jsonl");
  EXPECT_EQ(a.save, "c.st");
}

TEST(Cli, BadTrainArgsAreErrors) {
  for (std::vector<std::string> bad : std::vector<std::vector<std::string>>{
           {"--steps", "0"}, {"--steps", "-3"}, {"--steps", "ten"}, {"--batch", "0"}, {"--model", "huge"},
           {"--batch", "4", "--microbatches", "3"}, {"--frobnicate", "1"}, {"--steps"}, {"stray"},
           {"--steps", "3", "--stop-at", "4"}}) {
    EXPECT_THROW(parse_train_args(bad), Error) << bad[0];
  }
  EXPECT_THROW(parse_predict_args({"--prompt", "x"}, false), Error);
  EXPECT_THROW(parse_predict_args({"--resume", "c"}, false), Error);
  EXPECT_THROW(parse_predict_args({"--resume", "c", "--prompt", ""}, false), Error);
  EXPECT_THROW(parse_predict_args({"--resume", "c", "--prompt", "x", "--top", "0"}, false), Error);
  EXPECT_THROW(parse_predict_args({"--resume", "c", "--prompt", "x", "--tokens", "5"}, false), Error);
  EXPECT_NO_THROW(parse_predict_args({"--resume", "c", "--prompt", "x", "--tokens", "5"}, true));
}

TEST(Cli, BadInputExitsWithStatusTwo) {
  using namespace onegpu::cli;
  testing::internal::CaptureStderr();
  EXPECT_EQ(call(&train_main, {"train", "--steps", "0"}), 2);
  EXPECT_EQ(call(&train_main, {"train", "--corpus", "/nonexistent/corpus.txt"}), 2);
  EXPECT_EQ(call(&predict_main, {"predict", "--resume", "/nonexistent.ckpt", "--prompt", "hi"}), 2);
  EXPECT_EQ(call(&sample_main, {"sample", "--resume", "/nonexistent.ckpt", "--prompt", "hi"}), 2);
  std::string err = testing::internal::GetCapturedStderr();
  // One line per failure, each naming the command.
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 4) << err;
  EXPECT_NE(err.find("onegpu train: error: --steps"), std::string::npos) << err;
  EXPECT_NE(err.find("/nonexistent/corpus.txt"), std::string::npos) << err;
}

TEST(Cli, TrainLogSaveThenPredictAndSampleFromTheCheckpoint) {
  using namespace onegpu::cli;
  using namespace onegpu::trainer;
  // A small corpus file: stories separated by blank lines.
  StoryCorpusOptions o;
  o.target_bytes = 100 << 10;
  Corpus c = generate_story_corpus(o);
  std::string corpus = ::testing::TempDir() + "cli_corpus.txt", log = ::testing::TempDir() + "cli_log.jsonl",
              ckpt = ::testing::TempDir() + "cli.safetensors";
  {
    std::ofstream out(corpus);
    for (const auto& d : c.train) out << d << "\n\n";
    for (const auto& d : c.heldout) out << d << "\n\n";
  }
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  EXPECT_EQ(call(&train_main, {"train", "--steps", "3", "--batch", "2", "--microbatches", "2", "--corpus", corpus,
                               "--log", log, "--save", ckpt, "--quiet"}),
            0);
  EXPECT_EQ(call(&predict_main, {"predict", "--resume", ckpt, "--prompt", "Once upon a", "--top", "4"}), 0);
  EXPECT_EQ(call(&sample_main, {"sample", "--resume", ckpt, "--prompt", "Once upon a", "--tokens", "5"}), 0);
  // Stopped at step 2 of 4 and resumed: the same weights as the uninterrupted run, bit for bit.
  std::string mid = ::testing::TempDir() + "cli_mid.safetensors", full = ::testing::TempDir() + "cli_full.safetensors";
  EXPECT_EQ(call(&train_main, {"train", "--steps", "4", "--batch", "2", "--corpus", corpus, "--save", full, "--quiet"}), 0);
  EXPECT_EQ(call(&train_main, {"train", "--steps", "4", "--stop-at", "2", "--batch", "2", "--corpus", corpus, "--save",
                               mid, "--quiet"}),
            0);
  EXPECT_EQ(safetensors::load(mid).meta("step"), "2");
  EXPECT_EQ(call(&train_main, {"train", "--steps", "4", "--corpus", corpus, "--resume", mid, "--save", mid, "--quiet"}), 0);
  {
    auto a = safetensors::load(full), b = safetensors::load(mid);
    EXPECT_EQ(a.meta("step"), "4");
    EXPECT_EQ(b.meta("step"), "4");
    for (const auto& [name, t] : a.tensors()) EXPECT_EQ(t.bytes, b.get(name).bytes) << name;
  }
  std::remove(mid.c_str());
  std::remove(full.c_str());
  // Resuming to step 5 with a contradicting --batch is refused.
  EXPECT_EQ(call(&train_main, {"train", "--steps", "5", "--batch", "4", "--corpus", corpus, "--resume", ckpt}), 2);
  std::string out = testing::internal::GetCapturedStdout();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("held-out loss"), std::string::npos) << out;
  EXPECT_NE(out.find("Once upon a"), std::string::npos) << out;
  EXPECT_NE(err.find("--batch 4 conflicts"), std::string::npos) << err;
  // predict: 4 lines of token and probability after the held-out line.
  auto pos = out.find("held-out loss");
  EXPECT_GE(std::count(out.begin() + pos, out.end(), '\n'), 6);

  std::ifstream in(log);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    auto v = json::parse(line);
    EXPECT_EQ(v.at("step").as_int(), ++lines);
    for (const char* k : {"loss", "lr", "grad_norm", "tokens_per_s"}) EXPECT_TRUE(v.at(k).is_number()) << k;
    for (const char* k : {"weights", "gradients", "optimizer", "activations", "communication"})
      EXPECT_TRUE(v.at("memory").at(k).is_integer()) << k;
  }
  EXPECT_EQ(lines, 3);
  std::remove(corpus.c_str());
  std::remove(log.c_str());
  std::remove(ckpt.c_str());
}
