// A trace written by a split run, read back as a recorded run: every step's spans are the
// trainer's own timeline (to the microsecond the trace keeps), the first step is matched to
// the plan with the weights' broadcast, and a trace whose ops do not fit its configuration is
// one clear error.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/live/run_state.h"
#include "app/live/trace_run.h"
#include "trainer/data/story_corpus.h"
#include "trainer/io/chrome_trace.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::app {
namespace {

std::string temp(const char* name) { return (std::filesystem::temp_directory_path() / name).string(); }

TEST(TraceRun, ReadsBackWhatTheTrainerRan) {
  trainer::StoryCorpusOptions co;
  co.target_bytes = std::size_t{64} << 10;
  const trainer::Corpus c = trainer::generate_story_corpus(co);
  const trainer::BpeTokenizer tok = trainer::BpeTokenizer::train(c.train);
  const trainer::TokenDataset data = trainer::TokenDataset::build(tok, c.train);
  trainer::ModelConfig m = trainer::model_preset("story");
  m.vocab = (int)tok.vocab_size();
  m.seq_len = 16;
  trainer::ParallelOptions o;
  o.dp = 2;
  o.ep = 2;
  o.pp = 2;
  o.microbatches = 2;
  o.batch = 8;
  o.workers = 2;
  trainer::ParallelTrainer t(m, o, data);
  std::vector<trainer::Timeline> tls;
  std::vector<const trainer::Plan*> plans;
  for (int i = 0; i < 3; ++i) {
    t.step();
    tls.push_back(t.timeline());
    plans.push_back(&t.plan());
  }
  std::vector<trainer::TraceStep> steps;
  for (int i = 0; i < 3; ++i) steps.push_back({plans[(std::size_t)i], &tls[(std::size_t)i], {}, i + 1});
  const std::string path = temp("onegpu_trace_run_test.json");
  trainer::write_chrome_trace(path, steps);

  const TraceRun tr = load_trace_run(path);
  ASSERT_EQ(tr.steps, 3);
  RunState rs;
  rs.attach(tr.run);
  for (const auto& e : tr.events) rs.consume(e);
  for (int i = 0; i < 3; ++i) {
    const RunStep* s = rs.find(i);
    ASSERT_NE(s, nullptr) << "step " << i;
    EXPECT_TRUE(s->complete);
    EXPECT_TRUE(s->spans_whole);
    EXPECT_EQ(tr.run->plan_of(i).ops.size(), plans[(std::size_t)i]->ops.size()) << "step " << i << "'s plan";
    const trainer::Timeline mine = rs.timeline(*s);
    // The trace's times start at the step's first op; the trainer's at zero too.
    for (std::size_t k = 0; k < mine.ops.size(); ++k) {
      EXPECT_NEAR(mine.ops[k].begin, tls[(std::size_t)i].ops[k].begin, 2e-6) << "step " << i << " op " << k;
      EXPECT_NEAR(mine.ops[k].end, tls[(std::size_t)i].ops[k].end, 2e-6) << "step " << i << " op " << k;
    }
  }
  EXPECT_GT(tr.run->plan_of(0).ops.size(), tr.run->plan_of(1).ops.size()) << "step 1 also broadcast the weights";
  std::filesystem::remove(path);
}

TEST(TraceRun, ATraceThatDoesNotFitItsConfigurationIsOneError) {
  // Write a one-rank trace, then claim dp = 2 in its configuration.
  trainer::RunConfig rc;
  rc.layers = 4;
  rc.experts = 16;
  const trainer::Plan plan = trainer::compile_plan(rc);
  trainer::Timeline tl;
  tl.ops.assign(plan.ops.size(), trainer::OpTime{});
  for (std::size_t i = 0; i < tl.ops.size(); ++i) tl.ops[i].begin = (double)i, tl.ops[i].end = (double)i + 0.5;
  const std::string path = temp("onegpu_trace_run_bad.json");
  trainer::write_chrome_trace(path, plan, tl);
  EXPECT_NO_THROW(load_trace_run(path));
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const auto at = text.find("\"dp\":1");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 6, "\"dp\":2");
  std::ofstream(path) << text;
  try {
    load_trace_run(path);
    FAIL() << "a trace that does not fit its configuration loaded";
  } catch (const trainer::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace onegpu::app
