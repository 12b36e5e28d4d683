#pragma once
// The pieces the learning chapters share, placed around GPU 1's opened box: the trays of text
// under it, the prediction chart beside it, the phase readout and step counter at the foot,
// the forward band, the backward ring, gradient ticks, the weight loupe and the time bar.
// Plain values in, shapes out: nothing here knows where the numbers come from.
#include <string>
#include <vector>

#include "app/scene/gpu_box.h"
#include "render/canvas.h"

namespace onegpu::app {

struct LearningLayout {
  BoxParts box;
  render::Rect trays;   // the column of trays under the box
  render::Rect chart;   // prediction bars, right of the box
  render::Rect foot;    // readout, step counter, time bar
  render::Rect frame;   // everything: what the camera shows
  float s = 1.0f;
  render::Rect tray(int i, int n = 4) const;
};

LearningLayout learning_layout(const render::Rect& chip);

struct TrayLook {
  std::string text;                 // shown after the tokens (clipped)
  std::vector<std::string> tokens;  // boxed tokens at the start (may be empty)
  int tokens_lit = 0;               // how many tokens are boxed so far
  float blank = 0.0f;               // opacity of the "____" after the tokens
  std::string fill;                 // what fills the blank (fades in with fill_a)
  float fill_a = 0.0f;
  float tick = 0.0f;                // the tick under the tray: gradients recorded (0..1)
  float alpha = 1.0f;
  float outline_only = 0.0f;        // 1: dimmed to an outline
};
void draw_tray(render::Canvas& c, const render::Rect& r, const TrayLook& look, float s, float wpp);

struct Bar {
  std::string label;
  double value = 0.0;   // probability
  bool target = false;  // the right answer (" time")
};
// Bars for the next-token chart; `grow` animates them up from zero; `error` draws the bracket
// from the target's bar to certainty, labelled with `error_text` ("error 8.51 ...": its first two
// words alone where the whole has no room).
void draw_chart(render::Canvas& c, const render::Rect& r, const std::string& title, const std::vector<Bar>& bars,
                float grow, float alpha, float error, const std::string& error_text, float s, float wpp);

// forward · error · backward · update, the active one lit (-1: none).
void draw_readout(render::Canvas& c, const render::Rect& foot, int active, float alpha, float s, bool loop = false);
void draw_step_counter(render::Canvas& c, const render::Rect& foot, int step, float alpha, float s);
// A short line under the step counter saying why it reads what it does (a restart, a rerun).
void draw_step_note(render::Canvas& c, const render::Rect& foot, const std::string& note, float alpha, float s);

// A band of forward work at height `y` (in slab units: 0 bottom of layer 1 .. n top of layer n).
void draw_forward_band(render::Canvas& c, const BoxParts& b, int layers, float y, float alpha, float wpp);
// The backward ring at height y, same units.
void draw_backward_ring(render::Canvas& c, const BoxParts& b, int layers, float y, float alpha, float wpp);
// Gradient ticks at the right edge of each slab: sizes 0..1, stacked `piles` deep.
void draw_grad_ticks(render::Canvas& c, const BoxParts& b, int layers, const std::vector<float>& size,
                     float alpha, float wpp, int piles = 1);

// 16 weights as dots before → after, their change magnified `zoom` times (and labelled so).
void draw_loupe(render::Canvas& c, const render::Rect& r, const std::vector<float>& before,
                const std::vector<float>& after, float progress, float zoom, float alpha, float s, float wpp);

// A time bar: segments (seconds) drawn to scale against `full` seconds, labelled.
struct Segment {
  double seconds = 0.0;
  glm::vec4 color;
  std::string label;
};
void draw_time_bar(render::Canvas& c, const render::Rect& r, const std::vector<Segment>& segs, double full,
                   float grow, float alpha, const std::string& caption, float s, float wpp);

}  // namespace onegpu::app
