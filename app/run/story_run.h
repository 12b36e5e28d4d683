#pragma once
// The story the learning chapters are drawn from: the generated story corpus, its tokenizer,
// the first step's four texts, and the `story` model's long run.
//
// The first step itself is a recorded run (app/run/first_step.h: its events in a RunState), so
// the pictures are a pure function of t and no draw() trains. The long run to step 1,000 trains as a chain of short jobs on the app's job runner (app/live/job_runner.h), each a
// few dozen milliseconds of steps that queues the next, so the runner's other work goes on
// between them; it publishes the model's predictions as it goes.
#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trainer/data/bpe_tokenizer.h"
#include "trainer/data/corpus.h"
#include "trainer/train/probes.h"
#include "trainer/train/trainer.h"

namespace onegpu::app {

inline constexpr const char* kPrompt = "Once upon a";
inline constexpr int kSampleTokens = 16;  // length of the writing sampled at each milestone
// The status bar's line while the story is being built (StoryRun::ready()).
inline constexpr const char* kStoryBuilding = "the story: writing its texts and learning its tokens";

struct Tray {
  std::string text;                   // the text as the model reads it (decoded tokens)
  std::vector<std::string> tokens;    // each token's text, as the tokenizer split it
};

struct Prediction {
  int step = 0;
  std::vector<trainer::TokenProb> top;  // most likely first
  double p_time = 0.0;                  // probability of " time"
  double loss_time = 0.0;               // -log p(" time"): the error the chapters show
  std::string sample;                   // long-run milestones only: the model's own writing after the prompt
};

class StoryRun {
 public:
  // Builds the story on first call (the corpus and its tokenizer: a tenth of a second or more),
  // on whichever thread calls first; jobs, prepare() and tests use this.
  static StoryRun& get();
  // draw(): never blocks. The story once built, else null, its building queued as a job on
  // the runner on first ask (the chapter says it is being prepared meanwhile).
  static StoryRun* ready();
  // Queues the building now: the window does at start, so the story is there by the time a
  // learner reaches its chapters instead of stalling the frame that opens the first of them.
  static void build_soon();
  ~StoryRun();

  const trainer::BpeTokenizer& tokenizer() const { return tok_; }
  const std::vector<Tray>& trays() const { return trays_; }
  // A few dozen stories from the start of the corpus: enough data for runs that take one step.
  const trainer::Corpus& sliver() const { return sliver_; }
  std::int32_t time_token() const { return time_token_; }

  // A fresh model as the first step starts from, of the caller's own (any thread: it reads only
  // what never changes after construction).
  std::unique_ptr<trainer::Trainer> fresh_model() const { return fresh(1, 1000, false); }

  // The first step's batch of four texts (the trays), for runs on several ranks.
  const trainer::Batch& tray_batch() const { return tray_batch_; }

  // ---- the long run ----
  void start_training(int steps = 1000);   // no-op when running or done (UI thread)
  int trained_steps() const { return trained_.load(); }
  bool training_started() const { return started_; }  // UI thread
  int training_target() const { return target_; }
  bool training_done() const { return done_.load(); }
  // Predictions at steps 0, 1, 10, 100, 1000 as they become available.
  std::vector<Prediction> milestones() const;
  double seconds_per_step() const;
  void wait_for_training();  // blocks until done (headless renders); never from a job
  // The model trained to the end of the long run, kept for the chapters after (null until done).
  trainer::Trainer* trained() { return done_.load() ? trained_model_.get() : nullptr; }

 private:
  StoryRun();
  // A fresh model. The first step trains on the trays' batch, so its trainer needs only a
  // sliver of the corpus (building datasets from all of it would stall a frame on every
  // rewind); the long run reads the whole corpus.
  std::unique_ptr<trainer::Trainer> fresh(int microbatches, int steps, bool whole_corpus) const;
  Prediction predict(trainer::Trainer& t, int k) const;
  Prediction with_sample(trainer::Trainer& t, Prediction p) const;

  trainer::Corpus corpus_, sliver_;
  trainer::BpeTokenizer tok_;
  std::vector<Tray> trays_;
  trainer::Batch tray_batch_;
  std::int32_t time_token_ = -1;


  void post_chunk();   // queues the next stretch of the long run
  void train_chunk();  // a job: steps for a few dozen milliseconds

  std::unique_ptr<trainer::Trainer> trained_model_;
  std::unique_ptr<trainer::Trainer> long_;  // the long run while it trains (the runner's thread only)
  double train_seconds_ = 0.0;              // time spent stepping it (runner's thread only)
  std::atomic<int> trained_{0};
  std::atomic<bool> done_{false}, stop_{false};
  bool started_ = false;
  std::atomic<int> target_{0};
  mutable std::mutex mu_;
  std::vector<Prediction> milestones_;
  double seconds_per_step_ = 0.0;
  std::shared_future<void> chunk_;  // the last chunk queued (mu_)
  int chunks_ = 0;                  // chunks queued so far (mu_)
};

}  // namespace onegpu::app
