// The communication ledger against the textbook formulas, on real steps of several splits:
// pipeline sends, the experts' all-to-all and the ring all-reduce each move exactly what the
// formula predicts from the configuration alone, and a 16-GPU run sends between nodes.
#include <gtest/gtest.h>

#include "app/lab/lab.h"
#include "app/live/comm_ledger.h"
#include "app/live/job_runner.h"
#include "app/live/run_state.h"

namespace onegpu::app {
namespace {

struct Watched {
  JobRunner jr;
  RunState rs;
  void pump() {
    auto live = jr.live();
    if (live && live->generation != rs.generation()) rs.attach(live);
    rs.drain();
  }
  void settle() {
    jr.wait_idle([this] { pump(); });
    pump();
  }
};

CommLedger ledger_of(std::vector<std::string> flags) {
  Watched w;
  flags.insert(flags.end(), {"--seq", "16", "--workers", "2"});
  w.jr.configure(lab_train_args(flags));
  w.settle();
  EXPECT_TRUE(w.jr.status().error.empty()) << w.jr.status().error;
  w.jr.step_whole();
  w.jr.step_whole();  // step 2: the steady plan, no weights' broadcast
  w.settle();
  const RunStep* s = w.rs.find(1);
  EXPECT_NE(s, nullptr);
  EXPECT_TRUE(s && s->complete && s->spans_whole);
  return comm_ledger(w.rs.run()->plan_of(1), *s, 8);
}

void expect_formulas(const CommLedger& L, const char* split) {
  for (const LedgerRow& r : L.rows) {
    if (r.predicted < 0) {
      EXPECT_EQ(r.ops, 0) << split << ": " << transfer_name(r.what) << " only on the first step";
      continue;
    }
    EXPECT_NEAR(r.measured(), r.predicted, 1e-9 * std::max(1.0, r.predicted)) << split << ": " << transfer_name(r.what);
  }
}

TEST(CommLedger, DataAndExpertParallel) {
  const CommLedger L = ledger_of({"--dp", "2", "--ep", "2", "--batch", "8"});
  expect_formulas(L, "dp2 ep2");
  EXPECT_GT(L.row(Transfer::AllToAll).measured(), 0);
  EXPECT_GT(L.row(Transfer::AllReduceDense).measured(), 0);
  EXPECT_EQ(L.row(Transfer::Activations).ops, 0) << "one stage: no pipeline sends";
}

TEST(CommLedger, GPipeAndOneFOneBSendTheSame) {
  const CommLedger g = ledger_of({"--pp", "2", "--microbatches", "4", "--schedule", "gpipe", "--batch", "8"});
  const CommLedger f = ledger_of({"--pp", "2", "--microbatches", "4", "--schedule", "1f1b", "--batch", "8"});
  expect_formulas(g, "pp2 gpipe");
  expect_formulas(f, "pp2 1f1b");
  EXPECT_EQ(g.row(Transfer::Activations).ops, 4) << "one hand-over per microbatch";
  EXPECT_DOUBLE_EQ(g.row(Transfer::Gradients).measured(), f.row(Transfer::Gradients).measured())
      << "the schedule reorders sends, it does not add any";
}

TEST(CommLedger, InterleavedHasMoreBoundaries) {
  const CommLedger L = ledger_of({"--pp", "2", "--vstages", "2", "--microbatches", "2", "--schedule", "interleaved",
                                  "--batch", "8"});
  expect_formulas(L, "pp2 v2 interleaved");
  EXPECT_EQ(L.row(Transfer::Activations).ops, 3 * 2) << "three chunk boundaries, two microbatches";
}

TEST(CommLedger, SixteenGpusCrossNodes) {
  const CommLedger L = ledger_of({"--dp", "8", "--ep", "2", "--pp", "2", "--batch", "16"});
  expect_formulas(L, "dp8 ep2 pp2");
  EXPECT_GT(L.row(Transfer::Activations).between, 0) << "stage 1 (GPUs 1-8) hands over to stage 2 (GPUs 9-16)";
  EXPECT_EQ(L.row(Transfer::AllToAll).between, 0) << "expert groups of 2 sit inside a node";
  EXPECT_GT(L.row(Transfer::AllReduceExpert).measured(), 0) << "4 copies of each expert";
}

}  // namespace
}  // namespace onegpu::app
