#include "app/run/model_memory.h"

#include <cmath>

#include "trainer/memory/tracker.h"
#include "trainer/model/config.h"
#include "trainer/model/params.h"

namespace onegpu::app {

const std::vector<ModelBytes>& story_model_bytes(int max_layers) {
  static std::vector<ModelBytes> cache;
  while (static_cast<int>(cache.size()) < max_layers) {
    trainer::ModelConfig c = trainer::model_preset("story");
    c.n_layers = static_cast<int>(cache.size()) + 1;
    trainer::MemoryTracker t;
    trainer::ParamStore store(c, t);
    ModelBytes b;
    b.layers = c.n_layers;
    b.params = store.count();
    b.weights = t.current(trainer::MemCategory::Weights);
    b.gradients = t.current(trainer::MemCategory::Gradients);
    b.optimizer = t.current(trainer::MemCategory::Optimizer);
    cache.push_back(b);
  }
  return cache;
}

std::int64_t toy_capacity_bytes() {
  const double four = static_cast<double>(story_model_bytes(4)[3].total());
  const double mib = 1024.0 * 1024.0;
  // Just under the top tick: the 4-layer model fills 85–95% of it.
  return static_cast<std::int64_t>(std::ceil(four / 0.95 / mib) * mib);
}

}  // namespace onegpu::app
