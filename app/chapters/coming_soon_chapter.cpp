#include "app/chapters/coming_soon_chapter.h"

#include <algorithm>
#include <string>

#include "render/palette.h"

namespace onegpu::app {

using namespace render;

Camera ComingSoonChapter::camera(glm::vec2 viewport, float) const {
  // Pixel units: the card is laid out like an overlay.
  Camera c;
  c.viewport = viewport;
  c.height = viewport.y;
  c.center = viewport * 0.5f;
  return c;
}

void ComingSoonChapter::draw(const SceneFrame& f, const Camera&) {
  const ChapterInfo& info = story()[index_];
  float s = 16.0f * f.ui_scale;
  float a = std::min(1.0f, f.t / 0.4f);
  glm::vec2 c = f.viewport * 0.5f;
  glm::vec2 size{std::min(f.viewport.x * 0.86f, 36.0f * s), 11.0f * s};
  Canvas& w = f.world;
  w.hatched(Rect::centered(c, size), with_alpha(palette::waiting_bg, a), with_alpha(palette::waiting, 0.35f * a),
            1.2f * s, 0.18f * s, 0.8f * s, with_alpha(palette::chip_edge, a), 1.5f);
  w.set_layer(1);
  std::string head = "Chapter " + std::to_string(index_ + 1) + " · " + std::string(info.part);
  w.text(head, c + glm::vec2(0.0f, 3.0f * s), s, with_alpha(palette::text_dim, a), Align::Center);
  w.text(info.title, c + glm::vec2(0.0f, 0.6f * s), 2.0f * s, with_alpha(palette::text, a), Align::Center);
  w.text("Not built yet: this scene will be drawn from the live trainer,", c - glm::vec2(0.0f, 2.2f * s), s,
         with_alpha(palette::forward, a), Align::Center);
  w.text("which arrives in a later release.", c - glm::vec2(0.0f, 3.6f * s), s, with_alpha(palette::forward, a),
         Align::Center);
  w.set_layer(0);
}

}  // namespace onegpu::app
