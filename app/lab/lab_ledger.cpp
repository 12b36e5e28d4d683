// The Lab's ledger tab: for the shown step, the bytes each kind of transfer put on the wire,
// inside a node and between nodes, beside the textbook formula's figure (app/live/comm_ledger.h).
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include <imgui.h>

#include "app/lab/lab.h"
#include "app/live/comm_ledger.h"
#include "render/palette.h"
#include "trainer/engine/virtual_clock.h"

namespace onegpu::app {

namespace {
std::string bytes(double b) {
  char s[32];
  if (b >= 1e9) std::snprintf(s, sizeof s, "%.2f GB", b / 1e9);
  else if (b >= 1e6) std::snprintf(s, sizeof s, "%.2f MB", b / 1e6);
  else if (b >= 1e3) std::snprintf(s, sizeof s, "%.1f kB", b / 1e3);
  else std::snprintf(s, sizeof s, "%.0f B", b);
  return s;
}
}  // namespace

void Lab::ledger(const RunState& rs, float s, const LabFonts& fonts) {
  const RunStep* rec = shown(rs);
  const LiveRun* run = rs.run();
  drawn_.ledger_measured.clear();
  drawn_.ledger_predicted.clear();
  if (!run || !rec) {
    ImGui::TextDisabled("Run a step: what it sent, and what the formulas say it should, appear here.");
    return;
  }
  const trainer::Plan& plan = run->plan_of(rec->step);
  const int per_node = trainer::CostModel{}.ranks_per_node;
  const CommLedger L = comm_ledger(plan, *rec, per_node);
  ImGui::PushFont(fonts.small);
  ImGui::TextColored({0.96f, 0.65f, 0.14f, 1}, "COMMUNICATION LEDGER");
  ImGui::SameLine();
  ImGui::TextDisabled("step %d%s · bytes on the wire · %d GPUs to a node · a collective counted per member by the ring rule",
                      rec->step + 1, rec->complete ? "" : " (so far)", per_node);
  ImGui::PopFont();
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingStretchProp;
  if (ImGui::BeginTable("##ledger", 6, kFlags)) {
    ImGui::TableSetupColumn("transfer", ImGuiTableColumnFlags_WidthStretch, 2.4f);
    ImGui::TableSetupColumn("ops", ImGuiTableColumnFlags_WidthStretch, 0.6f);
    ImGui::TableSetupColumn("inside a node", ImGuiTableColumnFlags_WidthStretch, 1.1f);
    ImGui::TableSetupColumn("between nodes", ImGuiTableColumnFlags_WidthStretch, 1.1f);
    ImGui::TableSetupColumn("formula", ImGuiTableColumnFlags_WidthStretch, 1.1f);
    ImGui::TableSetupColumn("measured / formula", ImGuiTableColumnFlags_WidthStretch, 1.2f);
    ImGui::TableHeadersRow();
    for (const LedgerRow& r : L.rows) {
      drawn_.ledger_measured.push_back(r.measured());
      drawn_.ledger_predicted.push_back(r.predicted);
      if (r.ops == 0 && r.predicted <= 0) continue;  // this split has none of it
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(transfer_name(r.what));
      ImGui::TableNextColumn();
      ImGui::Text("%lld", (long long)r.ops);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(bytes(r.inside).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(bytes(r.between).c_str());
      ImGui::TableNextColumn();
      if (r.predicted >= 0) ImGui::TextUnformatted(bytes(r.predicted).c_str());
      else ImGui::TextDisabled("(first step only)");
      ImGui::TableNextColumn();
      if (r.predicted > 0) {
        const double k = r.measured() / r.predicted;
        const bool ok = std::fabs(k - 1) < 1e-9;
        ImGui::TextColored(ok ? ImVec4{0.55f, 0.85f, 0.55f, 1} : ImVec4{0.96f, 0.45f, 0.6f, 1}, "%.4f%s", k,
                           ok ? "  equal" : !rec->complete ? "  (step under way)" : "");
      } else {
        ImGui::TextDisabled("–");
      }
    }
    ImGui::EndTable();
  }
  // Each point-to-point link of the step: sender → receiver, what it carried, how often.
  ImGui::PushFont(fonts.small);
  std::map<std::tuple<int, int, int>, std::pair<int, double>> links;  // (from, to, gradient?) -> (sends, bytes)
  for (const OpSpan& o : rec->ops) {
    if (o.kind != trainer::EventKind::Send || o.id >= plan.ops.size()) continue;
    const trainer::Op& op = plan.op(o.id);
    auto& l = links[{op.rank, op.peer, op.payload == trainer::Payload::Gradient ? 1 : 0}];
    ++l.first;
    l.second += (double)o.bytes;
  }
  if (!links.empty() && ImGui::TreeNode("##p2p", "point-to-point transfers: %zu links", links.size())) {
    for (const auto& [k, v] : links) {
      const auto [from, to, grad] = k;
      ImGui::TextDisabled("GPU %d → GPU %d  ·  %s  ·  %d send%s  ·  %s%s", from + 1, to + 1, grad ? "gradients" : "activations",
                          v.first, v.first == 1 ? "" : "s", bytes(v.second).c_str(),
                          from / per_node != to / per_node ? "  ·  between nodes" : "");
    }
    ImGui::TreePop();
  }
  ImGui::PopFont();
  ImGui::PushFont(fonts.small);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled(
      "Formulas: pipeline 2·(chunks−1)·m·dp·A (A: one microbatch's hidden states) · all-to-all 4·L·m·dp·(ep−1)/ep·k·A · "
      "ring all-reduce 2(n−1)/n × each rank's gradient bytes (n = dp for dense weights, dp/ep for experts). In all: %s "
      "measured, %s by the formulas.",
      bytes(L.measured).c_str(), bytes(L.predicted).c_str());
  ImGui::PopTextWrapPos();
  ImGui::PopFont();
}

}  // namespace onegpu::app
