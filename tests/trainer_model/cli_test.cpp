// The train/predict/sample command lines: bad input is one clear line and exit status 2.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/cli/train_command.h"
#include "trainer/error.h"

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
           {"--batch", "4", "--microbatches", "3"}, {"--frobnicate", "1"}, {"--steps"}, {"stray"}}) {
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
