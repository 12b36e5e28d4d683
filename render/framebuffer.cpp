#include "render/framebuffer.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include <stb/stb_image_write.h>  // implementation comes from Debian's libstb

#include "render/error.h"
#include "render/gl.h"

namespace onegpu::render {

Framebuffer::Framebuffer(int width, int height) : w_(width), h_(height) {
  glGenFramebuffers(1, &fbo_);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glGenTextures(1, &color_);
  glBindTexture(GL_TEXTURE_2D, color_);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, w_, h_, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, color_, 0);
  if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE)
    throw Error("cannot create an offscreen framebuffer of " + std::to_string(w_) + "x" +
                std::to_string(h_));
}

Framebuffer::~Framebuffer() {
  glDeleteTextures(1, &color_);
  glDeleteFramebuffers(1, &fbo_);
}

void Framebuffer::bind() const { glBindFramebuffer(GL_FRAMEBUFFER, fbo_); }

std::vector<std::uint8_t> read_pixels(int w, int h) {
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  // GL's rows run bottom to top; images run top to bottom.
  std::vector<std::uint8_t> row(static_cast<std::size_t>(w) * 4);
  for (int y = 0; y < h / 2; ++y) {
    auto* a = &px[static_cast<std::size_t>(y) * w * 4];
    auto* b = &px[static_cast<std::size_t>(h - 1 - y) * w * 4];
    std::memcpy(row.data(), a, row.size());
    std::memcpy(a, b, row.size());
    std::memcpy(b, row.data(), row.size());
  }
  return px;
}

std::vector<std::uint8_t> Framebuffer::read_rgba() const {
  bind();
  return read_pixels(w_, h_);
}

std::string encode_png(int w, int h, const std::vector<std::uint8_t>& rgba) {
  std::string png;
  auto append = [](void* ctx, void* data, int size) {
    static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
  };
  if (!stbi_write_png_to_func(append, &png, w, h, 4, rgba.data(), w * 4))
    throw Error("cannot encode a " + std::to_string(w) + "x" + std::to_string(h) + " PNG");
  return png;
}

}  // namespace onegpu::render
