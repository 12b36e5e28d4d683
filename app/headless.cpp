#include "app/headless.h"

#include <cstdio>

#include <imgui.h>

#include "app/app.h"
#include "app/assets.h"
#include "app/lab/lab.h"
#include "app/live/job_runner.h"
#include "app/live/trace_run.h"
#include "app/video.h"
#include "trainer/error.h"
#include "render/error.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"
#include "trainer/io/output_file.h"
#include "app/png_file.h"

namespace onegpu::app {

namespace {
// What a finished headless frame hands back.
void keep_frame(App& app, render::Framebuffer& fb, const Options& o, HeadlessImage& img) {
  img.width = o.width;
  img.height = o.height;
  img.rgba = fb.read_rgba();
  img.camera = app.last_camera();
  img.scene_x = app.scene_rect().x;
  img.scene_y = app.scene_rect().y;
  img.stats = app.stats();
}
}  // namespace

HeadlessImage render_headless(const Options& o, int chapter_index) {
  render::HeadlessContext ctx;
  Assets assets = find_assets(o);
  bool ui = !o.no_ui;
  ImGuiContext* imgui = ui ? ImGui::CreateContext() : nullptr;
  HeadlessImage img;
  try {
    float scale = o.ui_scale > 0 ? o.ui_scale : 1.0f;
    App app(assets, ui, true, scale, chapter_index);
    app.set_gl_description(ctx.description());
    render::Framebuffer fb(o.width, o.height);
    fb.bind();
    float duration = app.current().duration();
    float t = o.at ? *o.at : duration;
    app.current().prepare(t);
    // Two frames: the first lets ImGui settle its layout; the picture is the second, at t.
    app.set_frame_ms(-1.0f);  // no timing in the picture: two renders must be identical
    app.frame(o.width, o.height, 0.0f, 0.0);
    app.nav().set_time(t);
    // A picture past the moment a chapter waits for its button is the one after pressing it.
    if (const float hold = app.current().waits_for_button_at(); hold >= 0.0f && t > hold) app.nav().mark_button_done();
    app.frame(o.width, o.height, 0.0f, 100.0);
    keep_frame(app, fb, o, img);
    img.t = t;
  } catch (...) {
    if (imgui) ImGui::DestroyContext(imgui);
    throw;
  }
  if (imgui) ImGui::DestroyContext(imgui);
  return img;
}

void prepare_headless_lab(App& app, const Options& o) {
  const cli::TrainArgs args = o.view.empty() ? lab_train_args(o.lab_args) : cli::TrainArgs{};
  app.nav().set_lab(true);
  if (o.view.empty()) app.lab().set_args(args);
  JobRunner& jr = JobRunner::shared();
  auto pump = [&] { app.drain_events(); };
  if (!o.view.empty()) {
    const std::string why = app.open_recorded(o.view);
    if (!why.empty()) throw trainer::Error(why);
  } else {
    jr.configure(args);
  }
  jr.wait_idle(pump);
  if (!jr.status().error.empty()) throw trainer::Error(jr.status().error);
  for (int i = 0; i < o.lab_ops; ++i) {
    jr.step_op();
    if (i % 64 == 63) jr.wait_idle(pump);
  }
  for (int i = 0; i < o.lab_steps; ++i) jr.step_whole();
  jr.wait_idle(pump);
  if (!jr.status().error.empty()) throw trainer::Error(jr.status().error);
  if (!o.compare.empty()) {
    // The other split: the run's own flags, then the compare flags over them.
    std::vector<std::string> flags = o.lab_args;
    flags.insert(flags.end(), o.compare.begin(), o.compare.end());
    if (jr.status().steps_done < 1) throw trainer::Error("--compare branches a finished step: give --steps 1 or more");
    jr.branch(lab_train_args(flags), jr.status().steps_done - 1);
    jr.wait_idle(pump);
    if (!jr.status().error.empty()) throw trainer::Error(jr.status().error);
    pump();
    if (o.tab.empty()) app.lab().set_tab(LabTab::Compare);
  }
  LabTab tab;
  if (!o.tab.empty() && lab_tab_from(o.tab, tab)) app.lab().set_tab(tab);
}

HeadlessImage render_headless_lab(const Options& o) {
  if (o.view.empty()) (void)lab_train_args(o.lab_args);  // a bad flag is one line before any GL
  else (void)load_trace_run(o.view);
  render::HeadlessContext ctx;
  Assets assets = find_assets(o);
  bool ui = !o.no_ui;
  ImGuiContext* imgui = ui ? ImGui::CreateContext() : nullptr;
  HeadlessImage img;
  try {
    float scale = o.ui_scale > 0 ? o.ui_scale : 1.0f;
    App app(assets, ui, true, scale, 0);
    app.set_gl_description(ctx.description());
    prepare_headless_lab(app, o);
    render::Framebuffer fb(o.width, o.height);
    fb.bind();
    app.set_frame_ms(-1.0f);
    app.frame(o.width, o.height, 0.0f, 0.0);
    // A tab asked for (--tab) where the bar cannot show them all slides into view over a few
    // frames (a third of a second at most): let it arrive, as the window would.
    for (int i = 0; i < 40 && app.lab().drawn().tabs_settling; ++i) app.frame(o.width, o.height, 0.0f, 0.0);
    if (o.scrub) app.lab().scrub_to(app.run_state(), *o.scrub);  // after a frame: the step is indexed
    app.frame(o.width, o.height, 0.0f, 100.0);
    keep_frame(app, fb, o, img);
    img.lab = app.lab().drawn();
  } catch (...) {
    if (imgui) ImGui::DestroyContext(imgui);
    throw;
  }
  if (imgui) ImGui::DestroyContext(imgui);
  return img;
}

int run_headless(const Options& o, int chapter_index) {
  if (!o.video.empty()) return run_video(o, chapter_index);
  trainer::files::check_output(o.out, "--out");  // before rendering: a bad path is one line, fast
  if (!o.view.empty()) {
    HeadlessImage img = render_headless_lab(o);
    save_png(o.out, img.width, img.height, img.rgba);
    std::printf("wrote %s (%dx%d, the Lab on %s)\n", o.out.c_str(), img.width, img.height, o.view.c_str());
    return 0;
  }
  if (o.lab) {
    HeadlessImage img = render_headless_lab(o);
    save_png(o.out, img.width, img.height, img.rgba);
    const RunnerStatus st = JobRunner::shared().status();
    std::printf("wrote %s (%dx%d, the Lab after %d step%s%s)\n", o.out.c_str(), img.width, img.height, st.steps_done,
                st.steps_done == 1 ? "" : "s", st.in_step ? " and part of the next" : "");
    return 0;
  }
  HeadlessImage img = render_headless(o, chapter_index);
  save_png(o.out, img.width, img.height, img.rgba);
  std::printf("wrote %s (%dx%d, chapter %s at %.2f s)\n", o.out.c_str(), img.width, img.height,
              std::string(story()[chapter_index].id).c_str(), img.t);
  return 0;
}

}  // namespace onegpu::app
