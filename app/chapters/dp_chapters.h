#pragma once
// Scene 15: update together. Two data-parallel GPUs average their gradients (the real
// all-reduce of a dp=2 step), apply the same update and stay identical (checked); the step's
// time, on the virtual clock, is about half of one GPU's plus a sliver for the exchange.
#include "app/chapters/chapter.h"
#include "app/scene/field_layout.h"

namespace onegpu::app {

class SyncChapter : public Chapter {
 public:
  float duration() const override { return 5.0f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  render::Rect time_bar(int which) const;  // 0: one GPU, 1: two GPUs

 private:
  FieldLayout layout_{512};
};

}  // namespace onegpu::app
