#include "app/scene/full_size_bars.h"

#include <algorithm>
#include <cstdio>

#include "render/palette.h"

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

// Fractions of the area's height, from its top: where each block of the panel sits.
constexpr float kTitle = 0.065f, kLine1 = 0.115f, kLine2 = 0.155f, kGpuLabels = 0.215f, kBars0 = 0.235f, kRowH = 0.065f;
constexpr float kLegend = kBars0 + FullSizeBars::kRows * kRowH + 0.04f;
constexpr float kFit = kLegend + 0.07f, kStep = kFit + 0.075f, kTraffic = kStep + 0.135f, kLineGap = 0.04f;
// Fractions of its width: the rows' names, the bars, the totals.
constexpr float kBarX0 = 0.33f, kBarX1 = 0.75f;

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

}  // namespace

Rect FullSizeBars::bar(const Rect& a, int row) {
  const float top = row_y(a, kBars0 + row * kRowH), h = 0.62f * kRowH * a.size().y;
  return {{a.min.x + kBarX0 * a.size().x, top - h}, {a.min.x + kBarX1 * a.size().x, top}};
}

float FullSizeBars::x_of(const Rect& a, double bytes, double max_bytes) {
  const Rect b = bar(a, 0);
  return b.min.x + static_cast<float>(bytes / max_bytes) * b.size().x;
}

const trainer::RankFootprint& FullSizeBars::row(const trainer::ShareFigures& f, int i) {
  return i < 4 ? f.zero[i] : f.zero_recompute[3];
}

std::string FullSizeBars::row_name(int i) {
  static const char* names[kRows] = {"no sharding", "ZeRO-1", "ZeRO-2", "ZeRO-3", "ZeRO-3 + recompute"};
  return names[i];
}

void FullSizeBars::draw(Canvas& c, const Rect& a, const trainer::ShareFigures& f, const std::string& share, float alpha,
                        float wpp) {
  if (alpha <= 0.0f) return;
  const float W = a.size().x, H = a.size().y;
  const float big = 0.038f * H, body = 0.024f * H, small = 0.021f * H, line = std::max(wpp, 0.0015f * H);
  auto A = [&](glm::vec4 col) { return with_alpha(col, col.a * alpha); };
  const trainer::GpuModel gpus[2] = {trainer::h100(), trainer::h200()};
  char text[256];

  c.box(a, A(with_alpha(palette::background, 0.92f)), 0.02f * H, A(palette::chip_edge), line);
  const float x0 = a.min.x + 0.03f * W;
  c.text("At full size · modelled", {x0, row_y(a, kTitle)}, big, A(palette::forward), Align::Left);
  std::snprintf(text, sizeof text, "%.2f trillion weights × 18 bytes = %s, over %d GPUs", f.model_params / 1e12,
                gigabytes((double)f.model_bytes).c_str(), f.gpus);
  c.text(text, {x0, row_y(a, kLine1)}, body, A(palette::text), Align::Left);
  c.text(share, {x0, row_y(a, kLine2)}, body, A(palette::text_dim), Align::Left);

  // The scale: the largest row, and a line for each GPU's memory.
  double max_bytes = 0;
  for (int i = 0; i < kRows; ++i) max_bytes = std::max(max_bytes, (double)row(f, i).total());
  const Rect first = bar(a, 0), lastb = bar(a, kRows - 1);
  for (int g = 0; g < 2; ++g) {
    // The smaller GPU's label to the left of its line, the larger's to the right: they sit close.
    const float x = x_of(a, (double)gpus[g].memory_bytes, max_bytes);
    c.line({x, lastb.min.y - 0.01f * H}, {x, first.max.y + 0.012f * H}, 2.0f * line, A(palette::focus));
    std::snprintf(text, sizeof text, "%s %.0f GB", gpus[g].name.c_str(), gpus[g].memory_bytes / 1e9);
    c.text(text, {x + (g == 0 ? -0.008f : 0.008f) * W, row_y(a, kGpuLabels)}, small, A(palette::focus),
           g == 0 ? Align::Right : Align::Left);
  }
  for (int i = 0; i < kRows; ++i) {
    const trainer::RankFootprint& r = row(f, i);
    const Rect b = bar(a, i);
    c.text(row_name(i), {x0, b.min.y + 0.15f * b.size().y}, body, A(palette::text), Align::Left);
    double at = 0;
    for (int k = 0; k < trainer::kMemCategoryCount; ++k) {
      const auto cat = static_cast<MemCategory>(k);
      const float xa = x_of(a, at, max_bytes), xb = x_of(a, at + (double)r[cat], max_bytes);
      if (xb > xa) c.box({{xa, b.min.y}, {xb, b.max.y}}, A(colour(cat)));
      at += (double)r[cat];
    }
    std::string fits;
    for (const trainer::GpuModel& g : gpus)
      if (r.total() <= g.memory_bytes) fits += (fits.empty() ? "fits " : ", ") + g.name;
    std::snprintf(text, sizeof text, "%s · %s", gigabytes((double)r.total()).c_str(),
                  fits.empty() ? "does not fit" : fits.c_str());
    // On a dark patch: the GPUs' lines run behind it.
    const glm::vec2 pos{x_of(a, (double)r.total(), max_bytes) + 0.01f * W, b.min.y + 0.15f * b.size().y};
    c.box({{pos.x - 0.004f * W, b.min.y}, {pos.x + c.text_width(text, small) + 0.004f * W, b.max.y}},
          A(palette::background), 0.004f * H);
    c.text(text, pos, small, A(fits.empty() ? palette::backward : palette::text), Align::Left);
  }
  // Legend.
  float lx = x0;
  const float ly = row_y(a, kLegend), sq = 0.02f * H;
  for (int k = 0; k < trainer::kMemCategoryCount; ++k) {
    const auto cat = static_cast<MemCategory>(k);
    c.box({{lx, ly}, {lx + sq, ly + sq}}, A(colour(cat)), 0.002f * H);
    lx += sq + 0.01f * W;
    lx += c.text(category_word(cat), {lx, ly}, small, A(palette::text_dim), Align::Left) + 0.03f * W;
  }

  // What it takes to fit.
  std::string fit_line = "To fit: ";
  for (int g = 0; g < 2; ++g) {
    const std::string w = trainer::what_fits(f, gpus[g]);
    fit_line += gpus[g].name + " " + (w.empty() ? "none of these" : w) + (g == 0 ? "; " : ".");
  }
  c.text(fit_line, {x0, row_y(a, kFit)}, body, A(palette::text), Align::Left);

  // One step's time and traffic.
  std::snprintf(text, sizeof text, "One step, modelled: 6 × %.1f B active weights × %.2f M tokens,",
                f.active_params / 1e9, f.tokens_per_step / 1e6);
  c.text(text, {x0, row_y(a, kStep)}, small, A(palette::text_dim), Align::Left);
  std::snprintf(text, sizeof text, "plus attention: %.2f × 10^18 FLOPs over %d GPUs", f.flops_per_step / 1e18, f.gpus);
  c.text(text, {x0, row_y(a, kStep + kLineGap)}, small, A(palette::text_dim), Align::Left);
  std::snprintf(text, sizeof text, "at %.0f%% of %.0f TFLOP/s each: %.1f s.", 100.0 * f.utilisation,
                f.peak_flops / 1e12, f.step_seconds);
  c.text(text, {x0, row_y(a, kStep + 2 * kLineGap)}, small, A(palette::text_dim), Align::Left);
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
  c.text(text, {x0, row_y(a, kTraffic)}, small, A(palette::text_dim), Align::Left);
  std::snprintf(text, sizeof text, "or with ZeRO-1 %s (%.1f s); tokens to experts and back %s (%.2f s);",
                gigabytes(z1).c_str(), z1_s, gigabytes(tok).c_str(), tok_s);
  c.text(text, {x0, row_y(a, kTraffic + kLineGap)}, small, A(palette::text_dim), Align::Left);
  std::snprintf(text, sizeof text, "hidden states and their gradients %s. (GB: 10^9 bytes.)", gigabytes(p2p).c_str());
  c.text(text, {x0, row_y(a, kTraffic + 2 * kLineGap)}, small, A(palette::text_dim), Align::Left);
}

}  // namespace onegpu::app
