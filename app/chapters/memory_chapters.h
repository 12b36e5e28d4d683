#pragma once
// Scenes 16 and 17: the two data-parallel GPUs try to take an 8-layer model (story8). The four
// extra layers are blocked at the top of each box, and the walls overflow by the bytes the
// trainer's allocator reserves for an 8-layer model, split into weights+gradients (lavender)
// and optimizer state (sand).
#include "app/chapters/chapter.h"
#include "app/scene/field_layout.h"
#include "render/canvas.h"

namespace onegpu::app {

// The four layers an 8-layer model adds, dashed, waiting above a GPU's box (they don't fit).
void draw_waiting_layers(render::Canvas& c, const render::Rect& chip, float drop, float wpp);
// Where the k-th (0-based) of those layers waits above `chip` once it has dropped.
render::Rect waiting_layer_rect(const render::Rect& chip, int k);
// A rectangle outlined in dashes.
void dashed_rect(render::Canvas& c, const render::Rect& r, float dash, float width, glm::vec4 col);

class MemoryChapter : public Chapter {
 public:
  explicit MemoryChapter(bool overflow) : overflow_(overflow) {}
  float duration() const override { return overflow_ ? 5.0f : 4.0f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  // "bigger": both GPUs in view, then the picture waits for "Try eight layers" before the
  // four extra layers come down.
  float waits_for_button_at() const override { return overflow_ ? -1.0f : kDropAt; }
  static constexpr float kDropAt = 1.0f;

  // Fractions of the toy GPU's capacity the 8-layer model needs (measured).
  static float need_weights_grads();
  static float need_optimizer();

 private:
  bool overflow_;  // false: "bigger" (blocked layers); true: "oom" (the walls overflow)
  FieldLayout layout_{512};
};

}  // namespace onegpu::app
