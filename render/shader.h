#pragma once
// GLSL programs loaded from files in the shader folder, so they can be edited without a rebuild.
#include <filesystem>
#include <string>

#include <glm/mat4x4.hpp>

namespace onegpu::render {

class Shader {
 public:
  Shader() = default;
  // Throws render::Error naming the file when it is missing or does not compile. `defines`
  // (lines such as "#define SHAPE_KIND 0\n") go right after each file's #version line.
  Shader(const std::filesystem::path& vert, const std::filesystem::path& frag, const std::string& defines = {});
  ~Shader();
  Shader(Shader&& o) noexcept : program_(o.program_) { o.program_ = 0; }
  Shader& operator=(Shader&& o) noexcept;
  Shader(const Shader&) = delete;
  Shader& operator=(const Shader&) = delete;

  void use() const;
  int uniform(const char* name) const;
  unsigned id() const { return program_; }

 private:
  unsigned program_ = 0;
};

std::string read_text_file(const std::filesystem::path& p, const char* what);

}  // namespace onegpu::render
