#include "app/ui/frame_damage.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "render/hash.h"

namespace onegpu::app {

namespace {

using render::hash_bytes;
using render::hash_mix;

bool overlap(const PixelBox& a, const PixelBox& b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; }
PixelBox unite(const PixelBox& a, const PixelBox& b) {
  return {std::min(a.x0, b.x0), std::min(a.y0, b.y0), std::max(a.x1, b.x1), std::max(a.y1, b.y1)};
}
PixelBox cut(const PixelBox& a, const PixelBox& b) {
  return {std::max(a.x0, b.x0), std::max(a.y0, b.y0), std::min(a.x1, b.x1), std::min(a.y1, b.y1)};
}

// The pixels whose centres a triangle with these corners can cover, with a pixel to spare.
PixelBox tri_box(const ImDrawVert& a, const ImDrawVert& b, const ImDrawVert& c) {
  const float x0 = std::min({a.pos.x, b.pos.x, c.pos.x}), x1 = std::max({a.pos.x, b.pos.x, c.pos.x});
  const float y0 = std::min({a.pos.y, b.pos.y, c.pos.y}), y1 = std::max({a.pos.y, b.pos.y, c.pos.y});
  return {(int)std::floor(x0) - 1, (int)std::floor(y0) - 1, (int)std::ceil(x1) + 1, (int)std::ceil(y1) + 1};
}

}  // namespace

PixelBox scissor_of(const ImVec4& clip, int fb_h) {
  // As imgui_impl_opengl3 does: glScissor((int)x, (int)(fb_h - w), (int)(z - x), (int)(w - y)).
  const int x = (int)clip.x, w = (int)(clip.z - clip.x);
  const int y_gl = (int)((float)fb_h - clip.w), h = (int)(clip.w - clip.y);
  return {x, fb_h - y_gl - h, x + w, fb_h - y_gl};
}

FrameDamage::FrameDamage() = default;
FrameDamage::~FrameDamage() = default;

bool FrameDamage::tracks(const ImDrawData& dd) {
  return dd.Valid && dd.DisplayPos.x == 0.0f && dd.DisplayPos.y == 0.0f && dd.FramebufferScale.x == 1.0f &&
         dd.FramebufferScale.y == 1.0f;
}

long FrameDamage::area() const {
  long a = 0;
  for (const PixelBox& r : rects_) a += r.area();
  return a;
}

bool FrameDamage::reaches(const PixelBox& r) const {
  for (const Tri& t : last_)  // update() swapped the frame's triangles there
    if (!t.box.empty() && overlap(t.box, r)) return true;
  return false;
}

void FrameDamage::collect(const ImDrawData& dd, int fb_h, const std::vector<DrawnBox>& own) {
  now_.assign(own.begin(), own.end());
  for (int l = 0; l < dd.CmdListsCount; ++l) {
    const ImDrawList& dl = *dd.CmdLists[l];
    for (const ImDrawCmd& cmd : dl.CmdBuffer) {
      if (cmd.UserCallback == ImDrawCallback_ResetRenderState) continue;  // no pixels
      const PixelBox sc = scissor_of(cmd.ClipRect, fb_h);
      if (sc.empty()) continue;  // the backend skips it
      std::uint64_t base = hash_bytes(0x6a09e667f3bcc909ull, &sc, sizeof sc);
      if (cmd.UserCallback) {
        base = hash_mix(hash_mix(base, (std::uint64_t)(std::uintptr_t)cmd.UserCallback), (std::uint64_t)(std::uintptr_t)cmd.UserCallbackData);
        now_.push_back({base, sc});
        continue;
      }
      base = hash_mix(base, (std::uint64_t)(std::uintptr_t)cmd.TextureId);
      for (unsigned i = 0; i + 2 < cmd.ElemCount; i += 3) {
        const ImDrawIdx* ix = dl.IdxBuffer.Data + cmd.IdxOffset + i;
        const ImDrawVert& a = dl.VtxBuffer[(int)(cmd.VtxOffset + ix[0])];
        const ImDrawVert& b = dl.VtxBuffer[(int)(cmd.VtxOffset + ix[1])];
        const ImDrawVert& c = dl.VtxBuffer[(int)(cmd.VtxOffset + ix[2])];
        std::uint64_t h = hash_bytes(base, &a, sizeof a);
        h = hash_bytes(h, &b, sizeof b);
        h = hash_bytes(h, &c, sizeof c);
        now_.push_back({h, cut(tri_box(a, b, c), sc)});
      }
    }
  }
}

void FrameDamage::update(const ImDrawData& dd, int fb_w, int fb_h, const std::vector<PixelBox>& extra, bool full,
                         const std::vector<DrawnBox>& own) {
  collect(dd, fb_h, own);
  rects_.clear();
  const PixelBox frame{0, 0, fb_w, fb_h};
  full = full || fb_w != w_ || fb_h != h_ || !tracks(dd);
  w_ = fb_w, h_ = fb_h;
  if (!full) {
    // Match this frame's triangles to the last frame's by hash. Most follow one another as
    // they did (a panel that did not change): walked in step; a miss looks the hash up in the
    // last frame's sorted hashes (sorted on the first miss only), the first unused one taken.
    used_.assign(last_.size(), 0);
    bool sorted = false;
    std::size_t j = 0;      // where the walk in step expects the next match
    std::int64_t kept = -1;  // the last frame's index of the last triangle kept in order
    for (const Tri& t : now_) {
      std::int64_t k = -1;
      if (j < last_.size() && !used_[j] && last_[j].hash == t.hash) {
        k = (std::int64_t)j;
      } else {
        if (!sorted) {
          sorted_.resize(last_.size());
          for (std::uint32_t i = 0; i < last_.size(); ++i) sorted_[i] = {last_[i].hash, i};
          std::sort(sorted_.begin(), sorted_.end());
          sorted = true;
        }
        for (auto it = std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(t.hash, std::uint32_t{0}));
             it != sorted_.end() && it->first == t.hash; ++it)
          if (!used_[it->second]) {
            k = it->second;
            break;
          }
      }
      bool same = false;
      if (k >= 0) {
        used_[(std::size_t)k] = 1;
        // Out of order against a triangle kept before it: the pair may blend the other way.
        if (k > kept) kept = k, same = true, j = (std::size_t)k + 1;
      }
      if (!same && !t.box.empty()) rects_.push_back(t.box);
    }
    for (std::size_t i = 0; i < last_.size(); ++i)
      if (!used_[i] && !last_[i].box.empty()) rects_.push_back(last_[i].box);  // gone: uncover its pixels
    for (const PixelBox& e : extra) rects_.push_back(e);
    for (PixelBox& r : rects_) r = cut(r, frame);
    rects_.erase(std::remove_if(rects_.begin(), rects_.end(), [](const PixelBox& r) { return r.empty(); }), rects_.end());
    merge();
  } else {
    rects_.push_back(frame);
  }
  std::swap(last_, now_);
}

void FrameDamage::update(const std::vector<DrawnBox>& own, int fb_w, int fb_h, bool full) {
  ImDrawData none;  // no lists: only `own` is matched
  none.Valid = true;
  none.FramebufferScale = {1.0f, 1.0f};
  update(none, fb_w, fb_h, {}, full, own);
}

PixelBox FrameDamage::bounds() const {
  if (rects_.empty()) return {};
  PixelBox all = rects_[0];
  for (const PixelBox& r : rects_) all = unite(all, r);
  return all;
}

void FrameDamage::merge() {
  if (rects_.empty()) return;
  // The damage is painted into a grid of cells and read back as rectangles: runs of damaged
  // cells on a row, stacked while the rows below repeat them. The rectangles are disjoint and
  // hold only cells something touched, so scattered changes (a lane's new spans here, the next
  // lane's further on, a word in the side panel) are not drawn again over their bounding box.
  // Cells start at 8 pixels and double while that leaves more rectangles than can be merged
  // cheaply below.
  PixelBox all = rects_[0];
  for (const PixelBox& r : rects_) all = unite(all, r);
  std::vector<PixelBox> out;
  for (int cell = 8;; cell *= 2) {
    const int gx = (all.x1 - all.x0 + cell - 1) / cell, gy = (all.y1 - all.y0 + cell - 1) / cell;
    cells_.assign((std::size_t)gx * (std::size_t)gy, 0);
    for (const PixelBox& r : rects_) {
      const int cx0 = (r.x0 - all.x0) / cell, cx1 = (r.x1 - all.x0 + cell - 1) / cell;
      const int cy0 = (r.y0 - all.y0) / cell, cy1 = (r.y1 - all.y0 + cell - 1) / cell;
      for (int y = cy0; y < cy1; ++y) std::memset(&cells_[(std::size_t)y * gx + (std::size_t)cx0], 1, (std::size_t)(cx1 - cx0));
    }
    out.clear();
    std::vector<std::size_t> open, next;  // rectangles (in `out`, in cells) reaching the row above
    for (int y = 0; y < gy; ++y) {
      next.clear();
      const std::uint8_t* row = &cells_[(std::size_t)y * gx];
      std::size_t k = 0;  // `open` is in x order, as the runs are found
      for (int x = 0; x < gx;) {
        if (!row[x]) {
          ++x;
          continue;
        }
        int x1 = x;
        while (x1 < gx && row[x1]) ++x1;
        while (k < open.size() && out[open[k]].x0 < x) ++k;
        if (k < open.size() && out[open[k]].x0 == x && out[open[k]].x1 == x1) {
          out[open[k]].y1 = y + 1;
          next.push_back(open[k++]);
        } else {
          next.push_back(out.size());
          out.push_back({x, y, x1, y + 1});
        }
        x = x1;
      }
      std::swap(open, next);
    }
    if (out.size() <= 4 * (std::size_t)kMaxRects || cell >= 256) {
      for (PixelBox& r : out) {
        r = cut({all.x0 + r.x0 * cell, all.y0 + r.y0 * cell, all.x0 + r.x1 * cell, all.y0 + r.y1 * cell}, all);
      }
      break;
    }
  }
  while (out.size() > (std::size_t)kMaxRects) {
    std::size_t bi = 0, bj = 1;
    long best = -1;
    for (std::size_t i = 0; i < out.size(); ++i)
      for (std::size_t j = i + 1; j < out.size(); ++j) {
        const long grow = unite(out[i], out[j]).area() - out[i].area() - out[j].area();
        if (best < 0 || grow < best) best = grow, bi = i, bj = j;
      }
    out[bi] = unite(out[bi], out[bj]);
    out[bj] = out.back();
    out.pop_back();
    // The union may now overlap a third: fold those in too (the rectangles stay disjoint).
    for (bool again = true; again;) {
      again = false;
      for (std::size_t j = 0; j < out.size(); ++j)
        if (j != bi && overlap(out[bi], out[j])) {
          out[bi] = unite(out[bi], out[j]);
          out[j] = out.back();
          out.pop_back();
          if (bi == out.size()) bi = j;
          again = true;
          break;
        }
    }
  }
  rects_ = std::move(out);
}

ImDrawData* FrameDamage::clipped_to(const ImDrawData& dd, const std::vector<PixelBox>& rects) {
  while ((int)lists_.size() < dd.CmdListsCount) lists_.push_back(std::make_unique<ImDrawList>(nullptr));
  list_ptrs_.clear();
  int vtx = 0, idx = 0;
  for (int l = 0; l < dd.CmdListsCount; ++l) {
    const ImDrawList& src = *dd.CmdLists[l];
    ImDrawList& dst = *lists_[(std::size_t)l];
    dst.CmdBuffer.resize(0);
    dst.IdxBuffer.resize(0);
    dst.VtxBuffer = src.VtxBuffer;
    dst.Flags = src.Flags;
    for (const ImDrawCmd& cmd : src.CmdBuffer) {
      if (cmd.UserCallback == ImDrawCallback_ResetRenderState) {
        dst.CmdBuffer.push_back(cmd);
        continue;
      }
      const PixelBox sc = scissor_of(cmd.ClipRect, h_);
      for (const PixelBox& r : rects) {
        const PixelBox c = cut(sc, r);
        if (c.empty()) continue;
        ImDrawCmd out = cmd;
        // Whole pixels: the backend's truncation gives back exactly this box.
        out.ClipRect = ImVec4((float)c.x0, (float)c.y0, (float)c.x1, (float)c.y1);
        if (!cmd.UserCallback) {
          out.IdxOffset = (unsigned)dst.IdxBuffer.Size;
          for (unsigned i = 0; i + 2 < cmd.ElemCount; i += 3) {
            const ImDrawIdx* ix = src.IdxBuffer.Data + cmd.IdxOffset + i;
            const PixelBox b = tri_box(src.VtxBuffer[(int)(cmd.VtxOffset + ix[0])], src.VtxBuffer[(int)(cmd.VtxOffset + ix[1])],
                                       src.VtxBuffer[(int)(cmd.VtxOffset + ix[2])]);
            if (!overlap(b, c)) continue;
            dst.IdxBuffer.push_back(ix[0]);
            dst.IdxBuffer.push_back(ix[1]);
            dst.IdxBuffer.push_back(ix[2]);
          }
          out.ElemCount = (unsigned)dst.IdxBuffer.Size - out.IdxOffset;
          if (out.ElemCount == 0) continue;
        }
        dst.CmdBuffer.push_back(out);
      }
    }
    if (dst.CmdBuffer.Size == 0) continue;
    vtx += dst.VtxBuffer.Size, idx += dst.IdxBuffer.Size;
    list_ptrs_.push_back(&dst);
  }
  out_ = ImDrawData();
  out_.Valid = true;
  out_.CmdLists = list_ptrs_.data();
  out_.CmdListsCount = (int)list_ptrs_.size();
  out_.TotalVtxCount = vtx;
  out_.TotalIdxCount = idx;
  out_.DisplayPos = dd.DisplayPos;
  out_.DisplaySize = dd.DisplaySize;
  out_.FramebufferScale = dd.FramebufferScale;
  return &out_;
}

}  // namespace onegpu::app
