#include "app/run/story_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "app/cli/asset_files.h"
#include "app/live/job_runner.h"
#include "trainer/data/story_corpus.h"
#include "trainer/error.h"
#include "trainer/model/config.h"

namespace onegpu::app {

using namespace trainer;

namespace {
constexpr std::uint64_t kSeed = 1;
bool is_milestone(int s) { return s == 1 || s == 10 || s == 100 || s == 1000 || s == 10000; }
// The story is built (get() has returned once); its building job, once queued.
std::atomic<bool> g_built{false};
std::mutex g_build_mu;
std::shared_future<void> g_build;
}  // namespace

StoryRun& StoryRun::get() {
  static StoryRun run;
  g_built.store(true, std::memory_order_release);
  return run;
}

void StoryRun::build_soon() {
  if (g_built.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(g_build_mu);
  if (!g_build.valid())
    g_build = JobRunner::shared().post(kStoryBuilding, [] { get(); });
}

StoryRun* StoryRun::ready() {
  if (g_built.load(std::memory_order_acquire)) return &get();
  build_soon();
  std::lock_guard<std::mutex> lock(g_build_mu);
  // A job that failed (or a runner that stopped): building here throws the error where the
  // chapters have always met it.
  if (g_build.wait_for(std::chrono::seconds(0)) == std::future_status::ready) return &get();
  return nullptr;
}

StoryRun::StoryRun() {
  StoryCorpusOptions co;
  co.words = cli::story_words();  // assets/corpus/story.json, found as the program finds its assets
  corpus_ = generate_story_corpus(co);
  tok_ = BpeTokenizer::train(corpus_.train, BpeTrainOptions{});
  time_token_ = tok_.token_id(" time");

  // The first step's four texts: real stories from the training text, the first of them one
  // that opens "Once upon a time", the others whatever follows it.
  const int S = model_preset("story").seq_len;
  tray_batch_.B = 4;
  tray_batch_.S = S;
  std::vector<std::vector<std::int32_t>> picked;
  bool have_once = false;
  for (const auto& doc : corpus_.train) {
    if (picked.size() == 4) break;
    bool once = doc.rfind("Once upon a time", 0) == 0;
    if (!have_once && !once) continue;  // start the batch at a "Once upon a time" story
    auto ids = tok_.encode(doc);
    if (static_cast<int>(ids.size()) < S + 1) continue;
    if (once && !have_once) have_once = true;
    else if (once) continue;  // the others open some other way
    ids.resize(S + 1);
    picked.push_back(std::move(ids));
  }
  if (picked.size() < 4) throw Error("story corpus too small for four texts");
  sliver_.train.assign(corpus_.train.begin(), corpus_.train.begin() + std::min<std::size_t>(64, corpus_.train.size()));
  sliver_.heldout.assign(corpus_.heldout.begin(), corpus_.heldout.begin() + std::min<std::size_t>(8, corpus_.heldout.size()));
  for (const auto& ids : picked) {
    tray_batch_.inputs.insert(tray_batch_.inputs.end(), ids.begin(), ids.end() - 1);
    tray_batch_.targets.insert(tray_batch_.targets.end(), ids.begin() + 1, ids.end());
    Tray tray;
    for (auto id : ids) tray.tokens.push_back(tok_.token_text(id));
    tray.text = tok_.decode(ids);
    trays_.push_back(std::move(tray));
  }
}

StoryRun::~StoryRun() {
  // Chunks still queued see stop_ and return at once; a running one stops after its step. Ready
  // at once if the runner has stopped (its queue is dropped).
  stop_ = true;
  for (;;) {  // until no chunk queued another while we waited
    std::shared_future<void> last;
    int n = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      last = chunk_;
      n = chunks_;
    }
    if (!last.valid()) return;
    last.wait();
    std::lock_guard<std::mutex> lock(mu_);
    if (chunks_ == n) return;
  }
}

std::unique_ptr<Trainer> StoryRun::fresh(int microbatches, int steps, bool whole_corpus) const {
  TrainOptions o;
  o.steps = steps;
  o.batch = 4;
  o.microbatches = microbatches;
  o.seed = kSeed;
  o.threads = 1;
  return std::make_unique<Trainer>(model_preset("story"), o, tok_, whole_corpus ? corpus_ : sliver_);
}

Prediction StoryRun::predict(Trainer& t, int k) const {
  Prediction p;
  p.step = t.steps_done();
  p.top = next_token_distribution(t.model(), tok_, kPrompt, k);
  auto probs = next_token_probs(t.model(), tok_.encode(kPrompt));
  p.p_time = time_token_ >= 0 ? probs[time_token_] : 0.0;
  p.loss_time = -std::log(std::max(p.p_time, 1e-30));
  return p;
}

Prediction StoryRun::with_sample(Trainer& t, Prediction p) const {
  // The same seed at every milestone: the writing changes only because the weights did.
  p.sample = sample_continuation(t.model(), tok_, kPrompt, kSampleTokens, 11, 0.8);
  return p;
}

void StoryRun::start_training(int steps) {
  if (started_) return;
  started_ = true;
  target_ = steps;
  post_chunk();
}

void StoryRun::post_chunk() {
  char what[96];
  std::snprintf(what, sizeof what, "training the story model: step %d of %d", trained_.load(), target_.load());
  std::shared_future<void> f = JobRunner::shared().post(what, [this] { train_chunk(); });
  std::lock_guard<std::mutex> lock(mu_);
  chunk_ = f;
  ++chunks_;
}

void StoryRun::train_chunk() {
  using clock = std::chrono::steady_clock;
  constexpr auto kChunk = std::chrono::milliseconds(40);  // the runner's other work waits at most this
  if (stop_) return;
  const int steps = target_;
  if (!long_) {
    long_ = fresh(1, steps, true);
    Prediction p0 = with_sample(*long_, predict(*long_, 8));
    std::lock_guard<std::mutex> lock(mu_);
    milestones_.push_back(std::move(p0));
  }
  const auto begin = clock::now();
  int s = trained_;
  while (s < steps && !stop_ && clock::now() - begin < kChunk) {
    const auto t0 = clock::now();
    long_->step();
    train_seconds_ += std::chrono::duration<double>(clock::now() - t0).count();
    trained_ = ++s;
    if (is_milestone(s) || s == steps) {
      Prediction p = with_sample(*long_, predict(*long_, 8));
      std::lock_guard<std::mutex> lock(mu_);
      milestones_.push_back(std::move(p));
      seconds_per_step_ = train_seconds_ / s;
    }
  }
  if (s >= steps) {
    trained_model_ = std::move(long_);  // published by done_ below
    done_ = true;
  } else if (!stop_) {
    post_chunk();
  }
}

std::vector<Prediction> StoryRun::milestones() const {
  std::lock_guard<std::mutex> lock(mu_);
  return milestones_;
}

double StoryRun::seconds_per_step() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seconds_per_step_;
}

void StoryRun::wait_for_training() {
  // Each chunk queues the next before it returns: wait for the last one queued until the run is
  // done, or until no new one came (the runner stopped, or the run was never started).
  for (;;) {
    if (done_) return;
    std::shared_future<void> f;
    int n = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      f = chunk_;
      n = chunks_;
    }
    if (!f.valid()) return;
    f.wait();
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_ && chunks_ == n) return;
  }
}

}  // namespace onegpu::app
