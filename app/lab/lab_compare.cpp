#include <imgui.h>

#include "app/lab/lab.h"

namespace onegpu::app {
void Lab::compare(const RunState&, float, const LabFonts&) { ImGui::TextDisabled("compare: not built yet"); }
}  // namespace onegpu::app
