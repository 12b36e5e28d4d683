#pragma once
// A microbatch whose texts are shared among worker threads: each worker runs the forward and
// backward of its own texts (Model::forward_backward_share) on a backend of its own, and the
// gradients and losses come out bit for bit as one thread running forward_backward on all of
// them. Why that holds:
// - every op works on each row (token) alone, except the sums over rows: the weight and gain
//   gradients, the embedding table's rows, the loss and the router's losses;
// - the matmul kernel adds the products into C for k = 0, 1, ... in turn (cpu_matmul.cpp), as
//   do the norm and embedding backwards, so adding worker 0's rows and then worker 1's in two
//   calls gives the one call's bits. Each sum site is therefore taken in turn: worker w adds
//   its rows after workers 0..w-1 have added theirs (a worker never waits for a later one), and
//   microbatch r's turns come after microbatch r-1's, as gradient accumulation does them;
// - experts get their rows in token order within each worker, and worker 0's texts come first;
// - the router's load-balancing and z losses average over the whole microbatch: after the
//   forward the workers meet, add up their rows per expert, and fold those losses over all
//   tokens in order (moe_router_losses);
// - a block's weight gradients are cut into pieces (its attention weights, its router, each
//   expert) that the workers claim one at a time once every worker has run the block's input
//   part; the claimer adds every worker's rows to that piece, worker 0's first. The same calls
//   in the same order as each worker adding its own rows in turn, without each worker reading
//   and writing the whole block's gradient. A worker keeps its block caches until every piece
//   of that block is done.
#include <atomic>
#include <memory>
#include <vector>

#include "trainer/model/model.h"

namespace onegpu::trainer {

class SplitMicrobatch {
 public:
  SplitMicrobatch(int workers, int n_layers);
  int workers() const { return workers_; }
  // Before a step of `rounds` microbatches: turns and meetings start again.
  void reset(int rounds);
  MicrobatchState& state(int worker) { return states_[(std::size_t)worker]; }
  // Once every worker is done with round r: its summed cross-entropy and router losses, the
  // numbers MicrobatchState::ce_sum and aux_sum hold after forward_backward on one thread.
  double ce_sum(int round) const { return ce_[(std::size_t)round]; }
  double aux_sum(int round) const;
  // A worker that fails calls it: the others' waits then end with an Error, not forever.
  void abort();

  // ---- for Model::forward_backward_share ----
  // Sum sites: the final norm's gain, the head, the embedding table, the loss, and per block
  // its two norm gains and its weights.
  enum Site { kFinalNorm, kHead, kEmbed, kLoss, kLayerSites };
  static int norm2_site(int l) { return kLayerSites + 3 * l; }
  static int norm1_site(int l) { return kLayerSites + 3 * l + 1; }
  static int weights_site(int l) { return kLayerSites + 3 * l + 2; }
  void take_turn(int site, int round, int worker);  // waits for the workers before this one
  void end_turn(int site);
  // A block's weight part, shared out (see above). The counters are per round and block.
  void input_done(int round, int l);     // this worker's input part of block l is done
  void wait_inputs(int round, int l);    // until every worker's is
  int claim(int round, int l, int pieces);  // the next piece nobody has claimed, or -1
  void piece_done(int round, int l);
  bool pieces_done(int round, int l, int pieces) const;
  void wait_pieces(int round, int l, int pieces);
  // All workers meet here; `k` counts the meetings of a round (two per round).
  void meet(int round, int k);
  double& ce(int round) { return ce_[(std::size_t)round]; }
  // Block l's load-balancing plus z loss of round r.
  void set_router_loss(int round, int l, double v) { router_[(std::size_t)round * n_layers_ + l] = v; }

 private:
  void wait_until(std::atomic<int>& a, int target);
  int workers_, n_layers_;
  std::vector<MicrobatchState> states_;
  std::unique_ptr<std::atomic<int>[]> turns_;  // per site: shares added so far, all rounds
  int sites_;
  std::atomic<int> met_{0};  // arrivals at meetings so far
  // Per round and block: workers past the input part, pieces claimed, pieces done.
  std::unique_ptr<std::atomic<int>[]> inputs_, claims_, done_;
  int block_rounds_ = 0;
  std::atomic<int>& at(const std::unique_ptr<std::atomic<int>[]>& a, int round, int l) const {
    return a[(std::size_t)round * n_layers_ + l];
  }
  std::atomic<bool> aborted_{false};
  std::vector<double> ce_, router_;
};

}  // namespace onegpu::trainer
