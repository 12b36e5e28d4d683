#include "trainer/model/config.h"

#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "trainer/error.h"
#include "trainer/io/text.h"
#include "trainer/train/limits.h"

namespace onegpu::trainer {

void ModelConfig::validate() const {
  // Each size is bounded before anything is allocated: a checkpoint's config is untrusted input.
  auto in_range = [](int v, const char* what, int hi) {
    if (v <= 0) throw Error(std::string("model config: ") + what + " must be positive, got " + std::to_string(v));
    if (v > hi)
      throw Error(std::string("model config: ") + what + " must be at most " + std::to_string(hi) + ", got " +
                  std::to_string(v));
  };
  in_range(vocab, "vocab", limits::kMaxVocab);
  in_range(d_model, "d_model", limits::kMaxDModel);
  in_range(n_heads, "n_heads", limits::kMaxHeads);
  in_range(n_layers, "n_layers", limits::kMaxLayers);
  in_range(n_experts, "n_experts", limits::kMaxExperts);
  in_range(top_k, "top_k", limits::kMaxTopK);
  in_range(expert_hidden, "expert_hidden", limits::kMaxExpertHidden);
  in_range(seq_len, "seq_len", limits::kMaxSeqLen);
  if (d_model % n_heads != 0) throw Error("model config: n_heads must divide d_model");
  if (head_dim() % 2 != 0) throw Error("model config: head dimension must be even for rotary positions");
  if (top_k > n_experts)
    throw Error("model config: top_k (" + std::to_string(top_k) + ") is larger than the expert count (" +
                std::to_string(n_experts) + ")");
  if (!(norm_eps > 0.f) || !std::isfinite(norm_eps)) throw Error("model config: norm_eps must be a positive number");
  if (!(aux_loss_coef >= 0.f) || !(z_loss_coef >= 0.f) || !std::isfinite(aux_loss_coef) || !std::isfinite(z_loss_coef))
    throw Error("model config: loss coefficients must be finite and not negative");
  if (name.empty() || name.size() > 64) throw Error("model config: the name must be 1 to 64 characters");
  limits::require_memory(limits::weight_bytes(*this),
                         "model " + text::printable(name) + " (" + std::to_string(n_layers) + " layers, " +
                             std::to_string(n_experts) + " experts, d_model " + std::to_string(d_model) + ")",
                         "this checkpoint or configuration is too large to load");
}

ModelConfig model_preset(const std::string& name) {
  ModelConfig c;
  c.name = name;
  if (name == "story") return c;
  if (name == "story8") {
    c.n_layers = 8;
    return c;
  }
  if (name == "scale") {
    c.n_layers = 32;
    c.n_experts = 64;
    c.expert_hidden = 64;
    return c;
  }
  if (name == "wide") {  // sized for one GPU (bench/train/gpu_bench.cpp): wide matmuls, long texts
    c.d_model = 1024;
    c.n_heads = 16;
    c.n_layers = 4;
    c.n_experts = 8;
    c.top_k = 2;
    c.expert_hidden = 2048;
    c.seq_len = 1024;
    return c;
  }
  throw Error("unknown model '" + name + "' (expected story, story8, scale or wide)");
}

ParamBreakdown param_breakdown(const ModelConfig& c) {
  ParamBreakdown b;
  std::int64_t D = c.d_model, L = c.n_layers;
  b.embeddings = (std::int64_t)c.vocab * D;
  b.attention = L * 4 * D * D;
  b.norms = (2 * L + 1) * D;
  b.router = L * D * c.n_experts;
  b.experts = L * c.n_experts * 2 * D * c.expert_hidden;
  b.head = D * c.vocab;
  return b;
}

std::string config_to_string(const ModelConfig& c) {
  std::ostringstream o;
  o.precision(9);
  o << "name=" << c.name << ";vocab=" << c.vocab << ";d_model=" << c.d_model << ";n_heads=" << c.n_heads
    << ";n_layers=" << c.n_layers << ";n_experts=" << c.n_experts << ";top_k=" << c.top_k
    << ";expert_hidden=" << c.expert_hidden << ";seq_len=" << c.seq_len << ";norm_eps=" << c.norm_eps
    << ";aux_loss_coef=" << c.aux_loss_coef << ";z_loss_coef=" << c.z_loss_coef;
  return o.str();
}

ModelConfig config_from_string(const std::string& s) {
  std::map<std::string, std::string> kv;
  std::istringstream in(s);
  std::string item;
  while (std::getline(in, item, ';')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) throw Error("model config: malformed entry '" + item + "'");
    kv[item.substr(0, eq)] = item.substr(eq + 1);
  }
  auto get = [&](const char* k) -> const std::string& {
    auto it = kv.find(k);
    if (it == kv.end()) throw Error(std::string("model config: missing '") + k + "'");
    return it->second;
  };
  auto geti = [&](const char* k) {
    if (auto v = text::parse_int(get(k), 0, std::numeric_limits<int>::max())) return (int)*v;
    throw Error(std::string("model config: '") + k + "' is not a whole number in range, got '" +
                text::printable(get(k)) + "'");
  };
  auto getf = [&](const char* k) {
    if (auto v = text::parse_number(get(k))) return (float)*v;
    throw Error(std::string("model config: '") + k + "' is not a finite number, got '" + text::printable(get(k)) + "'");
  };
  ModelConfig c;
  c.name = get("name");
  c.vocab = geti("vocab");
  c.d_model = geti("d_model");
  c.n_heads = geti("n_heads");
  c.n_layers = geti("n_layers");
  c.n_experts = geti("n_experts");
  c.top_k = geti("top_k");
  c.expert_hidden = geti("expert_hidden");
  c.seq_len = geti("seq_len");
  c.norm_eps = getf("norm_eps");
  c.aux_loss_coef = getf("aux_loss_coef");
  c.z_loss_coef = getf("z_loss_coef");
  c.validate();
  return c;
}

}  // namespace onegpu::trainer
