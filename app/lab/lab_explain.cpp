#include "app/lab/lab_explain.h"

#include <span>

namespace onegpu::app {

using trainer::OpKind;
using trainer::Part;

namespace {

std::string layers(const trainer::Op& op) {
  if (op.layer_begin < 0) return {};
  if (op.layer_end == op.layer_begin + 1) return " · layer " + std::to_string(op.layer_begin + 1);
  return " · layers " + std::to_string(op.layer_begin + 1) + "\u2013" + std::to_string(op.layer_end);
}

}  // namespace

std::string op_title(const trainer::Op& op) {
  // The window counts GPUs from 1; traces and logs count ranks from 0 (as torchrun does): both
  // named here, where an engineer goes from one to the other.
  std::string s = "GPU " + std::to_string(op.rank + 1) + " (rank " + std::to_string(op.rank) + ") · ";
  switch (op.kind) {
    case OpKind::Forward: s += "forward"; break;
    case OpKind::Backward: s += "backward"; break;
    case OpKind::BackwardInput: s += "backward (input part)"; break;
    case OpKind::BackwardWeight: s += "backward (weight part)"; break;
    case OpKind::Send: s += op.payload == trainer::Payload::Activation ? "send activations" : "send gradients"; break;
    case OpKind::Recv: s += op.payload == trainer::Payload::Activation ? "receive activations" : "receive gradients"; break;
    case OpKind::AllToAll: s += "all-to-all (" + std::string(trainer::to_string(op.phase)) + ")"; break;
    case OpKind::AllReduce: s += op.group == trainer::Group::Expert ? "all-reduce (expert gradients)" : "all-reduce (gradients)"; break;
    case OpKind::ReduceScatter: s += "reduce-scatter (gradients, ZeRO-1)"; break;
    case OpKind::AllGather: s += "all-gather (updated weights, ZeRO-1)"; break;
    case OpKind::Broadcast: s += "broadcast (weights)"; break;
    case OpKind::Update: s += "update"; break;
  }
  if (op.part != Part::Chunk) s += " " + std::string(trainer::to_string(op.part));
  s += layers(op);
  if (op.microbatch >= 0) s += " · microbatch " + std::to_string(op.microbatch + 1);
  if (op.peer >= 0 && (op.kind == OpKind::Send || op.kind == OpKind::Recv))
    s += (op.kind == OpKind::Send ? " → GPU " : " ← GPU ") + std::to_string(op.peer + 1);
  return s;
}

std::string op_explanation(const trainer::Op& op, const trainer::Plan& plan) {
  const bool first = op.chunk == 0 && op.layer_begin == plan.layout.first_layer(0);
  const bool last = op.chunk == plan.config.chunks() - 1 && op.layer_end == plan.layout.end_layer(op.chunk);
  switch (op.kind) {
    case OpKind::Forward:
      switch (op.part) {
        case Part::Attention: return "Each token looks back at the tokens before it (attention), then the router picks the experts it will visit.";
        case Part::Experts: return "The experts held here work on the tokens that were sent to them.";
        case Part::Combine: return "Each token adds up its experts' answers, weighted by the router's gates.";
        case Part::Chunk:
          if (first && last) return "The texts go up through these layers: embedding, attention, router and experts, then the head guesses every next token and the loss is measured.";
          if (first) return "The texts enter as token embeddings and go up through these layers (attention, router, experts).";
          if (last) return "The activations go up through these layers; then the head guesses every next token and the loss says how wrong it was.";
          return "The activations go up through these layers: attention, router, experts.";
      }
      break;
    case OpKind::Backward:
    case OpKind::BackwardInput:
      if (op.part == Part::Experts) return "The experts work out how their weights should change, and pass the blame back to the tokens' GPUs.";
      if (op.kind == OpKind::BackwardInput) return "Backward, first half: only the gradient for the layer below, so the GPU below can start sooner.";
      return "Going back down: each layer works out how much each of its weights is to blame for the loss (its gradient).";
    case OpKind::BackwardWeight: return "Backward, second half: the weights' own gradients, done later to fill time that would be idle.";
    case OpKind::Send:
      return op.payload == trainer::Payload::Activation ? "The activations leave for the next stage's GPU, which waits for them."
                                                        : "The gradients leave for the previous stage's GPU, which waits for them.";
    case OpKind::Recv:
      return op.payload == trainer::Payload::Activation ? "The activations from the stage below arrive; this GPU could not start before."
                                                        : "The gradients from the stage above arrive; now this stage can go backward.";
    case OpKind::AllToAll: return "Tokens travel to the GPUs holding their chosen experts (or the answers travel back): every GPU of the group trades with every other.";
    case OpKind::AllReduce: return "The copies add up their gradients so every copy takes the same step: all members wait for the slowest.";
    case OpKind::ReduceScatter: return "The copies add up their gradients, but each keeps only the sum for its own piece of the weights: it alone updates that piece.";
    case OpKind::AllGather: return "Each copy hands the piece it updated to the others, so every copy holds all the new weights again.";
    case OpKind::Broadcast: return "The first copy hands its weights to the others, so every copy starts the same.";
    case OpKind::Update: return "This GPU measures its share of the gradient size; then the optimizer (AdamW) moves every weight a little.";
  }
  return {};
}

std::string token_text(const LiveRun& run, std::int64_t id) {
  if (!run.tokenizer || id < 0 || id >= (std::int64_t)run.tokenizer->vocab_size()) return "?";
  const std::int32_t one[1] = {(std::int32_t)id};
  std::string out;
  for (char c : run.tokenizer->decode(std::span<const std::int32_t>(one, 1))) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out;
}

std::string op_short(const trainer::Op& op, int microbatches) {
  std::string s;
  switch (op.kind) {
    case OpKind::Forward: s = "F"; break;
    case OpKind::Backward:
    case OpKind::BackwardInput: s = "B"; break;
    case OpKind::BackwardWeight: s = "W"; break;
    case OpKind::Send: return "send \u2192" + std::to_string(op.peer + 1);
    case OpKind::Recv: return "recv \u2190" + std::to_string(op.peer + 1);
    case OpKind::AllToAll: return "a2a";
    case OpKind::AllReduce: return "all-reduce";
    case OpKind::ReduceScatter: return "reduce-scatter";
    case OpKind::AllGather: return "all-gather";
    case OpKind::Broadcast: return "bcast L" + std::to_string(op.layer_begin + 1);
    case OpKind::Update: return "update";
  }
  if (op.part == Part::Attention) s += " att";
  else if (op.part == Part::Experts) s += " exp";
  else if (op.part == Part::Combine) s += " cmb";
  if (op.layer_begin >= 0) {
    s += " " + std::to_string(op.layer_begin + 1);
    if (op.layer_end > op.layer_begin + 1) s += "\u2013" + std::to_string(op.layer_end);
  }
  if (microbatches > 1 && op.microbatch >= 0) s += " mb" + std::to_string(op.microbatch + 1);
  return s;
}

std::string span_kind(const OpSpan& s) { return std::string(trainer::to_string(s.kind)); }

std::string compare_began_words(int step, std::uint64_t before, std::uint64_t branch_before, int first) {
  if (step == 0) return "· both began from the seed's initial weights";
  if (before && before == branch_before) return "· both began from weights equal bit for bit";
  if (before) return "· the weights they began from differ in rounding (the earlier steps ran under each split)";
  // No fingerprint: say what the branch trained, so the verdict is read knowing it.
  if (first == step) return "· the branch began from the live run's state before this step";
  if (first > 0)
    return "· the branch began from the live run's state after step " + std::to_string(first) + " and trained steps " +
           std::to_string(first + 1) + " to " + std::to_string(step + 1) + " under its split";
  return "· the branch trained steps 1 to " + std::to_string(step + 1) + " under its split from the seed's weights";
}

}  // namespace onegpu::app
