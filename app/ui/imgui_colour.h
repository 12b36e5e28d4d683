#pragma once
// The palette's colours (render/palette.h, glm) in the two forms Dear ImGui takes them.
#include <glm/vec4.hpp>
#include <imgui.h>

namespace onegpu::app {

inline ImVec4 im(glm::vec4 c) { return {c.r, c.g, c.b, c.a}; }
// Packed for a draw list, its alpha scaled by `a`.
inline ImU32 col(glm::vec4 c, float a = 1.0f) { return ImGui::ColorConvertFloat4ToU32({c.r, c.g, c.b, c.a * a}); }

}  // namespace onegpu::app
