#include "render/shader.h"

#include <fstream>
#include <sstream>

#include "render/error.h"
#include "render/gl.h"

namespace onegpu::render {

std::string read_text_file(const std::filesystem::path& p, const char* what) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error(std::string(what) + " not found: " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

static unsigned compile(GLenum kind, const std::filesystem::path& p, const std::string& defines) {
  std::string src = read_text_file(p, "shader file");
  if (!defines.empty()) {
    // After the #version line, which must come first.
    const std::size_t eol = src.rfind("#version", 0) == 0 ? src.find('\n') : std::string::npos;
    if (eol == std::string::npos) throw Error("shader " + p.string() + " does not start with a #version line");
    src.insert(eol + 1, defines + "#line 2\n");  // the file's own line numbers in compile errors
  }
  unsigned s = glCreateShader(kind);
  const char* c = src.c_str();
  glShaderSource(s, 1, &c, nullptr);
  glCompileShader(s);
  int ok = 0;
  glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[2048] = {};
    glGetShaderInfoLog(s, sizeof log, nullptr, log);
    glDeleteShader(s);
    throw Error("shader " + p.string() + (defines.empty() ? "" : " (with " + defines.substr(0, defines.find('\n')) + ")") + " does not compile: " + log);
  }
  return s;
}

Shader::Shader(const std::filesystem::path& vert, const std::filesystem::path& frag, const std::string& defines) {
  unsigned v = compile(GL_VERTEX_SHADER, vert, defines);
  unsigned f = 0;
  try {
    f = compile(GL_FRAGMENT_SHADER, frag, defines);
  } catch (...) {
    glDeleteShader(v);
    throw;
  }
  program_ = glCreateProgram();
  glAttachShader(program_, v);
  glAttachShader(program_, f);
  glLinkProgram(program_);
  glDeleteShader(v);
  glDeleteShader(f);
  int ok = 0;
  glGetProgramiv(program_, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[2048] = {};
    glGetProgramInfoLog(program_, sizeof log, nullptr, log);
    glDeleteProgram(program_);
    program_ = 0;
    throw Error("shaders " + vert.string() + " + " + frag.string() + " do not link: " + log);
  }
}

Shader::~Shader() {
  if (program_) glDeleteProgram(program_);
}

Shader& Shader::operator=(Shader&& o) noexcept {
  if (this != &o) {
    if (program_) glDeleteProgram(program_);
    program_ = o.program_;
    o.program_ = 0;
  }
  return *this;
}

void Shader::use() const { glUseProgram(program_); }
int Shader::uniform(const char* name) const { return glGetUniformLocation(program_, name); }

}  // namespace onegpu::render
