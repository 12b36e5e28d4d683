#pragma once
// What a run is split into: the numbers that decide the plan. Sizes (parameter counts,
// activation widths) only set the bytes of communication ops; they never change the order.
#include <cstdint>
#include <string>
#include <string_view>

namespace onegpu::trainer {

enum class Schedule : std::uint8_t {
  GPipe,        // all forwards, then all backwards
  OneFOneB,     // 1F1B: warm up, then alternate one forward and one backward
  Interleaved,  // interleaved 1F1B: vstages model chunks per rank (Megatron-LM order)
  ZeroBubbleH1, // ZB-H1: backward split into input-gradient B and weight-gradient W
};

std::string_view to_string(Schedule s);
// "gpipe", "1f1b", "interleaved", "zb1"; throws Error on anything else.
Schedule parse_schedule(std::string_view name);

// Bytes that travel; the model engineer fills these from the real model.
struct PlanSizes {
  std::int64_t tokens_per_microbatch = 256;   // tokens of one microbatch on one dp rank
  std::int64_t d_model = 64;
  std::int64_t activation_bytes_per_value = 4;  // fp32 activations and activation grads
  std::int64_t dense_params_per_layer = 0;      // attention, norms, router (0: derived from d)
  std::int64_t params_per_expert = 0;           // one expert MLP (0: derived from d)
  std::int64_t embedding_params = 0;            // held with the first chunk
  std::int64_t head_params = 0;                 // final norm + LM head, with the last chunk
  std::int64_t grad_bytes_per_param = 4;        // fp32 gradients are all-reduced
  std::int64_t weight_bytes_per_param = 2;      // bf16 weights are broadcast
};

struct RunConfig {
  int layers = 4;
  int experts = 16;
  int top_k = 2;
  int dp = 1;           // data-parallel ranks per stage (each reads its own data)
  int ep = 1;           // expert-parallel group size, inside dp
  int pp = 1;           // pipeline stages
  int vstages = 1;      // model chunks per rank (interleaved only)
  int microbatches = 1; // per data-parallel rank per step
  Schedule schedule = Schedule::OneFOneB;
  // ep = 1: one Forward / Backward op per layer instead of one per chunk, so a learner can
  // step through the layers by hand (the head and loss run with the chunk's last layer).
  bool op_per_layer = false;
  // 0: every copy keeps the whole optimizer state (all-reduce); 1: ZeRO-1 (plan.h).
  int zero = 0;
  PlanSizes sizes;

  int world() const { return pp * dp; }
  int chunks() const { return pp * vstages; }           // model chunks (virtual stages)
  int layers_per_chunk() const { return layers / chunks(); }
  int experts_per_rank() const { return experts / ep; }
};

// Throws Error with one line naming the first rule broken.
void validate(const RunConfig& cfg);

}  // namespace onegpu::trainer
