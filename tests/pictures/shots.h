#pragma once
// One way for the picture tests to render a chapter: headless, 1600×900, no panels (the scene
// fills the image), at chapter time `at` (its end when empty). The PNG is kept under
// ONEGPU_TEST_OUT as <id>_<tenths>.png or <id>_end.png, for people to look at too.
#include <optional>

#include "app/headless.h"

onegpu::app::HeadlessImage scene_shot(const char* id, std::optional<float> at = std::nullopt);
