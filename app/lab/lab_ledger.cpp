// The Lab's ledger tab: for the shown step, the bytes each kind of transfer put on the wire,
// inside a node and between nodes, beside the textbook formula's figure (app/live/comm_ledger.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include <imgui.h>

#include "app/lab/lab.h"
#include "app/lab/lab_flow.h"
#include "app/lab/lab_units.h"
#include "app/live/comm_ledger.h"
#include "render/palette.h"
#include "trainer/engine/virtual_clock.h"

namespace onegpu::app {

void Lab::ledger(const RunState& rs, float /*scale*/, const LabFonts& fonts) {
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
  words_dim("step %d%s · bytes on the wire · %d GPUs to a node · a collective counted per member by the ring rule",
            rec->step + 1, rec->complete ? "" : " (so far)", per_node);
  ImGui::PopFont();
  // Each row's cells as text first: the table is drawn only where its columns fit whole; at a
  // projector's text size each transfer becomes a short paragraph instead of cut-off cells.
  struct Cells {
    std::string c[6];
    int tone = 0;  // the last cell: 0 dim, 1 equal (green), 2 differs (pink)
  };
  static const char* kHead[6] = {"transfer", "ops", "inside a node", "between nodes", "formula", "measured / formula"};
  std::vector<Cells> rows;
  for (const LedgerRow& r : L.rows) {
    drawn_.ledger_measured.push_back(r.measured());
    drawn_.ledger_predicted.push_back(r.predicted);
    if (r.ops == 0 && r.predicted <= 0) continue;  // this split has none of it
    Cells c;
    c.c[0] = transfer_name(r.what);
    c.c[1] = std::to_string(r.ops);
    c.c[2] = fmt_bytes(r.inside);
    c.c[3] = fmt_bytes(r.between);
    c.c[4] = r.predicted >= 0 ? fmt_bytes(r.predicted) : "(first step only)";
    if (r.predicted > 0) {
      const double k = r.measured() / r.predicted;
      const bool ok = std::fabs(k - 1) < 1e-9;
      char t[64];
      std::snprintf(t, sizeof t, "%.4f%s", k, ok ? "  equal" : !rec->complete ? "  (step under way)" : "");
      c.c[5] = t;
      c.tone = ok ? 1 : 2;
    } else {
      c.c[5] = "–";
    }
    rows.push_back(std::move(c));
  }
  const ImGuiStyle& st = ImGui::GetStyle();
  float natural = 0;
  for (int k = 0; k < 6; ++k) {
    float w = ImGui::CalcTextSize(kHead[k]).x;
    for (const Cells& c : rows) w = std::max(w, ImGui::CalcTextSize(c.c[k].c_str()).x);
    natural += w + st.CellPadding.x * 2 + st.ItemSpacing.x;
  }
  const ImVec4 green{0.55f, 0.85f, 0.55f, 1}, pink{0.96f, 0.45f, 0.6f, 1};
  const ImVec4 dim = ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled);
  drawn_.ledger_as_table = natural <= ImGui::GetContentRegionAvail().x;
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingStretchProp;
  if (drawn_.ledger_as_table && ImGui::BeginTable("##ledger", 6, kFlags)) {
    const float weight[6] = {2.4f, 0.6f, 1.1f, 1.1f, 1.1f, 1.2f};
    for (int k = 0; k < 6; ++k) ImGui::TableSetupColumn(kHead[k], ImGuiTableColumnFlags_WidthStretch, weight[k]);
    ImGui::TableHeadersRow();
    for (const Cells& c : rows) {
      ImGui::TableNextRow();
      for (int k = 0; k < 6; ++k) {
        ImGui::TableNextColumn();
        if (k == 5) ImGui::TextColored(c.tone == 1 ? green : c.tone == 2 ? pink : dim, "%s", c.c[k].c_str());
        else if (k == 4 && c.c[k][0] == '(') ImGui::TextDisabled("%s", c.c[k].c_str());
        else ImGui::TextUnformatted(c.c[k].c_str());
      }
    }
    ImGui::EndTable();
  } else if (!drawn_.ledger_as_table) {
    for (const Cells& c : rows) {
      ImGui::Separator();
      words("%s · %s ops", c.c[0].c_str(), c.c[1].c_str());
      words_dim("inside a node %s · between nodes %s · formula %s", c.c[2].c_str(), c.c[3].c_str(), c.c[4].c_str());
      words_in(c.tone == 1 ? green : c.tone == 2 ? pink : dim, ("measured / formula " + c.c[5]).c_str());
    }
    ImGui::Separator();
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
      words_dim("GPU %d → GPU %d  ·  %s  ·  %d send%s  ·  %s%s", from + 1, to + 1, grad ? "gradients" : "activations",
                v.first, v.first == 1 ? "" : "s", fmt_bytes(v.second).c_str(),
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
      fmt_bytes(L.measured).c_str(), fmt_bytes(L.predicted).c_str());
  ImGui::PopTextWrapPos();
  ImGui::PopFont();
}

}  // namespace onegpu::app
