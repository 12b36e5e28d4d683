#pragma once
// Sub-commands of `onegpu` that need no window (train, predict, sample, ...).
#include <string_view>
#include <vector>

namespace onegpu::cli {

struct Command {
  std::string_view name;
  std::string_view summary;  // one line for --help
  int (*run)(int argc, char** argv);  // argv[0] is the sub-command's name
};

// Every registered sub-command; app/main.cpp dispatches on argv[1].
const std::vector<Command>& commands();

}  // namespace onegpu::cli
