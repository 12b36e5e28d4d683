#pragma once
// Scenes 5 to 12: GPU 1 learning, drawn from the story model's first step as a recorded run
// (app/run/first_step.h: its events in a RunState, read op by op as the picture reaches them)
// and from a real run to step 1,000.
#include "app/chapters/chapter.h"
#include "app/scene/field_layout.h"
#include "app/scene/learning_scene.h"

namespace onegpu::app {

enum class LearningScene { NextToken, Guess, Gradients, Step, Microbatches, Train, Slow, NewRun };

class LearningChapter : public Chapter {
 public:
  explicit LearningChapter(LearningScene scene) : scene_(scene) {}
  float duration() const override;
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  void on_action() override;
  bool button_offered() const override;
  void prepare(float t) override;
  std::string activity() const override;

  // How many of the recorded first step's ops have run by t in this chapter (those before the
  // chapter's first had run on arrival). Exposed for tests.
  int ops_due(float t) const;

 private:
  void draw_next_token(const SceneFrame& f, const LearningLayout& L, float wpp);
  void draw_guess(const SceneFrame& f, const LearningLayout& L, float wpp);
  void draw_gradients(const SceneFrame& f, const LearningLayout& L, float wpp);
  void draw_step(const SceneFrame& f, const LearningLayout& L, float wpp);
  void draw_microbatches(const SceneFrame& f, const LearningLayout& L, float wpp);
  void draw_train(const SceneFrame& f, const LearningLayout& L, float wpp);
  void draw_slow(const SceneFrame& f, const LearningLayout& L, float wpp);
  void draw_recording(const SceneFrame& f, const LearningLayout& L, float wpp);  // the first step is being recorded
  void draw_new_run(const SceneFrame& f, const LearningLayout& L, float wpp);
  LearningScene scene_;
  FieldLayout layout_{512};
};

}  // namespace onegpu::app
