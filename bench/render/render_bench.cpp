// Frame time and draw calls of the field at 512, 4,096 and 32,768 cells, offscreen, in one
// run. Each size is reported against the 512-cell field measured in the same run; the draw
// calls must not grow with the cell count (one instanced call holds every cell of a kind; the
// runs by kind of shape, render/shape_programs.h, may differ by a few with the chips' detail).
//
// Then every chapter of the story, with its panels, at 1600×900: the mean and worst frame over
// its animation, against the 16.7 ms a 60 fps frame may take.
//
// Every frame is timed three ways (bench/frame_clock.h): wall clock, CPU time of the whole
// process (this thread and llvmpipe's raster threads), and CPU time of this thread alone. On a
// crowded machine the wall figures wander; the CPU figures and the counts (shapes, draw calls)
// are the ones to compare between runs. "at" names the frame whose wall time was the worst
// (its index, in 60ths of a second of chapter time).
//
//   build/bench/bench_render [--frames N] [--size WxH] [--no-story] [--no-field] [--chapter ID] [--log]
//       [--prepared] [--whole-panels] [--field-png DIR]
// --chapter plays one chapter only; --log prints every frame's times (to find a hitch);
// --prepared lets each chapter's background jobs (a measured run, the router's pick) finish
// before its frames are timed, which tells the drawing's cost from the jobs' (the process
// CPU clock counts the job runner's thread too); --field-png writes the field's last frame at
// each size to DIR/field-CELLS.png, to look at what was timed; --whole-panels clears every
// story frame and draws its panels whole, as before the panels were kept (app/ui/panel_backdrop.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/app.h"
#include "app/assets.h"
#include "app/frame_memory.h"
#include "app/png_file.h"
#include "app/story.h"
#include "app/chapters/field_chapter.h"
#include "app/live/job_runner.h"
#include "app/run/story_run.h"
#include "bench/frame_clock.h"
#include "render/error.h"
#include "render/framebuffer.h"
#include "render/gl.h"
#include "render/headless_context.h"
#include "render/palette.h"
#include "render/renderer.h"
#include "render/shape_programs.h"

using namespace onegpu;
using bench::FrameStats;
using bench::FrameTimer;

int main(int argc, char** argv) {
  int frames = 30, w = 1600, h = 900;
  bool story = true, field = true;
  std::string only;
  bool log = false;  // every frame's times, one line each
  bool prepared = false;  // wait for a chapter's background jobs before timing it
  bool whole_panels = false;  // no kept panels: every frame cleared and its panels drawn (the old way)
  std::string field_png;  // a folder for the field's pictures
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--frames") && i + 1 < argc) frames = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--size") && i + 1 < argc) std::sscanf(argv[++i], "%dx%d", &w, &h);
    else if (!std::strcmp(argv[i], "--no-story")) story = false;
    else if (!std::strcmp(argv[i], "--no-field")) field = false;
    else if (!std::strcmp(argv[i], "--chapter") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--log")) log = true;
    else if (!std::strcmp(argv[i], "--prepared")) prepared = true;
    else if (!std::strcmp(argv[i], "--whole-panels")) whole_panels = true;
    else if (!std::strcmp(argv[i], "--field-png") && i + 1 < argc) field_png = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_render [--frames N] [--size WxH] [--no-story] [--no-field] [--chapter ID] [--log] [--prepared] [--whole-panels] [--field-png DIR]\n");
      return 2;
    }
  }
  bench::print_load("start");
  app::keep_frame_memory();  // as the program does at start-up
  int status = 0;
  try {
    render::HeadlessContext ctx;
    app::Assets assets = app::find_assets(app::Options{});
    render::Renderer r(assets.scene);
    bench::NamedThreadsClock raster;  // llvmpipe's threads (none on a hardware driver)
    const int raster_threads = raster.find("llvmpipe");
    if (field) {
      render::Framebuffer fb(w, h);
      fb.bind();
      std::printf("field render, %dx%d offscreen, %d frames each · %s, %d raster threads\n", w, h, frames,
                  ctx.description().c_str(), raster_threads);
      std::printf("%8s %10s %6s %10s %8s %10s %10s %10s %10s %8s\n", "cells", "shapes", "calls", "wall ms", "fps",
                  "cpu ms", "thread ms", "raster ms", "worst ms", "vs 512");
      double base_cpu = 0;
      int base_calls = 0;
      for (int cells : {512, 4096, 32768}) {
        app::FieldLayout layout(cells);
        render::Camera cam = app::field_camera(layout, {float(w), float(h)}, 1.0f);
        app::FieldDraw d;  // the end state: every cell lit, GPU 1 ringed
        auto frame = [&] {
          r.begin(0, 0, w, h, render::palette::background);
          app::draw_field(r.world(), layout, d, cam.world_per_pixel());
          r.end(cam);
          glFinish();
        };
        frame();  // warm-up: shader and buffer set-up
        FrameStats st;
        for (int i = 0; i < frames; ++i) {
          FrameTimer ft(&raster);
          ft.start();
          frame();
          st.add(ft.stop());
        }
        const auto& ds = r.stats();
        const auto m = st.mean();
        if (cells == 512) { base_cpu = m.cpu; base_calls = ds.draw_calls; }
        std::printf("%8d %10zu %6d %10.2f %8.1f %10.2f %10.2f %10.2f %10.2f %7.2fx\n", cells, ds.instances,
                    ds.draw_calls, m.wall, 1000.0 / m.wall, m.cpu, m.thread, m.raster, st.worst.wall, m.cpu / base_cpu);
        if (!field_png.empty())
          app::save_png(field_png + "/field-" + std::to_string(cells) + ".png", w, h, render::read_pixels(w, h));
        if (ds.draw_calls > base_calls + render::kShapeVariants) {
          std::fprintf(stderr, "draw calls grew with the cell count (%d vs %d)\n", ds.draw_calls, base_calls);
          status = 1;
        }
      }
      std::printf("(aim: 32,768 cells at 30 fps or better; \"vs 512\" is process CPU time against 512 cells)\n");
    }
    if (story) {
      // The story as a viewer sees it: panels and scene at 1600×900, each chapter played
      // through its animation at 60 frames a second of story time.
      const int W = 1600, H = 900;
      render::Framebuffer sfb(W, H);
      sfb.bind();
      ImGui::CreateContext();
      {
        app::App a(assets, true, true, 1.0f, 0);
        a.set_panel_backdrop(!whole_panels);
        // As the window sets up: background jobs at the idle class, the story built at once.
        app::JobRunner::shared().set_jobs_idle_class(true);
        app::StoryRun::build_soon();
        std::printf("\nstory chapters, %dx%d with panels (60 fps = 16.7 ms a frame)\n", W, H);
        std::printf("%-14s %6s %7s %7s %8s %8s %8s %8s %8s %8s %8s %8s %8s %6s %7s %5s\n", "chapter", "frames", "arrive",
                    "arr cpu", "wall ms", "worst", "cpu ms", "worst", "thread", "worst", "raster", "worst", "jobs", "at", "shapes",
                    "calls");
        const auto& chapters = app::story();
        // --log: the pixels each frame shades (panels and scene; clears are not counted), from an
        // occlusion query: the fill a software rasteriser pays for, whatever the machine's load.
        GLuint query = 0;
        glGenQueries(1, &query);
        FrameStats all;
        double worst_cpu = 0;
        std::string worst_cpu_id;
        for (int i = 0; i < static_cast<int>(chapters.size()); ++i) {
          if (!only.empty() && chapters[i].id != only) continue;
          if (chapters[i].id == "train" && only.empty()) continue;  // train: a 1,000-step run
          a.nav().go_to(i);
          // A chapter that waits for its button plays as if it were pressed on arrival (only the
          // hold is released: "Keep training" would start a 1,000-step run).
          if (a.current().waits_for_button_at() >= 0.0f) a.nav().mark_button_done();
          FrameTimer arrive(&raster);
          arrive.start();
          a.frame(W, H, 0.0f, 0.0);  // arrive (chapters build what they need)
          glFinish();
          const auto arrived = arrive.stop();
          if (prepared) a.current().prepare(a.current().duration());
          const int n = static_cast<int>(a.current().duration() * 60.0f);
          FrameStats st;
          double jobs = 0;  // the most CPU a frame's span gave to other threads (the job runner's)
          std::size_t shapes = 0;
          int calls = 0;
          for (int f = 0; f < n; ++f) {
            FrameTimer ft(&raster);
            ft.start();
            if (log) glBeginQuery(GL_SAMPLES_PASSED, query);
            a.frame(W, H, 1.0f / 60.0f, f / 60.0);
            if (log) glEndQuery(GL_SAMPLES_PASSED);
            glFinish();
            const auto t = ft.stop();
            if (log) {
              GLuint64 frags = 0;
              glGetQueryObjectui64v(query, GL_QUERY_RESULT, &frags);
              std::printf("  frame %4d  wall %7.2f  cpu %7.2f  thread %7.2f  raster %7.2f  other %6.2f  shapes %zu"
                          "  pixels %.2f M\n",
                          f, t.wall, t.cpu, t.thread, t.raster, t.cpu - t.thread - t.raster, a.stats().instances,
                          frags * 1e-6);
            }
            st.add(t);
            all.add(t);
            jobs = std::max(jobs, t.cpu - t.thread - t.raster);
            shapes = std::max(shapes, a.stats().instances);
            calls = std::max(calls, a.stats().draw_calls);
          }
          const auto m = st.mean();
          if (st.worst.cpu > worst_cpu) worst_cpu = st.worst.cpu, worst_cpu_id = std::string(chapters[i].id);
          std::printf("%-14s %6d %7.1f %7.1f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %6d %7zu %5d\n",
                      std::string(chapters[i].id).c_str(), n, arrived.wall, arrived.cpu, m.wall, st.worst.wall, m.cpu, st.worst.cpu,
                      m.thread, st.worst.thread, m.raster, st.worst.raster, jobs, st.worst_frame, shapes, calls);
        }
        const auto m = all.mean();
        std::printf("all chapters: %d frames, mean %.2f ms wall / %.2f ms CPU, worst %.2f ms wall / %.2f ms CPU (%s)"
                    " / %.2f ms this thread\n",
                    all.n, m.wall, m.cpu, all.worst.wall, all.worst.cpu, worst_cpu_id.c_str(), all.worst.thread);
        std::printf("(aim: no frame over 16.7 ms on an idle machine; \"arrive\" is the first frame of a chapter, not"
                    " counted in its frames)\n");
      }
      ImGui::DestroyContext();
    }
  } catch (const render::Error& e) {
    std::fprintf(stderr, "bench_render: %s\n", e.what());
    return 2;
  }
  bench::print_load("end");
  return status;
}
