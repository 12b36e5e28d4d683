#pragma once
// Held-out loss: the mean cross-entropy per target token over fixed evaluation windows of
// text the model never trained on. One function for every kind of run, so a split run's
// number and a one-rank run's number mean the same thing.
//   - heldout_loss(model, ...)          a whole model, as Trainer holds it;
//   - heldout_loss(config, master, ...) weights in the unsharded layout, as
//     ParallelTrainer::master_weights() gathers them: evaluated on a one-rank copy.
#include <span>

#include "trainer/model/config.h"
#include "trainer/model/model.h"
#include "trainer/train/dataset.h"

namespace onegpu::trainer {

// `rows` windows of the model's seq_len tokens, spread evenly over `heldout` (eval_batches),
// run forward 8 at a time. Throws Error when heldout has no tokens.
double heldout_loss(Model& model, const TokenDataset& heldout, int rows = 64);

// Builds a whole one-rank model with master := `master`, weights := bf16(master) (as after an
// update), and evaluates it. Throws Error when `master` is not the model's size.
double heldout_loss(const ModelConfig& config, std::span<const float> master, const TokenDataset& heldout,
                    int rows = 64, int threads = 1);

}  // namespace onegpu::trainer
