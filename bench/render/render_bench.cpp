// Frame time and draw calls of the field at 512, 4,096 and 32,768 cells, offscreen, in one
// run. Each size is reported against the 512-cell field measured in the same run; the draw
// calls must not grow with the cell count (one instanced call holds every cell).
//
// Then every built chapter of the story, with its panels, at 1600×900: the mean and worst frame
// time over its animation, against the 16.7 ms a 60 fps frame may take.
//
//   build/bench/bench_render [--frames N] [--size WxH] [--no-story]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <algorithm>
#include <vector>

#include <imgui.h>

#include "app/app.h"
#include "app/assets.h"
#include "app/story.h"
#include "app/chapters/field_chapter.h"
#include "render/error.h"
#include "render/framebuffer.h"
#include "render/gl.h"
#include "render/headless_context.h"
#include "render/palette.h"
#include "render/renderer.h"

using namespace onegpu;

int main(int argc, char** argv) {
  int frames = 30, w = 1280, h = 720;
  bool story = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--frames") && i + 1 < argc) frames = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--size") && i + 1 < argc) std::sscanf(argv[++i], "%dx%d", &w, &h);
    else if (!std::strcmp(argv[i], "--no-story")) story = false;
    else {
      std::fprintf(stderr, "usage: bench_render [--frames N] [--size WxH]\n");
      return 2;
    }
  }
  try {
    render::HeadlessContext ctx;
    app::Assets assets = app::find_assets(app::Options{});
    render::Renderer r(assets.scene);
    render::Framebuffer fb(w, h);
    fb.bind();
    std::printf("field render, %dx%d offscreen, %d frames each · %s\n", w, h, frames, ctx.description().c_str());
    std::printf("%8s %10s %12s %12s %10s %12s\n", "cells", "shapes", "draw calls", "ms/frame", "vs 512", "µs/cell");
    double base_ms = 0;
    int base_calls = 0;
    for (int cells : {512, 4096, 32768}) {
      app::FieldLayout layout(cells);
      render::Camera cam = app::field_camera(layout, {float(w), float(h)});
      app::FieldDraw d;  // the end state: every cell lit, GPU 1 ringed
      auto frame = [&] {
        r.begin(0, 0, w, h, render::palette::background);
        app::draw_field(r.world(), layout, d, cam.world_per_pixel());
        r.end(cam);
        glFinish();
      };
      frame();  // warm-up: shader and buffer set-up
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < frames; ++i) frame();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / frames;
      const auto& st = r.stats();
      if (cells == 512) { base_ms = ms; base_calls = st.draw_calls; }
      std::printf("%8d %10zu %12d %12.2f %9.2fx %12.3f\n", cells, st.instances, st.draw_calls, ms, ms / base_ms,
                  1000.0 * ms / cells);
      if (st.draw_calls != base_calls) {
        std::fprintf(stderr, "draw calls grew with the cell count (%d vs %d)\n", st.draw_calls, base_calls);
        return 1;
      }
    }
    std::printf("draw calls per frame do not grow with the cell count\n");
    if (story) {
      // The story as a viewer sees it: panels and scene at 1600×900, each built chapter played
      // through its animation at 60 frames a second of story time.
      const int W = 1600, H = 900;
      render::Framebuffer sfb(W, H);
      sfb.bind();
      ImGui::CreateContext();
      {
        app::App a(assets, true, true, 1.0f, 0);
        std::printf("\nstory chapters, %dx%d with panels (60 fps = 16.7 ms a frame)\n", W, H);
        std::printf("%-14s %8s %10s %10s %8s\n", "chapter", "frames", "mean ms", "worst ms", "fps");
        const auto& chapters = app::story();
        for (int i = 0; i < static_cast<int>(chapters.size()); ++i) {
          if (chapters[i].id == "train") continue;  // train: a 1,000-step run
          a.nav().go_to(i);
          // A chapter that waits for its button plays as if it were pressed on arrival (only the
          // hold is released: "Keep training" would start a 1,000-step run).
          if (a.current().waits_for_button_at() >= 0.0f) a.nav().mark_button_done();
          a.frame(W, H, 0.0f, 0.0);  // arrive (chapters build what they need)
          glFinish();
          int n = static_cast<int>(a.current().duration() * 60.0f);
          double sum = 0, worst = 0;
          for (int f = 0; f < n; ++f) {
            auto t0 = std::chrono::steady_clock::now();
            a.frame(W, H, 1.0f / 60.0f, f / 60.0);
            glFinish();
            double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            sum += ms;
            worst = std::max(worst, ms);
          }
          std::printf("%-14s %8d %10.2f %10.2f %8.0f\n", std::string(chapters[i].id).c_str(), n, sum / n, worst,
                      1000.0 / (sum / n));
        }
      }
      ImGui::DestroyContext();
    }
  } catch (const render::Error& e) {
    std::fprintf(stderr, "bench_render: %s\n", e.what());
    return 2;
  }
  return 0;
}
