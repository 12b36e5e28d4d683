#pragma once
// An OpenGL 3.3 core context with no window and no X server, through EGL: Mesa's surfaceless
// platform on a plain machine, or the device platform that NVIDIA drivers offer.
#include <string>

namespace onegpu::render {

class HeadlessContext {
 public:
  HeadlessContext();  // throws render::Error with the reason when no context can be made
  ~HeadlessContext();
  HeadlessContext(const HeadlessContext&) = delete;
  HeadlessContext& operator=(const HeadlessContext&) = delete;
  const std::string& description() const { return description_; }

 private:
  void* display_ = nullptr;
  void* context_ = nullptr;
  std::string description_;
};

// "GL 4.5 (Core Profile) Mesa 22.3.6 · llvmpipe ..." for the current context.
std::string gl_description();

}  // namespace onegpu::render
