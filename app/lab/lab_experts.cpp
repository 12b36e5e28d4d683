// The Lab's experts and traffic tabs, for the shown step:
//   - experts: tokens routed to each expert in each layer (the router's own counts, rows =
//     layers, columns = experts), with each layer's balance (busiest expert over the mean);
//   - traffic: the all-to-all's token rows sent rank -> rank (rows: from, columns: to), one
//     layer or all summed.
#include <algorithm>
#include <cfloat>
#include <cstdio>

#include <imgui.h>

#include "app/lab/lab.h"
#include "app/lab/lab_flow.h"
#include "app/ui/imgui_colour.h"
#include "render/palette.h"

namespace onegpu::app {

namespace {

// A grid of cells shaded from the background (0) to `hot` (the largest value), with the count
// written in each cell where it fits, and row / column names at the edges.
void heat_grid(ImDrawList* dl, ImVec2 p, ImVec2 size, int rows, int cols, const std::vector<std::int64_t>& v,
               glm::vec4 hot, const char* row_name, const char* col_name, const LabFonts& fonts, float s,
               std::vector<int>* numbered = nullptr) {
  if (rows <= 0 || cols <= 0) return;
  const float fs = fonts.small->FontSize;
  const float left = fs * 4.2f, top = fs * 1.4f;
  const float cw = std::max(1.0f, (size.x - left) / (float)cols), ch = std::max(1.0f, (size.y - top) / (float)rows);
  std::int64_t most = 1;
  for (std::int64_t x : v) most = std::max(most, x);
  const glm::vec4 cold = render::palette::background;
  // Every column's number where the widest fits its cell, else every 2nd, 4th, ... column's
  // (1, 3, 5 ...): numbering only the columns with one digit read as a grid of nine.
  char widest[16];
  std::snprintf(widest, sizeof widest, "%d", cols);
  const float widest_w = fonts.small->CalcTextSizeA(fs, FLT_MAX, 0, widest).x + fs * 0.3f;
  int stride = 1;
  while (stride < cols && widest_w > cw * (float)stride) stride *= 2;
  for (int c = 0; c < cols; c += stride) {
    char b[16];
    std::snprintf(b, sizeof b, "%d", c + 1);
    const float tw = fonts.small->CalcTextSizeA(fs, FLT_MAX, 0, b).x;
    dl->AddText(fonts.small, fs, {p.x + left + cw * ((float)c + 0.5f) - tw * 0.5f, p.y}, col(render::palette::text_faint), b);
    if (numbered) numbered->push_back(c + 1);
  }
  dl->AddText(fonts.small, fs, {p.x, p.y}, col(render::palette::text_faint), col_name);
  for (int r = 0; r < rows; ++r) {
    const float y = p.y + top + ch * (float)r;
    if (ch >= fs * 0.8f || r % std::max(1, (int)(fs / ch) + 1) == 0) {
      char b[24];
      std::snprintf(b, sizeof b, "%s %d", row_name, r + 1);
      dl->AddText(fonts.small, std::min(fs, std::max(ch, fs * 0.6f)), {p.x, y + std::max(0.0f, (ch - fs) * 0.5f)},
                  col(render::palette::text_dim), b);
    }
    for (int c = 0; c < cols; ++c) {
      const std::int64_t x = v[(std::size_t)(r * cols + c)];
      const float k = (float)x / (float)most;
      const ImVec2 a{p.x + left + cw * (float)c, y}, b{a.x + cw, y + ch};
      const float gap = cw > 6 && ch > 6 ? 1.0f * s : 0.0f;
      dl->AddRectFilled({a.x + gap, a.y + gap}, {b.x - gap, b.y - gap}, col(render::mix(render::mix(cold, hot, 0.12f), hot, k)));
      if (x > 0 && cw > fs * 2.2f && ch > fs * 1.05f) {
        char t[24];
        std::snprintf(t, sizeof t, "%lld", (long long)x);
        const float tw = fonts.small->CalcTextSizeA(fs, FLT_MAX, 0, t).x;
        if (tw < cw - 4 * s)
          dl->AddText(fonts.small, fs, {a.x + (cw - tw) * 0.5f, a.y + (ch - fs) * 0.5f},
                      col(k > 0.55f ? render::palette::background : render::palette::text), t);
      }
    }
  }
}

}  // namespace

void Lab::experts(const RunState& rs, float s, const LabFonts& fonts) {
  bool earlier = false;
  const RunStep* rec = shown_counted(rs, &earlier);
  const LiveRun* run = rs.run();
  drawn_.heat.clear();
  drawn_.heat_numbered.clear();
  if (!run || !rec) {
    words_dim("Run a step: the router's choices appear here.");
    return;
  }
  const int L = run->model.n_layers, E = run->model.n_experts;
  std::int64_t total = 0;
  for (std::int64_t x : rec->router) total += x;
  ImGui::PushFont(fonts.small);
  ImGui::TextColored({0.96f, 0.65f, 0.14f, 1}, "EXPERTS");
  ImGui::SameLine();
  if (total == 0 || (int)rec->router.size() != L * E) {
    words_dim("step %d: no router counts (%s)", rec->step + 1,
              !rec->complete ? "they come when the step ends" : "a trace keeps the ops' times only");
    ImGui::PopFont();
    return;
  }
  // Balance: the busiest expert's share over the mean, per layer (1.0 is perfectly even).
  double worst = 0;
  for (int l = 0; l < L; ++l) {
    std::int64_t most = 0, sum = 0;
    for (int e = 0; e < E; ++e) most = std::max(most, rec->router[(std::size_t)(l * E + e)]), sum += rec->router[(std::size_t)(l * E + e)];
    if (sum > 0) worst = std::max(worst, (double)most * E / (double)sum);
  }
  words_dim("step %d%s · tokens each expert took, per layer (the routers' own choices, top-%d of %d) · %lld in all · "
            "busiest expert %.2f× the mean (1.00 is even)",
            rec->step + 1, earlier ? " (the last finished)" : "", run->model.top_k, E, (long long)total, worst);
  ImGui::PopFont();
  drawn_.heat = rec->router;
  const ImVec2 p = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  heat_grid(ImGui::GetWindowDrawList(), p, {avail.x - 4 * s, avail.y - 4 * s}, L, E, rec->router, render::palette::forward,
            "layer", "expert", fonts, s, &drawn_.heat_numbered);
}

void Lab::traffic(const RunState& rs, float s, const LabFonts& fonts) {
  bool earlier = false;
  const RunStep* rec = shown_counted(rs, &earlier);
  const LiveRun* run = rs.run();
  drawn_.traffic.clear();
  if (!run || !rec) {
    words_dim("Run a step: the all-to-all's traffic appears here.");
    return;
  }
  const int W = run->world(), L = run->model.n_layers;
  ImGui::PushFont(fonts.small);
  ImGui::TextColored({0.31f, 0.76f, 0.69f, 1}, "ALL-TO-ALL TRAFFIC");
  ImGui::SameLine();
  if (run->config().ep < 2) {
    words_dim("ep = 1: every GPU holds all its experts, so no token rows cross GPUs. Try ep = 2.");
    ImGui::PopFont();
    return;
  }
  if (rec->traffic.empty()) {
    words_dim("step %d: no traffic rows yet (they come when the step ends)", rec->step + 1);
    ImGui::PopFont();
    return;
  }
  traffic_layer_ = std::clamp(traffic_layer_, -1, L - 1);
  char name[32] = "all layers";
  if (traffic_layer_ >= 0) std::snprintf(name, sizeof name, "layer %d", traffic_layer_ + 1);
  ImGui::SetNextItemWidth(120.0f * s);
  if (ImGui::BeginCombo("##tlayer", name)) {
    if (ImGui::Selectable("all layers", traffic_layer_ < 0)) traffic_layer_ = -1;
    for (int l = 0; l < L; ++l) {
      char b[24];
      std::snprintf(b, sizeof b, "layer %d", l + 1);
      if (ImGui::Selectable(b, traffic_layer_ == l)) traffic_layer_ = l;
    }
    ImGui::EndCombo();
  }
  std::vector<std::int64_t> m((std::size_t)W * W, 0);
  std::int64_t crossed = 0;
  for (const TrafficRow& t : rec->traffic) {
    if (traffic_layer_ >= 0 && t.layer != traffic_layer_) continue;
    if (t.from < 0 || t.from >= W || t.to < 0 || t.to >= W) continue;
    m[(std::size_t)(t.from * W + t.to)] += t.rows;
    crossed += t.rows;
  }
  words_dim("step %d%s · token rows the forward dispatch sent to another GPU, GPU (row) → GPU (column) · %lld rows "
            "(combine sends each one back; the backward pass does both again)",
            rec->step + 1, earlier ? " (the last finished)" : "", (long long)crossed);
  ImGui::PopFont();
  drawn_.traffic = m;
  const ImVec2 p = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float side = std::min(avail.x * 0.6f, avail.y) - 4 * s;
  heat_grid(ImGui::GetWindowDrawList(), p, {side + fonts.small->FontSize * 4.2f, side}, W, W, m, render::rgb(0x4fc1b0), "GPU",
            "to GPU", fonts, s);
}

}  // namespace onegpu::app
