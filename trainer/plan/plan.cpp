#include "trainer/plan/plan.h"

#include <iterator>
#include <map>
#include <string>
#include <tuple>

#include "trainer/error.h"
#include "trainer/plan/schedule.h"

namespace onegpu::trainer {

// >>op-kinds: the one table of op kinds (see OpKindInfo in plan.h).
namespace {
constexpr OpKindInfo kOpKinds[] = {
    {OpKind::Broadcast, "broadcast", "broadcast", "broadcast", EventKind::Broadcast},
    {OpKind::Forward, "forward", "F", "F", EventKind::Forward},
    {OpKind::Backward, "backward", "B", "B", EventKind::Backward},
    {OpKind::BackwardInput, "backward-input", "Bi", "B (input)", EventKind::Backward},
    {OpKind::BackwardWeight, "backward-weight", "W", "W", EventKind::WeightGradient},
    {OpKind::Send, "send", "send", "send", EventKind::Send},
    {OpKind::Recv, "recv", "recv", "recv", EventKind::Recv},
    {OpKind::AllToAll, "all-to-all", "a2a", "all-to-all", EventKind::AllToAll},
    {OpKind::AllReduce, "all-reduce", "all-reduce", "all-reduce", EventKind::AllReduce},
    {OpKind::ReduceScatter, "reduce-scatter", "reduce-scatter", "reduce-scatter", EventKind::ReduceScatter},
    {OpKind::AllGather, "all-gather", "all-gather", "all-gather", EventKind::AllGather},
    {OpKind::Update, "update", "update", "update", EventKind::Update},
};
constexpr bool rows_follow_the_enum() {
  for (int i = 0; i < kOpKindCount; ++i)
    if (static_cast<int>(kOpKinds[i].kind) != i) return false;
  return true;
}
static_assert(std::size(kOpKinds) == kOpKindCount, "kOpKinds needs one row per OpKind: add the new kind's row");
static_assert(rows_follow_the_enum(), "kOpKinds rows must be in OpKind order");
}  // namespace

const OpKindInfo& op_kind_info(OpKind k) {
  const auto i = static_cast<std::size_t>(k);
  if (i >= std::size(kOpKinds)) throw Error("plan: unknown op kind " + std::to_string(i));
  return kOpKinds[i];
}

std::string kind_label(const Op& op, bool trace) {
  // Built by appending only: GCC 12 warns falsely (-Wrestrict) on assign-then-append here.
  const OpKindInfo& k = op_kind_info(op.kind);
  std::string s;
  s.reserve(32);
  auto add = [&](std::string_view x) { s.append(x.data(), x.size()); };
  add(trace ? k.trace_label : k.short_label);
  switch (op.kind) {
    case OpKind::Send:
    case OpKind::Recv: add(op.payload == Payload::Activation ? " act" : " grad"); break;
    case OpKind::AllToAll: add(" "); add(to_string(op.phase)); break;
    case OpKind::AllReduce:
    case OpKind::ReduceScatter:
    case OpKind::AllGather:
    case OpKind::Broadcast: add(" "); add(to_string(op.group)); break;
    default: break;
  }
  return s;
}

std::string_view to_string(OpKind k) { return op_kind_info(k).name; }
std::string_view to_string(Part p) {
  switch (p) {
    case Part::Chunk: return "chunk";
    case Part::Attention: return "attention";
    case Part::Experts: return "experts";
    case Part::Combine: return "combine";
  }
  return "?";
}
std::string_view to_string(AllToAllPhase p) {
  switch (p) {
    case AllToAllPhase::None: return "none";
    case AllToAllPhase::DispatchFwd: return "dispatch";
    case AllToAllPhase::CombineFwd: return "combine";
    case AllToAllPhase::CombineBwd: return "combine-backward";
    case AllToAllPhase::DispatchBwd: return "dispatch-backward";
  }
  return "?";
}
std::string_view to_string(Group g) {
  switch (g) {
    case Group::None: return "none";
    case Group::Dense: return "dense";
    case Group::Expert: return "expert";
    case Group::AllToAll: return "all-to-all";
  }
  return "?";
}

std::string describe(const Op& op) {
  // Appends only (see kind_label).
  std::string s = kind_label(op, /*trace=*/false);
  auto add = [&](std::string_view a, const std::string& b) {
    s.append(a.data(), a.size());
    s.append(b);
  };
  if (op.part != Part::Chunk) add(" ", std::string(to_string(op.part)));
  if (op.chunk >= 0) add(" c", std::to_string(op.chunk));
  if (op.layer_begin >= 0) {
    add(" L", std::to_string(op.layer_begin));
    if (op.layer_end != op.layer_begin + 1) add("-", std::to_string(op.layer_end - 1));
  }
  if (op.microbatch >= 0) add(" mb", std::to_string(op.microbatch));
  if (op.kind == OpKind::Send) add(" to ", std::to_string(op.peer));
  if (op.kind == OpKind::Recv) add(" from ", std::to_string(op.peer));
  add(" @r", std::to_string(op.rank));
  return s;
}

namespace {

struct Bytes {
  std::int64_t activation;        // a microbatch's hidden states at a chunk boundary
  std::int64_t dispatch;          // a microbatch's routed token copies in one layer
  std::int64_t dense_per_layer;   // parameters
  std::int64_t expert_params;     // one expert's parameters
  std::int64_t embedding, head;
};

Bytes bytes_of(const RunConfig& c) {
  const PlanSizes& z = c.sizes;
  Bytes b;
  b.activation = z.tokens_per_microbatch * z.d_model * z.activation_bytes_per_value;
  b.dispatch = b.activation * c.top_k;
  const std::int64_t d = z.d_model;
  // Defaults when the model does not say: attention 4d² + two norms + router d·E; an MLP
  // expert with hidden 4d has 8d² weights.
  b.dense_per_layer = z.dense_params_per_layer ? z.dense_params_per_layer
                                               : 4 * d * d + 2 * d + d * c.experts;
  b.expert_params = z.params_per_expert ? z.params_per_expert : 8 * d * d;
  b.embedding = z.embedding_params;
  b.head = z.head_params;
  return b;
}

class Builder {
 public:
  explicit Builder(Plan& plan) : p_(plan), cfg_(plan.config), L_(plan.layout), b_(bytes_of(cfg_)) {
    p_.programs.assign(static_cast<std::size_t>(L_.world()), {});
  }

  void rank_program(int rank, const std::vector<ScheduleItem>& order, const PlanOptions& opt) {
    rank_ = rank;
    coord_ = L_.coord(rank);
    counters_.clear();
    const std::vector<int> chunks = L_.chunks_of_stage(coord_.stage);
    if (opt.broadcast_model) {
      for (int c : chunks)
        for (int l = L_.first_layer(c); l < L_.end_layer(c); ++l) {
          Op o = base(OpKind::Broadcast, c, l, l + 1, -1);
          o.bytes = dense_params(c, l, l + 1) * cfg_.sizes.weight_bytes_per_param;
          collective(o, Group::Dense);
          o.bytes = expert_params(l, l + 1) * cfg_.sizes.weight_bytes_per_param;
          collective(o, Group::Expert);
        }
    }
    // ZeRO-1: the weights the previous step's update made, gathered before the first forward.
    if (cfg_.zero == 1 && !opt.broadcast_model)
      for (int c : chunks) {
        Op o = base(OpKind::AllGather, c, L_.first_layer(c), L_.end_layer(c), -1);
        o.bytes = dense_params(c, o.layer_begin, o.layer_end) * cfg_.sizes.weight_bytes_per_param;
        collective(o, Group::Dense);
        o.bytes = expert_params(o.layer_begin, o.layer_end) * cfg_.sizes.weight_bytes_per_param;
        collective(o, Group::Expert);
      }
    for (const ScheduleItem& it : order) {
      const int c = chunks[static_cast<std::size_t>(it.local_chunk)];
      switch (it.pass) {
        case Pass::F: forward(c, it.microbatch); break;
        case Pass::B:
          backward(c, it.microbatch,
                   cfg_.schedule == Schedule::ZeroBubbleH1 ? OpKind::BackwardInput
                                                           : OpKind::Backward);
          break;
        case Pass::W:
          emit(base(OpKind::BackwardWeight, c, L_.first_layer(c), L_.end_layer(c),
                    it.microbatch));
          break;
      }
    }
    // Gradients are averaged once per step, chunk by chunk, the last chunk (done first) first.
    for (auto it = chunks.rbegin(); it != chunks.rend(); ++it) {
      const int c = *it;
      Op o = base(cfg_.zero == 1 ? OpKind::ReduceScatter : OpKind::AllReduce, c, L_.first_layer(c), L_.end_layer(c), -1);
      o.bytes = dense_params(c, o.layer_begin, o.layer_end) * cfg_.sizes.grad_bytes_per_param;
      collective(o, Group::Dense);
      o.bytes = expert_params(o.layer_begin, o.layer_end) * cfg_.sizes.grad_bytes_per_param;
      collective(o, Group::Expert);
    }
    emit(base(OpKind::Update, -1, -1, -1, -1));
  }

  void finish() {
    // Pair sends with receives.
    for (auto& [key, pair] : p2p_) {
      if (pair.first < 0 || pair.second < 0)
        throw Error("internal: unpaired send/recv in compiled plan");
      p_.ops[static_cast<std::size_t>(pair.first)].match = pair.second;
      p_.ops[static_cast<std::size_t>(pair.second)].match = pair.first;
    }
    for (const Collective& c : p_.collectives)
      if (c.ops.size() != c.ranks.size() || c.ops.empty())
        throw Error("internal: incomplete collective in compiled plan");
  }

 private:
  std::int64_t dense_params(int chunk, int l0, int l1) const {
    std::int64_t n = b_.dense_per_layer * (l1 - l0);
    if (chunk == 0 && l0 == 0) n += b_.embedding;
    if (chunk == cfg_.chunks() - 1 && l1 == cfg_.layers) n += b_.head;
    return n;
  }
  std::int64_t expert_params(int l0, int l1) const {
    return b_.expert_params * cfg_.experts_per_rank() * (l1 - l0);
  }

  Op base(OpKind kind, int chunk, int l0, int l1, int mb) const {
    Op o;
    o.kind = kind;
    o.rank = rank_;
    o.stage = coord_.stage;
    o.chunk = chunk;
    o.layer_begin = l0;
    o.layer_end = l1;
    o.microbatch = mb;
    return o;
  }

  std::uint32_t emit(Op o) {
    o.id = static_cast<std::uint32_t>(p_.ops.size());
    p_.ops.push_back(o);
    p_.programs[static_cast<std::size_t>(rank_)].push_back(o.id);
    return o.id;
  }

  // Adds this rank's op for the next collective of its group; skipped for groups of one.
  void collective(Op o, Group g) {
    std::vector<int> members;
    int gid = 0;
    switch (g) {
      case Group::Dense: members = L_.dense_group(rank_); gid = L_.dense_group_id(rank_); break;
      case Group::Expert: members = L_.expert_group(rank_); gid = L_.expert_group_id(rank_); break;
      case Group::AllToAll:
        members = L_.all_to_all_group(rank_);
        gid = L_.all_to_all_group_id(rank_);
        break;
      case Group::None: break;
    }
    if (members.size() < 2) return;
    o.group = g;
    if (o.kind == OpKind::Broadcast) o.peer = members.front();
    // Members emit the same collectives in the same order, so the n-th call of a group on
    // every member is the same collective.
    const auto key = std::make_tuple(static_cast<int>(g), gid, counters_[{static_cast<int>(g), gid}]++);
    auto [it, fresh] = coll_index_.try_emplace(key, static_cast<int>(p_.collectives.size()));
    if (fresh) {
      Collective c;
      c.kind = o.kind;
      c.group = g;
      c.group_id = gid;
      c.bytes = o.bytes;
      p_.collectives.push_back(c);
    }
    Collective& c = p_.collectives[static_cast<std::size_t>(it->second)];
    if (c.kind != o.kind || c.bytes != o.bytes)
      throw Error("internal: members disagree on a collective");
    o.collective = it->second;
    const std::uint32_t id = emit(o);
    c.ranks.push_back(rank_);
    c.ops.push_back(id);
  }

  void p2p(Op o, Payload payload, int from_chunk, int to_chunk, bool send) {
    o.payload = payload;
    o.bytes = b_.activation;
    const int dp = coord_.dp;
    o.peer = L_.rank_of_chunk(send ? to_chunk : from_chunk, dp);
    const std::uint32_t id = emit(o);
    auto& pair = p2p_.try_emplace(std::make_tuple(static_cast<int>(payload), from_chunk,
                                                  o.microbatch, dp),
                                  std::pair<long, long>{-1, -1})
                     .first->second;
    (send ? pair.first : pair.second) = id;
  }

  void all_to_all(int chunk, int layer, int mb, AllToAllPhase phase) {
    Op o = base(OpKind::AllToAll, chunk, layer, layer + 1, mb);
    o.phase = phase;
    o.bytes = b_.dispatch;
    collective(o, Group::AllToAll);
  }

  void forward(int c, int mb) {
    const int l0 = L_.first_layer(c), l1 = L_.end_layer(c);
    if (c > 0) p2p(base(OpKind::Recv, c, l0, l1, mb), Payload::Activation, c - 1, c, false);
    if (cfg_.ep == 1 && !cfg_.op_per_layer) {
      emit(base(OpKind::Forward, c, l0, l1, mb));
    } else if (cfg_.ep == 1) {
      for (int l = l0; l < l1; ++l) emit(base(OpKind::Forward, c, l, l + 1, mb));
    } else {
      for (int l = l0; l < l1; ++l) {
        auto part = [&](Part p) {
          Op o = base(OpKind::Forward, c, l, l + 1, mb);
          o.part = p;
          emit(o);
        };
        part(Part::Attention);
        all_to_all(c, l, mb, AllToAllPhase::DispatchFwd);
        part(Part::Experts);
        all_to_all(c, l, mb, AllToAllPhase::CombineFwd);
        part(Part::Combine);
      }
    }
    if (c + 1 < cfg_.chunks())
      p2p(base(OpKind::Send, c, l0, l1, mb), Payload::Activation, c, c + 1, true);
  }

  void backward(int c, int mb, OpKind kind) {
    const int l0 = L_.first_layer(c), l1 = L_.end_layer(c);
    if (c + 1 < cfg_.chunks())
      p2p(base(OpKind::Recv, c, l0, l1, mb), Payload::Gradient, c + 1, c, false);
    if (cfg_.ep == 1 && !cfg_.op_per_layer) {
      emit(base(kind, c, l0, l1, mb));
    } else if (cfg_.ep == 1 && kind != OpKind::BackwardWeight) {
      for (int l = l1 - 1; l >= l0; --l) emit(base(kind, c, l, l + 1, mb));
    } else if (cfg_.ep == 1) {
      emit(base(kind, c, l0, l1, mb));
    } else {
      for (int l = l1 - 1; l >= l0; --l) {
        auto part = [&](Part p) {
          Op o = base(kind, c, l, l + 1, mb);
          o.part = p;
          emit(o);
        };
        part(Part::Combine);
        all_to_all(c, l, mb, AllToAllPhase::CombineBwd);
        part(Part::Experts);
        all_to_all(c, l, mb, AllToAllPhase::DispatchBwd);
        part(Part::Attention);
      }
    }
    if (c > 0) p2p(base(OpKind::Send, c, l0, l1, mb), Payload::Gradient, c, c - 1, true);
  }

  Plan& p_;
  const RunConfig& cfg_;
  const Layout& L_;
  Bytes b_;
  int rank_ = 0;
  RankCoord coord_;
  std::map<std::pair<int, int>, int> counters_;
  std::map<std::tuple<int, int, int>, int> coll_index_;
  std::map<std::tuple<int, int, int, int>, std::pair<long, long>> p2p_;
};

}  // namespace

Plan compile_plan(const RunConfig& cfg, const PlanOptions& options) {
  Plan plan(cfg);  // validates
  std::vector<std::vector<ScheduleItem>> orders;
  if (cfg.schedule == Schedule::ZeroBubbleH1) {
    orders = zb_h1_orders(cfg.pp, cfg.microbatches);
  } else {
    for (int s = 0; s < cfg.pp; ++s) orders.push_back(stage_order(cfg, s));
  }
  Builder b(plan);
  for (int r = 0; r < plan.world(); ++r)
    b.rank_program(r, orders[static_cast<std::size_t>(plan.layout.coord(r).stage)], options);
  b.finish();
  return plan;
}

void check_plan(const Plan& plan) {
  auto fail = [](const std::string& msg) { throw Error("broken plan: " + msg); };
  std::vector<int> seen(plan.ops.size(), 0);
  if (plan.programs.size() != static_cast<std::size_t>(plan.world()))
    fail("has " + std::to_string(plan.programs.size()) + " programs for " +
         std::to_string(plan.world()) + " ranks");
  for (std::size_t r = 0; r < plan.programs.size(); ++r)
    for (std::uint32_t id : plan.programs[r]) {
      if (id >= plan.ops.size()) fail("rank " + std::to_string(r) + " runs unknown op " + std::to_string(id));
      const Op& o = plan.ops[id];
      if (o.id != id) fail("op " + std::to_string(id) + " carries id " + std::to_string(o.id));
      if (o.rank != static_cast<int>(r)) fail(describe(o) + " is in rank " + std::to_string(r) + "'s program");
      if (seen[id]++) fail(describe(o) + " appears twice");
    }
  for (const Op& o : plan.ops) {
    if (!seen[o.id]) fail(describe(o) + " is in no program");
    if (o.kind == OpKind::Send || o.kind == OpKind::Recv) {
      const OpKind want = o.kind == OpKind::Send ? OpKind::Recv : OpKind::Send;
      if (o.match < 0 || static_cast<std::size_t>(o.match) >= plan.ops.size())
        fail(describe(o) + " has no matching " + std::string(to_string(want)));
      const Op& m = plan.ops[static_cast<std::size_t>(o.match)];
      if (m.kind != want || m.match != static_cast<int>(o.id) || m.rank != o.peer ||
          m.peer != o.rank || m.microbatch != o.microbatch || m.payload != o.payload)
        fail(describe(o) + " and " + describe(m) + " do not match");
    }
    if (o.collective >= 0) {
      if (static_cast<std::size_t>(o.collective) >= plan.collectives.size())
        fail(describe(o) + " names an unknown collective");
      const Collective& c = plan.collectives[static_cast<std::size_t>(o.collective)];
      bool member = false;
      for (std::size_t i = 0; i < c.ops.size(); ++i)
        member |= c.ops[i] == o.id && c.ranks[i] == o.rank;
      if (!member || c.kind != o.kind) fail(describe(o) + " is not a member of its collective");
    }
  }
  for (std::size_t i = 0; i < plan.collectives.size(); ++i) {
    const Collective& c = plan.collectives[i];
    if (c.ops.size() != c.ranks.size() || c.ops.size() < 2)
      fail("collective " + std::to_string(i) + " has " + std::to_string(c.ops.size()) + " members");
    for (std::uint32_t id : c.ops)
      if (id >= plan.ops.size() || plan.ops[id].collective != static_cast<int>(i))
        fail("collective " + std::to_string(i) + " lists an op that is not its member");
  }
}

}  // namespace onegpu::trainer
