#pragma once
// A chapter draws one storyboard scene as a pure function of its clock t (seconds since it
// opened): the same t gives the same picture, so headless renders and tests are exact, and
// jumping into a chapter from anywhere needs nothing but t.
#include <memory>
#include <string>

#include "app/story.h"
#include "render/canvas.h"

namespace onegpu::app {

struct SceneFrame {
  render::Canvas& world;   // world units, under the chapter's camera
  render::Canvas& screen;  // pixels of the scene viewport, origin bottom-left, y up
  glm::vec2 viewport;      // scene viewport in pixels
  float t;                 // chapter clock, seconds
  float ui_scale;          // for on-screen overlay text
};

class Chapter {
 public:
  virtual ~Chapter() = default;
  // Seconds until the chapter reaches its end state (it holds still afterwards).
  virtual float duration() const = 0;
  virtual render::Camera camera(glm::vec2 viewport, float t) const = 0;
  virtual void draw(const SceneFrame& f, const render::Camera& cam) = 0;
  // The chapter's button (see ChapterInfo::action) was pressed.
  virtual void on_action() {}
  // A chapter whose button starts what the picture shows stops its clock here until the button
  // is pressed (negative: it never waits). The time before it is the scene set up; after it,
  // what the button names.
  virtual float waits_for_button_at() const { return -1.0f; }
  // Whether the button is on screen now: a button whose work has started or is done goes
  // away rather than staying there doing nothing.
  virtual bool button_offered() const { return true; }
  // Headless renders call this before drawing at time t: a chapter whose picture at t needs
  // work that normally runs in the background (training) does it here, blocking.
  virtual void prepare(float /*t*/) {}
  // One line for the status bar while the chapter has work running (empty: nothing).
  virtual std::string activity() const { return {}; }
  // The panel and text scale the picture is drawn at (the app sets it before camera()): a camera
  // may leave room for screen text, which grows with it.
  void set_ui_scale(float s) { ui_scale_ = s; }
  // The text rule's smallest em in pixels (render/text_rule.h; the app sets it before camera()):
  // a camera that leaves room for labels knows how big the rule will draw them.
  void set_min_label_px(float px) { min_label_px_ = px; }

 protected:
  float ui_scale_ = 1.0f;
  float min_label_px_ = 0.0f;
};

std::unique_ptr<Chapter> make_chapter(int index);  // the scene of story()[index]; null outside it
int scene_count();  // how many scenes the registry knows (one per chapter of the story)

}  // namespace onegpu::app
