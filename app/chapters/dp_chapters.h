#pragma once
// Scene 15: update together. Two data-parallel GPUs average their gradients (the real
// all-reduce of a dp=2 step), apply the same update and stay identical (checked); the step's
// time, on the virtual clock, is about half of one GPU's plus a sliver for the exchange.
#include "app/chapters/chapter.h"
#include "app/scene/field_layout.h"

namespace onegpu::app {

// Scene 13: a second GPU. GPU 2 arrives empty beside GPU 1 and the model is copied to it one
// layer at a time by the engine's real broadcast ops; "=" appears only if the copy is bitwise.
class CopyChapter : public Chapter {
 public:
  static constexpr float kArrive = 0.3f, kFirstCopy = 1.6f, kCopyEvery = 0.55f;
  float duration() const override;
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  void prepare(float t) override;  // waits for the chapter's run (headless, tests)
  std::string activity() const override;
  // GPU 2 arrives empty, then the picture waits for "Copy the model to GPU 2".
  float waits_for_button_at() const override { return kFirstCopy - 0.05f; }

 private:
  FieldLayout layout_{512};
};

// Scene 14: different text. Each copy reads its own two texts and gets its own gradients (real
// norms, different ticks). A "what if" frame shows two copies updating alone, drifting apart by
// the measured weight difference, and stay apart (the next chapter brings them together).
class DifferentTextChapter : public Chapter {
 public:
  float duration() const override { return 6.2f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  void prepare(float t) override;  // waits for the chapter's run (headless, tests)
  std::string activity() const override;
  render::Rect tray(int gpu, int i) const;  // the two trays under each GPU
  render::Rect tick(int gpu, int layer) const;  // where a layer's gradient tick stands

 private:
  FieldLayout layout_{512};
};

class SyncChapter : public Chapter {
 public:
  float duration() const override { return 5.0f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  void prepare(float t) override;  // waits for the chapter's run (headless, tests)
  std::string activity() const override;
  render::Rect time_bar(int which) const;  // 0: one GPU, 1: two GPUs

 private:
  FieldLayout layout_{512};
};

}  // namespace onegpu::app
