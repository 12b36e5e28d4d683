#pragma once

namespace onegpu::app {

// The story app's entry: --help, --list-chapters, --headless renders, or the window.
int app_main(int argc, char** argv);

}  // namespace onegpu::app
