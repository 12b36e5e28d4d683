#include "app/chapters/expert_chapters.h"

#include <cstdio>

#include "app/chapters/box_chapters.h"
#include "app/chapters/field_chapter.h"
#include "app/run/posted.h"
#include "app/run/story_run.h"
#include "app/scene/gpu_box.h"
#include "render/palette.h"
#include "render/tween.h"
#include "trainer/train/probes.h"

namespace onegpu::app {

using namespace render;

namespace {
constexpr float kOpenAt = 0.4f, kOpenFor = 1.6f;
constexpr int kExperts = 16;
}  // namespace

RouterPick InsideLayerChapter::pick() {
  StoryRun& run = StoryRun::get();
  const std::unique_ptr<trainer::Trainer> fresh = run.fresh_model();  // a new run starts untrained
  // The story's characters: the first whose name is a single token, after a prompt that ends
  // with it, so the token routed is a whole word.
  std::string prompt = "Once upon a time, there lived a clever fox";
  for (const char* name : {"fox", "bear", "owl", "mouse", "rabbit", "duck", "goat"}) {
    if (run.tokenizer().encode(std::string(" ") + name).size() == 1) {
      prompt = std::string("Once upon a time, there lived a clever ") + name;
      break;
    }
  }
  auto tokens = run.tokenizer().encode(prompt);
  auto choices = trainer::router_choices(fresh->model(), tokens, 0);
  RouterPick p;
  const auto& last = choices.back();
  p.token = run.tokenizer().token_text(last.token);
  p.experts.assign(last.experts.begin(), last.experts.end());
  p.gates = last.gates;
  return p;
}

namespace {
PostedValue<RouterPick>& posted_pick() {
  StoryRun::get();  // first, so that it outlives the job (statics die in reverse order of creation)
  static PostedValue<RouterPick> v;
  if (!v.posted()) v.post("the router's choice on the fresh model", [] { return InsideLayerChapter::pick(); });
  return v;
}
}  // namespace

const RouterPick* InsideLayerChapter::pick_ready() { return posted_pick().ready(); }
std::string InsideLayerChapter::pick_activity() { return posted_activity(posted_pick()); }
void InsideLayerChapter::prepare(float) { posted_pick().wait(); }

Rect InsideLayerChapter::panel(float open) const {
  BoxParts b = box_parts(layout_.chip_rect(0));
  Rect slab = b.slab(0, 4);
  Rect opened = Rect::centered(slab.center() + glm::vec2(0.0f, 0.1f * b.s), {slab.size().x, slab.size().x * 0.56f});
  return {lerp(slab.min, opened.min, open), lerp(slab.max, opened.max, open)};
}

Camera InsideLayerChapter::camera(glm::vec2 viewport, float t) const {
  Rect p = panel(1.0f);
  Rect view{{p.min.x, p.min.y - p.size().y * 0.35f}, {p.max.x, p.max.y + p.size().y * 0.12f}};
  Camera close = Camera::fit(view, viewport, 0.04f);
  return dive(box_camera(layout_, viewport), close, phase(t, 0.0f, kOpenAt + kOpenFor, Ease::InOutCubic));
}

void InsideLayerChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  draw_field_behind(f.world, layout_, 0.07f, wpp);
  Canvas& c = f.world;
  BoxParts b = box_parts(layout_.chip_rect(0));
  float open = phase(t, kOpenAt, kOpenFor, Ease::InOutCubic);
  c.set_layer(1);
  BoxLook look = loaded_box(4);
  look.fade = 1.0f - 0.9f * open;
  draw_box(c, b, look, wpp);

  // The opened layer.
  c.set_layer(2);
  Rect P = panel(open);
  const float u = P.size().x, h = P.size().y;
  const float line = std::max(1.5f * wpp, 0.004f * u);
  c.box(P, with_alpha(mix(palette::chip_body, palette::weights, 0.12f), 1.0f), 0.02f * u,
        with_alpha(palette::weights, 1.0f), line);
  float inside = phase(t, kOpenAt + kOpenFor * 0.6f, 0.6f, Ease::Smooth);
  if (inside <= 0.0f) { c.set_layer(0); return; }
  const float txt = 0.028f * u;
  // Attention along the base.
  Rect att{{P.min.x + 0.03f * u, P.min.y + 0.05f * h}, {P.max.x - 0.03f * u, P.min.y + 0.2f * h}};
  c.box(att, with_alpha(mix(palette::lit_dim, palette::lit, 0.35f), inside), 0.01f * u);
  c.text("attention: each token looks back at the ones before it", {att.center().x, att.center().y - txt * 0.35f}, txt,
         with_alpha(palette::text, inside), Align::Center);
  // The router's notch.
  Rect router = Rect::centered({P.center().x, P.min.y + 0.32f * h}, {0.16f * u, 0.08f * h});
  c.box(router, with_alpha(palette::forward, 0.25f * inside), 0.015f * u, with_alpha(palette::forward, inside), line);
  c.text("router", {router.center().x, router.center().y - txt * 0.35f}, txt, with_alpha(palette::text, inside),
         Align::Center);
  // Sixteen experts, two rows of eight (experts 1-8 on the lower row).
  const RouterPick* pk_ready = pick_ready();  // a job: the fresh model's choice, worked out once
  if (!pk_ready) {
    draw_measuring(c, box_parts(layout_.chip_rect(0)).chip, pick_activity());
    return;
  }
  const RouterPick& pk = *pk_ready;
  const float lit_at = 3.6f;
  std::vector<Rect> boxes;
  for (int e = 0; e < kExperts; ++e) {
    int row = e / 8, col = e % 8;
    float w = (u - 0.06f * u - 7 * 0.015f * u) / 8.0f;
    float x0 = P.min.x + 0.03f * u + col * (w + 0.015f * u);
    float y0 = P.min.y + (0.47f + row * 0.25f) * h;
    boxes.push_back({{x0, y0}, {x0 + w, y0 + 0.2f * h}});
  }
  // The routes go under the boxes.
  float route = phase(t, 3.2f, 0.5f, Ease::OutCubic);
  for (std::size_t k = 0; k < pk.experts.size() && route > 0.0f; ++k) {
    const Rect& r = boxes[pk.experts[k]];
    glm::vec2 a{router.center().x, router.max.y}, bb{r.center().x, r.min.y};
    c.line(a, lerp(a, bb, route), line * 1.6f, with_alpha(palette::forward, inside));
  }
  for (int e = 0; e < kExperts; ++e) {
    const Rect& r = boxes[e];
    int rank = -1;
    for (std::size_t k = 0; k < pk.experts.size(); ++k)
      if (pk.experts[k] == e) rank = static_cast<int>(k);
    float lit = rank >= 0 ? phase(t, lit_at + 0.15f * rank, 0.4f, Ease::OutCubic) : 0.0f;
    c.box(r, with_alpha(mix(palette::chip_body, palette::forward, lit * 0.85f), inside), 0.012f * u,
          with_alpha(mix(palette::weights, palette::forward, lit), inside), line);
    c.text(std::to_string(e + 1), {r.center().x, r.center().y + (rank >= 0 ? 0.1f : -0.35f) * txt * 1.4f},
           txt * 1.4f, with_alpha(lit > 0.5f ? palette::background : palette::text_dim, inside), Align::Center);
    if (rank >= 0 && lit > 0.0f) {
      char g[32];
      std::snprintf(g, sizeof g, "gate %.0f%%", pk.gates[rank] * 100.0f);
      c.text(g, {r.center().x, r.min.y + txt * 0.5f}, txt * 0.75f, with_alpha(palette::background, lit),
             Align::Center);
    }
  }
  c.text("16 experts: most of the layer's weights", {P.center().x, P.max.y + 0.03f * h}, txt,
         with_alpha(palette::text_dim, inside), Align::Center);

  // The token comes up from below into the router, which sends it to its two experts.
  float come = phase(t, 2.4f, 0.9f, Ease::InOutCubic);
  glm::vec2 from{P.center().x, P.min.y - 0.22f * h}, to{router.center().x, router.min.y - txt * 1.3f};
  glm::vec2 at = lerp(from, to, come);
  float tw = c.text_width(pk.token, txt * 1.4f);
  c.box(Rect::centered(at, {tw + 0.03f * u, txt * 2.0f}), with_alpha(palette::forward, inside), 0.01f * u);
  c.text(pk.token, {at.x, at.y - txt * 0.5f}, txt * 1.4f, with_alpha(palette::background, inside), Align::Center);
  float note = phase(t, 4.3f, 0.6f, Ease::Smooth);
  char msg[160];
  std::snprintf(msg, sizeof msg, "the router picked experts %d and %d for \"%s\"; the other 14 do no work for it",
                pk.experts.size() > 0 ? pk.experts[0] + 1 : 0, pk.experts.size() > 1 ? pk.experts[1] + 1 : 0,
                pk.token.c_str() + (pk.token.size() > 0 && pk.token[0] == ' ' ? 1 : 0));
  c.text(msg, {P.center().x, P.min.y - 0.3f * h}, txt, with_alpha(palette::text, note), Align::Center);
  c.set_layer(0);
}

}  // namespace onegpu::app
