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

// Writes an RGBA8 image (rows top to bottom) as PNG; throws render::Error when it cannot.
void write_png(const std::filesystem::path& file, int width, int height,
               const std::vector<std::uint8_t>& rgba);

}  // namespace onegpu::render
