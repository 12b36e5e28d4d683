#include "app/scene/learning_scene.h"
#include "app/scene/with_commas.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "render/palette.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;

LearningLayout learning_layout(const Rect& chip) {
  LearningLayout L;
  L.box = box_parts(chip);
  L.s = L.box.s;
  const float s = L.s;
  const glm::vec2 c = chip.center();
  L.trays = {{c.x - 0.75f * s, chip.min.y - 0.50f * s}, {c.x + 0.75f * s, chip.min.y - 0.08f * s}};
  L.foot = {{c.x - 0.75f * s, L.trays.min.y - 0.15f * s}, {c.x + 1.55f * s, L.trays.min.y - 0.03f * s}};
  L.chart = {{c.x + 0.62f * s, chip.min.y + 0.02f * s}, {c.x + 1.55f * s, chip.max.y + 0.06f * s}};
  L.frame = {{c.x - 0.8f * s, L.foot.min.y - 0.03f * s}, {c.x + 1.6f * s, chip.max.y + 0.16f * s}};
  return L;
}

Rect LearningLayout::tray(int i, int n) const {
  float h = (trays.size().y - 0.02f * s * (n - 1)) / n;
  float top = trays.max.y - i * (h + 0.02f * s);
  return {{trays.min.x, top - h}, {trays.max.x, top}};
}

void draw_tray(Canvas& c, const Rect& r, const TrayLook& look, float s, float wpp) {
  const float a = look.alpha;
  if (a <= 0.0f) return;
  const float line = std::max(wpp, 0.003f * s);
  float solid = 1.0f - look.outline_only;
  c.box(r, with_alpha(palette::chip_body, a * 0.85f * solid), 0.02f * s, with_alpha(palette::chip_edge, a), line);
  float size = 0.036f * s;
  float x = r.min.x + 0.025f * s, base = r.center().y - 0.012f * s;
  // Boxed tokens first: how the tokenizer really split the text.
  for (int i = 0; i < look.tokens_lit && i < static_cast<int>(look.tokens.size()); ++i) {
    const std::string& tk = look.tokens[i];
    float w = c.text_width(tk, size);
    Rect box{{x - 0.004f * s, r.min.y + 0.014f * s}, {x + w + 0.006f * s, r.max.y - 0.014f * s}};
    c.box(box, with_alpha(palette::forward, a * 0.18f * solid), 0.008f * s, with_alpha(palette::forward, a * 0.8f * solid),
          line);
    c.text(tk, {x, base}, size, with_alpha(palette::text, a * solid));
    x += w + 0.022f * s;  // a clear gap: each token is its own box
  }
  if (look.blank > 0.0f) {
    float w = 0.12f * s;
    c.line({x, base - 0.01f * s}, {x + w, base - 0.01f * s}, line * 1.5f, with_alpha(palette::text_dim, a * look.blank));
    if (look.fill_a > 0.0f)
      c.text(look.fill, {x, base}, size, with_alpha(palette::forward, a * look.fill_a));
    x += (look.fill_a > 0.5f ? c.text_width(look.fill, size) : w) + 0.012f * s;
  }
  if (!look.text.empty()) {
    // Clip to the tray by whole characters (the text is plain story text).
    std::string t = look.text;
    float room = r.max.x - 0.03f * s - x;
    while (!t.empty() && c.text_width(t + "…", size) > room) {
      t.pop_back();
      while (!t.empty() && (static_cast<unsigned char>(t.back()) & 0xC0) == 0x80) t.pop_back();
    }
    if (t.size() < look.text.size()) t += "…";
    c.text(t, {x, base}, size, with_alpha(palette::text_dim, a * solid));
  }
  if (look.tick > 0.0f) {
    glm::vec2 p{r.max.x - 0.03f * s, r.center().y};
    float k = look.tick;
    c.line(p + glm::vec2(-0.012f, 0.0f) * s, p + glm::vec2(-0.004f, -0.01f * k) * s, line * 1.8f,
           with_alpha(palette::backward, a * k));
    c.line(p + glm::vec2(-0.004f, -0.01f * k) * s, p + glm::vec2(0.014f, 0.016f * k) * s, line * 1.8f,
           with_alpha(palette::backward, a * k));
  }
}

void draw_chart(Canvas& c, const Rect& r, const std::string& title, const std::vector<Bar>& bars, float grow,
                float alpha, float error, const std::string& error_text, float s, float wpp) {
  if (alpha <= 0.0f) return;
  const float line = std::max(wpp, 0.003f * s);
  // Title and subtitle stacked by their real sizes; the bars take what is left.
  const float big = c.text_size(0.048f * s), small = c.text_size(0.03f * s);
  const float y1 = r.max.y - 0.04f * s, y2 = y1 - std::max(0.045f * s, 0.3f * big + 1.0f * small);
  c.text(title, {r.min.x, y1}, big, with_alpha(palette::text, alpha));
  c.text("the model's next-token probabilities", {r.min.x, y2}, small, with_alpha(palette::text_dim, alpha));
  if (bars.empty()) return;
  // Labels in <hex> are tokens that hold only part of a character: say so once, under the chart.
  for (const Bar& b : bars)
    if (b.label.find('<') != std::string::npos && b.label.find('>') != std::string::npos) {
      // Told shorter where the whole runs past the picture's edge from the chart's left (the
      // text would be pushed left, over the chip, at 1920x1080 with text 1.6).
      c.text(c.first_fitting({"<E2 80> and the like: a token holding only part of a character, shown as its bytes",
                              "<E2 80> and the like: part of a character, shown as bytes",
                              "<E2 80>: bytes of part of a character"},
                             r.min.x, 0.026f * s),
             {r.min.x, r.min.y - 0.04f * s}, 0.026f * s, with_alpha(palette::text_dim, alpha));
      break;
    }
  const float top = std::min(r.max.y - 0.13f * s, y2 - 0.35f * small - 0.02f * s - 1.2f * c.text_size(0.026f * s));
  const float row = (top - r.min.y) / static_cast<float>(bars.size());
  const float label_w = 0.2f * s, x0 = r.min.x + label_w, full = r.max.x - x0 - 0.14f * s;
  // The "certain" line: probability 1.
  c.line({x0 + full, top + 0.01f * s}, {x0 + full, r.min.y}, line, with_alpha(palette::text_faint, alpha));
  c.text("certain", {x0 + full, top + 0.02f * s}, 0.026f * s, with_alpha(palette::text_faint, alpha), Align::Center);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    float y = top - row * (i + 0.5f);
    glm::vec4 col = b.target ? palette::forward : mix(palette::lit_dim, palette::lit, 0.5f);
    std::string label = b.label;
    for (auto& ch : label) if (ch == '\n') ch = ' ';
    c.text(label.empty() ? "?" : label, {x0 - 0.02f * s, y - 0.011f * s}, 0.032f * s,
           with_alpha(b.target ? palette::forward : palette::text, alpha), Align::Right);
    float w = std::max(static_cast<float>(b.value) * full * grow, 0.004f * s);
    c.box({{x0, y - row * 0.3f}, {x0 + w, y + row * 0.3f}}, with_alpha(col, alpha), 0.006f * s);
    char pct[32];
    if (b.value >= 0.1) std::snprintf(pct, sizeof pct, "%.0f%%", b.value * 100.0);
    else std::snprintf(pct, sizeof pct, "%.1f%%", b.value * 100.0);
    c.text(pct, {x0 + w + 0.015f * s, y - 0.011f * s}, 0.028f * s, with_alpha(palette::text_dim, alpha * grow));
    if (b.target && error > 0.0f) {
      // The error: how far the right answer falls short of certain.
      float from = x0 + w, to = x0 + full;
      float yy = y + row * 0.42f;
      glm::vec4 pink = with_alpha(palette::backward, alpha * error);
      c.line({from, yy}, {to, yy}, line * 1.6f, pink);
      c.line({from, yy}, {from, yy - row * 0.2f}, line * 1.6f, pink);
      c.line({to, yy}, {to, yy - row * 0.2f}, line * 1.6f, pink);
      // A short bracket (a good guess) gets its label beside it rather than over "certain".
      const float lift = std::max(0.012f * s, c.font().descent() * c.text_size(0.028f * s) + 0.004f * s);
      // Centred over the bracket, clear of the bar's own percentage at its start.
      const float clear = from + c.text_width(pct, 0.028f * s) + 0.03f * s;
      const float words = c.text_width(error_text, 0.028f * s);
      if (to - clear > words) {
        c.text(error_text, {(clear + to) * 0.5f, yy + lift}, 0.028f * s, pink, Align::Center);
      } else if (const std::string brief = error_text.substr(0, error_text.find(' ', error_text.find(' ') + 1));
                 to - from > 0.5f * full && c.fits_right(brief, to + 0.02f * s, 0.028f * s)) {
        // A bad guess whose bracket is too short for the words at this text size: beside its
        // end, past "certain", level with it (left of the bracket they ran into the rows above
        // and the names of the tokens); where the whole does not fit there, "error 8.51" alone.
        const float size = c.text_size(0.028f * s);
        c.text(c.fits_right(error_text, to + 0.02f * s, 0.028f * s) ? error_text : brief,
               {to + 0.02f * s, c.baseline_centred(yy, size)}, size, pink);
      } else {  // left of the bracket, and of the word "certain" over its end
        const float certain_left = x0 + full - 0.5f * c.text_width("certain", 0.026f * s);
        c.text(error_text, {std::min(from - 0.01f * s, certain_left - 0.02f * s), yy + lift}, 0.028f * s, pink,
               Align::Right);
      }
    }
  }
}

void draw_readout(Canvas& c, const Rect& foot, int active, float alpha, float s, bool loop) {
  if (alpha <= 0.0f) return;
  const char* names[] = {"forward", "error", "backward", "update"};
  const glm::vec4 cols[] = {palette::forward, palette::backward, palette::backward, palette::weights};
  float x = foot.min.x, y = foot.max.y - 0.045f * s, size = 0.04f * s;
  for (int i = 0; i < 4; ++i) {
    bool on = i == active;
    x += c.text(names[i], {x, y}, size, with_alpha(on ? cols[i] : palette::text_faint, alpha));
    if (i < 3) x += c.text(i == 2 && loop ? "  ↺  " : "  ·  ", {x, y}, size, with_alpha(palette::text_faint, alpha));
  }
}

void draw_step_counter(Canvas& c, const Rect& foot, int step, float alpha, float s) {
  if (alpha <= 0.0f) return;
  const std::string buf = "step " + with_commas(step);
  c.text(buf, {foot.max.x, foot.max.y - 0.05f * s}, 0.05f * s, with_alpha(palette::text, alpha), Align::Right);
}

void draw_step_note(Canvas& c, const Rect& foot, const std::string& note, float alpha, float s) {
  if (alpha <= 0.0f || note.empty()) return;
  // Under the counter by the sizes the label rule will really draw them at (on a small window
  // both grow past their share of s, and a fixed offset let them overlap).
  const float counter_y = foot.max.y - 0.05f * s;
  const float y = counter_y - 0.8f * c.text_size(0.05f * s) - 0.3f * c.text_size(0.028f * s);
  c.text(note, {foot.max.x, y}, 0.028f * s, with_alpha(palette::text_dim, alpha), Align::Right);
}

static float slab_y(const BoxParts& b, int layers, float y) {
  y = std::clamp(y, 0.0f, static_cast<float>(layers));
  int l = std::min(static_cast<int>(y), layers - 1);
  Rect r = b.slab(l, layers);
  Rect next = l + 1 < layers ? b.slab(l + 1, layers) : r;
  float pitch = l + 1 < layers ? next.min.y - r.min.y : r.size().y + 0.024f * b.s;
  return r.min.y - 0.012f * b.s + (y - l) * pitch;
}

void draw_forward_band(Canvas& c, const BoxParts& b, int layers, float y, float alpha, float wpp) {
  if (alpha <= 0.0f) return;
  float wy = slab_y(b, layers, y);
  Rect band{{b.interior.min.x + 0.01f * b.s, wy - 0.02f * b.s}, {b.interior.max.x - 0.01f * b.s, wy + 0.02f * b.s}};
  c.glow(band, with_alpha(palette::forward, alpha * 0.35f), 0.02f * b.s, 0.05f * b.s);
  c.box(band, with_alpha(palette::forward, alpha * 0.9f), 0.02f * b.s);
  (void)wpp;
}

void draw_backward_ring(Canvas& c, const BoxParts& b, int layers, float y, float alpha, float wpp) {
  if (alpha <= 0.0f) return;
  float wy = slab_y(b, layers, y);
  glm::vec2 centre{b.interior.center().x, wy};
  float r = 0.06f * b.s;
  c.ring(centre, r + 0.02f * b.s, 0.05f * b.s, with_alpha(palette::backward, alpha * 0.15f));
  c.ring(centre, r, std::max(2.5f * wpp, 0.012f * b.s), with_alpha(palette::backward, alpha));
}

void draw_grad_ticks(Canvas& c, const BoxParts& b, int layers, const std::vector<float>& size, float alpha, float wpp,
                     int piles) {
  const float s = b.s;
  for (int l = 0; l < layers && l < static_cast<int>(size.size()); ++l) {
    if (size[l] <= 0.0f) continue;
    Rect slab = b.slab(l, layers);
    for (int k = 0; k < piles; ++k) {
      float x = slab.max.x - 0.025f * s - k * 0.018f * s;
      float h = (0.015f + 0.06f * std::clamp(size[l], 0.0f, 1.0f)) * s;
      c.line({x, slab.center().y - h * 0.5f}, {x, slab.center().y + h * 0.5f}, std::max(2.0f * wpp, 0.008f * s),
             with_alpha(palette::backward, alpha));
    }
  }
}

void draw_loupe(Canvas& c, const Rect& r, const std::vector<float>& before, const std::vector<float>& after,
                float progress, float zoom, float alpha, float s, float wpp) {
  if (alpha <= 0.0f || before.empty()) return;
  const float line = std::max(wpp, 0.003f * s);
  c.box(r, with_alpha(palette::background, alpha * 0.92f), 0.03f * s, with_alpha(palette::weights, alpha), line * 1.5f);
  c.text("Layer 2 · 16 of its weights", {r.min.x + 0.025f * s, r.max.y - 0.045f * s}, 0.032f * s,
         with_alpha(palette::text, alpha));
  char note[64];
  std::snprintf(note, sizeof note, "moves drawn %.0f× larger", zoom);
  c.text(note, {r.min.x + 0.025f * s, r.min.y + 0.022f * s}, 0.026f * s, with_alpha(palette::text_dim, alpha));
  float lo = 0, hi = 0;
  for (float v : before) { lo = std::min(lo, v); hi = std::max(hi, v); }
  float span = std::max(hi - lo, 1e-6f) * 1.3f, mid = (hi + lo) * 0.5f;
  const int n = static_cast<int>(before.size());
  Rect plot{{r.min.x + 0.03f * s, r.min.y + 0.06f * s}, {r.max.x - 0.03f * s, r.max.y - 0.07f * s}};
  c.line({plot.min.x, plot.center().y}, {plot.max.x, plot.center().y}, line, with_alpha(palette::text_faint, alpha));
  for (int i = 0; i < n; ++i) {
    float x = plot.min.x + (i + 0.5f) * plot.size().x / n;
    float delta = (i < static_cast<int>(after.size()) ? after[i] - before[i] : 0.0f) * zoom * progress;
    auto to_y = [&](float v) { return plot.center().y + (v - mid) / span * plot.size().y; };
    float y0 = to_y(before[i]), y1 = to_y(before[i] + delta);
    if (progress > 0.0f) {
      c.ring({x, y0}, 0.011f * s, std::max(wpp, 0.003f * s), with_alpha(palette::weights, alpha * 0.45f));
      c.line({x, y0}, {x, y1}, line, with_alpha(palette::weights, alpha * 0.6f));
    }
    c.disc({x, y1}, 0.011f * s, with_alpha(palette::weights, alpha));
  }
}

void draw_time_bar(Canvas& c, const Rect& r, const std::vector<Segment>& segs, double full, float grow, float alpha,
                   const std::string& caption, float s, float wpp) {
  if (alpha <= 0.0f || full <= 0.0) return;
  const float line = std::max(wpp, 0.003f * s);
  c.box(r, with_alpha(palette::waiting_bg, alpha * 0.6f), 0.01f * s, with_alpha(palette::chip_edge, alpha), line);
  double at = 0.0;
  for (const auto& g : segs) {
    float x0 = r.min.x + static_cast<float>(at / full) * r.size().x;
    float x1 = r.min.x + static_cast<float>(std::min(full, at + g.seconds * grow) / full) * r.size().x;
    if (x1 > x0) {
      c.box({{x0, r.min.y + line}, {x1, r.max.y - line}}, with_alpha(g.color, alpha), 0.006f * s,
            with_alpha(palette::background, alpha), line);
      // A segment's name inside it, centred, where it fits the segment both ways at the size
      // drawn (the text rule may draw it taller than a thin bar).
      const float size = c.text_size(0.026f * s);
      if (!g.label.empty() && x1 - x0 > c.text_width(g.label, 0.026f * s) + 0.01f * s && size <= r.size().y)
        c.text(g.label, {(x0 + x1) * 0.5f, c.baseline_centred(r.center().y, size)}, size,
               with_alpha(palette::background, alpha), Align::Center);
    }
    at += g.seconds;
  }
  c.text(caption, {r.min.x, r.min.y - 0.04f * s}, 0.03f * s, with_alpha(palette::text_dim, alpha));
}

}  // namespace onegpu::app
