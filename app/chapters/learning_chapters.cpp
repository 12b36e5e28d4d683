#include "app/chapters/learning_chapters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/chapters/box_chapters.h"
#include "app/chapters/field_chapter.h"
#include "app/run/first_step.h"
#include "app/run/model_memory.h"
#include "app/run/story_run.h"
#include "app/scene/token_label.h"
#include "app/scene/with_commas.h"
#include "render/palette.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;
namespace {

constexpr int kLayers = 4;
// The recorded step's ops on one rank, per microbatch: one forward per layer (the first takes
// the embedding in, the last the head and the loss), one backward per layer, top down; then one
// update for the step.
constexpr int kForwardDone = kLayers;                 // through the head's guess and the loss
constexpr int kBackwardDone = 2 * kLayers;
constexpr int kStepDone = kBackwardDone + 1;          // with the update
constexpr int kMicroOps = 2 * (2 * kLayers) + 1;      // two microbatches and the update

// Time (s) at which op i has run in each paced chapter: as the band (or ring) leaves its layer.
float guess_op_time(int i) { return 1.0f + 0.75f * (i + 1); }
float grad_op_time(int i) { return 0.6f + 0.8f * (i - kForwardDone + 1); }  // backward ops
constexpr float kUpdateAt = 3.6f;  // the step chapter's update
constexpr float kMicroOp = 0.43f;

std::string pct(double p) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", p);
  return b;
}

// The head's guess as the chapters show it, token ids read back to text.
Prediction as_prediction(const HeadGuess& g) {
  const trainer::BpeTokenizer& tok = StoryRun::get().tokenizer();
  Prediction p;
  for (const auto& [id, prob] : g.top) p.top.push_back({static_cast<std::int32_t>(id), tok.token_text(static_cast<std::int32_t>(id)), prob});
  p.p_time = g.p_target;
  p.loss_time = g.error();
  return p;
}

// Prediction bars: the top tokens, " time" always among them, and the rest as "other".
std::vector<Bar> prediction_bars(const Prediction& p, std::int32_t time_id, int rows = 8) {
  std::vector<Bar> bars;
  double shown = 0.0;
  bool have_time = false;
  for (const auto& tp : p.top) {
    if (static_cast<int>(bars.size()) == rows - 1 && !have_time && tp.id != time_id) continue;
    if (static_cast<int>(bars.size()) >= rows) break;
    bars.push_back({token_label(tp.text), tp.prob, tp.id == time_id});
    have_time |= tp.id == time_id;
    shown += tp.prob;
  }
  if (!have_time) {
    if (static_cast<int>(bars.size()) >= rows) { shown -= bars.back().value; bars.pop_back(); }
    bars.push_back({" time", p.p_time, true});
    shown += p.p_time;
  }
  bars.push_back({"other", std::max(0.0, 1.0 - shown), false});
  return bars;
}

// Activations held after the last op that ran, as a fraction of the toy GPU's memory.
float activations_fill(const FirstStepView& v) {
  return static_cast<float>(v.activations) / static_cast<float>(toy_capacity_bytes());
}

bool any_grads(const FirstStepView& v) {
  return std::any_of(v.layer_grads.begin(), v.layer_grads.end(), [](double g) { return g > 0.0; });
}



std::vector<float> normalised(const std::vector<double>& v) {
  double mx = 0;
  for (double x : v) mx = std::max(mx, x);
  std::vector<float> out;
  for (double x : v) out.push_back(mx > 0 ? static_cast<float>(x / mx) : 0.0f);
  return out;
}

// Steps the story's model has taken by now: 1,000 once chapter 10 has trained it, else the
// one step of chapter 8.
int trained_so_far() {
  StoryRun& run = StoryRun::get();
  return run.training_done() ? run.trained_steps() : 1;
}

TrayLook first_tray(const Tray& tray, int tokens_lit, float blank) {
  TrayLook t;
  t.tokens.assign(tray.tokens.begin(), tray.tokens.begin() + std::min<std::size_t>(3, tray.tokens.size()));
  t.tokens_lit = tokens_lit;
  t.blank = blank;
  return t;
}

// The four texts while the model works on the first: its prompt lit and the blank after it, the
// other three as they are.
template <class Trays>
void draw_trays_prompt_lit(Canvas& c, const LearningLayout& L, const Trays& trays, float s, float wpp) {
  for (int i = 0; i < 4; ++i) {
    TrayLook look = i == 0 ? first_tray(trays[0], 3, 1.0f) : TrayLook{};
    if (i) look.text = trays[i].text;
    draw_tray(c, L.tray(i), look, s, wpp);
  }
}

}  // namespace

float LearningChapter::duration() const {
  switch (scene_) {
    case LearningScene::NextToken: return 4.8f;
    case LearningScene::Guess: return 6.0f;
    case LearningScene::Gradients: return 5.2f;
    case LearningScene::Step: return 5.6f;
    case LearningScene::Microbatches: return 1.0f + kMicroOp * kMicroOps + 1.2f;
    case LearningScene::Train: return 6.0f;
    case LearningScene::Slow: return 4.0f;
    case LearningScene::NewRun: return 3.0f;
  }
  return 1.0f;
}

Camera LearningChapter::camera(glm::vec2 viewport, float t) const {
  LearningLayout L = learning_layout(layout_.chip_rect(0));
  Camera wide = Camera::fit(L.frame, viewport, 0.02f);
  if (scene_ != LearningScene::NextToken) return wide;
  // Pull back from the close-up of the box to make room for the trays and the chart.
  return dive(box_camera(layout_, viewport), wide, phase(t, 0.0f, 1.0f, Ease::InOutCubic));
}

int LearningChapter::ops_due(float t) const {
  switch (scene_) {
    case LearningScene::NextToken: return 0;
    case LearningScene::Guess: {
      int n = 0;
      while (n < kForwardDone && guess_op_time(n) <= t) ++n;
      return n;
    }
    case LearningScene::Gradients: {
      int n = kForwardDone;
      while (n < kBackwardDone && grad_op_time(n) <= t) ++n;
      return n;
    }
    case LearningScene::Step: return t >= kUpdateAt ? kStepDone : kBackwardDone;
    case LearningScene::Microbatches: return std::clamp(static_cast<int>((t - 1.0f) / kMicroOp) + 1, 0, kMicroOps);
    default: return 0;
  }
}

void LearningChapter::on_action() {
  if (scene_ == LearningScene::Train) StoryRun::get().start_training(1000);
}

// The long run is started once and never undone: after that the button would do nothing.
bool LearningChapter::button_offered() const {
  const StoryRun* run = StoryRun::ready();
  return !run || !run->training_started();
}

void LearningChapter::prepare(float t) {
  // What the picture at t draws from: the story, and the first step's recorded run or the warm
  // step's.
  StoryRun::get();
  switch (scene_) {
    case LearningScene::Guess:
    case LearningScene::Gradients:
    case LearningScene::Step:
    case LearningScene::Train: first_step_run(1); break;
    case LearningScene::Microbatches: first_step_run(2); break;
    case LearningScene::Slow:
    case LearningScene::NewRun: warm_step(); break;
    default: break;
  }
  if (scene_ == LearningScene::Train && t >= duration()) {
    StoryRun::get().start_training(1000);
    StoryRun::get().wait_for_training();
  }
}

std::string LearningChapter::activity() const {
  const StoryRun* story = StoryRun::ready();
  if (!story) return kStoryBuilding;
  const StoryRun& run = *story;
  if (std::string a = first_step_activity(); !a.empty()) return a;
  if (scene_ != LearningScene::Train) return {};
  if (run.trained_steps() == 0 || run.training_done()) return {};  // not started, or finished
  char b[96];
  std::snprintf(b, sizeof b, "training: step %s of %s", with_commas(run.trained_steps()).c_str(),
                with_commas(run.training_target()).c_str());
  return b;
}

// While the first step is being recorded (a job): the model's box and a line saying so.
// Before that, while the story itself is being built (StoryRun::ready()), the same with its line.
void LearningChapter::draw_recording(const SceneFrame& f, const LearningLayout& L, float wpp) {
  Canvas& c = f.world;
  c.set_layer(1);
  draw_box(c, L.box, loaded_box(kLayers), wpp);
  draw_measuring(c, L.box.chip, StoryRun::ready() ? first_step_activity() : std::string(kStoryBuilding));
}

void LearningChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float wpp = cam.world_per_pixel();
  if (!StoryRun::ready()) {  // the story is being built (a job): nothing of it to draw yet
    draw_field_behind(f.world, layout_, 0.07f, wpp);
    draw_recording(f, learning_layout(layout_.chip_rect(0)), wpp);
    f.world.set_layer(0);
    return;
  }
  // The learning chapters' recordings, queued once (in the order the chapters need them), so
  // each is ready by the time its chapter opens.
  first_step_run_ready(1);
  first_step_run_ready(2);
  warm_step_ready();
  draw_field_behind(f.world, layout_, 0.07f, wpp);  // neighbours recede behind the chart
  LearningLayout L = learning_layout(layout_.chip_rect(0));
  switch (scene_) {
    case LearningScene::NextToken: draw_next_token(f, L, wpp); break;
    case LearningScene::Guess: draw_guess(f, L, wpp); break;
    case LearningScene::Gradients: draw_gradients(f, L, wpp); break;
    case LearningScene::Step: draw_step(f, L, wpp); break;
    case LearningScene::Microbatches: draw_microbatches(f, L, wpp); break;
    case LearningScene::Train: draw_train(f, L, wpp); break;
    case LearningScene::Slow: draw_slow(f, L, wpp); break;
    case LearningScene::NewRun: draw_new_run(f, L, wpp); break;
  }
  f.world.set_layer(0);
}

// ---- The next token ----
void LearningChapter::draw_next_token(const SceneFrame& f, const LearningLayout& L, float wpp) {
  const float t = f.t, s = L.s;
  StoryRun& run = StoryRun::get();
  Canvas& c = f.world;
  c.set_layer(1);
  draw_box(c, L.box, loaded_box(kLayers), wpp);
  c.set_layer(2);
  const auto& trays = run.trays();
  for (int i = 0; i < 4; ++i) {
    TrayLook look;
    float in = phase(t, 0.8f + 0.15f * i, 0.5f, Ease::OutCubic);
    look.alpha = in;
    if (i == 0) {
      look = first_tray(trays[0], static_cast<int>(std::floor(phase(t, 1.4f, 0.9f) * 3.0f + 0.001f)),
                        phase(t, 2.3f, 0.3f));
      look.alpha = in;
    } else {
      look.text = trays[i].text;
    }
    draw_tray(c, L.tray(i), look, s, wpp);
  }
  // The prompt's tokens go in through the door at the bottom of the box.
  float go = phase(t, 2.6f, 1.1f, Ease::InOutCubic);
  if (go > 0.0f && go < 1.0f) {
    Rect tray0 = L.tray(0);
    for (int k = 0; k < 3; ++k) {
      float kk = std::clamp(go * 1.3f - k * 0.15f, 0.0f, 1.0f);
      glm::vec2 from{tray0.min.x + (0.08f + 0.1f * k) * s, tray0.center().y};
      glm::vec2 to{L.box.door.center().x, L.box.door.center().y + 0.05f * s};
      glm::vec2 p = lerp(from, to, ease(Ease::InOutCubic, kk));
      c.box(Rect::centered(p, glm::vec2(0.05f, 0.035f) * s), with_alpha(palette::forward, 1.0f - kk * 0.6f),
            0.008f * s);
    }
  }
  draw_readout(c, L.foot, -1, phase(t, 3.3f, 0.5f, Ease::Smooth), s);
  draw_chart(c, L.chart, std::string(kPrompt) + " ____", {}, 0.0f, phase(t, 3.7f, 0.6f, Ease::Smooth), 0.0f, "", s,
             wpp);
}

// ---- The model's guess ----
void LearningChapter::draw_guess(const SceneFrame& f, const LearningLayout& L, float wpp) {
  const float t = f.t, s = L.s;
  StoryRun& run = StoryRun::get();
  const FirstStepRun* fs = first_step_run_ready();
  if (!fs) return draw_recording(f, L, wpp);
  const FirstStepView rec = view(*fs, ops_due(t));
  const int ran = rec.ran;
  Canvas& c = f.world;
  c.set_layer(1);
  BoxLook box = loaded_box(kLayers);
  box.fill_activations = activations_fill(rec);
  // Working from when the first layer's forward begins (the band sets off) to the head.
  const bool working = t >= guess_op_time(0) - 0.75f && ran < kForwardDone;
  box.strip = working ? 0.9f : 0.3f;
  draw_box(c, L.box, box, wpp);
  c.set_layer(2);
  // The band climbs through the layers as their forward ops run.
  float band = phase(t, 1.0f, 3.0f) * kLayers;
  float band_a = phase(t, 0.6f, 0.3f) * (1.0f - phase(t, 4.3f, 0.5f));
  draw_forward_band(c, L.box, kLayers, band, band_a, wpp);
  draw_trays_prompt_lit(c, L, run.trays(), s, wpp);
  int active = !working && ran == 0 ? -1 : ran < kForwardDone ? 0 : 1;
  draw_readout(c, L.foot, active, 1.0f, s);
  draw_step_counter(c, L.foot, 0, 1.0f, s);
  // The model's real probabilities after "Once upon a" (the head's probes), once the last
  // forward op (with the head and the loss) has run.
  if (!rec.guess.empty()) {
    const Prediction p = as_prediction(rec.guess);
    float grow = phase(t, 4.1f, 0.8f, Ease::OutCubic);
    float err = phase(t, 5.0f, 0.6f, Ease::Smooth);
    draw_chart(c, L.chart, std::string(kPrompt) + " ____", prediction_bars(p, run.time_token()), grow, 1.0f, err,
               "error " + pct(p.loss_time) + " = −log p(time)", s, wpp);
  } else {
    draw_chart(c, L.chart, std::string(kPrompt) + " ____", {}, 0.0f, 1.0f, 0.0f, "", s, wpp);
  }
}

// ---- Work out the gradients ----
void LearningChapter::draw_gradients(const SceneFrame& f, const LearningLayout& L, float wpp) {
  const float t = f.t, s = L.s;
  StoryRun& run = StoryRun::get();
  const FirstStepRun* fs = first_step_run_ready();
  if (!fs) return draw_recording(f, L, wpp);
  const FirstStepView rec = view(*fs, ops_due(t));
  const int ran = rec.ran;
  Canvas& c = f.world;
  c.set_layer(1);
  BoxLook box = loaded_box(kLayers);
  box.fill_activations = activations_fill(rec);
  box.strip = ran < kBackwardDone ? 0.9f : 0.3f;
  draw_box(c, L.box, box, wpp);
  c.set_layer(2);
  float ring = kLayers - phase(t, 0.6f, 0.75f * kLayers + 0.2f) * kLayers;
  draw_backward_ring(c, L.box, kLayers, ring, 1.0f - phase(t, 4.3f, 0.5f), wpp);
  // A tick on each layer whose backward has run, sized by its gradient norm (the layer's probe;
  // zero until its backward has run).
  std::vector<float> ticks = normalised(rec.layer_grads);
  draw_grad_ticks(c, L.box, kLayers, ticks, 1.0f, wpp);
  draw_trays_prompt_lit(c, L, run.trays(), s, wpp);
  draw_readout(c, L.foot, ran < kBackwardDone ? 2 : -1, 1.0f, s);
  draw_step_counter(c, L.foot, 0, 1.0f, s);
  const Prediction p = as_prediction(rec.guess);
  draw_chart(c, L.chart, std::string(kPrompt) + " ____", prediction_bars(p, run.time_token()), 1.0f, 1.0f, 1.0f,
             "error " + pct(p.loss_time), s, wpp);
  float note = phase(t, 4.4f, 0.6f, Ease::Smooth);
  // Centred over the box unless that would run into the chart's title at the rule's size.
  const char* said = "gradients written down · weights not changed yet";
  const float right = std::min(L.box.chip.center().x + 0.5f * c.text_width(said, 0.034f * s), L.chart.min.x - 0.03f * s);
  c.text(said, {right, L.box.chip.max.y + 0.05f * s}, 0.034f * s, with_alpha(palette::backward, note), Align::Right);
}

// ---- One step ----
void LearningChapter::draw_step(const SceneFrame& f, const LearningLayout& L, float wpp) {
  const float t = f.t, s = L.s;
  StoryRun& run = StoryRun::get();
  const FirstStepRun* fs = first_step_run_ready();
  if (!fs) return draw_recording(f, L, wpp);
  const FirstStepView rec = view(*fs, ops_due(t));
  const bool updated = rec.updated;
  Canvas& c = f.world;
  c.set_layer(1);
  BoxLook box = loaded_box(kLayers);
  box.tone.assign(kLayers, updated ? pulse(t, kUpdateAt, 1.0f) : 0.0f);
  box.strip = updated && t < kUpdateAt + 0.4f ? 0.9f : 0.3f;
  draw_box(c, L.box, box, wpp);
  c.set_layer(2);
  // Gradient ticks stay on the layers until the update uses them up.
  std::vector<float> ticks = normalised(rec.layer_grads);
  draw_grad_ticks(c, L.box, kLayers, ticks, 1.0f - phase(t, kUpdateAt, 0.5f), wpp);
  // The blank fills with the word the text really has; every text gets its tick; trays go.
  float trays_a = 1.0f - phase(t, 2.0f, 0.6f, Ease::Smooth);
  for (int i = 0; i < 4; ++i) {
    TrayLook look;
    if (i == 0) {
      look = first_tray(run.trays()[0], 3, 1.0f);
      look.fill = run.trays()[0].tokens.size() > 3 ? run.trays()[0].tokens[3] : "";
      look.fill_a = phase(t, 0.3f, 0.5f, Ease::Smooth);
      std::string rest;
      for (std::size_t k = 4; k < run.trays()[0].tokens.size() && rest.size() < 60; ++k) rest += run.trays()[0].tokens[k];
      look.text = look.fill_a > 0.5f ? rest : "";
    } else {
      look.text = run.trays()[i].text;
    }
    look.tick = phase(t, 0.8f + 0.15f * i, 0.4f, Ease::OutBack);
    look.alpha = trays_a;
    draw_tray(c, L.tray(i), look, s, wpp);
  }
  draw_readout(c, L.foot, t >= kUpdateAt && t < kUpdateAt + 1.2f ? 3 : -1, 1.0f, s);
  draw_step_counter(c, L.foot, updated && t >= kUpdateAt + 0.4f ? 1 : 0, phase(t, 2.4f, 0.4f, Ease::Smooth), s);
  // The loupe on layer 2: 16 real weights, moving by their real update (read from the trainer
  // around the recorded step: weights are not events).
  Rect slab = L.box.slab(1, kLayers);
  Rect loupe{{L.trays.min.x + 0.02f * s, L.trays.min.y + 0.02f * s}, {L.trays.min.x + 0.62f * s, L.trays.max.y - 0.02f * s}};
  float open = phase(t, 2.6f, 0.5f, Ease::OutCubic);
  if (open > 0.0f) {
    c.line({slab.min.x, slab.center().y}, {loupe.max.x, loupe.max.y}, std::max(wpp, 0.003f * s),
           with_alpha(palette::weights, open * 0.5f));
    std::vector<float> before(fs->loupe_before.begin(), fs->loupe_before.end());
    std::vector<float> after = updated ? std::vector<float>(fs->loupe_after.begin(), fs->loupe_after.end()) : before;
    draw_loupe(c, loupe, before, after, phase(t, kUpdateAt, 1.0f, Ease::InOutCubic), 100.0f, open, s, wpp);
  }
  const Prediction p = as_prediction(rec.guess);
  draw_chart(c, L.chart, std::string(kPrompt) + " ____", prediction_bars(p, run.time_token()), 1.0f, 1.0f,
             1.0f, "error " + pct(p.loss_time), s, wpp);
}

// ---- Microbatches ----
void LearningChapter::draw_microbatches(const SceneFrame& f, const LearningLayout& L, float wpp) {
  const float t = f.t, s = L.s;
  StoryRun& run = StoryRun::get();
  const FirstStepRun* fs = first_step_run_ready(2);
  if (!fs) return draw_recording(f, L, wpp);
  const FirstStepView rec = view(*fs, ops_due(t));
  const int ran = rec.ran;
  const int per = 2 * kLayers;  // ops of one microbatch
  Canvas& c = f.world;
  c.set_layer(1);
  BoxLook box = loaded_box(kLayers);
  const bool updated = rec.updated;
  box.tone.assign(kLayers, updated ? pulse(t, 1.0f + kMicroOp * (2 * per), 1.0f) : 0.0f);
  box.fill_activations = activations_fill(rec);
  box.strip = ran > 0 && !updated ? 0.9f : 0.3f;
  draw_box(c, L.box, box, wpp);
  c.set_layer(2);
  // Where the current microbatch is: its band climbing or its ring coming down.
  int mb = std::min(1, ran / per);
  int in_mb = ran - mb * per;
  if (ran > 0 && !updated) {
    if (in_mb < kLayers) draw_forward_band(c, L.box, kLayers, in_mb + 0.5f, 1.0f, wpp);
    else draw_backward_ring(c, L.box, kLayers, std::max(0.0f, kLayers - (in_mb - kLayers) - 0.5f), 1.0f, wpp);
  }
  // Ticks pile: one set per finished microbatch, sized by the gradients so far.
  int finished = std::min(2, ran / per);
  if (any_grads(rec) && !updated) {
    auto sizes = normalised(rec.layer_grads);
    draw_grad_ticks(c, L.box, kLayers, sizes, 1.0f, wpp, std::max(1, finished));
  }
  // Two half-size trays, the microbatches: two texts each.
  for (int m = 0; m < 2; ++m) {
    Rect r = L.tray(m, 2);
    bool current = m == mb && ran > 0 && !updated;
    TrayLook look;
    look.text = run.trays()[m * 2].text.substr(0, 40) + " | " + run.trays()[m * 2 + 1].text;
    look.alpha = phase(t, 0.2f + 0.2f * m, 0.5f, Ease::OutCubic) * (current || ran == 0 ? 1.0f : 0.55f);
    look.tick = (finished > m) ? 1.0f : 0.0f;
    draw_tray(c, r, look, s, wpp);
    c.text(m == 0 ? "microbatch 1" : "microbatch 2", {r.max.x + 0.02f * s, r.center().y - 0.012f * s}, 0.03f * s,
           with_alpha(current ? palette::forward : palette::text_dim, look.alpha));
  }
  int active = ran == 0 ? -1 : updated ? 3 : in_mb < kForwardDone ? 0 : in_mb == kForwardDone ? 1 : 2;
  draw_readout(c, L.foot, active, 1.0f, s, true);
  draw_step_counter(c, L.foot, updated ? 1 : 0, 1.0f, s);
  // Chapter 8 ended on step 1: this is that same first step again, from the same fresh model.
  draw_step_note(c, L.foot, "the first step again, in two halves", 1.0f, s);
}

// ---- Train it ----
void LearningChapter::draw_train(const SceneFrame& f, const LearningLayout& L, float wpp) {
  const float t = f.t, s = L.s;
  StoryRun& run = StoryRun::get();
  Canvas& c = f.world;
  const int steps = run.trained_steps();
  const bool running = steps > 0 && !run.training_done();
  auto ms = run.milestones();
  c.set_layer(1);
  BoxLook box = loaded_box(kLayers);
  // While it trains, loops play: band up, ring down, re-tone; one loop per 1.2 s of picture.
  float loop = std::fmod(t, 1.2f) / 1.2f;
  if (running) box.tone.assign(kLayers, loop > 0.85f ? (loop - 0.85f) / 0.15f : 0.0f);
  box.strip = running ? 0.9f : 0.3f;
  draw_box(c, L.box, box, wpp);
  c.set_layer(2);
  if (running) {
    if (loop < 0.45f) draw_forward_band(c, L.box, kLayers, loop / 0.45f * kLayers, 1.0f, wpp);
    else if (loop < 0.85f) draw_backward_ring(c, L.box, kLayers, kLayers * (1.0f - (loop - 0.45f) / 0.4f), 1.0f, wpp);
  }
  draw_readout(c, L.foot, running ? static_cast<int>(loop * 4.0f) : -1, 1.0f, s, true);
  draw_step_counter(c, L.foot, steps, 1.0f, s);
  draw_step_note(c, L.foot, run.training_done() ? "" : "a run of its own, from a fresh model", 1.0f, s);
  // The latest predictions: at steps 0, 1, 10, 100 and 1,000, from the model being trained.
  // Before the long run: the fresh model's (the first step's recording, before its update).
  const FirstStepRun* fs = ms.empty() ? first_step_run_ready() : nullptr;
  Prediction latest = !ms.empty() ? ms.back() : fs ? as_prediction(head_guess(fs->first(), 0)) : Prediction{};
  if (ms.empty()) latest.step = 0;
  std::string title = std::string(kPrompt);
  title += latest.top.empty() || latest.step < 1000 ? " ____" : token_label(latest.top[0].text);
  char err[64];
  std::snprintf(err, sizeof err, "error %.2f at step %s", latest.loss_time, with_commas(latest.step).c_str());
  draw_chart(c, L.chart, title, prediction_bars(latest, run.time_token()), 1.0f, 1.0f, 1.0f, err, s, wpp);
  // The first tray with the blank, filled by the model's own top guess once trained.
  TrayLook look = first_tray(run.trays()[0], 3, 1.0f);
  if (run.training_done() && !latest.top.empty()) {
    look.fill = token_label(latest.top[0].text);
    look.fill_a = 1.0f;
  }
  draw_tray(c, L.tray(0), look, s, wpp);
  const char* hint = run.training_done() ? "trained: the weights now hold what it learned"
                     : running           ? "training for real on this machine's CPU"
                                         : "press the button to train to step 1,000";
  c.text(hint, {L.tray(1).min.x, L.tray(1).center().y - 0.012f * s}, 0.034f * s, with_alpha(palette::text_dim, 1.0f));
  if (!ms.empty()) {
    // The milestones seen so far, one line each, in a second column when the text is too big
    // for one above the read-out.
    const float size = c.text_size(0.03f * s), pitch = std::max(0.04f * s, 1.2f * size);
    const float top = L.tray(2).max.y - 0.04f * s, floor = L.foot.max.y - 0.045f * s + 1.1f * c.text_size(0.04f * s);
    const int per_column = std::max(1, static_cast<int>((top - floor - 0.3f * size) / pitch) + 1);
    float x = L.tray(2).min.x, widest = 0.0f;
    for (std::size_t i = 0; i < ms.size(); ++i) {
      if (i > 0 && i % per_column == 0) { x += widest + 1.5f * size; widest = 0.0f; }
      char line[128];
      std::snprintf(line, sizeof line, "step %5s:  p(time) = %.3f", with_commas(ms[i].step).c_str(), ms[i].p_time);
      widest = std::max(widest, c.text(line, {x, top - pitch * (i % per_column)}, size,
                                       with_alpha(palette::text_dim, 1.0f)));
    }
  }
}

// ---- It's slow ----
namespace {
// One step's measured time on GPU 1: a segment per text (each text its own microbatch, so
// its ops can be timed alone), then the update.
void draw_step_time(Canvas& c, const LearningLayout& L, float grow, float alpha, float wpp) {
  const RunState* warm = warm_step_ready();
  const RunStep* step = warm ? warm->last_complete() : nullptr;
  if (!step) {  // being timed: a line where the bar will be
    c.text(first_step_activity() + "…", {L.trays.min.x, L.trays.min.y + 0.05f * L.s}, 0.03f * L.s,
           with_alpha(palette::forward, alpha));
    return;
  }
  // The recorded step's spans on the virtual clock (one rank, so each its op's measured cost).
  StepTimes times = step_times(*step);
  times.per_text.resize(4, 0.0);
  const std::vector<double>& per_text = times.per_text;
  const double update = times.update, total = times.total();
  std::vector<Segment> segs;
  for (int i = 0; i < 4; ++i)
    segs.push_back({per_text[i], i % 2 ? palette::forward : mix(palette::forward, palette::backward, 0.3f),
                    "text " + std::to_string(i + 1)});
  segs.push_back({update, palette::weights, ""});
  char cap[128];
  std::snprintf(cap, sizeof cap, "one step on GPU 1: %.1f ms, measured, one text at a time · each waits for the one before",
                total * 1000.0);
  // Tall enough for "text 1" at the size the text rule draws it (a bar 0.04 high held 10 px
  // at 1600x900 under 15 px labels), in the foot's height: these chapters leave out the phase
  // read-out above it, which had no phase to light here.
  const float s = L.s;
  const float h = std::clamp(1.45f * c.text_size(0.026f * s), 0.04f * s, L.foot.size().y - 0.03f * s);
  Rect bar{{L.foot.min.x, L.foot.min.y + 0.005f * s}, {L.foot.min.x + 1.5f * s, L.foot.min.y + 0.005f * s + h}};
  draw_time_bar(c, bar, segs, total, grow, alpha, cap, s, wpp);
}
}  // namespace

void LearningChapter::draw_slow(const SceneFrame& f, const LearningLayout& L, float wpp) {
  const float t = f.t, s = L.s;
  StoryRun& run = StoryRun::get();
  Canvas& c = f.world;
  c.set_layer(1);
  draw_box(c, L.box, loaded_box(kLayers), wpp);
  c.set_layer(2);
  for (int i = 0; i < 4; ++i) {
    TrayLook look;
    look.text = run.trays()[i].text;
    draw_tray(c, L.tray(i), look, s, wpp);
  }
  draw_step_time(c, L, phase(t, 0.5f, 2.0f, Ease::InOutCubic), 1.0f, wpp);
  // The model so far: trained to step 1,000 if chapter 10's run is done, else one step.
  draw_step_counter(c, L.foot, trained_so_far(), 1.0f, s);
}

// ---- A new run ----
void LearningChapter::draw_new_run(const SceneFrame& f, const LearningLayout& L, float wpp) {
  const float t = f.t, s = L.s;
  StoryRun& run = StoryRun::get();
  Canvas& c = f.world;
  c.set_layer(1);
  draw_box(c, L.box, loaded_box(kLayers), wpp);
  c.set_layer(2);
  // The trays dim to outlines: any number of texts could come next.
  float dim = phase(t, 0.4f, 1.0f, Ease::InOutCubic);
  for (int i = 0; i < 4; ++i) {
    TrayLook look;
    look.text = dim < 0.5f ? run.trays()[i].text : "";
    look.outline_only = dim;
    look.alpha = 1.0f - 0.4f * dim;
    draw_tray(c, L.tray(i), look, s, wpp);
  }
  c.text("+ more", {L.trays.max.x + 0.03f * s, L.trays.min.y + 0.02f * s}, 0.04f * s,
         with_alpha(palette::text_dim, dim), Align::Left);
  draw_step_time(c, L, 1.0f, 1.0f, wpp);  // the time bar stays: the cost we want to cut
  // The step count goes back to 0: a fresh, untrained model.
  draw_step_counter(c, L.foot, t < 0.8f ? trained_so_far() : 0, 1.0f, s);
  c.text("a fresh run: new weights, step 0", {L.box.chip.center().x, L.box.chip.max.y + 0.05f * s}, 0.036f * s,
         with_alpha(palette::text_dim, phase(t, 0.8f, 0.5f, Ease::Smooth)), Align::Center);
}

}  // namespace onegpu::app
