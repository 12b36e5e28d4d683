#include "render/renderer.h"

#include "render/gl.h"

namespace onegpu::render {

Renderer::Renderer(const AssetPaths& assets)
    : shape_programs_(assets.shader_dir),
      text_shader_(assets.shader_dir / "text.vert", assets.shader_dir / "text.frag"),
      font_(std::make_unique<SdfFont>(assets.font)),
      world_(std::make_unique<Canvas>(&shape_programs_, &text_shader_, font_.get())),
      screen_(std::make_unique<Canvas>(&shape_programs_, &text_shader_, font_.get())) {}

void Renderer::begin(int x, int y, int w, int h, glm::vec4 clear, bool clear_now) {
  vx_ = x; vy_ = y; vw_ = w > 0 ? w : 1; vh_ = h > 0 ? h : 1;
  stats_ = {};
  labels_.clear();
  world_->set_view({});
  screen_->set_view({});
  glViewport(vx_, vy_, vw_, vh_);
  glEnable(GL_SCISSOR_TEST);
  glScissor(vx_, vy_, vw_, vh_);
  if (clear_now) {
    glClearColor(clear.r, clear.g, clear.b, clear.a);
    glClear(GL_COLOR_BUFFER_BIT);
  }
  glDisable(GL_DEPTH_TEST);
  glDisable(GL_CULL_FACE);
  glEnable(GL_BLEND);
  glBlendFunc(GL_ONE, GL_ONE_MINUS_SRC_ALPHA);  // shaders output premultiplied alpha
  if (!warm_) {
    // llvmpipe compiles a program's pixel code at its first draw: tens of milliseconds each. One
    // shape of every kind, all colours transparent (so not a pixel changes), compiles them all
    // now rather than on the frame where a chapter first draws a hatched box, an arc or a word.
    warm_ = true;
    Camera cam;
    cam.viewport = {static_cast<float>(vw_), static_cast<float>(vh_)};
    cam.height = cam.viewport.y;  // a world unit a pixel
    cam.center = cam.viewport * 0.5f;
    DrawStats unused;
    ShapeBatch warm(&shape_programs_);
    auto shape = [&](float kind, float hatch) {  // a pixel across
      const glm::vec4 geom{cam.center, kind == 2.0f ? cam.center : glm::vec2(0.5f)};  // a segment: its two ends
      return ShapeInstance{geom, {}, {}, {0.1f, 0.1f, kind, 0.0f}, {hatch, 0.1f, 0.0f, 0.0f}, {}};
    };
    for (const ShapeInstance& s : {shape(0, 0), shape(1, 0), shape(2, 0), shape(3, 0), shape(0, 0.2f)}) {
      warm.add(s);  // alone in its batch: drawn by its kind's program
      warm.flush(cam, unused);
    }
    warm.add(shape(0, 0));  // two short runs: the general program
    warm.add(shape(1, 0));
    warm.flush(cam, unused);
    TextBatch text(&text_shader_, font_.get());  // and the text's, with a glyph of no colour at all
    text.add("a", cam.center, 8.0f, glm::vec4(0.0f));
    text.flush(cam, unused);
    // A frame's worth of boxes of no colour over the whole viewport: llvmpipe grows its bins and
    // buffers once, here, not on the first busy frame (the field's first: 18 ms of this thread
    // against 3 on the next).
    for (int i = 0; i < 64 * 64; ++i) {
      const glm::vec2 c{((float)(i % 64) + 0.5f) * cam.viewport.x / 64.0f, ((float)(i / 64) + 0.5f) * cam.viewport.y / 64.0f};
      warm.add(ShapeInstance{glm::vec4{c, cam.viewport / 64.0f}, {}, {}, {0.1f, 0.1f, 0.0f, 0.0f}, {0.0f, 0.1f, 0.0f, 0.0f}, {}});
    }
    warm.flush(cam, unused);
  }
}

void Renderer::set_text_rule(const Camera& cam, float min_px) {
  world_->set_view({cam.visible(), cam.world_per_pixel(), min_px, &labels_});
  const glm::vec2 vp{static_cast<float>(vw_), static_cast<float>(vh_)};
  screen_->set_view({{{0.0f, 0.0f}, vp}, 1.0f, min_px, &labels_});
}

Camera Renderer::pixel_camera() const {
  Camera px;
  px.viewport = {static_cast<float>(vw_), static_cast<float>(vh_)};
  px.height = px.viewport.y;
  px.center = px.viewport * 0.5f;
  return px;
}

void Renderer::end(const Camera& cam) {
  world_->flush(cam, stats_);
  screen_->flush(pixel_camera(), stats_);
  glDisable(GL_SCISSOR_TEST);
}

void Renderer::prepare(const Camera& cam) {
  prepared_cam_ = cam;
  world_->prepare(cam, stats_);
  screen_->prepare(pixel_camera(), stats_);
}

void Renderer::drawn_items(std::vector<DrawnItem>& out) const {
  world_->drawn(prepared_cam_, out);
  screen_->drawn(pixel_camera(), out);
}

void Renderer::end_clipped(const std::vector<glm::ivec4>& clips, glm::vec4 clear) {
  glViewport(vx_, vy_, vw_, vh_);
  glEnable(GL_SCISSOR_TEST);
  glClearColor(clear.r, clear.g, clear.b, clear.a);
  for (const glm::ivec4& c : clips) {
    glScissor(c.x, c.y, c.z, c.w);
    glClear(GL_COLOR_BUFFER_BIT);
  }
  if (!clips.empty()) {
    world_->flush(prepared_cam_, stats_, &clips);
    screen_->flush(pixel_camera(), stats_, &clips);
  } else {  // nothing to draw: the canvases still start the next frame empty
    world_->clear_items();
    screen_->clear_items();
  }
  glDisable(GL_SCISSOR_TEST);
}

}  // namespace onegpu::render
