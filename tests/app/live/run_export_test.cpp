// Exports from the run state: a trace written from the Lab opens again (`lab --open`) with the
// same spans, and the JSONL has one parseable object per step line and per op.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "app/lab/lab.h"
#include "app/live/job_runner.h"
#include "app/live/run_export.h"
#include "app/live/run_state.h"
#include "app/live/trace_run.h"
#include "trainer/error.h"
#include "trainer/io/json.h"

namespace onegpu::app {
namespace {

std::string temp(const char* name) { return (std::filesystem::temp_directory_path() / name).string(); }

// Configures the Lab's runner with `args`, runs `steps` whole steps and reads every event of
// them into `rs`.
void run_steps(JobRunner& jr, RunState& rs, const std::vector<std::string>& args, int steps) {
  auto pump = [&] {
    auto live = jr.live();
    if (live && live->generation != rs.generation()) rs.attach(live);
    rs.drain();
  };
  jr.configure(lab_train_args(args));
  for (int i = 0; i < steps; ++i) jr.step_whole();
  jr.wait_idle(pump);
  pump();
}

// Runs three steps of the Lab under `args`, writes them as a trace, opens it again and checks
// every op's span and each step's bubble.
void round_trip(const std::vector<std::string>& args, const char* file) {
  JobRunner jr;
  RunState rs;
  run_steps(jr, rs, args, 3);
  const std::string path = temp(file);
  ASSERT_EQ(export_trace(rs, path), 3);

  const TraceRun tr = load_trace_run(path);
  ASSERT_EQ(tr.steps, 3);
  EXPECT_EQ(tr.run->by_layer, rs.run()->by_layer);
  EXPECT_EQ(tr.run->args.zero, rs.run()->args.zero);
  RunState back;
  back.attach(tr.run);
  for (const auto& e : tr.events) back.consume(e);
  for (int step = 0; step < 3; ++step) {
    const RunStep* a = rs.find(step);
    const RunStep* b = back.find(step);
    ASSERT_TRUE(a && b) << "step " << step;
    ASSERT_EQ(a->ops.size(), b->ops.size()) << "step " << step;
    std::map<std::uint32_t, const OpSpan*> by_id;
    for (const OpSpan& o : b->ops) by_id[o.id] = &o;
    for (const OpSpan& o : a->ops) {
      ASSERT_TRUE(by_id.count(o.id)) << "op " << o.id;
      const OpSpan& r = *by_id[o.id];
      EXPECT_EQ(r.rank, o.rank);
      EXPECT_EQ(r.kind, o.kind);
      EXPECT_EQ(r.microbatch, o.microbatch);
      // The trace keeps microseconds, from the step's first op.
      EXPECT_NEAR(r.vbegin, o.vbegin, 1.5e-6) << "op " << o.id;
      EXPECT_NEAR(r.vend, o.vend, 1.5e-6) << "op " << o.id;
    }
    EXPECT_NEAR(b->bubble, a->bubble, 1e-3) << "the same bubble from the same spans";
  }
  std::filesystem::remove(path);
}

TEST(RunExport, TraceRoundTripKeepsTheSpans) {
  round_trip({"--pp", "2", "--dp", "2", "--ep", "2", "--batch", "8", "--seq", "16", "--workers", "2"}, "onegpu_lab_export.json");
}

// One GPU runs an op a layer (the learner's view) and ZeRO-1 adds a reduce-scatter and an
// all-gather: both plans differ from the default one, and a trace that did not say so failed
// to open ("step 0 has 9 ops, its configuration's plan 3").
TEST(RunExport, TraceOfOneGpuOrZeroOneOpensAgain) {
  round_trip({"--batch", "4", "--seq", "16", "--workers", "2"}, "onegpu_lab_export_one.json");
  round_trip({"--dp", "2", "--zero", "1", "--batch", "4", "--seq", "16", "--workers", "2"}, "onegpu_lab_export_zero.json");
}

// A trace of the Lab's one-GPU run written before traces said "op_per_layer" (the field taken
// out here) opens too: its steps fit the plan with an op a layer, and not the other.
TEST(RunExport, OneGpuTraceWithoutTheFieldOpensAsAnOpALayer) {
  JobRunner jr;
  RunState rs;
  run_steps(jr, rs, {"--batch", "4", "--seq", "16", "--workers", "2"}, 2);
  const std::string path = temp("onegpu_lab_export_old.json");
  ASSERT_EQ(export_trace(rs, path), 2);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  const std::string field = ",\"op_per_layer\":true";
  const std::size_t at = text.find(field);
  ASSERT_NE(at, std::string::npos) << text.substr(0, 300);
  text.erase(at, field.size());
  const TraceRun tr = parse_trace_run(text, "old.json");
  EXPECT_EQ(tr.steps, 2);
  EXPECT_TRUE(tr.run->by_layer);
  EXPECT_EQ(tr.run->steady_plan->ops.size(), rs.run()->steady_plan->ops.size());
}

TEST(RunExport, JsonlHasOneObjectPerStepAndOp) {
  JobRunner jr;
  RunState rs;
  EXPECT_THROW(export_jsonl(rs, temp("onegpu_none.jsonl")), trainer::Error) << "nothing to export is one error";
  run_steps(jr, rs, {"--pp", "2", "--batch", "4", "--seq", "16", "--workers", "2"}, 2);
  const std::string path = temp("onegpu_lab_export.jsonl");
  const std::size_t n = export_jsonl(rs, path);
  std::size_t ops = 0;
  for (const RunStep& s : rs.steps()) ops += s.ops.size();
  EXPECT_EQ(n, rs.history().size() + ops);
  std::ifstream in(path);
  std::string line;
  std::size_t lines = 0, steps = 0;
  while (std::getline(in, line)) {
    const trainer::json::Value v = trainer::json::parse(line);
    const std::string type = v.at("type").as_string();
    if (type == "step") {
      ++steps;
      EXPECT_GT(v.at("loss").as_double(), 0);
    } else {
      EXPECT_EQ(type, "op");
    }
    ++lines;
  }
  EXPECT_EQ(lines, n);
  EXPECT_EQ(steps, 2u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace onegpu::app
