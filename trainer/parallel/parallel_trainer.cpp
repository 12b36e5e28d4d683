#include "trainer/parallel/parallel_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <tuple>
#include <functional>
#include <mutex>
#include <thread>

#include "trainer/error.h"
#include "trainer/ops/start_threads.h"
#include "trainer/io/safetensors.h"
#include "trainer/device.h"
#include "trainer/dist/comm.h"
#include "trainer/memory/pool_warmer.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/parallel/expert_grad_rows.h"
#include "trainer/parallel/weight_cache.h"
#include "trainer/train/limits.h"

namespace onegpu::trainer {

// Index of this file (grep for "[SECTION]"):
//   Configuration     parallel_run_config: the plan's sizes from the real model
//   Free helpers      charged buffers, row ranges, for_ranks
//   Rank state        ParallelTrainer::Impl: what each rank holds, what a step carries
//   Building          the constructor: plans, the whole model once, every rank's shard
//   ZeRO-1            which pieces of the optimizer state each rank keeps; the gradient norm
//   Replicas          one copy of the weights and optimizer state per expert group; one
//                     fp32 copy of its weights a step (weight_cache.h)
//   Rank helpers      a rank's microbatches, events and probes, routes
//   Ops of a rank     the runner: forward, backward (B and W), send, receive, update
//   Collectives       all-reduce, broadcast, reduce-scatter, all-gather, all-to-all (phases)
//   One process       a rank's program run alone, its collectives and hand-offs through Comm
//   A step            begin(): the batch and fresh state; finish(): AdamW and the record
//   Public API        ParallelTrainer's methods
//   Checkpoints       the unsharded layout: gather and scatter, save, load, replicas_agree

// [SECTION] Configuration
RunConfig parallel_run_config(const ModelConfig& m, const ParallelOptions& o) {
  RunConfig c;
  c.layers = m.n_layers;
  c.experts = m.n_experts;
  c.top_k = m.top_k;
  c.dp = o.dp;
  c.ep = o.ep;
  c.pp = o.pp;
  c.vstages = o.vstages;
  c.microbatches = o.microbatches;
  c.schedule = o.schedule;
  c.op_per_layer = o.op_per_layer;
  c.zero = o.zero;
  validate(c);
  const int S = o.seq_len > 0 ? o.seq_len : m.seq_len;
  if (S > m.seq_len)
    throw Error("sequence length " + std::to_string(S) + " is longer than the model's " + std::to_string(m.seq_len));
  if (o.batch <= 0) throw Error("batch must be positive");
  if (o.batch % (o.dp * o.microbatches) != 0)
    throw Error("the global batch of " + std::to_string(o.batch) + " texts does not split evenly over dp × microbatches = " +
                std::to_string(o.dp) + " × " + std::to_string(o.microbatches));
  const std::int64_t D = m.d_model, E = m.n_experts;
  PlanSizes& z = c.sizes;
  z.tokens_per_microbatch = (std::int64_t)(o.batch / (o.dp * o.microbatches)) * S;
  z.d_model = D;
  z.dense_params_per_layer = 4 * D * D + 2 * D + D * E;
  z.params_per_expert = 2 * D * m.expert_hidden;
  z.embedding_params = (std::int64_t)m.vocab * D;
  z.head_params = D + D * m.vocab;
  return c;
}

void check_process_options(const ParallelOptions& o) {
  const std::string why = o.device != "cpu" && o.device != "cuda" ? "ranks on a " + o.device + " device"
                          : o.separate_first_copy                  ? "separate first copies"
                                                                   : "";
  if (!why.empty()) throw Error("one process per rank does not run " + why + " yet");
}

// [SECTION] Free helpers
namespace {

Buffer<float> floats(MemoryTracker& t, MemCategory c, std::size_t n) { return Buffer<float>(t, c, n, false); }

// A receive buffer of n floats: charged to the receiver while the data goes straight to where
// it keeps it (Charge). Transfers into ranks are charged so throughout: the figures are a
// device's, the copy through the buffer would only be the host's.
Charge received(MemoryTracker& t, std::size_t n) { return Charge(t, MemCategory::Communication, n * sizeof(float)); }

bool dense_kind(ParamKind k) { return k != ParamKind::Expert; }

// Rows a token rank sends to / receives from the rank holding expert slice j: [a, b).
struct RowRange {
  int a = 0, b = 0;
  int n() const { return b - a; }
};

// fn(r) for every rank on a few threads (ranks are independent); rethrows the first error.
void for_ranks(int world, const std::function<void(int)>& fn) {
  const int threads = std::max(1, std::min<int>(world, (int)std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors((std::size_t)threads);
  start_threads(pool, threads, "a rank set-up", [&](int w) {
    try {
      for (int r = w; r < world; r += threads) fn(r);
    } catch (...) {
      errors[(std::size_t)w] = std::current_exception();
    }
  });
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

// [SECTION] Rank state
struct ParallelTrainer::Impl final : OpRunner {
  // What an expert rank holds of one layer and microbatch: the rows every member of its
  // all-to-all group sent it, source by source.
  struct ExpertWork {
    // The received rows are held expert by expert and, within an expert, source by source in
    // member order: each experts op is one call over all of them (one fp32 copy of the weights
    // per op, not one per source), and an expert's weight gradient still sums its rows in the
    // order the per-source calls did (matmul accumulates over rows in order, cpu_matmul.cpp).
    std::vector<std::int32_t> offsets;  // per local expert e: its rows [offsets[e], offsets[e+1])
    std::vector<std::int32_t> at;       // [source * experts_per_rank + e]: first row from that source
    ExpertCache cache;                  // xe, u, a, y of all received rows
    Buffer<float> dy, dxe, du;          // du: kept for W under ZB-H1
  };
  struct Rank {
    RankCoord coord;
    std::unique_ptr<MemoryTracker> tracker;
    std::unique_ptr<Backend> backend;  // a CpuBackend, or a device's (ParallelOptions::device)
    std::unique_ptr<Model> model;
    std::map<std::pair<int, int>, MicrobatchState> states;  // (chunk, microbatch)
    std::vector<MicrobatchState> spare;  // released states, for start_state to reuse
    std::map<std::pair<int, int>, ExpertWork> work;          // (layer, microbatch)
    // By layer: the rows of the step's expert weight gradients so far (CPU ranks; made on
    // first use, kept from step to step).
    std::vector<std::unique_ptr<ExpertGradRows>> grad_rows;
    double sq = 0.0;  // Update: this rank's share of the squared gradient norm
    std::vector<Event> mem_events;
    std::vector<std::int64_t> routed;  // [layer * E + expert]: rows this rank's routers chose
    std::map<std::tuple<int, int>, std::int64_t> sent_to;  // (layer, peer) -> rows, dispatch
    // ZeRO-1: this rank's pieces of the optimizer state (the ParamStore's own master and
    // moments are released).
    std::vector<OptimizerPiece> pieces;
    Buffer<float> master, adam_m, adam_v;  // Optimizer
  };
  struct Wire {
    Buffer<float> data;  // on the sender's tracker, Communication, until received
  };
  using Ranges = std::vector<std::pair<std::int64_t, std::int64_t>>;  // (flat offset, count) in a store

  ModelConfig mc;
  ParallelOptions opt;
  std::vector<ParamTensor> whole_tensors;  // every tensor of the model, in the unsharded layout
  const TokenDataset& train;
  RunConfig rc;
  std::unique_ptr<Plan> first_plan, steady_plan;
  std::unique_ptr<Engine> first_engine, steady_engine;
  const Plan* last_plan = nullptr;
  Timeline last_timeline;
  std::vector<Rank> ranks;
  std::vector<Wire> wires;  // by send op id
  Rng data_rng;
  int step_ = 0;
  int S = 0, per = 0;  // tokens per text, texts per microbatch
  // Of the current step:
  Batch global;
  // Token rows each rank's forward dispatch sent to another rank, per layer: what the
  // all-to-all really moved (collectives of different layers may run on different workers).
  std::mutex rows_mu;
  std::vector<std::vector<std::int64_t>> rows_away;  // [rank][layer]
  int global_targets = 0;
  LossScales sc;
  std::vector<double> ce;   // by global microbatch
  std::vector<double> aux;  // by (global microbatch, chunk)
  // Set-up and the first step: the host pool's pages brought in ahead of use on idle cores
  // (pool_warmer.h), about what set-up and the first step cut: at 512 ranks 2.25 MiB a rank,
  // the updating ranks' arrays (HugePageArrays, 0.9 MiB a rank) and the first step's blocks.
  std::unique_ptr<HostPoolWarmer> warmer;

  // [SECTION] Building
  Impl(ModelConfig m, const ParallelOptions& o, const TokenDataset& t)
      : mc(std::move(m)), opt(o), train(t), data_rng(o.seed ^ 0xda7a5eedull) {
    opt.optim.total_steps = opt.steps;
    opt.optim.validate();
    rc = parallel_run_config(mc, opt);
    S = opt.seq_len > 0 ? opt.seq_len : mc.seq_len;
    per = opt.batch / (opt.dp * opt.microbatches);
    auto tp = std::chrono::steady_clock::now();
    auto lap = [&](const char* what) {
      if (!std::getenv("ONEGPU_PAR_TIMING")) return;
      auto now = std::chrono::steady_clock::now();
      std::fprintf(stderr, "[parallel] %s %.2f s\n", what, std::chrono::duration<double>(now - tp).count());
      tp = now;
    };
    if (opt.comm) check_process_options(opt);
    if (!opt.comm && opt.device == "cpu" && !opt.make_backend)
      warmer = std::make_unique<HostPoolWarmer>((std::size_t)(opt.dp * opt.pp) * (std::size_t{9} << 18));  // 2.25 MiB a rank
    steady_plan = std::make_unique<Plan>(compile_plan(rc));
    if (opt.broadcast_first_step) first_plan = std::make_unique<Plan>(compile_plan(rc, PlanOptions{.broadcast_model = true}));

    const Layout& L = steady_plan->layout;
    const int world = L.world();
    ranks.resize((std::size_t)world);
    if (opt.comm) {
      if (opt.comm->world() != world)
        throw Error("the split has " + std::to_string(world) + " ranks (pp × dp = " + std::to_string(rc.pp) + " × " +
                    std::to_string(rc.dp) + ") but the run has " + std::to_string(opt.comm->world()) + " processes");
      me = opt.comm->rank();
      for (int r = 0; r < world; ++r) ranks[(std::size_t)r].coord = L.coord(r);  // others: who they are, no state
    }
    {
      MemoryTracker init_tracker;  // the whole model, once, to share out
      lap("plans");
      ParamStore whole(mc, init_tracker);
      // Only its master weights are read (each rank converts its own part to bf16).
      whole.init_master(opt.seed, std::max(1, (int)std::thread::hardware_concurrency()));
      whole_tensors = whole.tensors();
      lap("whole model");
      // Ranks are independent: build them on a few threads (first touch of their memory
      // dominates at 512 ranks).
      auto build = [&](int r) {
        Rank& R = ranks[(std::size_t)r];
        R.coord = L.coord(r);
        R.tracker = std::make_unique<MemoryTracker>();
        R.backend = make_rank_backend(*R.tracker);
        ParamShard sh;
        sh.layers.assign((std::size_t)mc.n_layers, false);
        for (int c : L.chunks_of_stage(R.coord.stage))
          for (int l = L.first_layer(c); l < L.end_layer(c); ++l) sh.layers[(std::size_t)l] = true;
        sh.first_expert = L.first_expert(r);
        sh.expert_count = L.expert_count();
        sh.embedding = R.coord.stage == L.stage_of_chunk(0);
        sh.head = R.coord.stage == L.stage_of_chunk(rc.chunks() - 1);
        // The store's arrays start as fresh zero pages: only the weights this rank starts with
        // are written. With broadcast_first_step only the first rank of each group has them (the
        // others receive them in the first step); ZeRO-1 takes every rank's optimizer pieces
        // from the initial master weights, so it copies them all and keeps its pieces.
        const bool own_arrays = !shares_from_setup() || replica_owner(r) == r;  // else the owner's (Replicas)
        // An owner writes all of its arrays every step (a member that shares them writes only
        // its dense gradients): in huge pages from the pool's arena (tracker.h).
        std::optional<MemoryTracker::HugePageArrays> huge;
        if (own_arrays) huge.emplace();
        ParamStore P(mc, *R.tracker, sh);
        huge.reset();
        for (const auto& t : P.tensors()) {
          if (!own_arrays) break;
          const bool root = dense_kind(t.kind) ? R.coord.dp == 0 : R.coord.ep_group == 0;
          const bool has = !opt.broadcast_first_step || root;
          if (!has && !zero1()) continue;
          std::copy_n(whole.master.data() + t.full_offset, t.size(), P.master.data() + t.offset);
          if (has)
            for (std::int64_t i = t.offset; i < t.offset + t.size(); ++i) P.weights[(std::size_t)i] = float_to_bf16(P.master[(std::size_t)i]);
        }
        R.model = std::make_unique<Model>(mc, *R.backend, *R.tracker, std::move(P));
        if (zero1()) shard_optimizer(r);  // each rank's pieces from the initial weights
      };
      if (opt.comm)
        build(me);
      else if (opt.device == "cpu" && !opt.make_backend)
        for_ranks(world, build);
      else  // a device's backends (streams, cuBLAS handles) are made one at a time
        for (int r = 0; r < world; ++r) build(r);
      device_ranks = rank(opt.comm ? me : 0).backend->timed_on_device();
    }
    if (shares_from_setup()) share_replica_state();  // else from the second step (separate_first_copy)
    attach_weight_caches();
    for_ranks(world, [&](int r) {
      if (here(r)) populate_arrays(r);
    });
    lap("shards");
    if (opt.comm) {  // no engine: run_program() runs this rank's program
      opt.comm->prepare_groups(reduced_groups());
      return;
    }
    const int workers = opt.workers;
    EngineOptions eo{.workers = workers, .cost = opt.cost, .events = opt.events, .thread_cpu_costs = opt.thread_cpu_costs};
    steady_engine = std::make_unique<Engine>(*steady_plan, *this, eo);
    if (first_plan) first_engine = std::make_unique<Engine>(*first_plan, *this, eo);
    lap("engines");
  }

  // [SECTION] Device ranks: ranks whose ops queue work on a GPU
  // Each rank has its own backend (a stream); data one rank hands another is copied on the
  // device by a backend ordered after the sender (Backend::after), with no host wait. The CPU's
  // backends do the same copies with memcpy, so both paths share this code.
  bool device_ranks = false;
  std::unique_ptr<Backend> make_rank_backend(MemoryTracker& t) {
    if (opt.make_backend) return opt.make_backend(t);
    if (opt.device == "cuda") return make_device_backend(t, opt.tf32 ? MatmulMath::tf32 : MatmulMath::fp32, opt.cuda_device);
    if (opt.device != "cpu") throw Error("device must be cpu or cuda, got '" + opt.device + "'");
    return std::make_unique<CpuBackend>(t, 1);
  }
  // The backend a collective's copies and sums are issued on (its first member's), ordered
  // after every member's work so far; release() orders every member after it.
  Backend& issuer(const Collective& col) {
    Backend& b = *rank(col.ranks.front()).backend;
    for (std::int32_t r : col.ranks) b.after(*rank(r).backend);
    return b;
  }
  void release(const Collective& col, Backend& b) {
    for (std::int32_t r : col.ranks) rank(r).backend->after(b);
  }
  // The engine takes device ranks' op costs from their CUDA events, after the step's sync.
  bool device_timed() const override { return device_ranks; }
  void device_seconds(const std::vector<std::uint32_t>& ids, std::vector<double>& seconds) override {
    for (Rank& R : ranks) R.backend->sync();
    seconds.clear();
    for (std::uint32_t id : ids) {
      const Op& op = last_plan->op(id);
      seconds.push_back(op.is_compute() ? rank(op.rank).backend->marked_seconds(id) : 0.0);
    }
  }

  // [SECTION] ZeRO-1: the optimizer state split over the copies
  // With dp = 1 every group is of one rank: ZeRO-1 has nothing to split, and the store keeps
  // its own master and moments (by-hand runs read them).
  bool zero1() const { return opt.zero == 1 && opt.dp > 1; }

  // (group, chunk) collectives this rank is a member of (or would be, for groups of one),
  // with its index in the group and the group's size.
  struct GroupPart {
    Group g;
    int chunk, index, size;
  };
  std::vector<GroupPart> group_parts(int r) const {
    const Layout& L = layout();
    const RankCoord at = L.coord(r);
    std::vector<GroupPart> out;
    for (int c : L.chunks_of_stage(at.stage)) {
      out.push_back({Group::Dense, c, at.dp, rc.dp});
      out.push_back({Group::Expert, c, at.ep_group, rc.dp / rc.ep});
    }
    return out;
  }

  // Member `index` of `size`'s piece of the collective over `rg`: flat ranges of its store.
  static Ranges piece_of(const Ranges& rg, int index, int size) {
    const std::int64_t n = count_of(rg);
    const std::int64_t lo = n * index / size, hi = n * (index + 1) / size;
    Ranges out;
    std::int64_t at = 0;
    for (const auto& r : rg) {
      const std::int64_t a = std::max(lo, at), b = std::min(hi, at + r.second);
      if (b > a) out.push_back({r.first + (a - at), b - a});
      at += r.second;
    }
    return out;
  }

  // Keeps only this rank's pieces of the master weights and moments (from the whole store's
  // initial values), and releases the full arrays.
  void shard_optimizer(int r) {
    Rank& R = rank(r);
    ParamStore& P = R.model->params();
    std::int64_t at = 0;
    for (const GroupPart& gp : group_parts(r))
      for (const auto& [flat, n] : piece_of(ranges(P, gp.g, gp.chunk, layout().first_layer(gp.chunk), layout().end_layer(gp.chunk)),
                                            gp.index, gp.size)) {
        R.pieces.push_back({flat, n, at});
        at += n;
      }
    R.master = Buffer<float>(*R.tracker, MemCategory::Optimizer, (std::size_t)at, false);
    R.adam_m = Buffer<float>(*R.tracker, MemCategory::Optimizer, (std::size_t)at);
    R.adam_v = Buffer<float>(*R.tracker, MemCategory::Optimizer, (std::size_t)at);
    for (const OptimizerPiece& pc : R.pieces) std::copy_n(P.master.data() + pc.flat, pc.n, R.master.data() + pc.at);
    P.master = {};
    P.adam_m = {};
    P.adam_v = {};
  }

  // The whole model's gradient norm as the unsharded run sums it: rank by rank, tensor by
  // tensor (each weight counted on its group's first member), each tensor's reduced gradient
  // read from the pieces of the members holding it. Bitwise the unsharded norm, so clipping
  // is too. (A real run all-reduces each rank's partial sum: the same number up to rounding.)
  double zero1_grad_norm() {
    const Layout& L = layout();
    std::vector<float> g;
    double sq = 0.0;
    for (int r = 0; r < (int)ranks.size(); ++r) {
      const Rank& R = ranks[(std::size_t)r];
      const ParamStore& P = R.model->params();
      double s = 0.0;
      for (const auto& t : P.tensors()) {
        const bool dense = dense_kind(t.kind);
        if (!(dense ? R.coord.dp == 0 : R.coord.ep_group == 0)) continue;
        g.assign((std::size_t)t.size(), 0.f);
        // Members of a group hold the same tensors at the same flat offsets.
        for (int member : dense ? L.dense_group(r) : L.expert_group(r))
          for (const OptimizerPiece& pc : ranks[(std::size_t)member].pieces) {
            const std::int64_t a = std::max(pc.flat, t.offset), b = std::min(pc.flat + pc.n, t.offset + t.size());
            if (b > a)
              std::copy_n(ranks[(std::size_t)member].model->params().grads.data() + a, b - a, g.data() + (a - t.offset));
          }
        s += sum_of_squares(g.data(), t.size());
      }
      sq += s;
    }
    return std::sqrt(sq);
  }

  // [SECTION] Replicas: one copy of the state that every member of an expert group holds
  // The members of an expert group (same stage, same expert slice: dp / ep ranks) hold the
  // same shard, and from the first read of their weights on they hold bitwise the same
  // weights, master weights and Adam moments for good: the first step's broadcasts give every
  // member its root's values before any member reads them, every member's gradients are the
  // group's all-reduced sum (the dense ones over a larger group, but the same sum on every
  // member), and AdamW on the same numbers gives the same numbers. So from set-up on the
  // members share the first member's arrays (the first member of a group is the root of its
  // experts, and of the dense weights for the group of slice 0): a broadcast writes only
  // arrays a rank owns, and only the first member runs the update: 1 / (dp / ep) of the
  // memory, of the first step's copies and of the update's work. Each member's tracker is
  // still charged the full arrays (Buffer::shared), which is what a real device holds.
  // Gradients stay per rank (each backward writes its own until the all-reduce). ZeRO-1
  // keeps its own pieces instead.
  bool shared_state = false;
  int replica_owner(int r) const { return layout().expert_group(r).front(); }
  bool shares_replicas() const { return !opt.comm && !zero1() && rc.dp / rc.ep >= 2; }
  // ParallelOptions::separate_first_copy: every member keeps arrays of its own through the first
  // step, so its broadcasts really fill them and a reader can compare the members after it.
  bool shares_from_setup() const { return shares_replicas() && !opt.separate_first_copy; }
  void share_replica_state() {
    if (shared_state || !shares_replicas()) return;
    for (int r = 0; r < (int)ranks.size(); ++r) {
      const int o = replica_owner(r);
      if (o == r) continue;
      ParamStore& P = ranks[(std::size_t)r].model->params();
      ParamStore& Q = ranks[(std::size_t)o].model->params();
      MemoryTracker& t = *ranks[(std::size_t)r].tracker;
      if (P.count() != Q.count()) throw Error("replicas: members of an expert group hold different shards");
      const std::size_t n = (std::size_t)P.count();
      // Released before the shared charge, so the peaks of the step are not counted twice.
      P.weights = {};
      P.weights = Buffer<bf16>::shared(t, MemCategory::Weights, Q.weights.data(), n);
      P.master = {};
      P.master = Buffer<float>::shared(t, MemCategory::Optimizer, Q.master.data(), n);
      P.adam_m = {};
      P.adam_m = Buffer<float>::shared(t, MemCategory::Optimizer, Q.adam_m.data(), n);
      P.adam_v = {};
      P.adam_v = Buffer<float>::shared(t, MemCategory::Optimizer, Q.adam_v.data(), n);
    }
    shared_state = true;
  }

  // The members of an expert group read one fp32 copy of their weights (and of the transposes
  // backward reads) a step instead of widening in every op: WeightCache, made again from the
  // first read after begin() invalidates it. Device backends widen on the device.
  std::vector<std::unique_ptr<WeightCache>> weight_caches;  // by replica owner
  void attach_weight_caches() {
    weight_caches.resize(ranks.size());
    for (int r = 0; r < (int)ranks.size(); ++r) {
      Rank& R = rank(r);
      auto* cpu = dynamic_cast<CpuBackend*>(R.backend.get());
      if (!cpu) continue;  // a device's, or a rank of another process
      std::unique_ptr<WeightCache>& c = weight_caches[(std::size_t)replica_owner(r)];
      if (!c) c = std::make_unique<WeightCache>();
      R.model->set_wide_weights(c.get());
      cpu->set_transposes(c.get());
    }
  }

  // Expert gradients of an expert group, summed without each member's own copy. With ep > 1 a
  // CPU rank's expert weight gradients are made once a step from the rows it was sent
  // (ExpertGradRows), and when the members share one copy of the state (Replicas) only the
  // first member's sum is read: by its update and by the norm. So the rows are kept until the
  // group's all-reduce, which makes the first member's products in its own gradients and each
  // other member's in a scratch array that it adds, in member order: bitwise the sums of
  // products made in every member's gradients, and the other members' expert gradients are
  // never written (nor zeroed, nor faulted in: 512 ranks, about 470 MB a step). The trackers
  // are charged as before.
  bool defer_expert_grads() const { return shares_from_setup() && !device_ranks && rc.ep > 1; }
  // fn(offset, n) for the ranges of rank r's gradients that a step writes, in store order.
  template <class Fn>
  void for_written_grads(int r, Fn fn) {
    const ParamStore& P = rank(r).model->params();
    if (!defer_expert_grads() || replica_owner(r) == r) {
      fn(std::int64_t{0}, P.count());
      return;
    }
    std::int64_t at = 0, n = 0;  // adjacent tensors merged
    for (const auto& t : P.tensors()) {
      if (t.kind == ParamKind::Expert) continue;
      if (t.offset != at + n) {
        if (n > 0) fn(at, n);
        at = t.offset;
        n = 0;
      }
      n += t.size();
    }
    if (n > 0) fn(at, n);
  }

  // The arrays every step writes (gradients; the weights and optimizer state a rank updates)
  // are fresh zero pages until written: they are handed out now, at set-up, rather than
  // faulted in one page at a time by the first step (512 ranks: about 1 GB).
  void populate_arrays(int r) {
    Rank& R = rank(r);
    if (R.tracker->on_device()) return;
    ParamStore& P = R.model->params();
    // The gradients are also written once here, as every step's begin() zeroes them: the 4 KiB
    // pages of the members that share their owner's state (huge pages would bring in their
    // never-written expert gradients too) cost this machine some 1.2 ms a MB at their first
    // write even once populated (about 0.2 s of a 512-rank first step, moved to set-up).
    for_written_grads(r, [&](std::int64_t at, std::int64_t n) {
      populate_pages(P.grads.data() + at, (std::size_t)n * sizeof(float));
      std::fill_n(P.grads.data() + at, n, 0.f);
    });
    if (P.weights.owns()) populate_pages(P.weights.data(), P.weights.size() * sizeof(bf16));
    for (Buffer<float>* b : {&P.master, &P.adam_m, &P.adam_v, &R.master, &R.adam_m, &R.adam_v})
      if (b->owns()) populate_pages(b->data(), b->size() * sizeof(float));
  }

  // [SECTION] Rank helpers: a rank's microbatches, events and probes, routes
  Rank& rank(int r) { return ranks[(std::size_t)r]; }
  int global_mb(const Rank& R, int mb) const { return R.coord.dp * opt.microbatches + mb; }
  bool last_chunk(int c) const { return c == rc.chunks() - 1; }
  const Layout& layout() const { return steady_plan->layout; }

  Batch batch_of(const Rank& R, int mb) const {
    const int g = global_mb(R, mb);
    Batch b;
    b.B = per;
    b.S = S;
    const long a = (long)g * per * S, n = (long)per * S;
    b.inputs.assign(global.inputs.begin() + a, global.inputs.begin() + a + n);
    b.targets.assign(global.targets.begin() + a, global.targets.begin() + a + n);
    return b;
  }

  MicrobatchState& state(Rank& R, int c, int mb) {
    auto it = R.states.find({c, mb});
    if (it == R.states.end()) throw Error("rank state: no microbatch " + std::to_string(mb) + " of chunk " + std::to_string(c));
    return it->second;
  }

  // A microbatch's state is made from one an earlier microbatch of the rank left (Rank::spare):
  // a fresh one allocates a cache for every layer of its chunk for each microbatch of each rank.
  void start_state(Rank& R, int c, int mb) {
    auto [it, fresh] = R.states.try_emplace({c, mb});
    if (fresh && !R.spare.empty()) {
      it->second = std::move(R.spare.back());
      R.spare.pop_back();
    }
    MicrobatchState& st = it->second;
    // Caches for this chunk's layers only: a stage of a 32-layer model runs four of them.
    R.model->begin(st, batch_of(R, mb), layout().first_layer(c), layout().end_layer(c) - layout().first_layer(c));
    if (rc.op_per_layer) st.probe_row = probe_position();  // in the first text
  }

  void end_state(Rank& R, int c, int mb) {
    auto it = R.states.find({c, mb});
    if (it == R.states.end()) throw Error("rank state: no microbatch " + std::to_string(mb) + " of chunk " + std::to_string(c));
    Model::release(it->second);
    R.spare.push_back(std::move(it->second));
    R.states.erase(it);
  }

  void finish_forward(Rank& R, const Op& op, MicrobatchState& st, const OpContext& ctx) {
    const int g = global_mb(R, op.microbatch);
    aux[(std::size_t)(g * rc.chunks() + op.chunk)] = st.aux_sum;
    if (last_chunk(op.chunk)) {
      R.model->head_forward(st, true, sc);
      ce[(std::size_t)g] = st.ce_sum;
      Event e;
      e.rank = op.rank;
      e.kind = EventKind::Loss;
      e.step = step_;
      e.microbatch = op.microbatch;
      e.chunk = (std::int16_t)op.chunk;
      e.virtual_begin = e.virtual_end = ctx.virtual_begin;
      e.value = st.ce_sum / std::max(1, st.n_targets);
      ctx.emit(e);
      if (rc.op_per_layer) next_token_probes(op, st, ctx);
    }
  }

  int probe_position() const { return opt.probe_position >= 0 && opt.probe_position < S ? opt.probe_position : S - 1; }

  // What the head predicts at the probed position of the microbatch's first text (by-hand runs).
  void next_token_probes(const Op& op, const MicrobatchState& st, const OpContext& ctx) {
    const int V = mc.vocab, pos = probe_position();
    if (st.probe_logits.size() != (std::size_t)V) return;
    const float* z = st.probe_logits.data();
    const float zmax = *std::max_element(z, z + V);
    std::vector<double> p((std::size_t)V);
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += p[(std::size_t)v] = std::exp((double)z[v] - zmax);
    for (double& x : p) x /= sum;
    std::vector<int> order((std::size_t)V);
    for (int v = 0; v < V; ++v) order[(std::size_t)v] = v;
    const int k = std::clamp(opt.probe_top, 1, V);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int a, int b) { return p[(std::size_t)a] > p[(std::size_t)b] || (p[(std::size_t)a] == p[(std::size_t)b] && a < b); });
    auto probe = [&](ProbeKind kind, std::int64_t id, double value, int layer) {
      ctx.emit(probe_event(op, ctx, kind, layer, id, value));
    };
    for (int i = std::max(0, pos - 7); i <= pos; ++i) probe(ProbeKind::Context, st.batch.inputs[(std::size_t)i], 0, i);
    for (int i = 0; i < k; ++i) probe(ProbeKind::NextToken, order[(std::size_t)i], p[(std::size_t)order[(std::size_t)i]], pos);
    const std::int32_t target = st.batch.targets[(std::size_t)pos];
    if (target >= 0 && target < V) probe(ProbeKind::Target, target, p[(std::size_t)target], pos);
  }

  // A layer's gradient norm so far (by-hand runs; with one microbatch, its final value).
  void layer_grad_probe(Rank& R, const Op& op, const OpContext& ctx) {
    const ParamStore& P = R.model->params();
    const std::int64_t n = P.layer_layout().size;
    const double norm = std::sqrt(R.backend->sum_squares(P.grads.data() + P.layer_offset(op.layer_begin), n));
    ctx.emit(probe_event(op, ctx, ProbeKind::LayerGradNorm, op.layer_begin, 0, norm));
  }

  Event probe_event(const Op& op, const OpContext& ctx, ProbeKind kind, int layer, std::int64_t id, double value) const {
    Event e;
    e.rank = op.rank;
    e.kind = EventKind::Probe;
    e.detail = (std::uint8_t)kind;
    e.step = step_;
    e.microbatch = op.microbatch;
    e.layer = (std::int16_t)layer;
    e.bytes = id;
    e.value = value;
    e.virtual_begin = e.virtual_end = ctx.virtual_begin;
    return e;
  }

  void memory_event(Rank& R, const Op& op, const OpContext& ctx) {
    Event e;
    e.rank = op.rank;
    e.kind = EventKind::MemoryLevel;
    e.detail = (std::uint8_t)MemCategory::Activations;
    e.step = step_;
    e.microbatch = op.microbatch;
    e.chunk = (std::int16_t)op.chunk;
    e.id = op.id;
    e.virtual_begin = e.virtual_end = ctx.virtual_begin;
    e.bytes = R.tracker->current(MemCategory::Activations);
    R.mem_events.push_back(e);
    ctx.emit(e);  // the level after this op: the app places it at the op's end
  }

  // The router's choices of layer l for this microbatch (rank-owned: no lock).
  void count_routes(Rank& R, const MicrobatchState& st, int l) {
    const auto& off = st.layer(l).routing.offsets;
    if (R.routed.empty()) R.routed.assign((std::size_t)mc.n_layers * mc.n_experts, 0);
    for (int e = 0; e + 1 < (int)off.size() && e < mc.n_experts; ++e)
      R.routed[(std::size_t)l * mc.n_experts + e] += off[(std::size_t)e + 1] - off[(std::size_t)e];
  }

  // Rows of member `src`'s microbatch state destined for expert slice j.
  RowRange rows_for(const MicrobatchState& st, int l, int j) const {
    const auto& off = st.layer(l).routing.offsets;
    const int per_rank = rc.experts_per_rank();
    return {off[(std::size_t)(j * per_rank)], off[(std::size_t)((j + 1) * per_rank)]};
  }

  // [SECTION] Ops of a rank: compute, send, receive, update
  void run(const Op& op, const OpContext& ctx) override {
    Rank& R = rank(op.rank);
    const int c = op.chunk, mb = op.microbatch;
    const int D = mc.d_model;
    if (device_ranks && op.is_compute()) R.backend->mark_begin(op.id);
    switch (op.kind) {
      case OpKind::Forward: forward(R, op, ctx); break;
      case OpKind::Backward:
      case OpKind::BackwardInput:
        backward(R, op);
        if (rc.op_per_layer && op.layer_end == op.layer_begin + 1 && op.part == Part::Chunk) layer_grad_probe(R, op, ctx);
        break;
      case OpKind::BackwardWeight: backward_weight(R, op); break;
      case OpKind::Send: {
        MicrobatchState& st = state(R, c, mb);
        Buffer<float>& src = op.payload == Payload::Activation ? st.x : st.dx;
        Wire& w = wires[op.id];
        w.data = floats(*R.tracker, MemCategory::Communication, src.size());
        R.backend->copy(src.data(), w.data.data(), (std::int64_t)src.size());
        sent(R, op, st);
        break;
      }
      case OpKind::Recv: {
        Wire& w = wires[(std::size_t)op.match];
        if (op.payload == Payload::Activation) start_state(R, c, mb);
        MicrobatchState& st = state(R, c, mb);
        Backend& sender = *rank(ctx.plan.op((std::uint32_t)op.match).rank).backend;
        R.backend->after(sender);  // the send's copy first
        const Charge in = received(*R.tracker, w.data.size());
        Buffer<float> dst = floats(*R.tracker, MemCategory::Activations, w.data.size());
        R.backend->copy(w.data.data(), dst.data(), (std::int64_t)w.data.size());
        sender.after(*R.backend);  // the sender reuses the wire's memory only after this copy
        w.data = {};  // the sender's buffer is free once received
        if (dst.size() != (std::size_t)st.T * D) throw Error("recv: wrong size of " + describe(op));
        (op.payload == Payload::Activation ? st.x : st.dx) = std::move(dst);
        break;
      }
      case OpKind::Update: {
        if (zero1()) break;  // the norm is summed from the pieces after the step (zero1_grad_norm)
        const ParamStore& P = R.model->params();
        double s = 0.0;
        for (const auto& t : P.tensors()) {
          const bool counts = dense_kind(t.kind) ? R.coord.dp == 0 : R.coord.ep_group == 0;
          if (counts) s += R.backend->sum_squares(P.grads.data() + t.offset, t.size());
        }
        R.sq = s;
        break;
      }
      default: throw Error("runner: collective op run alone: " + describe(op));
    }
    if (op.is_compute()) memory_event(R, op, ctx);
    if (device_ranks && op.is_compute()) R.backend->mark_end(op.id);
  }

  // What a rank lets go of once its Send has the data.
  void sent(Rank& R, const Op& op, MicrobatchState& st) {
    if (op.payload == Payload::Activation) {
      st.x = {};  // the next stage continues the residual stream
    } else if (split_w()) {
      st.dx = {};  // the weight part (W) still needs the rest
    } else {
      end_state(R, op.chunk, op.microbatch);
    }
  }

  void forward(Rank& R, const Op& op, const OpContext& ctx) {
    const int c = op.chunk, mb = op.microbatch;
    const Layout& L = layout();
    Model& M = *R.model;
    const bool chunk_start = op.layer_begin == L.first_layer(c);
    const bool chunk_end = op.layer_end == L.end_layer(c);
    if (op.part == Part::Chunk || op.part == Part::Attention) {
      if (chunk_start && c == 0) {
        start_state(R, c, mb);
        M.embed_forward(state(R, c, mb));
      }
    }
    switch (op.part) {
      case Part::Chunk: {
        MicrobatchState& st = state(R, c, mb);
        for (int l = op.layer_begin; l < op.layer_end; ++l) {
          M.layer_forward(l, st);
          count_routes(R, st, l);
        }
        if (chunk_end) finish_forward(R, op, st, ctx);
        break;
      }
      case Part::Attention:
        M.layer_forward_attention(op.layer_begin, state(R, c, mb));
        count_routes(R, state(R, c, mb), op.layer_begin);
        break;
      case Part::Experts: {
        ExpertWork& w = R.work.at({op.layer_begin, mb});
        M.experts_forward(op.layer_begin, w.offsets, w.cache);
        break;
      }
      case Part::Combine: {
        MicrobatchState& st = state(R, c, mb);
        M.layer_forward_combine(op.layer_begin, st);
        if (chunk_end) finish_forward(R, op, st, ctx);
        break;
      }
    }
  }

  // ZB-H1: B makes input gradients, W (later) the weight gradients.
  bool split_w() const { return rc.schedule == Schedule::ZeroBubbleH1; }

  // CPU ranks make the expert weight gradients of rows other ranks sent once a step, from the
  // rows of all its microbatches (ExpertGradRows: bitwise the same gradients, a fraction of
  // the memory traffic). A device's ranks make them microbatch by microbatch.
  bool keeps_grad_rows() const { return !device_ranks; }
  void keep_grad_rows(Rank& R, int l, const ExpertWork& w, const float* du) {
    if (R.grad_rows.empty()) R.grad_rows.resize((std::size_t)mc.n_layers);
    auto& rows = R.grad_rows[(std::size_t)l];
    if (!rows) rows = std::make_unique<ExpertGradRows>(rc.experts_per_rank(), mc.d_model, mc.expert_hidden);
    rows->add(w.offsets, w.cache.xe.data(), w.cache.a.data(), w.dy.data(), du);
    // Every microbatch of the step reaches each of the rank's layers once, in program order.
    if (rows->microbatches() == opt.microbatches && !defer_expert_grads()) rows->apply(*R.model, l);
  }

  void backward_weight(Rank& R, const Op& op) {
    const int mb = op.microbatch;
    MicrobatchState& st = state(R, op.chunk, mb);
    for (int l = op.layer_begin; l < op.layer_end; ++l) {
      R.model->layer_backward_weight(l, st);  // attention and router (and experts when all are here)
      auto it = R.work.find({l, mb});         // experts of this rank, on rows other ranks sent
      if (it != R.work.end()) {
        ExpertWork& w = it->second;
        if (keeps_grad_rows())
          keep_grad_rows(R, l, w, w.du.data());
        else
          R.model->experts_backward_weight(l, w.offsets, w.cache, w.dy.data(), w.du.data());
        R.work.erase(it);
      }
    }
    end_state(R, op.chunk, mb);
  }

  void backward(Rank& R, const Op& op) {
    const int c = op.chunk, mb = op.microbatch;
    const Layout& L = layout();
    Model& M = *R.model;
    const bool chunk_start = op.layer_begin == L.first_layer(c);
    bool done = false;
    switch (op.part) {
      case Part::Chunk: {
        MicrobatchState& st = state(R, c, mb);
        if (op.kind == OpKind::BackwardInput && split_w())
          for (int l = op.layer_end - 1; l >= op.layer_begin; --l) M.layer_backward_input(l, st, sc);
        else
          for (int l = op.layer_end - 1; l >= op.layer_begin; --l) M.layer_backward(l, st, sc);
        done = chunk_start;
        break;
      }
      case Part::Combine: M.layer_backward_combine(op.layer_begin, state(R, c, mb)); break;
      case Part::Experts: {
        ExpertWork& w = R.work.at({op.layer_begin, mb});
        const std::size_t n = w.cache.xe.size();
        w.dxe = floats(*R.tracker, MemCategory::Activations, n);
        const std::size_t n_hidden = n / (std::size_t)mc.d_model * mc.expert_hidden;
        if (op.kind == OpKind::BackwardInput && split_w()) {
          w.du = floats(*R.tracker, MemCategory::Activations, n_hidden);
          M.experts_backward_input(op.layer_begin, w.offsets, w.cache, w.dy.data(), w.dxe.data(), w.du.data());
          w.cache.u = {};
        } else if (keeps_grad_rows()) {  // the input part now, the weight part once a step
          // du is charged as experts_backward charges it (the same peak), and freed with it.
          Buffer<float> du = floats(*R.tracker, MemCategory::Activations, n_hidden);
          M.experts_backward_input(op.layer_begin, w.offsets, w.cache, w.dy.data(), w.dxe.data(), du.data());
          keep_grad_rows(R, op.layer_begin, w, du.data());
          w.cache = ExpertCache{};
          w.dy = {};
        } else {
          M.experts_backward(op.layer_begin, w.offsets, w.cache, w.dy.data(), w.dxe.data());
          w.cache = ExpertCache{};
          w.dy = {};
        }
        break;
      }
      case Part::Attention:
        if (op.kind == OpKind::BackwardInput && split_w())
          M.layer_backward_attention_input(op.layer_begin, state(R, c, mb), sc);
        else
          M.layer_backward_attention(op.layer_begin, state(R, c, mb), sc);
        done = chunk_start;
        break;
    }
    if (done && c == 0) {
      MicrobatchState& st = state(R, c, mb);
      M.embed_backward(st);
      if (!(op.kind == OpKind::BackwardInput && split_w())) {
        end_state(R, c, mb);
      }
    }
  }

  // [SECTION] Collectives: all-reduce, broadcast, reduce-scatter, all-gather, all-to-all
  void run_collective(const Collective& col, const OpContext& ctx) override {
    const Plan& plan = ctx.plan;
    const Op& first = plan.op(col.ops.front());
    Backend& b = issuer(col);  // every copy and sum below is issued on b
    switch (col.kind) {
      case OpKind::AllReduce: all_reduce(col, first, b); break;
      case OpKind::Broadcast: broadcast(col, first, b); break;
      case OpKind::ReduceScatter: reduce_scatter(col, first, b); break;
      case OpKind::AllGather: all_gather(col, first, b); break;
      case OpKind::AllToAll: all_to_all(col, first, b); break;
      default: throw Error("runner: unexpected collective " + describe(first));
    }
    release(col, b);
  }

  // Flat ranges [offset, offset + n) of a member's shard that a collective over layers
  // [l0, l1) of chunk c covers, in the same order on every member.
  Ranges ranges(const ParamStore& P, Group g, int c, int l0, int l1) const {
    Ranges out;
    const auto& LL = P.layer_layout();
    if (g == Group::Dense) {
      if (c == 0 && l0 == 0) out.push_back({P.embed_offset(), (std::int64_t)mc.vocab * mc.d_model});
      for (int l = l0; l < l1; ++l) out.push_back({P.layer_offset(l), LL.experts});
      if (last_chunk(c) && l1 == mc.n_layers) out.push_back({P.final_norm_offset(), P.count() - P.final_norm_offset()});
    } else {
      for (int l = l0; l < l1; ++l) out.push_back({P.layer_offset(l) + LL.experts, LL.size - LL.experts});
    }
    return out;
  }

  // Every member's ranges for the collective `first` belongs to, member by member.
  std::vector<Ranges> member_ranges(const Collective& col, const Op& first) const {
    std::vector<Ranges> rg;
    for (std::int32_t r : col.ranks)
      rg.push_back(ranges(ranks[(std::size_t)r].model->params(), col.group, first.chunk, first.layer_begin, first.layer_end));
    return rg;
  }
  static std::int64_t count_of(const Ranges& rg) {
    std::int64_t n = 0;
    for (const auto& r : rg) n += r.second;
    return n;
  }

  // Range k of every member's gradients, member by member: what each sends. Each member is
  // charged a communication buffer for it (in `sent`, until the caller drops them); the sums
  // read the gradients in place, each element before any member's copy of it is written.
  std::vector<float*> sent_gradients(const Collective& col, const std::vector<Ranges>& rg, std::size_t k,
                                     const char* what, std::vector<Charge>& sent) {
    const std::int64_t n = rg[0][k].second;
    std::vector<float*> g;
    for (std::size_t i = 0; i < col.ranks.size(); ++i) {
      Rank& R = rank(col.ranks[i]);
      if (rg[i][k].second != n) throw Error(std::string(what) + ": members hold different sizes");
      sent.emplace_back(*R.tracker, MemCategory::Communication, (std::size_t)n * sizeof(float));
      g.push_back(R.model->params().grads.data() + rg[i][k].first);
    }
    return g;
  }

  void all_reduce(const Collective& col, const Op& first, Backend& be) {
    const std::size_t m = col.ranks.size();
    const std::vector<Ranges> rg = member_ranges(col, first);
    const bool from_rows = col.group == Group::Expert && defer_expert_grads();
    std::vector<float> scratch;  // from_rows: a member's products
    for (std::size_t k = 0; k < rg[0].size(); ++k) {
      const std::int64_t n = rg[0][k].second;
      // The sum is taken over members in rank order, in the first member's gradients, and
      // copied to every other member whose copy is read (CPU ranks with Replicas: only the
      // first members of expert groups update and count the norm, the others' are not read).
      std::vector<Charge> sent;
      const std::vector<float*> g = sent_gradients(col, rg, k, "all-reduce", sent);
      float* acc = g[0];
      if (from_rows) {  // defer_expert_grads(): range k is layer first.layer_begin + k
        const int l = first.layer_begin + (int)k;
        const long stride = (long)rank(col.ranks[0]).model->params().layer_layout().expert_stride;
        for (std::size_t i = 0; i < m; ++i) {
          Rank& R = rank(col.ranks[i]);
          if (replica_owner(col.ranks[i]) != col.ranks[0]) throw Error("all-reduce: an expert group's first member is not its owner");
          ExpertGradRows* rows = R.grad_rows.size() > (std::size_t)l ? R.grad_rows[(std::size_t)l].get() : nullptr;
          if (!rows || rows->microbatches() != opt.microbatches)
            throw Error("all-reduce: expert rows of layer " + std::to_string(l) + " missing on rank " + std::to_string(col.ranks[i]));
          if (i == 0) {
            rows->apply(*R.model, l);  // into acc, zero until now
            continue;
          }
          scratch.assign((std::size_t)n, 0.f);
          rows->apply_to(*R.backend, scratch.data(), stride);
          be.add(scratch.data(), acc, n);
        }
        continue;
      }
      for (std::size_t i = 1; i < m; ++i) be.add(g[i], acc, n);  // acc[j] += g[i][j]
      for (std::size_t i = 1; i < m; ++i)
        if (!shared_state || device_ranks || rank(col.ranks[i]).coord.ep_group == 0) be.copy(acc, g[i], n);
    }
  }

  void broadcast(const Collective& col, const Op& first, Backend& be) {
    Rank& root = rank(col.ranks.front());
    const auto src = ranges(root.model->params(), col.group, first.chunk, first.layer_begin, first.layer_end);
    for (std::size_t i = 1; i < col.ranks.size(); ++i) {
      Rank& R = rank(col.ranks[i]);
      ParamStore& P = R.model->params();
      const auto dst = ranges(P, col.group, first.chunk, first.layer_begin, first.layer_end);
      for (std::size_t k = 0; k < src.size(); ++k) {
        const std::int64_t n = src[k].second;
        if (!P.weights.owns()) {  // the owner's arrays (Replicas), a member of this collective: only charged
          if (!zero1()) received(*R.tracker, (std::size_t)n);
          continue;
        }
        if (!zero1()) {  // ZeRO-1: each member's master piece is already its own; only bf16 travels
          const Charge in = received(*R.tracker, (std::size_t)n);
          be.copy(root.model->params().master.data() + src[k].first, P.master.data() + dst[k].first, n);
        }
        be.copy_bytes(root.model->params().weights.data() + src[k].first, P.weights.data() + dst[k].first,
                      (std::size_t)n * sizeof(bf16));
      }
    }
  }

  // Member i of the collective over ranges rg[i] (same sizes on every member): the pieces
  // of range k it holds, as [a, b) inside that range.
  static std::pair<std::int64_t, std::int64_t> piece_in_range(std::int64_t total, std::int64_t range_at,
                                                              std::int64_t range_n, std::size_t i, std::size_t m) {
    const std::int64_t lo = total * (std::int64_t)i / (std::int64_t)m, hi = total * (std::int64_t)(i + 1) / (std::int64_t)m;
    return {std::clamp(lo - range_at, std::int64_t{0}, range_n), std::clamp(hi - range_at, std::int64_t{0}, range_n)};
  }

  void reduce_scatter(const Collective& col, const Op& first, Backend& be) {
    const std::size_t m = col.ranks.size();
    const std::vector<Ranges> rg = member_ranges(col, first);
    const std::int64_t total = count_of(rg[0]);
    std::int64_t range_at = 0;
    for (std::size_t k = 0; k < rg[0].size(); ++k) {
      const std::int64_t n = rg[0][k].second;
      // Member i sums its piece over the members in rank order (as the all-reduce does:
      // bitwise its sums).
      std::vector<Charge> sent;
      const std::vector<float*> g = sent_gradients(col, rg, k, "reduce-scatter", sent);
      for (std::size_t i = 0; i < m; ++i) {
        const auto [a, b] = piece_in_range(total, range_at, n, i, m);
        if (b <= a) continue;
        float* out = g[i];  // only member i's piece is written, each element after it is read
        if (device_ranks) {  // the same additions in the same order, as whole-piece ops, in a scratch
          Buffer<float> acc = floats(*rank(col.ranks[i]).tracker, MemCategory::Communication, (std::size_t)(b - a));
          be.copy(g[0] + a, acc.data(), b - a);
          for (std::size_t s = 1; s < m; ++s) be.add(g[s] + a, acc.data(), b - a);
          be.copy(acc.data(), out + a, b - a);
          continue;
        }
        for (std::int64_t j = a; j < b; ++j) {
          float acc = g[0][j];
          for (std::size_t s = 1; s < m; ++s) acc += g[s][j];
          out[j] = acc;
        }
      }
      range_at += n;
    }
  }

  void all_gather(const Collective& col, const Op& first, Backend& be) {
    const std::size_t m = col.ranks.size();
    const std::vector<Ranges> rg = member_ranges(col, first);
    const std::int64_t total = count_of(rg[0]);
    std::int64_t range_at = 0;
    for (std::size_t k = 0; k < rg[0].size(); ++k) {
      const std::int64_t n = rg[0][k].second;
      // Every member receives every other member's piece (bf16) into a buffer, then its weights.
      for (std::size_t j = 0; j < m; ++j) {
        Rank& Rj = rank(col.ranks[j]);
        Buffer<bf16> in(*Rj.tracker, MemCategory::Communication, (std::size_t)n, false);
        for (std::size_t i = 0; i < m; ++i) {
          const auto [a, b] = piece_in_range(total, range_at, n, i, m);
          if (b > a)
            be.copy_bytes(rank(col.ranks[i]).model->params().weights.data() + rg[i][k].first + a, in.data() + a,
                          (std::size_t)(b - a) * sizeof(bf16));
        }
        be.copy_bytes(in.data(), Rj.model->params().weights.data() + rg[j][k].first, (std::size_t)n * sizeof(bf16));
      }
      range_at += n;
    }
  }

  // One all-to-all of layer `first.layer_begin` and microbatch `first.microbatch` between the
  // token ranks and the expert ranks of an ep group (member j holds expert slice j). Its four
  // phases, in the order a microbatch meets them:
  //   dispatch_forward   token rows to the ranks holding their experts (ExpertWork is made)
  //   combine_forward    expert outputs back to the token ranks
  //   combine_backward   output gradients of those rows to the expert ranks
  //   dispatch_backward  input gradients of the rows back to the token ranks
  void all_to_all(const Collective& col, const Op& first, Backend& be) {
    const A2A a{col, first.layer_begin, first.chunk, first.microbatch, be};
    switch (first.phase) {
      case AllToAllPhase::DispatchFwd: dispatch_forward(a); break;
      case AllToAllPhase::CombineFwd: combine_forward(a); break;
      case AllToAllPhase::CombineBwd: combine_backward(a); break;
      case AllToAllPhase::DispatchBwd: dispatch_backward(a); break;
      case AllToAllPhase::None: throw Error("all-to-all without a phase");
    }
  }

  // What every phase of one all-to-all works on.
  struct A2A {
    const Collective& col;
    int l, c, mb;  // layer, chunk, microbatch
    Backend& be;   // issues the copies (run_collective's issuer)
    std::size_t members() const { return col.ranks.size(); }
  };
  MicrobatchState& member_state(const A2A& a, std::size_t i) { return state(rank(a.col.ranks[i]), a.c, a.mb); }
  // Token member i's rows for local expert e of slice j: [first, first + n) of its packed rows.
  struct Piece {
    int first = 0, n = 0;
  };
  Piece piece(const MicrobatchState& st, int l, int j, int e) const {
    const auto& off = st.layer(l).routing.offsets;
    const int g = j * rc.experts_per_rank() + e;
    return {off[(std::size_t)g], off[(std::size_t)g + 1] - off[(std::size_t)g]};
  }
  // rows x d_model floats; an empty slice may have a null pointer.
  void copy_rows(const A2A& a, float* dst, const float* src, int rows) const {
    if (rows > 0) a.be.copy(src, dst, (std::int64_t)rows * mc.d_model);
  }
  // For every (token member i, expert slice j, local expert e): fn(i, j, e, token-side first
  // row, expert-side first row, rows).
  template <class Fn>
  void for_pieces(const A2A& a, Fn fn) {
    const int per_rank = rc.experts_per_rank();
    const std::size_t m = a.members();
    for (std::size_t i = 0; i < m; ++i) {
      const MicrobatchState& st = member_state(a, i);
      for (std::size_t j = 0; j < m; ++j) {
        const ExpertWork& w = rank(a.col.ranks[j]).work.at({a.l, a.mb});
        for (int e = 0; e < per_rank; ++e) {
          const Piece p = piece(st, a.l, (int)j, e);
          fn(i, j, p.first, w.at[i * (std::size_t)per_rank + (std::size_t)e], p.n);
        }
      }
    }
  }

  // Rows the expert ranks hold (rows_of(work): outputs or input gradients) sent back to the
  // token ranks, into dst[i]: token member i's rows in its own packed order. Each token member
  // is charged its receive buffer (returned: held until the caller drops it).
  template <class RowsOf>
  std::vector<Charge> to_token_ranks(const A2A& a, RowsOf rows_of, const std::vector<float*>& dst) {
    const int D = mc.d_model;
    std::vector<Charge> in;
    for (std::size_t i = 0; i < a.members(); ++i)
      in.push_back(received(*rank(a.col.ranks[i]).tracker, (std::size_t)member_state(a, i).T * mc.top_k * D));
    for_pieces(a, [&](std::size_t i, std::size_t j, int token_row, int expert_row, int n) {
      copy_rows(a, dst[i] + (std::size_t)token_row * D,
                rows_of(rank(a.col.ranks[j]).work.at({a.l, a.mb})) + (std::size_t)expert_row * D, n);
    });
    return in;
  }

  void dispatch_forward(const A2A& a) {
    const int l = a.l, D = mc.d_model, per_rank = rc.experts_per_rank();
    const std::size_t m = a.members();
    for (std::size_t j = 0; j < m; ++j) {  // receiver j holds expert slice j
      Rank& Rj = rank(a.col.ranks[j]);
      if (Rj.coord.ep != (int)j) throw Error("all-to-all: member order is not the expert-slice order");
      ExpertWork w;
      w.offsets.assign((std::size_t)per_rank + 1, 0);
      w.at.assign(m * (std::size_t)per_rank, 0);
      int total = 0;
      for (int e = 0; e < per_rank; ++e) {
        for (std::size_t i = 0; i < m; ++i) {
          w.at[i * (std::size_t)per_rank + (std::size_t)e] = total;
          total += piece(member_state(a, i), l, (int)j, e).n;
        }
        w.offsets[(std::size_t)e + 1] = total;
      }
      // The rows go straight to where expert rank j keeps them, its receive buffer charged.
      const Charge in = received(*Rj.tracker, (std::size_t)total * D);
      w.cache.xe = floats(*Rj.tracker, MemCategory::Activations, (std::size_t)total * D);
      for (std::size_t i = 0; i < m; ++i) {
        const MicrobatchState& st = member_state(a, i);
        const float* xe = st.layer(l).experts.xe.data();
        for (int e = 0; e < per_rank; ++e) {
          const Piece p = piece(st, l, (int)j, e);
          copy_rows(a, w.cache.xe.data() + (std::size_t)w.at[i * (std::size_t)per_rank + (std::size_t)e] * D,
                    xe + (std::size_t)p.first * D, p.n);
        }
        const int sent = rows_for(st, l, (int)j).n();
        if (i != j && sent > 0) {
          std::lock_guard<std::mutex> lock(rows_mu);
          rows_away[(std::size_t)a.col.ranks[i]][(std::size_t)l] += sent;
          rank(a.col.ranks[i]).sent_to[{l, a.col.ranks[j]}] += sent;
        }
      }
      Rj.work[{l, a.mb}] = std::move(w);
    }
    for (std::size_t i = 0; i < m; ++i) member_state(a, i).layer(l).experts.xe = {};  // sent
  }

  void combine_forward(const A2A& a) {
    const int l = a.l;
    const std::size_t m = a.members();
    // Token rank i gets its rows' outputs back, into its activations (its receive buffer charged).
    std::vector<Buffer<float>> y(m);
    std::vector<float*> dst(m);
    for (std::size_t i = 0; i < m; ++i) {
      y[i] = floats(*rank(a.col.ranks[i]).tracker, MemCategory::Activations, (std::size_t)member_state(a, i).T * mc.top_k * mc.d_model);
      dst[i] = y[i].data();
    }
    std::vector<Charge> in = to_token_ranks(a, [](const ExpertWork& w) { return w.cache.y.data(); }, dst);
    for (std::size_t i = 0; i < m; ++i) member_state(a, i).layer(l).experts.y = std::move(y[i]);
    in.clear();
    for (std::size_t j = 0; j < m; ++j) rank(a.col.ranks[j]).work.at({l, a.mb}).cache.y = {};  // not needed for backward
  }

  void combine_backward(const A2A& a) {
    const int l = a.l, D = mc.d_model;
    const std::size_t m = a.members();
    // Expert rank j gets the output gradients of its rows (its receive buffer charged).
    std::vector<Charge> in;
    for (std::size_t j = 0; j < m; ++j) {
      Rank& Rj = rank(a.col.ranks[j]);
      ExpertWork& w = Rj.work.at({l, a.mb});
      const std::size_t n = (std::size_t)w.offsets.back() * D;
      in.push_back(received(*Rj.tracker, n));
      w.dy = floats(*Rj.tracker, MemCategory::Activations, n);
    }
    for_pieces(a, [&](std::size_t i, std::size_t j, int token_row, int expert_row, int n) {
      copy_rows(a, rank(a.col.ranks[j]).work.at({l, a.mb}).dy.data() + (std::size_t)expert_row * D,
                member_state(a, i).layer(l).dy.data() + (std::size_t)token_row * D, n);
    });
    in.clear();
    for (std::size_t i = 0; i < m; ++i) member_state(a, i).layer(l).dy = {};  // sent
  }

  void dispatch_backward(const A2A& a) {
    const int l = a.l;
    const std::size_t m = a.members();
    // Token rank i gets its rows' input gradients (its receive buffer charged).
    std::vector<float*> dst(m);
    for (std::size_t i = 0; i < m; ++i) dst[i] = member_state(a, i).layer(l).dxe.data();
    to_token_ranks(a, [](const ExpertWork& w) { return w.dxe.data(); }, dst);
    for (std::size_t j = 0; j < m; ++j) {
      Rank& Rj = rank(a.col.ranks[j]);
      if (split_w())
        Rj.work.at({l, a.mb}).dxe = {};  // sent; the rest waits for W
      else
        Rj.work.erase({l, a.mb});
    }
  }

  // [SECTION] One process per rank (ParallelOptions::comm)
  int me = 0;  // this process's rank
  bool here(int r) const { return !opt.comm || r == me; }
  // Checkpoints across processes (their section, after the public API).
  std::map<std::string, std::string> checkpoint_meta() const;
  struct StatePart {  // of the optimizer state: (full offset, n, where in the rank's arrays)
    std::int64_t full, n, at;
  };
  std::vector<StatePart> state_parts(bool counted_only) const;
  void save_across(const std::string& path) const;
  std::vector<std::uint8_t> pack_state(int arrays) const;
  std::vector<std::vector<float>> gather_state_to_root(int arrays) const;
  void load_across(const std::string& path, bool keep_steps);
  // A loaded file's planned steps become the run's (0: the file does not say; the run's stay).
  void adopt_steps(std::uint64_t planned) {
    if (planned == 0) return;
    if (planned > (std::uint64_t)limits::kMaxSteps) throw Error("load: the file's planned steps are out of range");
    opt.steps = (int)planned;
    opt.optim.total_steps = opt.steps;
  }
  // Host-side exchanges (a step's record, checkpoints): ParallelOptions::host_comm, else comm.
  Comm& host() const { return opt.host_comm ? *opt.host_comm : *opt.comm; }
  bool stepping = false;  // a step is begun (the engines' `current` when there is one)

  // Every member list of the plans' all-reduces and reduce-scatters, in plan order (the same
  // on every process): Comm::prepare_groups.
  std::vector<std::vector<int>> reduced_groups() const {
    std::vector<std::vector<int>> out;
    std::set<std::vector<int>> seen;
    for (const Plan* p : {first_plan.get(), steady_plan.get()})
      if (p)
        for (const Collective& col : p->collectives)
          if (col.kind == OpKind::AllReduce || col.kind == OpKind::ReduceScatter) {
            std::vector<int> g(col.ranks.begin(), col.ranks.end());
            if (g.size() > 1 && seen.insert(g).second) out.push_back(std::move(g));
          }
    return out;
  }

  // This rank's program in order, the wall time of each op (seconds from the step's start)
  // into the timeline; the other ranks' times come in gather_times().
  void run_program() {
    const Plan& plan = *last_plan;
    last_timeline = Timeline{};
    last_timeline.ops.assign(plan.ops.size(), OpTime{});
    const auto start = std::chrono::steady_clock::now();
    auto at = [&](std::chrono::steady_clock::time_point t) { return std::chrono::duration<double>(t - start).count(); };
    OpContext ctx{plan, 0, step_, 0.0, opt.events};
    Rank& R = rank(me);
    for (std::uint32_t id : plan.programs[(std::size_t)me]) {
      const Op& op = plan.op(id);
      const auto t0 = std::chrono::steady_clock::now();
      ctx.virtual_begin = at(t0);
      // A device rank's transport calls read memory its backend may still be writing, and each
      // op's wall time is its work's: wait for the backend (no overlap yet across processes).
      if (device_ranks && !op.is_compute()) R.backend->sync();
      if (op.is_collective()) {
        const Collective& col = plan.collectives[(std::size_t)op.collective];
        if (col.kind == OpKind::AllReduce)
          all_reduce_across(col, op);
        else if (col.kind == OpKind::Broadcast)
          broadcast_across(col, op);
        else if (col.kind == OpKind::AllToAll)
          all_to_all_across(col, op);
        else if (col.kind == OpKind::ReduceScatter)
          reduce_scatter_across(col, op);
        else if (col.kind == OpKind::AllGather)
          all_gather_across(col, op);
        else
          throw Error("one process per rank: no " + std::string(to_string(col.kind)) + " yet");
      } else if (op.kind == OpKind::Send) {
        MicrobatchState& st = state(R, op.chunk, op.microbatch);
        const Buffer<float>& src = op.payload == Payload::Activation ? st.x : st.dx;
        const Charge out(*R.tracker, MemCategory::Communication, src.size() * sizeof(float));
        opt.comm->send(src.data(), src.size() * sizeof(float), op.peer);
        sent(R, op, st);
      } else if (op.kind == OpKind::Recv) {
        if (op.payload == Payload::Activation) start_state(R, op.chunk, op.microbatch);
        MicrobatchState& st = state(R, op.chunk, op.microbatch);
        const std::size_t n = (std::size_t)st.T * mc.d_model;
        const Charge in = received(*R.tracker, n);
        Buffer<float> dst = floats(*R.tracker, MemCategory::Activations, n);
        opt.comm->recv(dst.data(), n * sizeof(float), op.peer);
        (op.payload == Payload::Activation ? st.x : st.dx) = std::move(dst);
      } else {
        run(op, ctx);
        if (device_ranks) R.backend->sync();
      }
      OpTime& t = last_timeline.ops[id];
      const auto t1 = std::chrono::steady_clock::now();
      t.ready = t.begin = at(t0);
      t.end = at(t1);
      t.measured_s = t.end - t.begin;
      t.wall_begin_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count();
      t.wall_end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1.time_since_epoch()).count();
    }
    opt.comm->flush();
  }

  // A pair of ranks' messages arrive in the order the sender sent them, so every Recv of this
  // rank must come in its program in the order its peer's Sends come in the peer's. Every
  // schedule's plan keeps that order (for each pair); should one not, this says so before the
  // step runs instead of handing a microbatch another's hidden states.
  void check_hand_off_order() const {
    const Plan& plan = *last_plan;
    std::map<int, std::vector<std::int32_t>> sent, taken;  // peer -> Send op ids, its order / mine
    for (int p = 0; p < (int)ranks.size(); ++p)
      for (std::uint32_t id : plan.programs[(std::size_t)p])
        if (plan.op(id).kind == OpKind::Send && plan.op(id).peer == me) sent[p].push_back((std::int32_t)id);
    for (std::uint32_t id : plan.programs[(std::size_t)me])
      if (plan.op(id).kind == OpKind::Recv) taken[plan.op(id).peer].push_back(plan.op(id).match);
    if (sent != taken)
      throw Error("one process per rank: rank " + std::to_string(me) + " would receive its hand-offs in another order than they are sent (" +
                  std::string(to_string(rc.schedule)) + ")");
  }

  // The sum over the members through the transport, range by range as all_reduce() takes it
  // (each element's sum is the same whatever the ranges).
  void all_reduce_across(const Collective& col, const Op& op) {
    Rank& R = rank(me);
    ParamStore& P = R.model->params();
    for (const auto& [off, n] : ranges(P, col.group, op.chunk, op.layer_begin, op.layer_end)) {
      const Charge out(*R.tracker, MemCategory::Communication, (std::size_t)n * sizeof(float));
      opt.comm->all_reduce_sum(P.grads.data() + off, n, col.ranks);
    }
  }

  // ZeRO-1: members' pieces of each range as reduce_scatter() and all_gather() cut them
  // (piece_in_range): bounds[i] .. bounds[i + 1] is member i's, inside the range.
  static std::vector<std::int64_t> piece_bounds(std::int64_t total, std::int64_t range_at, std::int64_t n, std::size_t m) {
    std::vector<std::int64_t> b(m + 1);
    for (std::size_t i = 0; i < m; ++i) b[i] = piece_in_range(total, range_at, n, i, m).first;
    b[m] = piece_in_range(total, range_at, n, m - 1, m).second;
    return b;
  }
  // fn(offset, count, bounds) for each range of the collective's tensors on this rank, bounds
  // being where each member's piece of that range starts (and where the last ends): the pieces
  // cut the whole of the ranges as the virtual ranks cut them.
  template <class Fn>
  void each_piece_range(const Collective& col, const Op& op, Fn&& fn) {
    const Ranges rg = ranges(rank(me).model->params(), col.group, op.chunk, op.layer_begin, op.layer_end);
    const std::int64_t total = count_of(rg);
    std::int64_t range_at = 0;
    for (const auto& [off, n] : rg) {
      fn(off, n, piece_bounds(total, range_at, n, col.ranks.size()));
      range_at += n;
    }
  }
  // Each member's piece of the gradients summed over the members in rank order (bitwise
  // reduce_scatter()'s sums), range by range; the charges are reduce_scatter()'s.
  void reduce_scatter_across(const Collective& col, const Op& op) {
    Rank& R = rank(me);
    ParamStore& P = R.model->params();
    each_piece_range(col, op, [&](std::int64_t off, std::int64_t n, const std::vector<std::int64_t>& bounds) {
      const Charge out(*R.tracker, MemCategory::Communication, (std::size_t)n * sizeof(float));
      opt.comm->reduce_scatter_sum(P.grads.data() + off, bounds, col.ranks);
    });
  }
  // Every member's piece of the bf16 weights to the others (the next step's start).
  void all_gather_across(const Collective& col, const Op& op) {
    Rank& R = rank(me);
    ParamStore& P = R.model->params();
    each_piece_range(col, op, [&](std::int64_t off, std::int64_t n, const std::vector<std::int64_t>& bounds) {
      const Charge in(*R.tracker, MemCategory::Communication, (std::size_t)n * sizeof(bf16));
      opt.comm->all_gather(P.weights.data() + off, sizeof(bf16), bounds, col.ranks);
    });
  }

  // The root's master and bf16 weights to every other member (first step); ZeRO-1: only the
  // bf16 weights (each member's master piece is its own from set-up, as in broadcast()).
  void broadcast_across(const Collective& col, const Op& op) {
    Rank& R = rank(me);
    ParamStore& P = R.model->params();
    const int root = col.ranks.front();
    const Ranges rg = ranges(P, col.group, op.chunk, op.layer_begin, op.layer_end);
    opt.comm->group([&] {
      for (const auto& [off, n] : rg) {
        if (me == root) {
          for (std::size_t i = 1; i < col.ranks.size(); ++i) {
            if (!zero1()) opt.comm->send(P.master.data() + off, (std::size_t)n * sizeof(float), col.ranks[i]);
            opt.comm->send(P.weights.data() + off, (std::size_t)n * sizeof(bf16), col.ranks[i]);
          }
        } else {
          std::optional<Charge> in;
          if (!zero1()) {
            in.emplace(received(*R.tracker, (std::size_t)n));
            opt.comm->recv(P.master.data() + off, (std::size_t)n * sizeof(float), root);
          }
          opt.comm->recv(P.weights.data() + off, (std::size_t)n * sizeof(bf16), root);
        }
      }
    });
  }

  // The all-to-all of one layer and microbatch as grouped sends and receives: what
  // all_to_all() copies between members, each member sending its own pieces and receiving
  // its own, in the same row layout (so the experts' sums, and all after, are bitwise theirs).
  void all_to_all_across(const Collective& col, const Op& op) {
    const int l = op.layer_begin, mb = op.microbatch, per = rc.experts_per_rank(), D = mc.d_model;
    const std::size_t m = col.ranks.size();
    const std::size_t self = (std::size_t)(std::find(col.ranks.begin(), col.ranks.end(), me) - col.ranks.begin());
    Rank& R = rank(me);
    if (R.coord.ep != (int)self) throw Error("all-to-all: member order is not the expert-slice order");
    MicrobatchState& st = state(R, op.chunk, mb);
    auto peer = [&](std::size_t i) { return col.ranks[i]; };
    auto floats_of = [&](int rows) { return (std::size_t)rows * (std::size_t)D * sizeof(float); };
    // Rows (token member i, local expert e) hold in the expert member's packed rows.
    auto rows_from = [&](const ExpertWork& w, std::size_t i, int e) {
      const int a = w.at[i * (std::size_t)per + (std::size_t)e];
      const int b = i + 1 < m ? w.at[(i + 1) * (std::size_t)per + (std::size_t)e] : w.offsets[(std::size_t)e + 1];
      return std::pair<int, int>{a, b - a};
    };
    // As a token member: my rows for member j's experts, from/to `tok`; as an expert member:
    // member i's rows in my packed `exp`. to_experts: tokens' rows go to the expert members.
    auto exchange = [&](bool to_experts, float* tok, float* exp) {
      const ExpertWork& w = R.work.at({l, mb});
      opt.comm->group([&] {
        for (std::size_t j = 0; j < m; ++j)
          for (int e = 0; e < per; ++e) {
            const Piece p = piece(st, l, (int)j, e);
            if (p.n == 0) continue;
            float* t = tok + (std::size_t)p.first * D;
            if (j == self) {  // my own rows for my own experts
              const auto [at, n] = rows_from(w, self, e);
              (void)n;
              float* x = exp + (std::size_t)at * D;
              std::copy_n(to_experts ? t : x, (std::size_t)p.n * D, to_experts ? x : t);
            } else if (to_experts) {
              opt.comm->send(t, floats_of(p.n), peer(j));
            } else {
              opt.comm->recv(t, floats_of(p.n), peer(j));
            }
          }
        for (std::size_t i = 0; i < m; ++i)
          for (int e = 0; e < per && i != self; ++e) {
            const auto [at, n] = rows_from(w, i, e);
            if (n == 0) continue;
            float* x = exp + (std::size_t)at * D;
            if (to_experts)
              opt.comm->recv(x, floats_of(n), peer(i));
            else
              opt.comm->send(x, floats_of(n), peer(i));
          }
      });
    };
    switch (op.phase) {
      case AllToAllPhase::DispatchFwd: {
        // How many rows each member sends each of my experts, then the rows.
        std::vector<std::int32_t> mine(m * (std::size_t)per), theirs(m * (std::size_t)per);
        for (std::size_t j = 0; j < m; ++j)
          for (int e = 0; e < per; ++e) mine[j * (std::size_t)per + (std::size_t)e] = piece(st, l, (int)j, e).n;
        host().group([&] {  // host memory
          for (std::size_t j = 0; j < m; ++j)
            if (j != self) host().send(mine.data() + j * (std::size_t)per, (std::size_t)per * sizeof(std::int32_t), peer(j));
          for (std::size_t i = 0; i < m; ++i)
            if (i != self) host().recv(theirs.data() + i * (std::size_t)per, (std::size_t)per * sizeof(std::int32_t), peer(i));
        });
        std::copy_n(mine.data() + self * (std::size_t)per, per, theirs.data() + self * (std::size_t)per);
        ExpertWork w;
        w.offsets.assign((std::size_t)per + 1, 0);
        w.at.assign(m * (std::size_t)per, 0);
        int total = 0;
        for (int e = 0; e < per; ++e) {
          for (std::size_t i = 0; i < m; ++i) {
            w.at[i * (std::size_t)per + (std::size_t)e] = total;
            total += theirs[i * (std::size_t)per + (std::size_t)e];
          }
          w.offsets[(std::size_t)e + 1] = total;
        }
        const Charge in = received(*R.tracker, (std::size_t)total * D);
        w.cache.xe = floats(*R.tracker, MemCategory::Activations, (std::size_t)total * D);
        R.work[{l, mb}] = std::move(w);
        ExpertWork& kept = R.work.at({l, mb});
        exchange(true, st.layer(l).experts.xe.data(), kept.cache.xe.data());
        for (std::size_t j = 0; j < m; ++j) {
          const int sent = rows_for(st, l, (int)j).n();
          if (j != self && sent > 0) {
            std::lock_guard<std::mutex> lock(rows_mu);
            rows_away[(std::size_t)me][(std::size_t)l] += sent;
            R.sent_to[{l, peer(j)}] += sent;
          }
        }
        st.layer(l).experts.xe = {};  // sent
        break;
      }
      case AllToAllPhase::CombineFwd: {
        ExpertWork& w = R.work.at({l, mb});
        const std::size_t n = (std::size_t)st.T * mc.top_k * D;
        const Charge in = received(*R.tracker, n);
        Buffer<float> y = floats(*R.tracker, MemCategory::Activations, n);
        exchange(false, y.data(), w.cache.y.data());
        st.layer(l).experts.y = std::move(y);
        w.cache.y = {};  // not needed for backward
        break;
      }
      case AllToAllPhase::CombineBwd: {
        ExpertWork& w = R.work.at({l, mb});
        const std::size_t n = (std::size_t)w.offsets.back() * D;
        const Charge in = received(*R.tracker, n);
        w.dy = floats(*R.tracker, MemCategory::Activations, n);
        exchange(true, st.layer(l).dy.data(), w.dy.data());
        st.layer(l).dy = {};  // sent
        break;
      }
      case AllToAllPhase::DispatchBwd: {
        const Charge in = received(*R.tracker, (std::size_t)st.T * mc.top_k * D);
        exchange(false, st.layer(l).dxe.data(), R.work.at({l, mb}).dxe.data());
        if (split_w())
          R.work.at({l, mb}).dxe = {};  // sent; the rest waits for W
        else
          R.work.erase({l, mb});
        break;
      }
      case AllToAllPhase::None: throw Error("all-to-all without a phase");
    }
  }

  // Every rank's `mine` (n values each), rank by rank.
  template <class T>
  std::vector<T> gather_all(const std::vector<T>& mine) {
    std::vector<T> all(mine.size() * ranks.size());
    all_gather_bytes(host(), mine.data(), mine.size() * sizeof(T), all.data());
    return all;
  }
  // Sums what every rank holds of v (zero where it holds nothing), rank by rank, so that each
  // entry written by one rank is bitwise its value (x + 0 = x).
  void sum_across(std::vector<double>& v) {
    const std::vector<double> all = gather_all(v);
    std::fill(v.begin(), v.end(), 0.0);
    for (std::size_t r = 0; r < ranks.size(); ++r)
      for (std::size_t i = 0; i < v.size(); ++i) v[i] += all[r * v.size() + i];
  }
  // Each op's times from the rank that ran it.
  void gather_times() {
    const Plan& plan = *last_plan;
    const std::vector<OpTime> all = gather_all(last_timeline.ops);
    const std::size_t n = plan.ops.size();
    for (const Op& op : plan.ops) last_timeline.ops[op.id] = all[(std::size_t)op.rank * n + op.id];
    for (const OpTime& t : last_timeline.ops) last_timeline.end = std::max(last_timeline.end, t.end);
  }

  // Every rank's activation levels after its ops (memory_events()), padded to the longest list.
  void gather_memory_events() {
    const std::vector<Event>& mine = rank(me).mem_events;
    const std::vector<std::int64_t> counts = gather_all(std::vector<std::int64_t>{(std::int64_t)mine.size()});
    const std::size_t most = (std::size_t)*std::max_element(counts.begin(), counts.end());
    std::vector<Event> padded(mine);
    padded.resize(most);
    const std::vector<Event> all = gather_all(padded);
    for (std::size_t r = 0; r < ranks.size(); ++r)
      if ((int)r != me) ranks[r].mem_events.assign(all.begin() + (long)(r * most), all.begin() + (long)(r * most) + counts[r]);
  }

  // The whole model's master weights on every process, bitwise gather_state()'s: each rank's
  // counted state to rank 0, the whole back to every rank (its section, after the public API).
  std::vector<float> master_weights_across() const;

  // ZeRO-1's gradient norm across processes, bitwise zero1_grad_norm(): the first member of
  // each group (the rank whose copies of its tensors count) gets the other members' reduced
  // pieces into its gradients, sums its tensors' squares as zero1_grad_norm() does, and the
  // ranks' sums are added in rank order.
  double zero1_grad_norm_across() {
    Rank& R = rank(me);
    ParamStore& P = R.model->params();
    const Layout& L = layout();
    opt.comm->group([&] {
      for (const GroupPart& gp : group_parts(me)) {
        if (gp.size <= 1) continue;
        const std::vector<int> members = gp.g == Group::Dense ? L.dense_group(me) : L.expert_group(me);
        if ((int)members.size() != gp.size || members[(std::size_t)gp.index] != me)
          throw Error("ZeRO-1: rank " + std::to_string(me) + " is not where its group says");
        const Ranges rg = ranges(P, gp.g, gp.chunk, L.first_layer(gp.chunk), L.end_layer(gp.chunk));
        for (int i = 1; i < gp.size; ++i) {
          if (gp.index != 0 && gp.index != i) continue;
          for (const auto& [flat, n] : piece_of(rg, i, gp.size)) {
            if (gp.index == 0)
              opt.comm->recv(P.grads.data() + flat, (std::size_t)n * sizeof(float), members[(std::size_t)i]);
            else
              opt.comm->send(P.grads.data() + flat, (std::size_t)n * sizeof(float), members[0]);
          }
        }
      }
    });
    if (device_ranks) R.backend->sync();
    std::vector<float> g;
    double s = 0.0;
    for (const auto& t : P.tensors()) {
      if (!(dense_kind(t.kind) ? R.coord.dp == 0 : R.coord.ep_group == 0)) continue;
      g.assign(P.grads.data() + t.offset, P.grads.data() + t.offset + t.size());
      s += sum_of_squares(g.data(), t.size());
    }
    double sq = 0.0;
    for (double x : gather_all(std::vector<double>{s})) sq += x;
    return std::sqrt(sq);
  }

  // [SECTION] A step: begin, then the update and the step's record
  Engine* current = nullptr;
  std::chrono::steady_clock::time_point t0, lap_at;
  // ONEGPU_PAR_TIMING: wall seconds of a step's parts on stderr, as set-up's laps.
  void step_lap(const char* what) {
    static const bool on = std::getenv("ONEGPU_PAR_TIMING") != nullptr;
    if (!on) return;
    const auto now = std::chrono::steady_clock::now();
    if (lap_at < t0) lap_at = t0;
    std::fprintf(stderr, "[parallel] step %d %s %.3f s\n", step_ + 1, what, std::chrono::duration<double>(now - lap_at).count());
    lap_at = now;
  }

  void begin(const Batch& b) {
    {
      std::lock_guard<std::mutex> lock(rows_mu);
      rows_away.assign(ranks.size(), std::vector<std::int64_t>((std::size_t)mc.n_layers, 0));
    }
    if (current || stepping) throw Error("step: the previous step is not finished");
    if (b.B != opt.batch || b.S != S)
      throw Error("step: the batch must hold " + std::to_string(opt.batch) + " texts of " + std::to_string(S) + " tokens");
    t0 = std::chrono::steady_clock::now();
    global = b;
    global_targets = 0;
    for (auto v : global.targets) global_targets += v >= 0;
    const int M_total = opt.dp * opt.microbatches;
    sc = LossScales{1.f / (float)std::max(1, global_targets), 1.f / (float)M_total};
    ce.assign((std::size_t)M_total, 0.0);
    aux.assign((std::size_t)(M_total * rc.chunks()), 0.0);
    for (auto& c : weight_caches)
      if (c) c->invalidate();  // the update (or a load) changed the weights
    auto fresh = [&](int r) {
      Rank& R = rank(r);
      if (!R.model) return;  // a rank of another process
      R.tracker->reset_peaks();
      if (device_ranks)  // cleared where they live, without a host wait
        R.backend->zero(R.model->params().grads.data(), R.model->params().count());
      else  // the rest is never written (defer_expert_grads): zero pages
        for_written_grads(r, [&](std::int64_t at, std::int64_t n) { std::fill_n(R.model->params().grads.data() + at, n, 0.f); });
      R.states.clear();
      R.work.clear();
      for (auto& rows : R.grad_rows)
        if (rows) rows->forget();  // of a step stopped by an error
      R.mem_events.clear();
      R.routed.assign((std::size_t)mc.n_layers * mc.n_experts, 0);
      R.sent_to.clear();
      R.sq = 0.0;
    };
    // Ranks are independent: CPU ranks on a few threads (zeroing 512 ranks' gradients is
    // hundreds of MB); a device's ranks one at a time, as their backends are driven.
    if (device_ranks)
      for (int r = 0; r < (int)ranks.size(); ++r) fresh(r);
    else
      for_ranks((int)ranks.size(), fresh);
    step_lap("begin");
    if (step_ > 0) share_replica_state();  // separate_first_copy: shared from the second step on
    const bool first = step_ == 0 && first_plan;
    last_plan = first ? first_plan.get() : steady_plan.get();
    stepping = true;
    if (opt.comm) {
      check_hand_off_order();
      return;  // run_program() in finish()
    }
    current = first ? first_engine.get() : steady_engine.get();
    wires.clear();
    wires.resize(last_plan->ops.size());
    current->begin(step_);
  }

  ParallelStepResult finish() {
    if (!stepping) throw Error("step: no step begun");
    if (opt.comm) {
      try {
        run_program();
      } catch (...) {
        stepping = false;
        throw;
      }
    } else {
      Engine& engine = *current;
      try {
        engine.release_all();
        engine.wait();
      } catch (...) {
        current = nullptr;
        stepping = false;
        throw;
      }
      current = nullptr;
      last_timeline = engine.timeline();
    }
    step_lap("ops");
    stepping = false;
    const int M_total = opt.dp * opt.microbatches;
    for (const Rank& R : ranks) {
      if (!R.states.empty() || !R.work.empty()) throw Error("step: a rank kept microbatch state after its step");
      for (const auto& rows : R.grad_rows)
        if (rows && rows->microbatches() != 0) throw Error("step: a rank kept expert rows after its step");
    }

    if (device_ranks)  // the host reads the ranks' memory from here on (zero1_grad_norm, pieces)
      for (Rank& R : ranks)
        if (R.backend) R.backend->sync();  // (another process's rank has none)
    // The whole model's gradient norm: every rank's share, in rank order.
    double sq = 0.0;
    if (opt.comm) {
      for (double s : gather_all(std::vector<double>{rank(me).sq})) sq += s;
      gather_times();
      gather_memory_events();
      sum_across(ce);
      sum_across(aux);
    } else {
      for (const Rank& R : ranks) sq += R.sq;
    }
    const double norm = !zero1() ? std::sqrt(sq) : opt.comm ? zero1_grad_norm_across() : zero1_grad_norm();
    ParallelStepResult res;
    std::vector<UpdateStats> us(ranks.size());
    const bool sharing = shared_state;
    for_ranks((int)ranks.size(), [&](int r) {
      Rank& R = ranks[(std::size_t)r];
      if (!R.model) return;                           // a rank of another process
      if (sharing && replica_owner(r) != r) return;  // its state is the owner's (share_replica_state)
      us[(std::size_t)r] = zero1() ? adamw_update_pieces(R.model->params(), R.master.data(), R.adam_m.data(),
                                                         R.adam_v.data(), R.pieces, opt.optim, step_, norm)
                     : device_ranks ? adamw_update_with_norm(R.model->params(), opt.optim, step_, norm, *R.backend)
                                    : adamw_update_with_norm(R.model->params(), opt.optim, step_, norm);
    });
    step_lap("update");
    const UpdateStats u = us[(std::size_t)me];  // rank 0 owns its state (here: this process's rank)
    ++step_;
    warmer.reset();  // later steps take their blocks from the pool again
    res.step = step_;
    double ce_sum = 0.0, aux_sum = 0.0;
    for (double v : ce) ce_sum += v;
    for (double v : aux) aux_sum += v;
    res.loss = ce_sum / std::max(1, global_targets);
    res.aux_loss = aux_sum / M_total;
    res.lr = u.lr;
    res.grad_norm = norm;
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const Summary sm = summarize(*last_plan, last_timeline);
    res.virtual_seconds = sm.step_time;
    res.stage_idle = sm.stage_idle;
    double idle = 0.0;
    for (double v : sm.stage_idle) idle += v;
    res.bubble = sm.stage_idle.empty() ? 0.0 : idle / (double)sm.stage_idle.size();
    res.router_counts.assign((std::size_t)mc.n_layers * mc.n_experts, 0);
    if (opt.comm) {  // every rank's memory and routes, gathered
      res.memory = gather_all(std::vector<MemStats>{rank(me).tracker->stats()});
      const std::vector<std::int64_t> routed = gather_all(rank(me).routed);
      for (std::size_t i = 0; i < routed.size(); ++i) res.router_counts[i % res.router_counts.size()] += routed[i];
    } else {
      for (const Rank& R : ranks) res.memory.push_back(R.tracker->stats());
      for (const Rank& R : ranks)
        for (std::size_t i = 0; i < R.routed.size(); ++i) res.router_counts[i] += R.routed[i];
    }
    for (int l = 0; l < mc.n_layers; ++l)
      for (int r = 0; r < (int)ranks.size(); ++r)
        for (auto it = ranks[(std::size_t)r].sent_to.lower_bound({l, 0});
             it != ranks[(std::size_t)r].sent_to.end() && std::get<0>(it->first) == l; ++it)
          res.traffic.push_back({l, r, std::get<1>(it->first), it->second});
    return res;
  }
};

// [SECTION] Public API
ParallelTrainer::ParallelTrainer(ModelConfig model, const ParallelOptions& opt, const TokenDataset& train)
    : impl_(std::make_unique<Impl>(std::move(model), opt, train)) {}
ParallelTrainer::~ParallelTrainer() = default;

ParallelStepResult ParallelTrainer::step() {
  begin_step();
  return finish_step();
}
ParallelStepResult ParallelTrainer::step(const Batch& global) {
  begin_step(global);
  return finish_step();
}
void ParallelTrainer::begin_step() {
  Impl& I = *impl_;
  if (I.current || I.stepping) throw Error("step: the previous step is not finished");
  I.begin(sample_batch(I.train, I.opt.batch, I.S, I.data_rng));
}
void ParallelTrainer::begin_step(const Batch& global) { impl_->begin(global); }
Engine& ParallelTrainer::engine() {
  if (impl_->opt.comm) throw Error("engine: one process per rank runs its program whole (no paced steps)");
  if (!impl_->current) throw Error("engine: begin_step() first");
  return *impl_->current;
}
ParallelStepResult ParallelTrainer::finish_step() { return impl_->finish(); }
int ParallelTrainer::steps_done() const { return impl_->step_; }
bool ParallelTrainer::done() const { return impl_->step_ >= impl_->opt.steps; }
int ParallelTrainer::world() const { return (int)impl_->ranks.size(); }
const ModelConfig& ParallelTrainer::model_config() const { return impl_->mc; }
const ParallelOptions& ParallelTrainer::options() const { return impl_->opt; }
const Plan& ParallelTrainer::plan() const { return impl_->last_plan ? *impl_->last_plan : *impl_->steady_plan; }
const Timeline& ParallelTrainer::timeline() const { return impl_->last_timeline; }
std::vector<std::int64_t> ParallelTrainer::rows_sent_away(int rank) const {
  std::lock_guard<std::mutex> lock(impl_->rows_mu);
  if (rank < 0 || rank >= (int)impl_->rows_away.size()) return {};
  return impl_->rows_away[(std::size_t)rank];
}
namespace {
void check_here(bool here, int r) {
  if (!here) throw Error("rank " + std::to_string(r) + " lives in another process");
}
}  // namespace
const MemoryTracker& ParallelTrainer::tracker(int r) const {
  check_here(impl_->here(r), r);
  return *impl_->ranks.at((std::size_t)r).tracker;
}
const ParamStore& ParallelTrainer::params(int r) const {
  check_here(impl_->here(r), r);
  return impl_->ranks.at((std::size_t)r).model->params();
}

std::vector<Event> ParallelTrainer::memory_events() const {
  std::vector<Event> out;
  for (const auto& R : impl_->ranks) out.insert(out.end(), R.mem_events.begin(), R.mem_events.end());
  // Virtual times come from the timeline: the level is the one after the op.
  for (Event& e : out)
    if (e.id < impl_->last_timeline.ops.size()) e.virtual_begin = e.virtual_end = impl_->last_timeline.ops[e.id].end;
  return out;
}

// [SECTION] Checkpoints
namespace {
// fn(full_offset, flat, n) for the parts of flat range [flat, flat + n) of P, tensor by tensor.
template <class Fn>
void for_each_tensor_part(const ParamStore& P, std::int64_t flat, std::int64_t n, Fn fn) {
  for (const auto& t : P.tensors()) {
    const std::int64_t a = std::max(flat, t.offset), b = std::min(flat + n, t.offset + t.size());
    if (b > a) fn(t.full_offset + (a - t.offset), a, b - a);
  }
}
}  // namespace

namespace {
enum class StateArray { Master, AdamM, AdamV };

// Weights in the whole model's unsharded layout (every rank's tensors end within it).
template <class Ranks>  // Impl::Rank, deduced (the type is private)
std::int64_t whole_count(const Ranks& ranks) {
  std::int64_t n = 0;
  for (const auto& R : ranks)
    for (const auto& t : R.model->params().tensors()) n = std::max(n, t.full_offset + t.size());
  return n;
}

// One optimizer array of the whole model in the unsharded layout (zero 1: from the pieces), or
// the reverse (scatter_state): `out` scattered into every rank's copy or piece.
template <class Ranks>
void gather_state_into(const Ranks& ranks, bool zero1, StateArray which, std::vector<float>& out) {
  const std::int64_t n = whole_count(ranks);
  // Every weight is some rank's (its root's, or under ZeRO-1 one rank's piece): each element is
  // written below, so an array of the same size is reused as it is (no new one, no clearing).
  out.resize((std::size_t)n);
  std::set<std::int64_t> taken;  // full offsets of tensors copied
  for (const auto& R : ranks) {
    const ParamStore& P = R.model->params();
    if (zero1) {  // each weight's state sits in one rank's piece
      const float* src = which == StateArray::Master ? R.master.data() : which == StateArray::AdamM ? R.adam_m.data() : R.adam_v.data();
      for (const OptimizerPiece& pc : R.pieces)
        for_each_tensor_part(P, pc.flat, pc.n, [&](std::int64_t full, std::int64_t flat, std::int64_t len) {
          std::copy_n(src + pc.at + (flat - pc.flat), len, out.data() + full);
        });
      continue;
    }
    // Each tensor from the first rank holding it: its root, whose values are the model's even
    // before the first step's broadcasts reach the other copies (after them all agree).
    const float* src = which == StateArray::Master ? P.master.data() : which == StateArray::AdamM ? P.adam_m.data() : P.adam_v.data();
    for (const auto& t : P.tensors())
      if (taken.insert(t.full_offset).second) std::copy_n(src + t.offset, t.size(), out.data() + t.full_offset);
  }
}

template <class Ranks>
std::vector<float> gather_state(const Ranks& ranks, bool zero1, StateArray which) {
  std::vector<float> out;
  gather_state_into(ranks, zero1, which, out);
  return out;
}

template <class Ranks>
void scatter_state(Ranks& ranks, bool zero1, StateArray which,
                          const std::vector<float>& in) {
  for (auto& R : ranks) {
    ParamStore& P = R.model->params();
    if (zero1) {
      float* dst = which == StateArray::Master ? R.master.data() : which == StateArray::AdamM ? R.adam_m.data() : R.adam_v.data();
      for (const OptimizerPiece& pc : R.pieces)
        for_each_tensor_part(P, pc.flat, pc.n, [&](std::int64_t full, std::int64_t flat, std::int64_t len) {
          std::copy_n(in.data() + full, len, dst + pc.at + (flat - pc.flat));
        });
    } else {
      float* dst = which == StateArray::Master ? P.master.data() : which == StateArray::AdamM ? P.adam_m.data() : P.adam_v.data();
      for (const auto& t : P.tensors()) std::copy_n(in.data() + t.full_offset, t.size(), dst + t.offset);
    }
    // Every copy holds every weight it uses in bf16, rounded from the master.
    if (which == StateArray::Master)
      for (const auto& t : P.tensors())
        for (std::int64_t i = 0; i < t.size(); ++i)
          P.weights[(std::size_t)(t.offset + i)] = float_to_bf16(in[(std::size_t)(t.full_offset + i)]);
  }
}

// A whole state into `ranks`' copies or pieces (all of them, or this process's one), and the
// run's step and data RNG with it: what load() read from a file, or set_state() was given.
template <class Impl, class Ranks>  // ParallelTrainer::Impl and its ranks, deduced (the types are private)
void take_state(Impl& I, Ranks& ranks, const std::vector<float>& master, const std::vector<float>& adam_m,
                const std::vector<float>& adam_v, std::int64_t step, std::uint64_t data_rng) {
  scatter_state(ranks, I.zero1(), StateArray::Master, master);
  scatter_state(ranks, I.zero1(), StateArray::AdamM, adam_m);
  scatter_state(ranks, I.zero1(), StateArray::AdamV, adam_v);
  I.step_ = (int)step;
  I.data_rng.set_state(data_rng);
}

}  // namespace

std::vector<float> ParallelTrainer::master_weights() const {
  // One process per rank: a collective, every process calls it.
  if (impl_->opt.comm) return impl_->master_weights_across();
  return gather_state(impl_->ranks, impl_->zero1(), StateArray::Master);
}

namespace {
constexpr const char* kParallelFormat = "onegpu-parallel-checkpoint-1";
std::vector<std::int64_t> tensor_shape(const ParamTensor& t) {
  if (t.rows == 1) return {t.cols};
  return {t.rows, t.cols};
}

// The run a checkpoint continues: its split, microbatches and batch (ZeRO and the device may
// differ: the layout is the same). Saved as metadata "split"; load() refuses another.
std::string split_of(const ParallelOptions& o, int seq_len) {
  return "dp " + std::to_string(o.dp) + " × ep " + std::to_string(o.ep) + " × pp " + std::to_string(o.pp) + ", vstages " +
         std::to_string(o.vstages) + ", " + std::string(to_string(o.schedule)) + ", microbatches " + std::to_string(o.microbatches) +
         ", batch " + std::to_string(o.batch) + " × " + std::to_string(seq_len) + " tokens";
}

// The file of a split run, the same whichever way the run was spread over processes.
void write_checkpoint(const std::string& path, const std::vector<ParamTensor>& tensors, const std::vector<float>& master,
                      const std::vector<float>& m, const std::vector<float>& v, std::map<std::string, std::string> meta) {
  safetensors::File f;
  std::set<std::string> done;
  for (const auto& t : tensors) {
    if (!done.insert(t.name).second) continue;
    const std::size_t a = (std::size_t)t.full_offset, n = (std::size_t)t.size();
    std::vector<std::uint16_t> w(n);
    for (std::size_t i = 0; i < n; ++i) w[i] = float_to_bf16(master[a + i]);
    f.add_bf16(t.name, tensor_shape(t), w);
    f.add_f32("optim.master." + t.name, tensor_shape(t), std::span<const float>(master.data() + a, n));
    f.add_f32("optim.adam_m." + t.name, tensor_shape(t), std::span<const float>(m.data() + a, n));
    f.add_f32("optim.adam_v." + t.name, tensor_shape(t), std::span<const float>(v.data() + a, n));
  }
  f.metadata = std::move(meta);
  safetensors::save(f, path);
}

// What load() takes from a file: the three optimizer arrays in the unsharded layout (sized
// `count`), the step and the data RNG. Throws Error (one line) for another format, model or split.
struct LoadedState {
  std::vector<float> state[3];  // master, adam_m, adam_v
  std::uint64_t step = 0, data_rng = 0;
  std::uint64_t planned = 0;  // the run's steps; 0 where the file does not say (older files)
};
LoadedState read_checkpoint(const std::string& path, const std::vector<ParamTensor>& tensors, std::int64_t count,
                            const std::string& config, const std::string& split) {
  const safetensors::File f = safetensors::load(path);
  if (f.meta("format") != kParallelFormat) throw Error("load: " + path + " is not a split-run checkpoint");
  if (f.meta("config") != config) throw Error("load: " + path + " holds another model");
  if (f.metadata.count("split") && f.meta("split") != split)
    throw Error("load: " + path + " was saved by a run split " + f.meta("split") + ", not " + split);
  LoadedState L;
  const char* prefix[3] = {"optim.master.", "optim.adam_m.", "optim.adam_v."};
  for (auto& a : L.state) a.assign((std::size_t)count, 0.f);
  std::set<std::string> done;
  for (const auto& t : tensors) {
    if (!done.insert(t.name).second) continue;
    for (int k = 0; k < 3; ++k) {
      const auto& x = f.get(prefix[k] + t.name);
      if (x.shape != tensor_shape(t)) throw Error("load: tensor '" + t.name + "' has the wrong shape in " + path);
      const std::vector<float> vals = x.f32();
      std::copy(vals.begin(), vals.end(), L.state[k].begin() + t.full_offset);
    }
  }
  const auto number = [&](const char* k) {
    const std::string& s = f.meta(k);
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end) throw Error(std::string("load: bad '") + k + "' in " + path);
    return (std::uint64_t)v;
  };
  L.step = number("step");
  L.data_rng = number("data_rng");
  if (f.metadata.count("steps")) L.planned = number("steps");
  return L;
}

std::int64_t full_count(const std::vector<ParamTensor>& tensors) {
  std::int64_t n = 0;
  for (const auto& t : tensors) n = std::max(n, t.full_offset + t.size());
  return n;
}

// Host-side messages of the checkpoint exchanges: int64 and float arrays, one after another.
struct Packer {
  std::vector<std::uint8_t> b;
  template <class T>
  void put(const T* p, std::size_t n) {
    const auto* c = reinterpret_cast<const std::uint8_t*>(p);
    b.insert(b.end(), c, c + n * sizeof(T));
  }
};
struct Unpacker {
  const std::vector<std::uint8_t>& b;
  std::size_t at = 0;
  template <class T>
  void get(T* p, std::size_t n) {
    if (at + n * sizeof(T) > b.size()) throw Error("checkpoint exchange: a rank sent a short message");
    if (n) std::memcpy(p, b.data() + at, n * sizeof(T));
    at += n * sizeof(T);
  }
};
}  // namespace

std::map<std::string, std::string> ParallelTrainer::Impl::checkpoint_meta() const {
  return {{"format", kParallelFormat},
          {"config", config_to_string(mc)},
          {"step", std::to_string(step_)},
          {"steps", std::to_string(opt.steps)},  // the schedule's length, for a resume that names none
          {"data_rng", std::to_string(data_rng.state())},
          {"zero", std::to_string(opt.zero)},  // how it ran; the layout is the same
          {"split", split_of(opt, S)}};
}

// [SECTION] Checkpoints across processes (ParallelOptions::comm)
// The same file as the same split on virtual ranks writes: every rank sends rank 0 the
// state it holds in the unsharded layout (the tensors whose copies count, or its ZeRO-1
// pieces); rank 0 writes the file (atomically, as safetensors::save does). Loading, rank 0
// reads the file and hands each rank the state of the tensors it holds. Either way every rank
// learns whether rank 0 succeeded (agree()): a bad file is the same line on every process.

// This rank's parts of the optimizer state: the tensors whose copies count (ZeRO-1: its
// pieces), or all it holds.
std::vector<ParallelTrainer::Impl::StatePart> ParallelTrainer::Impl::state_parts(bool counted_only) const {
  const Rank& R = ranks[(std::size_t)me];
  const ParamStore& P = R.model->params();
  std::vector<StatePart> out;
  if (zero1() && counted_only) {
    for (const OptimizerPiece& pc : R.pieces)
      for_each_tensor_part(P, pc.flat, pc.n, [&](std::int64_t full, std::int64_t flat, std::int64_t len) {
        out.push_back({full, len, pc.at + (flat - pc.flat)});
      });
    return out;
  }
  for (const auto& t : P.tensors())
    if (!counted_only || (dense_kind(t.kind) ? R.coord.dp == 0 : R.coord.ep_group == 0)) out.push_back({t.full_offset, t.size(), t.offset});
  return out;
}

// This rank's counted parts of the first `arrays` optimizer arrays (master, adam_m, adam_v):
// how many parts, their (full offset, n), then each array's values part by part.
std::vector<std::uint8_t> ParallelTrainer::Impl::pack_state(int arrays) const {
  const Rank& R = ranks[(std::size_t)me];
  const ParamStore& P = R.model->params();
  const std::vector<StatePart> parts = state_parts(true);
  Packer pk;
  const std::int64_t count = (std::int64_t)parts.size();
  pk.put(&count, 1);
  for (const StatePart& p : parts) pk.put(&p.full, 1), pk.put(&p.n, 1);
  for (int k = 0; k < arrays; ++k) {
    const float* src = zero1() ? (k == 0 ? R.master.data() : k == 1 ? R.adam_m.data() : R.adam_v.data())
                               : (k == 0 ? P.master.data() : k == 1 ? P.adam_m.data() : P.adam_v.data());
    for (const StatePart& p : parts) pk.put(src + p.at, (std::size_t)p.n);
  }
  return pk.b;
}

// On rank 0: the first `arrays` optimizer arrays of the whole model from every rank's pieces;
// elsewhere: empty.
std::vector<std::vector<float>> ParallelTrainer::Impl::gather_state_to_root(int arrays) const {
  const auto all = gather_to_root(host(), pack_state(arrays));
  std::vector<std::vector<float>> state;
  if (me != 0) return state;
  state.assign((std::size_t)arrays, std::vector<float>((std::size_t)full_count(whole_tensors), 0.f));
  for (const auto& blob : all) {
    Unpacker u{blob};
    std::int64_t n = 0;
    u.get(&n, 1);
    std::vector<std::int64_t> fn((std::size_t)n * 2);
    u.get(fn.data(), fn.size());
    for (auto& a : state)
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t at = fn[(std::size_t)(2 * i)], len = fn[(std::size_t)(2 * i + 1)];
        if (at < 0 || len < 0 || at + len > (std::int64_t)a.size()) throw Error("checkpoint exchange: a rank sent state outside the model");
        u.get(a.data() + at, (std::size_t)len);
      }
  }
  return state;
}

std::vector<float> ParallelTrainer::Impl::master_weights_across() const {
  std::vector<std::vector<float>> state = gather_state_to_root(1);
  std::vector<std::uint8_t> bytes;
  if (me == 0) {
    const auto* b = reinterpret_cast<const std::uint8_t*>(state[0].data());
    bytes.assign(b, b + state[0].size() * sizeof(float));
  }
  bytes = broadcast_from_root(host(), std::move(bytes));
  std::vector<float> out(bytes.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

void ParallelTrainer::Impl::save_across(const std::string& path) const {
  const std::vector<std::vector<float>> state = gather_state_to_root(3);
  std::string error;
  if (me == 0) {
    try {
      write_checkpoint(path, whole_tensors, state[0], state[1], state[2], checkpoint_meta());
    } catch (const Error& e) {
      error = e.what();
    }
  }
  agree(host(), error);
}

void ParallelTrainer::Impl::load_across(const std::string& path, bool keep_steps) {
  LoadedState L;
  std::string error;
  if (me == 0) {
    try {
      L = read_checkpoint(path, whole_tensors, full_count(whole_tensors), config_to_string(mc), split_of(opt, S));
    } catch (const Error& e) {
      error = e.what();
    }
  }
  agree(host(), error);
  // Every rank asks for the tensors it holds (all its copies), rank 0 answers.
  const std::vector<StatePart> parts = state_parts(false);
  Packer ask;
  for (const StatePart& p : parts) ask.put(&p.full, 1), ask.put(&p.n, 1);
  const auto asked = gather_to_root(host(), ask.b);
  std::vector<std::uint8_t> answer;
  if (me == 0) {
    host().group([&] {
      for (int r = 1; r < (int)ranks.size(); ++r) {
        Packer pk;
        const std::uint64_t head[3] = {L.step, L.data_rng, L.planned};
        pk.put(head, 3);
        const auto& q = asked[(std::size_t)r];
        std::vector<std::int64_t> fn(q.size() / sizeof(std::int64_t));
        if (!fn.empty()) std::memcpy(fn.data(), q.data(), fn.size() * sizeof(std::int64_t));
        for (const auto& a : L.state)
          for (std::size_t i = 0; i + 1 < fn.size(); i += 2) {
            if (fn[i] < 0 || fn[i + 1] < 0 || fn[i] + fn[i + 1] > (std::int64_t)a.size())
              throw Error("load: rank " + std::to_string(r) + " asked for state outside the model");
            pk.put(a.data() + fn[i], (std::size_t)fn[i + 1]);
          }
        host().send(pk.b.data(), pk.b.size(), r);  // copied: pk may go
      }
    });
  } else {
    std::size_t n = 0;
    for (const StatePart& p : parts) n += (std::size_t)p.n;
    answer.resize(3 * sizeof(std::uint64_t) + 3 * n * sizeof(float));
    host().recv(answer.data(), answer.size(), 0);
    Unpacker u{answer};
    std::uint64_t head[3];
    u.get(head, 3);
    L.step = head[0];
    L.data_rng = head[1];
    L.planned = head[2];
    for (auto& a : L.state) {
      a.assign((std::size_t)full_count(whole_tensors), 0.f);
      for (const StatePart& p : parts) u.get(a.data() + p.full, (std::size_t)p.n);
    }
  }
  if (!keep_steps) limits::require_steps_reach(opt.steps, L.step);  // every process knows L.step by now
  // (Each rank holds the arrays whole, zeros outside its parts, for scatter_state: fine at the
  // sizes a host holds anyway, as master_weights() does.)
  std::span<Rank> mine(&ranks[(std::size_t)me], 1);
  take_state(*this, mine, L.state[0], L.state[1], L.state[2], (std::int64_t)L.step, L.data_rng);
  if (keep_steps) adopt_steps(L.planned);
}

void ParallelTrainer::save(const std::string& path) const {
  const Impl& I = *impl_;
  if (I.current || I.stepping) throw Error("save: a step is in progress");
  if (I.opt.comm) return I.save_across(path);
  std::vector<ParamTensor> tensors;
  for (const auto& R : I.ranks) tensors.insert(tensors.end(), R.model->params().tensors().begin(), R.model->params().tensors().end());
  write_checkpoint(path, tensors, gather_state(I.ranks, I.zero1(), StateArray::Master),
                   gather_state(I.ranks, I.zero1(), StateArray::AdamM), gather_state(I.ranks, I.zero1(), StateArray::AdamV),
                   I.checkpoint_meta());
}

void ParallelTrainer::load(const std::string& path, bool keep_its_steps) {
  Impl& I = *impl_;
  if (I.current || I.stepping) throw Error("load: a step is in progress");
  if (I.opt.comm) return I.load_across(path, keep_its_steps);
  std::vector<ParamTensor> tensors;
  for (const auto& R : I.ranks) tensors.insert(tensors.end(), R.model->params().tensors().begin(), R.model->params().tensors().end());
  const LoadedState L = read_checkpoint(path, tensors, full_count(tensors), config_to_string(I.mc), split_of(I.opt, I.S));
  if (!keep_its_steps) limits::require_steps_reach(I.opt.steps, L.step);
  take_state(I, I.ranks, L.state[0], L.state[1], L.state[2], (std::int64_t)L.step, L.data_rng);
  if (keep_its_steps) I.adopt_steps(L.planned);
}

void ParallelTrainer::state_into(State& s) const {
  const Impl& I = *impl_;
  if (I.current || I.stepping) throw Error("state: a step is in progress");
  if (I.opt.comm) throw Error("state: the ranks are in other processes (save() writes a checkpoint instead)");
  gather_state_into(I.ranks, I.zero1(), StateArray::Master, s.master);
  gather_state_into(I.ranks, I.zero1(), StateArray::AdamM, s.adam_m);
  gather_state_into(I.ranks, I.zero1(), StateArray::AdamV, s.adam_v);
  s.step = I.step_;
  s.data_rng = I.data_rng.state();
}

void ParallelTrainer::set_state(const State& s) {
  Impl& I = *impl_;
  if (I.current || I.stepping) throw Error("set_state: a step is in progress");
  if (I.opt.comm) throw Error("set_state: the ranks are in other processes (load() reads a checkpoint instead)");
  const std::size_t n = (std::size_t)whole_count(I.ranks);
  if (s.master.size() != n || s.adam_m.size() != n || s.adam_v.size() != n || s.step < 0)
    throw Error("set_state: the state is of another model (" + std::to_string(s.master.size()) + " weights, this one has " +
                std::to_string(n) + ")");
  take_state(I, I.ranks, s.master, s.adam_m, s.adam_v, s.step, s.data_rng);
}

bool ParallelTrainer::replicas_agree() const {
  if (impl_->opt.comm) throw Error("replicas_agree: the replicas live in other processes");
  std::vector<float> first = master_weights();
  if (impl_->zero1()) {
    // One master copy a weight: each piece's bf16 weights are the rounding of its master.
    for (const auto& R : impl_->ranks)
      for (const OptimizerPiece& pc : R.pieces)
        for (std::int64_t i = 0; i < pc.n; ++i)
          if (R.model->params().weights[(std::size_t)(pc.flat + i)] != float_to_bf16(R.master[(std::size_t)(pc.at + i)]))
            return false;
    return true;
  }
  for (const auto& R : impl_->ranks) {
    const ParamStore& P = R.model->params();
    for (const auto& t : P.tensors())
      if (std::memcmp(P.master.data() + t.offset, first.data() + t.full_offset, (std::size_t)t.size() * sizeof(float)) != 0)
        return false;
  }
  return true;
}

}  // namespace onegpu::trainer
