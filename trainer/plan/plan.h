#pragma once
// A compiled plan: one ordered program of ops per rank, for one training step.
//
// Forward of a model chunk for a microbatch is, with ep = 1, one Forward op over the chunk's
// layers [layer_begin, layer_end) (plus the embedding on chunk 0, and the final norm, LM head
// and loss on the last chunk). With ep > 1 the tokens travel to the ranks that hold their
// experts in every layer, so each layer becomes
//   Forward(Attention)  norm, attention, residual, norm, router, top-k, pack tokens by owner
//   AllToAll(DispatchFwd)  tokens to the ranks holding their experts
//   Forward(Experts)    local experts on the tokens received
//   AllToAll(CombineFwd)   expert outputs back to the tokens' ranks
//   Forward(Combine)    weighted sum of the top-k outputs + residual
// and backward runs the same in reverse (Combine, CombineBwd, Experts, DispatchBwd, Attention).
// ZB-H1 splits backward into BackwardInput (B, the same parts) and one BackwardWeight (W) op
// per chunk and microbatch, which needs no communication.
//
// Sends are eager (a send never waits for its receive); a Recv waits for its Send; every
// member of a collective waits until all members have arrived. Groups of one rank are
// omitted (no all-reduce at dp=1, no all-to-all at ep=1).
//
// ZeRO-1 (RunConfig::zero = 1): the optimizer state is split over the members of each dense
// and expert group, so the gradients are reduce-scattered instead of all-reduced (each member
// gets the sum of its piece only) and, after each member has updated its piece, the bf16
// weights are all-gathered. The update runs after the engine's step (clipping needs the whole
// model's norm), so the all-gather of step n's update opens step n+1's program, before its
// first forward; the first step's broadcast stands in for it.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/events/event.h"
#include "trainer/plan/config.h"
#include "trainer/plan/layout.h"

namespace onegpu::trainer {

enum class OpKind : std::uint8_t {
  Broadcast,       // initial model, one layer at a time (first step only)
  Forward,
  Backward,
  BackwardInput,   // B: gradient w.r.t. the chunk's input (zero-bubble)
  BackwardWeight,  // W: gradient w.r.t. the chunk's weights (zero-bubble)
  Send,
  Recv,
  AllToAll,
  AllReduce,
  ReduceScatter,  // ZeRO-1: each member gets the sum of its piece of the gradients
  AllGather,      // ZeRO-1: each member's piece of the updated bf16 weights to every member
  Update,  // last: kOpKindCount counts up to here
};
inline constexpr int kOpKindCount = static_cast<int>(OpKind::Update) + 1;

enum class Part : std::uint8_t { Chunk, Attention, Experts, Combine };
enum class Payload : std::uint8_t { None, Activation, Gradient };
enum class AllToAllPhase : std::uint8_t { None, DispatchFwd, CombineFwd, CombineBwd, DispatchBwd };
enum class Group : std::uint8_t { None, Dense, Expert, AllToAll };

// Every spelling of an op kind, in one table (plan.cpp, static_assert'ed to cover each kind):
// its name, its short label in describe(), its label in a trace, and the event kind the
// engine records for it. Nothing else spells a kind.
struct OpKindInfo {
  OpKind kind;
  std::string_view name;         // "backward-input"
  std::string_view short_label;  // "Bi" (describe)
  std::string_view trace_label;  // "B (input)" (Chrome/Perfetto trace)
  EventKind event;               // EventKind::Backward
};
const OpKindInfo& op_kind_info(OpKind k);
// The op's label: the kind's label, then what tells it apart (payload, all-to-all phase,
// group). trace=true uses trace_label.
struct Op;
std::string kind_label(const Op& op, bool trace);

std::string_view to_string(OpKind k);  // op_kind_info(k).name
std::string_view to_string(Part p);
std::string_view to_string(AllToAllPhase p);
std::string_view to_string(Group g);

struct Op {
  std::uint32_t id = 0;  // index into Plan::ops; stable for a given config
  OpKind kind = OpKind::Forward;
  Part part = Part::Chunk;
  Payload payload = Payload::None;
  AllToAllPhase phase = AllToAllPhase::None;
  Group group = Group::None;
  std::int32_t rank = 0;
  std::int32_t stage = 0;
  std::int32_t chunk = -1;        // model chunk (virtual stage), -1 for whole-rank ops
  std::int32_t layer_begin = -1;  // [layer_begin, layer_end)
  std::int32_t layer_end = -1;
  std::int32_t microbatch = -1;
  std::int32_t peer = -1;         // Send/Recv: the other rank; Broadcast: the root
  std::int32_t match = -1;        // Send <-> Recv: the other op's id
  std::int32_t collective = -1;   // index into Plan::collectives
  std::int64_t bytes = 0;         // bytes this rank sends (collectives: its buffer size)

  // Any part of a backward pass (whole, or ZB-H1's input- and weight-gradient halves).
  bool is_backward() const {
    return kind == OpKind::Backward || kind == OpKind::BackwardInput || kind == OpKind::BackwardWeight;
  }
  bool is_compute() const {
    return kind == OpKind::Forward || kind == OpKind::Backward || kind == OpKind::BackwardInput ||
           kind == OpKind::BackwardWeight || kind == OpKind::Update;
  }
  bool is_collective() const { return collective >= 0; }
};

// One collective call: every member rank has one op for it in its program.
struct Collective {
  OpKind kind = OpKind::AllReduce;
  Group group = Group::None;
  std::int32_t group_id = -1;          // which dense / expert / all-to-all group
  std::vector<std::int32_t> ranks;     // members, in rank order (the fixed reduction order)
  std::vector<std::uint32_t> ops;      // the members' op ids, same order
  std::int64_t bytes = 0;              // per-member buffer
};

struct PlanOptions {
  bool broadcast_model = false;  // prepend the initial per-layer broadcast (first step)
};

struct Plan {
  RunConfig config;
  Layout layout;
  std::vector<Op> ops;
  std::vector<std::vector<std::uint32_t>> programs;  // per rank, op ids in order
  std::vector<Collective> collectives;

  explicit Plan(const RunConfig& cfg) : config(cfg), layout(cfg) {}
  const Op& op(std::uint32_t id) const { return ops[id]; }
  int world() const { return layout.world(); }
};

// Throws Error (one line) if the config cannot be split.
Plan compile_plan(const RunConfig& cfg, const PlanOptions& options = {});

// Structural checks of a (possibly hand-edited) plan: every Recv has a matching Send and
// vice versa, collective members agree, ids are consistent. Throws Error naming the first
// problem. Whether the plan can run without deadlock is for the simulator (virtual_clock.h).
void check_plan(const Plan& plan);

// "F c1 l4-8 mb3" style label used in traces, errors and tests.
std::string describe(const Op& op);

}  // namespace onegpu::trainer
