#pragma once
// Rows of widgets that wrap instead of running off a panel's edge: the Lab's panels are narrow
// in a small window or at a large text size (Ctrl+=), and ImGui clips whatever passes the
// window's right edge. Before each item after the first of a row, say how wide it is:
//
//   ImGui::SmallButton("latest");
//   flow(small_button_w("latest"));   // on this row if it fits, else at the start of the next
//   ImGui::Checkbox("wall clock", &on);
#include <cstdarg>
#include <cstdio>

#include <imgui.h>

#include "render/text_breaks.h"

namespace onegpu::app {

// The x (screen pixels) where the window's content ends: its scrollbar, if shown, is outside.
inline float content_right() { return ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x; }

// The next item on the current row when `w` pixels (and the usual spacing, or `spacing`) still
// fit before the content's right edge; otherwise it starts the next row.
inline void flow(float w, float spacing = -1.0f) {
  const float gap = spacing >= 0.0f ? spacing : ImGui::GetStyle().ItemSpacing.x;
  if (ImGui::GetItemRectMax().x + gap + w <= content_right()) ImGui::SameLine(0.0f, gap);
}

inline float text_w(const char* s) { return ImGui::CalcTextSize(s, nullptr, true).x; }
inline float button_w(const char* s) { return text_w(s) + ImGui::GetStyle().FramePadding.x * 2.0f; }
inline float small_button_w(const char* s) { return button_w(s); }  // the same padding across
inline float checkbox_w(const char* s) {
  return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + text_w(s);
}

// The end of the line of text that starts at p and fits `room` (width(a, b): the width of
// [a, b)), breaking between words only: after the last whole word that fits, or after the first
// word when even that does not (it is left wider than the room). *end is ' ' or the text's end.
// A number and its unit count as one word (render/text_breaks.h).
template <class Width>
const char* line_end(const char* p, float room, Width width) {
  auto word_end = [](const char* a) {
    while (*a && *a != ' ') ++a;
    return a;
  };
  const char* cut = nullptr;
  for (const char* q = p;;) {
    const char* e = word_end(q);
    for (const char* from = q; *e;) {  // past a space between a number and its unit
      const char* f = word_end(e + 1);
      if (!render::keeps_with_next({from, (std::size_t)(e - from)}, {e + 1, (std::size_t)(f - e - 1)})) break;
      from = e + 1;
      e = f;
    }
    if (cut && width(p, e) > room) break;
    cut = e;
    if (!*e) break;
    q = e + 1;
  }
  return cut;
}

// Text wrapped between words only, from the cursor (after SameLine too) to the content's edge.
// ImGui's own wrapping may break after a full stop, which cuts numbers ("36." / "9%", "0." /
// "65 s"); a word wider than the whole line is left to it.
inline void words_in(const ImVec4& colour, const char* text) {
  ImGui::PushStyleColor(ImGuiCol_Text, colour);
  // The lines of one text as close as ImGui's own wrapped lines: no item spacing between them.
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, {ImGui::GetStyle().ItemSpacing.x, 0.0f});
  bool spaced = false;
  const char* p = text;
  do {
    const char* cut = line_end(p, content_right() - ImGui::GetCursorScreenPos().x,
                               [](const char* a, const char* b) { return ImGui::CalcTextSize(a, b).x; });
    if (!*cut || !cut[1]) ImGui::PopStyleVar(), spaced = true;  // the last line: the usual spacing after it
    ImGui::TextUnformatted(p, cut);
    p = *cut ? cut + 1 : cut;
  } while (*p);
  if (!spaced) ImGui::PopStyleVar();
  ImGui::PopStyleColor();
}

// ImGui::Text, ImGui::TextDisabled and ImGui::TextColored, wrapped between words.
inline void words_va(const ImVec4& colour, const char* fmt, va_list ap) {
  char b[512];
  std::vsnprintf(b, sizeof b, fmt, ap);
  words_in(colour, b);
}
inline void words_coloured(const ImVec4& colour, const char* fmt, ...) IM_FMTARGS(2);
inline void words_coloured(const ImVec4& colour, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  words_va(colour, fmt, ap);
  va_end(ap);
}
inline void words(const char* fmt, ...) IM_FMTARGS(1);
inline void words(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  words_va(ImGui::GetStyle().Colors[ImGuiCol_Text], fmt, ap);
  va_end(ap);
}
inline void words_dim(const char* fmt, ...) IM_FMTARGS(1);
inline void words_dim(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  words_va(ImGui::GetStyle().Colors[ImGuiCol_TextDisabled], fmt, ap);
  va_end(ap);
}

}  // namespace onegpu::app
