// The train/predict/sample command lines: bad input is one clear line and exit status 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "app/cli/train_command.h"
#include "trainer/data/story_corpus.h"
#include "trainer/io/chrome_trace.h"
#include "trainer/error.h"
#include "trainer/io/json.h"
#include "trainer/io/safetensors.h"
#include "trainer/model/config.h"
#include "tests/support/temp_dir.h"
#include <map>

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
           {"--steps", "3", "--stop-at", "4"}, {"--trace-steps", "3"}, {"--trace", "t.json", "--trace-steps", "0"}}) {
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
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(call(&train_main, {"train", "--steps", "0"}), 2);
  EXPECT_EQ(call(&train_main, {"train", "--corpus", "/nonexistent/corpus.txt"}), 2);
  EXPECT_EQ(call(&predict_main, {"predict", "--resume", "/nonexistent.ckpt", "--prompt", "hi"}), 2);
  EXPECT_EQ(call(&sample_main, {"sample", "--resume", "/nonexistent.ckpt", "--prompt", "hi"}), 2);
  std::string err = ::testing::internal::GetCapturedStderr();
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
  const onegpu::trainer::testing::TempDir dir;
  std::string corpus = dir.file("cli_corpus.txt"), log = dir.file("cli_log.jsonl"), ckpt = dir.file("cli.safetensors");
  {
    std::ofstream out(corpus);
    for (const auto& d : c.train) out << d << "\n\n";
    for (const auto& d : c.heldout) out << d << "\n\n";
  }
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(call(&train_main, {"train", "--steps", "3", "--batch", "2", "--microbatches", "2", "--corpus", corpus,
                               "--log", log, "--save", ckpt, "--quiet"}),
            0);
  EXPECT_EQ(call(&predict_main, {"predict", "--resume", ckpt, "--prompt", "Once upon a", "--top", "4"}), 0);
  EXPECT_EQ(call(&sample_main, {"sample", "--resume", ckpt, "--prompt", "Once upon a", "--tokens", "5"}), 0);
  // Stopped at step 2 of 4 and resumed: the same weights as the uninterrupted run, bit for bit.
  std::string mid = dir.file("cli_mid.safetensors"), full = dir.file("cli_full.safetensors");
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
  std::string out = ::testing::internal::GetCapturedStdout();
  std::string err = ::testing::internal::GetCapturedStderr();
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

namespace {
// parse_train_args + fill_defaults, then the plan rules: what `onegpu train` would run.
std::pair<onegpu::cli::TrainArgs, std::string> filled(std::vector<std::string> args) {
  auto a = parse_train_args(args);
  std::string note = onegpu::cli::fill_defaults(a);
  return {a, note};
}
void expect_valid(const onegpu::cli::TrainArgs& a) {
  using namespace onegpu::trainer;
  EXPECT_NO_THROW(parallel_run_config(model_preset(a.model), onegpu::cli::parallel_options(a)));
}
std::string split_error_of(std::vector<std::string> args) {
  try {
    filled(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(Cli, PipelinePicksMicrobatchesWhenNotGiven) {
  auto [a, note] = filled({"--pp", "2"});
  EXPECT_EQ(a.microbatches, 2);
  EXPECT_NE(note.find("--microbatches 2 (1F1B needs at least one microbatch per stage)"), std::string::npos) << note;
  EXPECT_EQ(note.find('\n'), std::string::npos);
  expect_valid(a);
  for (auto [sched, why] : std::vector<std::pair<std::string, std::string>>{
           {"zb1", "ZB-H1 needs"}, {"gpipe", "GPipe needs"}}) {
    auto [b, n] = filled({"--pp", "4", "--schedule", sched});
    EXPECT_EQ(b.microbatches, 4) << sched;
    EXPECT_NE(n.find(why), std::string::npos) << n;
    expect_valid(b);
  }
  // Given by the user: kept, and the plan rules refuse it as before.
  auto [c, none] = filled({"--pp", "2", "--microbatches", "1"});
  EXPECT_EQ(c.microbatches, 1);
  EXPECT_EQ(none, "");
  EXPECT_THROW(parallel_run_config(onegpu::trainer::model_preset("story"), onegpu::cli::parallel_options(c)), Error);
  // Enough already, or no pipeline, or one rank: nothing to pick.
  EXPECT_EQ(filled({"--pp", "2", "--microbatches", "4"}).second, "");
  EXPECT_EQ(filled({"--dp", "2"}).second, "");
  EXPECT_EQ(filled({}).second, "");
  EXPECT_EQ(filled({}).first.microbatches, 1);
  // pp=4 over dp=2 needs 4 microbatches of the 2 texts per dp rank: one line naming the fix.
  const std::string e = split_error_of({"--pp", "4", "--dp", "2"});
  EXPECT_NE(e.find("--pp 4 needs --microbatches 4"), std::string::npos) << e;
  EXPECT_NE(e.find("say --batch 8"), std::string::npos) << e;
  // A more basic rule broken as well is the one reported: 4 layers do not split over pp=3.
  EXPECT_NE(split_error_of({"--pp", "3"}).find("layers must split over pp x vstages"), std::string::npos);
}

TEST(Cli, InterleavedPicksTwoChunksOrSaysWhy) {
  auto [a, note] = filled({"--pp", "2", "--schedule", "interleaved"});
  EXPECT_EQ(a.vstages, 2);
  EXPECT_EQ(a.microbatches, 2);
  EXPECT_NE(note.find("--vstages 2"), std::string::npos) << note;
  EXPECT_NE(note.find("--microbatches 2 (interleaved"), std::string::npos) << note;
  expect_valid(a);
  // story has 4 layers: pp=4 x 2 chunks does not fit.
  const std::string e = split_error_of({"--pp", "4", "--schedule", "interleaved"});
  EXPECT_NE(e.find("4 layers of model story do not split over pp x 2 = 8"), std::string::npos) << e;
  EXPECT_NE(split_error_of({"--schedule", "interleaved", "--vstages", "1"}).find("needs --vstages 2 or more"),
            std::string::npos);
  // --vstages alone implies the only schedule that has chunks.
  auto [b, n] = filled({"--pp", "2", "--vstages", "2"});
  EXPECT_EQ(b.schedule, "interleaved");
  EXPECT_NE(n.find("--schedule interleaved"), std::string::npos) << n;
  expect_valid(b);
}

TEST(Cli, SplitRunPrintsProgressHeldoutAndAMultiStepTrace) {
  using namespace onegpu::cli;
  using namespace onegpu::trainer;
  const onegpu::trainer::testing::TempDir dir;
  const std::string one = dir.file("cli_trace1.json"), three = dir.file("cli_trace3.json"),
                    last2 = dir.file("cli_trace_last2.json");
  const std::vector<std::string> split{"train", "--pp", "2", "--seq", "8", "--batch", "2"};
  auto run = [&](std::vector<std::string> extra) {
    auto args = split;
    args.insert(args.end(), extra.begin(), extra.end());
    return call(&train_main, args);
  };
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run({"--steps", "1", "--trace", one}), 0);
  EXPECT_EQ(run({"--steps", "3", "--trace", three}), 0);
  EXPECT_EQ(run({"--steps", "3", "--trace", last2, "--trace-steps", "2", "--quiet"}), 0);
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  // The picked microbatches are said once per run; progress has the one-rank shape plus bubble.
  EXPECT_NE(err.find("onegpu train: using --microbatches 2"), std::string::npos) << err;
  EXPECT_NE(err.find("step 3/3  loss "), std::string::npos) << err;
  EXPECT_NE(err.find(" tok/s  ETA 0:0"), std::string::npos) << err;
  EXPECT_NE(err.find("  bubble "), std::string::npos) << err;
  EXPECT_EQ(err.find("step 2/3"), std::string::npos) << "not a tty: only every 100th and the last step\n" << err;
  int held = 0;
  for (auto at = out.find("held-out loss "); at != std::string::npos; at = out.find("held-out loss ", at + 1)) ++held;
  EXPECT_EQ(held, 3) << out;

  const auto a = read_chrome_trace(one), b = read_chrome_trace(three), c = read_chrome_trace(last2);
  std::map<int, std::size_t> count;
  std::map<int, std::pair<double, double>> span;
  for (const auto& o : b) {
    ++count[o.step];
    auto [it, fresh] = span.try_emplace(o.step, o.begin_us, o.end_us);
    it->second = {std::min(it->second.first, o.begin_us), std::max(it->second.second, o.end_us)};
  }
  // pp=2 with dp=1 has no broadcasts: every step has the same ops.
  EXPECT_EQ(b.size(), 3 * a.size());
  EXPECT_EQ(count, (std::map<int, std::size_t>{{1, a.size()}, {2, a.size()}, {3, a.size()}}));
  EXPECT_GE(span[2].first, span[1].second - 1e-6);  // ts + dur rounds
  EXPECT_GE(span[3].first, span[2].second - 1e-6);
  EXPECT_EQ(c.size(), 2 * a.size());
  EXPECT_EQ(c.front().step, 2);
  EXPECT_EQ(c.back().step, 3);
  for (const auto& f : {one, three, last2}) std::remove(f.c_str());
}
