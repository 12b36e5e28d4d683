#include "trainer/train/step_runner.h"

#include <chrono>
#include <functional>

#include "trainer/error.h"
#include "trainer/optim/adamw.h"

namespace onegpu::trainer {

const char* piece_name(PieceKind k) {
  switch (k) {
    case PieceKind::Embed: return "embed";
    case PieceKind::LayerForward: return "forward";
    case PieceKind::Head: return "loss";
    case PieceKind::LayerBackward: return "backward";
    case PieceKind::EmbedBackward: return "embed backward";
    case PieceKind::Update: return "update";
  }
  return "?";
}

StepRunner::StepRunner(Trainer& t)
    : StepRunner(t, sample_batch(t.train_, t.opt_.batch, t.model_->config().seq_len, t.data_rng_)) {}

StepRunner::StepRunner(Trainer& t, Batch batch) : t_(t), full_(std::move(batch)) {
  const auto& opt = t_.opt_;
  S_ = t_.model_->config().seq_len;
  M_ = opt.microbatches;
  if (full_.B != opt.batch || full_.S != S_)
    throw Error("step: the batch must hold " + std::to_string(opt.batch) + " texts of " + std::to_string(S_) +
                " tokens");
  per_ = opt.batch / M_;
  for (auto v : full_.targets) targets_ += v >= 0;
  sc_ = LossScales{1.f / (float)std::max(1, targets_), 1.f / (float)M_};
  t_.tracker_.reset_peaks();
  if (t_.cpu_)
    zero_grads(t_.model_->params(), t_.cpu_->pool());
  else  // gradients on a device are cleared there
    t_.backend_->zero(t_.model_->params().grads.data(), t_.model_->params().count());
}

int StepRunner::pieces_per_step() const { return M_ * (2 * t_.model_->config().n_layers + 3) + 1; }

Piece StepRunner::peek() const {
  if (done_) throw Error("step: already complete");
  Piece p;
  p.microbatch = mb_;
  const int L = t_.model_->config().n_layers;
  if (mb_ == M_) {
    p.kind = PieceKind::Update;
  } else if (pos_ == 0) {
    p.kind = PieceKind::Embed;
  } else if (pos_ <= L) {
    p.kind = PieceKind::LayerForward;
    p.layer = pos_ - 1;
  } else if (pos_ == L + 1) {
    p.kind = PieceKind::Head;
  } else if (pos_ <= 2 * L + 1) {
    p.kind = PieceKind::LayerBackward;
    p.layer = 2 * L + 1 - pos_;
  } else {
    p.kind = PieceKind::EmbedBackward;
  }
  return p;
}

void StepRunner::start_microbatch() {
  Batch mb;
  mb.B = per_;
  mb.S = S_;
  auto b = full_.inputs.begin() + (long)mb_ * per_ * S_;
  mb.inputs.assign(b, b + (long)per_ * S_);
  auto tb = full_.targets.begin() + (long)mb_ * per_ * S_;
  mb.targets.assign(tb, tb + (long)per_ * S_);
  if (t_.split_)
    t_.split_->start(mb);
  else
    t_.model_->begin(st_, mb);
}

Piece StepRunner::run_next() {
  Piece p = peek();
  Model& m = *t_.model_;
  auto t0 = std::chrono::steady_clock::now();
  // On the CPU each piece runs on every shard of the microbatch (SplitStep), shards at once.
  SplitStep* sp = t_.split_.get();
  auto on_each = [&](const std::function<void(MicrobatchState&)>& f) {
    if (sp)
      sp->each(f);
    else
      f(st_);
  };
  switch (p.kind) {
    case PieceKind::Embed:
      start_microbatch();
      on_each([&](MicrobatchState& st) { m.embed_forward(st); });
      break;
    case PieceKind::LayerForward: on_each([&](MicrobatchState& st) { m.layer_forward(p.layer, st); }); break;
    case PieceKind::Head: {
      const double aux = sp ? sp->join() : 0.0;
      on_each([&](MicrobatchState& st) { m.head_forward(st, true, sc_, /*defer_weight=*/sp != nullptr); });
      if (sp) {
        static_assert(Model::kFinalNormPiece == Model::kHeadPiece + 1);
        sp->add_pieces(Model::kHeadPiece, 2);  // and the final norm's
        sp->each([](MicrobatchState& st) {  // read by those pieces only
          st.dlogits_head = {};
          st.dh_final = {};
        });
      }
      const double ce = sp ? sp->ce_sum() : st_.ce_sum;
      p.loss = ce / std::max(1, sp ? sp->n_targets() : st_.n_targets);
      ce_ += ce;
      aux_ += sp ? aux : st_.aux_sum;
      break;
    }
    case PieceKind::LayerBackward:
      if (sp) {  // the input part on every shard, then the block's weight pieces
        sp->each([&](MicrobatchState& st) { m.layer_backward_input(p.layer, st, sc_); });
        sp->add_pieces(m.first_weight_piece(p.layer), m.first_weight_piece(p.layer + 1) - m.first_weight_piece(p.layer));
        sp->each([&](MicrobatchState& st) { st.layer(p.layer) = LayerCache{}; });
      } else {
        m.layer_backward(p.layer, st_, sc_);
      }
      break;
    case PieceKind::EmbedBackward:
      if (sp) {
        sp->add_pieces(Model::kEmbedPiece, 1);
        sp->finish_microbatch();
      } else {
        m.embed_backward(st_);
        Model::release(st_);
      }
      break;
    case PieceKind::Update: {
      UpdateStats u = t_.cpu_ ? adamw_update(m.params(), t_.opt_.optim, t_.step_, t_.cpu_->pool())
                              : adamw_update(m.params(), t_.opt_.optim, t_.step_, *t_.backend_);
      ++t_.step_;
      result_.step = t_.step_;
      result_.loss = ce_ / std::max(1, targets_);
      result_.aux_loss = aux_ / M_;
      result_.lr = u.lr;
      result_.grad_norm = u.grad_norm;
      break;
    }
  }
  // On a device the ops were only queued: wait for them, so the piece's time is its own (and
  // not charged to whichever later piece first waits). One wait per piece; CUDA events would
  // time them without it.
  if (!t_.cpu_) t_.backend_->sync();
  p.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  seconds_ += p.ms / 1000.0;
  p.memory = t_.tracker_.stats();
  ++pieces_run_;
  if (p.kind == PieceKind::Update) {
    done_ = true;
    result_.seconds = seconds_;
    result_.tokens_per_s = seconds_ > 0 ? (double)t_.opt_.batch * S_ / seconds_ : 0.0;
    result_.memory = p.memory;
  } else if (p.kind == PieceKind::EmbedBackward) {
    ++mb_;
    pos_ = 0;
  } else {
    ++pos_;
  }
  return p;
}

void StepRunner::run_all() {
  if (t_.split_ && pieces_run_ == 0 && !done_) {
    // Every microbatch at once, on the trainer's threads: the same numbers as their pieces.
    auto t0 = std::chrono::steady_clock::now();
    const SplitStep::Losses l = t_.split_->forward_backward(full_, M_, sc_);
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ce_ = l.ce_sum;
    aux_ = l.aux_sum;
    pieces_run_ += M_ * (2 * t_.model_->config().n_layers + 3);
    mb_ = M_;
    pos_ = 0;
  }
  while (!done_) run_next();
}

}  // namespace onegpu::trainer
