#include "app/window.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>
#include <cstdio>
#include <cstdlib>

#include "render/gl.h"  // before GLFW, which must not pull in the system GL header
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include "app/app.h"
#include "app/ui/input_queue.h"
#include "app/ui/press_after_move.h"
#include "app/ui/wheel_after_move.h"
#include "app/ui/key_commands.h"
#include "app/ui/frame_pacer.h"
#include "app/ui/redraw.h"
#include "app/live/trace_run.h"
#include "app/run/story_run.h"
#include "app/assets.h"
#include "render/error.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"
#include "trainer/io/output_file.h"
#include "app/png_file.h"

namespace onegpu::app {

namespace {

const char* kNoDisplay =
    "onegpu: no display to open a window on (DISPLAY and WAYLAND_DISPLAY are unset).\n"
    "  To render a chapter without a window:  onegpu --headless --chapter field --out field.png\n"
    "  To use a virtual display:              xvfb-run -a onegpu\n";

struct Glfw {
  bool ok = glfwInit() == GLFW_TRUE;
  ~Glfw() { if (ok) glfwTerminate(); }
};

// One key press: a story action, or with the Lab open the Lab's command keys.
void handle_key(App& app, double now, const KeyPress& k) {
  Navigator& nav = app.nav();
  auto act = [&](Action a) {
    if (a == Action::SavePng && !nav.blank()) app.request_png();  // of the next frame, Lab or chapter
    else nav.apply(a, now);
  };
  if (nav.lab_open()) {
    if (std::optional<Action> a = lab_action(k.key, k.mods)) act(*a);
    else if (char c = lab_key(k.key, k.mods)) app.lab().key(c);
    return;
  }
  if (std::optional<Action> a = story_action(k.key, k.mods)) act(*a);
}

// The wheel turns chapters over the picture (the scene viewport); over a panel it scrolls
// the panel (ImGui's own callback handles that). Positions come in window coordinates and
// the scene in framebuffer pixels: scaled by their ratio (HiDPI).
void handle_input(App& app, GLFWwindow* win, double now, const InputBatch& in, WheelAfterMove& wheel) {
  ImGuiIO& io = ImGui::GetIO();
  if (!io.WantTextInput)  // typing into a field of the Lab is not a command
    for (const KeyPress& k : in.keys) handle_key(app, now, k);
  const std::vector<WheelTurn> turns = wheel.ready(in.wheel, io.MousePos.x, io.MousePos.y);
  if (app.nav().lab_open()) return;
  int ww, wh, fw, fh;
  glfwGetWindowSize(win, &ww, &wh);
  glfwGetFramebufferSize(win, &fw, &fh);
  const double sx = ww > 0 ? double(fw) / ww : 1.0, sy = wh > 0 ? double(fh) / wh : 1.0;
  for (const WheelTurn& w : turns)
    if (wheel_over_scene(app.scene_rect(), w.x * sx, w.y * sy) && !io.WantCaptureMouse)
      app.nav().apply(w.dy < 0 ? Action::WheelForward : Action::WheelBack, now);
}

void set_fullscreen(GLFWwindow* w, bool on, int saved[4]) {
  GLFWmonitor* mon = glfwGetPrimaryMonitor();
  if (on && mon) {
    glfwGetWindowPos(w, &saved[0], &saved[1]);
    glfwGetWindowSize(w, &saved[2], &saved[3]);
    const GLFWvidmode* mode = glfwGetVideoMode(mon);
    glfwSetWindowMonitor(w, mon, 0, 0, mode->width, mode->height, mode->refreshRate);
  } else {
    glfwSetWindowMonitor(w, nullptr, saved[0], saved[1], saved[2], saved[3], 0);
  }
}

}  // namespace

int run_window(const Options& o, int chapter_index) {
  const char* d = std::getenv("DISPLAY");
  const char* wl = std::getenv("WAYLAND_DISPLAY");
  if ((!d || !*d) && (!wl || !*wl)) {
    std::fputs(kNoDisplay, stderr);
    return 2;
  }
  if (!o.screenshot.empty()) trainer::files::check_output(o.screenshot, "--screenshot");  // before the window
  Assets assets = find_assets(o);  // fail before opening anything
  Glfw glfw;
  if (!glfw.ok) {
    std::fputs(kNoDisplay, stderr);
    return 2;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);  // HiDPI: the window grows with the monitor's scale
  float content_scale = 1.0f;
  if (GLFWmonitor* mon = glfwGetPrimaryMonitor()) {
    float sx = 1, sy = 1;
    glfwGetMonitorContentScale(mon, &sx, &sy);
    content_scale = std::max(1.0f, sx);
  }
  int w = o.size_given ? o.width : 1600, h = o.size_given ? o.height : 900;
  // The default size never overflows a small screen (a classroom projector at 1024x600): it
  // shrinks to the primary monitor's work area. A --size the user gave is kept as given.
  if (GLFWmonitor* mon = glfwGetPrimaryMonitor(); mon && !o.size_given) {
    int ax = 0, ay = 0, aw = 0, ah = 0;
    glfwGetMonitorWorkarea(mon, &ax, &ay, &aw, &ah);
    if (aw > 0 && ah > 0) {  // the window grows by content_scale on screens with a scale (SCALE_TO_MONITOR)
      w = std::min(w, (int)((float)aw / content_scale));
      h = std::min(h, (int)((float)ah / content_scale));
    }
  }
  GLFWwindow* win = glfwCreateWindow(w, h, "onegpu", nullptr, nullptr);
  if (!win) {
    std::fputs("onegpu: cannot open an OpenGL 3.3 core window on this display\n", stderr);
    return 2;
  }
  glfwMakeContextCurrent(win);
  glfwSwapInterval(1);
  if (!gladLoadGL(glfwGetProcAddress)) {
    std::fputs("onegpu: cannot load OpenGL functions\n", stderr);
    glfwDestroyWindow(win);
    return 2;
  }

  ImGui::CreateContext();
  install_input_callbacks(win);  // before ImGui's, which calls them in turn
  ImGui_ImplGlfw_InitForOpenGL(win, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
  int rc = 0;
  try {
    App app(assets, true, false, o.ui_scale > 0 ? o.ui_scale : content_scale, chapter_index);
    app.set_gl_description(render::gl_description());
    app.set_pixel_density(content_scale);
    int saved[4] = {100, 100, w, h};
    bool fullscreen = false;
    if (o.fullscreen) app.nav().apply(Action::ToggleFullscreen, 0.0);
    app.nav().set_reduced_motion(o.reduced_motion);
    if (!o.view.empty()) {
      TraceRun t = load_trace_run(o.view);
      app.nav().set_lab(true);
      app.show_recorded(t.run, t.events);
    }
    // The story's corpus and tokenizer are built now, in the background, so no chapter's first
    // frame waits for them (the Lab's run goes first when the window opens on the Lab).
    JobRunner::shared().set_jobs_idle_class(true);  // background jobs never hold up a frame
    if (!o.lab && o.view.empty()) StoryRun::build_soon();
    if (o.lab) {
      const cli::TrainArgs a = lab_train_args(o.lab_args);
      app.lab().set_args(a);
      app.nav().set_lab(true);
      JobRunner::shared().configure(a);
      if (o.lab_play) JobRunner::shared().play();
    }
    auto t0 = std::chrono::steady_clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    double last = 0.0;
    float smoothed_ms = 16.7f;
    // Draw on demand (see app/ui/redraw.h); --frames N draws every frame so that it ends.
    RedrawPolicy redraw;
    FramePacer pacer;  // the pace between frames drawn back to back
    PressAfterMove press_after_move;  // a click where the pointer just moved: a frame later
    WheelAfterMove wheel_after_move;  // and a wheel turn
    bool animating = true, busy = false;
    for (int frame = 0; !glfwWindowShouldClose(win) && !app.nav().quit();) {
      const double wait = o.frames > 0 ? 0.0 : redraw.wait_seconds(animating, busy, seconds() - last);
      if (wait > 0.0) glfwWaitEventsTimeout(wait);
      else glfwPollEvents();
      const double now = seconds();
      const InputBatch input = input_queue().take();
      handle_input(app, win, now, input, wheel_after_move);
      if (wheel_after_move.holding()) input_queue().touch();  // the held turn is owed its frame
      if (app.nav().fullscreen() != fullscreen) {
        fullscreen = app.nav().fullscreen();
        set_fullscreen(win, fullscreen, saved);
      }
      animating = app.animating(now);
      busy = app.busy();
      if (o.frames <= 0 && !redraw.should_draw(input.touched, animating, busy, now - last)) {
        app.drain_events();  // nothing to draw, but the live run's rings stay empty
        continue;
      }
      // The chapter clock moves by the time since the last frame, capped: after a still spell
      // a chapter that opens now starts from its beginning.
      const float dt = frame == 0 ? 0.0f : static_cast<float>(std::min(now - last, 0.1));
      last = now;
      int fw, fh;
      glfwGetFramebufferSize(win, &fw, &fh);
      if (fw <= 0 || fh <= 0) {  // minimised: draw nothing, but keep taking the run's events
        app.drain_events();
        std::this_thread::sleep_for(std::chrono::milliseconds(16));
        continue;
      }
      ImGui_ImplGlfw_NewFrame();
      if (ImGui::GetCurrentContext()) {
        ImGuiIO& io = ImGui::GetIO();
        press_after_move.filter(io.MousePos.x, io.MousePos.y, io.MouseDown);
        if (press_after_move.holding()) input_queue().touch();  // the held press is owed its frame
      }
      auto f0 = std::chrono::steady_clock::now();
      app.frame(fw, fh, dt, now);
      bool last_frame = o.frames > 0 && frame + 1 >= o.frames;
      if (last_frame && !o.screenshot.empty()) {
        glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
        glReadBuffer(GL_BACK);
        save_png(o.screenshot, fw, fh, render::read_pixels(fw, fh));
      }
      glfwSwapBuffers(win);
      float ms = std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - f0).count();
      smoothed_ms = smoothed_ms * 0.9f + ms * 0.1f;
      app.set_frame_ms(smoothed_ms);
      // Asked again after the frame: what it did may want more frames (a PNG written puts up its
      // toast), and the wait below would otherwise sleep on the answer from before it, the
      // toast showing a second or two late.
      animating = app.animating(now);
      ++frame;
      if (last_frame) {
        std::printf("drew %d frames at %dx%d (%s)\n", frame, fw, fh, render::gl_description().c_str());
        break;
      }
      // At most 60 frames a second even where the display has no vertical sync (Xvfb, some
      // drivers), 30 while the Lab's run trains (App::frame_interval): the trainer shares these
      // cores and needs them more than a 200th frame.
      pacer.wait(app.frame_interval());
    }
  } catch (const render::Error& e) {
    std::fprintf(stderr, "onegpu: %s\n", e.what());
    rc = 2;
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(win);
  return rc;
}

}  // namespace onegpu::app
