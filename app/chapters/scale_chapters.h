#pragma once
// Chapters 24-26 (scale): the four pipeline GPUs turn out to be cells of the field and the
// stack grows to eight stages (deeper), each stage widens to a machine of eight GPUs holding
// 8 of 64 experts each (wider), and one real step of that 64-rank run plays on the block
// (step-64). Bytes come from each rank's allocator, times from the engine's virtual clock
// (app/run/scale_run.h).
#include "app/chapters/chapter.h"
#include "app/run/scale_run.h"
#include "app/scene/scale_block.h"

namespace onegpu::app {

class DeeperChapter : public Chapter {
 public:
  static constexpr float kPullBack = 2.0f, kFirstStage = 2.0f, kStagePitch = 0.4f, kBracket = 4.8f,
                         kCheck = 5.4f;
  float duration() const override { return 6.6f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  void prepare(float) override;
  std::string activity() const override { return scale_runs_activity(); }
  // Stages whose GPUs are in place at time t (2..8).
  static int stages_at(float t);

 private:
  ScaleBlock b_;
  bool headless_ = false;  // prepare() ran: no need to warm up the chapters after this one
};

class WiderChapter : public Chapter {
 public:
  static constexpr float kFirstColumn = 0.5f, kColumnPitch = 0.35f, kLids = 3.4f;
  float duration() const override { return 5.4f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  void prepare(float) override;
  std::string activity() const override { return scale_runs_activity(); }
  static int columns_at(float t);  // 2..8

 private:
  ScaleBlock b_;
  bool headless_ = false;  // prepare() ran: no need to warm up the chapters after this one
};

class Step64Chapter : public Chapter {
 public:
  static constexpr float kRun = 1.0f, kRunLength = 9.0f, kRetone = 1.2f;
  static constexpr double kBeadShow = 0.025;  // a hand-over's bead travels for this share of the step
  // Where the bead of a hand-over is at virtual time v (v within kBeadShow of its send).
  glm::vec2 bead_at(const PipelineStep& s, const PipeHandoff& h, double v) const;
  float duration() const override { return kRun + kRunLength + kRetone + 0.3f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  void prepare(float) override;
  std::string activity() const override { return scale_runs_activity(); }
  // Virtual time of the step shown at chapter time t (seconds from the step's start).
  static double virtual_at(const PipelineStep& s, float t);

 private:
  // In the window a step that is still running when the chapter opens plays from the moment it
  // arrives (headless renders have it before the first frame, so there t is the clock).
  float run_clock(float t, bool ready);
  ScaleBlock b_;
  bool headless_ = false;  // prepare() ran: no need to warm up the chapters after this one
  bool waited_ = false;
  float ready_at_ = -1.0f;
};

}  // namespace onegpu::app
