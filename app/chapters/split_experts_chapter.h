#pragma once
// Scene 19: expert parallelism. Both GPUs hold every expert of every layer; a cut runs down the
// rows and each GPU gives up half (the first eight stay on GPU 1, the rest on GPU 2). The walls drop
// from what a rank's allocator holds at ep=1 to what it holds at ep=2, measured.
#include "app/chapters/chapter.h"
#include "app/scene/field_layout.h"

namespace onegpu::app {

class SplitExpertsChapter : public Chapter {
 public:
  float duration() const override { return 5.0f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  // Expert e (0-based) of a layer on GPU g: its small square inside the layer's slab.
  render::Rect expert_rect(int gpu, int layer, int e) const;

 private:
  FieldLayout layout_{512};
};

}  // namespace onegpu::app
