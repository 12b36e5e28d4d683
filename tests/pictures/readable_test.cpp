// Readable at projector distance: every chapter, at its end and half way through, in three
// window sizes and at text scale 1 and 2, with the panels on. Every label the picture draws
// (the renderer logs each one with its size and box) must be at least the size rule's minimum
// (render/text_rule.h) and, when on screen, stay inside its area and the picture.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>

#include <imgui.h>

#include "app/app.h"
#include "app/assets.h"
#include "app/chapters/finale_chapters.h"
#include "app/lab/lab.h"
#include "app/live/job_runner.h"
#include "app/navigator.h"
#include "app/story.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"
#include "render/renderer.h"
#include "render/text_rule.h"

namespace onegpu::app {
namespace {

struct Size {
  int w, h;
};
constexpr Size kSizes[] = {{1024, 600}, {1280, 720}, {1600, 900}, {1920, 1080}};

// One offscreen App at one text scale; frames of any chapter, time and size.
struct StoryApp {
  render::HeadlessContext ctx;
  ImGuiContext* imgui = ImGui::CreateContext();
  std::unique_ptr<App> app;
  render::Framebuffer fb{1920, 1080};
  explicit StoryApp(float scale) {
    app = std::make_unique<App>(find_assets(Options{}), true, true, scale, 0);
    app->set_frame_ms(-1.0f);
    fb.bind();
  }
  ~StoryApp() {
    app.reset();
    ImGui::DestroyContext(imgui);
  }
  void frame(int chapter, float t, Size sz) {
    app->nav().go_to(chapter);
    app->nav().set_time(t);
    app->frame(sz.w, sz.h, 0.0f, 100.0);
  }
};

bool inside(const render::Rect& in, const render::Rect& out, float slack) {
  return in.min.x >= out.min.x - slack && in.min.y >= out.min.y - slack && in.max.x <= out.max.x + slack &&
         in.max.y <= out.max.y + slack;
}

std::string describe(const render::LabelRecord& l) {
  char b[200];
  std::snprintf(b, sizeof b, "\"%s\" %.1f px (min %.1f) box (%.0f,%.0f)-(%.0f,%.0f) area (%.0f,%.0f)-(%.0f,%.0f)",
                l.text.substr(0, 60).c_str(), l.em_px, l.min_px, l.box.min.x, l.box.min.y, l.box.max.x, l.box.max.y,
                l.area.min.x, l.area.min.y, l.area.max.x, l.area.max.y);
  return b;
}

bool overlaps(const render::Rect& a, const render::Rect& b) {
  return a.min.x < b.max.x && b.min.x < a.max.x && a.min.y < b.max.y && b.min.y < a.max.y;
}

// Problems with the labels of the frame just drawn; `labels` counts those seen.
// `where` names the frame in the overlap report. still: the camera has stopped (a chapter's
// end), so a label cut by the picture's edge is not one passing by, and two words covering
// each other, or a label moved in from the edge, are not a moment of an animation: all are
// problems too. (Mid-animation frames
// may overlap on purpose, "waiting" over the layers it hides; ONEGPU_OVERLAPS prints those.)
std::vector<std::string> check_labels(const App& app, Size sz, int* labels, const std::string& where,
                                      bool still = false) {
  std::vector<std::string> bad;
  const PixelRect scene = app.scene_rect();
  const render::Rect picture{{0.0f, 0.0f}, {float(scene.w), float(scene.h)}};
  const float min_px = app.min_label_px(sz.h, scene.h);
  for (const render::LabelRecord& l : app.labels().labels()) {
    if (l.text.empty() || l.alpha < 0.05f) continue;  // nothing to read (yet)
    ++*labels;
    if (l.em_px < min_px - 0.01f || l.min_px < min_px - 0.01f) bad.push_back("too small: " + describe(l));
    if (!l.in_view) {  // passing by during a camera move, or out of the picture on purpose
      if (still && overlaps(l.box, picture)) bad.push_back("cut by the picture's edge: " + describe(l));
      continue;
    }
    if (!inside(l.box, l.area, 1.0f)) bad.push_back("leaves its area: " + describe(l));
    else if (!inside(l.box, picture, 1.0f)) bad.push_back("leaves the picture: " + describe(l));
  }
  // A label the canvas had to move in from the picture's edge is no longer where it was put,
  // beside what it names, and may lie over something else (a chip, a grid's last column): where
  // the camera has stopped, the scene tells it shorter or on more lines instead.
  if (still)
    for (const render::LabelRecord& l : app.labels().labels())
      if (l.alpha >= 0.3f && l.in_view && l.moved_px > 4.0f)
        bad.push_back("moved " + std::to_string((int)l.moved_px) + " px in from the edge: " + describe(l));
  const bool print = std::getenv("ONEGPU_OVERLAPS") != nullptr;
  if (still || print) {
    const auto& all = app.labels().labels();
    auto ink = [](const render::LabelRecord& l) {  // the em box less most of its ascent and descent gaps
      render::Rect r = l.box;
      r.min.y += 0.2f * l.em_px;
      r.max.y -= 0.15f * l.em_px;
      return r;
    };
    for (std::size_t i = 0; i < all.size(); ++i)
      for (std::size_t j = i + 1; j < all.size(); ++j) {
        const auto &a = all[i], &b = all[j];
        if (a.alpha < 0.3f || b.alpha < 0.3f || !a.in_view || !b.in_view) continue;
        if (a.text == b.text && a.box.min == b.box.min) continue;  // drawn again on purpose (a lit layer)
        const render::Rect p = ink(a), q = ink(b);
        if (std::min(p.max.x, q.max.x) - std::max(p.min.x, q.min.x) > 1.0f &&
            std::min(p.max.y, q.max.y) - std::max(p.min.y, q.min.y) > 1.0f) {
          if (still) bad.push_back("covers another word: " + describe(a) + " WITH " + describe(b));
          if (print) std::printf("%s: overlap: %s WITH %s\n", where.c_str(), describe(a).c_str(), describe(b).c_str());
        }
      }
  }
  return bad;
}

// Runs every chapter at its middle and its end in every size at `scale`; returns failures.
std::string check_story(float scale, int* frames, int* labels) {
  StoryApp s(scale);
  std::ostringstream out;
  const int n = static_cast<int>(story().size());
  for (int i = 0; i < n; ++i) {
    const float end = s.app->chapter(i).duration();
    for (float t : {0.5f * end, end}) {
      s.app->chapter(i).prepare(t);
      // At the end also 1024x640, where a projector's laptop often sits (chapter 23's clock
      // note ran over GPU 3's name there at text 1.6).
      std::vector<Size> sizes(std::begin(kSizes), std::end(kSizes));
      if (t == end) sizes.push_back({1024, 640});
      for (Size sz : sizes) {
        s.frame(i, t, sz);
        ++*frames;
        std::ostringstream where;
        where << story()[i].id << " t=" << t << " " << sz.w << "x" << sz.h << " scale " << scale;
        for (const std::string& p : check_labels(*s.app, sz, labels, where.str(), t == end))
          out << where.str() << ": " << p << "\n";
      }
    }
  }
  return out.str();
}

void expect_every_chapter_readable(float scale) {
  SCOPED_TRACE(scale);
  int frames = 0, labels = 0;
  const std::string problems = check_story(scale, &frames, &labels);
  EXPECT_EQ(frames, static_cast<int>(story().size() * (2 * std::size(kSizes) + 1)));
  EXPECT_GT(labels, frames) << "the pictures have labels, and the log saw them";
  EXPECT_TRUE(problems.empty()) << problems;
}

// Both text scales in one test: most of its time is the chapters' real runs (training, the
// measured steps), which a process makes once.
TEST(Readable, EveryChapterLabelIsAtLeastTheMinimumAndStaysInItsArea) {
  expect_every_chapter_readable(1.0f);
  expect_every_chapter_readable(1.6f);
  expect_every_chapter_readable(2.0f);
}

// Chapters 11 and 12 at their end: the step's time bar holds the names of its four texts, so
// that "text 1" ... "text 4" stay clear of the caption under the bar. (The bar was 0.04 of the
// layout high, 10 px at 1600x900, under names the text rule draws 15 px: they ran out of it
// over the caption and the phase read-out above, at every size.)
TEST(Readable, TimeBarNamesItsTextsInsideItAtEveryTextScale) {
  for (const char* id : {"slow", "new-run"}) {
    const int chapter = find_chapter(id);
    for (float scale : {1.0f, 1.6f, 2.0f}) {
      StoryApp s(scale);
      const float end = s.app->chapter(chapter).duration();
      s.app->chapter(chapter).prepare(end);
      for (Size sz : {Size{1024, 600}, Size{1024, 640}, Size{1280, 720}, Size{1600, 900}}) {
        SCOPED_TRACE(std::string(id) + " " + std::to_string(sz.w) + "x" + std::to_string(sz.h) + " scale " +
                     std::to_string(scale));
        s.frame(chapter, end, sz);
        std::vector<render::LabelRecord> names;
        const render::LabelRecord* caption = nullptr;
        for (const render::LabelRecord& l : s.app->labels().labels()) {
          if (l.alpha < 0.3f) continue;
          if (l.text.rfind("text ", 0) == 0 && l.text.size() == 6) names.push_back(l);
          if (l.text.rfind("one step on GPU 1", 0) == 0) caption = &l;
        }
        ASSERT_NE(caption, nullptr);
        EXPECT_EQ(names.size(), 4u) << "each text named in its segment";
        auto ink = [](const render::LabelRecord& l) {  // as check_labels: less most of the line's gaps
          render::Rect r = l.box;
          r.min.y += 0.2f * l.em_px;
          r.max.y -= 0.15f * l.em_px;
          return r;
        };
        for (const render::LabelRecord& n : names)
          EXPECT_FALSE(overlaps(ink(n), ink(*caption))) << describe(n) << " WITH " << describe(*caption);
      }
    }
  }
}

// Chapters 5-8: the note under the chart about byte tokens ("<E2 80> and the like ...") starts
// at the chart's left, as its subtitle does, at every size and text scale: told whole, at 1920x1080
// with text 1.6 it ran past the picture's edge and was pushed left over the chip.
TEST(Readable, ByteTokenNoteStaysUnderTheChart) {
  int seen = 0;
  for (const char* id : {"next-token", "guess", "gradients", "step"}) {
    const int chapter = find_chapter(id);
    for (float scale : {1.0f, 1.6f, 2.0f}) {
      StoryApp s(scale);
      const float end = s.app->chapter(chapter).duration();
      s.app->chapter(chapter).prepare(end);
      for (Size sz : {Size{1024, 640}, Size{1600, 900}, Size{1920, 1080}}) {
        s.frame(chapter, end, sz);
        const render::LabelRecord *note = nullptr, *subtitle = nullptr;
        for (const render::LabelRecord& l : s.app->labels().labels()) {
          if (l.alpha < 0.3f) continue;
          if (l.text.rfind("<E2 80>", 0) == 0) note = &l;
          if (l.text == "the model's next-token probabilities") subtitle = &l;
        }
        if (!note || !subtitle) continue;
        ++seen;
        EXPECT_GE(note->box.min.x, subtitle->box.min.x - 1.0f)
            << id << " " << sz.w << "x" << sz.h << " scale " << scale << ": " << describe(*note);
      }
    }
  }
  EXPECT_GT(seen, 0) << "no chart with a byte token drawn: the test checked nothing";
}

// Chapter 27 at its end, the camera still: every word lies wholly inside the picture, the three
// lines under the field too, at a projector's text scales and in small windows (at scale 2 in a
// 1024x640 window the last line ran under the caption panel; the rule above passes over a label
// that is only partly in view, as during a camera move).
TEST(Readable, CopiesWordsStayInThePictureAtEveryTextScale) {
  const int chapter = find_chapter("copies");
  for (float scale : {1.0f, 1.6f, 2.0f}) {
    StoryApp s(scale);
    const float end = s.app->chapter(chapter).duration();
    for (Size sz : {Size{1024, 600}, Size{1024, 640}, Size{1280, 720}, Size{1600, 900}}) {
      s.frame(chapter, end, sz);
      const PixelRect scene = s.app->scene_rect();
      const render::Rect picture{{0.0f, 0.0f}, {float(scene.w), float(scene.h)}};
      int words = 0;
      for (const render::LabelRecord& l : s.app->labels().labels()) {
        if (l.text.empty() || l.alpha < 0.05f) continue;
        ++words;
        EXPECT_TRUE(inside(l.box, picture, 1.0f)) << sz.w << "x" << sz.h << " scale " << scale << ": " << describe(l);
      }
      EXPECT_GE(words, 6) << sz.w << "x" << sz.h << " scale " << scale;
    }
  }
}

// Chapter 29 at its end: the full-size panel beside GPU 1 holds its words, at a projector's
// text scales in small windows, with the chapter list open, the list hidden and the panels
// hidden. A word that touches the panel lies wholly inside it (the panel's own, and none of GPU
// 1's lines running in), every word lies inside the picture, and the panel's words do not cover
// each other. (With the panel's rows at fixed fractions of its height, the rule's larger words
// ran out: at 1024x640 the row names into the bars, the traffic lines past its edge, the
// legend out of the picture, the measured line under the chip into the panel.)
TEST(Readable, OneOf512WordsStayInTheFullSizePanelAtEveryTextScale) {
  const int chapter = find_chapter("one-of-512");
  auto ink = [](const render::LabelRecord& l) {  // the em box less most of its ascent and descent gaps
    render::Rect r = l.box;
    r.min.y += 0.2f * l.em_px;
    r.max.y -= 0.15f * l.em_px;
    return r;
  };
  for (float scale : {1.0f, 1.6f, 2.0f}) {
    StoryApp s(scale);
    auto& ch = dynamic_cast<OneOf512Chapter&>(s.app->chapter(chapter));
    const float end = ch.duration();
    ch.prepare(end);
    render::Renderer measure{find_assets(Options{}).scene};  // the picture's text rule, to find the panel's room
    for (const char* panels : {"list open", "list hidden", "panels hidden"}) {
      if (panels == std::string("list hidden")) s.app->nav().apply(Action::ToggleSidebar, 0.0);
      if (panels == std::string("panels hidden")) s.app->nav().apply(Action::ToggleClean, 0.0);
      for (Size sz : {Size{1024, 600}, Size{1024, 640}, Size{1280, 720}, Size{1600, 900}}) {
        s.frame(chapter, end, sz);
        char where[96];
        std::snprintf(where, sizeof where, "%dx%d scale %.1f %s: ", sz.w, sz.h, scale, panels);
        const PixelRect scene = s.app->scene_rect();
        const render::Rect picture{{0.0f, 0.0f}, {float(scene.w), float(scene.h)}};
        const render::Camera cam = s.app->last_camera();
        measure.set_text_rule(cam, s.app->min_label_px(sz.h, scene.h));
        const render::Rect area = ch.full_size_room(measure.world(), cam.viewport);
        const glm::vec2 a = cam.world_to_pixel({area.min.x, area.max.y}), b = cam.world_to_pixel({area.max.x, area.min.y});
        const render::Rect panel{glm::min(a, b), glm::max(a, b)};
        ASSERT_TRUE(inside(panel, picture, 1.0f)) << where << "the panel itself is in the picture";
        std::vector<render::LabelRecord> in_panel;
        int words = 0;
        for (const render::LabelRecord& l : s.app->labels().labels()) {
          if (l.text.empty() || l.alpha < 0.05f) continue;
          ++words;
          EXPECT_TRUE(l.in_view && inside(l.box, picture, 1.0f)) << where << "leaves the picture: " << describe(l);
          if (!overlaps(ink(l), panel)) continue;
          EXPECT_TRUE(inside(l.box, panel, 1.0f)) << where << "crosses the panel's edge: " << describe(l);
          in_panel.push_back(l);
        }
        for (std::size_t i = 0; i < in_panel.size(); ++i)
          for (std::size_t j = i + 1; j < in_panel.size(); ++j)
            EXPECT_FALSE(overlaps(ink(in_panel[i]), ink(in_panel[j])))
                << where << "words cover each other: " << describe(in_panel[i]) << " WITH " << describe(in_panel[j]);
        EXPECT_GE(in_panel.size(), 12u) << where << "the panel has its words";
        EXPECT_GE(words, int(in_panel.size()) + 4) << where << "and GPU 1 its own";
      }
    }
  }
}

// The Lab's ranks view draws its words through the same canvas: the same rule holds there, on
// a pp=2 dp=2 ep=2 run after one step.
TEST(Readable, LabLabelsFollowTheSameRule) {
  for (float scale : {1.0f, 2.0f}) {
    StoryApp s(scale);
    s.app->nav().set_lab(true);
    JobRunner& jr = JobRunner::shared();
    auto pump = [&] { s.app->drain_events(); };
    if (scale == 1.0f) {
      jr.configure(lab_train_args({"--pp", "2", "--dp", "2", "--ep", "2", "--microbatches", "2", "--batch", "8", "--seq", "16"}));
      jr.wait_idle(pump);
      jr.step_whole();
      jr.wait_idle(pump);
    }
    for (Size sz : kSizes) {
      s.app->frame(sz.w, sz.h, 0.0f, 0.0);
      s.app->frame(sz.w, sz.h, 0.0f, 100.0);
      int labels = 0;
      // Still: the run is paused after its step, so words over words, a label moved in from the
      // edge or cut by it are problems here as at a chapter's end.
      const auto problems = check_labels(*s.app, sz, &labels, "Lab", true);
      EXPECT_GT(labels, 4) << sz.w << "x" << sz.h;
      for (const auto& p : problems) ADD_FAILURE() << "Lab " << sz.w << "x" << sz.h << " scale " << scale << ": " << p;
    }
  }
}

// One GPU stepped by hand: the read-outs beside the chip keep to the text rule and stay on
// screen when the text is scaled up for a projector, showing fewer columns (the phase the step
// is in first) rather than none.
TEST(Readable, ByHandReadOutsShowTheCurrentPhaseAtEveryTextScale) {
  struct Case {
    float scale;
    Size sz;
    std::size_t columns;  // at least
  };
  for (Case k : {Case{1.0f, {1600, 900}, 3}, Case{1.6f, {1280, 720}, 1}, Case{2.0f, {1280, 720}, 1},
                 Case{2.0f, {1024, 600}, 1}}) {
    StoryApp s(k.scale);
    s.app->nav().set_lab(true);
    JobRunner& jr = JobRunner::shared();
    auto pump = [&] { s.app->drain_events(); };
    jr.configure(lab_train_args({}));  // one GPU, layer by layer
    jr.wait_idle(pump);
    for (int i = 0; i < 6; ++i) jr.step_op();  // four layers forward, two backward
    jr.wait_idle(pump);
    s.app->frame(k.sz.w, k.sz.h, 0.0f, 0.0);
    s.app->frame(k.sz.w, k.sz.h, 0.0f, 100.0);
    const std::vector<std::string>& cols = s.app->lab().drawn().readout_columns;
    const std::string where = std::to_string(k.sz.w) + "x" + std::to_string(k.sz.h) + " scale " + std::to_string(k.scale);
    EXPECT_GE(cols.size(), k.columns) << where;
    EXPECT_NE(std::find(cols.begin(), cols.end(), "gradients"), cols.end()) << where << ": the backward pass is under way";
    int labels = 0;
    for (const auto& p : check_labels(*s.app, k.sz, &labels, "Lab by hand")) ADD_FAILURE() << where << ": " << p;
  }
}

// The rule grows with the window and with the presenter's text size (up to a share of the
// picture), and HiDPI alone does not double it.
TEST(Readable, TheMinimumScalesWithWindowAndTextSize) {
  EXPECT_FLOAT_EQ(render::min_label_px(900, 700, 1.0f), 15.0f);
  EXPECT_FLOAT_EQ(render::min_label_px(1080, 850, 1.0f), 18.0f);
  EXPECT_FLOAT_EQ(render::min_label_px(600, 400, 1.0f), render::kMinLabelFloorPx);
  EXPECT_FLOAT_EQ(render::min_label_px(900, 1800, 2.0f), 30.0f) << "a picture with room: twice the size";
  EXPECT_FLOAT_EQ(render::min_label_px(900, 720, 2.0f), 20.0f) << "a picture of 720 px holds 20 px labels";
  EXPECT_FLOAT_EQ(render::min_label_px(900, 300, 2.0f), 15.0f) << "never under the scale-1 minimum";
  EXPECT_FLOAT_EQ(render::min_label_px(900, 700, 0.5f), 7.5f) << "Ctrl+- makes it smaller, as asked";
  EXPECT_FLOAT_EQ(render::min_label_px(2160, 4000, 2.0f, 2.0f), 36.0f) << "HiDPI: the points rule, not doubled";
}

// Enlarging the text leaves the picture most of the window: at 1280x720 and text scale 2 the
// scene keeps at least 70% of its scale-1 area, where the panels used to take it over.
TEST(Readable, PictureKeepsItsShareWhenTheTextGrows) {
  const int chapter = find_chapter("wait");
  auto area = [&](float scale) {
    StoryApp s(scale);
    s.frame(chapter, 0.0f, {1280, 720});
    const PixelRect r = s.app->scene_rect();
    return float(r.w) * float(r.h);
  };
  const float one = area(1.0f), two = area(2.0f);
  EXPECT_GT(two, 0.7f * one) << "scale 1: " << one << " px², scale 2: " << two << " px²";
}

}  // namespace
}  // namespace onegpu::app
