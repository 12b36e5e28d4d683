#pragma once
// Renders one frame of a chapter offscreen (EGL, no window, no X server) and writes a PNG.
#include <cstdint>
#include <vector>

#include "app/lab/lab.h"
#include "app/options.h"
#include "render/camera.h"
#include "render/shape_batch.h"

namespace onegpu::app {

struct HeadlessImage {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgba;  // rows top to bottom
  render::Camera camera;           // the scene camera used
  int scene_x = 0, scene_y = 0;    // scene viewport's top-left in the image
  render::DrawStats stats;
  float t = 0.0f;
  LabDrawn lab;                    // render_headless_lab only: what the Lab drew
};

// Throws render::Error (assets, GL) on failure. Needs no current GL context: makes its own.
HeadlessImage render_headless(const Options& o, int chapter_index);

int run_headless(const Options& o, int chapter_index);

// The Lab, headless: builds the run the train flags name, runs --steps whole steps (or --ops
// ops by hand), then renders the Lab as it stands. Throws render::Error (assets, GL) and
// trainer::Error (the run) with one line.
HeadlessImage render_headless_lab(const Options& o);

class App;
// The Lab of `o` made ready in `app` (a run built and stepped, or a trace opened; a branch;
// the tab): what render_headless_lab and a Lab video share. Throws with one line.
void prepare_headless_lab(App& app, const Options& o);

}  // namespace onegpu::app
