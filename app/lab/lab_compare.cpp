// The Lab's compare tab: "branch this step". The shown step of the live run is run again under
// another split (the job runner replays the run under it from step 1 with the same seed and
// data, so the branch step sees the same batch), and the two steps are drawn one above the
// other on one time scale, with each one's bubble, step time, memory per GPU and bytes sent,
// and whether the losses agree bit for bit (or how far apart they are).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <imgui.h>

#include "app/lab/lab.h"
#include "app/lab/lab_flow.h"
#include "app/lab/lab_explain.h"
#include "app/live/comm_ledger.h"
#include "app/ui/imgui_colour.h"
#include "render/palette.h"

namespace onegpu::app {

namespace {

std::string split_name(const cli::TrainArgs& a) {
  char b[128];
  std::snprintf(b, sizeof b, "dp %d · ep %d · pp %d%s · %s · %d microbatch%s", a.dp, a.ep, a.pp,
                a.vstages > 1 ? (" × " + std::to_string(a.vstages)).c_str() : "", a.schedule.c_str(), a.microbatches,
                a.microbatches == 1 ? "" : "es");
  return b;
}

// One step's lanes (a rank each, or a stage each past 64 ranks) from x0 at time 0 to x0 + w
// at time `scale_end`; returns where the step ends.
float lanes(ImDrawList* dl, ImVec2 p, float w, float h, const RunStep& s, const trainer::Plan& plan, double scale_end,
            const LabFonts& fonts, float sc) {
  const int world = plan.world();
  const bool folded = world > 64;
  const int n = folded ? plan.config.pp : world;
  const float label_w = fonts.small->FontSize * 4.0f, lh = h / (float)n;
  const float x0 = p.x + label_w, x1 = p.x + w;
  auto X = [&](double t) { return x0 + (float)(t / scale_end) * (x1 - x0); };
  for (int l = 0; l < n; ++l) {
    const float y = p.y + lh * (float)l;
    if (l % 2 == 1) dl->AddRectFilled({x0, y}, {x1, y + lh}, col(render::palette::text, 0.025f));
    if (lh >= fonts.small->FontSize * 0.9f) {
      char name[24];
      std::snprintf(name, sizeof name, folded ? "stage %d" : "GPU %d", l + 1);
      dl->AddText(fonts.small, fonts.small->FontSize, {p.x, y + (lh - fonts.small->FontSize) * 0.5f},
                  col(render::palette::text_faint), name);
    }
  }
  double end = 0;
  const float pad = std::max(0.5f, lh * 0.12f);
  for (const OpSpan& o : s.ops) {
    end = std::max(end, o.vend);
    const int lane = folded ? (o.rank >= 0 && o.rank < world ? plan.layout.coord(o.rank).stage : 0) : o.rank;
    if (lane < 0 || lane >= n) continue;
    const float y = p.y + lh * (float)lane;
    const float a = X(o.vbegin), b = std::max(X(o.vend), a + 1.0f);
    dl->AddRectFilled({a, y + pad}, {b, y + lh - pad}, col(kind_colour(o.kind)), lh > 10 && b - a > 16 ? 2.0f * sc : 0.0f);
  }
  dl->AddLine({X(end), p.y - 2 * sc}, {X(end), p.y + h + 2 * sc}, col(render::palette::focus, 0.8f), 1.5f * sc);
  return X(end);
}

struct Figures {
  double end = 0, loss = 0, bubble = 0, textbook = 0, sent = 0, mem_max = 0, mem_min = 0;
};

Figures figures(const RunStep& s, const trainer::Plan& plan) {
  Figures f;
  for (const OpSpan& o : s.ops) f.end = std::max(f.end, o.vend);
  f.loss = s.loss;
  f.bubble = s.bubble;
  f.textbook = s.textbook;
  f.sent = comm_ledger(plan, s).measured;
  bool first = true;
  for (const RankMemory& m : s.memory) {
    double peak = 0;
    for (int c = 0; c < kMemCategories; ++c) peak += (double)(c == 3 ? m.peak[c] : m.current[c]);
    f.mem_max = std::max(f.mem_max, peak);
    f.mem_min = first ? peak : std::min(f.mem_min, peak);
    first = false;
  }
  return f;
}

std::string mb(double b) {
  char s[32];
  std::snprintf(s, sizeof s, b >= 1e9 ? "%.2f GB" : "%.2f MB", b >= 1e9 ? b / 1e9 : b / 1e6);
  return s;
}

}  // namespace

void Lab::compare(const RunState& rs, float s, const LabFonts& fonts) {
  drawn_.compared = false;
  const LiveRun* run = rs.run();
  const RunStep* rec = shown_counted(rs);  // a step under way cannot be branched: the last finished
  if (!run || !viewing_.empty()) {
    words_dim("Compare branches a step of a live run: apply a configuration and run a step first.");
    return;
  }
  if (!compare_init_) {
    compare_ = run->args;
    compare_.schedule = run->args.schedule == "gpipe" ? "1f1b" : "gpipe";  // the classic question first
    compare_init_ = true;
  }
  // The other split.
  ImGui::PushFont(fonts.small);
  ImGui::TextColored({0.96f, 0.65f, 0.14f, 1}, "COMPARE");
  ImGui::SameLine();
  words_dim("run the shown step again under another split (same weights, batch and seed):");
  const float w = 86.0f * s;
  auto field = [&](const char* label, int& v, int hi) {
    // On this row where it fits, else the next (lab_flow.h): with text scaled up for a projector
    // the row ran past the pane's edge and hid the Branch button.
    flow(text_w(label) + 3.0f * s + w);
    ImGui::AlignTextToFramePadding();  // level with its field where it starts a line
    ImGui::TextUnformatted(label);  // the name before its field: "dp [2]"
    ImGui::SameLine(0, 3.0f * s);
    ImGui::SetNextItemWidth(w);
    ImGui::PushID(label);
    int x = v;
    if (ImGui::InputInt("##v", &x, 1, 1)) v = std::clamp(x, 1, hi);
    ImGui::PopID();
  };
  static const char* schedules[] = {"gpipe", "1f1b", "interleaved", "zb1"};
  int si = (int)(std::find(schedules, schedules + 4, compare_.schedule) - schedules);
  ImGui::SetNextItemWidth(110.0f * s);
  if (ImGui::Combo("##cmp_schedule", &si, schedules, 4)) compare_.schedule = schedules[std::clamp(si, 0, 3)];
  field("dp", compare_.dp, 512);
  field("ep", compare_.ep, 64);
  field("pp", compare_.pp, 64);
  field("vstages", compare_.vstages, 8);
  field("microbatches", compare_.microbatches, 64);
  cli::TrainArgs other = run->args;
  other.dp = compare_.dp, other.ep = compare_.ep, other.pp = compare_.pp, other.vstages = compare_.vstages;
  other.microbatches = compare_.microbatches, other.schedule = compare_.schedule;
  const std::string why = JobRunner::check(other);
  const RunnerStatus st = runner_.status();
  // While the run trains, the button pauses it first and says so: the branch runs on the
  // runner's thread (the live run would stop meanwhile without a word), and a step trained on
  // past leaves the steps kept whole before the comparison could show it.
  const bool training = st.mode != RunMode::Paused;
  const bool can = why.empty() && rec && rec->complete && st.job.empty() && !st.building;
  char label[48];
  // One ID whatever the words: while the run trains the step in them changes from frame to frame,
  // and a press that began on one label and ended on another was no click.
  std::snprintf(label, sizeof label, training ? "Pause and branch step %d###branch" : "Branch step %d###branch",
                rec ? rec->step + 1 : 0);
  drawn_.compare_pauses_first = training;
  flow(button_w(label));
  drawn_.compare_branch_step = rec ? rec->step : -1;
  drawn_.compare_can_cancel = false;
  drawn_.compare_can_branch = can;
  ImGui::BeginDisabled(!can);
  if (ImGui::Button(label)) {
    if (training) runner_.pause();  // carried out first: the commands run in order
    runner_.branch(other, rec->step);
  }
  drawn_.compare_branch = {{ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y}, {ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y}};
  drawn_.compare_right = content_right();
  ImGui::EndDisabled();
  if (!why.empty()) ImGui::TextColored({0.94f, 0.42f, 0.6f, 1}, "%s", why.c_str());
  else if (!st.job.empty()) {
    // A branch far from a kept state (from the seed, after a new configuration) trains many steps,
    // with the run held. The button goes first, where the progress words growing cannot move it.
    drawn_.compare_can_cancel = st.job.rfind("branching", 0) == 0;
    if (drawn_.compare_can_cancel) {
      if (ImGui::SmallButton("Cancel")) runner_.cancel_branch();
      ImGui::SameLine();
    }
    ImGui::TextDisabled("%s …", st.job.c_str());
  }
  else if (!st.error.empty() && st.error.rfind("branch", 0) == 0) ImGui::TextColored({0.94f, 0.42f, 0.6f, 1}, "%s", st.error.c_str());
  else if (training) words_dim("The run pauses for the branch and stays paused: Space trains on.");
  else if (rec && rec->complete && rec->step > 0) {
    const int first = branch_first_step(st.kept_states, rec->step);
    if (first == rec->step)
      words_dim("The branch runs step %d under its split from the live run's state before it, then compares the two.",
                rec->step + 1);
    else if (first > 0)
      words_dim("The branch starts from the live run's state after step %d, trains steps %d to %d under its split, then "
                "compares step %d.", first, first + 1, rec->step + 1, rec->step + 1);
    else
      words_dim("The branch trains steps 1 to %d again under its split, then compares step %d.", rec->step + 1,
                rec->step + 1);
  }
  ImGui::PopFont();

  const RunStep* a = branch_ && branch_rs_ && branch_->live_generation == run->generation ? rs.find(branch_->step) : nullptr;
  const RunStep* b = a ? branch_rs_->find(branch_->step) : nullptr;
  if (!a || !b || !branch_rs_->run()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled(a || !branch_ ? "Pick a split and press Branch: the two steps appear here one above the other, on one time scale."
                                      : "The branched step is no longer among the last steps kept: branch again.");
    ImGui::PopTextWrapPos();
    return;
  }
  const LiveRun& other_run = *branch_rs_->run();
  const trainer::Plan& pa = run->plan_of(a->step);
  const trainer::Plan& pb = other_run.plan_of(b->step);
  const Figures fa = figures(*a, pa), fb = figures(*b, pb);
  const double scale_end = std::max(fa.end, fb.end) * 1.02;

  // The verdict first: do the two splits compute the same thing?
  ImGui::PushFont(fonts.small);
  const bool same_loss = a->loss == b->loss;
  const double rel = std::fabs(a->loss - b->loss) / std::max(1e-30, std::fabs(a->loss));
  // The live weights the step began from: the step before's fingerprint (its line in the
  // history once it left the steps kept whole).
  std::uint64_t before = 0;
  if (const RunStep* p = a->step > 0 ? rs.find(a->step - 1) : nullptr) before = p->weights_fingerprint;
  else if (a->step > 0)
    for (auto it = rs.history().rbegin(); it != rs.history().rend() && it->step >= a->step - 1; ++it)
      if (it->step == a->step - 1) before = it->weights_fingerprint;
  char verdict[256];
  if (same_loss)
    std::snprintf(verdict, sizeof verdict, "step %d: losses equal bit for bit (%.6f)", a->step + 1, a->loss);
  else
    std::snprintf(verdict, sizeof verdict, "step %d: losses %.6f and %.6f, relative difference %.2e", a->step + 1, a->loss,
                  b->loss, rel);
  ImGui::TextColored(same_loss ? ImVec4{0.55f, 0.85f, 0.55f, 1} : ImVec4{0.96f, 0.65f, 0.14f, 1}, "%s", verdict);
  // Where they began (a big run's steps carry no fingerprint, it costs more than the step: then
  // what the branch trained is said).
  drawn_.compare_began = compare_began_words(a->step, before, branch_->weights_before, branch_->first);
  if (!drawn_.compare_began.empty()) {
    ImGui::SameLine();
    words_dim("%s", drawn_.compare_began.c_str());
  }
  // A run's first step pays once for memory touched for the first time and pools filled, and the
  // branch re-runs it in a warmed-up process: its times say little about the two splits.
  drawn_.compare_first_step_note = a->step == 0;
  if (a->step == 0)
    words_coloured(ImVec4{render::palette::forward.r, render::palette::forward.g, render::palette::forward.b, 1.0f}, "%s",
                   "Step 1 carries one-time costs (memory touched for the first time): compare times on a later step.");
  ImGui::PopFont();

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float fs = fonts.small->FontSize, head = fs * 1.3f, gap = fs * 0.6f;
  const int na = pa.world() > 64 ? pa.config.pp : pa.world(), nb = pb.world() > 64 ? pb.config.pp : pb.world();
  // The lanes share the height by how many each has (each at least a few pixels).
  const float lanes_h = std::max(20.0f, avail.y - 2 * head - gap - 4 * s);
  const float ha = lanes_h * (float)na / (float)(na + nb), hb = lanes_h - ha;
  auto block = [&](int i, const char* who, const cli::TrainArgs& args, const RunStep& st, const trainer::Plan& plan,
                   const Figures& f, float y, float h) {
    char line[320];
    std::snprintf(line, sizeof line, "%s  %s  ·  step %.2f ms  ·  bubble %.1f%% (textbook %.1f%%)  ·  memory per GPU %.2f–%s  ·  sent %s",
                  who, split_name(args).c_str(), f.end * 1e3, 100 * f.bubble, 100 * f.textbook,
                  f.mem_max >= 1e9 ? f.mem_min / 1e9 : f.mem_min / 1e6, mb(f.mem_max).c_str(), mb(f.sent).c_str());
    dl->AddText(fonts.small, fs, {p.x, y}, col(i == 0 ? render::palette::text : render::palette::lit), line);
    drawn_.compare_x1[i] = lanes(dl, {p.x, y + head}, avail.x - 6 * s, h, st, plan, scale_end, fonts, s);
    drawn_.compare_loss[i] = st.loss;
    drawn_.compare_bubble[i] = f.bubble;
    drawn_.compare_end[i] = f.end;
    drawn_.compare_lanes[i] = plan.world() > 64 ? plan.config.pp : plan.world();
  };
  block(0, "this run", run->args, *a, pa, fa, p.y, ha);
  block(1, "branch", other_run.args, *b, pb, fb, p.y + head + ha + gap, hb);
  drawn_.compared = true;
  ImGui::Dummy(avail);
}

}  // namespace onegpu::app
