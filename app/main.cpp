// onegpu: sub-commands (train, predict, ...) or the story window.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "app/cli/commands.h"
#ifdef ONEGPU_GUI
#include "app/app_main.h"
#endif

int main(int argc, char** argv) {
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
