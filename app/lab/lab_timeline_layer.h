#pragma once
// The timeline's lanes (ruler, lane names, spans) kept in a retained layer (render/retained_layer.h)
// between frames. What the lanes show is keyed (LanesKey): when the key changes (pan, zoom,
// resize, another step, the clock, the selected lane, a new run) the layer is drawn again whole;
// while only the step grows, the new spans are appended, each lane's merge of thin spans carried
// on from where the last frame left it (LaneRun), so the layer holds the same pixels a whole
// redraw would draw. Arrows, the playhead and the hover are drawn over it each frame.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <glm/vec4.hpp>
#include <imgui.h>

#include "render/retained_layer.h"

namespace onegpu::app {

// Everything the lanes' picture depends on besides the spans themselves.
struct LanesKey {
  std::uint64_t generation = 0;  // the run
  int step = -1;
  bool wall = false;
  double view0 = 0, view1 = 0;
  int x = 0, y = 0, w = 0, h = 0;  // the layer's rectangle, window pixels (top-left origin)
  float x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  int sel_rank = -1, lanes = 0;
  const void* font = nullptr;
  float font_size = 0, scale = 0;
  std::size_t folded_spans = 0;  // folded lanes are drawn whole whenever a span arrives
  bool operator==(const LanesKey&) const = default;
};

// One lane's merge of narrow spans, carried between frames while spans are appended.
struct LaneRun {
  std::size_t next = 0;  // spans of the lane already drawn
  float a = 0, b = -1e9f;
  glm::vec4 c{0.0f};
  float best_w = 0;
  std::array<std::pair<glm::vec4, float>, 4> cover{};
  int covers = 0;
  bool counted = false;  // the open run's rectangle is already in the count
};

struct TimelineLayer {
  render::RetainedLayer target;
  std::unique_ptr<ImDrawList> list;  // drawn into the target, then emptied
  LanesKey key;
  bool valid = false;
  std::vector<LaneRun> runs;
  std::size_t rects = 0;
  int frame_h = 0;  // the frame's height (GL counts rows from the bottom)
  render::RetainedLayer::Rect rect() const { return {key.x, frame_h - (key.y + key.h), key.w, key.h}; }
  // An ImGui draw callback: copies the layer into the frame at key.x, key.y.
  static void copy(const ImDrawList*, const ImDrawCmd* cmd);
};

}  // namespace onegpu::app
