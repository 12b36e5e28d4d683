#include "app/cli/commands.h"

#include "app/cli/train_command.h"

namespace onegpu::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> list = {
      {"train", "train the tiny MoE model: --model story|story8|scale --steps N --batch B ...", &train_main},
      {"predict", "next-token distribution: --resume CKPT --prompt TEXT [--top K]", &predict_main},
      {"sample", "continue a prompt: --resume CKPT --prompt TEXT [--tokens N]", &sample_main},
  };
  return list;
}

}  // namespace onegpu::cli
