#pragma once
// A clear card for the chapters whose scenes are not built yet: the story stays navigable
// end to end, and nobody mistakes a gap for a finished scene.
#include "app/chapters/chapter.h"

namespace onegpu::app {

class ComingSoonChapter : public Chapter {
 public:
  explicit ComingSoonChapter(int index) : index_(index) {}
  float duration() const override { return 0.4f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;

 private:
  int index_;
};

}  // namespace onegpu::app
