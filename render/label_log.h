#pragma once
// Every label a frame drew, with its on-screen size and box: what the readability tests check
// (no label under the size rule, none leaving its area), and what a person can print when a
// picture looks crowded. The canvases fill it; Renderer::begin empties it.
#include <string>
#include <vector>

#include "render/camera.h"

namespace onegpu::render {

struct LabelRecord {
  std::string text;
  float em_px = 0;       // the size drawn, in pixels
  float min_px = 0;      // the rule's minimum when it was drawn
  Rect box;              // the text's box (all its lines), scene-viewport pixels, y down
  Rect area;             // where it had to stay (the visible scene unless the scene gave a box)
  float alpha = 1;       // of its colour: a label fading in or out is still logged
  bool in_view = true;   // its anchor was on screen (a label passing by during a pan is not)
  int lines = 1;         // more than one when it was wrapped to fit
  float moved_px = 0;    // how far Canvas::text moved it in from an edge it crossed (pixels)
};

class LabelLog {
 public:
  void clear() { labels_.clear(); }
  void add(LabelRecord r) { labels_.push_back(std::move(r)); }
  const std::vector<LabelRecord>& labels() const { return labels_; }

 private:
  std::vector<LabelRecord> labels_;
};

}  // namespace onegpu::render
