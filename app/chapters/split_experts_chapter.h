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
  void prepare(float t) override;  // waits for the chapter's runs (headless, tests)
  std::string activity() const override;
  // Both GPUs with every expert, then the picture waits for "Split the experts" to cut.
  float waits_for_button_at() const override;
  // Expert e (0-based) of a layer on GPU g: its small square inside the layer's slab.
  render::Rect expert_rect(int gpu, int layer, int e) const;

 private:
  FieldLayout layout_{512};
};

// Scene 20: tokens travel. Each token the router sends to an expert on the other GPU crosses
// there and back in every layer, once going up and once coming down; the counts are the
// router's real choices. The gradients meet as before, and layers 5-8 still wait above.
class TokensChapter : public Chapter {
 public:
  static constexpr float kUp = 0.4f, kLayerUp = 0.6f, kDown = 3.2f, kLayerDown = 0.5f, kMeet = 5.4f;
  float duration() const override { return 6.6f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  void prepare(float t) override;  // waits for the chapter's runs (headless, tests)
  std::string activity() const override;

 private:
  FieldLayout layout_{512};
};

}  // namespace onegpu::app
