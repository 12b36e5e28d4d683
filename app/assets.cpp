#include "app/assets.h"

#include <cstdlib>
#include <vector>

#include "app/cli/asset_files.h"
#include "render/error.h"

namespace onegpu::app {

namespace fs = std::filesystem;

namespace {

fs::path exe_dir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : p.parent_path();
}

fs::path first_existing(const std::vector<fs::path>& candidates) {
  for (const auto& p : candidates)
    if (!p.empty() && fs::is_regular_file(p)) return p;
  return {};
}

const std::vector<fs::path> kRegular = {
    "/usr/share/fonts/opentype/inter/Inter-Regular.otf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
};
const std::vector<fs::path> kTitle = {
    "/usr/share/fonts/opentype/inter/Inter-SemiBold.otf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
};

}  // namespace

Assets find_assets(const Options& o) {
  // The story the chapters and the Lab train on needs the corpus's word lists (assets/corpus):
  // a missing or broken file is one line (trainer::Error) before any window opens.
  (void)cli::story_words();
  Assets a;
  if (!o.shader_dir.empty()) {
    a.scene.shader_dir = o.shader_dir;
  } else if (const char* env = std::getenv("ONEGPU_SHADERS"); env && *env) {
    a.scene.shader_dir = env;
  } else if (fs::is_directory(exe_dir() / "shaders")) {
    a.scene.shader_dir = exe_dir() / "shaders";
  } else {
#ifdef ONEGPU_SOURCE_DIR
    a.scene.shader_dir = fs::path(ONEGPU_SOURCE_DIR) / "shaders";
#else
    a.scene.shader_dir = "shaders";
#endif
  }
  // Missing shader files are reported by name when they are loaded.

  if (!o.font.empty()) {
    if (!fs::is_regular_file(o.font)) throw render::Error("font file not found: " + o.font);
    a.scene.font = o.font;
    a.ui_font = o.font;
    a.ui_title_font = o.font;
    return a;
  }
  a.scene.font = first_existing(kTitle);  // the scene's labels read best a little heavier
  if (a.scene.font.empty()) a.scene.font = first_existing(kRegular);
  if (a.scene.font.empty())
    throw render::Error("font file not found: looked for " + kRegular[0].string() + " and " + kRegular[1].string() +
                        " (install fonts-inter, or pass --font FILE)");
  a.ui_font = first_existing(kRegular);
  a.ui_title_font = first_existing(kTitle);
  return a;
}

}  // namespace onegpu::app
