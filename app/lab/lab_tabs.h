#pragma once
// The Lab's bottom pane: one tab per view, named once here (the command line's --tab uses the names).
#include <string>

namespace onegpu::app {

enum class LabTab { Timeline, Charts, Experts, Traffic, Ledger, Compare };
inline constexpr const char* kLabTabNames[] = {"timeline", "charts", "experts", "traffic", "ledger", "compare"};

// The tab named `name` (as in kLabTabNames); false when there is none.
bool lab_tab_from(const std::string& name, LabTab& out);

}  // namespace onegpu::app
