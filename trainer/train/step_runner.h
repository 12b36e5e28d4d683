#pragma once
// One training step cut into the pieces a picture can follow: for each microbatch, embed,
// each layer forward, head (loss, start of backward), each layer backward, embed backward;
// then one optimizer update. Trainer::step() runs all of them in a row; a chapter runs them one
// at a time, so what moves on screen is what just ran. On the CPU each piece runs on every
// shard of the microbatch at once (SplitStep), so piece by piece gives the whole step's bits.
#include <optional>

#include "trainer/model/model.h"
#include "trainer/train/trainer.h"

namespace onegpu::trainer {

enum class PieceKind { Embed, LayerForward, Head, LayerBackward, EmbedBackward, Update };
const char* piece_name(PieceKind k);

struct Piece {
  PieceKind kind = PieceKind::Embed;
  int layer = -1;       // for LayerForward / LayerBackward
  int microbatch = 0;
  double ms = 0.0;      // measured wall time of this piece (0 until it ran)
  double loss = 0.0;    // Head: this microbatch's mean cross-entropy
  MemStats memory;      // after the piece
};

class StepRunner {
 public:
  // The next step of `t`, on the batch step() would have drawn, or on a given batch (which
  // must hold options().batch texts of the model's seq_len).
  explicit StepRunner(Trainer& t);
  StepRunner(Trainer& t, Batch batch);

  bool done() const { return done_; }
  Piece peek() const;   // the piece that runs next (ms, loss, memory not filled)
  Piece run_next();     // throws Error when done
  void run_all();

  const Batch& batch() const { return full_; }
  int microbatches() const { return M_; }
  int pieces_per_step() const;
  int pieces_run() const { return pieces_run_; }
  // Valid once done(): the same record step() returns.
  const StepResult& result() const { return result_; }

 private:
  void start_microbatch();
  Trainer& t_;
  Batch full_;
  MicrobatchState st_;  // on a device; on the CPU the microbatch runs as the split step's shards
  int M_ = 1, per_ = 0, S_ = 0, targets_ = 0;
  int mb_ = 0, pos_ = 0;  // microbatch, position inside its piece sequence
  double ce_ = 0.0, aux_ = 0.0, seconds_ = 0.0;
  int pieces_run_ = 0;
  bool done_ = false;
  LossScales sc_;
  StepResult result_;
};

}  // namespace onegpu::trainer
