#include "app/presenter/notes.h"
#include "app/app_main.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "app/cli/train_command.h"
#include "app/frame_memory.h"
#include "app/live/job_runner.h"
#include "app/live/trace_run.h"
#include "trainer/error.h"
#include "app/headless.h"
#include "app/options.h"
#include "app/story.h"
#include "app/window.h"
#include "render/error.h"

namespace onegpu::app {

int app_main(int argc, char** argv) {
  keep_frame_memory();
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  // `onegpu lab ...` is the window's --lab; `onegpu train ... --watch` is a Lab that starts running.
  if (!args.empty() && args[0] == "lab") args[0] = "--lab";
  if (!args.empty() && args[0] == "view") {
    if (args.size() < 2 || args[1].rfind("--", 0) == 0) {
      std::fprintf(stderr, "onegpu view: give a trace file, for example: onegpu view scale.json\n");
      return 2;
    }
    args[0] = "--view";
  }
  if (!args.empty() && args[0] == "train") {
    args[0] = "--lab";
    args.erase(std::remove(args.begin(), args.end(), std::string("--watch")), args.end());
    args.push_back("--play");
  }
  try {
    o = parse_options(args);
  } catch (const OptionsError& e) {
    std::fprintf(stderr, "onegpu: %s\n", e.what());
    return 2;
  }
  if (!o.view.empty() && !o.help) {
    // Read before any window opens: a bad file is one line and exit 2.
    try {
      load_trace_run(o.view);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "onegpu: error: %s\n", e.what());
      return 2;
    }
  }
  if (o.lab && !o.help) {
    // The split is checked as `onegpu train` checks it: one line and exit 2, before any window.
    try {
      cli::TrainArgs a = cli::parse_train_args(o.lab_args);
      const std::string note = cli::fill_defaults(a);
      const std::string why = JobRunner::check(a);
      if (!why.empty()) throw trainer::Error(why);
      if (!note.empty()) std::fprintf(stderr, "onegpu lab: %s\n", note.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "onegpu lab: error: %s\n", e.what());
      return 2;
    }
  }
  if (o.help) {
    std::fputs(usage().c_str(), stdout);
    if (!cli::commands().empty()) {
      std::puts("\nCommands:");
      for (const auto& c : cli::commands())
        std::printf("  %-10s %s\n", std::string(c.name).c_str(), std::string(c.summary).c_str());
    }
    return 0;
  }
  if (o.version) {
    std::puts("onegpu 0.1.0");
    return 0;
  }
  if (o.notes) {
    std::fputs(notes_markdown().c_str(), stdout);
    return 0;
  }
  if (o.list_chapters) {
    int i = 1;
    for (const auto& c : story())
      std::printf("%2d  %-15s %-22s %s\n", i++, std::string(c.id).c_str(), std::string(c.part).c_str(),
                  std::string(c.title).c_str());
    return 0;
  }
  int index = 0;
  if (!o.chapter.empty() && o.chapter != "all") {  // all: --video plays every chapter
    index = find_chapter(o.chapter);
    if (index < 0) {
      std::string ids;
      for (const auto& c : story()) ids += (ids.empty() ? "" : ", ") + std::string(c.id);
      std::fprintf(stderr, "onegpu: unknown chapter '%s'; valid ids: %s\n", o.chapter.c_str(), ids.c_str());
      return 2;
    }
  }
  try {
    return o.headless ? run_headless(o, index) : run_window(o, index);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onegpu: %s\n", e.what());
    return 2;
  }
}

}  // namespace onegpu::app
