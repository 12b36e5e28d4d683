#include "render/retained_layer.h"

#include <string>

#include "render/error.h"
#include "render/gl.h"

namespace onegpu::render {

RetainedLayer::~RetainedLayer() {
  if (color_) glDeleteTextures(1, &color_);
  if (fbo_) glDeleteFramebuffers(1, &fbo_);
}

bool RetainedLayer::resize(int w, int h) {
  w = w > 0 ? w : 1, h = h > 0 ? h : 1;
  if (fbo_ && w == w_ && h == h_) return false;
  GLint bound = 0;
  glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &bound);
  if (!fbo_) glGenFramebuffers(1, &fbo_), glGenTextures(1, &color_);
  w_ = w, h_ = h;
  glBindTexture(GL_TEXTURE_2D, color_);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, w_, h_, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glBindTexture(GL_TEXTURE_2D, 0);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, color_, 0);
  const bool ok = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
  glBindFramebuffer(GL_FRAMEBUFFER, (GLuint)bound);
  if (!ok) throw Error("cannot create a " + std::to_string(w_) + "x" + std::to_string(h_) + " retained layer");
  return true;
}

void RetainedLayer::begin() {
  glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &saved_fbo_);
  glGetIntegerv(GL_VIEWPORT, saved_viewport_);
  glBindFramebuffer(GL_DRAW_FRAMEBUFFER, fbo_);
  glViewport(0, 0, w_, h_);
}

void RetainedLayer::end() {
  glBindFramebuffer(GL_DRAW_FRAMEBUFFER, (GLuint)saved_fbo_);
  glViewport(saved_viewport_[0], saved_viewport_[1], saved_viewport_[2], saved_viewport_[3]);
}

void RetainedLayer::clear(glm::vec4 c, Rect r) {
  glEnable(GL_SCISSOR_TEST);
  glScissor(r.x, r.y, r.w, r.h);
  glClearColor(c.r, c.g, c.b, c.a);
  glClear(GL_COLOR_BUFFER_BIT);
}

void RetainedLayer::copy(Rect r) const {
  // Same place, same size, nearest: a driver copies the rows (llvmpipe: a memcpy when the
  // formats match).
  GLint read = 0;
  glGetIntegerv(GL_READ_FRAMEBUFFER_BINDING, &read);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, fbo_);
  glEnable(GL_SCISSOR_TEST);
  glScissor(r.x, r.y, r.w, r.h);
  glBlitFramebuffer(r.x, r.y, r.x + r.w, r.y + r.h, r.x, r.y, r.x + r.w, r.y + r.h, GL_COLOR_BUFFER_BIT, GL_NEAREST);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, (GLuint)read);
}

}  // namespace onegpu::render
