#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "trainer/io/chrome_trace.h"
#include "trainer/engine/engine.h"
#include "trainer/error.h"
#include "trainer/io/json.h"

namespace onegpu::trainer {
namespace {

RunConfig four_gpus() {  // pp=2 x dp=2 x ep=2, the storyboard's four GPUs
  RunConfig c;
  c.pp = 2;
  c.dp = 2;
  c.ep = 2;
  c.layers = 8;
  c.microbatches = 4;
  return c;
}

struct Shape {
  std::map<std::string, int> phases;
  int processes = 0;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> spans;  // (pid,tid)
  std::map<long long, int> flow_starts, flow_ends;
};

Shape check_shape(const std::string& text) {
  Shape s;
  const json::Value doc = json::parse(text);
  EXPECT_TRUE(doc.is_object());
  const json::Value& events = doc.at("traceEvents");
  EXPECT_TRUE(events.is_array());
  for (const json::Value& e : events.as_array()) {
    const std::string ph = e.at("ph").as_string();
    ++s.phases[ph];
    EXPECT_TRUE(e.at("pid").is_integer());
    EXPECT_TRUE(e.at("name").is_string());
    if (ph == "M" && e.at("name").as_string() == "process_name") ++s.processes;
    if (ph == "X") {
      const double ts = e.at("ts").as_double(), dur = e.at("dur").as_double();
      EXPECT_GE(dur, 0.0);
      EXPECT_GE(ts, 0.0);
      s.spans[{static_cast<int>(e.at("pid").as_int()), static_cast<int>(e.at("tid").as_int())}]
          .push_back({ts, ts + dur});
    }
    if (ph == "s") ++s.flow_starts[e.at("id").as_int()];
    if (ph == "f") {
      ++s.flow_ends[e.at("id").as_int()];
      EXPECT_EQ(e.at("bp").as_string(), "e");
    }
    if (ph == "C") {
      EXPECT_TRUE(e.at("args").is_object());
    }
  }
  return s;
}

// Spans on one thread must nest or be disjoint, or Perfetto draws them wrongly.
void expect_no_partial_overlap(const Shape& s) {
  for (auto [key, v] : s.spans) {
    std::sort(v.begin(), v.end());
    for (std::size_t i = 1; i < v.size(); ++i)
      EXPECT_LE(v[i].first, v[i].second) << "bad span";
    for (std::size_t i = 1; i < v.size(); ++i) {
      const bool disjoint = v[i].first >= v[i - 1].second - 1e-6;
      const bool nested = v[i].second <= v[i - 1].second + 1e-6;
      EXPECT_TRUE(disjoint || nested) << "pid " << key.first << " tid " << key.second << " at "
                                      << v[i].first;
    }
  }
}

TEST(ChromeTrace, ValidJsonOfTheRightShape) {
  const Plan plan = compile_plan(four_gpus());
  CostModel model = CostModel::for_link("nvlink");
  model.compute = ComputeCost::Unit;
  model.forward = 1e-3;
  model.backward = 2e-3;
  const Timeline tl = simulate(plan, model);
  Event mem;
  mem.rank = 1;
  mem.kind = EventKind::MemoryLevel;
  mem.detail = static_cast<std::uint8_t>(MemCategory::Optimizer);
  mem.bytes = 1234;
  Event loss;
  loss.rank = 3;
  loss.kind = EventKind::Loss;
  loss.value = 2.5;
  const std::vector<Event> extra{mem, loss};
  const std::string text = chrome_trace_json(plan, tl, extra);
  const Shape s = check_shape(text);
  EXPECT_EQ(s.processes, 4);
  EXPECT_EQ(s.phases.at("X"), static_cast<int>(plan.ops.size()));
  int sends = 0;
  for (const Op& o : plan.ops) sends += o.kind == OpKind::Send;
  EXPECT_EQ(static_cast<int>(s.flow_starts.size()), sends);
  EXPECT_EQ(s.flow_starts.size(), s.flow_ends.size());
  for (auto [id, n] : s.flow_starts) {
    EXPECT_EQ(n, 1);
    EXPECT_EQ(s.flow_ends.count(id), 1u);
  }
  EXPECT_GT(s.phases.at("C"), 4 * 2 * 4);  // live activations go up and down per microbatch
  EXPECT_NE(text.find("\"optimizer\":1234"), std::string::npos);
  EXPECT_NE(text.find("\"loss\":2.5"), std::string::npos);
  EXPECT_NE(text.find("rank 3 (GPU 4 in onegpu) · stage 1 · dp 1 · experts 8–15"), std::string::npos);
  expect_no_partial_overlap(s);
}

TEST(ChromeTrace, EngineTimelineAndFileRoundTrip) {
  RunConfig c = four_gpus();
  c.schedule = Schedule::ZeroBubbleH1;
  const Plan plan = compile_plan(c, PlanOptions{.broadcast_model = true});
  NullRunner null;
  CostModel model = CostModel::for_link("pcie");
  model.compute = ComputeCost::Unit;
  model.forward = model.backward_input = model.backward_weight = 1e-4;
  Engine engine(plan, null, EngineOptions{.workers = 2, .cost = model});
  const Timeline& tl = engine.run();
  const auto dir = std::filesystem::temp_directory_path() / "onegpu_trace_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "trace.json").string();
  write_chrome_trace(path, plan, tl);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const Shape s = check_shape(ss.str());
  EXPECT_EQ(s.processes, 4);
  expect_no_partial_overlap(s);
  std::filesystem::remove_all(dir);
  EXPECT_THROW(write_chrome_trace("/nonexistent-dir/x/trace.json", plan, tl), Error);
  Timeline wrong;
  EXPECT_THROW(chrome_trace_json(plan, wrong), Error);
}

TEST(ChromeTrace, FiveHundredTwelveProcesses) {
  RunConfig c;
  c.pp = 8;
  c.dp = 64;
  c.ep = 8;
  c.layers = 32;
  c.experts = 64;
  c.microbatches = 1;  // GPipe with one microbatch keeps the JSON small enough to parse fast
  c.schedule = Schedule::GPipe;
  const Plan plan = compile_plan(c);
  const Timeline tl = simulate(plan, CostModel::unit());
  TraceOptions opt;
  opt.activation_counters = false;
  const std::string text = chrome_trace_json(plan, tl, {}, opt);
  const json::Value doc = json::parse(text);
  int procs = 0;
  for (const json::Value& e : doc.at("traceEvents").as_array())
    procs += e.at("ph").as_string() == "M" && e.at("name").as_string() == "process_name";
  EXPECT_EQ(procs, 512);
}

TEST(ChromeTrace, SeveralStepsFollowEachOtherAndReadBack) {
  const Plan first = compile_plan(four_gpus(), PlanOptions{.broadcast_model = true});
  const Plan steady = compile_plan(four_gpus());
  const Timeline t1 = simulate(first, CostModel::unit()), t2 = simulate(steady, CostModel::unit());
  const std::vector<TraceStep> steps{{&first, &t1, {}, 1}, {&steady, &t2, {}, 2}, {&steady, &t2, {}, 3}};
  const std::string text = chrome_trace_json(steps);
  const Shape s = check_shape(text);
  EXPECT_EQ(s.processes, 4);  // ranks named once, not per step
  EXPECT_EQ(s.phases.at("X"), static_cast<int>(first.ops.size() + 2 * steady.ops.size()));
  EXPECT_EQ(s.phases.at("i"), 3);  // a "step N" marker each
  for (auto [id, n] : s.flow_starts) EXPECT_EQ(n, 1) << "flow id " << id << " reused across steps";
  expect_no_partial_overlap(s);

  const std::vector<TraceOp> ops = parse_chrome_trace(text);
  ASSERT_EQ(ops.size(), first.ops.size() + 2 * steady.ops.size());
  std::map<int, std::pair<double, double>> span;  // step -> (first begin, last end)
  std::map<int, std::size_t> count;
  for (const TraceOp& o : ops) {
    auto [it, fresh] = span.try_emplace(o.step, o.begin_us, o.end_us);
    it->second.first = std::min(it->second.first, o.begin_us);
    it->second.second = std::max(it->second.second, o.end_us);
    ++count[o.step];
  }
  EXPECT_EQ(count[1], first.ops.size());
  EXPECT_EQ(count[3], steady.ops.size());
  EXPECT_NEAR(span[2].first, t1.end * 1e6, 1e-6 * t1.end * 1e6);  // starts where step 1 ended
  EXPECT_GE(span[2].first, span[1].second - 1e-6);  // ts + dur rounds
  EXPECT_GE(span[3].first, span[2].second - 1e-6);
  // Fields read back as written (the first op of the first step).
  const Op& op = first.ops[0];
  EXPECT_EQ(ops[0].rank, op.rank);
  EXPECT_EQ(ops[0].kind, std::string(to_string(op.kind)));
  EXPECT_EQ(ops[0].microbatch, op.microbatch);
  EXPECT_EQ(ops[0].bytes, op.bytes);
  EXPECT_DOUBLE_EQ(ops[0].begin_us, t1.ops[0].begin * 1e6);
  // A one-step trace has unnumbered ops.
  EXPECT_EQ(parse_chrome_trace(chrome_trace_json(steady, t2)).front().step, -1);
}

TEST(ChromeTrace, ReadingABadFileIsOneClearError) {
  const auto dir = std::filesystem::temp_directory_path() / "onegpu_trace_read_test";
  std::filesystem::create_directories(dir);
  const Plan plan = compile_plan(four_gpus());
  const std::string good = chrome_trace_json(plan, simulate(plan, CostModel::unit()));
  const std::vector<std::pair<std::string, std::string>> bad{
      {"empty", ""},
      {"blank", " \n"},
      {"truncated", good.substr(0, good.size() / 2)},
      {"not_object", "[1, 2, 3]"},
      {"no_events", "{\"otherData\": {}}"},
      {"events_not_array", "{\"traceEvents\": 7}"},
      {"event_not_object", "{\"traceEvents\": [3]}"},
      {"wrong_pid_type", "{\"traceEvents\": [{\"ph\":\"X\",\"pid\":\"zero\",\"cat\":\"forward\",\"name\":\"F\",\"ts\":0,\"dur\":1}]}"},
      {"missing_ts", "{\"traceEvents\": [{\"ph\":\"X\",\"pid\":0,\"cat\":\"forward\",\"name\":\"F\",\"dur\":1}]}"},
      {"not_json", "hello"},
  };
  for (const auto& [name, text] : bad) {
    const std::string path = (dir / (name + ".json")).string();
    std::ofstream(path, std::ios::binary) << text;
    try {
      read_chrome_trace(path);
      ADD_FAILURE() << name << ": no error";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(path), std::string::npos) << name << ": " << m;  // names the file
      EXPECT_EQ(m.find('\n'), std::string::npos) << name << ": " << m;
    }
  }
  EXPECT_THROW(read_chrome_trace((dir / "missing.json").string()), Error);
  const std::string ok = (dir / "good.json").string();
  std::ofstream(ok, std::ios::binary) << good;
  EXPECT_EQ(read_chrome_trace(ok).size(), plan.ops.size());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace onegpu::trainer
