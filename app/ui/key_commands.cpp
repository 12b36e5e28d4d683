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
std::optional<Action> find(int key, int mods, bool lab) {
  const bool ctrl = (mods & GLFW_MOD_CONTROL) != 0;
  for (const KeyRow& r : story_keys()) {
    if (r.ctrl != ctrl) continue;
    if (std::find(r.glfw_keys.begin(), r.glfw_keys.end(), key) == r.glfw_keys.end()) continue;
    if (!lab) return r.action;
    // In the Lab, only the keys that leave it or change the window keep their story meaning.
    switch (r.action) {
      case Action::ToggleLab: case Action::ToggleSidebar: case Action::ToggleFullscreen: case Action::ScaleUp:
      case Action::ScaleDown: case Action::ScaleReset: case Action::Quit: case Action::ToggleHelp: case Action::SavePng:
        return r.action;
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}
}  // namespace

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
