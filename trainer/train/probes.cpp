#include "trainer/train/probes.h"

#include <algorithm>
#include <cmath>

#include "trainer/error.h"

namespace onegpu::trainer {

namespace {
Batch single_text(const Model& m, const std::vector<std::int32_t>& tokens) {
  if (tokens.empty()) throw Error("the prompt is empty");
  int S = std::min<int>((int)tokens.size(), m.config().seq_len);
  Batch b;
  b.B = 1;
  b.S = S;
  b.inputs.assign(tokens.end() - S, tokens.end());
  b.targets.assign(S, -1);
  return b;
}
double range_norm(const float* g, std::int64_t n) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += (double)g[i] * g[i];
  return std::sqrt(s);
}
}  // namespace

std::vector<double> next_token_probs(Model& m, const std::vector<std::int32_t>& tokens) {
  Batch b = single_text(m, tokens);
  MicrobatchState st;
  m.forward(st, b);
  const int V = m.config().vocab;
  const float* l = st.logits.data() + (long)(b.S - 1) * V;
  float mx = *std::max_element(l, l + V);
  std::vector<double> p(V);
  double sum = 0;
  for (int v = 0; v < V; ++v) sum += p[v] = std::exp((double)l[v] - mx);
  for (auto& x : p) x /= sum;
  Model::release(st);
  return p;
}

std::vector<TokenProb> next_token_distribution(Model& m, const BpeTokenizer& tok, std::string_view prompt, int k) {
  if (k <= 0) throw Error("--top must be positive");
  if (prompt.empty()) throw Error("the prompt is empty");
  auto p = next_token_probs(m, tok.encode(prompt));
  std::vector<std::int32_t> ids(p.size());
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = (std::int32_t)i;
  k = std::min<int>(k, (int)ids.size());
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](auto a, auto b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  std::vector<TokenProb> out;
  for (int i = 0; i < k; ++i) out.push_back({ids[i], tok.token_text(ids[i]), p[ids[i]]});
  return out;
}

GradNorms layer_grad_norms(const Model& m) {
  const auto& P = m.params();
  const auto& c = m.config();
  GradNorms g;
  g.embedding = range_norm(P.grads.data(), (std::int64_t)c.vocab * c.d_model);
  for (int l = 0; l < c.n_layers; ++l) g.layers.push_back(range_norm(P.grads.data() + P.layer_offset(l), P.layer_layout().size));
  g.head = range_norm(P.grads.data() + P.final_norm_offset(), P.count() - P.final_norm_offset());
  return g;
}

std::array<std::int64_t, 16> sample_weight_positions(const Model& m, int layer) {
  if (layer < 0 || layer >= m.config().n_layers) throw Error("probe: layer out of range");
  const auto& P = m.params();
  std::array<std::int64_t, 16> pos{};
  std::int64_t n = P.layer_layout().size;
  for (int i = 0; i < 16; ++i) pos[i] = P.layer_offset(layer) + (2 * i + 1) * n / 32;  // bin centres
  return pos;
}

std::array<float, 16> sample_layer_weights(const Model& m, int layer) {
  auto pos = sample_weight_positions(m, layer);
  std::array<float, 16> w{};
  for (int i = 0; i < 16; ++i) w[i] = m.params().master[pos[i]];
  return w;
}

std::vector<RouterChoice> router_choices(Model& m, const std::vector<std::int32_t>& tokens, int layer) {
  if (layer < 0 || layer >= m.config().n_layers) throw Error("probe: layer out of range");
  Batch b = single_text(m, tokens);
  MicrobatchState st;
  m.forward(st, b);
  const auto& r = st.layer(layer).routing;
  std::vector<RouterChoice> out;
  for (int t = 0; t < b.S; ++t) {
    RouterChoice c;
    c.token = b.inputs[t];
    for (int j = 0; j < r.k; ++j) {
      c.experts.push_back(r.expert[t * r.k + j]);
      c.gates.push_back(r.gate[t * r.k + j]);
    }
    out.push_back(std::move(c));
  }
  Model::release(st);
  return out;
}

std::vector<double> per_text_loss(Model& m, const Batch& b) {
  MicrobatchState st;
  m.forward(st, b);
  const int V = m.config().vocab;
  std::vector<double> out;
  for (int r = 0; r < b.B; ++r) {
    const std::int32_t* y = b.targets.data() + (long)r * b.S;
    int n = 0;
    for (int s = 0; s < b.S; ++s) n += y[s] >= 0;
    double ce = m.backend().cross_entropy(st.logits.data() + (long)r * b.S * V, y, nullptr, b.S, V, 0.f);
    out.push_back(n ? ce / n : 0.0);
  }
  Model::release(st);
  return out;
}

std::string sample_continuation(Model& m, const BpeTokenizer& tok, std::string_view prompt, int tokens,
                                std::uint64_t seed, double temperature) {
  if (prompt.empty()) throw Error("sample: the prompt is empty");
  if (tokens <= 0) throw Error("sample: the number of tokens must be positive");
  if (!(temperature > 0.0)) throw Error("sample: the temperature must be positive");
  auto ids = tok.encode(prompt);
  Rng rng(seed);
  std::string out;
  for (int i = 0; i < tokens; ++i) {
    auto p = next_token_probs(m, ids);
    double sum = 0;
    for (auto& x : p) sum += x = std::pow(x, 1.0 / temperature);
    double u = rng.uniform() * sum, c = 0;
    std::int32_t pick = (std::int32_t)p.size() - 1;
    for (std::size_t v = 0; v < p.size(); ++v)
      if ((c += p[v]) > u) {
        pick = (std::int32_t)v;
        break;
      }
    if (pick == tok.eot_id()) break;
    ids.push_back(pick);
    out += tok.token_text(pick);
  }
  return out;
}

}  // namespace onegpu::trainer
