// The Lab's side panel: the configuration (checked by the same rule as `onegpu train`), the
// controls, the run's status, and what a step by hand just did.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <span>
#include <string>

#include <imgui.h>

#include "app/lab/lab.h"
#include "app/cli/run_preset.h"
#include "app/lab/lab_explain.h"
#include "app/lab/lab_flow.h"
#include "app/lab/lab_units.h"
#include "app/ui/imgui_colour.h"
#include "app/ui/key_commands.h"
#include "render/palette.h"

namespace onegpu::app {

namespace {

// The fields the configuration panel shows are the same (what a run of each would train).
bool same_run(const cli::TrainArgs& a, const cli::TrainArgs& b) {
  return a.model == b.model && a.dp == b.dp && a.ep == b.ep && a.pp == b.pp && a.vstages == b.vstages &&
         a.microbatches == b.microbatches && a.schedule == b.schedule && a.link == b.link && a.batch == b.batch &&
         a.seq == b.seq && a.workers == b.workers && a.seed == b.seed && a.zero == b.zero && a.corpus == b.corpus;
}

void heading(const char* s, const LabFonts& f) {
  ImGui::Spacing();
  ImGui::PushFont(f.small);
  ImGui::TextColored(im(render::palette::forward), "%s", s);
  ImGui::PopFont();
}

// A field `w` wide with its label on its right where both fit the panel, else the label on a
// line above it (a large text size in a small window). Returns the ImGui label to give it.
std::string labelled(const char* label, float w) {
  const float avail = ImGui::GetContentRegionAvail().x;
  if (w + ImGui::GetStyle().ItemInnerSpacing.x + text_w(label) <= avail) {
    ImGui::SetNextItemWidth(w);
    return label;
  }
  ImGui::TextUnformatted(label);
  ImGui::SetNextItemWidth(std::min(w, avail));
  return std::string("##") + label;
}

// An integer field of the configuration; true when it changed.
bool int_field(const char* label, int& v, int lo, int hi, float w) {
  const std::string id = labelled(label, w);
  int x = v;
  if (!ImGui::InputInt(id.c_str(), &x, 1, 4)) return false;
  v = std::clamp(x, lo, hi);
  return true;
}

}  // namespace

void Lab::config_panel(const RunnerStatus& st, float s, const LabFonts& fonts) {
  ImGui::PushFont(fonts.title);
  ImGui::TextUnformatted("Lab");
  ImGui::PopFont();
  ImGui::PushFont(fonts.small);
  ImGui::PushTextWrapPos(0.0f);
  words_dim("a real run, split as you choose: step it by hand or let it train");
  ImGui::PopTextWrapPos();
  ImGui::PopFont();

  ImGui::Spacing();
  ImGui::PushStyleColor(ImGuiCol_Text, im(render::palette::forward));
  ImGui::PushFont(fonts.small);
  // Open while nothing runs; folded away when a run starts, so the controls and the by-hand
  // read-outs are in view (a click opens it again); not while a refused preset's pink line is
  // there to read (a run that started meanwhile folded it away unread).
  const auto live = runner_.live();
  const std::uint64_t gen = live ? live->generation : 0;
  const std::uint64_t shown_gen = viewing_.empty() ? gen : ~1ull;
  if (shown_gen != config_generation_) {
    ImGui::SetNextItemOpen(shown_gen == 0 || !preset_error_.empty(), ImGuiCond_Always);
    config_generation_ = shown_gen;
  }
  // A preset just loaded (or refused) opens it: its fields, or its pink line, are the answer.
  if (config_open_request_) ImGui::SetNextItemOpen(true, ImGuiCond_Always);
  config_open_request_ = false;
  // The header's word, shorter where the panel is too narrow for it at this text size.
  const float arrow = ImGui::GetFontSize() + ImGui::GetStyle().FramePadding.x * 4.0f;
  const bool open = ImGui::CollapsingHeader(
      arrow + text_w("CONFIGURATION") <= ImGui::GetContentRegionAvail().x ? "CONFIGURATION###config" : "SETUP###config");
  ImGui::PopFont();
  ImGui::PopStyleColor();
  if (!open) {
    ImGui::PushFont(fonts.small);
    words_dim("%s · dp %d ep %d pp %d · %s · %d microbatch%s%s", edit_.model.c_str(), edit_.dp, edit_.ep, edit_.pp,
              edit_.schedule.c_str(), edit_.microbatches, edit_.microbatches > 1 ? "es" : "",
              edit_.zero ? " · ZeRO-1" : "");
    ImGui::PopFont();
  }
  bool changed = false;
  if (open) {
  preset_row(s, fonts);
  const float w = 104.0f * s;
  static const char* models[] = {"story", "story8", "scale"};
  int mi = (int)(std::find(models, models + 3, edit_.model) - models);
  if (ImGui::Combo(labelled("model", w).c_str(), &mi, models, 3)) {
    edit_.model = models[std::clamp(mi, 0, 2)];
    changed = true;
  }
  ImGui::PushID("split");
  changed |= int_field("dp · copies", edit_.dp, 1, 512, w);
  changed |= int_field("ep · expert group", edit_.ep, 1, 64, w);
  changed |= int_field("pp · stages", edit_.pp, 1, 64, w);
  changed |= int_field("vstages", edit_.vstages, 1, 8, w);
  changed |= int_field("microbatches", edit_.microbatches, 1, 64, w);
  static const char* schedules[] = {"gpipe", "1f1b", "interleaved", "zb1"};
  int si = (int)(std::find(schedules, schedules + 4, edit_.schedule) - schedules);
  if (ImGui::Combo(labelled("schedule", w).c_str(), &si, schedules, 4)) {
    edit_.schedule = schedules[std::clamp(si, 0, 3)];
    changed = true;
  }
  static const char* links[] = {"nvlink", "ib", "pcie"};
  int li = (int)(std::find(links, links + 3, edit_.link) - links);
  if (ImGui::Combo(labelled("link (modelled)", w).c_str(), &li, links, 3)) {
    edit_.link = links[std::clamp(li, 0, 2)];
    changed = true;
  }
  changed |= int_field("batch · texts", edit_.batch, 1, 4096, w);
  changed |= int_field("seq · tokens (0: model)", edit_.seq, 0, 4096, w);
  changed |= int_field("workers (0: all cores)", edit_.workers, 0, 64, w);
  int seed = (int)edit_.seed;
  if (int_field("seed", seed, 0, 1 << 30, w)) {
    edit_.seed = (std::uint64_t)seed;
    changed = true;
  }
  ImGui::PopID();
  }
  if (changed) {
    // The fields the user touched count as given: the picks of fill_defaults never override them.
    for (const char* f : {"--dp", "--ep", "--pp", "--vstages", "--microbatches", "--schedule", "--batch"})
      edit_.given.insert(f);
    edit_error_ = JobRunner::check(edit_);
  }
  if (!edit_error_.empty()) words_in(im(render::palette::backward), edit_error_.c_str());
  ImGui::BeginDisabled(!edit_error_.empty() || st.building);
  if (ImGui::Button(st.building ? "Building…" : "Apply", {104.0f * s, 0})) runner_.configure(edit_);
  ImGui::EndDisabled();
  ImGui::PushFont(fonts.small);
  char running[96] = "nothing running yet";
  const auto running_now = runner_.live();
  if (running_now)
    std::snprintf(running, sizeof running, "running: %s, %d GPU%s", running_now->args.model.c_str(), running_now->world(),
                  running_now->world() > 1 ? "s" : "");
  flow(text_w(running));
  words_dim("%s", running);
  // Fields changed since the run started (a preset picked, a count stepped) do nothing until
  // Apply: say so, or the run seen below reads as the one the fields describe (not while a
  // recorded run is shown: the fields are its split then).
  drawn_.config_unapplied = running_now && viewing_.empty() && !same_run(edit_, running_now->args);
  if (drawn_.config_unapplied) words_in(im(render::palette::forward), "changed: Apply runs it, from step 0");
  ImGui::PopFont();
  if (!st.error.empty() && st.error != edit_error_) words_in(im(render::palette::backward), st.error.c_str());
}

// A preset: the list of assets/runs, or a file typed in. Loading fills the fields above
// "Apply" (nothing runs until it is pressed); a bad file keeps them and says why in pink.
void Lab::preset_row(float s, const LabFonts& fonts) {
  const float w = 104.0f * s;
  if (ImGui::BeginCombo(labelled("preset", w).c_str(), preset_shown_.empty() ? "choose..." : preset_shown_.c_str())) {
    if (ImGui::IsWindowAppearing()) preset_names_ = cli::preset_names();  // files added since are listed
    for (const std::string& n : preset_names_)
      if (ImGui::Selectable(n.c_str(), n == preset_shown_)) load_preset(n);
    if (preset_names_.empty()) words_dim("none in %s", cli::presets_dir().string().c_str());
    ImGui::EndCombo();
  }
  const float bw = 52.0f * s;
  ImGui::SetNextItemWidth(std::max(std::min(w, ImGui::GetContentRegionAvail().x),
                                   ImGui::GetContentRegionAvail().x - bw - ImGui::GetStyle().ItemSpacing.x));
  const bool enter = ImGui::InputTextWithHint("##preset_file", "or a preset file (.json)", preset_path_,
                                              sizeof preset_path_, ImGuiInputTextFlags_EnterReturnsTrue);
  flow(bw);
  if ((ImGui::Button("Load", {bw, 0}) || enter) && preset_path_[0]) load_preset(preset_path_);
  if (preset_error_.empty() && preset_note_.empty()) return;
  ImGui::PushFont(fonts.small);
  if (!preset_error_.empty()) words_in(im(render::palette::backward), preset_error_.c_str());
  else words_dim("%s", preset_note_.c_str());
  ImGui::PopFont();
}

bool Lab::load_preset(const std::string& name_or_file) {
  config_open_request_ = true;
  try {
    const cli::RunPreset p = cli::load_run_preset(name_or_file);  // throws the one line
    set_args(lab_train_args(p.flags));
    preset_shown_ = p.name;
    preset_note_ = p.about.empty() ? "loaded; Apply runs it" : p.about + " (Apply runs it)";
    preset_error_.clear();
    return true;
  } catch (const std::exception& e) {
    preset_error_ = e.what();
    return false;
  }
}

void Lab::controls_panel(const RunnerStatus& st, float s, const LabFonts& fonts) {
  heading("CONTROLS", fonts);
  if (!viewing_.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    words_dim("Showing %s, a recorded run: nothing to run or step. Apply a configuration to train live.",
                        viewing_.c_str());
    ImGui::PopTextWrapPos();
    return;
  }
  const bool have = runner_.live() != nullptr && !st.building;
  const float avail = ImGui::GetContentRegionAvail().x;
  float bw = std::floor((avail - ImGui::GetStyle().ItemSpacing.x) * 0.5f);
  // Two buttons a row while their words fit half the panel; else one a row, the panel's width.
  const bool pairs = std::max({button_w("Pause"), button_w("Reset"), button_w("Microbatch"), button_w("One step")}) <= bw;
  if (!pairs) bw = avail;
  ImGui::BeginDisabled(!have);
  if (st.mode == RunMode::Paused) {
    if (ImGui::Button("Run", {bw, 0})) runner_.play(paced_ ? pace_ : 0);
  } else {
    if (ImGui::Button("Pause", {bw, 0})) runner_.pause();
  }
  if (pairs) ImGui::SameLine();
  if (ImGui::Button("Reset", {bw, 0})) runner_.reset();
  if (ImGui::Button("Step one op", {avail, 0})) runner_.step_op();
  if (ImGui::Button("Microbatch", {bw, 0})) runner_.step_microbatch();
  if (pairs) ImGui::SameLine();
  if (ImGui::Button("One step", {bw, 0})) runner_.step_whole();
  ImGui::EndDisabled();
  if (ImGui::Checkbox("slow:", &paced_) && st.mode != RunMode::Paused) runner_.play(paced_ ? pace_ : 0);
  // The pace slider beside it, narrower where the row is short, on a row of its own if need be.
  // Its value stands beside it with the unit: inside, the slider's grab covered a digit.
  const float label = ImGui::GetStyle().ItemInnerSpacing.x + text_w("60.0 ops/s");
  const float room = content_right() - ImGui::GetItemRectMax().x - ImGui::GetStyle().ItemSpacing.x - label;
  const float slider = std::min(120.0f * s, room >= 60.0f * s ? room : avail - label);
  flow(slider + label);
  ImGui::SetNextItemWidth(slider);
  ImGui::BeginDisabled(!paced_);
  if (ImGui::SliderFloat("##pace", &pace_, 0.5f, 60.0f, "", ImGuiSliderFlags_Logarithmic) && st.mode == RunMode::Paced)
    runner_.play(pace_);
  char value[32];
  std::snprintf(value, sizeof value, "%.1f ops/s", pace_);
  ImGui::SameLine(0.0f, ImGui::GetStyle().ItemInnerSpacing.x);
  ImGui::TextUnformatted(value);
  ImGui::EndDisabled();
  ImGui::PushTextWrapPos(0.0f);
  std::string keys = "keys:";  // the stepping keys' hints, from the table the window maps presses through
  for (std::size_t i = 0; i < 4 && i < lab_keys().size(); ++i) keys += (i ? " · " : " ") + std::string(lab_keys()[i].hint);
  words_dim("%s", keys.c_str());
  ImGui::PopTextWrapPos();
}

void Lab::status_panel(const RunState& rs, const RunnerStatus& st, const LabFonts& fonts) {
  heading("STATUS", fonts);
  const char* mode = st.building ? "building" : st.mode == RunMode::Free ? "running" : st.mode == RunMode::Paced ? "running slowly" : "paused";
  const RunStep* last = rs.last_complete();
  if (!viewing_.empty()) words("recorded · %zu step%s", rs.history().size(), rs.history().size() == 1 ? "" : "s");
  else if (st.in_step) words("%s · step %d under way", mode, st.steps_done + 1);
  else words("%s · %d step%s done", mode, st.steps_done, st.steps_done == 1 ? "" : "s");
  if (last && std::isnan(last->loss)) {
    ImGui::PushTextWrapPos(0.0f);
    words_dim("a trace keeps the ops' times only: no loss, memory or tokens/s");
    ImGui::PopTextWrapPos();
  } else if (last) {
    words("loss %.4f   grad norm %.3f", last->loss, last->grad_norm);
    if (last->by_hand) {
      words_dim("stepped by hand: its wall time holds your pauses, so no tokens/s");
      words_dim("step: %.2f ms virtual", last->virtual_s * 1e3);
    } else {
      words("%.0f tokens/s", last->tokens_per_s);
      words_dim("step: %.1f ms wall · %.2f ms virtual", last->wall_s * 1e3, last->virtual_s * 1e3);
    }
  } else {
    words_dim("no step finished yet");
  }
  // The experts: how evenly the routers spread the tokens, and how many crossed GPUs.
  if (last && !last->router.empty() && rs.run()) {
    const int E = rs.run()->model.n_experts, L = rs.run()->model.n_layers;
    std::int64_t routed = 0, busiest = 0;
    int bl = 0, be = 0;
    for (int l = 0; l < L; ++l)
      for (int e = 0; e < E; ++e) {
        const std::int64_t n = last->router[(std::size_t)(l * E + e)];
        routed += n;
        if (n > busiest) busiest = n, bl = l, be = e;
      }
    if (routed > 0) {
      const double mean = (double)routed / (double)(L * E);
      ImGui::PushFont(fonts.small);
      ImGui::PushTextWrapPos(0.0f);
      words_dim("busiest expert: layer %d, expert %d, %lld token rows (%.1f× the mean)", bl + 1, be + 1,
                          (long long)busiest, busiest / mean);
      std::int64_t crossed = 0;
      for (const TrafficRow& t : last->traffic) crossed += t.rows;
      if (rs.run()->config().ep > 1)
        words_dim("all-to-all: %lld of %lld rows went to another GPU (%.0f%%)", (long long)crossed,
                            (long long)routed, 100.0 * (double)crossed / (double)routed);
      ImGui::PopTextWrapPos();
      ImGui::PopFont();
    }
  }
  const std::uint64_t drops = rs.dropped();
  ImGui::PushFont(fonts.small);
  if (drops > 0)
    words_coloured(im(render::palette::backward), "events: ring %.0f%% full · %llu lost", 100.0 * rs.ring_fill(),
                   (unsigned long long)drops);
  else
    words_dim("events: ring %.0f%% full · none lost", 100.0 * rs.ring_fill());
  if (!st.job.empty()) words_dim("also running: %s", st.job.c_str());
  ImGui::PopFont();
}

void Lab::by_hand_panel(const RunState& rs, const RunnerStatus& st, const LabFonts& fonts) {
  const LiveRun* run = rs.run();
  drawn_.by_hand_in_view = false;
  if (!run || !viewing_.empty()) return;
  const float top = ImGui::GetCursorScreenPos().y;
  heading("BY HAND", fonts);
  // Running at full speed the next op changes every frame: nothing to read, and redrawn for
  // nothing. Paused or slowed down, it says what comes next and what just ran.
  if (st.mode == RunMode::Free) {
    words_dim("Pause (Space) or tick \"slow\" to follow it op by op.");
    return;
  }
  ImGui::PushTextWrapPos(0.0f);
  const trainer::Plan& plan = run->plan_of(st.in_step ? st.steps_done : st.steps_done);
  if (st.in_step && st.next_op >= 0 && (std::size_t)st.next_op < plan.ops.size()) {
    const trainer::Op& op = plan.op((std::uint32_t)st.next_op);
    ImGui::TextColored(im(render::palette::text_dim), "next:");
    ImGui::SameLine();
    ImGui::TextUnformatted(op_title(op).c_str());
    ImGui::PushFont(fonts.small);
    words_dim("%s", op_explanation(op, plan).c_str());
    ImGui::PopFont();
  } else if (!st.in_step) {
    words_dim("\"Step one op\" begins step %d with its first op.", st.steps_done + 1);
  }
  // The op that ran last (by hand: the one just run). The ops arrive lane by lane, so the last
  // to arrive is not the last to end when two workers ran the step: take the latest end.
  const RunStep* cur = rs.latest();
  if (cur && !cur->ops.empty()) {
    const OpSpan& o = *std::max_element(cur->ops.begin(), cur->ops.end(),
                                        [](const OpSpan& a, const OpSpan& b) { return a.wend < b.wend; });
    const trainer::Plan& p = run->plan_of(cur->step);
    if (o.id < p.ops.size()) {
      ImGui::TextColored(im(render::palette::text_dim), "just ran:");
      ImGui::SameLine();
      ImGui::TextUnformatted(op_title(p.op(o.id)).c_str());
      ImGui::PushFont(fonts.small);
      words_dim("measured %s · virtual %s to %s%s", fmt_time(o.measured_s).c_str(), fmt_time(o.vbegin).c_str(),
                fmt_time(o.vend).c_str(), o.bytes > 0 ? (" · " + fmt_bytes((double)o.bytes)).c_str() : "");
      ImGui::PopFont();
    }
  }
  ImGui::PopTextWrapPos();
  // A small window with large text puts this section below the panel's fold, under the
  // buttons that step: when a press (or a pause) moves the run on, scroll it into view, once
  // a press, so that a learner who scrolls away is left there. Not on the first look at a run.
  const float bottom = ImGui::GetCursorScreenPos().y;
  const float win_top = ImGui::GetWindowPos().y, win_bottom = win_top + ImGui::GetWindowHeight();
  const float pad = ImGui::GetStyle().WindowPadding.y;
  // In view: whole, or (taller than the panel at large text) from its heading down.
  drawn_.by_hand_in_view = top >= win_top - 0.5f && (bottom <= win_bottom + 0.5f || top <= win_top + pad + 0.5f);
  const auto mark = std::make_tuple(st.steps_done, st.in_step, st.next_op);
  if (by_hand_seen_ && *by_hand_seen_ != mark && !drawn_.by_hand_in_view)
    ImGui::SetScrollY(ImGui::GetScrollY() + (top - win_top) - pad);
  by_hand_seen_ = mark;

  // One rank, layer by layer: what each piece produced is drawn beside the chip (lab_readout.cpp).
}

}  // namespace onegpu::app
