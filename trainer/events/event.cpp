#include "trainer/events/event.h"

namespace onegpu::trainer {

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::Forward: return "forward";
    case EventKind::Backward: return "backward";
    case EventKind::WeightGradient: return "weight-gradient";
    case EventKind::Send: return "send";
    case EventKind::Recv: return "recv";
    case EventKind::AllReduce: return "all-reduce";
    case EventKind::AllToAll: return "all-to-all";
    case EventKind::Broadcast: return "broadcast";
    case EventKind::Update: return "update";
    case EventKind::MemoryLevel: return "memory";
    case EventKind::Loss: return "loss";
    case EventKind::Probe: return "probe";
    case EventKind::Dropped: return "dropped";
    case EventKind::StepEnd: return "step";
    case EventKind::GradNorm: return "grad-norm";
    case EventKind::StepMemory: return "step-memory";
    case EventKind::RouterCount: return "router";
    case EventKind::Traffic: return "traffic";
    case EventKind::ReduceScatter: return "reduce-scatter";
    case EventKind::AllGather: return "all-gather";
  }
  return "unknown";
}

}  // namespace onegpu::trainer
