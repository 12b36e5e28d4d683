#include "app/lab/lab.h"
#include "app/lab/lab_timeline_layer.h"

#include <algorithm>
#include <cmath>

#include <imgui.h>
#include <imgui_internal.h>  // the tab bar's scroll, to say when a chosen tab is in view

namespace onegpu::app {

void StepIndex::update(const RunStep& s, int world, std::size_t ops) {
  if (s.step != step || s.ops.size() < spans || by_rank.size() != (std::size_t)world) {
    step = s.step;
    spans = 0;
    by_rank.assign((std::size_t)world, {});
    by_op.assign(ops, -1);
    end_virtual = end_wall = 0;
  }
  for (; spans < s.ops.size(); ++spans) {
    const OpSpan& o = s.ops[spans];
    if (o.rank >= 0 && o.rank < world) by_rank[(std::size_t)o.rank].push_back((std::uint32_t)spans);
    if (o.id < by_op.size()) by_op[o.id] = (std::int32_t)spans;
    end_virtual = std::max(end_virtual, o.vend);
    if (s.wall_begin > 0) end_wall = std::max(end_wall, (double)(o.wend - s.wall_begin) * 1e-9);
  }
}

cli::TrainArgs lab_train_args(const std::vector<std::string>& flags) {
  cli::TrainArgs a = cli::parse_train_args(flags);
  cli::fill_defaults(a);
  return a;
}

Lab::Lab(JobRunner& runner) : runner_(runner) { set_args(lab_train_args({})); }
Lab::~Lab() = default;

void Lab::set_args(const cli::TrainArgs& a) {
  edit_ = a;
  edit_error_ = JobRunner::check(a);
}

const RunStep* Lab::shown(const RunState& rs) const {
  const RunStep* s = pick_step_ >= 0 ? rs.find(pick_step_) : nullptr;
  if (!s) s = rs.latest();
  if (s && rs.run()) index_.update(*s, rs.run()->world(), rs.run()->plan_of(s->step).ops.size());
  return s;
}

// A running step's router counts and traffic rows come at its end: following the latest step,
// the Experts and Traffic tabs showed none for as long as a run trained.
const RunStep* Lab::shown_counted(const RunState& rs, bool* earlier) const {
  const RunStep* s = shown(rs);
  const RunStep* done = s && !s->complete && pick_step_ < 0 ? rs.last_complete() : nullptr;
  if (earlier) *earlier = done != nullptr;
  return done ? done : s;
}

double Lab::playhead(const RunState& rs) const {
  const RunStep* s = shown(rs);
  if (!s) return 0;
  const double end = wall_clock_ ? index_.end_wall : index_.end_virtual;
  if (!replay_.live()) return std::min(replay_.t, end);
  return end;
}

void Lab::bottom_pane(const RunState& rs, float s, const LabFonts& fonts) {
  // Slim tabs: in a small window with large text the timeline's lanes need the height more.
  ImGui::PushFont(fonts.small);
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, {8.0f * s, 2.0f * s});
  // Tabs keep their whole names (scrolled where they do not all fit) rather than being cut short.
  const bool bar = ImGui::BeginTabBar("##lab_tabs", ImGuiTabBarFlags_FittingPolicyScroll);
  ImGui::PopStyleVar();
  ImGui::PopFont();
  if (!bar) return;
  static const char* titles[] = {"Timeline", "Charts", "Experts", "Traffic", "Ledger", "Compare"};
  static_assert(std::size(titles) == std::size(kLabTabNames));
  for (std::size_t i = 0; i < std::size(titles); ++i) {
    const LabTab t = (LabTab)i;
    ImGui::PushFont(fonts.small);
    ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, {8.0f * s, 2.0f * s});
    const bool open = ImGui::BeginTabItem(titles[i], nullptr, tab_pending_ && t == tab_ ? ImGuiTabItemFlags_SetSelected : 0);
    ImGui::PopStyleVar();
    ImGui::PopFont();
    if (!open) continue;
    drawn_.tab_x0 = ImGui::GetItemRectMin().x, drawn_.tab_x1 = ImGui::GetItemRectMax().x;
    if (!tab_pending_) tab_ = t;
    drawn_.tab = kLabTabNames[i];
    // The timeline keeps the wheel for zooming; every other tab scrolls where its content (at
    // a projector's text size) is taller than the pane, rather than being cut at the bottom.
    const bool scrolls = t != LabTab::Timeline;
    if (scrolls) ImGui::BeginChild("##tab_body", {0, 0}, false, ImGuiWindowFlags_NoBackground);
    switch (t) {
      case LabTab::Timeline: timeline(rs, s, fonts); break;
      case LabTab::Charts: charts(rs, s, fonts); break;
      case LabTab::Experts: experts(rs, s, fonts); break;
      case LabTab::Traffic: traffic(rs, s, fonts); break;
      case LabTab::Ledger: ledger(rs, s, fonts); break;
      case LabTab::Compare: compare(rs, s, fonts); break;
    }
    if (scrolls) ImGui::EndChild();
    ImGui::EndTabItem();
  }
  // A tab chosen with the bar too narrow for all of them slides into view over some frames.
  if (const ImGuiTabBar* tb = ImGui::GetCurrentContext()->CurrentTabBar) {
    drawn_.tabs_settling = tb->ScrollingAnim != tb->ScrollingTarget;
    drawn_.tab_bar_x0 = tb->BarRect.Min.x, drawn_.tab_bar_x1 = tb->BarRect.Max.x;
  }
  ImGui::EndTabBar();
  // SetSelected takes effect on the frame after the tab bar first shows: keep asking until drawn.
  if (tab_pending_ && drawn_.tab == kLabTabNames[(std::size_t)tab_]) tab_pending_ = false;
  drawn_.tabs_settling = drawn_.tabs_settling || tab_pending_;
}

bool lab_tab_from(const std::string& name, LabTab& out) {
  for (std::size_t i = 0; i < std::size(kLabTabNames); ++i)
    if (name == kLabTabNames[i]) {
      out = (LabTab)i;
      return true;
    }
  return false;
}

void Lab::scrub_to(const RunState& rs, double fraction) {
  if (!shown(rs)) return;
  replay_.pause();
  replay_.seek(std::clamp(fraction, 0.0, 1.0) * step_end());
  follow_ = true;
}

void Lab::key(char k) {
  if (ImGui::GetCurrentContext() && ImGui::GetIO().WantTextInput) return;
  switch (k) {
    case ' ':
      if (runner_.status().mode == RunMode::Paused) runner_.play(paced_ ? pace_ : 0);
      else runner_.pause();
      break;
    case '.': runner_.step_op(); break;
    case 'm': runner_.step_microbatch(); break;
    case 's': runner_.step_whole(); break;
    case 'f': follow_ = true; replay_.go_live(); break;
    case 'p': replay_key_ = 'p'; break;  // these need the step: carried out in the next frame
    case '[': replay_key_ = '['; break;
    case ']': replay_key_ = ']'; break;
    default: break;
  }
}

LabLayout Lab::panels(const RunState& rs, float W, float H, float s, const LabFonts& fonts) {
  if (rs.generation() != seen_generation_) {
    // A new run: the views start over (fit, latest step, live playhead).
    seen_generation_ = rs.generation();
    last_fit_ = 0, hold_step_ = -1;
    follow_ = true;
    pick_step_ = -1;
    by_hand_seen_.reset();
    replay_.go_live();
    index_ = StepIndex{};
    if (rs.run() && !rs.run()->recorded_from.empty()) {
      // A recorded run: the panel shows its split (Apply trains that split live).
      const cli::TrainArgs& r = rs.run()->args;
      cli::TrainArgs a = edit_;
      a.dp = r.dp, a.ep = r.ep, a.pp = r.pp, a.vstages = r.vstages, a.microbatches = r.microbatches;
      a.schedule = r.schedule;
      // A trace keeps the split, not the batch: the panel's batch grows to the next one that
      // the split divides, or the fields opened on a pink line the viewer never caused.
      const int per = std::max(1, a.dp * a.microbatches);
      a.batch = std::max(per, (a.batch + per - 1) / per * per);
      set_args(a);
    }
  }
  drawn_.lanes_dirty.clear();
  const RunnerStatus st = runner_.status();
  viewing_ = rs.run() ? rs.run()->recorded_from : std::string();
  const float side = std::round(std::min(W * 0.34f, 360.0f * s));
  const float status_h = std::round(28.0f * s);
  const float bubbles_w = std::round(std::min(W * 0.22f, 300.0f * s));
  const float avail_h = H - status_h;
  // One rank stepped by hand needs room for its read-outs more than its one timeline lane does.
  const bool by_layer = rs.run() && rs.run()->by_layer;
  const float ranks_h = std::round(avail_h * (by_layer ? 0.6f : 0.44f));
  constexpr ImGuiWindowFlags kPanel = ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
                                      ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings |
                                      ImGuiWindowFlags_NoBringToFrontOnFocus;

  ImGui::SetNextWindowPos({0, 0});
  ImGui::SetNextWindowSize({side, avail_h});
  ImGui::PushStyleColor(ImGuiCol_WindowBg, kLabPanelBg);
  ImGui::Begin("##lab_side", nullptr, kPanel);
  ImGui::PopStyleColor();
  ImGui::PushTextWrapPos(0.0f);  // every line wraps at the content's edge (the scrollbar's left)
  config_panel(st, s, fonts);
  controls_panel(st, s, fonts);
  by_hand_panel(rs, st, fonts);  // under the buttons that step: in view on a small window
  status_panel(rs, st, fonts);
  files_panel(rs, fonts);
  full_size_panel(s, fonts);
  ImGui::PopTextWrapPos();
  ImGui::End();

  ImGui::SetNextWindowPos({side, ranks_h});
  ImGui::SetNextWindowSize({W - side - bubbles_w, avail_h - ranks_h});
  ImGui::PushStyleColor(ImGuiCol_WindowBg, kLabPanelBg);
  ImGui::Begin("##lab_timeline", nullptr, kPanel | ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  ImGui::PopStyleColor();
  // The replay moves on with the frame's time (the views below read the cursor).
  if (shown(rs)) replay_.advance(ImGui::GetIO().DeltaTime, step_end());
  bottom_pane(rs, s, fonts);
  ImGui::End();

  ImGui::SetNextWindowPos({W - bubbles_w, ranks_h});
  ImGui::SetNextWindowSize({bubbles_w, avail_h - ranks_h});
  ImGui::PushStyleColor(ImGuiCol_WindowBg, kLabPanelBg);
  ImGui::Begin("##lab_bubbles", nullptr, kPanel);
  ImGui::PopStyleColor();
  ImGui::PushTextWrapPos(0.0f);
  bubbles(rs, s, fonts);
  ImGui::PopTextWrapPos();
  ImGui::End();

  return {side, 0, W - side, ranks_h};
}

}  // namespace onegpu::app
