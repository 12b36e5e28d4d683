#pragma once
// Scenes 27-29, the end of the story: the 64-GPU block copied eight times into the 512-GPU
// field (placed by the trainer's own plan for that run), the long run told through the writing
// of the story model trained on this machine, and the dive back into GPU 1 to show its share.
#include <string>

#include "app/chapters/chapter.h"
#include "app/scene/field_layout.h"
#include "app/scene/full_size_bars.h"

namespace onegpu::app {

// The field's first 64-GPU block, with `pad` chip sides of room around it.
render::Rect block_bounds(const FieldLayout& layout, int block, float pad = 0.0f);

class CopiesChapter : public Chapter {
 public:
  static constexpr float kPull = 0.3f, kPullFor = 2.2f;   // the camera pulls back
  static constexpr float kCopy = 1.0f, kCopyEvery = 0.35f; // block b switches on at kCopy + (b-1)·kCopyEvery
  static constexpr float kLabels = 4.0f;
  float duration() const override { return 6.4f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  // When GPU `gpu` (FieldLayout numbering) switches on.
  static float on_at(const FieldCell& cell);
  render::Camera field_view(glm::vec2 viewport) const;

 private:
  FieldLayout layout_{512};
};

class AgainChapter : public Chapter {
 public:
  static constexpr float kSweep = 0.3f, kPeriod = 1.6f;  // one step's forward and backward sweep
  static constexpr float kFirstLine = 0.8f, kLineEvery = 1.3f;  // milestone k shows at kFirstLine + k·kLineEvery
  float duration() const override { return kFirstLine + 4 * kLineEvery + 1.0f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  void on_action() override;
  bool button_offered() const override;
  void prepare(float t) override;
  std::string activity() const override;
  // Milestones (steps 0, 1, 10, 100, 1000) shown at time t, given how many the run has.
  static int shown(float t, int available);
  render::Rect writing_area() const;  // world rect of the writing panel under the field

 private:
  FieldLayout layout_{512};
};

class OneOf512Chapter : public Chapter {
 public:
  static constexpr float kDive = 0.4f, kDiveFor = 2.2f, kOpen = 2.4f, kExperts = 3.2f, kLabels = 3.9f;
  static constexpr float kFull = 5.6f;  // the camera makes room for the full-size share beside it
  float duration() const override { return 7.6f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  void prepare(float t) override;  // waits for GPU 1's share bytes (headless, tests)
  std::string activity() const override;
  // Expert slot e (0..7) of GPU 1's layer slab `layer` (0..3).
  render::Rect expert_rect(int layer, int e) const;
  // World rect of the full-size (modelled) readout, right of GPU 1.
  render::Rect full_size_area() const;
  // What the readout shows: GPU 1's share of the full-size model (its rank in the split), and
  // the line that names it.
  const trainer::ShareFigures& full_size_figures() const;
  std::string full_size_share() const;
  // Where the readout reaches for words at the sizes `c` draws them in a `viewport` picture:
  // full_size_area(), or taller, into the height the view has above and below it, when its
  // words need more room than that (a small picture, a large text scale).
  render::Rect full_size_room(const render::Canvas& c, glm::vec2 viewport) const;
  FullSizeBars::Layout full_size_layout(const render::Canvas& c, glm::vec2 viewport) const;

 private:
  FieldLayout layout_{512};
};

}  // namespace onegpu::app
