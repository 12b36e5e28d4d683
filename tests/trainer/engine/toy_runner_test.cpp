// A runner with toy "maths" (integer hashes instead of tensors) that behaves like the real
// model in what matters to the plan: activations flow up through the chunks, gradients flow
// back, each layer gathers a weight gradient from every microbatch, data-parallel copies
// all-reduce them, the broadcast copies weights from the root. Every split of the same run
// (dp, ep, pp, vstages, schedule) must then produce exactly the numbers of one rank: a
// parity test of the plans and the engine with no maths at all. It is also an example of a
// runner: per-rank state without locks, a mailbox indexed by the send's op id.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "trainer/engine/engine.h"

namespace onegpu::trainer {
namespace {

std::uint64_t mix(std::uint64_t x, std::uint64_t salt) {  // splitmix64 of x ^ salt
  x ^= salt * 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct Toy final : OpRunner {
  struct Rank {
    std::map<std::pair<int, int>, std::uint64_t> in;      // (chunk, mb) -> chunk input
    std::map<std::pair<int, int>, std::uint64_t> out;     // (chunk, mb) -> chunk output
    std::map<std::pair<int, int>, std::uint64_t> grad_in; // (chunk, mb) -> grad at chunk output
    std::map<std::pair<int, int>, std::uint64_t> grad_out;// (chunk, mb) -> grad at chunk input
    std::map<std::pair<int, int>, std::uint64_t> x_at;    // (layer, mb) -> layer input
    std::map<std::pair<int, int>, std::uint64_t> g_at;    // (layer, mb) -> grad at layer output
    std::map<int, std::uint64_t> grad;                    // layer -> weight gradient
    std::map<int, std::uint64_t> weight;                  // layer -> weight
    std::map<int, std::uint64_t> updated;                 // layer -> weight after update
  };
  const Plan& plan;
  std::vector<Rank> ranks;
  std::vector<std::uint64_t> mailbox;   // by send op id: written once, read after the send
  std::vector<std::uint64_t> losses;    // by global microbatch (only last-chunk ranks write)
  std::vector<std::string> errors;      // under errors_mu
  std::mutex errors_mu;

  explicit Toy(const Plan& p)
      : plan(p),
        ranks(static_cast<std::size_t>(p.world())),
        mailbox(p.ops.size(), 0),
        losses(static_cast<std::size_t>(p.config.dp * p.config.microbatches), 0) {
    // Only the root of each stage's dense group starts with weights; the broadcast (when in
    // the plan) copies them. Without a broadcast every rank starts with them.
    for (int r = 0; r < p.world(); ++r)
      for (int l = 0; l < p.config.layers; ++l)
        ranks[static_cast<std::size_t>(r)].weight[l] = 1000 + static_cast<std::uint64_t>(l);
  }
  void clear_non_roots() {
    for (int r = 0; r < plan.world(); ++r)
      if (plan.layout.coord(r).dp != 0) ranks[static_cast<std::size_t>(r)].weight.clear();
  }
  void fail(const std::string& e) {
    std::lock_guard lk(errors_mu);
    errors.push_back(e);
  }

  int global_mb(const Op& op) const {
    return plan.layout.coord(op.rank).dp * plan.config.microbatches + op.microbatch;
  }
  bool last_chunk(int c) const { return c == plan.config.chunks() - 1; }

  // One layer forward: the weight takes part, so a missing broadcast shows.
  void layer_fwd(Rank& R, int l, int mb, std::uint64_t& x) {
    R.x_at[{l, mb}] = x;
    x = mix(x, static_cast<std::uint64_t>(l) * 31 + R.weight.at(l));
  }
  void layer_bwd_input(Rank& R, int l, int mb, std::uint64_t& g) {
    R.g_at[{l, mb}] = g;
    g = mix(g, static_cast<std::uint64_t>(l) + 500);
  }
  void layer_bwd_weight(Rank& R, int l, int mb) {
    R.grad[l] += mix(R.g_at.at({l, mb}) ^ R.x_at.at({l, mb}), static_cast<std::uint64_t>(l));
  }

  void run(const Op& op, const OpContext&) override {
    Rank& R = ranks[static_cast<std::size_t>(op.rank)];
    const int c = op.chunk, mb = op.microbatch;
    switch (op.kind) {
      case OpKind::Send:
        mailbox[op.id] = op.payload == Payload::Activation ? R.out.at({c, mb}) : R.grad_out.at({c, mb});
        return;
      case OpKind::Recv: {
        const std::uint64_t v = mailbox[static_cast<std::size_t>(op.match)];
        (op.payload == Payload::Activation ? R.in : R.grad_in)[{c, mb}] = v;
        return;
      }
      case OpKind::Forward: {
        const bool first_part = op.part == Part::Chunk ||
                                (op.part == Part::Attention && op.layer_begin == plan.layout.first_layer(c));
        if (first_part && c == 0) R.in[{c, mb}] = mix(static_cast<std::uint64_t>(global_mb(op)), 7);
        if (first_part) R.out[{c, mb}] = R.in.at({c, mb});
        // With experts split a layer is three parts; the layer's function runs in Combine.
        if (op.part == Part::Chunk || op.part == Part::Combine) {
          std::uint64_t x = R.out.at({c, mb});
          for (int l = op.layer_begin; l < op.layer_end; ++l) layer_fwd(R, l, mb, x);
          R.out[{c, mb}] = x;
          if (last_chunk(c) && op.layer_end == plan.config.layers)
            losses[static_cast<std::size_t>(global_mb(op))] = x;
        }
        return;
      }
      case OpKind::Backward:
      case OpKind::BackwardInput: {
        const bool first_part = op.part == Part::Chunk ||
                                (op.part == Part::Combine && op.layer_end == plan.layout.end_layer(c));
        if (first_part) {
          R.grad_out[{c, mb}] = last_chunk(c) ? mix(R.out.at({c, mb}), 999) : R.grad_in.at({c, mb});
        }
        if (op.part == Part::Chunk || op.part == Part::Attention) {
          std::uint64_t g = R.grad_out.at({c, mb});
          for (int l = op.layer_end - 1; l >= op.layer_begin; --l) {
            layer_bwd_input(R, l, mb, g);
            if (op.kind == OpKind::Backward) layer_bwd_weight(R, l, mb);
          }
          R.grad_out[{c, mb}] = g;
        }
        return;
      }
      case OpKind::BackwardWeight:
        for (int l = op.layer_begin; l < op.layer_end; ++l) layer_bwd_weight(R, l, mb);
        return;
      case OpKind::Update:
        for (auto [l, g] : R.grad) R.updated[l] = R.weight.at(l) - g;
        return;
      default:
        fail("collective op run alone: " + describe(op));
    }
  }

  void run_collective(const Collective& col, const OpContext&) override {
    const Op& first = plan.op(col.ops.front());
    for (auto id : col.ops) {
      const Op& o = plan.op(id);
      if (o.layer_begin != first.layer_begin || o.layer_end != first.layer_end ||
          o.microbatch != first.microbatch || o.phase != first.phase || o.group != first.group)
        fail("collective members disagree: " + describe(first) + " vs " + describe(o));
    }
    if (col.kind == OpKind::AllReduce && col.group == Group::Dense) {
      for (int l = first.layer_begin; l < first.layer_end; ++l) {
        std::uint64_t sum = 0;  // members in rank order: a fixed reduction order
        for (int r : col.ranks) sum += ranks[static_cast<std::size_t>(r)].grad[l];
        for (int r : col.ranks) ranks[static_cast<std::size_t>(r)].grad[l] = sum;
      }
    }
    if (col.kind == OpKind::Broadcast && col.group == Group::Dense) {
      const Rank& root = ranks[static_cast<std::size_t>(col.ranks.front())];
      for (int r : col.ranks)
        for (int l = first.layer_begin; l < first.layer_end; ++l)
          ranks[static_cast<std::size_t>(r)].weight[l] = root.weight.at(l);
    }
  }
};

struct Result {
  std::vector<std::uint64_t> losses;
  std::map<int, std::uint64_t> weights;  // layer -> updated weight (checked equal on all holders)
};

Result run_toy(const RunConfig& c, bool broadcast, std::vector<std::string>& errors) {
  const Plan plan = compile_plan(c, PlanOptions{.broadcast_model = broadcast});
  Toy toy(plan);
  if (broadcast) toy.clear_non_roots();
  Engine engine(plan, toy, EngineOptions{.workers = 2, .cost = CostModel::unit()});
  engine.run();
  errors.insert(errors.end(), toy.errors.begin(), toy.errors.end());
  Result res;
  res.losses = toy.losses;
  for (int r = 0; r < plan.world(); ++r)
    for (auto [l, w] : toy.ranks[static_cast<std::size_t>(r)].updated) {
      auto [it, fresh] = res.weights.try_emplace(l, w);
      if (!fresh && it->second != w)
        errors.push_back("rank " + std::to_string(r) + " disagrees on layer " + std::to_string(l));
    }
  return res;
}

TEST(ToyParity, EverySplitComputesTheSameNumbers) {
  RunConfig one;
  one.layers = 8;
  one.experts = 8;
  one.microbatches = 8;  // the global batch: 8 microbatches
  std::vector<std::string> errors;
  const Result ref = run_toy(one, false, errors);
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(ref.weights.size(), 8u);
  for (auto l : ref.losses) ASSERT_NE(l, 0u);

  struct Split { int dp, ep, pp, v; Schedule s; };
  const std::vector<Split> splits = {
      {2, 1, 1, 1, Schedule::OneFOneB},    {4, 1, 1, 1, Schedule::OneFOneB},
      {2, 2, 1, 1, Schedule::OneFOneB},    {4, 4, 1, 1, Schedule::OneFOneB},
      {1, 1, 2, 1, Schedule::OneFOneB},    {1, 1, 4, 1, Schedule::OneFOneB},
      {1, 1, 2, 1, Schedule::GPipe},       {1, 1, 2, 2, Schedule::Interleaved},
      {1, 1, 4, 1, Schedule::ZeroBubbleH1}, {2, 2, 2, 1, Schedule::OneFOneB},
      {2, 2, 2, 2, Schedule::Interleaved}, {2, 2, 2, 1, Schedule::ZeroBubbleH1},
      {4, 2, 2, 1, Schedule::GPipe},
  };
  for (const Split& sp : splits)
    for (bool broadcast : {false, true}) {
      RunConfig c = one;
      c.dp = sp.dp;
      c.ep = sp.ep;
      c.pp = sp.pp;
      c.vstages = sp.v;
      c.schedule = sp.s;
      c.microbatches = one.microbatches / sp.dp;  // each dp rank takes its share
      const std::string name = "dp=" + std::to_string(sp.dp) + " ep=" + std::to_string(sp.ep) +
                               " pp=" + std::to_string(sp.pp) + " v=" + std::to_string(sp.v) +
                               " " + std::string(to_string(sp.s)) +
                               (broadcast ? " +broadcast" : "");
      errors.clear();
      const Result r = run_toy(c, broadcast, errors);
      EXPECT_TRUE(errors.empty()) << name << ": " << errors.front();
      EXPECT_EQ(r.losses, ref.losses) << name;
      EXPECT_EQ(r.weights, ref.weights) << name;
    }
}

TEST(ToyParity, AMissingBroadcastShows) {
  // Without the broadcast, ranks other than the root have no weights: the run must fail,
  // which shows the broadcast in the plan really carries them.
  RunConfig c;
  c.layers = 4;
  c.dp = 2;
  c.microbatches = 2;
  const Plan plan = compile_plan(c);  // no broadcast
  Toy toy(plan);
  toy.clear_non_roots();
  Engine engine(plan, toy, EngineOptions{.workers = 2});
  EXPECT_THROW(engine.run(), std::out_of_range);
}

}  // namespace
}  // namespace onegpu::trainer
