#pragma once
// One rank's training run: data, model, optimizer, step loop, held-out loss and checkpoints.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/data/bpe_tokenizer.h"
#include "trainer/data/corpus.h"
#include "trainer/io/safetensors.h"
#include "trainer/memory/tracker.h"
#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/dataset.h"
#include "trainer/train/split_step.h"

namespace onegpu::trainer {

struct TrainOptions {
  int steps = 1000;        // total optimizer steps (the schedule spans them)
  int batch = 4;           // texts per step
  int microbatches = 1;    // the batch is split into this many; gradients accumulate
  std::uint64_t seed = 1;  // weights and data order
  int threads = 1;         // CPU threads (split_step.h: two microbatches at once, or one's texts shared); results do not depend on it
  // "cpu" or "cuda" (trainer/device.h resolves "auto"). Not saved in checkpoints: a run may
  // continue on another device.
  std::string device = "cpu";
  int eval_rows = 64;      // held-out windows for heldout_loss()
  AdamWConfig optim;       // total_steps is set from steps
  void validate() const;   // throws Error
};

struct StepResult {
  int step = 0;              // number of updates done, after this one
  double loss = 0.0;         // mean cross-entropy per target token of this step's batch
  double aux_loss = 0.0;     // router losses, mean over microbatches
  float lr = 0.f;
  double grad_norm = 0.0;    // before clipping
  double seconds = 0.0;      // wall time of the step
  double tokens_per_s = 0.0;
  MemStats memory;
};

class Trainer {
 public:
  // A fresh run on a corpus, tokenized with tok (kept: it is saved with checkpoints).
  // model.vocab is set from the tokenizer.
  Trainer(ModelConfig model, const TrainOptions& opt, BpeTokenizer tok, const Corpus& corpus);
  // Resume from a checkpoint: model, tokenizer, optimizer state, step, data RNG and the options
  // it was trained with; `steps` (total, counting those done; 0: the checkpoint's own, so the
  // schedule goes on as it was planned) and `threads` may change.
  // Throws Error for a missing, corrupt or mismatched file.
  static std::unique_ptr<Trainer> resume(const std::string& path, const Corpus& corpus, int steps,
                                         int threads = 1, const std::string& device = "cpu");
  // The model and tokenizer of a checkpoint, for predict/sample (no data).
  static std::unique_ptr<Trainer> load_for_inference(const std::string& path, int threads = 1);

  StepResult step();
  bool done() const { return step_ >= opt_.steps; }
  int steps_done() const { return step_; }
  double heldout_loss();  // mean cross-entropy per token over the held-out windows
  // Writes the checkpoint atomically (safetensors; config, step, optimizer, RNG in metadata).
  void save(const std::string& path) const;

  Model& model() { return *model_; }
  const BpeTokenizer& tokenizer() const { return tok_; }
  MemoryTracker& tracker() { return tracker_; }
  const TrainOptions& options() const { return opt_; }
  const TokenDataset& train_data() const { return train_; }

 private:
  friend class StepRunner;  // runs step() one piece at a time
  Trainer() = default;
  void build(ModelConfig model, const TrainOptions& opt, BpeTokenizer tok, const Corpus* corpus);
  void load_state(const safetensors::File& f, bool with_optimizer);
  TrainOptions opt_;
  BpeTokenizer tok_;
  TokenDataset train_, heldout_;
  MemoryTracker tracker_;
  std::unique_ptr<Backend> backend_;
  CpuBackend* cpu_ = nullptr;  // backend_, when the run is on the CPU
  std::unique_ptr<Model> model_;
  std::unique_ptr<SplitStep> split_;  // on the CPU: a step's forward and backward on every thread
  Rng data_rng_;
  int step_ = 0;
};

}  // namespace onegpu::trainer
