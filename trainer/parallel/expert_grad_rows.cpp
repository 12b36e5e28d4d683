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

void ExpertGradRows::apply(Model& model, int l) {
  // Expert e's rows of every block, block by block: the order the per-microbatch products took.
  std::vector<std::int32_t> offsets((std::size_t)experts_ + 1, 0);
  for (int e = 0; e < experts_; ++e) {
    int n = 0;
    for (const Block& k : blocks_) n += k.offsets[(std::size_t)e + 1] - k.offsets[(std::size_t)e];
    offsets[(std::size_t)e + 1] = offsets[(std::size_t)e] + n;
  }
  const std::size_t rows = (std::size_t)offsets.back();
  if (rows > 0) {
    ExpertCache c;
    c.xe = Buffer<float>(host_, MemCategory::Activations, rows * D_, false);
    c.a = Buffer<float>(host_, MemCategory::Activations, rows * H_, false);
    Buffer<float> dy(host_, MemCategory::Activations, rows * D_, false);
    Buffer<float> du(host_, MemCategory::Activations, rows * H_, false);
    for (int e = 0; e < experts_; ++e) {
      std::size_t at = (std::size_t)offsets[(std::size_t)e];
      for (const Block& k : blocks_) {
        const std::size_t o = (std::size_t)k.offsets[(std::size_t)e], n = (std::size_t)k.offsets[(std::size_t)e + 1] - o;
        if (n == 0) continue;
        std::copy_n(k.xe.data() + o * D_, n * D_, c.xe.data() + at * D_);
        std::copy_n(k.a.data() + o * H_, n * H_, c.a.data() + at * H_);
        std::copy_n(k.dy.data() + o * D_, n * D_, dy.data() + at * D_);
        std::copy_n(k.du.data() + o * H_, n * H_, du.data() + at * H_);
        at += n;
      }
    }
    forget();  // the blocks go back to the pool before the products run
    model.experts_backward_weight(l, offsets, c, dy.data(), du.data());
  }
  forget();
}

void ExpertGradRows::forget() { blocks_.clear(); }

}  // namespace onegpu::trainer
