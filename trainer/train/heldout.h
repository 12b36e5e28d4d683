#pragma once
// Held-out loss: the mean cross-entropy per target token over fixed evaluation windows of
// text the model never trained on. One function for every kind of run, so a split run's
// number and a one-rank run's number mean the same thing.
//   - heldout_loss(model, ...)          a whole model, as Trainer holds it;
//   - heldout_loss(config, master, ...) weights in the unsharded layout, as
//     ParallelTrainer::master_weights() gathers them: evaluated on a one-rank copy.
#include <span>

#include "trainer/memory/tracker.h"
#include "trainer/model/config.h"
#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/train/dataset.h"

namespace onegpu::trainer {

// `rows` windows of the model's seq_len tokens, spread evenly over `heldout` (eval_batches),
// run forward 8 at a time. Throws Error when heldout has no tokens.
double heldout_loss(Model& model, const TokenDataset& heldout, int rows = 64);

// Builds a whole one-rank model with master := `master`, weights := bf16(master) (as after an
// update), and evaluates it. Throws Error when `master` is not the model's size.
double heldout_loss(const ModelConfig& config, std::span<const float> master, const TokenDataset& heldout,
                    int rows = 64, int threads = 1);

// The same evaluation, its one-rank model kept for a run's repeated evaluations: made once,
// the weights replaced each time (the Lab's run made a model, a backend with its threads and
// 18 bytes a weight anew every tenth step: tens of thousands of fresh pages, between steps).
class HeldoutModel {
 public:
  explicit HeldoutModel(const ModelConfig& config, int threads = 1);
  HeldoutModel(const HeldoutModel&) = delete;
  HeldoutModel& operator=(const HeldoutModel&) = delete;
  // As heldout_loss(config, master, heldout, rows): bit for bit the same number.
  double loss(std::span<const float> master, const TokenDataset& heldout, int rows = 64);
  const ModelConfig& config() const { return model_.config(); }

 private:
  MemoryTracker tracker_;
  CpuBackend backend_;
  Model model_;
};

}  // namespace onegpu::trainer
