#pragma once
// Scenes 21-23: pipeline parallelism on the 8-layer model, from a real pp=2 dp=2 ep=2 run.
//   stages        layers 5-8 lift into two new GPUs above GPUs 1-2; every wall at its rank's
//                 allocator bytes, all under capacity
//   wait          one microbatch up stage 1, handed up, up stage 2, loss, and back down, the
//                 idle stage hatched; times from the engine's virtual clock
//   back-to-back  two microbatches one behind the other, gauges per GPU; then 1, 2 and 4
//                 microbatches side by side, measured idle beside the textbook (p-1)/(m+p-1)
#include <string>
#include <vector>

#include "app/chapters/chapter.h"
#include "app/chapters/pipeline_scene.h"

namespace onegpu::app {

class StagesChapter : public Chapter {
 public:
  static constexpr float kPan = 1.4f, kSockets = 0.8f, kLift = 1.2f, kArrive = 2.3f, kWalls = 2.9f, kFits = 3.7f,
                         kLabels = 4.0f;
  float duration() const override { return 5.0f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  void prepare(float) override;
  std::string activity() const override { return story_pipeline_activity(); }
  // Where the check mark of a rank's "fits" badge sits.
  render::Rect fits_badge(int rank) const;

 private:
  PipeScene sc_;
};

// One pipelined step drawn from the real run with `microbatches` per GPU; the chapter clock
// maps linearly onto the step's virtual time.
class PipelineStepChapter : public Chapter {
 public:
  static constexpr float kRun = 0.5f, kRunFor = 5.0f;
  // With holds, the clock stops this long at each hand-over while it travels (a send takes
  // microseconds: too short to see at the step's pace).
  static constexpr float kHold = 0.45f;
  PipelineStepChapter(int microbatches, bool holds) : m_(microbatches), holds_(holds) {}
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void prepare(float) override;
  // Virtual seconds of the step shown at chapter time t (negative before it starts), and back.
  double virtual_time(float t) const;
  float chapter_time(double v) const;
  // The hand-over travelling at t (an index into step().handoffs) and how far it has got, or -1.
  int handoff_at(float t, float* progress) const;
  // The step, waiting for its job (prepare(), tests; the functions above wait too); draw() asks
  // ready_step(), null until it is measured.
  const PipelineStep& step() const { return story_pipeline_step(m_); }
  const PipelineStep* ready_step() const { return story_pipeline_step_ready(m_); }
  std::string activity() const override { return story_pipeline_activity(); }
  const PipeScene& scene() const { return sc_; }

 protected:
  // Boxes, lit layers, hatching, hand-overs, gauges; returns the virtual time drawn, or -1 with
  // the boxes alone and a note while the step is still being measured.
  double draw_run(const SceneFrame& f, const render::Camera& cam);
  std::vector<int> sends_in_order() const;
  float below_ = 0.6f;  // room under the boxes, in world units
  int m_;
  bool holds_;
  PipeScene sc_;
};

class WaitChapter : public PipelineStepChapter {
 public:
  // Four hand-overs: each GPU of stage 1 sends its activations up and gets its correction back.
  static constexpr int kSends = 4;
  WaitChapter() : PipelineStepChapter(1, true) {}
  float duration() const override { return kRun + kRunFor + kSends * kHold + 1.2f; }
  void draw(const SceneFrame& f, const render::Camera& cam) override;
};

class BackToBackChapter : public PipelineStepChapter {
 public:
  static constexpr float kCompare = 5.8f, kCompareEvery = 0.6f;
  static constexpr int kRuns[3] = {1, 2, 4};
  BackToBackChapter() : PipelineStepChapter(2, false) { below_ = 1.75f; }
  float duration() const override { return kCompare + 3 * kCompareEvery + 1.0f; }
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  void prepare(float) override;
  // The mini gauge of run i (m = kRuns[i]) for a stage, on one scale for all three runs.
  render::Rect compare_gauge(int i, int stage) const;
  double compare_full() const;  // the scale: the longest of the three runs (waits for them)
};

}  // namespace onegpu::app
