// onegpu: sub-commands (train, predict, ...) or the story window.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "app/cli/commands.h"
#include "trainer/io/text.h"
#ifdef ONEGPU_GUI
#include "app/app_main.h"
#endif

namespace {

int run(int argc, char** argv) {
  if (argc > 1) {
#ifdef ONEGPU_GUI
    // `train ... --watch` trains in the Lab's window instead of the terminal.
    if (std::string_view(argv[1]) == "train")
      for (int i = 2; i < argc; ++i)
        if (std::string_view(argv[i]) == "--watch") return onegpu::app::app_main(argc, argv);
#endif
    for (const auto& c : onegpu::cli::commands()) {
      if (c.name == std::string_view(argv[1])) return c.run(argc - 1, argv + 1);
    }
    // A word that is not an option is a mistyped command ("trian"): name the nearest one.
    const std::string_view w = argv[1];
    if (!w.empty() && w[0] != '-') {
      std::string best;
      int best_d = 3;  // suggest only within two edits
      for (const auto& c : onegpu::cli::commands()) {
        const int d = onegpu::trainer::text::edit_distance(w, c.name);
        if (d < best_d) best_d = d, best = std::string(c.name);
      }
      std::string names;
      for (const auto& c : onegpu::cli::commands()) names += (names.empty() ? "" : ", ") + std::string(c.name);
      if (!best.empty()) {
        std::fprintf(stderr, "onegpu: unknown command '%s'; did you mean 'onegpu %s'? (commands: %s)\n",
                     onegpu::trainer::text::printable(w).c_str(), best.c_str(), names.c_str());
        return 2;
      }
    }
  }
#ifdef ONEGPU_GUI
  return onegpu::app::app_main(argc, argv);
#else
  std::fprintf(stderr, "onegpu: built without the app (ONEGPU_BUILD_APP=OFF); sub-commands:\n");
  for (const auto& c : onegpu::cli::commands())
    std::fprintf(stderr, "  %-10s %s\n", std::string(c.name).c_str(), std::string(c.summary).c_str());
  return 2;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  // Whatever a command leaves uncaught is still one line and exit status 2, never an abort.
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "onegpu: error: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onegpu: %s\n", onegpu::trainer::text::printable(e.what()).c_str());
  }
  return 2;
}
