#include "shots.h"

#include <filesystem>
#include <string>

#include "app/story.h"
#include "render/framebuffer.h"
#include "app/png_file.h"

onegpu::app::HeadlessImage scene_shot(const char* id, std::optional<float> at) {
  onegpu::app::Options o;
  o.headless = true;
  o.width = 1600;
  o.height = 900;
  o.at = at;
  o.no_ui = true;
  o.out = "unused.png";
  onegpu::app::HeadlessImage img = onegpu::app::render_headless(o, onegpu::app::find_chapter(id));
  std::filesystem::create_directories(ONEGPU_TEST_OUT);
  const std::string name = std::string(ONEGPU_TEST_OUT) + "/" + id +
                           (at ? "_" + std::to_string(static_cast<int>(*at * 10)) : std::string("_end")) + ".png";
  onegpu::app::save_png(name, img.width, img.height, img.rgba);
  return img;
}
