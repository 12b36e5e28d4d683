#include "app/headless.h"

#include <cstdio>

#include <imgui.h>

#include "app/app.h"
#include "app/assets.h"
#include "render/error.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"
#include "trainer/io/output_file.h"

namespace onegpu::app {

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
    app.frame(o.width, o.height, 0.0f, 100.0);
    img.width = o.width;
    img.height = o.height;
    img.rgba = fb.read_rgba();
    img.camera = app.last_camera();
    img.scene_x = app.scene_rect().x;
    img.scene_y = app.scene_rect().y;
    img.stats = app.stats();
    img.t = t;
  } catch (...) {
    if (imgui) ImGui::DestroyContext(imgui);
    throw;
  }
  if (imgui) ImGui::DestroyContext(imgui);
  return img;
}

int run_headless(const Options& o, int chapter_index) {
  trainer::files::check_output(o.out, "--out");  // before rendering: a bad path is one line, fast
  HeadlessImage img = render_headless(o, chapter_index);
  render::write_png(o.out, img.width, img.height, img.rgba);
  std::printf("wrote %s (%dx%d, chapter %s at %.2f s)\n", o.out.c_str(), img.width, img.height,
              std::string(story()[chapter_index].id).c_str(), img.t);
  return 0;
}

}  // namespace onegpu::app
