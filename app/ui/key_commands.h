#pragma once
// What each key does, defined once: the window maps presses through these tables and the
// in-app help (and the README's table) lists the same rows, so they cannot drift apart.
#include <optional>
#include <string>
#include <vector>

#include "app/navigator.h"

namespace onegpu::app {

struct KeyRow {
  const char* keys;  // as the help shows them
  const char* does;
  Action action;
  std::vector<int> glfw_keys;  // any of these presses it
  bool ctrl = false;           // with Ctrl held
};

// The story's keys (the chapters), in the order the help lists them.
const std::vector<KeyRow>& story_keys();

// The Lab's own keys, in the order the help lists them. `hint`: the status bar's short form
// (empty: not hinted there); `command`: what Lab::key receives.
struct LabKeyRow {
  const char* keys;
  const char* does;
  const char* hint;
  char command;
  std::vector<int> glfw_keys;
};
const std::vector<LabKeyRow>& lab_keys();
// How to leave the Lab: a story-level action (lab_action gives ToggleLab for its keys), named
// here once for the help overlay and the status bar. Its command is 0: not one of the Lab's own.
const LabKeyRow& lab_leave_key();

// One line of the keys overlay: a heading, or a key row with the presses that do it (none for
// the mouse's rows).
struct Press {
  int glfw_key;
  bool ctrl;
};
struct HelpLine {
  std::string keys, does;
  bool heading = false;
  std::vector<Press> presses;
};
// What the overlay lists. In the story: the story's keys, then the Lab's. In the Lab: its own
// keys and how to leave, then only the window's keys that keep their meaning there (the
// chapters' keys do nothing in the Lab or something else: M is a microbatch there).
std::vector<HelpLine> help_lines(bool lab);

// Every row of story_keys(), then of lab_keys() and lab_leave_key(), as `onegpu --help` lists
// them: a key column and what it does, a line a row.
std::string keys_help();

// The story action for one press, or none.
std::optional<Action> story_action(int key, int mods);
// With the Lab open: a story-level action (back to the story, list, full screen, size, quit).
std::optional<Action> lab_action(int key, int mods);
// With the Lab open: the Lab's own command key (' ', '.', 'm', 's', 'f', 'p', '[', ']'), or 0.
char lab_key(int key, int mods);

}  // namespace onegpu::app
