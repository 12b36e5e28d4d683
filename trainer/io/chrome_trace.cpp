#include "trainer/io/chrome_trace.h"

#include "trainer/io/output_file.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "trainer/error.h"
#include "trainer/io/json.h"

namespace onegpu::trainer {

namespace {

constexpr int kCompute = 0, kComm = 1, kSend = 2;

int thread_of(const Op& op) {
  if (op.kind == OpKind::Send) return kSend;
  if (op.kind == OpKind::Recv || op.collective >= 0) return kComm;
  return kCompute;
}

std::string name_of(const Op& op) {
  // Built by appending only: GCC 12 warns falsely (-Wrestrict) on assign-then-append here.
  std::string s;
  s.reserve(48);
  auto add = [&](std::string_view x) { s.append(x.data(), x.size()); };
  add(kind_label(op, /*trace=*/true));  // the one table of kinds, plan.h
  if (op.part != Part::Chunk) {
    add(" ");
    add(to_string(op.part));
  }
  if (op.microbatch >= 0) {
    add(" mb");
    add(std::to_string(op.microbatch));
  }
  return s;
}

}  // namespace

std::string chrome_trace_json(const Plan& plan, const Timeline& tl, std::span<const Event> extra,
                              const TraceOptions& opt) {
  const TraceStep one{&plan, &tl, extra, -1};
  return chrome_trace_json(std::span<const TraceStep>(&one, 1), opt);
}

std::string chrome_trace_json(std::span<const TraceStep> steps, const TraceOptions& opt) {
  if (steps.empty()) throw Error("trace: no steps to write");
  std::size_t total_ops = 0;
  for (const TraceStep& st : steps) {
    if (!st.plan || !st.timeline) throw Error("trace: a step without its plan or timeline");
    if (st.timeline->ops.size() != st.plan->ops.size())
      throw Error("trace: timeline has " + std::to_string(st.timeline->ops.size()) + " ops, plan has " +
                  std::to_string(st.plan->ops.size()));
    if (st.plan->world() != steps[0].plan->world())
      throw Error("trace: steps of " + std::to_string(steps[0].plan->world()) + " and " +
                  std::to_string(st.plan->world()) + " ranks cannot share one trace");
    total_ops += st.plan->ops.size();
  }
  const Plan& first = *steps[0].plan;
  std::string out;
  out.reserve(total_ops * 200 + 4096);
  json::Writer w(out);
  const RunConfig& cfg = first.config;
  w.begin_object();
  w.key("displayTimeUnit").value("ms");
  w.key("otherData").begin_object();
  w.field("schedule", std::string(to_string(cfg.schedule)));
  w.field("pp", cfg.pp).field("dp", cfg.dp).field("ep", cfg.ep).field("vstages", cfg.vstages);
  w.field("microbatches", cfg.microbatches).field("layers", cfg.layers);
  w.field("experts", cfg.experts);
  // Both change the plan's ops (ZeRO-1's reduce-scatter and all-gather; one op a layer), so a
  // trace without them would not open again against its own plan.
  w.field("zero", cfg.zero).field("op_per_layer", cfg.op_per_layer);
  if (steps[0].step >= 0) w.field("steps", static_cast<long long>(steps.size()));
  w.end_object();
  w.key("traceEvents").begin_array();

  auto meta = [&](const char* what, int pid, int tid, const std::string& name) {
    w.begin_object().field("ph", "M").field("name", what).field("pid", pid);
    if (tid >= 0) w.field("tid", tid);
    w.key("args").begin_object().field("name", name).end_object().end_object();
  };
  for (int r = 0; r < first.world(); ++r) {
    const RankCoord c = first.layout.coord(r);
    // Files count from 0 (rank, stage, dp, experts); onegpu's window counts GPUs from 1: the
    // name says which GPU of the window a rank is.
    std::string name = "rank " + std::to_string(r) + " (GPU " + std::to_string(r + 1) + " in onegpu) · stage " +
                       std::to_string(c.stage) +
                       " · dp " + std::to_string(c.dp);
    if (cfg.ep > 1) name += " · experts " + std::to_string(first.layout.first_expert(r)) + "–" +
                           std::to_string(first.layout.first_expert(r) + first.layout.expert_count() - 1);
    meta("process_name", r, -1, name);
    w.begin_object().field("ph", "M").field("name", "process_sort_index").field("pid", r);
    w.key("args").begin_object().field("sort_index", r).end_object().end_object();
    meta("thread_name", r, kCompute, "compute");
    meta("thread_name", r, kComm, "comm");
    meta("thread_name", r, kSend, "send");
  }

  double t0 = 0;            // where this step starts, seconds
  long long flow_base = 0;  // flow ids stay unique across steps
  for (const TraceStep& st : steps) {
    const Plan& plan = *st.plan;
    const Timeline& tl = *st.timeline;
    auto us = [&](double seconds) { return (t0 + seconds) * 1e6; };
    if (st.step >= 0) {
      w.begin_object().field("ph", "i").field("s", "g").field("name", "step " + std::to_string(st.step));
      w.field("pid", 0).field("ts", us(0)).end_object();
    }

    for (const Op& op : plan.ops) {
      const OpTime& t = tl.ops[op.id];
      w.begin_object();
      w.field("ph", "X").field("name", name_of(op)).field("cat", std::string(to_string(op.kind)));
      w.field("pid", op.rank).field("tid", thread_of(op));
      w.field("ts", us(t.begin)).field("dur", std::max(0.0, t.end - t.begin) * 1e6);
      w.key("args").begin_object();
      if (st.step >= 0) w.field("step", st.step);
      w.field("op", op.id);
      if (op.chunk >= 0) w.field("chunk", op.chunk);
      if (op.layer_begin >= 0)
        w.field("layers", std::to_string(op.layer_begin) + "–" + std::to_string(op.layer_end - 1));
      if (op.microbatch >= 0) w.field("microbatch", op.microbatch);
      if (op.peer >= 0) w.field("peer", op.peer);
      if (op.bytes) w.field("bytes", op.bytes);
      if (op.collective >= 0) w.field("collective", op.collective);
      if (t.wall_end_ns > 0) w.field("wall_us", static_cast<double>(t.wall_end_ns - t.wall_begin_ns) * 1e-3);
      w.end_object();
      w.end_object();
    }

    if (opt.flows) {
      for (const Op& op : plan.ops) {
        if (op.kind != OpKind::Send || op.match < 0) continue;
        const Op& rv = plan.ops[static_cast<std::size_t>(op.match)];
        const OpTime& ts = tl.ops[op.id];
        const OpTime& tr = tl.ops[rv.id];
        const char* name = op.payload == Payload::Activation ? "activation" : "gradient";
        const long long id = flow_base + op.id;
        w.begin_object().field("ph", "s").field("name", name).field("cat", "p2p");
        w.field("id", id).field("pid", op.rank).field("tid", kSend).field("ts", us(ts.begin));
        w.end_object();
        // The arrow lands where the data arrives, inside the receive's span.
        const double land = std::clamp(ts.end, tr.begin, tr.end);
        w.begin_object().field("ph", "f").field("bp", "e").field("name", name).field("cat", "p2p");
        w.field("id", id).field("pid", rv.rank).field("tid", kComm).field("ts", us(land));
        w.end_object();
      }
    }

    if (opt.activation_counters) {
      const bool split = plan.config.schedule == Schedule::ZeroBubbleH1;
      for (int r = 0; r < plan.world(); ++r) {
        std::set<std::pair<int, int>> live;
        auto counter = [&](double t) {
          w.begin_object().field("ph", "C").field("name", "live activations").field("pid", r);
          w.field("ts", us(t));
          w.key("args").begin_object().field("microbatch-chunks", static_cast<int>(live.size()));
          w.end_object().end_object();
        };
        counter(0);
        for (std::uint32_t id : plan.programs[static_cast<std::size_t>(r)]) {
          const Op& o = plan.ops[id];
          if (o.chunk < 0) continue;
          const bool chunk_start = o.layer_begin == plan.layout.first_layer(o.chunk);
          if (o.kind == OpKind::Forward && chunk_start &&
              (o.part == Part::Chunk || o.part == Part::Attention)) {
            live.insert({o.chunk, o.microbatch});
            counter(tl.ops[id].begin);
          }
          const bool last = split ? o.kind == OpKind::BackwardWeight
                                  : o.kind == OpKind::Backward && chunk_start &&
                                        (o.part == Part::Chunk || o.part == Part::Attention);
          if (last && live.erase({o.chunk, o.microbatch})) counter(tl.ops[id].end);
        }
      }
    }

    for (const Event& e : st.extra) {
      if (e.kind != EventKind::MemoryLevel && e.kind != EventKind::Loss) continue;
      if (e.rank < 0) continue;
      w.begin_object().field("ph", "C").field("pid", e.rank).field("ts", us(e.virtual_begin));
      if (e.kind == EventKind::MemoryLevel) {
        w.field("name", "memory");
        w.key("args").begin_object();
        w.field(mem_category_name(static_cast<MemCategory>(e.detail)), e.bytes);
      } else {
        w.field("name", "loss");
        w.key("args").begin_object().field("loss", e.value);
      }
      w.end_object().end_object();
    }
    t0 += tl.end;
    flow_base += static_cast<long long>(plan.ops.size());
  }

  w.end_array();
  w.end_object();
  return out;
}

namespace {

void write_file(const std::string& path, const std::string& text) {
  // Atomic, unique temporary, regular files only: see trainer/io/output_file.h.
  files::write_atomic(path, text, "trace");
}

}  // namespace

void write_chrome_trace(const std::string& path, const Plan& plan, const Timeline& timeline,
                        std::span<const Event> extra, const TraceOptions& opt) {
  write_file(path, chrome_trace_json(plan, timeline, extra, opt));
}

void write_chrome_trace(const std::string& path, std::span<const TraceStep> steps, const TraceOptions& opt) {
  write_file(path, chrome_trace_json(steps, opt));
}

// ---- reading ----

TraceFile parse_trace_file(std::string_view text, const std::string& source) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) throw Error(source + " is empty");
  TraceFile file;
  std::vector<TraceOp>& ops = file.ops;
  std::size_t i = 0;
  try {
    const json::Value doc = json::parse(text);
    const json::Value* events = doc.is_object() ? doc.find("traceEvents") : nullptr;
    if (!doc.is_object() || !events)
      throw Error("not a trace (expected a JSON object with \"traceEvents\")");
    if (const json::Value* od = doc.find("otherData"); od && od->is_object() && od->find("pp") && od->find("schedule")) {
      RunConfig& c = file.config;
      auto num = [&](const char* k, int& v) {
        if (const json::Value* x = od->find(k)) v = static_cast<int>(x->as_int());
      };
      c.schedule = parse_schedule(od->at("schedule").as_string());
      num("pp", c.pp);
      num("dp", c.dp);
      num("ep", c.ep);
      num("vstages", c.vstages);
      num("microbatches", c.microbatches);
      num("layers", c.layers);
      num("experts", c.experts);
      num("zero", c.zero);  // absent in traces written before it: 0, as those runs were
      if (const json::Value* x = od->find("op_per_layer")) c.op_per_layer = x->as_bool();
      file.has_config = true;
    }
    for (const json::Value& e : events->as_array()) {
      ++i;
      if (e.at("ph").as_string() != "X") continue;
      TraceOp o;
      o.rank = static_cast<int>(e.at("pid").as_int());
      o.kind = e.at("cat").as_string();
      o.name = e.at("name").as_string();
      o.begin_us = e.at("ts").as_double();
      o.end_us = o.begin_us + e.at("dur").as_double();
      if (const json::Value* a = e.find("args")) {
        if (const json::Value* v = a->find("step")) o.step = static_cast<int>(v->as_int());
        if (const json::Value* v = a->find("microbatch")) o.microbatch = static_cast<int>(v->as_int());
        if (const json::Value* v = a->find("bytes")) o.bytes = v->as_int();
        if (const json::Value* v = a->find("op")) o.op = v->as_int();
      }
      ops.push_back(std::move(o));
    }
  } catch (const Error& e) {
    throw Error(source + ": " + (i ? "event " + std::to_string(i) + ": " : std::string()) + e.what());
  }
  return file;
}

std::vector<TraceOp> parse_chrome_trace(std::string_view text, const std::string& source) {
  return parse_trace_file(text, source).ops;
}

namespace {
// A trace file's bytes. A directory opens as a stream of nothing on Linux, and read as "empty".
std::string read_trace_bytes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw Error("cannot read trace " + path + ": not a regular file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read trace " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TraceFile read_trace_file(const std::string& path) { return parse_trace_file(read_trace_bytes(path), "trace " + path); }

std::vector<TraceOp> read_chrome_trace(const std::string& path) {
  return parse_chrome_trace(read_trace_bytes(path), "trace " + path);
}

}  // namespace onegpu::trainer
