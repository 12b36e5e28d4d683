#pragma once
#include "app/options.h"

namespace onegpu::app {

// Opens the story window; returns the process exit code.
int run_window(const Options& o, int chapter_index);

}  // namespace onegpu::app
