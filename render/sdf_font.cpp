#include "render/sdf_font.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>

#include <glm/gtc/type_ptr.hpp>
#include <stb/stb_truetype.h>  // implementation comes from Debian's libstb

#include "render/error.h"
#include "render/gl.h"

namespace onegpu::render {

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  std::size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    bool ok = n >= 0 && i + n < s.size();
    char32_t cp = ok ? (n == 0 ? c : (c & (0x3F >> n))) : 0;
    for (int k = 1; ok && k <= n; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += n + 1;
  }
  return out;
}

namespace {

// Squared Euclidean distance transform in one dimension (Felzenszwalb & Huttenlocher).
void edt_1d(const float* f, float* d, int n, int* v, float* z) {
  int k = 0;
  v[0] = 0;
  z[0] = -std::numeric_limits<float>::infinity();
  z[1] = std::numeric_limits<float>::infinity();
  for (int q = 1; q < n; ++q) {
    float s;
    while (true) {
      s = ((f[q] + q * q) - (f[v[k]] + v[k] * v[k])) / (2.0f * q - 2.0f * v[k]);
      if (s > z[k]) break;
      --k;
    }
    ++k;
    v[k] = q;
    z[k] = s;
    z[k + 1] = std::numeric_limits<float>::infinity();
  }
  k = 0;
  for (int q = 0; q < n; ++q) {
    while (z[k + 1] < q) ++k;
    float dq = static_cast<float>(q - v[k]);
    d[q] = dq * dq + f[v[k]];
  }
}

// Squared distance from every pixel to the nearest pixel where `seed` is true.
std::vector<float> edt_2d(const std::vector<bool>& seed, int w, int h) {
  const float inf = 1e20f;
  std::vector<float> g(static_cast<std::size_t>(w) * h);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = seed[i] ? 0.0f : inf;
  int n = std::max(w, h);
  std::vector<float> f(n), d(n), z(n + 1);
  std::vector<int> v(n);
  for (int x = 0; x < w; ++x) {
    for (int y = 0; y < h; ++y) f[y] = g[y * w + x];
    edt_1d(f.data(), d.data(), h, v.data(), z.data());
    for (int y = 0; y < h; ++y) g[y * w + x] = d[y];
  }
  for (int y = 0; y < h; ++y) {
    edt_1d(&g[y * w], d.data(), w, v.data(), z.data());
    std::copy(d.begin(), d.begin() + w, g.begin() + y * w);
  }
  return g;
}

constexpr int kSuper = 4;  // glyphs are rasterised 4× finer than the atlas, then sampled down

}  // namespace

SdfFont::SdfFont(const std::filesystem::path& font_file) {
  std::ifstream in(font_file, std::ios::binary);
  if (!in) throw Error("font file not found: " + font_file.string());
  file_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  info_.resize(sizeof(stbtt_fontinfo));
  auto* info = reinterpret_cast<stbtt_fontinfo*>(info_.data());
  int offset = file_.empty() ? -1 : stbtt_GetFontOffsetForIndex(file_.data(), 0);
  if (offset < 0 || !stbtt_InitFont(info, file_.data(), offset))
    throw Error("not a usable TrueType/OpenType font: " + font_file.string());

  // Raster scale: em_px_ atlas pixels per em, rasterised kSuper times finer.
  scale_ = stbtt_ScaleForMappingEmToPixels(info, em_px_ * kSuper);
  int asc, desc, gap;
  stbtt_GetFontVMetrics(info, &asc, &desc, &gap);
  float units_per_em = em_px_ * kSuper / scale_;
  ascent_ = asc / units_per_em;
  descent_ = -desc / units_per_em;

  std::u32string wanted;
  for (char32_t c = 32; c < 127; ++c) wanted.push_back(c);
  for (char32_t c : std::u32string(U"·–—−×…→←↑↓↺↵⇥⇄✓≠’‘“”°±≈≤≥µ•▸◂▴▾⋯∑√∞½¼¾²³"))
    wanted.push_back(c);
  wanted.push_back(0xFFFD);

  const int pad = static_cast<int>(spread_) + 2;  // atlas pixels around each glyph
  const int atlas_w = 1024;
  struct Pending { char32_t c; int w, h; std::vector<std::uint8_t> sdf; Glyph g; };
  std::vector<Pending> pending;
  for (char32_t c : wanted) {
    int gi = stbtt_FindGlyphIndex(info, static_cast<int>(c));
    if (gi == 0 && c != U' ') continue;
    int adv, lsb;
    stbtt_GetGlyphHMetrics(info, gi, &adv, &lsb);
    Pending p{c, 0, 0, {}, {}};
    p.g.advance = adv / units_per_em;
    int x0, y0, x1, y1;
    stbtt_GetGlyphBitmapBox(info, gi, scale_, scale_, &x0, &y0, &x1, &y1);
    if (x1 <= x0 || y1 <= y0) {
      glyphs_[c] = p.g;  // blank (space): advance only
      continue;
    }
    // Rasterise big with a margin, then compute the signed distance at the atlas' pixel centres.
    int bp = pad * kSuper;
    int bw = x1 - x0 + 2 * bp, bh = y1 - y0 + 2 * bp;
    std::vector<std::uint8_t> big(static_cast<std::size_t>(bw) * bh, 0);
    stbtt_MakeGlyphBitmap(info, big.data() + bp * bw + bp, x1 - x0, y1 - y0, bw, scale_, scale_, gi);
    std::vector<bool> inside(big.size()), outside(big.size());
    for (std::size_t i = 0; i < big.size(); ++i) { inside[i] = big[i] >= 128; outside[i] = !inside[i]; }
    auto to_inside = edt_2d(inside, bw, bh);    // for outside pixels: distance to the shape
    auto to_outside = edt_2d(outside, bw, bh);  // for inside pixels: distance to the edge
    p.w = (bw + kSuper - 1) / kSuper;
    p.h = (bh + kSuper - 1) / kSuper;
    p.sdf.resize(static_cast<std::size_t>(p.w) * p.h);
    for (int y = 0; y < p.h; ++y)
      for (int x = 0; x < p.w; ++x) {
        int sx = std::min(x * kSuper + kSuper / 2, bw - 1), sy = std::min(y * kSuper + kSuper / 2, bh - 1);
        std::size_t i = static_cast<std::size_t>(sy) * bw + sx;
        float dist = inside[i] ? (std::sqrt(to_outside[i]) - 0.5f) : -(std::sqrt(to_inside[i]) - 0.5f);
        dist /= kSuper;  // in atlas pixels, positive inside
        float v = 0.5f + dist / (2.0f * spread_);
        p.sdf[static_cast<std::size_t>(y) * p.w + x] =
            static_cast<std::uint8_t>(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f);
      }
    // Em-unit placement: stb's y grows downward from the baseline.
    float px_per_em = em_px_ * kSuper;
    p.g.offset = {(x0 - bp) / px_per_em, -(y0 - bp + bh) / px_per_em};
    p.g.size = {bw / px_per_em, bh / px_per_em};
    pending.push_back(std::move(p));
  }
  if (!glyphs_.count(U'?') && pending.empty())
    throw Error("font has no drawable glyphs: " + font_file.string());

  // Shelf packing into a fixed-width atlas.
  int x = 0, y = 0, row_h = 0;
  std::vector<std::pair<int, int>> at(pending.size());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    if (x + pending[i].w > atlas_w) { x = 0; y += row_h + 1; row_h = 0; }
    at[i] = {x, y};
    x += pending[i].w + 1;
    row_h = std::max(row_h, pending[i].h);
  }
  int atlas_h = 1;
  while (atlas_h < y + row_h) atlas_h *= 2;
  std::vector<std::uint8_t> atlas(static_cast<std::size_t>(atlas_w) * atlas_h, 0);
  for (std::size_t i = 0; i < pending.size(); ++i) {
    auto& p = pending[i];
    for (int r = 0; r < p.h; ++r)
      std::copy_n(&p.sdf[static_cast<std::size_t>(r) * p.w], p.w,
                  &atlas[static_cast<std::size_t>(at[i].second + r) * atlas_w + at[i].first]);
    // Rows are stored top-down; v0 is the glyph's top.
    p.g.uv = {static_cast<float>(at[i].first) / atlas_w, static_cast<float>(at[i].second) / atlas_h,
              static_cast<float>(at[i].first + p.w) / atlas_w,
              static_cast<float>(at[i].second + p.h) / atlas_h};
    p.g.size = {p.w / em_px_, p.h / em_px_};
    glyphs_[p.c] = p.g;
  }

  glGenTextures(1, &texture_);
  glBindTexture(GL_TEXTURE_2D, texture_);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_R8, atlas_w, atlas_h, 0, GL_RED, GL_UNSIGNED_BYTE, atlas.data());
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
}

SdfFont::~SdfFont() {
  if (texture_) glDeleteTextures(1, &texture_);
}

const Glyph* SdfFont::glyph(char32_t c) const {
  auto it = glyphs_.find(c);
  if (it != glyphs_.end()) return &it->second;
  it = glyphs_.find(0xFFFD);
  if (it != glyphs_.end()) return &it->second;
  it = glyphs_.find(U'?');
  return it != glyphs_.end() ? &it->second : nullptr;
}

float SdfFont::kern(char32_t a, char32_t b) const {
  const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | b;
  if (auto it = kern_cache_.find(key); it != kern_cache_.end()) return it->second;
  auto* info = reinterpret_cast<const stbtt_fontinfo*>(info_.data());
  int k = stbtt_GetCodepointKernAdvance(info, static_cast<int>(a), static_cast<int>(b));
  const float em = k * scale_ / (em_px_ * kSuper);
  kern_cache_.emplace(key, em);
  return em;
}

float SdfFont::measure(std::string_view utf8) const {
  float w = 0;
  char32_t prev = 0;
  for (char32_t c : decode_utf8(utf8)) {
    if (prev) w += kern(prev, c);
    if (const Glyph* g = glyph(c)) w += g->advance;
    prev = c;
  }
  return w;
}

TextBatch::TextBatch(const Shader* shader, const SdfFont* font)
    : shader_(shader), font_(font), quad_({0, 0, 1, 0, 0, 1, 1, 1}, sizeof(GlyphInstance), 3) {}

float TextBatch::add(std::string_view utf8, glm::vec2 pos, float size, glm::vec4 color, Align align) {
  float width = font_->measure(utf8) * size;
  float x = pos.x - (align == Align::Center ? width * 0.5f : align == Align::Right ? width : 0.0f);
  char32_t prev = 0;
  for (char32_t c : decode_utf8(utf8)) {
    if (prev) x += font_->kern(prev, c) * size;
    prev = c;
    const Glyph* g = font_->glyph(c);
    if (!g) continue;
    if (g->size.x > 0) {
      items_.push_back({{x + g->offset.x * size, pos.y + g->offset.y * size, g->size.x * size,
                         g->size.y * size},
                        g->uv, color});
    }
    x += g->advance * size;
  }
  return width;
}

void TextBatch::flush(const Camera& cam, DrawStats& stats, const std::vector<glm::ivec4>* clips) {
  if (items_.empty()) return;
  shader_->use();
  glUniformMatrix4fv(shader_->uniform("u_vp"), 1, GL_FALSE, glm::value_ptr(cam.view_projection()));
  glUniform1i(shader_->uniform("u_atlas"), 0);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, font_->texture());
  if (!clips) {
    quad_.draw(items_.data(), items_.size());
  } else {
    quad_.upload(items_.data(), items_.size());
    for (const glm::ivec4& c : *clips) {
      glScissor(c.x, c.y, c.z, c.w);
      quad_.draw_range(0, items_.size());
    }
  }
  stats.draw_calls += clips ? static_cast<int>(clips->size()) : 1;
  stats.instances += items_.size();
  items_.clear();
}

}  // namespace onegpu::render
