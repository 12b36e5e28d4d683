#include "trainer/train/heldout.h"

#include <algorithm>
#include <string>

#include "trainer/error.h"
#include "trainer/memory/tracker.h"
#include "trainer/ops/cpu_backend.h"

namespace onegpu::trainer {

double heldout_loss(Model& model, const TokenDataset& heldout, int rows) {
  if (heldout.tokens.empty()) throw Error("no held-out text");
  const int S = model.config().seq_len;
  double ce = 0.0;
  long n = 0;
  MicrobatchState st;
  for (const auto& b : eval_batches(heldout, rows, 8, S)) {
    model.forward(st, b);
    ce += st.ce_sum;
    n += st.n_targets;
    Model::release(st);
  }
  return ce / std::max(1L, n);
}

double heldout_loss(const ModelConfig& config, std::span<const float> master, const TokenDataset& heldout,
                    int rows, int threads) {
  HeldoutModel m(config, threads);
  return m.loss(master, heldout, rows);
}

HeldoutModel::HeldoutModel(const ModelConfig& config, int threads)
    : backend_(tracker_, threads), model_(config, backend_, tracker_, /*seed=*/0) {}  // initial weights: replaced

double HeldoutModel::loss(std::span<const float> master, const TokenDataset& heldout, int rows) {
  ParamStore& p = model_.params();
  if ((std::int64_t)master.size() != p.count())
    throw Error("held-out loss: " + std::to_string(master.size()) + " weights given, model " + model_.config().name +
                " has " + std::to_string(p.count()));
  std::copy(master.begin(), master.end(), p.master.data());
  p.sync_weights_from_master();
  return heldout_loss(model_, heldout, rows);
}

}  // namespace onegpu::trainer
