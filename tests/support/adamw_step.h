#pragma once
// One AdamW step's numbers for the optimizer's op tests (CPU and GPU): clipping on, the first
// step's bias corrections, a learning rate and eps as training uses them.
#include "trainer/ops/backend.h"

namespace onegpu::test {

inline trainer::AdamWStep sample_adamw_step() {
  trainer::AdamWStep s;
  s.scale = 0.7f;
  s.b1 = 0.9f;
  s.b2 = 0.95f;
  s.inv_bc1 = 1.f / (1.f - 0.9f);
  s.inv_bc2 = 1.f / (1.f - 0.95f);
  s.lr = 3e-3f;
  s.eps = 1e-8f;
  return s;
}

}  // namespace onegpu::test
