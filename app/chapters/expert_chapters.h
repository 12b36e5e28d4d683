#pragma once
// Scene 18: inside a layer. GPU 1's first layer opens: attention along its base, the router,
// and 16 experts above; a real token goes in and the router lights the two experts the model
// really chose for it, with their gate weights.
#include <optional>
#include <string>
#include <vector>

#include "app/chapters/chapter.h"
#include "app/scene/field_layout.h"

namespace onegpu::app {

struct RouterPick {
  std::string token;          // the token routed (its text)
  std::vector<int> experts;   // 0-based, most probable first
  std::vector<float> gates;
};

class InsideLayerChapter : public Chapter {
 public:
  float duration() const override { return 5.5f; }
  render::Camera camera(glm::vec2 viewport, float t) const override;
  void draw(const SceneFrame& f, const render::Camera& cam) override;
  // The router's real choice in layer 1 for the last token of the prompt, on the fresh model.
  static RouterPick pick();
  // The same, worked out once by a job on the app's job runner: null until then (draw()).
  static const RouterPick* pick_ready();
  static std::string pick_activity();
  void prepare(float t) override;  // waits for the pick (headless, tests)
  std::string activity() const override { return pick_activity(); }
  static constexpr const char* kPromptText = "Once upon a time, there lived a clever fox";
  render::Rect panel(float open) const;  // the opened layer, 0 closed .. 1 open

 private:
  FieldLayout layout_{512};
};

}  // namespace onegpu::app
