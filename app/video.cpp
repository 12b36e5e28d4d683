#include "app/video.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <imgui.h>

#include "app/app.h"
#include "app/assets.h"
#include "app/headless.h"
#include "app/story.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"
#include "trainer/error.h"
#include "trainer/io/output_file.h"

namespace onegpu::app {

using trainer::Error;

int video_frames(double seconds, int fps) { return std::max(1, (int)std::lround(seconds * fps)); }

namespace {

// ffmpeg reading raw RGBA frames on its standard input, writing `tmp`.
class Encoder {
 public:
  Encoder(const std::string& tmp, int w, int h, int fps) {
    if (std::system("command -v ffmpeg >/dev/null 2>&1") != 0)
      throw Error("--video needs ffmpeg on PATH (Debian: apt-get install ffmpeg; scripts/deps installs it)");
    const std::string cmd = "ffmpeg -hide_banner -loglevel error -y -f rawvideo -pix_fmt rgba -s " + std::to_string(w) +
                            "x" + std::to_string(h) + " -r " + std::to_string(fps) +
                            " -i - -an -c:v libx264 -pix_fmt yuv420p -preset veryfast '" + tmp + "'";
    pipe_ = popen(cmd.c_str(), "w");
    if (!pipe_) throw Error("--video: cannot start ffmpeg");
  }
  ~Encoder() {
    if (pipe_) pclose(pipe_);
  }
  void frame(const std::vector<std::uint8_t>& rgba) {
    if (std::fwrite(rgba.data(), 1, rgba.size(), pipe_) != rgba.size()) throw Error("--video: ffmpeg stopped taking frames");
    ++frames_;
  }
  // Waits for ffmpeg; throws when it failed.
  void finish() {
    const int rc = pclose(pipe_);
    pipe_ = nullptr;
    if (rc != 0) throw Error("--video: ffmpeg failed (exit status " + std::to_string(rc) + ")");
  }
  int frames() const { return frames_; }

 private:
  FILE* pipe_ = nullptr;
  int frames_ = 0;
};

}  // namespace

int run_video(const Options& o, int chapter_index) {
  trainer::files::check_output(o.video, "--video");  // a bad path is one line, before any work
  if (o.width % 2 || o.height % 2) throw Error("--video needs an even width and height (H.264), not " +
                                               std::to_string(o.width) + "x" + std::to_string(o.height));
  // ffmpeg writes next to the file, which is renamed into place only when it is whole.
  const std::filesystem::path out(o.video);
  const std::string tmp = (out.parent_path() / ("." + out.stem().string() + ".part" + out.extension().string())).string();
  render::HeadlessContext ctx;
  Assets assets = find_assets(o);
  const bool ui = !o.no_ui;
  ImGuiContext* imgui = ui ? ImGui::CreateContext() : nullptr;
  int frames = 0;
  std::string what;
  try {
    const float scale = o.ui_scale > 0 ? o.ui_scale : 1.0f;
    App app(assets, ui, true, scale, chapter_index);
    app.set_gl_description(ctx.description());
    app.set_frame_ms(-1.0f);
    render::Framebuffer fb(o.width, o.height);
    fb.bind();
    Encoder enc(tmp, o.width, o.height, o.fps);
    const double dt = 1.0 / o.fps;
    if (o.lab || !o.view.empty()) {
      prepare_headless_lab(app, o);
      app.frame(o.width, o.height, 0.0f, 0.0);  // ImGui settles its layout
      const int n = video_frames(o.seconds > 0 ? o.seconds : ReplayCursor::kStepSeconds, o.fps);
      for (int i = 0; i < n; ++i) {
        app.lab().scrub_to(app.run_state(), n > 1 ? (double)i / (n - 1) : 1.0);
        app.frame(o.width, o.height, (float)dt, 100.0 + i * dt);
        enc.frame(fb.read_rgba());
      }
      what = "a replay of the Lab's step";
    } else {
      const bool all = o.chapter == "all";
      const int first = all ? 0 : chapter_index, last = all ? (int)story().size() - 1 : chapter_index;
      for (int c = first; c <= last; ++c) {
        app.nav().go_to(c);
        Chapter& ch = app.current();
        const double len = o.seconds > 0 ? o.seconds : ch.duration();
        ch.prepare(ch.duration());  // work a picture needs (a recorded run) is done before its first frame
        const int n = video_frames(len, o.fps);
        app.nav().set_time(0.0f);
        app.frame(o.width, o.height, 0.0f, 0.0);  // the chapter's first frame settles the layout
        for (int i = 0; i < n; ++i) {
          app.nav().set_time((float)std::min<double>(i * dt, ch.duration()));
          app.frame(o.width, o.height, 0.0f, 100.0 + i * dt);
          enc.frame(fb.read_rgba());
        }
      }
      what = all ? "the whole story" : "chapter " + std::string(story()[chapter_index].id);
    }
    frames = enc.frames();
    enc.finish();
  } catch (...) {
    if (imgui) ImGui::DestroyContext(imgui);
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  if (imgui) ImGui::DestroyContext(imgui);
  std::error_code ec;
  std::filesystem::rename(tmp, out, ec);
  if (ec) throw Error("--video: cannot move the video into place at " + o.video + ": " + ec.message());
  std::printf("wrote %s (%d frames at %d fps, %dx%d, %s)\n", o.video.c_str(), frames, o.fps, o.width, o.height, what.c_str());
  return 0;
}

}  // namespace onegpu::app
