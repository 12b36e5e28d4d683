#include "app/cli/commands.h"

namespace onegpu::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> list = {
      // Trainer sub-commands are added here as they land (train, predict, sample).
  };
  return list;
}

}  // namespace onegpu::cli
