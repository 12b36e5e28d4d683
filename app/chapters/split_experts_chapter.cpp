#include "app/chapters/split_experts_chapter.h"

#include <cstdio>

#include "app/chapters/box_chapters.h"
#include "app/chapters/field_chapter.h"
#include "app/chapters/memory_chapters.h"
#include "app/run/ep_traffic.h"
#include "app/run/model_memory.h"
#include "app/scene/gpu_box.h"
#include "render/palette.h"
#include "render/text_rule.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;

namespace {
constexpr float kCut = 1.0f, kCutFor = 1.0f, kDrop = 2.2f;
}

void SplitExpertsChapter::prepare(float) { story_expert_split_bytes(); }
float SplitExpertsChapter::waits_for_button_at() const { return kCut; }
std::string SplitExpertsChapter::activity() const { return story_expert_split_bytes_activity(); }
void TokensChapter::prepare(float) {
  story_expert_split_bytes();
  story_expert_traffic();
}
std::string TokensChapter::activity() const {
  std::string a = story_expert_split_bytes_activity();
  return a.empty() ? story_expert_traffic_activity() : a;
}

Rect SplitExpertsChapter::expert_rect(int gpu, int layer, int e) const {
  BoxParts b = box_parts(layout_.chip_rect(gpu));
  Rect slab = b.slab(layer, 4);
  // A row of 16 to the right of the layer's name.
  float x0 = slab.min.x + 0.4f * slab.size().x, w = (slab.max.x - 0.01f * b.s - x0) / 16.0f;
  float y0 = slab.min.y + 0.2f * slab.size().y, y1 = slab.max.y - 0.2f * slab.size().y;
  return {{x0 + e * w + 0.12f * w, y0}, {x0 + (e + 1) * w - 0.12f * w, y1}};
}

Camera SplitExpertsChapter::camera(glm::vec2 viewport, float) const {
  return two_gpu_camera(layout_, viewport, 0.42f, 0.2f);
}

void SplitExpertsChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  draw_field_behind(f.world, layout_, 0.05f, wpp, 2);
  Canvas& c = f.world;
  const SplitBytes* split_ready = story_expert_split_bytes_ready();
  story_expert_traffic_ready();  // the next chapter's count, queued behind
  if (!split_ready) {  // the two runs are being built: GPU 1 and GPU 2 as chapter 19 left them
    c.set_layer(1);
    for (int g = 0; g < 2; ++g) draw_box(c, box_parts(layout_.chip_rect(g)), loaded_box(4), wpp);
    draw_measuring(c, box_parts(layout_.chip_rect(0)).chip, story_expert_split_bytes_activity());
    return;
  }
  const SplitBytes& bytes = *split_ready;
  const double cap = static_cast<double>(toy_capacity_bytes());
  const float cut = phase(t, kCut, kCutFor, Ease::InOutCubic);
  const float drop = phase(t, kDrop, 1.2f, Ease::InOutCubic);
  for (int g = 0; g < 2; ++g) {
    BoxParts b = box_parts(layout_.chip_rect(g));
    const float s = b.s, line = std::max(wpp, 0.003f * s);
    c.set_layer(1);
    BoxLook look = loaded_box(4);
    look.fill_weights = static_cast<float>(lerp(bytes.replicated / cap, bytes.split / cap, double(drop)));
    if (g == 1) look.capacity_label.clear();
    look.label_room = 0.4f;  // the experts' squares take the rest of each slab
    draw_box(c, b, look, wpp);
    c.set_layer(2);
    for (int l = 0; l < 4; ++l) {
      for (int e = 0; e < 16; ++e) {
        Rect r = expert_rect(g, l, e);
        bool kept = g == 0 ? e < 8 : e >= 8;
        float gone = kept ? 0.0f : drop;
        c.box(r, with_alpha(palette::weights, 0.85f * (1.0f - gone)), 0.002f * s,
              with_alpha(palette::weights, 0.5f + 0.5f * (1.0f - gone)), line);
      }
      // The cut, running down every row between expert 8 and expert 9.
      if (cut > 0.0f) {
        Rect r8 = expert_rect(g, l, 7), r9 = expert_rect(g, l, 8);
        float x = (r8.max.x + r9.min.x) * 0.5f;
        Rect slab = b.slab(l, 4);
        float top = slab.max.y + 0.01f * s;
        float row_cut = phase(cut, (3 - l) * 0.2f, 0.4f);
        c.line({x, top}, {x, top - (slab.size().y + 0.02f * s) * row_cut}, std::max(2.0f * wpp, 0.006f * s),
               with_alpha(palette::backward, 1.0f));
      }
    }
    float label = phase(t, kDrop, 0.6f, Ease::Smooth);
    c.text(g == 0 ? "experts 1–8 stay on GPU 1" : "experts 9–16 stay on GPU 2", {b.chip.center().x, b.chip.min.y - 0.08f * s},
           0.045f * s, with_alpha(palette::text, label), Align::Center);
  }
  // The bracket under the pair, and the measured drop.
  Rect a = layout_.chip_rect(0), b2 = layout_.chip_rect(1);
  const float s = a.size().x;
  float br = phase(t, kDrop + 1.0f, 0.6f, Ease::Smooth);
  float y = a.min.y - 0.18f * s;
  glm::vec4 col = with_alpha(palette::text_dim, br);
  c.line({a.min.x, y}, {b2.max.x, y}, std::max(1.5f * wpp, 0.004f * s), col);
  c.line({a.min.x, y}, {a.min.x, y + 0.03f * s}, std::max(1.5f * wpp, 0.004f * s), col);
  c.line({b2.max.x, y}, {b2.max.x, y + 0.03f * s}, std::max(1.5f * wpp, 0.004f * s), col);
  c.text("Expert parallelism · each GPU holds half the experts", {(a.center().x + b2.center().x) * 0.5f, y - 0.07f * s},
         0.05f * s, with_alpha(palette::text, br), Align::Center);
  char line[160];
  std::snprintf(line, sizeof line, "memory per GPU: %s → %s (%.0f%% less), from each rank's allocator",
                format_bytes(bytes.replicated).c_str(), format_bytes(bytes.split).c_str(),
                100.0 * (1.0 - double(bytes.split) / double(bytes.replicated)));
  c.text(line, {(a.center().x + b2.center().x) * 0.5f, y - 0.14f * s}, 0.036f * s, with_alpha(palette::text_dim, br),
         Align::Center);
  c.set_layer(0);
}

Camera TokensChapter::camera(glm::vec2 viewport, float) const {
  return two_gpu_camera(layout_, viewport, 0.3f, 0.75f);
}

void TokensChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  draw_field_behind(f.world, layout_, 0.05f, wpp, 2);
  Canvas& c = f.world;
  const SplitBytes* split_ready = story_expert_split_bytes_ready();
  const Traffic* traffic_ready = story_expert_traffic_ready();
  if (!split_ready || !traffic_ready) {  // still counting: both GPUs, and a line saying so
    c.set_layer(1);
    for (int g = 0; g < 2; ++g) draw_box(c, box_parts(layout_.chip_rect(g)), loaded_box(4), wpp);
    draw_measuring(c, box_parts(layout_.chip_rect(0)).chip,
                   split_ready ? story_expert_traffic_activity() : story_expert_split_bytes_activity());
    return;
  }
  const Traffic& tr = *traffic_ready;
  const SplitBytes& bytes = *split_ready;
  const double cap = static_cast<double>(toy_capacity_bytes());
  SplitExpertsChapter split;  // the same expert squares as the chapter before
  BoxParts g[2] = {box_parts(layout_.chip_rect(0)), box_parts(layout_.chip_rect(1))};
  const float s = g[0].s;
  const float gap_x = (g[0].chip.max.x + g[1].chip.min.x) * 0.5f;
  for (int k = 0; k < 2; ++k) {
    c.set_layer(1);
    BoxLook look = loaded_box(4);
    look.fill_weights = static_cast<float>(bytes.split / cap);
    if (k == 1) look.capacity_label.clear();
    look.label_room = 0.4f;  // the experts' squares take the rest of each slab
    draw_box(c, g[k], look, wpp);
    c.set_layer(2);
    for (int l = 0; l < 4; ++l)
      for (int e = 0; e < 16; ++e) {
        Rect r = split.expert_rect(k, l, e);
        bool kept = k == 0 ? e < 8 : e >= 8;
        c.box(r, with_alpha(palette::weights, kept ? 0.85f : 0.0f), 0.002f * s,
              with_alpha(palette::weights, kept ? 1.0f : 0.5f), std::max(wpp, 0.003f * s));
      }
    draw_waiting_layers(c, g[k].chip, 1.0f, wpp);
  }
  c.set_layer(2);
  // Beads across the gap: one per token-expert pair that travels (up to a dozen drawn), going
  // over and coming back within the layer's slot; amber going up, pink coming down.
  auto crossing = [&](int l, float p, glm::vec4 col) {
    if (p <= 0.0f || p >= 1.0f) return;
    float y = g[0].slab(l, 4).center().y;
    float out = p < 0.5f ? p * 2.0f : (1.0f - p) * 2.0f;  // there and back
    for (int k = 0; k < 2; ++k) {
      int n = std::min(12, tr.crossing[k][l]);
      glm::vec2 from{k == 0 ? g[0].slab(l, 4).max.x : g[1].slab(l, 4).min.x, y};
      glm::vec2 to{k == 0 ? g[1].slab(l, 4).min.x : g[0].slab(l, 4).max.x, y};
      for (int i = 0; i < n; ++i) {
        // A little train of beads: each one a step behind the one before.
        float q = std::clamp(out * 1.4f - 0.4f * i / std::max(1, n - 1), 0.0f, 1.0f);
        float lane = ((i % 3) - 1) * 0.008f * s + (k ? -0.014f : 0.014f) * s;
        glm::vec2 pos = lerp(from, to, ease(Ease::InOutSine, q)) + glm::vec2(0.0f, lane);
        c.disc(pos, 0.007f * s, col);
      }
    }
  };
  for (int l = 0; l < 4; ++l) {
    crossing(l, phase(t, kUp + kLayerUp * l, kLayerUp), palette::forward);
    crossing(l, phase(t, kDown + kLayerDown * (3 - l), kLayerDown), palette::backward);
    // The count for this layer, from the router: both directions.
    float shown = phase(t, kUp + kLayerUp * l, 0.3f, Ease::Smooth);
    char n[64];
    // The all-to-all's own count (the router's choices give the same numbers; a test checks).
    std::snprintf(n, sizeof n, "%lld → · ← %lld", tr.moved[0].empty() ? 0LL : tr.moved[0][l],
                  tr.moved[1].empty() ? 0LL : tr.moved[1][l]);
    c.text(n, {gap_x, g[0].slab(l, 4).center().y + 0.03f * s}, 0.03f * s, with_alpha(palette::text_dim, shown),
           Align::Center);
  }
  // Then the gradients meet in the gap, as with data parallelism, and the step is done.
  float meet = pulse(t, kMeet, 0.8f);
  if (meet > 0.0f)
    for (int l = 0; l < 4; ++l) c.disc({gap_x, g[0].slab(l, 4).min.y}, 0.02f * s * meet, palette::backward);
  float note = phase(t, 1.0f, 0.6f, Ease::Smooth);
  char line[200];
  std::snprintf(line, sizeof line, "tokens the all-to-all sent to an expert on the other GPU, per layer (of %d)",
                tr.pairs_per_gpu);
  c.text(line, {gap_x, g[0].chip.min.y - 0.1f * s}, 0.034f * s, with_alpha(palette::text_dim, note), Align::Center);
  // The step counter under the right GPU, pushed below the note when the rule makes that wide.
  // Below it means a line's pitch under the note's baseline at both sizes drawn (a fixed 1.3
  // of the note's size left the larger counter's top in the note at 1920x1080, text 1.6).
  const float note_right = gap_x + 0.5f * c.text_width(line, 0.034f * s);
  const bool below = note_right > g[1].chip.max.x - c.text_width("step 2", 0.05f * s) - 0.02f * s;
  const float counter_y = below ? g[0].chip.min.y - 0.1f * s - render::line_pitch(c.text_size(0.034f * s), c.text_size(0.05f * s))
                                : g[0].chip.min.y - 0.08f * s;
  c.text(t >= kMeet + 0.5f ? "step 2" : "step 1", {g[1].chip.max.x, counter_y}, 0.05f * s, palette::text, Align::Right);
  c.text("layers 5–8 still wait: eight layers do not fit yet", {gap_x, g[0].chip.max.y + 0.68f * s}, 0.04f * s,
         with_alpha(palette::text, note), Align::Center);
  c.set_layer(0);
}

}  // namespace onegpu::app
