#pragma once
// The real model on the engine: a run split over virtual ranks (dp × ep × pp, vstages,
// schedule) where every rank holds only its part of the model and does its own maths.
//
// Each rank has its own MemoryTracker, CPU backend and parameter shard (ParamStore shard,
// params.h): the embedding on the stage holding chunk 0, final norm and head on the stage
// holding the last chunk, the blocks of its chunks with their norms, attention and router (the
// same on every dp rank of the stage) and, of every block, only its slice of the experts.
// The members of an expert group hold the same shard and, from the first update on, bitwise
// the same weights and optimizer state: they then share one copy of those arrays (only the
// first member runs the update), each tracker still charged what a real device would hold.
// Gradients and activations are each rank's own.
// The ops of the plan (plan.h) run the model's pieces:
//   Forward / Backward     the chunk's blocks (and embedding, or head and loss) for one
//                          microbatch; with ep > 1 a block runs as attention, experts, combine
//   Send / Recv            hidden states up, their gradients down, through a buffer charged
//                          to the sender's Communication memory until it is received
//   AllToAll               the router's real choices: rows of each token go to the rank
//                          holding that expert (dispatch), outputs come back (combine), and
//                          the same in reverse for gradients
//   AllReduce              sum of the members' gradients, members in rank order (fixed
//                          order: a run is bitwise reproducible)
//   Broadcast              (first step) weights from the group's first rank, which is the
//                          only one initialised: the others start at zero
//   Update                 this rank's share of the squared gradient norm (each weight counted
//                          once over all its copies)
// ReduceScatter / AllGather (ZeRO-1) as AllReduce, each member keeping (then handing out)
//                        its own piece only
// Gradient clipping needs the norm over the whole model, which only exists once every
// rank's Update has run, so AdamW itself is applied to each shard right after the engine's
// step (step() does it; its cost is in `seconds` but not on the virtual clock).
//
// Losses are scaled by the global batch (1 / all target tokens of the step; router losses by
// 1 / all microbatches), so all-reduce sums; the logged loss is the mean over the whole
// global batch and is the same number for every split, up to float summation order.
// ZB-H1: BackwardInput runs the input parts (gradients for the layer below, and the norm
// gains); BackwardWeight runs later and adds the attention, router and expert weight
// gradients from what B kept (with ep > 1 each rank does W for its own experts on the rows it
// was sent). Bitwise the same numbers as one backward.
// CPU ranks make the expert weight gradients of rows other ranks sent once a step, from the
// rows of all the step's microbatches, when the layer's last one has come (expert_grad_rows.h):
// bitwise the same gradients as a product a microbatch, which left 1-3-row products reading
// and writing whole cold gradients.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainer/engine/engine.h"
#include "trainer/memory/tracker.h"
#include "trainer/model/config.h"
#include "trainer/model/model.h"
#include "trainer/optim/adamw.h"
#include "trainer/plan/plan.h"
#include "trainer/train/dataset.h"

namespace onegpu::trainer {

class Comm;

struct ParallelOptions {
  int dp = 1, ep = 1, pp = 1, vstages = 1;
  int microbatches = 1;  // per data-parallel rank per step
  Schedule schedule = Schedule::OneFOneB;
  int batch = 4;         // global batch, texts; each dp rank takes batch / dp
  int seq_len = 0;       // tokens per text; 0: the model's
  std::uint64_t seed = 1;
  int steps = 1000;      // the learning-rate schedule's length
  AdamWConfig optim;     // total_steps is set from steps
  int workers = 0;       // engine threads; 0: one per core
  CostModel cost;        // virtual clock
  bool thread_cpu_costs = false;  // EngineOptions::thread_cpu_costs: ops cost their thread's CPU time
  bool broadcast_first_step = true;
  // Members of an expert group share one set of weights and optimizer state from set-up (the
  // broadcasts then only charge the bytes they carry). With this set, each member keeps arrays
  // of its own, filled by the first step's real broadcasts, until the second step begins: for a
  // picture that shows the copy arrive and checks it equal.
  bool separate_first_copy = false;
  bool op_per_layer = false;  // RunConfig::op_per_layer (ep = 1: layer-by-layer ops)
  // With op_per_layer: the position in each microbatch's first text whose next-token guess
  // the head's probes report (-1: the last). A picture asking about a prompt at the text's
  // start sets it to the prompt's last token.
  int probe_position = -1;
  int probe_top = 5;  // how many of the head's likeliest next tokens those probes report
  // 0: every copy keeps the fp32 master and Adam moments of all its weights. 1: ZeRO-1, each
  // of the d ranks holding copies of a weight (the stage's dp ranks for dense weights, the
  // dp/ep ranks sharing an expert) keeps 1/d of them: per collective (chunk and group) member
  // i of d keeps [n·i/d, n·(i+1)/d) of the n weights it covers. Gradients are then
  // reduce-scattered, each rank updates its piece, and the bf16 weights are all-gathered at
  // the start of the next step (plan.h). The same run with zero 0 and 1 gives bitwise the
  // same losses and weights (tests/trainer/parallel/zero_test.cpp).
  int zero = 0;
  EventStream* events = nullptr;  // engine events and the runner's loss events, if given
  // Where each rank's ops run: "cpu" (the reference) or "cuda": every rank a virtual rank on
  // one GPU with its own stream and device memory; what ranks hand each other is copied on the
  // device (ordered by Backend::after, no host wait), collectives sum members in rank order as
  // here, and op costs come from CUDA events (Backend::mark_begin). Bitwise the CPU's numbers
  // where the ops are (tests/trainer/cuda).
  std::string device = "cpu";
  bool tf32 = false;  // with "cuda": TF32 tensor cores for the matmuls
  int cuda_device = 0;  // with "cuda": the GPU (one process per GPU: its LOCAL_RANK)
  // Tests: each rank's backend from this instead of `device` (given the rank's tracker). A
  // backend that says timed_on_device() is run as a device: copies through it, costs from it.
  std::function<std::unique_ptr<Backend>(MemoryTracker&)> make_backend;
  // One process per rank (trainer/dist/comm.h): this process builds and runs only rank
  // comm->rank() of the plan, in program order, its collectives, sends and receives going
  // through comm (whose world must be the plan's; an all-to-all is one group of sends and
  // receives). Every process draws the same global batch and takes its own microbatches. The
  // step's record (loss, norm, memory, each op's wall times in the timeline, memory_events())
  // is gathered, so every process holds the whole run's: bitwise the numbers of the same
  // split on virtual ranks when comm sums in member order (SocketComm does). The timeline is
  // then measured wall time (each process's clock from its step's start), not the virtual
  // clock's model. ZeRO-1 runs (its reduce-scatter and all-gather through comm); save() and
  // load() are collectives (rank 0 writes and reads the file), as is master_weights(). Not
  // yet: paced stepping (engine()), separate_first_copy; each is one line of Error.
  Comm* comm = nullptr;
  // The small host-side exchanges (the step's record, checkpoints, the weights gathered) when
  // comm carries device memory (NCCL); null: comm carries them too.
  Comm* host_comm = nullptr;
};

// The plan's configuration for a model and options, sizes from the real model. Throws Error
// with one line naming the first rule broken (plan rules, batch split, sequence length).
RunConfig parallel_run_config(const ModelConfig& model, const ParallelOptions& opt);
// What one process per rank (ParallelOptions::comm) does not run yet, as one line of Error.
void check_process_options(const ParallelOptions& opt);

struct ParallelStepResult {
  int step = 0;               // updates done, after this one
  double loss = 0.0;          // mean cross-entropy per target token over the global batch
  double aux_loss = 0.0;      // router losses, mean over all microbatches
  float lr = 0.f;
  double grad_norm = 0.0;     // before clipping, over the whole model
  double seconds = 0.0;       // wall time: engine step plus the update
  double virtual_seconds = 0.0;  // the step on the virtual clock
  double bubble = 0.0;        // measured: mean over stages of the idle fraction (summarize())
  std::vector<double> stage_idle;
  std::vector<MemStats> memory;  // per rank: current at the end and peaks during the step
  // Token rows the routers sent to each expert, summed over ranks and microbatches:
  // router_counts[layer * experts + expert].
  std::vector<std::int64_t> router_counts;
  // What the forward all-to-all dispatch moved between ranks (rows to another rank only).
  struct Traffic {
    std::int32_t layer = 0, from = 0, to = 0;
    std::int64_t rows = 0;
  };
  std::vector<Traffic> traffic;  // by layer, then sender, then receiver
};

class ParallelTrainer {
 public:
  // Weights as Trainer's for the same seed (one whole store is initialised, then shared
  // out); data drawn as Trainer draws it. `train` must outlive the trainer.
  ParallelTrainer(ModelConfig model, const ParallelOptions& opt, const TokenDataset& train);
  ~ParallelTrainer();
  ParallelTrainer(const ParallelTrainer&) = delete;
  ParallelTrainer& operator=(const ParallelTrainer&) = delete;

  ParallelStepResult step();                   // samples the global batch
  ParallelStepResult step(const Batch& global);  // opt.batch texts of seq_len tokens
  // Paced / by hand: begin_step() draws the batch (as step() would) and starts the step with
  // nothing released; engine() then releases ops (step_one, release_ops,
  // release_microbatches, waiting_ops); finish_step() runs what is left, applies the update
  // and returns the step's record. step() is begin_step() + finish_step().
  void begin_step();
  void begin_step(const Batch& global);
  Engine& engine();
  ParallelStepResult finish_step();
  int steps_done() const;
  bool done() const;

  int world() const;
  const ModelConfig& model_config() const;
  const ParallelOptions& options() const;
  const Plan& plan() const;            // the plan of the last step (the first has broadcasts)
  const Timeline& timeline() const;    // of the last step
  std::vector<Event> memory_events() const;  // of the last step: activation level after ops
  const MemoryTracker& tracker(int rank) const;
  const ParamStore& params(int rank) const;

  // The whole model's master weights, gathered from the ranks in the unsharded layout.
  std::vector<float> master_weights() const;
  // Checkpoints, always in the unsharded layout (every weight once: bf16 weight, fp32 master,
  // both Adam moments; the step and the data RNG), whatever the run's zero: a run with zero 1
  // loads what one with zero 0 saved and the reverse, and goes on bitwise as if never stopped.
  // load() throws Error (one line) for a file of another model or format, or of another split
  // (metadata "split": dp, ep, pp, vstages, schedule, microbatches, batch; zero and the device
  // may differ). One process per rank: both are collectives and the file is the one the same
  // split on virtual ranks writes (rank 0 gathers and writes it; rank 0 reads it and hands each
  // rank its part); a failure is the same Error on every process.
  // The file also records the run's planned steps (the schedule's length). keep_its_steps: the
  // run takes them as its own (a resume that names no --steps goes on as it was planned); a
  // file written before they were recorded leaves the run's.
  void save(const std::string& path) const;
  void load(const std::string& path, bool keep_its_steps = false);
  // What save() writes, in memory instead of a file (virtual ranks only): the unsharded master
  // weights and both Adam moments, the steps done and the data RNG. set_state() takes it into a
  // run of the same model under any split, which then goes on as load() would have it (the
  // Lab's branch of a late step starts from the live run's state a step or a few before it,
  // instead of training every step from the first again). state_into() reuses s's arrays:
  // a fresh array's first writes cost more than the copy. Both throw Error during a step, for
  // ranks in other processes, and (set_state) for a state of another model.
  struct State {
    std::vector<float> master, adam_m, adam_v;
    int step = 0;
    std::uint64_t data_rng = 0;
    std::size_t bytes() const { return (master.size() + adam_m.size() + adam_v.size()) * sizeof(float); }
  };
  void state_into(State& s) const;
  void set_state(const State& s);
  // Every copy of every weight (on all ranks that hold it) is bitwise the same.
  bool replicas_agree() const;
  // Token rows (token × chosen expert) `rank` sent to experts on other ranks in the forward
  // all-to-all dispatch of the current or last step, per layer (summed over microbatches).
  std::vector<std::int64_t> rows_sent_away(int rank) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace onegpu::trainer
