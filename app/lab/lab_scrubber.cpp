// The Lab's replay row, under the timeline: play / pause the replay of the shown step, its
// speed (0.1x to 10x), a jump to the selected rank's previous or next op, and a slider that
// puts the cursor anywhere in the step. The cursor is the playhead every view reads.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <utility>

#include <imgui.h>

#include "app/lab/lab.h"
#include "app/lab/lab_flow.h"
#include "render/palette.h"

namespace onegpu::app {

namespace {

// The replay row's items, in order, at the current font: the heading, play, the speed, the
// previous-op / GPU / next-op group, and the cursor (at least this wide).
std::array<float, 5> replay_items(float s, int rank) {
  char op[24];
  std::snprintf(op, sizeof op, "GPU %d op", rank + 1);
  const float gap = 2.0f * s;
  return {text_w("REPLAY"), std::max(64.0f * s, button_w("pause")), 70.0f * s,
          button_w("◀") + gap + text_w(op) + gap + button_w("▶"), 80.0f * s};
}

}  // namespace

int Lab::replay_rows(float width, float s, const LabFonts& fonts) const {
  ImGui::PushFont(fonts.small);
  const std::array<float, 5> w = replay_items(s, sel_rank_);
  ImGui::PopFont();
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  int rows = 1;
  float x = w[0];
  for (std::size_t i = 1; i < w.size(); ++i) {
    if (x + gap + w[i] <= width) x += gap + w[i];
    else ++rows, x = w[i];
  }
  return rows;
}

void Lab::scrubber(const RunState& rs, float s, const LabFonts& fonts, bool row) {
  const RunStep* rec = shown(rs);
  if (!rec || !rs.run()) return;
  const double end = step_end();
  const int world = rs.run()->world();
  sel_rank_ = std::clamp(sel_rank_, 0, std::max(0, world - 1));
  static const std::vector<std::uint32_t> kNone;
  const std::vector<std::uint32_t>& lane = (std::size_t)sel_rank_ < index_.by_rank.size() ? index_.by_rank[(std::size_t)sel_rank_] : kNone;
  auto jump = [&](int dir) {
    replay_.pause();
    replay_.seek(op_jump(*rec, lane, replay_.live() ? (dir > 0 ? -1.0 : end) : replay_.t, wall_clock_, dir));
  };
  // Keys pressed since the last frame (Lab::key).
  switch (std::exchange(replay_key_, 0)) {
    case 'p': replay_.playing ? replay_.pause() : replay_.play(end); break;
    case '[': jump(-1); break;
    case ']': jump(+1); break;
    default: break;
  }

  if (!row) return;  // no room for the row: the keys alone
  ImGui::PushFont(fonts.small);
  ImGui::AlignTextToFramePadding();
  ImGui::TextColored({0.96f, 0.65f, 0.14f, 1}, "REPLAY");
  const std::array<float, 5> item = replay_items(s, sel_rank_);
  const float play_w = item[1];
  flow(play_w);
  if (ImGui::Button(replay_.playing ? "pause##replay" : "play##replay", {play_w, 0})) {
    if (replay_.playing) replay_.pause();
    else replay_.play(end);
  }
  flow(item[2]);
  static const double speeds[] = {0.1, 0.25, 0.5, 1, 2, 5, 10};
  char now[16];
  std::snprintf(now, sizeof now, "%g×", replay_.speed);
  ImGui::SetNextItemWidth(70.0f * s);
  if (ImGui::BeginCombo("##speed", now)) {
    for (double v : speeds) {
      char b[16];
      std::snprintf(b, sizeof b, "%g×", v);
      if (ImGui::Selectable(b, v == replay_.speed)) replay_.speed = v;
    }
    ImGui::EndCombo();
  }
  char op[24];
  std::snprintf(op, sizeof op, "GPU %d op", sel_rank_ + 1);
  // The previous-op button, the GPU and the next-op button stay together.
  const float gap = 2.0f * s;
  flow(item[3]);
  if (ImGui::Button("◀##prevop")) jump(-1);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("GPU %d's previous op  ( [ )", sel_rank_ + 1);
  ImGui::SameLine(0, gap);
  ImGui::TextDisabled("%s", op);
  ImGui::SameLine(0, gap);
  if (ImGui::Button("▶##nextop")) jump(+1);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("GPU %d's next op  ( ] )  ·  a click on a lane picks the GPU", sel_rank_ + 1);
  flow(item[4]);
  // The cursor: 0 .. the step's end, in the clock's own unit.
  const bool ms = end >= 1e-3;
  const float unit = ms ? 1e3f : 1e6f;
  float at = (float)((replay_.live() ? end : std::min(replay_.t, end)) * unit);
  char fmt[32];
  std::snprintf(fmt, sizeof fmt, "%s", replay_.live() ? "live" : ms ? "%.3f ms" : "%.1f µs");
  ImGui::SetNextItemWidth(std::max(80.0f * s, ImGui::GetContentRegionAvail().x - 4.0f * s));
  if (ImGui::SliderFloat("##scrub", &at, 0.0f, (float)(end * unit), fmt, ImGuiSliderFlags_NoRoundToFormat)) {
    replay_.pause();
    replay_.seek((double)at / unit);
  }
  ImGui::PopFont();
}

}  // namespace onegpu::app
