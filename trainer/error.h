#pragma once
// The one error type the trainer throws for bad input (config, corpus, checkpoint, ...).
// Callers print what() as a single line and exit non-zero; nothing else is needed.
#include <stdexcept>
#include <string>

namespace onegpu::trainer {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace onegpu::trainer
