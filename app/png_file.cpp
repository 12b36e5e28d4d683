#include "app/png_file.h"

#include "render/error.h"
#include "render/framebuffer.h"
#include "trainer/error.h"
#include "trainer/io/output_file.h"

namespace onegpu::app {

void save_png(const std::filesystem::path& file, int width, int height, const std::vector<std::uint8_t>& rgba) {
  const std::string png = render::encode_png(width, height, rgba);
  try {
    trainer::files::write_atomic(file.string(), png, "PNG");
  } catch (const trainer::Error& e) {
    throw render::Error(e.what());
  }
}

}  // namespace onegpu::app
