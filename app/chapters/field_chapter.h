#pragma once
// Scenes 1 and 2: the field of 512 GPUs switching on around GPU 1, then the dive into GPU 1.
#include <string>
#include <string_view>
#include <vector>

#include "app/chapters/chapter.h"
#include "app/scene/field_layout.h"

namespace onegpu::app {

// How the field looks at the field chapter's time t; shared by the chapters that start from it.
struct FieldTimeline {
  static constexpr float kFadeIn = 0.5f;
  static constexpr float kFirstOn = 0.6f;     // GPU 1 switches on
  static constexpr float kRingStart = 0.9f;
  static constexpr float kRippleStart = 1.9f; // the other 511 follow
  static constexpr float kRippleSpan = 2.2f;  // from the nearest to the farthest cell
  static constexpr float kSwitchTime = 0.35f;
  static constexpr float kEnd = kRippleStart + kRippleSpan + kSwitchTime + 0.3f;
};

class FieldChapter : public Chapter {
 public:
  explicit FieldChapter(int cells = 512) : layout_(cells) {}
  float duration() const override { return FieldTimeline::kEnd; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  const FieldLayout& layout() const { return layout_; }

 private:
  FieldLayout layout_;
};

// Draws the field's cells as at the field chapter's time `field_t`; `others_fade` dims every
// GPU but GPU 1, `gpu1_detail` opens GPU 1's interior (see ChipLook). Returns the cells lit.
struct FieldDraw {
  float field_t = 1e9f;
  float others_fade = 1.0f;
  float gpu1_detail = 0.0f, gpu1_tiles = 1.0f, gpu1_memory = 1.0f;
  float ring = 1.0f;  // opacity of GPU 1's ring
  int hidden = 0;  // GPUs 1..hidden are left out: a later chapter draws them itself, opened up
  std::vector<int> also_hidden;  // more GPUs left out (0-based), e.g. the second stage's
};
int draw_field(render::Canvas& c, const FieldLayout& layout, const FieldDraw& d, float wpp);
// The whole field, with a band at the top of the picture for the GPU count (draw_gpu_count) at
// this panel and text scale: the band is in pixels, so scaled-up text never reaches the chips.
render::Camera field_camera(const FieldLayout& layout, glm::vec2 viewport, float ui_scale);
// `r` fitted (with `margin`) into the picture less that band at its top, which it leaves empty.
render::Camera fit_below_count(const render::Rect& r, glm::vec2 viewport, float margin, float ui_scale);
// Pixels at the top of the picture that the GPU count takes, with a gap under it.
float gpu_count_band(float ui_scale);
// The count of GPUs switched on, top right of the picture: `n` large, `label` under it. With the
// text scaled up for a projector it can reach down over the field (`field`, world units): a
// backing of the ground's colour then keeps it readable over the chips.
void draw_gpu_count(const SceneFrame& f, const render::Camera& cam, const render::Rect& field, int n,
                    std::string_view label, float alpha);
// Where that count lies (screen canvas pixels, origin bottom left) for text `text_w` wide, and
// whether it reaches over the field under `cam`.
render::Rect gpu_count_box(glm::vec2 viewport, float ui_scale, float text_w);
bool gpu_count_covers_field(const render::Camera& cam, const render::Rect& field, glm::vec2 viewport,
                            const render::Rect& box);
// The field behind opened GPUs: every other chip dimmed to `fade`, GPUs 1..hidden left out.
void draw_field_behind(render::Canvas& c, const FieldLayout& layout, float fade, float wpp, int hidden = 1,
                       std::vector<int> also_hidden = {});
// While a chapter's recorded run is still being made by its job (app/run/posted.h): one line
// under `chip` saying what runs ("measuring…" if `what` is empty). Headless renders never show
// it: prepare() waits for the run first.
void draw_measuring(render::Canvas& c, const render::Rect& chip, const std::string& what);

class GpuChapter : public Chapter {
 public:
  GpuChapter() : layout_(512) {}
  float duration() const override { return 5.6f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  // The close-up camera at the end of the dive.
  render::Camera closeup(glm::vec2 viewport) const;

 private:
  FieldLayout layout_;
};

}  // namespace onegpu::app
