// The Lab's files panel: open a recorded trace (replayed with no training), and export what is
// on screen: a PNG of the window, the steps kept as a Perfetto trace, the run state as JSONL.
// Opening and the PNG need the window, so they are requests the app carries out after the
// frame (take_open_request, take_png_request); a failure comes back as a message in pink.
#include <cmath>
#include <cstdio>
#include <utility>

#include <imgui.h>

#include "app/lab/lab.h"
#include "app/lab/lab_flow.h"
#include "app/live/run_export.h"
#include "app/ui/imgui_colour.h"
#include "render/palette.h"

namespace onegpu::app {

namespace {
}  // namespace

std::string Lab::take_open_request() { return std::exchange(open_request_, std::string()); }
std::string Lab::take_png_request() { return std::exchange(png_request_, std::string()); }
void Lab::request_png(const std::string& path) { png_request_ = path; }

void Lab::files_panel(const RunState& rs, const LabFonts& fonts) {
  if (scroll_frames_ > 0) --scroll_frames_;
  ImGui::Spacing();
  ImGui::PushFont(fonts.small);
  ImGui::TextColored(im(render::palette::forward), "%s", "FILES");
  ImGui::PopFont();
  const float bw = std::floor((ImGui::GetContentRegionAvail().x - 2 * ImGui::GetStyle().ItemSpacing.x) / 3);
  // Open: a trace from `onegpu train --trace` or from the export below.
  ImGui::SetNextItemWidth(bw * 2 + ImGui::GetStyle().ItemSpacing.x);
  ImGui::InputTextWithHint("##open", "trace.json to replay", open_path_, sizeof open_path_);
  ImGui::SameLine();
  if (ImGui::Button("Open", {bw, 0}) && open_path_[0]) open_request_ = open_path_;
  // Export: base name + .png / .json / .jsonl, in the folder onegpu was started from.
  ImGui::SetNextItemWidth(bw * 3 + 2 * ImGui::GetStyle().ItemSpacing.x);
  ImGui::InputTextWithHint("##export", "file name (no extension)", export_base_, sizeof export_base_);
  const std::string base = export_base_[0] ? export_base_ : "onegpu-lab";
  if (ImGui::Button("PNG", {bw, 0})) png_request_ = base + ".png";
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the whole window as it is now (Ctrl+S anywhere)");
  ImGui::SameLine();
  if (ImGui::Button("trace", {bw, 0})) {
    try {
      const int n = export_trace(rs, base + ".json");
      set_message("wrote " + base + ".json (" + std::to_string(n) + " step" + (n == 1 ? "" : "s") +
                  "; open it here, with onegpu lab --open, or at ui.perfetto.dev)", false);
    } catch (const std::exception& e) {
      set_message(e.what(), true);
    }
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the steps kept whole, as a Perfetto trace");
  ImGui::SameLine();
  if (ImGui::Button("JSONL", {bw, 0})) {
    try {
      const std::size_t n = export_jsonl(rs, base + ".jsonl");
      set_message("wrote " + base + ".jsonl (" + std::to_string(n) + " lines: one per step, one per op)", false);
    } catch (const std::exception& e) {
      set_message(e.what(), true);
    }
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("one JSON object a line: each step, each op of the steps kept");
  drawn_.message_in_view = false;
  if (!message_.empty()) {
    ImGui::PushFont(fonts.small);
    const float top = ImGui::GetCursorScreenPos().y;
    words_in(im(message_error_ ? render::palette::backward : render::palette::text_dim), message_.c_str());
    ImGui::PopFont();
    // The section can lie below the panel's fold (a small window, large text): a new message
    // (a file written, or why one was not) is scrolled into view once, or a press on Open
    // seemed to do nothing.
    const float bottom = ImGui::GetCursorScreenPos().y;
    const float win_top = ImGui::GetWindowPos().y, win_bottom = win_top + ImGui::GetWindowHeight();
    drawn_.message_in_view = top >= win_top - 0.5f && bottom <= win_bottom + 0.5f;
    if (message_scrolled_ != message_serial_ && !drawn_.message_in_view) {
      scroll_frames_ = 2;
      const float pad = ImGui::GetStyle().WindowPadding.y;
      ImGui::SetScrollY(ImGui::GetScrollY() + (bottom > win_bottom ? bottom - win_bottom + pad : top - win_top - pad));
    }
  }
  message_scrolled_ = message_serial_;  // an empty message too, or animating() would owe frames for ever
}

}  // namespace onegpu::app
