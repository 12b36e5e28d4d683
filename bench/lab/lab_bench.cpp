// The Lab's cost, offscreen at 1600x900 (llvmpipe here), in one run:
//   1. A 64-rank `scale` run (pp 8 x dp 8, ep 8, 8 microbatches) trains free while the Lab
//      draws as fast as it can ("watched"), at the window's pace (App::frame_interval: 30 frames
//      a second while the Lab's run trains; --cap FPS sets another), and while nothing draws and
//      the rings are only drained every 16 ms ("unwatched"). The three alternate in windows of
//      --window seconds; each side keeps its best window. Reported: the trainer's tokens/s
//      watched against unwatched (aim: at least 0.85 at the window's pace), the Lab's frames
//      per second while training (aim: 30) and its slowest frame (aim: under 100 ms).
//   2. The 512-rank step (pp 8 x dp 64, ep 8, GPipe), paused: frames per second of the Lab
//      drawing it (aim: 60), against the 16.7 ms a 60 fps frame may take.
//
// Each window also reports CPU time (bench/frame_clock.h): on a shared machine the wall figures
// swing with the neighbours' load, the CPU a frame costs this thread does not. The load
// average is printed at the start and the end.
//
//   build/bench/bench_lab [--window S] [--rounds N] [--frames N] [--cap FPS] [--no-512] [--whole] [--whole-frame]
// --whole draws the timeline's lanes whole every frame (no retained layer), --whole-frame the
// whole Lab every frame (no damage tracking, app/ui/frame_damage.h), for a before/after.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <thread>
#include <vector>

#include <imgui.h>

#include "app/app.h"
#include "app/assets.h"
#include "app/frame_memory.h"
#include "app/lab/lab.h"
#include "app/live/job_runner.h"
#include "app/options.h"
#include "app/ui/frame_pacer.h"
#include "bench/frame_clock.h"
#include "render/framebuffer.h"
#include "render/gl.h"
#include "render/headless_context.h"

using namespace onegpu;
using Clock = std::chrono::steady_clock;

namespace {

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// CPU milliseconds of the software rasteriser's own threads (Mesa names them "llvmpipe-N"),
// from /proc at the kernel's tick (10 ms): with the drawing thread's, what a frame costs the
// cores the trainer needs, whatever else the machine runs. 0 where there are none (a GPU).
double raster_cpu_ms() {
  double ms = 0;
  const long tick = sysconf(_SC_CLK_TCK);
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(t.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("llvmpipe", 0) != 0) continue;
    std::ifstream stat(t.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');  // the name may hold spaces; fields follow it
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stoull(field);
      if (i == 15) stime = std::stoull(field);
    }
    ms += (double)(utime + stime) * 1e3 / (double)tick;
  }
  return ms;
}

// Tokens trained between two moments, from the run state's finished steps.
std::int64_t tokens_done(const app::RunState& rs) {
  const app::LiveRun* run = rs.run();
  return run ? (std::int64_t)rs.history().size() * run->tokens_per_step : 0;
}

struct Window {
  double tokens_per_s = 0, fps = 0, worst_ms = 0;
  // CPU time over the window: the whole process (trainer workers, llvmpipe, this thread) and
  // this thread alone (draining events and building frames), milliseconds per second of wall.
  double process_cpu_per_s = 0, thread_cpu_per_s = 0, thread_ms_per_frame = 0, worst_thread_ms = 0;
  double process_ms_per_frame = 0;  // the whole process's CPU over the window, per frame drawn
  double raster_ms_per_frame = 0;   // llvmpipe's threads, per frame drawn
};

}  // namespace

int main(int argc, char** argv) {
  app::keep_frame_memory();  // as the program does at start-up
  double window_s = 4.0;
  int cap_fps = 0;  // the paced side's frames a second (0: the window's pace, App::frame_interval)
  int rounds = 3, frames = 60;
  bool big = true, retained = true, damage = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--window") && i + 1 < argc) window_s = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--frames") && i + 1 < argc) frames = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--no-512")) big = false;
    else if (!std::strcmp(argv[i], "--whole")) retained = false;
    else if (!std::strcmp(argv[i], "--whole-frame")) damage = false;
    else if (!std::strcmp(argv[i], "--cap") && i + 1 < argc) cap_fps = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: bench_lab [--window S] [--rounds N] [--frames N] [--cap FPS] [--no-512] [--whole] [--whole-frame]\n");
      return 2;
    }
  }
  const int W = 1600, H = 900;
  bench::print_load("start");
  render::HeadlessContext ctx;
  app::Options o;
  app::Assets assets = app::find_assets(o);
  ImGui::CreateContext();
  {
    app::App lab(assets, true, true, 1.0f, 0);
    lab.nav().set_lab(true);
    lab.lab().set_retained(retained);
    lab.set_lab_damage(damage);
    render::Framebuffer fb(W, H);
    fb.bind();
    app::JobRunner& jr = app::JobRunner::shared();
    auto pump = [&] { lab.drain_events(); };

    const cli::TrainArgs a64 = app::lab_train_args({"--model", "scale", "--pp", "8", "--dp", "8", "--ep", "8",
                                                    "--microbatches", "8", "--batch", "64", "--seq", "8"});
    lab.lab().set_args(a64);
    jr.configure(a64);
    jr.wait_idle(pump);
    std::printf("64-rank scale run (pp 8 x dp 8, ep 8, 8 microbatches, 64 texts of 8 tokens), %dx%d, %s\n", W, H,
                render::gl_description().c_str());
    jr.play();
    // Warm-up: a few steps, and the first frames (shader compile).
    for (auto t0 = Clock::now(); secs(t0, Clock::now()) < 2.0;) lab.frame(W, H, 1 / 60.f, 0), glFinish();

    // Three sides: the Lab drawing as fast as it can, drawing at most 60 frames a second (as
    // the window does), and not drawing at all.
    const long cap_us = cap_fps > 0 ? 1000000L / cap_fps : (long)(lab.frame_interval() * 1e6);
    cap_fps = (int)std::lround(1e6 / (double)cap_us);
    Window best_watched, best_capped, best_unwatched;
    for (int r = 0; r < rounds; ++r) {
      for (int side = 0; side < 3; ++side) {
        const bool watched = side != 2, capped = side == 1;
        lab.drain_events();
        const std::int64_t tok0 = tokens_done(lab.run_state());
        const auto t0 = Clock::now();
        const double pc0 = bench::process_cpu_ms(), tc0 = bench::thread_cpu_ms(), rc0 = raster_cpu_ms();
        int n = 0;
        double worst = 0, worst_thread = 0;
        app::FramePacer pacer;
        while (secs(t0, Clock::now()) < window_s) {
          const auto f0 = Clock::now();
          if (watched) {
            const double ft0 = bench::thread_cpu_ms();
            lab.frame(W, H, 1 / 60.f, secs(t0, f0));
            glFinish();
            ++n;
            worst = std::max(worst, secs(f0, Clock::now()) * 1e3);
            worst_thread = std::max(worst_thread, bench::thread_cpu_ms() - ft0);
            if (capped) pacer.wait((double)cap_us * 1e-6);  // as the window paces (app/ui/frame_pacer.h)
          } else {
            lab.drain_events();
            std::this_thread::sleep_for(std::chrono::milliseconds(16));
          }
        }
        lab.drain_events();
        const double el = secs(t0, Clock::now());
        const double pc = bench::process_cpu_ms() - pc0, tc = bench::thread_cpu_ms() - tc0, rc = raster_cpu_ms() - rc0;
        Window w{(double)(tokens_done(lab.run_state()) - tok0) / el, watched ? n / el : 0, worst,
                 pc / el, tc / el, n > 0 ? tc / n : 0, worst_thread, n > 0 ? pc / n : 0, n > 0 ? rc / n : 0};
        char frames_txt[240] = "";
        if (watched)
          std::snprintf(frames_txt, sizeof frames_txt,
                        "  %4.1f fps, slowest %4.0f ms; a frame: %5.2f ms CPU = this thread %5.2f (worst %5.2f) + raster %5.2f",
                        w.fps, w.worst_ms, w.thread_ms_per_frame + w.raster_ms_per_frame, w.thread_ms_per_frame,
                        w.worst_thread_ms, w.raster_ms_per_frame);
        std::printf("  round %d %-15s %8.0f tokens/s  CPU %5.0f ms/s (this thread %4.0f)%s\n", r + 1,
                    capped ? "watched paced" : watched ? "watched" : "unwatched", w.tokens_per_s,
                    w.process_cpu_per_s, w.thread_cpu_per_s, frames_txt);
        Window& best = capped ? best_capped : watched ? best_watched : best_unwatched;
        if (w.tokens_per_s > best.tokens_per_s) best = w;
      }
    }
    jr.pause();
    jr.wait_idle(pump);
    std::printf("best windows: watched %.0f tokens/s at %.1f fps (slowest frame %.0f ms); watched at %d fps "
                "%.0f tokens/s at %.1f fps (slowest %.0f ms); unwatched %.0f tokens/s\n",
                best_watched.tokens_per_s, best_watched.fps, best_watched.worst_ms, cap_fps, best_capped.tokens_per_s,
                best_capped.fps, best_capped.worst_ms, best_unwatched.tokens_per_s);
    const double u = std::max(1.0, best_unwatched.tokens_per_s);
    std::printf("trainer watched / unwatched: %.2f uncapped, %.2f at the pace of %d fps (aim >= 0.85); "
                "fps while training: %.1f uncapped, %.1f paced (aim >= 30)\n",
                best_watched.tokens_per_s / u, best_capped.tokens_per_s / u, cap_fps, best_watched.fps, best_capped.fps);
    std::printf("CPU of a Lab frame while training (drawing thread + llvmpipe's threads; the same on a quiet machine): "
                "%.2f ms uncapped (thread %.2f + raster %.2f), %.2f ms paced (thread %.2f + raster %.2f); at %d fps that is "
                "%.0f ms of CPU a second; process CPU %.0f / %.0f / %.0f ms a second (watched / paced / unwatched)\n",
                best_watched.thread_ms_per_frame + best_watched.raster_ms_per_frame, best_watched.thread_ms_per_frame,
                best_watched.raster_ms_per_frame, best_capped.thread_ms_per_frame + best_capped.raster_ms_per_frame,
                best_capped.thread_ms_per_frame, best_capped.raster_ms_per_frame, cap_fps,
                cap_fps * (best_capped.thread_ms_per_frame + best_capped.raster_ms_per_frame), best_watched.process_cpu_per_s,
                best_capped.process_cpu_per_s, best_unwatched.process_cpu_per_s);

    {
      // The Lab's own cost on that run, paused: what a frame takes from the trainer's cores.
      lab.frame(W, H, 1 / 60.f, 0);
      glFinish();
      bench::FrameStats st;
      for (int i = 0; i < frames; ++i) {
        bench::FrameTimer ft;
        ft.start();
        lab.frame(W, H, 1 / 60.f, i / 60.0);
        glFinish();
        st.add(ft.stop());
      }
      const auto m = st.mean();
      std::printf("64-rank run, paused: %.1f ms a frame (%.0f fps); CPU %.1f ms a frame (this thread %.1f); %zu timeline "
                  "rectangles, %zu scene shapes drawn (where changed), %d ImGui vertices\n",
                  m.wall, 1e3 / m.wall, m.cpu, m.thread, lab.lab().drawn().rects, lab.stats().instances,
                  ImGui::GetDrawData() ? ImGui::GetDrawData()->TotalVtxCount : 0);
    }
    if (big) {
      const cli::TrainArgs a512 = app::lab_train_args({"--model", "scale", "--pp", "8", "--dp", "64", "--ep", "8",
                                                       "--schedule", "gpipe", "--microbatches", "1", "--batch", "64",
                                                       "--seq", "8"});
      jr.configure(a512);
      jr.step_whole();
      jr.wait_idle(pump);
      lab.frame(W, H, 1 / 60.f, 0);
      glFinish();
      bench::FrameStats st;
      for (int i = 0; i < frames; ++i) {
        bench::FrameTimer ft;
        ft.start();
        lab.frame(W, H, 1 / 60.f, i / 60.0);
        glFinish();
        st.add(ft.stop());
      }
      const auto m = st.mean();
      std::printf("512-rank step, paused: %.1f ms a frame (%.0f fps), slowest %.1f ms; %.2fx the 16.7 ms of 60 fps; "
                  "CPU %.1f ms a frame (this thread %.1f), %zu timeline rectangles, %d ImGui vertices\n",
                  m.wall, 1e3 / m.wall, st.worst.wall, m.wall / (1000.0 / 60.0), m.cpu, m.thread,
                  lab.lab().drawn().rects, ImGui::GetDrawData() ? ImGui::GetDrawData()->TotalVtxCount : 0);
    }
  }
  ImGui::DestroyContext();
  bench::print_load("end");
  return 0;
}
