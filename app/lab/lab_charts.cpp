// The Lab's charts tab: the run over its steps (loss on training and held-out text, tokens a
// second, the step's time on the virtual and the wall clock, the gradient norm, the learning
// rate), and the selected GPU's memory by category across the shown step, with the replay
// cursor on it. Text comes from the panel fonts, so Ctrl+= makes it readable on a projector.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>

#include <imgui.h>

#include "app/lab/column_line.h"
#include "app/lab/lab_flow.h"
#include "app/lab/lab.h"
#include "app/ui/imgui_colour.h"
#include "render/palette.h"

namespace onegpu::app {

namespace {

struct Series {
  const char* name;
  glm::vec4 colour;
  std::function<double(const StepLine&)> value;  // NaN: no point for that step
};

std::string num(double v) {
  char b[32];
  const double a = std::fabs(v);
  if (a >= 1e6) std::snprintf(b, sizeof b, "%.2fM", v / 1e6);
  else if (a >= 1e3) std::snprintf(b, sizeof b, "%.1fk", v / 1e3);
  else if (a >= 1 || a == 0) std::snprintf(b, sizeof b, "%.3g", v);
  else if (a >= 0.01) std::snprintf(b, sizeof b, "%.3f", v);  // a norm or a bubble: 0.931, not 9.31e-01
  else std::snprintf(b, sizeof b, "%.2e", v);
  return b;
}

// One chart over the steps in history: a frame, its title and range, one polyline per series
// (a few points a pixel column at most: ColumnLine).
using WordBoxes = std::vector<std::pair<render::Rect, render::Rect>>;

int step_chart(ImDrawList* dl, ImVec2 a, ImVec2 b, const char* title, const std::deque<StepLine>& h,
               const std::vector<Series>& series, const LabFonts& fonts, float s, WordBoxes& words) {
  const float fs = fonts.small->FontSize;
  dl->AddRect(a, b, col(render::palette::text_faint, 0.4f), 3.0f * s);
  dl->PushClipRect(a, b, true);  // a word too long for the frame is cut there, not drawn over the next chart
  struct Pop { ImDrawList* d; ~Pop() { d->PopClipRect(); } } pop{dl};
  double lo = DBL_MAX, hi = -DBL_MAX;
  for (const StepLine& l : h)
    for (const Series& se : series) {
      const double v = se.value(l);
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
  // Title, then each series' name in its colour and its last value, on as many lines as the
  // frame's width needs (at a projector's text size a chart holds a word or two a line).
  const float left = a.x + 6 * s, right = b.x - 6 * s;
  float x = left, y = a.y + 2 * s;
  auto legend = [&](const std::string& t, glm::vec4 c) {
    const float w = fonts.small->CalcTextSizeA(fs, FLT_MAX, 0, t.c_str()).x;
    if (x > left && x + w > right) x = left, y += fs * 1.1f;
    dl->AddText(fonts.small, fs, {x, y}, col(c), t.c_str());
    words.push_back({{{x, y}, {x + w, y + fs}}, {{a.x, a.y}, {b.x, b.y}}});
    x += w + 8 * s;
  };
  legend(title, render::palette::text_dim);
  for (const Series& se : series) {
    double last = NAN;
    for (auto it = h.rbegin(); it != h.rend() && !std::isfinite(last); ++it) last = se.value(*it);
    std::string t = se.name;  // appended, not " " + num(): GCC 12 warns falsely (-Wrestrict) on that
    if (std::isfinite(last)) t.append(" ").append(num(last));
    if (!t.empty()) legend(t, se.colour);
  }
  const ImVec2 pa{left, y + fs * 1.3f};
  ImVec2 pb{right, b.y - 4 * s};
  if (lo > hi || h.empty()) {
    dl->AddText(fonts.small, fs, {pa.x, pa.y}, col(render::palette::text_faint), "no steps yet");
    return 0;
  }
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) lo -= 0.5, hi += 0.5;
  const std::string top = num(hi), bottom = num(lo);
  // The scale's two values in a margin of their own on the right: inside the plot the line ran
  // through them (a rising tokens/s ends on its own top value).
  const float top_w = fonts.small->CalcTextSizeA(fs * 0.85f, FLT_MAX, 0, top.c_str()).x,
              bottom_w = fonts.small->CalcTextSizeA(fs * 0.85f, FLT_MAX, 0, bottom.c_str()).x;
  dl->AddText(fonts.small, fs * 0.85f, {pb.x - top_w, pa.y}, col(render::palette::text_faint), top.c_str());
  dl->AddText(fonts.small, fs * 0.85f, {pb.x - bottom_w, pb.y - fs * 0.85f}, col(render::palette::text_faint),
              bottom.c_str());
  pb.x -= std::max(top_w, bottom_w) + 5.0f * s;
  const int first = h.front().step, last = h.back().step;
  const double span = std::max(1, last - first);
  auto X = [&](int step) { return pa.x + (float)((step - first) / span) * (pb.x - pa.x); };
  auto Y = [&](double v) { return pb.y - (float)((v - lo) / (hi - lo)) * (pb.y - pa.y); };
  int points = 0;
  for (const Series& se : series) {
    ColumnLine<ImVec2> line;
    for (const StepLine& l : h) {
      const double v = se.value(l);
      if (std::isfinite(v)) line.add({X(l.step), Y(v)});
    }
    const std::vector<ImVec2>& pts = line.points();
    if (pts.empty()) continue;
    if (pts.size() == 1) dl->AddCircleFilled(pts[0], 2.5f * s, col(se.colour));
    else dl->AddPolyline(pts.data(), (int)pts.size(), col(se.colour), 0, 1.6f * s);
    points += (int)pts.size();
  }
  return points;
}

}  // namespace

void Lab::charts(const RunState& rs, float s, const LabFonts& fonts) {
  const LiveRun* run = rs.run();
  drawn_.chart_points = 0;
  drawn_.memory_bands = 0;
  drawn_.chart_words.clear();
  if (!run) {
    words_dim("Apply a configuration and run it: its steps are charted here.");
    return;
  }
  using namespace render::palette;
  const auto& h = rs.history();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float gap = 8.0f * s, fs0 = fonts.small->FontSize;
  // Wide enough: the steps in a 3 x 2 grid on the left three fifths, memory on the right. At a
  // projector's text size, fewer charts a row (each at least ~12 words of the small font wide),
  // memory on a row of its own below, and the tab scrolls (Lab::bottom_pane).
  const float min_w = fs0 * 12.0f, min_h = fs0 * 7.0f;
  const bool side = (avail.x * 0.6f - gap * 2) / 3 >= fs0 * 10.0f;  // legends wrap a line there
  const int cols = side ? 3 : std::clamp((int)((avail.x + gap) / (min_w + gap)), 1, 3);
  const int rows = (6 + cols - 1) / cols;
  const float grid_w = side ? avail.x * 0.6f : avail.x - 4 * s;
  const float cw = (grid_w - gap * (float)(cols - 1)) / (float)cols;
  const float ch = side ? std::max(min_h, (avail.y - gap - 4 * s) / 2)
                        : std::max(min_h, (avail.y - 4 * s - gap * (float)rows) / (float)(rows + 1));
  const float mem_h = side ? std::max(min_h * 2 + gap, avail.y - 4 * s) : std::max(min_h * 1.5f, ch);
  const glm::vec4 teal = render::rgb(0x4fc1b0);
  struct Chart {
    const char* title;
    std::vector<Series> series;
  };
  const std::vector<Chart> grid = {
      {"loss", {{"train", forward, [](const StepLine& l) { return l.loss; }},
                {"held-out", lit, [](const StepLine& l) { return l.heldout; }}}},
      {"tokens/s", {{"", teal, [](const StepLine& l) { return l.tokens_per_s > 0 ? l.tokens_per_s : NAN; }}}},
      {"step time (ms)", {{"virtual", weights, [](const StepLine& l) { return l.virtual_s * 1e3; }},
                          {"wall", text_dim, [](const StepLine& l) { return l.wall_s > 0 ? l.wall_s * 1e3 : NAN; }}}},
      {"gradient norm", {{"", backward, [](const StepLine& l) { return l.grad_norm > 0 ? l.grad_norm : NAN; }}}},
      {"learning rate", {{"", optimizer, [](const StepLine& l) { return l.lr; }}}},
      {"bubble", {{"measured", waiting, [](const StepLine& l) { return l.bubble; }},
                  {"textbook", text_faint, [](const StepLine& l) { return l.textbook; }}}},
  };
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const float x = p.x + (float)(i % (std::size_t)cols) * (cw + gap), y = p.y + (float)(i / (std::size_t)cols) * (ch + gap);
    drawn_.chart_points += step_chart(dl, {x, y}, {x + cw, y + ch}, grid[i].title, h, grid[i].series, fonts, s, drawn_.chart_words);
  }
  // The content's size, so the tab's scroll region knows it (nothing is drawn by the item).
  const ImVec2 a = side ? ImVec2{p.x + grid_w + gap, p.y} : ImVec2{p.x, p.y + (float)rows * (ch + gap)};
  const ImVec2 b = side ? ImVec2{p.x + avail.x - 4 * s, p.y + mem_h} : ImVec2{p.x + avail.x - 4 * s, a.y + mem_h};
  ImGui::Dummy({avail.x - 4 * s, b.y - p.y});

  // Memory of the selected GPU across the shown step: what it holds all step (weights and
  // gradients, optimizer, communication buffers) under what its activations reach op by op.
  const float fs = fs0;
  dl->AddRect(a, b, col(text_faint, 0.4f), 3.0f * s);
  const RunStep* rec = shown(rs);
  const int world = run->world();
  sel_rank_ = std::clamp(sel_rank_, 0, std::max(0, world - 1));
  char title[96];
  std::snprintf(title, sizeof title, "GPU %d · memory across step %d", sel_rank_ + 1, rec ? rec->step + 1 : 0);
  dl->PushClipRect(a, b, true);
  struct Pop { ImDrawList* d; ~Pop() { d->PopClipRect(); } } pop{dl};
  if (fonts.small->CalcTextSizeA(fs, FLT_MAX, 0, title).x > b.x - a.x - 12 * s)
    std::snprintf(title, sizeof title, "GPU %d · memory", sel_rank_ + 1);  // the step is in the tab's other charts
  const float title_w = fonts.small->CalcTextSizeA(fs, FLT_MAX, 0, title).x;
  dl->AddText(fonts.small, fs, {a.x + 6 * s, a.y + 2 * s}, col(text_dim), title);
  drawn_.chart_words.push_back({{{a.x + 6 * s, a.y + 2 * s}, {a.x + 6 * s + title_w, a.y + 2 * s + fs}}, {{a.x, a.y}, {b.x, b.y}}});
  const std::vector<RankMemory>& mem = rec && (int)rec->memory.size() > sel_rank_ ? rec->memory : rs.resident();
  if (!rec || (int)mem.size() <= sel_rank_) {
    dl->AddText(fonts.small, fs, {a.x + 6 * s, a.y + fs * 1.5f}, col(text_faint),
                run->recorded_from.empty() ? "no memory reported yet" : "a trace keeps no memory");
    return;
  }
  const RankMemory& m = mem[(std::size_t)sel_rank_];
  // Activation level after each of this GPU's ops, at the op's end.
  std::vector<std::pair<double, double>> act{{0.0, 0.0}};
  for (const auto& [id, bytes] : rec->activations) {
    if (id >= index_.by_op.size() || index_.by_op[id] < 0) continue;
    const OpSpan& o = rec->ops[(std::size_t)index_.by_op[id]];
    if (o.rank != sel_rank_) continue;
    act.push_back({span_time(o, *rec, wall_clock_, true), (double)bytes});
  }
  std::sort(act.begin(), act.end());
  double act_peak = (double)m.peak[3];
  for (const auto& pr : act) act_peak = std::max(act_peak, pr.second);
  struct Band { const char* name; double bytes; glm::vec4 colour; };
  const Band fixed[] = {{"weights", (double)m.current[0], weights},
                        {"gradients", (double)m.current[1], render::mix(weights, backward, 0.5f)},
                        {"optimizer", (double)m.current[2], optimizer},
                        {"comm buffers", (double)m.current[4], teal}};
  double base = 0;
  for (const Band& bd : fixed) base += bd.bytes;
  const double top = std::max(1.0, base + act_peak) * 1.05;
  // The legend first (it wraps to the frame's width), then the plot below it.
  float lx = a.x + 6 * s, ly = a.y + fs * 1.25f;
  auto legend = [&](const char* t, glm::vec4 c) {
    const float tw = fonts.small->CalcTextSizeA(fs, FLT_MAX, 0, t).x;
    if (lx > a.x + 6 * s && lx + tw > b.x - 6 * s) lx = a.x + 6 * s, ly += fs * 1.1f;
    dl->AddText(fonts.small, fs, {lx, ly}, col(c), t);
    drawn_.chart_words.push_back({{{lx, ly}, {lx + tw, ly + fs}}, {{a.x, a.y}, {b.x, b.y}}});
    lx += tw + 8 * s;
  };
  for (const Band& bd : fixed) {
    if (bd.bytes <= 0) continue;
    char t[64];
    std::snprintf(t, sizeof t, "%s %.1f MB", bd.name, bd.bytes / 1e6);
    legend(t, bd.colour);
  }
  if (act_peak > 0) {
    char t[64];
    std::snprintf(t, sizeof t, "activations up to %.1f MB", act_peak / 1e6);
    legend(t, forward);
  }
  const ImVec2 pa{a.x + 6 * s, ly + fs * 1.4f}, pb{b.x - 6 * s, b.y - fs * 1.4f};
  const double end = std::max(1e-12, step_end());
  auto X = [&](double t) { return pa.x + (float)(t / end) * (pb.x - pa.x); };
  auto Y = [&](double v) { return pb.y - (float)(v / top) * (pb.y - pa.y); };
  double y0 = 0;
  for (const Band& bd : fixed) {
    if (bd.bytes <= 0) continue;
    dl->AddRectFilled({pa.x, Y(y0 + bd.bytes)}, {pb.x, Y(y0)}, col(bd.colour, 0.85f));
    y0 += bd.bytes;
    ++drawn_.memory_bands;
  }
  for (std::size_t i = 0; i < act.size(); ++i) {
    const double t0 = act[i].first, t1 = i + 1 < act.size() ? act[i + 1].first : end;
    if (act[i].second > 0) dl->AddRectFilled({X(t0), Y(base + act[i].second)}, {std::max(X(t1), X(t0) + 1), Y(base)}, col(forward, 0.9f));
  }
  if (act_peak > 0) ++drawn_.memory_bands;
  // The axes' note, the clock's half left out where the frame is too narrow for both.
  char scale_note[96];
  std::snprintf(scale_note, sizeof scale_note, "0 … %.1f MB  ·  the step's %s clock →", top / 1e6, wall_clock_ ? "wall" : "virtual");
  if (fonts.small->CalcTextSizeA(fs, FLT_MAX, 0, scale_note).x > pb.x - pa.x)
    std::snprintf(scale_note, sizeof scale_note, "0 … %.1f MB", top / 1e6);
  dl->AddText(fonts.small, fs, {pa.x, pb.y + 2 * s}, col(text_faint), scale_note);
  const double P = playhead(rs);
  dl->AddLine({X(P), pa.y}, {X(P), pb.y}, col(focus, replay_.live() ? 0.35f : 0.9f), 1.5f * s);
}

}  // namespace onegpu::app
