#include "app/scene/full_size_bars.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <vector>

#include "render/palette.h"
#include "render/text_rule.h"

namespace onegpu::app {

using namespace render;
using trainer::MemCategory;

std::string gigabytes(double bytes) {
  char buf[32];
  const double gb = bytes / 1e9;
  if (gb >= 1000) std::snprintf(buf, sizeof buf, "%.1f TB", gb / 1000);
  else if (gb >= 1) std::snprintf(buf, sizeof buf, "%.1f GB", gb);
  else std::snprintf(buf, sizeof buf, "%.0f MB", bytes / 1e6);
  return buf;
}

namespace {

// Fractions of the area's height, from its top: where each block of the panel sits when its
// words are drawn at the sizes asked (lower when they are drawn bigger: Flow below).
constexpr float kTitle = 0.065f, kLine1 = 0.115f, kLine2 = 0.155f, kGpuLabels = 0.215f, kBars0 = 0.235f, kRowH = 0.065f;
constexpr float kLegend = kBars0 + FullSizeBars::kRows * kRowH + 0.04f;
constexpr float kFit = kLegend + 0.07f, kStep = kFit + 0.075f, kTraffic = kStep + 0.135f, kLineGap = 0.04f;
// Fractions of its width: the rows' names, the bars, the totals (the bars start further right
// and end sooner when the names and totals are drawn bigger); the words' margins.
constexpr float kBarX0 = 0.33f, kBarX1 = 0.75f, kLeft = 0.03f, kRight = 0.02f;

float row_y(const Rect& a, float frac) { return a.max.y - frac * a.size().y; }

glm::vec4 colour(MemCategory c) {
  switch (c) {
    case MemCategory::Weights: return palette::weights;
    case MemCategory::Gradients: return palette::backward;
    case MemCategory::Optimizer: return palette::optimizer;
    case MemCategory::Activations: return palette::forward;
    case MemCategory::Communication: return palette::memory;
  }
  return palette::text_dim;
}

const char* category_word(MemCategory c) {
  switch (c) {
    case MemCategory::Weights: return "weights";
    case MemCategory::Gradients: return "gradients";
    case MemCategory::Optimizer: return "optimizer state";
    case MemCategory::Activations: return "activations";
    case MemCategory::Communication: return "buffers";
  }
  return "";
}


// The step's time, the traffic, and where to find them when the panel has no room: each line
// as drawn when there is room, hand-broken.
struct StepText {
  std::vector<std::string> step, step_short, traffic;
  std::string pointer, pointer_step;  // where the rest is: the Lab's full-size panel
};

StepText step_text(const trainer::ShareFigures& f) {
  StepText t;
  char text[256];
  std::snprintf(text, sizeof text, "One step, modelled: 6 × %.1f B active weights × %.2f M tokens,", f.active_params / 1e9,
                f.tokens_per_step / 1e6);
  t.step.push_back(text);
  std::snprintf(text, sizeof text, "plus attention: %.2f × 10^18 FLOPs over %d GPUs", f.flops_per_step / 1e18, f.gpus);
  t.step.push_back(text);
  std::snprintf(text, sizeof text, "at %.0f%% of %.0f TFLOP/s each: %.1f s.", 100.0 * f.utilisation, f.peak_flops / 1e12,
                f.step_seconds);
  t.step.push_back(text);
  std::snprintf(text, sizeof text, "One step, modelled: %.2f × 10^18 FLOPs over %d GPUs at %.0f%% of %.0f TFLOP/s each: %.1f s.",
                f.flops_per_step / 1e18, f.gpus, 100.0 * f.utilisation, f.peak_flops / 1e12, f.step_seconds);
  t.step_short.push_back(text);
  // Traffic: all-reduce (no sharding) against reduce-scatter + all-gather (ZeRO-1).
  double ar = 0, ar_s = 0, z1 = 0, z1_s = 0, tok = 0, tok_s = 0, p2p = 0;
  for (const trainer::CollectiveFigure& col : f.collectives) {
    if (col.what.find("all-reduce") != std::string::npos) ar += (double)col.sent_bytes, ar_s += col.seconds;
    else if (col.what.find("ZeRO-1") != std::string::npos) z1 += (double)col.sent_bytes, z1_s += col.seconds;
    else if (col.what.find("all-to-all") != std::string::npos) tok += (double)col.sent_bytes, tok_s += col.seconds;
    else p2p += (double)col.sent_bytes;
  }
  std::snprintf(text, sizeof text, "Sent by this GPU in a step, modelled: gradients %s (%.1f s on its links),",
                gigabytes(ar).c_str(), ar_s);
  t.traffic.push_back(text);
  std::snprintf(text, sizeof text, "or with ZeRO-1 %s (%.1f s); tokens to experts and back %s (%.2f s);",
                gigabytes(z1).c_str(), z1_s, gigabytes(tok).c_str(), tok_s);
  t.traffic.push_back(text);
  std::snprintf(text, sizeof text, "hidden states and their gradients %s. (GB: 10^9 bytes.)", gigabytes(p2p).c_str());
  t.traffic.push_back(text);
  t.pointer = "GB: 10^9 bytes. The step's traffic, and each figure by category: the Lab (L), Full size.";
  t.pointer_step = "GB: 10^9 bytes. The step's time and traffic, and each figure by category: the Lab (L), Full size.";
  return t;
}

// One pass over the panel for one Detail: it lays the panel out and, given a canvas to draw on,
// draws it. Every part's first baseline is its fixed share of the height, or lower when the
// line above it is drawn bigger than that leaves room for; lines wrap to the panel's width.
class Flow {
 public:
  Flow(const Canvas& measure, Canvas* out, const Rect& a, float alpha)
      : c_(measure), out_(out), a_(a), W_(a.size().x), H_(a.size().y), alpha_(alpha) {
    x0_ = a.min.x + kLeft * W_;
    right_ = a.max.x - kRight * W_;
    last_ = a.max.y - 0.02f * H_;
  }
  glm::vec4 A(glm::vec4 col) const { return with_alpha(col, col.a * alpha_); }
  float ts(float size) const { return c_.text_size(size); }
  float width() const { return right_ - x0_; }
  float x0() const { return x0_; }
  float right() const { return right_; }
  // Where a part whose first line (drawn at `size`) sits at `frac` of the height goes.
  float next(float frac, float size) const {
    return std::min(row_y(a_, frac), last_ - line_pitch(ts(last_size_), ts(size)));
  }
  // The part just placed ended with a line at `baseline`, drawn at `size`.
  void ended(float baseline, float size) {
    last_ = baseline;
    last_size_ = size;
  }
  float last() const { return last_; }
  // A paragraph from the left edge, wrapped to the panel's width.
  void paragraph(std::string_view s, float frac, float size, glm::vec4 col) {
    const float base = next(frac, size), top = base + c_.font().ascent() * ts(size);
    const float bottom = out_ ? out_->paragraph(s, {x0_, top}, width(), size, A(col))
                              : top - c_.paragraph_height(s, width(), size);
    ended(bottom + c_.font().descent() * ts(size), size);
  }
  // Lines broken by hand, `gap` of the height apart: each on its own when all fit the width,
  // else one paragraph (fewer lines than wrapping each).
  void lines(const std::vector<std::string>& ls, float frac, float gap, float size, glm::vec4 col) {
    bool each = true;
    for (const std::string& l : ls) each = each && c_.text_width(l, size) <= width();
    if (!each) {
      std::string all;
      for (const std::string& l : ls) all += (all.empty() ? "" : " ") + l;
      return paragraph(all, frac, size, col);
    }
    for (std::size_t i = 0; i < ls.size(); ++i) {
      const float base = next(frac + gap * static_cast<float>(i), size);
      if (out_) out_->text(ls[i], {x0_, base}, size, A(col), Align::Left);
      ended(base, size);
    }
  }
  // The y under the last line.
  float bottom() const { return last_ - c_.font().descent() * ts(last_size_); }

 private:
  const Canvas& c_;
  Canvas* out_;
  Rect a_;
  float W_, H_, alpha_;
  float x0_, right_, last_, last_size_ = 0.0f;
};

FullSizeBars::Layout done(FullSizeBars::Layout l, const Flow& p) {
  l.bottom = p.bottom();
  l.fits = l.bottom >= l.area.min.y + 0.01f * l.area.size().y;
  return l;
}

// The panel for one Detail (drawn when `out` is given); returns where everything went.
FullSizeBars::Layout flow(const Canvas& c, Canvas* out, const Rect& area, const Rect& room,
                          const trainer::ShareFigures& f, const std::string& share, FullSizeBars::Detail detail,
                          float alpha, float wpp) {
  // The parts keep the area's proportions, from the top of the room.
  const Rect a{{area.min.x, room.max.y - area.size().y}, {area.max.x, room.max.y}};
  Flow p(c, out, a, alpha);
  const float W = a.size().x, H = a.size().y;
  const float big = 0.038f * H, body = 0.024f * H, small = 0.021f * H, line = std::max(wpp, 0.0015f * H);
  const trainer::GpuModel gpus[2] = {trainer::h100(), trainer::h200()};
  const float asc = c.font().ascent();
  char text[256];
  FullSizeBars::Layout l;
  l.area = room;
  l.detail = detail;

  if (out) out->box(room, p.A(with_alpha(palette::background, 0.92f)), 0.02f * H, p.A(palette::chip_edge), line);
  p.paragraph("At full size · modelled", kTitle, big, palette::forward);
  std::snprintf(text, sizeof text, "%.2f trillion weights × 18 bytes = %s, over %d GPUs", f.model_params / 1e12,
                gigabytes((double)f.model_bytes).c_str(), f.gpus);
  p.paragraph(text, kLine1, body, palette::text);
  p.paragraph(share, kLine2, body, palette::text_dim);

  // The rows: each way's total and which GPUs it fits, right of its bar.
  double max_bytes = 0;
  for (int i = 0; i < FullSizeBars::kRows; ++i) max_bytes = std::max(max_bytes, (double)FullSizeBars::row(f, i).total());
  l.max_bytes = max_bytes;
  std::string totals[FullSizeBars::kRows];
  bool fits_none[FullSizeBars::kRows];
  float name_w = 0;
  for (int i = 0; i < FullSizeBars::kRows; ++i) {
    const trainer::RankFootprint& r = FullSizeBars::row(f, i);
    std::string fits;
    for (const trainer::GpuModel& g : gpus)
      if (r.total() <= g.memory_bytes) fits += (fits.empty() ? "fits " : ", ") + g.name;
    std::snprintf(text, sizeof text, "%s · %s", gigabytes((double)r.total()).c_str(),
                  fits.empty() ? "does not fit" : fits.c_str());
    totals[i] = text;
    fits_none[i] = fits.empty();
    name_w = std::max(name_w, c.text_width(FullSizeBars::row_name(i), body));
  }
  // The scale: from right of the widest name to where the longest total still ends inside.
  const float pad = 0.004f * W, after = 0.01f * W;
  l.zero_x = std::max(a.min.x + kBarX0 * W, p.x0() + name_w + 0.025f * W);
  l.max_x = a.min.x + kBarX1 * W;
  for (int i = 0; i < FullSizeBars::kRows; ++i) {
    const float share_of_max = static_cast<float>((double)FullSizeBars::row(f, i).total() / max_bytes);
    const float room = p.right() - pad - after - c.text_width(totals[i], small) - l.zero_x;
    if (share_of_max > 0) l.max_x = std::min(l.max_x, l.zero_x + room / share_of_max);
  }
  // The GPUs' names over the scale, the larger's right of its line: it stays inside too.
  std::string gpu_names[2];
  for (int g = 0; g < 2; ++g) {
    std::snprintf(text, sizeof text, "%s %.0f GB", gpus[g].name.c_str(), gpus[g].memory_bytes / 1e9);
    gpu_names[g] = text;
  }
  {
    const float share_of_max = static_cast<float>(gpus[1].memory_bytes / max_bytes);
    const float room = p.right() - 0.008f * W - c.text_width(gpu_names[1], small) - l.zero_x;
    if (share_of_max > 0) l.max_x = std::min(l.max_x, l.zero_x + room / share_of_max);
  }
  // Too short a scale beside the names (a narrow panel for its words): each row's name and
  // total on a line of their own over a bar of the panel's whole width, the GPUs' names kept
  // inside by where the scale starts and ends.
  l.stacked = l.max_x - l.zero_x < 0.25f * p.width();
  if (l.stacked) {
    const float f100 = static_cast<float>(gpus[0].memory_bytes / max_bytes);
    const float f200 = static_cast<float>(gpus[1].memory_bytes / max_bytes);
    const float w100 = 0.008f * W + c.text_width(gpu_names[0], small), w200 = 0.008f * W + c.text_width(gpu_names[1], small);
    l.zero_x = std::max(p.x0(), (p.x0() + w100 - f100 * p.right()) / (1.0f - f100));
    l.max_x = std::min(p.right(), l.zero_x + (p.right() - w200 - l.zero_x) / f200);
  }
  const float gpu_base = p.next(kGpuLabels, small);
  p.ended(gpu_base, small);
  if (!l.stacked) {
    // Rows a line of words apart at least; the names' baselines a sixth of the way up their bars.
    const float pitch = std::max(kRowH * H, 1.3f * std::max(p.ts(body), p.ts(small)));
    const float bar_h = 0.62f * pitch;
    const float first_top = std::min(row_y(a, kBars0), gpu_base - line_pitch(p.ts(small), p.ts(body)) + 0.85f * bar_h);
    for (int i = 0; i < FullSizeBars::kRows; ++i) {
      const float top = first_top - static_cast<float>(i) * pitch;
      l.bars[i] = {{l.zero_x, top - bar_h}, {l.max_x, top}};
    }
  }
  // The GPUs' memory: a line each, drawn before the bars (whose totals' dark patches cover it)
  // beside them, after them stacked, where it crosses each bar alone (the rows' words lie
  // between). The smaller GPU's label to the left of its line, the larger's to the right: they
  // sit close.
  auto gpu_lines = [&] {
    for (int g = 0; g < 2 && out; ++g) {
      const float x = FullSizeBars::x_of(l, (double)gpus[g].memory_bytes);
      if (l.stacked)
        for (const Rect& b : l.bars)
          out->line({x, b.min.y - 0.006f * H}, {x, b.max.y + 0.006f * H}, 2.0f * line, p.A(palette::focus));
      else
        out->line({x, l.bars[FullSizeBars::kRows - 1].min.y - 0.01f * H}, {x, l.bars[0].max.y + 0.012f * H}, 2.0f * line,
                  p.A(palette::focus));
      out->text(gpu_names[g], {x + (g == 0 ? -0.008f : 0.008f) * W, gpu_base}, small, p.A(palette::focus),
                g == 0 ? Align::Right : Align::Left);
    }
  };
  if (!l.stacked) gpu_lines();
  // Stacked, and a name with its total too wide for the panel (large text in a narrow panel):
  // the total gets a line of its own, right-aligned, between the name and the bar.
  float widest_total = 0;
  for (const std::string& t : totals) widest_total = std::max(widest_total, c.text_width(t, small));
  const bool total_below = l.stacked && p.x0() + name_w + 0.03f * W + widest_total > p.right();
  for (int i = 0; i < FullSizeBars::kRows; ++i) {
    const trainer::RankFootprint& r = FullSizeBars::row(f, i);
    float base = 0, total_base = 0;
    if (l.stacked) {
      base = p.last() - line_pitch(p.ts(i == 0 ? small : 0.0f), p.ts(body));
      total_base = total_below ? base - line_pitch(p.ts(body), p.ts(small)) : base;
      const float top = total_base - c.font().descent() * p.ts(total_below ? small : body) - 0.1f * p.ts(small);
      l.bars[i] = {{l.zero_x, top - 0.5f * p.ts(small)}, {l.max_x, top}};
      p.ended(l.bars[i].min.y - 0.15f * p.ts(small), 0.0f);
    } else {
      base = l.bars[i].min.y + 0.15f * l.bars[i].size().y;
      p.ended(base, body);
    }
    if (!out) continue;
    const Rect b = l.bars[i];
    out->text(FullSizeBars::row_name(i), {p.x0(), base}, body, p.A(palette::text), Align::Left);
    double at = 0;
    for (int k = 0; k < trainer::kMemCategoryCount; ++k) {
      const auto cat = static_cast<MemCategory>(k);
      const float xa = FullSizeBars::x_of(l, at), xb = FullSizeBars::x_of(l, at + (double)r[cat]);
      if (xb > xa) out->box({{xa, b.min.y}, {xb, b.max.y}}, p.A(colour(cat)));
      at += (double)r[cat];
    }
    const glm::vec4 total_col = p.A(fits_none[i] ? palette::backward : palette::text);
    if (l.stacked) {
      if (total_below) out->text(totals[i], {p.right(), total_base}, small, total_col, Align::Right);
      else out->text(totals[i], {p.x0() + name_w + 0.03f * W, base}, small, total_col, Align::Left);
      continue;
    }
    // On a dark patch: the GPUs' lines run behind it.
    const glm::vec2 pos{FullSizeBars::x_of(l, (double)r.total()) + after, base};
    out->box({{pos.x - pad, b.min.y}, {pos.x + c.text_width(totals[i], small) + pad, b.max.y}}, p.A(palette::background),
             0.004f * H);
    out->text(totals[i], pos, small, total_col, Align::Left);
  }
  if (l.stacked) gpu_lines();
  // Legend, wrapped when the words are too wide for one line; under the GPUs' lines.
  const float sq = 0.02f * H;
  float ly = std::min(p.next(kLegend, small), l.bars[FullSizeBars::kRows - 1].min.y - 0.01f * H -
                                                  std::max(sq, asc * p.ts(small)) - 0.2f * p.ts(small));
  float lx = p.x0();
  for (int k = 0; k < trainer::kMemCategoryCount; ++k) {
    const auto cat = static_cast<MemCategory>(k);
    const float w = sq + 0.01f * W + c.text_width(category_word(cat), small);
    if (lx > p.x0() && lx + w > p.right()) {
      lx = p.x0();
      ly -= line_pitch(p.ts(small), p.ts(small));
    }
    if (out) {
      out->box({{lx, ly}, {lx + sq, ly + sq}}, p.A(colour(cat)), 0.002f * H);
      out->text(category_word(cat), {lx + sq + 0.01f * W, ly}, small, p.A(palette::text_dim), Align::Left);
    }
    lx += w + 0.03f * W;
  }
  p.ended(ly, small);

  // What it takes to fit.
  std::string fit_line = "To fit: ";
  for (int g = 0; g < 2; ++g) {
    const std::string w = trainer::what_fits(f, gpus[g]);
    fit_line += gpus[g].name + " " + (w.empty() ? "none of these" : w) + (g == 0 ? "; " : ".");
  }
  p.paragraph(fit_line, kFit, body, palette::text);

  // One step's time and traffic, as much as there is room for.
  const StepText st = step_text(f);
  using Detail = FullSizeBars::Detail;
  if (detail == Detail::Bare) return done(l, p);  // too little room even for the pointer (large text, small window)
  if (detail == Detail::Pointer) return p.paragraph(st.pointer_step, kStep, small, palette::text_dim), done(l, p);
  p.lines(detail == Detail::Full ? st.step : st.step_short, kStep, kLineGap, small, palette::text_dim);
  if (detail == Detail::StepOnly) p.paragraph(st.pointer, kTraffic, small, palette::text_dim);
  else p.lines(st.traffic, kTraffic, kLineGap, small, palette::text_dim);
  return done(l, p);
}

}  // namespace

FullSizeBars::Layout FullSizeBars::layout(const Canvas& c, const Rect& area, const Rect& room,
                                          const trainer::ShareFigures& f, const std::string& share) {
  Layout l;
  for (Detail d : {Detail::Full, Detail::Short, Detail::StepOnly, Detail::Pointer, Detail::Bare}) {
    l = flow(c, nullptr, area, room, f, share, d, 1.0f, 0.0f);
    if (l.fits) return l;
  }
  return l;  // the least: drawn even so (a picture too small for the panel's words)
}

float FullSizeBars::x_of(const Layout& l, double bytes) {
  return l.zero_x + static_cast<float>(bytes / l.max_bytes) * (l.max_x - l.zero_x);
}

const trainer::RankFootprint& FullSizeBars::row(const trainer::ShareFigures& f, int i) {
  return i < 4 ? f.zero[i] : f.zero_recompute[3];
}

std::string FullSizeBars::row_name(int i) {
  static const char* names[kRows] = {"no sharding", "ZeRO-1", "ZeRO-2", "ZeRO-3", "ZeRO-3 + recompute"};
  return names[i];
}

void FullSizeBars::draw(Canvas& c, const Rect& area, const Rect& room, const trainer::ShareFigures& f,
                        const std::string& share, float alpha, float wpp) {
  if (alpha <= 0.0f) return;
  flow(c, &c, area, room, f, share, layout(c, area, room, f, share).detail, alpha, wpp);
}

}  // namespace onegpu::app
