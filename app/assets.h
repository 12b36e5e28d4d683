#pragma once
// Finds the shader folder and the fonts: from the command line first, then beside the
// program, then the source tree (for runs from a build folder). Data files (assets/: presets,
// the corpus's word lists) are found by app/cli/asset_files.h.
#include <filesystem>
#include <string>

#include "app/options.h"
#include "render/renderer.h"

namespace onegpu::app {

struct Assets {
  render::AssetPaths scene;             // shaders + scene font
  std::filesystem::path ui_font;        // panels; empty: ImGui's built-in font
  std::filesystem::path ui_title_font;  // headings; may be empty
};

// Throws render::Error naming what is missing (trainer::Error for a missing or broken words
// file of the story corpus).
Assets find_assets(const Options& o);

}  // namespace onegpu::app
