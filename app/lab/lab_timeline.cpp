// The Lab's timeline: one lane per rank (grouped by stage) on the virtual clock, or the wall
// clock; the mouse wheel zooms around the pointer, a drag pans, a double-click fits the step
// again, a click on the ruler puts the playhead there, hovering an op names it. Spans thinner
// than a pixel merge with their neighbours, and at more than 64 ranks the lanes fold into one
// per stage that shows how many of the stage's ranks are busy, so a 512-rank step stays smooth.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdio>

#include <imgui.h>
#include <imgui_impl_opengl3.h>

#include "app/lab/lab.h"
#include "app/lab/lab_flow.h"
#include "app/lab/lab_explain.h"
#include "app/lab/lab_timeline_layer.h"
#include "app/lab/timeline_axis.h"
#include "app/lab/lab_units.h"
#include "app/ui/imgui_colour.h"
#include "render/gl.h"
#include "render/palette.h"

namespace onegpu::app {

namespace {

using trainer::EventKind;

bool is_compute(EventKind k) {
  return k == EventKind::Forward || k == EventKind::Backward || k == EventKind::WeightGradient || k == EventKind::Update;
}

void legend(ImDrawList* dl, float s, bool new_row) {
  struct Item { const char* name; EventKind k; };
  static const Item items[] = {{"forward", EventKind::Forward},     {"backward", EventKind::Backward},
                               {"weight grad", EventKind::WeightGradient}, {"send/recv", EventKind::Send},
                               {"all-to-all", EventKind::AllToAll}, {"all-reduce, reduce-scatter", EventKind::AllReduce},
                               {"all-gather, broadcast", EventKind::AllGather},
                               {"update", EventKind::Update}};
  // The legend fills the header's last row, and one row more where the header may still take
  // one (a tall pane); the colours that find no room are left out, not cut.
  int more = new_row ? 1 : 0;  // rows the legend may still start
  for (const Item& it : items) {
    const float h = ImGui::GetTextLineHeight();
    const float w = h * 0.6f + 2.0f * s + text_w(it.name);
    if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w > content_right()) {
      if (more == 0) break;  // the rest in order would not fit: none of them, rather than a gap
      --more;
    }
    flow(w);
    ImVec2 p = ImGui::GetCursorScreenPos();
    dl->AddRectFilled({p.x, p.y + h * 0.25f}, {p.x + h * 0.5f, p.y + h * 0.75f}, col(kind_colour(it.k)), 2.0f * s);
    ImGui::Dummy({h * 0.6f, h});
    ImGui::SameLine(0, 2.0f * s);
    ImGui::TextDisabled("%s", it.name);
  }
}

struct LaneName {
  std::string text, gpus;  // gpus: a band's second line ("" for one lane)
  int first, last;         // the lanes it names, [first, last)
  int stage;
};

// What the lanes are drawn from (Lab::timeline fills it once a frame).
struct Lanes {
  const RunStep* rec;
  const trainer::Plan* plan;
  const StepIndex* index;
  bool wall;
  double view0, view1;
  ImVec2 p0, avail;
  float x0, x1, y0, y1, lane_h;
  int lanes, world, dp, pp;
  bool folded;
  int sel_rank;
  float s;
  ImFont* small;
  std::vector<LaneName> names;  // the label column's words (lane_names), once a frame
  double span() const { return std::max(1e-12, view1 - view0); }
  float X(double t) const { return (float)(x0 + (t - view0) / span() * (x1 - x0)); }
  double begin_of(const OpSpan& o) const { return wall ? (double)(o.wbegin - rec->wall_begin) * 1e-9 : o.vbegin; }
  double end_of(const OpSpan& o) const { return wall ? (double)(o.wend - rec->wall_begin) * 1e-9 : o.vend; }
  float lane_y(int lane) const { return y0 + lane_h * (float)lane; }
};

// The ruler's tick step: a round one, about one tick per three label widths so times never touch.
double ruler_step(const Lanes& L) {
  const float label_px = L.small->CalcTextSizeA(L.small->FontSize, FLT_MAX, 0, "00.00 ms").x;
  const double raw = L.span() * (double)(label_px * 1.6f) / std::max(1.0, (double)(L.x1 - L.x0));
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  return raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
}

// The ruler's times and clock, on the row above the ticks (they touch nothing the lanes draw).
void ruler_times(ImDrawList& dl, const Lanes& L) {
  const double step = ruler_step(L);
  const char* clock = L.wall ? "wall clock" : "virtual clock";
  const float size = L.small->FontSize;
  // A time is written whole or not at all: none over the clock's name or past the pane's edge.
  const float left = L.p0.x + L.small->CalcTextSizeA(size, FLT_MAX, 0, clock).x + 4 * L.s, right = L.p0.x + L.avail.x;
  for (double t = std::ceil(L.view0 / step) * step; t <= L.view1; t += step) {
    const std::string label = fmt_time(t);
    const float x = L.X(t) + 3 * L.s;
    if (x < left || x + L.small->CalcTextSizeA(size, FLT_MAX, 0, label.c_str()).x > right) continue;
    dl.AddText(L.small, size, {x, L.p0.y}, col(render::palette::text_faint), label.c_str());
  }
  dl.AddText(L.small, size, {L.p0.x, L.p0.y}, col(render::palette::text_faint), clock);
}

// The words in the lanes' label column: a name a lane ("GPU 3", or "stage 2" folded) where
// the lanes are tall enough for the small font; else, unfolded, one per stage's band of lanes
// ("stage 2" over "GPU 9–16" when there is room for both). None where even a band is too thin.
std::vector<LaneName> lane_names(const Lanes& L) {
  std::vector<LaneName> out;
  const float fs = L.small->FontSize;
  if (L.lane_h >= fs * 0.9f) {
    for (int l = 0; l < L.lanes; ++l) {
      const int stage = L.folded ? l : L.plan->layout.coord(l).stage;
      out.push_back({(L.folded ? "stage " : "GPU ") + std::to_string(l + 1), "", l, l + 1, stage});
    }
    return out;
  }
  if (L.folded) return out;
  for (int a = 0; a < L.lanes;) {
    const int stage = L.plan->layout.coord(a).stage;
    int b = a + 1;
    while (b < L.lanes && L.plan->layout.coord(b).stage == stage) ++b;
    if (L.lane_h * (float)(b - a) >= fs)
      out.push_back({"stage " + std::to_string(stage + 1), "GPU " + std::to_string(a + 1) + "\u2013" + std::to_string(b), a, b, stage});
    a = b;
  }
  return out;
}

// The ruler's ticks, the lanes' names and stripes, and the spans, into `dl`. whole: from scratch (the
// runs start empty); otherwise only the spans each lane gained since runs[r].next, each lane's
// open run of merged narrow spans carried on (drawn again, wider, over itself: it is opaque).
void draw_lanes(ImDrawList& dl, const Lanes& L, std::vector<LaneRun>& runs, bool whole, std::size_t& rects,
                std::vector<std::pair<int, int>>* appended = nullptr) {
  const float s = L.s, x0 = L.x0, x1 = L.x1, y0 = L.y0, y1 = L.y1, lane_h = L.lane_h;
  const ImVec2 p0 = L.p0;
  ImFont* small = L.small;
  const trainer::Plan& plan = *L.plan;
  if (whole) {
    // The ruler's ticks (its times are drawn by ruler_times, above the lanes' rows).
    const double step = ruler_step(L);
    for (double t = std::ceil(L.view0 / step) * step; t <= L.view1; t += step) {
      const float x = L.X(t);
      dl.AddLine({x, y0 - 5 * s}, {x, y1}, col(render::palette::text_faint, 0.25f));
    }
    // Lanes.
    for (int l = 0; l < L.lanes; ++l) {
      const float y = L.lane_y(l);
      const int stage = L.folded ? l : plan.layout.coord(l).stage;
      if (stage % 2 == 1) dl.AddRectFilled({x0, y}, {x1, y + lane_h}, col(render::palette::text, 0.025f));
      if (!L.folded && L.dp > 1 && l % L.dp == 0 && l > 0)
        dl.AddLine({p0.x, y}, {x1, y}, col(render::palette::text_faint, 0.5f));
    }
    for (const LaneName& n : L.names) {
      const float ya = L.lane_y(n.first), h = lane_h * (float)(n.last - n.first), fs = std::min(small->FontSize, h * 0.95f);
      const bool two = !n.gpus.empty() && h >= 2.1f * fs;
      const float ty = two ? ya + (h - 2.0f * fs) * 0.5f : ya + (h - std::min(small->FontSize, h)) * 0.5f;
      const bool one_gpu = !L.folded && n.last - n.first == 1;
      dl.AddText(small, fs, {p0.x + 4 * s, ty},
                 col(one_gpu && n.first == L.sel_rank ? render::palette::focus
                     : n.stage % 2 ? render::palette::text_dim : render::palette::text_faint),
                 n.text.c_str());
      if (two) dl.AddText(small, fs, {p0.x + 4 * s, ty + fs}, col(render::palette::text_faint), n.gpus.c_str());
    }
  }

  const float pad = std::max(0.5f, lane_h * 0.12f);
  const RunStep& rec = *L.rec;
  if (!L.folded) {
    for (int r = 0; r < L.world; ++r) {
      const float ya = L.lane_y(r) + pad, yb = L.lane_y(r) + lane_h - pad;
      // Spans thinner than a pixel merge into one run while they touch, and so do narrow
      // spans of one colour back to back: a software renderer pays per rectangle, and at this
      // zoom their edges are not readable anyway (zoom in and they come apart).
      // In dense lanes narrow spans of any colour merge too; the run takes the colour that
      // covers most of it.
      constexpr float kNarrow = 6.0f;
      const float mixed = lane_h < 14.0f ? 3.0f : 1.0f;
      LaneRun& run = runs[(std::size_t)r];
      auto add_cover = [&](glm::vec4 c, float w) {
        for (int k = 0; k < run.covers; ++k)
          if (run.cover[(std::size_t)k].first == c) {
            run.cover[(std::size_t)k].second += w;
            if (run.cover[(std::size_t)k].second > run.best_w) run.best_w = run.cover[(std::size_t)k].second, run.c = c;
            return;
          }
        if (run.covers < 4) run.cover[(std::size_t)run.covers++] = {c, w};
        if (w > run.best_w) run.best_w = w, run.c = c;
      };
      // Draws the open run; `close` ends it (a later span starts a new one).
      auto flush = [&](bool close) {
        if (run.b > run.a) {
          dl.AddRectFilled({run.a, ya}, {std::max(run.b, run.a + 1.0f), yb}, col(run.c));
          if (!run.counted) ++rects;
          run.counted = true;
        }
        if (!close) return;
        run.b = -1e9f;
        run.covers = 0;
        run.best_w = 0;
        run.counted = false;
      };
      const auto& mine = L.index->by_rank[(std::size_t)r];
      const int vtx0 = dl.VtxBuffer.Size;
      for (; run.next < mine.size(); ++run.next) {
        const OpSpan& o = rec.ops[mine[run.next]];
        const double b = L.begin_of(o), e = L.end_of(o);
        if (e < L.view0 || b > L.view1) continue;
        const float xa = std::max(L.X(b), x0 - 2), xb = std::min(L.X(e), x1 + 2);
        const glm::vec4 c = kind_colour(o.kind);
        const bool touching = xa <= run.b + 1.0f;
        if (touching && (xb - xa < mixed || (xb - xa < kNarrow && c == run.c))) {
          run.b = std::max(run.b, xb);
          add_cover(c, xb - xa);
          continue;
        }
        flush(true);
        if (xb - xa < kNarrow) {
          run.a = xa;
          run.b = xb;
          add_cover(c, xb - xa);
          continue;
        }
        // Rounded corners only where they show (a rounded rectangle costs many triangles).
        dl.AddRectFilled({xa, ya}, {xb, yb}, col(c), lane_h > 10 && xb - xa > 16.0f ? 2.0f * s : 0.0f);
        ++rects;
        // Its name inside, where it fits (a learner reads "F 3", "B 2", "update").
        if (lane_h >= small->FontSize * 1.2f && xb - xa > small->FontSize * 2.5f && o.id < plan.ops.size()) {
          const std::string name = op_short(plan.op(o.id), plan.config.microbatches);
          const float tw = small->CalcTextSizeA(small->FontSize, FLT_MAX, 0, name.c_str()).x;
          if (tw + 6 * s < xb - xa)
            dl.AddText(small, small->FontSize, {xa + 3 * s, (ya + yb - small->FontSize) * 0.5f},
                       col(render::palette::background, 0.85f), name.c_str());
        }
      }
      flush(false);
      if (appended && dl.VtxBuffer.Size > vtx0) appended->push_back({vtx0, dl.VtxBuffer.Size});
    }
    return;
  }
  // Folded: per stage, the share of its ranks computing in each pixel column (always whole).
  const int cols = std::max(1, (int)(x1 - x0));
  std::vector<float> fwd((std::size_t)cols), bwd((std::size_t)cols), comm((std::size_t)cols);
  for (int st = 0; st < L.pp; ++st) {
    std::fill(fwd.begin(), fwd.end(), 0.f);
    std::fill(bwd.begin(), bwd.end(), 0.f);
    std::fill(comm.begin(), comm.end(), 0.f);
    int members = 0;
    for (int r = 0; r < L.world; ++r) {
      if (plan.layout.coord(r).stage != st) continue;
      ++members;
      for (std::uint32_t i : L.index->by_rank[(std::size_t)r]) {
        const OpSpan& o = rec.ops[i];
        const double b = L.begin_of(o), e = L.end_of(o);
        if (e < L.view0 || b > L.view1) continue;
        const float xa = L.X(b) - x0, xb = L.X(e) - x0;
        auto& acc = !is_compute(o.kind) ? comm : o.kind == EventKind::Forward ? fwd : bwd;
        for (int c = std::max(0, (int)xa); c <= std::min(cols - 1, (int)xb); ++c)
          acc[(std::size_t)c] += std::min<float>(xb, (float)c + 1) - std::max<float>(xa, (float)c);
      }
    }
    if (members == 0) continue;
    // Compute from the floor up, communication above it (dimmer): the rest is idle.
    const float yb = L.lane_y(st) + lane_h - pad, full = lane_h - 2 * pad;
    for (int c = 0; c < cols; ++c) {
      const float f = fwd[(std::size_t)c] / members, b = bwd[(std::size_t)c] / members;
      const float k = std::min(1.0f, f + b), m = std::min(1.0f - k, comm[(std::size_t)c] / members);
      if (k > 0.002f) {
        dl.AddRectFilled({x0 + c, yb - k * full}, {x0 + c + 1, yb},
                         col(f >= b ? kind_colour(EventKind::Forward) : kind_colour(EventKind::Backward)));
        ++rects;
      }
      if (m > 0.002f) {
        dl.AddRectFilled({x0 + c, yb - (k + m) * full}, {x0 + c + 1, yb - k * full}, col(kind_colour(EventKind::AllToAll), 0.45f));
        ++rects;
      }
    }
  }
}

}  // namespace

void TimelineLayer::copy(const ImDrawList*, const ImDrawCmd* cmd) {
  const TimelineLayer& tl = *static_cast<const TimelineLayer*>(cmd->UserCallbackData);
  // Only what the command's scissor keeps: a damage-tracked frame (app/ui/frame_damage.h) cuts
  // it to the part of the window drawn again.
  const PixelBox sc = scissor_of(cmd->ClipRect, tl.frame_h);
  const render::RetainedLayer::Rect r = tl.rect();
  const int x0 = std::max(r.x, sc.x0), x1 = std::min(r.x + r.w, sc.x1);
  const int y0 = std::max(r.y, tl.frame_h - sc.y1), y1 = std::min(r.y + r.h, tl.frame_h - sc.y0);
  if (x1 > x0 && y1 > y0) tl.target.copy({x0, y0, x1 - x0, y1 - y0});
}

double step_before(const std::deque<StepLine>& history, int step, bool wall, double otherwise) {
  for (auto it = history.rbegin(); it != history.rend(); ++it)
    if (it->step < step) return wall ? it->wall_s : it->virtual_s;
  return otherwise;
}

glm::vec4 kind_colour(EventKind k) {
  using namespace render::palette;
  switch (k) {
    case EventKind::Forward: return forward;
    case EventKind::Backward: return backward;
    case EventKind::WeightGradient: return render::mix(backward, text, 0.45f);
    case EventKind::Send:
    case EventKind::Recv: return render::rgb(0x6f8fb8);
    case EventKind::AllToAll: return render::rgb(0x4fc1b0);
    case EventKind::AllReduce:
    case EventKind::ReduceScatter: return weights;  // ZeRO-1's half of an all-reduce
    case EventKind::AllGather:
    case EventKind::Broadcast: return render::mix(weights, text, 0.4f);
    case EventKind::Update: return optimizer;
    default: return text_faint;
  }
}

void Lab::timeline(const RunState& rs, float s, const LabFonts& fonts) {
  const LiveRun* run = rs.run();
  const RunStep* rec = shown(rs);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::PushFont(fonts.small);
  ImGui::TextColored({0.96f, 0.65f, 0.14f, 1}, "TIMELINE");
  if (!run || !rec) {
    ImGui::PopFont();
    words_dim("%s", run ? "Press Run or Step one op: each op appears here as it finishes, one lane per GPU."
                        : "Apply a configuration, then press Run or Step one op.");
    return;
  }
  // The header's items wrap onto a second row where the pane is narrow, and a third only where
  // it is tall; in a short pane (a small window, large text) the lanes come first and an item
  // that would need another row is left out (F still fits the view).
  const float pane_rows = (ImGui::GetWindowPos().y + ImGui::GetWindowHeight() - ImGui::GetItemRectMin().y) /
                          ImGui::GetFrameHeightWithSpacing();
  int rows_left = pane_rows > 9.0f ? 2 : pane_rows > 5.0f ? 1 : 0;
  auto room_for = [&](float w) {
    if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w <= content_right()) {
      ImGui::SameLine();
      return true;
    }
    return rows_left-- > 0;
  };
  // The step's words in a slot as wide as "step N (running)" can be with five digits or the
  // latest step's count of them, each as wide as the widest digit (the font's are not all one
  // width), so the buttons after them stay put while steps go by, as ◀ picks finished ones (a
  // second press of ◀ landed beside it once the words had shrunk) and at 1,000 and 10,000.
  char step[48];
  std::snprintf(step, sizeof step, "step %d%s", rec->step + 1, rec->complete ? "" : " (running)");
  const RunStep* latest = rs.latest();
  const int newest = std::max(rec->step, latest ? latest->step : 0) + 1;
  int digits = 1;
  for (int n = newest; n >= 10; n /= 10) ++digits;
  float digit_w = 0.0f;
  for (char d = '0'; d <= '9'; ++d) digit_w = std::max(digit_w, text_w(std::string(1, d).c_str()));
  const float slot = text_w("step  (running)") + (float)std::max(5, digits) * digit_w;
  if (room_for(slot)) {
    ImGui::TextDisabled("%s", step);
    ImGui::SameLine(0.0f, 0.0f);
    ImGui::Dummy({std::max(0.0f, slot - text_w(step)), 1.0f});
  }
  drawn_.timeline_prev_x = -1.0f;
  if (room_for(small_button_w("◀"))) {
    drawn_.timeline_prev_x = ImGui::GetCursorScreenPos().x;
    if (ImGui::SmallButton("◀")) {
      const auto& steps = rs.steps();
      for (auto it = steps.rbegin(); it != steps.rend(); ++it)
        if (it->step < rec->step) { pick_step_ = it->step; follow_ = true; replay_.go_live(); break; }
    }
  }
  if (room_for(small_button_w("▶")) && ImGui::SmallButton("▶")) {
    for (const auto& st : rs.steps())
      if (st.step > rec->step) { pick_step_ = st.step; follow_ = true; replay_.go_live(); break; }
  }
  if (room_for(small_button_w("latest")) && ImGui::SmallButton("latest")) { pick_step_ = -1; follow_ = true; replay_.go_live(); }
  if (room_for(checkbox_w("wall clock")) && ImGui::Checkbox("wall clock", &wall_clock_)) {
    follow_ = true;
    replay_.go_live();
    last_fit_ = 0, hold_step_ = -1;
  }
  if (room_for(small_button_w("fit")) && ImGui::SmallButton("fit")) { follow_ = true; replay_.go_live(); }
  legend(dl, s, rows_left > 0);
  ImGui::PopFont();

  rec = shown(rs);  // refreshes the index
  const trainer::Plan& plan = run->plan_of(rec->step);
  const int world = run->world(), dp = plan.config.dp, pp = plan.config.pp;
  const bool folded = world > 64;
  const int lanes = folded ? pp : world;

  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  // The replay row (lab_scrubber.cpp) sits under the lanes, where they leave room for it (in a
  // small window with large text the lanes come first; the keys P, [ and ] still work).
  // "Room" for the lanes: each named one by one (up to eight; more fold or band by stage) under
  // the ruler. Four GPUs at 1024x640 with text 1.5 had kept the replay row and left their lanes
  // a strip 30 px tall, nameless.
  const float label_w = 70.0f * s, ruler_h = 18.0f * s;
  const float scrub_h = (float)replay_rows(avail.x, s, fonts) * ImGui::GetFrameHeightWithSpacing() + ImGui::GetStyle().ItemSpacing.y;
  const float lanes_need = ruler_h + 2.0f * s + (float)std::min(lanes, 8) * fonts.small->FontSize * 0.95f;
  const bool replay_row = avail.y - scrub_h >= std::max(40.0f, lanes_need);
  if (replay_row) avail.y -= scrub_h;
  if (avail.x < 50 || avail.y < 40) return;
  const float x0 = p0.x + label_w, x1 = p0.x + avail.x - 4.0f * s;
  const float y0 = p0.y + ruler_h, y1 = p0.y + avail.y - 2.0f * s;
  const float lane_h = (y1 - y0) / (float)lanes;
  drawn_.lanes = lanes;
  drawn_.folded = folded;
  drawn_.timeline_x0 = x0;
  drawn_.timeline_x1 = x1;
  drawn_.lane_y.clear();
  for (int l = 0; l < lanes; ++l) drawn_.lane_y.push_back({y0 + lane_h * (float)l, y0 + lane_h * (float)(l + 1)});
  const double end = std::max(1e-9, wall_clock_ ? index_.end_wall : index_.end_virtual);
  if (follow_) {
    view0_ = 0;
    const double fit = end * 1.02;
    if (rec->complete) {
      view1_ = fit;
      last_fit_ = fit;
    } else {
      // A running step: the axis holds while the step grows into it (a steady picture, and the
      // retained lanes only gain spans), and grows by a quarter when the step outgrows it. A new
      // step starts on the length of the one before it (from the run's history: the frames may
      // never have shown that step complete), not on the longest seen, so a slow first step
      // does not leave every later one bunched at the left.
      if (hold_step_ != rec->step) {
        follow_hold_ = std::max(fit * 1.25, step_before(rs.history(), rec->step, wall_clock_, last_fit_ / 1.02) * 1.02);
      } else if (follow_hold_ < fit) {
        follow_hold_ = fit * 1.25;
      }
      hold_step_ = rec->step;
      view1_ = follow_hold_;
    }
  }
  const double span = std::max(1e-12, view1_ - view0_);
  auto X = [&](double t) { return (float)(x0 + (t - view0_) / span * (x1 - x0)); };
  auto T = [&](float x) { return view0_ + (double)(x - x0) / (x1 - x0) * span; };
  auto begin_of = [&](const OpSpan& o) { return wall_clock_ ? (double)(o.wbegin - rec->wall_begin) * 1e-9 : o.vbegin; };
  auto end_of = [&](const OpSpan& o) { return wall_clock_ ? (double)(o.wend - rec->wall_begin) * 1e-9 : o.vend; };

  // Interaction: the whole area is one button.
  ImGui::SetCursorScreenPos(p0);
  ImGui::InvisibleButton("##tl", {avail.x, avail.y});
  const bool hovered = ImGui::IsItemHovered();
  ImGuiIO& io = ImGui::GetIO();
  if (hovered && io.MouseWheel != 0) {
    const double at = T(io.MousePos.x);
    const double k = io.MouseWheel > 0 ? 0.8 : 1.25;
    view0_ = at - (at - view0_) * k;
    view1_ = at + (view1_ - at) * k;
    follow_ = false;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f) && io.MouseClickedPos[0].y > y0) {
    const double dt = -(double)io.MouseDelta.x / (x1 - x0) * span;
    view0_ += dt;
    view1_ += dt;
    follow_ = false;
  }
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) follow_ = true;
  // A click on a lane (not a drag) selects its rank for the replay's op jumps.
  if (ImGui::IsItemDeactivated() && io.MouseDragMaxDistanceSqr[0] < 16.0f && io.MousePos.y >= y0 && !folded) {
    const int lane = (int)((io.MousePos.y - y0) / lane_h);
    if (lane >= 0 && lane < world) sel_rank_ = lane;
  }
  if (hovered && ImGui::IsMouseClicked(ImGuiMouseButton_Left) && io.MousePos.y < y0) {
    replay_.pause();
    replay_.seek(std::max(0.0, T(io.MousePos.x)));
  }

  // The ruler, the lanes and their spans: kept in the retained layer and copied in (drawn again
  // whole when what they show changed, the new spans appended while the step grows), or drawn
  // straight into the window when retention is off.
  auto lane_y = [&](int lane) { return y0 + lane_h * (float)lane; };
  Lanes L{rec, &plan, &index_, wall_clock_, view0_, view1_, p0, avail, x0, x1, y0, y1, lane_h, lanes, world, dp, pp,
          folded, sel_rank_, s, fonts.small, {}};
  std::size_t rects = 0;
  drawn_.lanes_whole = drawn_.lanes_appended = 0;
  drawn_.lane_names.clear();
  L.names = lane_names(L);
  for (const LaneName& n : L.names) drawn_.lane_names.push_back(n.gpus.empty() ? n.text : n.text + " " + n.gpus);
  if (retained_) {
    if (!lanes_layer_) lanes_layer_ = std::make_unique<TimelineLayer>();
    TimelineLayer& tl = *lanes_layer_;
    // The layer covers the pixels of the lanes' clip rectangle (the scissor's whole pixels) from
    // a pixel above the ticks down: the heading and the ruler's times stay in the window, so
    // nothing drawn before the copy reaches into it and what is drawn after blends as before.
    const int lx = (int)p0.x, ly = std::max((int)p0.y, (int)std::floor(y0 - 5 * s) - 1);
    const int lw = (int)(p0.x + avail.x) - lx, lh = (int)(p0.y + avail.y) - ly;
    LanesKey key{rs.generation(), rec->step, wall_clock_, view0_, view1_, lx, ly, lw, lh, x0, x1, y0, y1,
                 folded ? -1 : sel_rank_, lanes, fonts.small, fonts.small->FontSize, s, folded ? rec->ops.size() : 0};
    const ImGuiIO& io = ImGui::GetIO();
    const int fw = (int)(io.DisplaySize.x * io.DisplayFramebufferScale.x), fh = (int)(io.DisplaySize.y * io.DisplayFramebufferScale.y);
    tl.frame_h = fh;
    bool whole = tl.target.resize(fw, fh) || !tl.valid || !(key == tl.key);
    if (!whole && !folded)
      for (int r = 0; r < world && !whole; ++r) whole = tl.runs[(std::size_t)r].next > index_.by_rank[(std::size_t)r].size();
    bool grown = whole;
    if (!whole && !folded)
      for (int r = 0; r < world && !grown; ++r) grown = tl.runs[(std::size_t)r].next < index_.by_rank[(std::size_t)r].size();
    if (grown) {
      if (!tl.list) tl.list = std::make_unique<ImDrawList>(ImGui::GetDrawListSharedData());
      ImDrawList& ld = *tl.list;
      ld._ResetForNewFrame();
      ld.Flags = dl->Flags;  // the window's anti-aliasing, so the pixels match a direct draw
      ld.PushTextureID(ImGui::GetIO().Fonts->TexID);
      ld.PushClipRect({p0.x, p0.y}, {p0.x + avail.x, p0.y + avail.y});
      if (whole) {
        tl.runs.assign((std::size_t)world, LaneRun{});
        tl.rects = 0;
      }
      std::vector<std::pair<int, int>> appended;  // each lane's vertices appended, [first, last)
      draw_lanes(ld, L, tl.runs, whole, tl.rects, whole ? nullptr : &appended);
      ld.PopClipRect();
      ld._PopUnusedDrawCmd();
      tl.key = key;
      tl.target.begin();
      if (whole) {
        const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];  // what the window's pixels are (kLabPanelBg)
        tl.target.clear({bg.x, bg.y, bg.z, bg.w}, tl.rect());
      }
      ImDrawList* one[] = {&ld};
      ImDrawData dd;
      dd.Valid = true;
      dd.CmdLists = one;
      dd.CmdListsCount = 1;
      dd.TotalVtxCount = ld.VtxBuffer.Size;
      dd.TotalIdxCount = ld.IdxBuffer.Size;
      dd.DisplayPos = {0.0f, 0.0f};  // the frame's own transform (render/retained_layer.h)
      dd.DisplaySize = io.DisplaySize;
      dd.FramebufferScale = io.DisplayFramebufferScale;
      ImGui_ImplOpenGL3_RenderDrawData(&dd);
      tl.target.end();
      tl.valid = true;
      (whole ? drawn_.lanes_whole : drawn_.lanes_appended) = 1;
      // What changed in the layer, for the frame's damage: all of it, or each lane's new spans.
      const PixelBox layer{lx, ly, lx + lw, ly + lh};
      if (whole) drawn_.lanes_dirty.push_back(layer);
      else
        for (const auto& [v0, v1] : appended) {
          float a0 = 1e9f, b0 = 1e9f, a1 = -1e9f, b1 = -1e9f;
          for (int i = v0; i < v1; ++i) {
            const ImVec2 q = ld.VtxBuffer[i].pos;
            a0 = std::min(a0, q.x), b0 = std::min(b0, q.y), a1 = std::max(a1, q.x), b1 = std::max(b1, q.y);
          }
          const PixelBox d{std::max(layer.x0, (int)std::floor(a0) - 1), std::max(layer.y0, (int)std::floor(b0) - 1),
                           std::min(layer.x1, (int)std::ceil(a1) + 1), std::min(layer.y1, (int)std::ceil(b1) + 1)};
          if (!d.empty()) drawn_.lanes_dirty.push_back(d);
        }
    }
    dl->AddCallback(&TimelineLayer::copy, &tl);
    rects = tl.rects;
  } else {
    std::vector<LaneRun> runs((std::size_t)world);
    dl->PushClipRect({p0.x, p0.y}, {p0.x + avail.x, p0.y + avail.y}, true);
    draw_lanes(*dl, L, runs, true, rects);
    dl->PopClipRect();
  }

  dl->PushClipRect({p0.x, p0.y}, {p0.x + avail.x, p0.y + avail.y}, true);
  ruler_times(*dl, L);
  if (!folded) {
    // Hand-overs as arrows from each send to its receive, while they can be told apart: a few
    // hundred in view at most.
    int in_view = 0;
    for (const OpSpan& o : rec->ops)
      if (o.kind == EventKind::Send && end_of(o) >= view0_ && begin_of(o) <= view1_) ++in_view;
    if (in_view <= 400) {
      int arrows = 0;
      for (const OpSpan& o : rec->ops) {
        if (o.kind != EventKind::Send || o.id >= plan.ops.size() || arrows > 4000) continue;
        const trainer::Op& op = plan.op(o.id);
        if (op.match < 0 || (std::size_t)op.match >= index_.by_op.size()) continue;
        const std::int32_t ri = index_.by_op[(std::size_t)op.match];
        if (ri < 0) continue;
        const OpSpan& rv = rec->ops[(std::size_t)ri];
        const float ax = X(begin_of(o)), bx = X(end_of(rv));
        if (std::max(ax, bx) < x0 || std::min(ax, bx) > x1) continue;
        const float ay = lane_y(o.rank) + lane_h * 0.5f, by = lane_y(rv.rank) + lane_h * 0.5f;
        const ImU32 c = col(kind_colour(EventKind::Send), 0.85f);
        dl->AddLine({ax, ay}, {bx, by}, c, 1.2f * s);
        const float d = by > ay ? -1.0f : 1.0f;
        dl->AddTriangleFilled({bx, by}, {bx - 4 * s, by + d * 5 * s}, {bx + 4 * s, by + d * 5 * s}, c);
        ++arrows;
      }
    }
  }

  // Playhead; while replaying, what has not happened yet at the cursor is dimmed.
  const double ph = playhead(rs);
  if (!replay_.live() && ph < view1_)
    dl->AddRectFilled({std::max(x0, X(ph)), y0}, {x1, y1}, col(render::palette::background, 0.55f));
  if (ph > view0_ && ph < view1_) {
    const float x = X(ph);
    dl->AddLine({x, p0.y}, {x, y1}, col(render::palette::focus, !replay_.live() ? 0.9f : 0.35f), 1.5f * s);
  }
  dl->PopClipRect();

  // Hover: name the op under the pointer.
  if (hovered && io.MousePos.y >= y0 && io.MousePos.x >= x0) {
    const int lane = (int)((io.MousePos.y - y0) / lane_h);
    const double t = T(io.MousePos.x), slack = span / (x1 - x0) * 2;
    if (!folded && lane >= 0 && lane < world) {
      const OpSpan* hit = nullptr;
      for (std::uint32_t i : index_.by_rank[(std::size_t)lane]) {
        const OpSpan& o = rec->ops[i];
        if (begin_of(o) - slack <= t && t <= end_of(o) + slack) hit = &o;
      }
      if (hit && hit->id < plan.ops.size()) {
        const trainer::Op& op = plan.op(hit->id);
        ImGui::BeginTooltip();
        ImGui::TextUnformatted(op_title(op).c_str());
        ImGui::TextDisabled("op %u, named %s in a trace (counted from 0)", hit->id, trainer::describe(op).c_str());
        ImGui::Text("measured %s  ·  virtual %s → %s", fmt_time(hit->measured_s).c_str(), fmt_time(hit->vbegin).c_str(),
                    fmt_time(hit->vend).c_str());
        ImGui::Text("wall %s → %s", fmt_time((double)(hit->wbegin - rec->wall_begin) * 1e-9).c_str(),
                    fmt_time((double)(hit->wend - rec->wall_begin) * 1e-9).c_str());
        if (hit->bytes > 0) ImGui::Text("%lld bytes", (long long)hit->bytes);
        ImGui::EndTooltip();
      }
    } else if (folded && lane >= 0 && lane < pp) {
      int busy = 0, members = 0;
      for (int r = 0; r < world; ++r) {
        if (plan.layout.coord(r).stage != lane) continue;
        ++members;
        for (std::uint32_t i : index_.by_rank[(std::size_t)r]) {
          const OpSpan& o = rec->ops[i];
          if (is_compute(o.kind) && begin_of(o) <= t && t <= end_of(o)) { ++busy; break; }
        }
      }
      ImGui::SetTooltip("stage %d at %s: %d of %d GPUs computing\n(lanes are folded by stage past 64 GPUs: amber/pink computing, teal communicating, dark idle)",
                        lane + 1, fmt_time(t).c_str(), busy, members);
    }
  }
  drawn_.rects = rects;
  ImGui::SetCursorScreenPos({p0.x, p0.y + avail.y + ImGui::GetStyle().ItemSpacing.y});
  scrubber(rs, s, fonts, replay_row);
}

}  // namespace onegpu::app
