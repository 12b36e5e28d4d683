#include "app/ui/key_commands.h"

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstdio>

#include "app/lab/lab_tabs.h"

namespace onegpu::app {

const std::vector<KeyRow>& story_keys() {
  static const std::vector<KeyRow> rows = {
      {"Right, Space, Page Down", "next chapter", Action::Next, {GLFW_KEY_RIGHT, GLFW_KEY_SPACE, GLFW_KEY_PAGE_DOWN}},
      {"Left, Page Up", "previous chapter", Action::Previous, {GLFW_KEY_LEFT, GLFW_KEY_PAGE_UP}},
      {"Home", "first chapter", Action::First, {GLFW_KEY_HOME}},
      {"End", "last chapter", Action::Last, {GLFW_KEY_END}},
      {"Enter", "press the chapter's button", Action::PressButton, {GLFW_KEY_ENTER, GLFW_KEY_KP_ENTER}},
      {"R", "play the chapter again", Action::Replay, {GLFW_KEY_R}},
      {"B or .", "blank the screen (any key brings it back)", Action::Blank, {GLFW_KEY_B, GLFW_KEY_PERIOD}},
      {"H", "hide every panel: the picture alone", Action::ToggleClean, {GLFW_KEY_H}},
      {"M", "reduced motion: chapters open finished", Action::ToggleReducedMotion, {GLFW_KEY_M}},
      {"F1 or ?", "show the keys on screen", Action::ToggleHelp, {GLFW_KEY_F1, GLFW_KEY_SLASH}},
      {"Mouse wheel over the picture", "next / previous chapter", Action::WheelForward, {}},
      {"Tab", "show or hide the chapter list", Action::ToggleSidebar, {GLFW_KEY_TAB}},
      {"L", "the Lab: your own run", Action::ToggleLab, {GLFW_KEY_L}},
      {"F11", "full screen", Action::ToggleFullscreen, {GLFW_KEY_F11}},
      {"Ctrl+= / Ctrl+-", "larger / smaller text and panels", Action::ScaleUp, {GLFW_KEY_EQUAL, GLFW_KEY_KP_ADD}, true},
      {"", "", Action::ScaleDown, {GLFW_KEY_MINUS, GLFW_KEY_KP_SUBTRACT}, true},
      {"Ctrl+S", "save a PNG of the window (chapter or Lab)", Action::SavePng, {GLFW_KEY_S}, true},
      {"Ctrl+0", "default size", Action::ScaleReset, {GLFW_KEY_0, GLFW_KEY_KP_0}, true},
      {"Esc twice, or Ctrl+Q", "quit", Action::Escape, {GLFW_KEY_ESCAPE}},
      {"", "", Action::Quit, {GLFW_KEY_Q}, true},
  };
  return rows;
}

const std::vector<LabKeyRow>& lab_keys() {
  static const std::vector<LabKeyRow> rows = {
      {"Space", "run / pause", "space run/pause", ' ', {GLFW_KEY_SPACE}},
      {". (or O)", "step one op", ". op", '.', {GLFW_KEY_PERIOD, GLFW_KEY_O}},
      {"M", "one microbatch", "M microbatch", 'm', {GLFW_KEY_M}},
      {"S", "the rest of the step (or one whole step)", "S step", 's', {GLFW_KEY_S}},
      {"F", "fit the timeline, follow the run again", "F fit", 'f', {GLFW_KEY_F}},
      {"P", "replay the shown step / pause it", "P replay", 'p', {GLFW_KEY_P}},
      {"[ and ]", "the selected GPU's previous / next op", "[ ] op", '[', {GLFW_KEY_LEFT_BRACKET}},
      {"", "", "", ']', {GLFW_KEY_RIGHT_BRACKET}},
  };
  return rows;
}

const LabKeyRow& lab_leave_key() {
  static const LabKeyRow row = {"L or Esc", "back to the story", "L or Esc back", 0, {GLFW_KEY_L, GLFW_KEY_ESCAPE}};
  return row;
}

std::string keys_help() {
  std::string out = "Keys (F1 or ? shows them in the window):\n";
  auto row = [&](const char* keys, const char* does) {
    if (!*keys) return;  // a second binding of the row above
    char line[200];
    std::snprintf(line, sizeof line, "  %-30s %s\n", keys, does);
    out += line;
  };
  for (const KeyRow& r : story_keys()) row(r.keys, r.does);
  out += "In the Lab:\n";
  for (const LabKeyRow& r : lab_keys()) row(r.keys, r.does);
  row(lab_leave_key().keys, lab_leave_key().does);
  row("Mouse on the timeline", "the wheel zooms, a drag pans, a double-click fits, a click on the ruler sets the playhead");
  std::string tabs;
  for (const char* t : kLabTabNames) tabs += (tabs.empty() ? "" : ", ") + std::string(t);
  row("Tabs", tabs.c_str());
  return out;
}

namespace {
// The story actions a press keeps in the Lab: leaving it and what changes the window.
bool kept_in_lab(Action a) {
  switch (a) {
    case Action::ToggleLab: case Action::ToggleFullscreen: case Action::ScaleUp: case Action::ScaleDown:
    case Action::ScaleReset: case Action::Quit: case Action::ToggleHelp: case Action::SavePng:
      return true;
    default: return false;
  }
}

std::optional<Action> find(int key, int mods, bool lab) {
  const bool ctrl = (mods & GLFW_MOD_CONTROL) != 0;
  for (const KeyRow& r : story_keys()) {
    if (r.ctrl != ctrl) continue;
    if (std::find(r.glfw_keys.begin(), r.glfw_keys.end(), key) == r.glfw_keys.end()) continue;
    // In the Lab, only the keys that leave it or change the window keep their story meaning
    // (Tab's chapter list is not shown there, so it would change the story unseen).
    if (!lab || kept_in_lab(r.action)) return r.action;
    return std::nullopt;
  }
  return std::nullopt;
}
}  // namespace

std::vector<HelpLine> help_lines(bool lab) {
  std::vector<HelpLine> out;
  auto presses = [](const std::vector<int>& keys, bool ctrl) {
    std::vector<Press> p;
    for (int k : keys) p.push_back({k, ctrl});
    return p;
  };
  auto add_to_last = [&](const std::vector<Press>& p) { out.back().presses.insert(out.back().presses.end(), p.begin(), p.end()); };
  auto lab_rows = [&] {
    for (const LabKeyRow& r : lab_keys()) {
      if (*r.keys) out.push_back({r.keys, r.does, false, presses(r.glfw_keys, false)});
      else add_to_last(presses(r.glfw_keys, false));  // a second binding of the row above
    }
    const LabKeyRow& leave = lab_leave_key();
    out.push_back({leave.keys, leave.does, false, presses(leave.glfw_keys, false)});
  };
  auto story_rows = [&](bool only_kept) {
    bool listed = false;  // whether the row above was listed (a row with no keys is its second binding)
    for (const KeyRow& r : story_keys()) {
      // (L is listed with Esc above as the way back.)
      const bool shown = !only_kept || (kept_in_lab(r.action) && r.action != Action::ToggleLab);
      if (*r.keys && shown) out.push_back({r.keys, r.does, false, presses(r.glfw_keys, r.ctrl)});
      else if (!*r.keys && shown && listed) add_to_last(presses(r.glfw_keys, r.ctrl));
      if (*r.keys) listed = shown;
    }
  };
  if (!lab) {
    story_rows(false);
    out.push_back({"In the Lab", "", true, {}});
    lab_rows();
    return out;
  }
  lab_rows();
  out.push_back({"Mouse on the timeline", "wheel zooms, drag pans, double-click fits", false, {}});
  out.push_back({"Also in the Lab", "", true, {}});
  story_rows(true);
  // Esc leaves the Lab rather than quitting, so the quit row names Ctrl+Q alone.
  out.push_back({"Ctrl+Q", "quit", false, {{GLFW_KEY_Q, true}}});
  return out;
}

std::optional<Action> story_action(int key, int mods) { return find(key, mods, false); }

std::optional<Action> lab_action(int key, int mods) {
  if (!(mods & GLFW_MOD_CONTROL) && key == GLFW_KEY_ESCAPE) return Action::ToggleLab;  // Esc leaves the Lab
  return find(key, mods, true);
}

char lab_key(int key, int mods) {
  if (mods & GLFW_MOD_CONTROL) return 0;
  for (const LabKeyRow& r : lab_keys())
    if (std::find(r.glfw_keys.begin(), r.glfw_keys.end(), key) != r.glfw_keys.end()) return r.command;
  return 0;
}

}  // namespace onegpu::app
