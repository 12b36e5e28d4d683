// The Lab's bubble read-out: per step, the share of the pipeline's time each rank had nothing
// to compute (measured on the virtual clock), their mean over stages, the textbook figure for
// the schedule in use, and both over the last steps.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <imgui.h>

#include "app/lab/lab.h"
#include "app/lab/lab_flow.h"
#include "app/ui/imgui_colour.h"
#include "render/palette.h"
#include "trainer/engine/virtual_clock.h"

namespace onegpu::app {

void Lab::bubbles(const RunState& rs, float s, const LabFonts& fonts) {
  drawn_.bubble_shown = false;
  ImGui::PushFont(fonts.small);
  ImGui::TextColored({0.96f, 0.65f, 0.14f, 1}, "BUBBLES");
  ImGui::PopFont();
  const LiveRun* run = rs.run();
  const RunStep* shown_step = shown(rs);
  const RunStep* rec = shown_step && shown_step->complete ? shown_step : rs.last_complete();
  if (!run || !rec) {
    words_dim("after the first step");
    return;
  }
  const trainer::Plan& plan = run->plan_of(rec->step);
  ImGui::PushTextWrapPos(0.0f);
  if (!rec->spans_whole) {
    ImGui::TextColored({0.94f, 0.42f, 0.6f, 1}, "step %d: events were lost, no bubble figure", rec->step + 1);
    ImGui::PopTextWrapPos();
    return;
  }
  if (plan.config.pp == 1) {
    // In the small font, as the pane's other explanations: in the body font this narrow pane
    // held two words a line at a projector's text size (and the Lab opens on one stage).
    ImGui::PushFont(fonts.small);
    ImGui::TextWrapped("One stage: no GPU waits for another's activations, so there is no pipeline bubble. Split with pp > 1 to see one.");
    ImGui::PopFont();
    ImGui::PopTextWrapPos();
    drawn_.bubble_shown = true;
    drawn_.bubble = rec->bubble;
    drawn_.textbook = rec->textbook;
    return;
  }
  words("step %d: idle %.1f%%", rec->step + 1, 100.0 * rec->bubble);
  drawn_.bubble_shown = true;
  drawn_.bubble = rec->bubble;
  drawn_.textbook = rec->textbook;
  ImGui::PushFont(fonts.small);
  words_dim("measured: mean over stages of the time a GPU had no compute");
  words("textbook %.1f%%", 100.0 * rec->textbook);
  words_dim("%s %s, equal op costs, free links", std::string(trainer::to_string(plan.config.schedule)).c_str(),
                      trainer::textbook_formula(plan.config).c_str());
  ImGui::PopFont();
  ImGui::PopTextWrapPos();

  // Per rank (per stage past 64 ranks): idle bars.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const int world = (int)rec->rank_idle.size();
  const bool by_stage = world > 32;
  const int bars = by_stage ? plan.config.pp : world;
  std::vector<double> idle((std::size_t)bars, 0.0);
  if (by_stage) {
    std::vector<int> n((std::size_t)bars, 0);
    for (int r = 0; r < world; ++r) {
      const int st = plan.layout.coord(r).stage;
      idle[(std::size_t)st] += rec->rank_idle[(std::size_t)r];
      ++n[(std::size_t)st];
    }
    for (int i = 0; i < bars; ++i) idle[(std::size_t)i] /= std::max(1, n[(std::size_t)i]);
  } else {
    idle = rec->rank_idle;
  }
  const float w = ImGui::GetContentRegionAvail().x;
  const float row = std::clamp(110.0f * s / std::max(1, bars), 3.0f * s, 14.0f * s);
  ImVec2 p = ImGui::GetCursorScreenPos();
  const float label_w = 58.0f * s;
  for (int i = 0; i < bars; ++i) {
    const float y = p.y + row * (float)i;
    const float len = (float)idle[(std::size_t)i] * (w - label_w);
    dl->AddRectFilled({p.x + label_w, y + 1}, {p.x + label_w + len, y + row - 1}, col(render::palette::waiting));
    if (row >= fonts.small->FontSize * 0.8f) {
      char name[24];
      std::snprintf(name, sizeof name, by_stage ? "stage %d" : "GPU %d", i + 1);
      dl->AddText(fonts.small, std::min(fonts.small->FontSize, row), {p.x, y}, col(render::palette::text_dim), name);
    }
  }
  // The textbook line across the bars.
  const float tx = p.x + label_w + (float)rec->textbook * (w - label_w);
  dl->AddLine({tx, p.y}, {tx, p.y + row * bars}, col(render::palette::focus, 0.8f), 1.5f * s);
  ImGui::Dummy({w, row * bars + 4 * s});

  // Over the last steps: measured (grey) and textbook (white).
  const auto& h = rs.history();
  const std::size_t n = std::min<std::size_t>(h.size(), 100);
  if (n >= 2) {
    double top = 1e-9;
    for (std::size_t i = h.size() - n; i < h.size(); ++i) top = std::max({top, h[i].bubble, h[i].textbook});
    top = std::min(1.0, top * 1.15);
    // The two lines' names in their own colours, and the height the chart spans.
    ImGui::PushFont(fonts.small);
    const float space = text_w(" ");
    words_dim("last %zu steps:", n);
    flow(text_w("measured"), space);
    ImGui::TextColored(im(render::palette::text_dim), "measured");
    flow(text_w("vs"), space);
    words_dim("vs");
    flow(text_w("textbook"), space);
    ImGui::TextColored(im(render::palette::focus), "textbook");
    char range[32];
    std::snprintf(range, sizeof range, "(0 to %.0f%%)", top * 100.0);
    flow(text_w(range), space);
    words_dim("%s", range);
    ImGui::PopFont();
    const ImVec2 a = ImGui::GetCursorScreenPos();
    const float ch = std::max(30.0f * s, std::min(90.0f * s, ImGui::GetContentRegionAvail().y - 6 * s));
    dl->AddRectFilled(a, {a.x + w, a.y + ch}, col(render::palette::text, 0.04f));
    auto pt = [&](std::size_t k, double v) {
      return ImVec2{a.x + w * (float)k / (float)(n - 1), a.y + ch - (float)(v / top) * ch};
    };
    for (std::size_t k = 1; k < n; ++k) {
      const StepLine& p0 = h[h.size() - n + k - 1];
      const StepLine& p1 = h[h.size() - n + k];
      dl->AddLine(pt(k - 1, p0.textbook), pt(k, p1.textbook), col(render::palette::focus, 0.8f), 1.2f * s);
      dl->AddLine(pt(k - 1, p0.bubble), pt(k, p1.bubble), col(render::palette::text_dim), 1.5f * s);
    }
    ImGui::Dummy({w, ch});
  }
}

}  // namespace onegpu::app
