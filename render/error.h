#pragma once
#include <stdexcept>

namespace onegpu::render {

// Thrown for missing or broken assets (shader or font files) and GL set-up failures;
// the app prints what() as one line and exits non-zero.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace onegpu::render
