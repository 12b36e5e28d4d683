#pragma once
// One observable thing a rank did: a fixed-size, trivially copyable record that travels through
// the lock-free rings (ring.h) from the worker that produced it to the one consumer (the app,
// or a trace writer). Times: virtual seconds (the simulated devices' clock, engine/virtual_clock.h)
// and wall nanoseconds (steady_clock of the machine running the virtual ranks).
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "trainer/memory/category.h"

namespace onegpu::trainer {

enum class EventKind : std::uint8_t {
  Forward,
  Backward,        // full backward, or the input-gradient part B under zero-bubble schedules
  WeightGradient,  // the weight-gradient part W (zero-bubble schedules)
  Send,
  Recv,
  AllReduce,
  AllToAll,
  Broadcast,
  Update,
  MemoryLevel,     // bytes = level now, detail = memory category
  Loss,            // value = loss
  Probe,           // detail says which probe; value / bytes carry it
  Dropped,         // a ring overflowed: value = how many events were lost before this one
  // Once per step, from the thread that drives the run (the app's job runner):
  StepEnd,         // value = loss, bytes = tokens trained, virtual_end = step time on the
                   // virtual clock, wall_begin/end = the step on the wall clock, detail = 1 if
                   // the step was finished by hand
  GradNorm,        // value = gradient norm before clipping, over the whole model
  StepMemory,      // a rank's memory at the step's end: detail = category, bytes = current,
                   // value = peak during the step
  RouterCount,     // layer, peer = expert, bytes = token rows the routers sent it this step
  Traffic,         // all-to-all rows: rank -> peer, layer, bytes = token rows (forward dispatch)
  ReduceScatter,   // ZeRO-1: the gradients' reduce-scatter (an op, like AllReduce)
  AllGather,       // ZeRO-1: the updated weights' all-gather (an op)
};
inline constexpr int kEventKindCount = static_cast<int>(EventKind::AllGather) + 1;

std::string_view to_string(EventKind kind);

// Event::detail of a MemoryLevel or StepMemory event: a MemCategory (trainer/memory/category.h).

// Event::detail of a Probe event.
enum class ProbeKind : std::uint8_t {
  WeightsFingerprint = 1,  // bytes = 64-bit FNV-1a of every master weight after the update
  // Runs with op_per_layer (a learner stepping one rank by hand) also report:
  NextToken,     // after the head: bytes = token id, value = its probability (top few, most
                 // likely first), for the last position of the microbatch's first text
  Target,        // the token that really comes next there: bytes = id, value = its probability
  Context,       // the text before it: bytes = token id, layer = position (oldest first)
  LayerGradNorm, // after a layer's backward: layer, value = L2 norm of its gradients so far
  UpdateSize,    // after the update: layer (-1: whole model), value = |Δw| / |w|
  // Once per step from the app's job runner (the Lab's charts):
  LearningRate,  // value = the learning rate this step's update used
  HeldOutLoss,   // value = loss on held-out text after this step (every few steps, small runs)
};

struct Event {
  std::int32_t rank = -1;
  EventKind kind = EventKind::Forward;
  std::uint8_t detail = 0;  // sub-kind: op part, all-to-all phase, memory category, probe id
  std::int16_t layer = -1;  // first layer of the op's range, or the layer a probe looks at
  std::int32_t step = 0;
  std::int32_t microbatch = -1;
  std::int16_t chunk = -1;  // model chunk (virtual pipeline stage)
  std::int16_t peer = -1;   // other rank of a send / recv (fits 32767 ranks)
  std::uint32_t id = 0;     // op id in the plan; a sequence number for other producers
  double virtual_begin = 0;  // seconds
  double virtual_end = 0;
  std::int64_t wall_begin_ns = 0;
  std::int64_t wall_end_ns = 0;
  std::int64_t bytes = 0;
  double value = 0;
};

static_assert(std::is_trivially_copyable_v<Event>);
static_assert(sizeof(Event) == 72, "keep the event record small and fixed");

}  // namespace onegpu::trainer
