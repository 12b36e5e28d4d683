// FrameDamage (app/ui/frame_damage.h) on draw lists made by hand: what it calls damaged when a
// triangle moves, appears, disappears or changes order, and what clipped() hands the backend.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "app/ui/frame_damage.h"

namespace onegpu::app {
namespace {

constexpr int W = 400, H = 300;

struct Frame {
  std::vector<std::unique_ptr<ImDrawList>> lists;
  std::vector<ImDrawList*> ptrs;
  ImDrawData dd;
  ImDrawList& list() {
    lists.push_back(std::make_unique<ImDrawList>(nullptr));
    ImDrawList& l = *lists.back();
    ImDrawCmd c;
    c.ClipRect = {0, 0, (float)W, (float)H};
    l.CmdBuffer.push_back(c);
    return l;
  }
  // An axis-aligned quad (two triangles) in the list's one command.
  static void quad(ImDrawList& l, float x0, float y0, float x1, float y1, ImU32 col) {
    const ImDrawIdx b = (ImDrawIdx)l.VtxBuffer.Size;
    for (ImVec2 p : {ImVec2(x0, y0), ImVec2(x1, y0), ImVec2(x1, y1), ImVec2(x0, y1)}) {
      ImDrawVert v;
      v.pos = p, v.uv = {0, 0}, v.col = col;
      l.VtxBuffer.push_back(v);
    }
    for (int i : {0, 1, 2, 0, 2, 3}) l.IdxBuffer.push_back((ImDrawIdx)(b + i));
    l.CmdBuffer.back().ElemCount += 6;
  }
  const ImDrawData& data() {
    ptrs.clear();
    for (auto& l : lists) ptrs.push_back(l.get());
    dd = ImDrawData();
    dd.Valid = true;
    dd.CmdLists = ptrs.data();
    dd.CmdListsCount = (int)ptrs.size();
    dd.DisplaySize = {(float)W, (float)H};
    dd.FramebufferScale = {1, 1};
    return dd;
  }
};

bool inside(const PixelBox& in, const PixelBox& out) {
  return out.x0 <= in.x0 && out.y0 <= in.y0 && in.x1 <= out.x1 && in.y1 <= out.y1;
}
bool covered(const std::vector<PixelBox>& rs, const PixelBox& b) {
  for (const PixelBox& r : rs)
    if (inside(b, r)) return true;
  return false;
}
bool touches(const std::vector<PixelBox>& rs, const PixelBox& b) {
  for (const PixelBox& r : rs)
    if (r.x0 < b.x1 && b.x0 < r.x1 && r.y0 < b.y1 && b.y0 < r.y1) return true;
  return false;
}
void disjoint(const std::vector<PixelBox>& rs) {
  for (std::size_t i = 0; i < rs.size(); ++i)
    for (std::size_t j = i + 1; j < rs.size(); ++j)
      EXPECT_FALSE(rs[i].x0 < rs[j].x1 && rs[j].x0 < rs[i].x1 && rs[i].y0 < rs[j].y1 && rs[j].y0 < rs[i].y1)
          << "rectangles " << i << " and " << j << " overlap: a pixel would be drawn twice";
}

TEST(FrameDamage, FirstFrameIsWholeThenOnlyWhatChanged) {
  FrameDamage d;
  Frame a;
  ImDrawList& la = a.list();
  Frame::quad(la, 10, 10, 50, 30, 0xff0000ffu);
  Frame::quad(la, 200, 100, 260, 140, 0xff00ff00u);
  d.update(a.data(), W, H, {}, false);
  ASSERT_EQ(d.rects().size(), 1u);
  EXPECT_EQ(d.area(), (long)W * H) << "nothing to compare with: all of it";

  d.update(a.data(), W, H, {}, false);
  EXPECT_TRUE(d.rects().empty()) << "the same triangles: nothing to draw";
  d.update(a.data(), W, H, {{300, 200, 350, 260}}, false);
  ASSERT_EQ(d.rects().size(), 1u) << "only what the caller adds";
  EXPECT_EQ(d.area(), 50L * 60);

  // The second quad moves: its old and new pixels, not the first quad's.
  Frame b;
  ImDrawList& lb = b.list();
  Frame::quad(lb, 10, 10, 50, 30, 0xff0000ffu);
  Frame::quad(lb, 220, 100, 280, 140, 0xff00ff00u);
  d.update(b.data(), W, H, {}, false);
  EXPECT_TRUE(covered(d.rects(), {200, 100, 280, 140}));
  EXPECT_FALSE(touches(d.rects(), {10, 10, 50, 30}));
  disjoint(d.rects());

  // A size change draws everything.
  d.update(b.data(), W + 1, H, {}, false);
  EXPECT_EQ(d.area(), (long)(W + 1) * H);
}

TEST(FrameDamage, AColourChangeAndAGoneTriangleAreDamage) {
  FrameDamage d;
  Frame a;
  ImDrawList& la = a.list();
  Frame::quad(la, 10, 10, 50, 30, 0xff0000ffu);
  Frame::quad(la, 100, 10, 150, 30, 0xff0000ffu);
  d.update(a.data(), W, H, {}, true);
  Frame b;
  ImDrawList& lb = b.list();
  Frame::quad(lb, 10, 10, 50, 30, 0xff0000feu);  // one bit of colour
  d.update(b.data(), W, H, {}, false);
  EXPECT_TRUE(covered(d.rects(), {10, 10, 50, 30}));
  EXPECT_TRUE(covered(d.rects(), {100, 10, 150, 30})) << "the quad drawn no more must be uncovered";
}

TEST(FrameDamage, TheSameTrianglesInAnotherOrderAreDamage) {
  // Two overlapping translucent quads swap places in the list: same triangles, other blend.
  FrameDamage d;
  Frame a;
  ImDrawList& la = a.list();
  Frame::quad(la, 10, 10, 60, 60, 0x80ff0000u);
  Frame::quad(la, 40, 40, 90, 90, 0x800000ffu);
  Frame::quad(la, 300, 200, 320, 220, 0xffffffffu);
  d.update(a.data(), W, H, {}, true);
  Frame b;
  ImDrawList& lb = b.list();
  Frame::quad(lb, 40, 40, 90, 90, 0x800000ffu);
  Frame::quad(lb, 10, 10, 60, 60, 0x80ff0000u);
  Frame::quad(lb, 300, 200, 320, 220, 0xffffffffu);
  d.update(b.data(), W, H, {}, false);
  EXPECT_TRUE(covered(d.rects(), {40, 40, 60, 60})) << "where they overlap";
  EXPECT_FALSE(touches(d.rects(), {300, 200, 320, 220}));
}

TEST(FrameDamage, ClippedKeepsWhatTouchesTheDamageScissoredToIt) {
  FrameDamage d;
  Frame a;
  ImDrawList& la = a.list();
  Frame::quad(la, 10, 10, 50, 30, 0xff0000ffu);
  Frame::quad(la, 200, 100, 260, 140, 0xff00ff00u);
  la.CmdBuffer.back().ClipRect = {0.5f, 0.25f, 390.75f, 290.5f};
  d.update(a.data(), W, H, {}, true);
  d.update(a.data(), W, H, {{190, 90, 230, 120}}, false);
  const ImDrawData* out = d.clipped(a.data());
  ASSERT_EQ(out->CmdListsCount, 1);
  const ImDrawList& l = *out->CmdLists[0];
  ASSERT_EQ(l.CmdBuffer.Size, 1);
  EXPECT_EQ(l.CmdBuffer[0].ElemCount, 6u) << "the second quad's two triangles only";
  EXPECT_EQ(l.IdxBuffer[0], 4) << "its first corner";
  // The backend's scissor of the cut: the damage box inside the command's own scissor.
  const PixelBox s = scissor_of(l.CmdBuffer[0].ClipRect, H);
  EXPECT_EQ(s.x0, 190);
  EXPECT_EQ(s.y0, 90);
  EXPECT_EQ(s.x1, 230);
  EXPECT_EQ(s.y1, 120);
  // And the command's own scissor where it is the smaller: the backend's truncation kept.
  const PixelBox own = scissor_of(la.CmdBuffer[0].ClipRect, H);
  d.update(a.data(), W, H, {{0, 0, W, H}}, false);
  const PixelBox all = scissor_of(d.clipped(a.data())->CmdLists[0]->CmdBuffer[0].ClipRect, H);
  EXPECT_EQ(all.x0, own.x0);
  EXPECT_EQ(all.y0, own.y0);
  EXPECT_EQ(all.x1, own.x1);
  EXPECT_EQ(all.y1, own.y1);
}

}  // namespace

// Every pixel of `b` lies in one of the rectangles (a box may be cut across several).
bool all_pixels_in(const std::vector<PixelBox>& rs, const PixelBox& b) {
  for (int y = b.y0; y < b.y1; ++y)
    for (int x = b.x0; x < b.x1; ++x)
      if (!touches(rs, {x, y, x + 1, y + 1})) return false;
  return true;
}

TEST(FrameDamage, ScatteredChangesAreNotDrawnOverTheirBoundingBox) {
  // A timeline's lanes each gaining a span further right than the lane above (a pipeline's
  // staircase), and a word changing far away: the damage holds them all, stays disjoint and
  // few, and covers far less than the box round them (which the Lab once drew again whole).
  FrameDamage d;
  Frame a;
  Frame::quad(a.list(), 0, 0, 1, 1, 0xff000000u);
  d.update(a.data(), W, H, {}, true);
  Frame b;
  ImDrawList& lb = b.list();
  Frame::quad(lb, 0, 0, 1, 1, 0xff000000u);
  std::vector<PixelBox> spans;
  for (int i = 0; i < 32; ++i) {
    const PixelBox s{20 + i * 10, 40 + i * 7, 60 + i * 10, 45 + i * 7};
    Frame::quad(lb, (float)s.x0, (float)s.y0, (float)s.x1, (float)s.y1, 0xff00ff00u);
    spans.push_back(s);
  }
  Frame::quad(lb, 360, 280, 390, 292, 0xffffffffu);
  d.update(b.data(), W, H, {}, false);
  for (const PixelBox& s : spans) EXPECT_TRUE(all_pixels_in(d.rects(), s));
  EXPECT_TRUE(all_pixels_in(d.rects(), {360, 280, 390, 292}));
  disjoint(d.rects());
  EXPECT_LE(d.rects().size(), (std::size_t)FrameDamage::kMaxRects);
  const PixelBox around{19, 39, 391, 293};  // the spans and the word, with the pixel to spare
  EXPECT_LT(d.area(), around.area() / 4) << "damage " << d.area() << " of the " << around.area() << " round it";
  EXPECT_GT(d.area(), 32L * 40 * 5) << "less than the spans themselves";
}

}  // namespace onegpu::app
