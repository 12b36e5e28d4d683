#pragma once
// A PNG of the window or of a headless render, written the way every output of the program is
// written (trainer/io/output_file.h: a unique temporary renamed into place, regular files only,
// symbolic links written through), so render/ stays free of files and of the trainer.
#include <cstdint>
#include <filesystem>
#include <vector>

namespace onegpu::app {

// Throws render::Error with the reason when it cannot.
void save_png(const std::filesystem::path& file, int width, int height, const std::vector<std::uint8_t>& rgba);

}  // namespace onegpu::app
