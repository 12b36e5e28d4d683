#include "trainer/parallel/expert_grad_rows.h"

#include <algorithm>

#include "trainer/error.h"

namespace onegpu::trainer {

ExpertGradRows::ExpertGradRows(int experts, int d_model, int hidden) : experts_(experts), D_(d_model), H_(hidden) {}

void ExpertGradRows::add(const std::vector<std::int32_t>& offsets, const float* xe, const float* a, const float* dy,
                         const float* du) {
  if ((int)offsets.size() != experts_ + 1) throw Error("expert rows: one offset per local expert, plus one");
  const std::size_t rows = (std::size_t)offsets.back();
  auto kept = [&](const float* from, std::size_t width) {
    Buffer<float> b(host_, MemCategory::Activations, rows * width, false);
    std::copy_n(from, rows * width, b.data());
    return b;
  };
  Block k;
  k.offsets = offsets;
  if (rows > 0) {
    k.xe = kept(xe, D_);
    k.a = kept(a, H_);
    k.dy = kept(dy, D_);
    k.du = kept(du, H_);
  }
  blocks_.push_back(std::move(k));
}

ExpertGradRows::Gathered ExpertGradRows::gather() {
  Gathered g;
  g.offsets.assign((std::size_t)experts_ + 1, 0);
  for (int e = 0; e < experts_; ++e) {
    int n = 0;
    for (const Block& k : blocks_) n += k.offsets[(std::size_t)e + 1] - k.offsets[(std::size_t)e];
    g.offsets[(std::size_t)e + 1] = g.offsets[(std::size_t)e] + n;
  }
  const std::size_t rows = (std::size_t)g.offsets.back();
  if (rows > 0) {
    g.c.xe = Buffer<float>(host_, MemCategory::Activations, rows * D_, false);
    g.c.a = Buffer<float>(host_, MemCategory::Activations, rows * H_, false);
    g.dy = Buffer<float>(host_, MemCategory::Activations, rows * D_, false);
    g.du = Buffer<float>(host_, MemCategory::Activations, rows * H_, false);
    for (int e = 0; e < experts_; ++e) {
      std::size_t at = (std::size_t)g.offsets[(std::size_t)e];
      for (const Block& k : blocks_) {
        const std::size_t o = (std::size_t)k.offsets[(std::size_t)e], n = (std::size_t)k.offsets[(std::size_t)e + 1] - o;
        if (n == 0) continue;
        std::copy_n(k.xe.data() + o * D_, n * D_, g.c.xe.data() + at * D_);
        std::copy_n(k.a.data() + o * H_, n * H_, g.c.a.data() + at * H_);
        std::copy_n(k.dy.data() + o * D_, n * D_, g.dy.data() + at * D_);
        std::copy_n(k.du.data() + o * H_, n * H_, g.du.data() + at * H_);
        at += n;
      }
    }
  }
  forget();  // the blocks go back to the pool before the products run
  return g;
}

void ExpertGradRows::apply(Model& model, int l) {
  const Gathered g = gather();
  if (g.offsets.back() > 0) model.experts_backward_weight(l, g.offsets, g.c, g.dy.data(), g.du.data());
}

void ExpertGradRows::apply_to(Backend& be, float* grads, long stride) {
  const Gathered g = gather();
  if (g.offsets.back() == 0) return;
  // The shape Model::experts_backward_weight gives the same products.
  Routing r;
  r.offsets = g.offsets;
  const MoeShape s{g.offsets.back(), D_, experts_, 1, H_, 0.f, 0.f};
  moe_experts_backward_weight(be, s, r, g.c, g.dy.data(), g.du.data(), MoeGrads{nullptr, grads, stride});
}

void ExpertGradRows::forget() { blocks_.clear(); }

}  // namespace onegpu::trainer
