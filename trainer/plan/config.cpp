#include "trainer/plan/config.h"

#include <string>
#include <utility>

#include "trainer/error.h"

namespace onegpu::trainer {

std::string_view to_string(Schedule s) {
  switch (s) {
    case Schedule::GPipe: return "gpipe";
    case Schedule::OneFOneB: return "1f1b";
    case Schedule::Interleaved: return "interleaved";
    case Schedule::ZeroBubbleH1: return "zb1";
  }
  return "?";
}

Schedule parse_schedule(std::string_view name) {
  for (Schedule s : {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved,
                     Schedule::ZeroBubbleH1})
    if (name == to_string(s)) return s;
  throw Error("unknown schedule '" + std::string(name) +
              "' (expected gpipe, 1f1b, interleaved or zb1)");
}

namespace {
void positive(const char* what, long long v) {
  if (v < 1) throw Error(std::string(what) + " must be at least 1 (got " + std::to_string(v) + ")");
}
std::string s(long long v) { return std::to_string(v); }
}  // namespace

void validate(const RunConfig& c) {
  positive("layers", c.layers);
  positive("experts", c.experts);
  positive("top-k", c.top_k);
  positive("dp", c.dp);
  positive("ep", c.ep);
  positive("pp", c.pp);
  positive("vstages", c.vstages);
  positive("microbatches", c.microbatches);
  positive("tokens per microbatch", c.sizes.tokens_per_microbatch);
  positive("d_model", c.sizes.d_model);
  for (auto [what, v] : {std::pair{"dense parameters per layer", c.sizes.dense_params_per_layer},
                         {"parameters per expert", c.sizes.params_per_expert},
                         {"embedding parameters", c.sizes.embedding_params},
                         {"head parameters", c.sizes.head_params},
                         {"bytes per activation value", c.sizes.activation_bytes_per_value},
                         {"bytes per gradient", c.sizes.grad_bytes_per_param},
                         {"bytes per weight", c.sizes.weight_bytes_per_param}})
    if (v < 0) throw Error(std::string(what) + " cannot be negative (got " + s(v) + ")");
  if (c.zero != 0 && c.zero != 1)
    throw Error("zero must be 0 or 1 (got " + s(c.zero) + "); ZeRO-2 and -3 are modelled only");
  if (c.top_k > c.experts)
    throw Error("top-k=" + s(c.top_k) + " cannot exceed the " + s(c.experts) + " experts");
  if (c.dp % c.ep != 0) throw Error("ep must divide dp (ep=" + s(c.ep) + ", dp=" + s(c.dp) + ")");
  if (c.experts % c.ep != 0)
    throw Error(s(c.experts) + " experts do not split evenly over ep=" + s(c.ep));
  if (static_cast<long long>(c.pp) * c.dp > (1 << 20))
    throw Error("world of " + s(static_cast<long long>(c.pp) * c.dp) + " ranks is too large");
  if (c.layers % (c.pp * c.vstages) != 0)
    throw Error("layers must split over pp x vstages (" + s(c.layers) + " layers, pp=" + s(c.pp) +
                ", vstages=" + s(c.vstages) + ")");
  if (c.vstages > 1 && c.schedule != Schedule::Interleaved)
    throw Error("vstages=" + s(c.vstages) + " needs the interleaved schedule (got " +
                std::string(to_string(c.schedule)) + ")");
  switch (c.schedule) {
    case Schedule::GPipe: break;
    case Schedule::OneFOneB:
    case Schedule::ZeroBubbleH1:
      if (c.microbatches < c.pp)
        throw Error(std::string(c.schedule == Schedule::OneFOneB ? "1F1B" : "ZB-H1") +
                    " needs at least pp microbatches (pp=" + s(c.pp) +
                    ", microbatches=" + s(c.microbatches) + ")");
      break;
    case Schedule::Interleaved:
      if (c.microbatches % c.pp != 0)
        throw Error("interleaved 1F1B needs microbatches to be a multiple of pp (pp=" + s(c.pp) +
                    ", microbatches=" + s(c.microbatches) + ")");
      break;
  }
}

}  // namespace onegpu::trainer
