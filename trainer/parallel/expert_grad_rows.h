#pragma once
// An expert rank's expert weight gradients, made once a step instead of once a microbatch.
//
// At 512 ranks an expert gets one to three rows of a microbatch, and each microbatch's
// dW2 += a^T dy and dW1 += xe^T du read and wrote the expert's whole gradient (two 16 KB
// blocks, cold again each time: hundreds of other ranks' ops run in between) for a few
// multiply-adds each: most of a step. Instead, the rows those products are made of (xe, a, dy,
// du) are kept here, expert by expert in the order they came, and the products are taken once
// over all of them, when the layer's last microbatch of the step has come (so before the
// gradients are reduced).
//
// Bitwise the same gradients: the matmul sums each element over k in order, starting from
// what C holds (cpu_matmul.cpp), so one product over rows r1..rn adds exactly what the
// products over r1..ri and then ri+1..rn added.
//
// Host memory of the simulation, not the modelled device's (as WeightCache): the device still
// makes its gradients microbatch by microbatch, and its timeline and memory figures are
// unchanged (the rows' buffers are charged and released when they were before; the copies
// kept here are charged to a tracker of their own).
#include <cstdint>
#include <vector>

#include "trainer/memory/tracker.h"
#include "trainer/model/model.h"

namespace onegpu::trainer {

class ExpertGradRows {
 public:
  ExpertGradRows(int experts, int d_model, int hidden);
  // One microbatch's rows of the layer, expert-major: expert e's are [offsets[e], offsets[e+1])
  // of xe and dy [rows, d_model], a and du [rows, hidden].
  void add(const std::vector<std::int32_t>& offsets, const float* xe, const float* a, const float* dy, const float* du);
  int microbatches() const { return (int)blocks_.size(); }
  // Adds the weight gradients of every row added to layer l of `model`, then forgets the rows.
  void apply(Model& model, int l);
  // The same products, added to g instead: a layer's expert gradients laid out as a store
  // holds them (expert e's from g + e * stride), on `be`. From zeros, bitwise what apply()
  // adds to a rank's zeroed gradients: for a group's sum taken without each member's own copy.
  void apply_to(Backend& be, float* g, long stride);
  void forget();  // drops the rows added (a step stopped by an error)

 private:
  // One microbatch's rows as they came (expert-major), in blocks of the tracker's pool: taken
  // again warm and without page faults from step to step.
  struct Block {
    std::vector<std::int32_t> offsets;
    Buffer<float> xe, a, dy, du;
  };
  // Every block's rows, expert by expert in block order (the order the per-microbatch
  // products took), the blocks forgotten; null when no rows came.
  struct Gathered {
    std::vector<std::int32_t> offsets;
    ExpertCache c;
    Buffer<float> dy, du;
  };
  Gathered gather();
  int experts_, D_, H_;
  std::vector<Block> blocks_;
  MemoryTracker host_;  // the kept rows and the arrays gathered from them
};

}  // namespace onegpu::trainer
