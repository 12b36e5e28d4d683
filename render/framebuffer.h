#pragma once
// An offscreen colour target for headless renders, exports and tests.
#include <cstdint>
#include <filesystem>
#include <vector>

namespace onegpu::render {

class Framebuffer {
 public:
  Framebuffer(int width, int height);
  ~Framebuffer();
  Framebuffer(const Framebuffer&) = delete;
  Framebuffer& operator=(const Framebuffer&) = delete;
  void bind() const;
  int width() const { return w_; }
  int height() const { return h_; }
  // RGBA8, rows top to bottom.
  std::vector<std::uint8_t> read_rgba() const;

 private:
  unsigned fbo_ = 0, color_ = 0;
  int w_, h_;
};

// Reads the currently bound read framebuffer's rectangle (RGBA8, rows top to bottom).
std::vector<std::uint8_t> read_pixels(int width, int height);

// An RGBA8 image (rows top to bottom) encoded as PNG bytes; throws render::Error when it
// cannot. Writing them to a file is the app's (app/png_file.h).
std::string encode_png(int width, int height, const std::vector<std::uint8_t>& rgba);

}  // namespace onegpu::render
