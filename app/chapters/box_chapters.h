#pragma once
// Scenes 3 and 4: GPU 1 opened up (memory walls, compute strip), then the model's layers
// loaded into it, the walls rising by the bytes the trainer allocates.
#include "app/chapters/chapter.h"
#include "app/scene/field_layout.h"
#include "app/scene/gpu_box.h"

namespace onegpu::app {

class OpenChapter : public Chapter {
 public:
  float duration() const override { return 4.4f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;

 private:
  FieldLayout layout_{512};
};

class WeightsChapter : public Chapter {
 public:
  static constexpr float kFirstDrop = 0.5f, kDropEvery = 0.9f;
  float duration() const override { return kFirstDrop + 4 * kDropEvery + 1.0f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  // Layers landed at time t, and how far the next one has fallen.
  static int landed(float t);

 private:
  FieldLayout layout_{512};
};

// The opened box as the next chapters start from it: walls at the 4-layer model's bytes.
BoxLook loaded_box(int layers);
render::Camera box_camera(const FieldLayout& layout, glm::vec2 viewport);
// GPUs 1 and 2 side by side, with `below` and `above` chip sides of room for what the chapter
// puts under and over them.
render::Camera two_gpu_camera(const FieldLayout& layout, glm::vec2 viewport, float below, float above);
std::string format_bytes(std::int64_t bytes);

}  // namespace onegpu::app
