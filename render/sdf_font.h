#pragma once
// Scene text from a signed-distance-field atlas: glyphs are rasterised once, turned into
// distance fields, and drawn as instanced quads whose edges are resolved per pixel, so a label
// stays crisp whether the camera is far out or has dived into a single chip.
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <glm/vec2.hpp>
#include <glm/ext/vector_int4.hpp>
#include <glm/vec4.hpp>

#include "render/camera.h"
#include "render/instanced_quad.h"
#include "render/shader.h"
#include "render/shape_batch.h"

namespace onegpu::render {

enum class Align { Left, Center, Right };

struct Glyph {
  glm::vec4 uv;        // atlas rectangle (u0, v0, u1, v1)
  glm::vec2 offset;    // quad's lower-left corner from the pen, in em units (y up)
  glm::vec2 size;      // quad size in em units
  float advance = 0;   // in em units
};

class SdfFont {
 public:
  // Throws render::Error naming the file if it is missing or not a font.
  explicit SdfFont(const std::filesystem::path& font_file);
  ~SdfFont();
  SdfFont(const SdfFont&) = delete;
  SdfFont& operator=(const SdfFont&) = delete;

  const Glyph* glyph(char32_t c) const;
  float kern(char32_t a, char32_t b) const;  // em units
  float ascent() const { return ascent_; }    // em units
  float descent() const { return descent_; }  // em units below the baseline (positive)
  float measure(std::string_view utf8) const;  // width in em units
  unsigned texture() const { return texture_; }
  float spread_px() const { return spread_; }
  float em_px() const { return em_px_; }

 private:
  std::vector<std::uint8_t> file_;
  std::vector<std::uint8_t> info_;  // stbtt_fontinfo storage (kept opaque here)
  std::unordered_map<char32_t, Glyph> glyphs_;
  // Kerning looked up once per pair: stb searches the font's tables on every call, and every
  // label is measured and laid out every frame. Render thread only.
  mutable std::unordered_map<std::uint64_t, float> kern_cache_;
  unsigned texture_ = 0;
  float ascent_ = 0.8f, descent_ = 0.2f, scale_ = 1.0f, em_px_ = 48.0f, spread_ = 6.0f;
};

struct GlyphInstance {
  glm::vec4 rect;   // world x, y, w, h
  glm::vec4 uv;
  glm::vec4 color;
};

class TextBatch {
 public:
  TextBatch(const Shader* shader, const SdfFont* font);
  TextBatch(const TextBatch&) = delete;
  TextBatch& operator=(const TextBatch&) = delete;

  // `size` is the em height in world units; `pos` is the baseline's start (or centre/end).
  // Returns the width drawn.
  float add(std::string_view utf8, glm::vec2 pos, float size, glm::vec4 color,
            Align align = Align::Left);
  std::size_t size() const { return items_.size(); }
  // The glyphs added since the last flush (the canvas leaves out unseen ones).
  std::vector<GlyphInstance>& items() { return items_; }
  const std::vector<GlyphInstance>& items() const { return items_; }
  void clear() { items_.clear(); }
  // `clips`: as ShapeBatch::flush.
  void flush(const Camera& cam, DrawStats& stats, const std::vector<glm::ivec4>* clips = nullptr);
  const SdfFont& font() const { return *font_; }

 private:
  const Shader* shader_;
  const SdfFont* font_;
  InstancedQuad quad_;
  std::vector<GlyphInstance> items_;
};

// Decodes UTF-8; invalid bytes become U+FFFD.
std::u32string decode_utf8(std::string_view s);

}  // namespace onegpu::render
