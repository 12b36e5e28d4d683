#include "render/canvas.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "render/hash.h"
#include "render/text_breaks.h"

namespace onegpu::render {

Canvas::Canvas(const ShapePrograms* shapes, const Shader* text, const SdfFont* font) : font_(font) {
  for (auto& l : layers_) {
    l.shapes = std::make_unique<ShapeBatch>(shapes);
    l.text = std::make_unique<TextBatch>(text, font);
  }
}

static float kind(ShapeKind k) { return static_cast<float>(static_cast<int>(k)); }

void Canvas::box(const Rect& r, glm::vec4 fill, float radius, glm::vec4 stroke, float stroke_w) {
  glm::vec2 c = r.center(), h = r.size() * 0.5f;
  shapes().add({{c, h}, fill, stroke, {radius, stroke_w, kind(ShapeKind::Box), 0}, {}, {}});
}

void Canvas::hatched(const Rect& r, glm::vec4 bg, glm::vec4 lines, float spacing, float line_w,
                     float radius, glm::vec4 stroke, float stroke_w) {
  glm::vec2 c = r.center(), h = r.size() * 0.5f;
  shapes().add({{c, h}, bg, stroke, {radius, stroke_w, kind(ShapeKind::Box), 0},
                {spacing, line_w, 0, 0}, lines});
}

void Canvas::glow(const Rect& r, glm::vec4 color, float radius, float spread) {
  glm::vec2 c = r.center(), h = r.size() * 0.5f;
  shapes().add({{c, h}, color, {}, {radius, 0, kind(ShapeKind::Glow), spread}, {}, {}});
}

void Canvas::ring(glm::vec2 c, float radius, float thickness, glm::vec4 color, float start, float sweep) {
  // The arc's start and end directions ride in the hatch slot (see shape.frag).
  const glm::vec4 ends{std::cos(start), std::sin(start), std::cos(start + sweep), std::sin(start + sweep)};
  shapes().add({{c, radius, radius}, color, {}, {radius - thickness, 0, kind(ShapeKind::Ring), 0},
                {start, sweep, 0, 0}, ends});
}

void Canvas::disc(glm::vec2 c, float radius, glm::vec4 color) { ring(c, radius, radius, color); }

void Canvas::line(glm::vec2 a, glm::vec2 b, float width, glm::vec4 color) {
  shapes().add({{a, b}, color, {}, {0, 0, kind(ShapeKind::Segment), 0}, {width * 0.5f, 0, 0, 0}, {}});
}

namespace {
bool overlaps(const Rect& a, const Rect& b);
bool inside(const Rect& r, const Rect& outer);
Rect cut(const Rect& a, const Rect& b) { return {glm::max(a.min, b.min), glm::min(a.max, b.max)}; }
Rect unite(const Rect& a, const Rect& b) { return {glm::min(a.min, b.min), glm::max(a.max, b.max)}; }
// The most a shape can move a channel of a pixel away from `ground` (0..1): each of its colours'
// alpha times its farthest channel.
float reach(const ShapeInstance& s, glm::vec4 ground) {
  auto one = [&](glm::vec4 c) {
    const glm::vec3 d = glm::abs(glm::vec3(c) - glm::vec3(ground));
    return std::max(c.a, 0.0f) * std::max({d.x, d.y, d.z});
  };
  const bool hatched = static_cast<int>(s.params.z + 0.5f) == 0 && s.extra.x > 0.0f;  // as shape_invisible
  return std::max({one(s.fill), s.params.y > 0.0f ? one(s.stroke) : 0.0f, hatched ? one(s.hatch) : 0.0f});
}
// Makes `s` one that shape_invisible() finds (the hatch slot holds a ring's ends, not a colour).
void hide(ShapeInstance& s) {
  s.fill.a = s.stroke.a = 0.0f;
  if (static_cast<int>(s.params.z + 0.5f) == 0 && s.extra.x > 0.0f) s.hatch.a = 0.0f;
}
}  // namespace

void Canvas::veil(const Rect& r, glm::vec4 ground, float alpha) {
  const float wpp = view_.world_per_px;
  if (alpha <= 0.0f) return;
  if (wpp <= 0.0f) {
    box(r, {ground.r, ground.g, ground.b, alpha});
    return;
  }
  // Left out: dimmed to under half a level (the veil keeps 1 - alpha of what is under it).
  const float faint = 0.5f / 255.0f / std::max(1.0f - alpha, 1e-6f);
  pieces_.clear();
  auto add = [&](Rect b) {
    b.min -= wpp, b.max += wpp;
    if (!overlaps(b, r)) return;
    b = cut(b, r);
    // Shapes come in drawing order, a cell's parts together: fold into the last piece first.
    if (!pieces_.empty() && overlaps(pieces_.back(), b)) pieces_.back() = unite(pieces_.back(), b);
    else pieces_.push_back(b);
  };
  for (int l = 0; l <= layer_; ++l) {
    for (ShapeInstance& s : layers_[l].shapes->items()) {
      if (shape_invisible(s)) continue;
      const Rect b = shape_bounds(s, wpp);
      if (!overlaps(b, r)) continue;
      if (inside(b, r) && reach(s, ground) < faint) {
        hide(s);  // flush leaves it out
        continue;
      }
      add(b);
    }
    if (l == layer_) break;  // this layer's text is drawn after the veil
    for (const GlyphInstance& g : layers_[l].text->items())
      if (g.color.a > 0.0f) add({{g.rect.x, g.rect.y}, {g.rect.x + g.rect.z, g.rect.y + g.rect.w}});
  }
  // Disjoint: a pixel veiled twice would be dimmed twice. Unions stay inside `r`.
  for (bool again = true; again;) {
    again = false;
    for (std::size_t i = 0; i < pieces_.size(); ++i)
      for (std::size_t j = i + 1; j < pieces_.size(); ++j)
        if (overlaps(pieces_[i], pieces_[j])) {
          pieces_[i] = unite(pieces_[i], pieces_[j]);
          pieces_[j] = pieces_.back();
          pieces_.pop_back();
          again = true;
          --j;
        }
  }
  for (const Rect& p : pieces_) box(p, {ground.r, ground.g, ground.b, alpha});
}

// ---- text and the size rule

void Canvas::set_view(const TextView& v) {
  view_ = v;
  min_text_ = v.min_px * v.world_per_px;
}

std::vector<std::string> Canvas::wrap(std::string_view s, float size, float width) const {
  std::vector<std::string> lines;
  std::string line;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = s.find(' ', i);
    if (j == std::string_view::npos) j = s.size();
    // A number and its unit go on one line: the "word" runs on past that space.
    for (std::size_t from = i; j < s.size();) {
      std::size_t k = s.find(' ', j + 1);
      if (k == std::string_view::npos) k = s.size();
      if (!keeps_with_next(s.substr(from, j - from), s.substr(j + 1, k - j - 1))) break;
      from = j + 1;
      j = k;
    }
    std::string_view word = s.substr(i, j - i);
    std::string next = line.empty() ? std::string(word) : line + " " + std::string(word);
    if (!line.empty() && font_->measure(next) * size > width) {
      lines.push_back(line);
      line = std::string(word);
    } else {
      line = std::move(next);
    }
    i = j + 1;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

float Canvas::draw_lines(const std::vector<std::string>& lines, glm::vec2 baseline, float size, glm::vec4 color,
                         Align a, const Rect& area, bool in_view, float moved) {
  TextBatch& batch = *layers_[layer_].text;
  float widest = 0.0f;
  for (std::size_t i = 0; i < lines.size(); ++i)
    widest = std::max(widest, batch.add(lines[i], {baseline.x, baseline.y - line_gap(size) * i}, size, color, a));
  if (view_.log && view_.world_per_px > 0.0f) {
    const float left = baseline.x - (a == Align::Center ? widest * 0.5f : a == Align::Right ? widest : 0.0f);
    const float top = baseline.y + font_->ascent() * size;
    const float bottom = baseline.y - line_gap(size) * (lines.size() - 1) - font_->descent() * size;
    // Scene-viewport pixels, y down, like the PNGs.
    auto px = [&](glm::vec2 p) {
      return glm::vec2{(p.x - view_.visible.min.x), (view_.visible.max.y - p.y)} / view_.world_per_px;
    };
    auto px_rect = [&](const Rect& r) {
      glm::vec2 a0 = px({r.min.x, r.max.y}), a1 = px({r.max.x, r.min.y});
      return Rect{a0, a1};
    };
    std::string all;
    for (const auto& l : lines) all += (all.empty() ? "" : " ") + l;
    view_.log->add({std::move(all), size / view_.world_per_px, view_.min_px, px_rect({{left, bottom}, {left + widest, top}}),
                    px_rect(area), color.a, in_view, static_cast<int>(lines.size()), moved / view_.world_per_px});
  }
  return widest;
}

float Canvas::text(std::string_view s, glm::vec2 baseline, float size, glm::vec4 color, Align a) {
  size = text_size(size);
  const Rect& vis = view_.visible;
  const bool in_view = view_.world_per_px > 0.0f && vis.size().x > 0.0f && vis.contains(baseline);
  if (!in_view) return draw_lines({std::string(s)}, baseline, size, color, a, vis, false);
  // Keep the label whole on screen: shrink a line wider than the view (down to the minimum),
  // wrap what is still too wide, then move the lot in from any edge it crosses.
  const float margin = kTextMargin * view_.world_per_px, room = vis.size().x - 2.0f * margin;
  std::vector<std::string> lines{std::string(s)};
  const float w = font_->measure(s) * size;
  if (w > room) {
    size = std::max(min_text_, size * room / w);
    lines = wrap(s, size, room);
  }
  float widest = 0.0f;
  for (const auto& l : lines) widest = std::max(widest, font_->measure(l) * size);
  const float left = baseline.x - (a == Align::Center ? widest * 0.5f : a == Align::Right ? widest : 0.0f);
  const float top = baseline.y + font_->ascent() * size;
  const float bottom = baseline.y - line_gap(size) * (lines.size() - 1) - font_->descent() * size;
  glm::vec2 d{0.0f};
  if (left < vis.min.x + margin) d.x = vis.min.x + margin - left;
  else if (left + widest > vis.max.x - margin) d.x = vis.max.x - margin - (left + widest);
  if (top > vis.max.y - margin) d.y = vis.max.y - margin - top;
  else if (bottom < vis.min.y + margin) d.y = vis.min.y + margin - bottom;
  return draw_lines(lines, baseline + d, size, color, a, vis, true, std::max(std::abs(d.x), std::abs(d.y)));
}

float Canvas::text_in(std::string_view s, const Rect& area, float size, glm::vec4 color, Align a) {
  const float em_h = font_->ascent() + font_->descent();
  size = text_size(std::min(size, area.size().y / em_h));
  std::vector<std::string> lines{std::string(s)};
  const float w = font_->measure(s) * size;
  if (w > area.size().x) {
    size = std::max(min_text_, size * area.size().x / w);
    lines = wrap(s, size, area.size().x);
  }
  const float height = em_h * size + line_gap(size) * (lines.size() - 1);
  const float x = a == Align::Center ? area.center().x : a == Align::Right ? area.max.x : area.min.x;
  const glm::vec2 baseline{x, area.center().y + height * 0.5f - font_->ascent() * size};
  const Rect& vis = view_.visible;
  const bool in_view = view_.world_per_px > 0.0f && vis.contains(area.center());
  return draw_lines(lines, baseline, size, color, a, area, in_view);
}

float Canvas::paragraph(std::string_view s, glm::vec2 top_left, float width, float size, glm::vec4 color) {
  size = text_size(size);
  const auto lines = wrap(s, size, width);
  const glm::vec2 baseline{top_left.x, top_left.y - font_->ascent() * size};
  const Rect area{{top_left.x, top_left.y - 1e6f}, {top_left.x + width, top_left.y}};  // down as far as it needs
  const bool in_view = view_.world_per_px > 0.0f && view_.visible.contains(top_left);
  draw_lines(lines, baseline, size, color, Align::Left, area, in_view);
  return baseline.y - line_gap(size) * (lines.size() - 1) - font_->descent() * size;
}

float Canvas::paragraph_height(std::string_view s, float width, float size) const {
  size = text_size(size);
  return (font_->ascent() + font_->descent()) * size + line_gap(size) * (wrap(s, size, width).size() - 1);
}

bool Canvas::text_fits(std::string_view s, const Rect& area) const {
  const float size = min_text_, em_h = font_->ascent() + font_->descent();
  if (em_h * size > area.size().y) return false;
  if (font_->measure(s) * size <= area.size().x) return true;
  const auto lines = wrap(s, size, area.size().x);
  for (const auto& l : lines)
    if (font_->measure(l) * size > area.size().x) return false;
  return em_h * size + line_gap(size) * (lines.size() - 1) <= area.size().y;
}

// ---- what the frame leaves out

namespace {
bool overlaps(const Rect& a, const Rect& b) {
  return a.min.x < b.max.x && b.min.x < a.max.x && a.min.y < b.max.y && b.min.y < a.max.y;
}
bool inside(const Rect& r, const Rect& outer) {
  return r.min.x >= outer.min.x && r.max.x <= outer.max.x && r.min.y >= outer.min.y && r.max.y <= outer.max.y;
}
// A box covers enough to be worth testing others against when its opaque inside is this many
// pixels across both ways; the most covers a frame tests (the biggest ones).
constexpr float kCoverPx = 24.0f;
constexpr std::size_t kMaxCovers = 16;
// A shape is cut round a cover when its quad is this many pixels or more and the cut saves a
// quarter of them: smaller ones cost more in instances than they shade.
constexpr float kTrimPx = 64.0f * 64.0f;
float area(const Rect& r) { return std::max(r.size().x, 0.0f) * std::max(r.size().y, 0.0f); }
// The parts of `r` outside `hole` (which lies inside it): the bands above and below, then left
// and right between them. Up to four, disjoint; empty ones are skipped.
int outside(const Rect& r, const Rect& hole, Rect out[4]) {
  int n = 0;
  for (const Rect& p : {Rect{r.min, {r.max.x, hole.min.y}}, Rect{{r.min.x, hole.max.y}, r.max},
                        Rect{{r.min.x, hole.min.y}, {hole.min.x, hole.max.y}},
                        Rect{{hole.max.x, hole.min.y}, {r.max.x, hole.max.y}}})
    if (p.size().x > 0.0f && p.size().y > 0.0f) out[n++] = p;
  return n;
}
}  // namespace

void Canvas::leave_out_unseen(const Camera& cam, DrawStats& stats) {
  const float wpp = cam.world_per_pixel();
  Rect view = cam.visible();
  view.min -= wpp, view.max += wpp;  // a pixel of slack: only what is surely outside goes
  covers_.clear();
  for (int l = 0; l < kLayers; ++l) {
    const auto& items = layers_[l].shapes->items();
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Rect r = opaque_interior(items[i], wpp);
      if (r.size().x >= kCoverPx * wpp && r.size().y >= kCoverPx * wpp && overlaps(r, view))
        covers_.push_back({l, i, r});
    }
  }
  if (covers_.size() > kMaxCovers) {
    auto area = [](const Cover& c) { return c.inside.size().x * c.inside.size().y; };
    std::nth_element(covers_.begin(), covers_.begin() + kMaxCovers, covers_.end(),
                     [&](const Cover& a, const Cover& b) { return area(a) > area(b); });
    covers_.resize(kMaxCovers);
  }
  // Hidden: wholly inside a cover drawn later (a later layer, or later in the same layer).
  auto hidden = [&](const Rect& b, int layer, std::size_t index) {
    for (const Cover& c : covers_)
      if ((c.layer > layer || (c.layer == layer && c.index > index)) && inside(b, c.inside)) return true;
    return false;
  };
  // The later cover that hides the most of `b`, if cutting round it pays (see kTrimPx).
  auto cover_over = [&](const Rect& b, int layer, std::size_t index) -> const Cover* {
    const Cover* best = nullptr;
    float most = 0.0f;
    for (const Cover& c : covers_)
      if ((c.layer > layer || (c.layer == layer && c.index > index)) && overlaps(b, c.inside)) {
        const float a = area({glm::max(b.min, c.inside.min), glm::min(b.max, c.inside.max)});
        if (a > most) most = a, best = &c;
      }
    return best && most >= 0.25f * area(b) ? best : nullptr;
  };
  for (int l = 0; l < kLayers; ++l) {
    auto& shapes = layers_[l].shapes->items();
    kept_.clear();
    std::size_t left_out = 0;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const Rect b = shape_bounds(shapes[i], wpp);
      if (shape_invisible(shapes[i]) || !overlaps(b, view) || hidden(b, l, i)) {
        ++left_out;
        continue;
      }
      const Cover* c = shapes[i].params.z > 1.5f && shapes[i].params.z < 2.5f  // not a segment: its quad turns
                           ? nullptr
                           : area(b) >= kTrimPx * wpp * wpp ? cover_over(b, l, i) : nullptr;
      if (!c) {
        kept_.push_back(shapes[i]);
        continue;
      }
      Rect parts[4];
      const int n = outside(b, {glm::max(b.min, c->inside.min), glm::min(b.max, c->inside.max)}, parts);
      for (int k = 0; k < n; ++k) {  // one after another: disjoint, so in any order the same pixels
        ShapeInstance s = shapes[i];
        s.part = {parts[k].min, parts[k].max};
        kept_.push_back(s);
      }
      left_out += n == 0;
    }
    stats.left_out += left_out;
    shapes.swap(kept_);
    // A layer's text is drawn after its shapes: only covers of later layers hide it.
    auto& glyphs = layers_[l].text->items();
    std::size_t kept = 0;
    for (const GlyphInstance& g : glyphs) {
      const Rect b{{g.rect.x, g.rect.y}, {g.rect.x + g.rect.z, g.rect.y + g.rect.w}};
      if (g.color.a <= 0.0f || !overlaps(b, view) || hidden(b, l, SIZE_MAX)) continue;  // after every shape of its layer
      glyphs[kept++] = g;
    }
    stats.left_out += glyphs.size() - kept;
    glyphs.resize(kept);
  }
}

void Canvas::prepare(const Camera& cam, DrawStats& stats) {
  leave_out_unseen(cam, stats);
  prepared_ = true;
}

void Canvas::flush(const Camera& cam, DrawStats& stats, const std::vector<glm::ivec4>* clips) {
  if (!std::exchange(prepared_, false)) leave_out_unseen(cam, stats);
  for (auto& l : layers_) {
    l.shapes->flush(cam, stats, clips);
    l.text->flush(cam, stats, clips);
  }
  layer_ = 0;
}

void Canvas::clear_items() {
  for (auto& l : layers_) l.shapes->clear(), l.text->clear();
  prepared_ = false;
  layer_ = 0;
}

void Canvas::drawn(const Camera& cam, std::vector<DrawnItem>& out) const {
  // The camera decides where an instance lands and how wide its anti-aliased edge is.
  const float cam_words[5] = {cam.center.x, cam.center.y, cam.height, cam.viewport.x, cam.viewport.y};
  const std::uint64_t seed = hash_bytes(0xbb67ae8584caa73bull, cam_words, sizeof cam_words);
  const float wpp = cam.world_per_pixel();
  auto pixels = [&](const Rect& r) {
    const glm::vec2 a = cam.world_to_pixel(r.min), b = cam.world_to_pixel(r.max);  // y flips
    return glm::ivec4{(int)std::floor(std::min(a.x, b.x)) - 1, (int)std::floor(std::min(a.y, b.y)) - 1,
                      (int)std::ceil(std::max(a.x, b.x)) + 1, (int)std::ceil(std::max(a.y, b.y)) + 1};
  };
  for (int l = 0; l < kLayers; ++l) {
    const std::uint64_t layer_seed = hash_mix(seed, (std::uint64_t)l);
    for (const ShapeInstance& s : layers_[l].shapes->items())
      out.push_back({hash_bytes(layer_seed, &s, sizeof s), pixels(shape_bounds(s, wpp))});
    const std::uint64_t text_seed = hash_mix(layer_seed, 0x7465787400ull);  // a layer's glyphs come after its shapes
    for (const GlyphInstance& g : layers_[l].text->items())
      out.push_back({hash_bytes(text_seed, &g, sizeof g), pixels({{g.rect.x, g.rect.y}, {g.rect.x + g.rect.z, g.rect.y + g.rect.w}})});
  }
}

std::size_t Canvas::shape_count() const {
  std::size_t n = 0;
  for (auto& l : layers_) n += l.shapes->size();
  return n;
}

}  // namespace onegpu::render
