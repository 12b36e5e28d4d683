// The story's first step as a recorded run (app/run/first_step.h): its events, replayed into a
// RunState, must hold every op of the plan once, in the order one rank runs them, with the
// probes the learning chapters read; and what a chapter reads after n ops must follow from the
// events alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "app/run/first_step.h"
#include "app/run/story_run.h"
#include "trainer/train/probes.h"

using namespace onegpu;
using namespace onegpu::app;
using trainer::EventKind;
using trainer::ProbeKind;

namespace {

std::map<EventKind, int> kinds(const std::vector<OpSpan>& ops) {
  std::map<EventKind, int> n;
  for (const OpSpan& op : ops) ++n[op.kind];
  return n;
}

int count(const RunStep& s, ProbeKind kind, int microbatch) {
  int n = 0;
  for (const ProbeValue& p : s.probes) n += p.kind == kind && p.microbatch == microbatch;
  return n;
}

}  // namespace

TEST(FirstStep, EveryOpOfThePlanOnceAndCountsPerKindMatch) {
  for (int m : {1, 2}) {
    const FirstStepRun& r = first_step_run(m);
    const RunStep& s = r.first();
    const trainer::Plan& plan = r.run->plan_of(0);
    ASSERT_EQ(s.ops.size(), plan.ops.size()) << m;
    EXPECT_TRUE(s.spans_whole) << m;
    std::map<trainer::OpKind, int> planned;
    for (const trainer::Op& op : plan.ops) ++planned[op.kind];
    std::map<EventKind, int> ran = kinds(s.ops);
    EXPECT_EQ(ran[EventKind::Forward], planned[trainer::OpKind::Forward]) << m;
    EXPECT_EQ(ran[EventKind::Backward], planned[trainer::OpKind::Backward]) << m;
    EXPECT_EQ(ran[EventKind::Update], planned[trainer::OpKind::Update]) << m;
    // One rank, layer by layer: per microbatch a forward and a backward per layer, then one
    // update, and nothing else.
    const int L = r.run->model.n_layers;
    EXPECT_EQ(ran[EventKind::Forward], m * L);
    EXPECT_EQ(ran[EventKind::Backward], m * L);
    EXPECT_EQ(ran[EventKind::Update], 1);
    EXPECT_EQ(ran.size(), 3u);
    EXPECT_EQ(r.ops(), 2 * m * L + 1);
  }
}

TEST(FirstStep, OpsRunMicrobatchByMicrobatchUpThenDownThenTheUpdate) {
  const FirstStepRun& r = first_step_run(2);
  const RunStep& s = r.first();
  const int L = r.run->model.n_layers;
  int i = 0;
  for (int mb = 0; mb < 2; ++mb) {
    for (int l = 0; l < L; ++l, ++i) {
      EXPECT_EQ(s.ops[i].kind, EventKind::Forward) << i;
      EXPECT_EQ(s.ops[i].microbatch, mb) << i;
      EXPECT_EQ(s.ops[i].layer, l) << i;
    }
    for (int l = L - 1; l >= 0; --l, ++i) {
      EXPECT_EQ(s.ops[i].kind, EventKind::Backward) << i;
      EXPECT_EQ(s.ops[i].microbatch, mb) << i;
      EXPECT_EQ(s.ops[i].layer, l) << i;
    }
  }
  EXPECT_EQ(s.ops[i].kind, EventKind::Update);
  // Each op begins where the one before ended: one rank, one op at a time.
  for (std::size_t k = 1; k < s.ops.size(); ++k) EXPECT_GE(s.ops[k].vbegin, s.ops[k - 1].vend - 1e-12) << k;
}

TEST(FirstStep, TheHeadsGuessIsThePromptsNextTokenOnTheFreshModel) {
  const FirstStepRun& r = first_step_run(1);
  const RunStep& s = r.first();
  EXPECT_EQ(count(s, ProbeKind::NextToken, 0), 8);
  const HeadGuess g = head_guess(s, 0);
  StoryRun& story = StoryRun::get();
  EXPECT_EQ(g.target, story.time_token());  // "Once upon a" is followed by " time"
  // The same distribution as the single-text probe on a fresh model (same seed, same weights).
  const auto fresh = story.fresh_model();
  const auto probs = trainer::next_token_probs(fresh->model(), story.tokenizer().encode(kPrompt));
  ASSERT_EQ(g.top.size(), 8u);
  for (const auto& [id, p] : g.top) EXPECT_NEAR(p, probs[(std::size_t)id], 1e-5 * std::max(1.0, p * 1e2)) << id;
  EXPECT_NEAR(g.p_target, probs[(std::size_t)story.time_token()], 1e-6);
  for (std::size_t k = 1; k < g.top.size(); ++k) EXPECT_GE(g.top[k - 1].second, g.top[k].second);
  // After the update the same text's guess (the second recorded step's head) has moved.
  const HeadGuess after = head_guess(r.second(), 0);
  EXPECT_EQ(after.target, g.target);
  EXPECT_NE(after.p_target, g.p_target);
}

TEST(FirstStep, GradientNormsAndUpdateSizesComeAsProbes) {
  const FirstStepRun& r = first_step_run(1);
  const RunStep& s = r.first();
  const int L = r.run->model.n_layers;
  std::vector<double> norm(L, -1), moved(L, -1);
  for (const ProbeValue& p : s.probes) {
    if (p.kind == ProbeKind::LayerGradNorm) norm[p.layer] = p.value;
    if (p.kind == ProbeKind::UpdateSize && p.layer >= 0) moved[p.layer] = p.value;
  }
  for (int l = 0; l < L; ++l) {
    EXPECT_GT(norm[l], 0.0) << l;
    EXPECT_GT(moved[l], 0.0) << l;
  }
  EXPECT_GT(s.grad_norm, 0.0);
  // The loupe's weights (read beside the events) moved too.
  int changed = 0;
  for (int i = 0; i < 16; ++i) changed += r.loupe_before[i] != r.loupe_after[i];
  EXPECT_GE(changed, 12);
}

TEST(FirstStep, AViewAfterNOpsFollowsFromTheEventsAlone) {
  const FirstStepRun& r = first_step_run(1);
  const int L = r.run->model.n_layers;
  const FirstStepView none = view(r, 0);
  EXPECT_EQ(none.ran, 0);
  EXPECT_TRUE(none.guess.empty());
  EXPECT_EQ(none.activations, 0);
  // Activations rise through the forward ops and are given back by the end of the backward.
  std::int64_t prev = 0;
  for (int n = 1; n <= L; ++n) {
    const FirstStepView v = view(r, n);
    EXPECT_GT(v.activations, prev) << n;
    prev = v.activations;
    EXPECT_EQ(v.guess.empty(), n < L) << n;  // the guess arrives with the last layer's forward (the head)
  }
  EXPECT_LT(view(r, 2 * L).activations, prev);
  // A layer's gradient norm appears once its backward has run, top layer first.
  for (int k = 0; k <= L; ++k) {
    const FirstStepView v = view(r, L + k);
    for (int l = 0; l < L; ++l) EXPECT_EQ(v.layer_grads[l] > 0.0, l >= L - k) << k << " " << l;
  }
  // The update brings the updated weights' guess; the same n gives the same view.
  const FirstStepView end = view(r, r.ops());
  EXPECT_TRUE(end.updated);
  EXPECT_EQ(end.guess.p_target, head_guess(r.second(), 0).p_target);
  EXPECT_EQ(view(r, 5).activations, view(r, 5).activations);
  EXPECT_EQ(view(r, 5).last, view(r, 5).last);
}

TEST(FirstStep, TheWarmStepTimesFourTextsAndTheUpdate) {
  const RunStep* s = warm_step().last_complete();
  ASSERT_NE(s, nullptr);
  const StepTimes t = step_times(*s);
  ASSERT_EQ(t.per_text.size(), 4u);
  for (double x : t.per_text) EXPECT_GT(x, 0.0);
  EXPECT_GT(t.update, 0.0);
  // Nothing else runs on one rank: the parts add up to the step on the virtual clock.
  EXPECT_NEAR(t.total(), s->virtual_s, 1e-9 + 1e-9 * s->virtual_s);
}
