#pragma once
// One frame of the program: the panels (ImGui), the scene viewport they leave free, and the
// current chapter drawn into it. The window and the headless renderer both drive this.
#include <memory>
#include <string>
#include <vector>

#include "app/assets.h"
#include "app/chapters/chapter.h"
#include "app/lab/lab.h"
#include "app/live/run_state.h"
#include "app/navigator.h"
#include "app/ui/panel_backdrop.h"
#include "render/renderer.h"
#include "render/retained_layer.h"

struct ImFont;

namespace onegpu::app {

struct PixelRect {
  int x = 0, y = 0, w = 0, h = 0;  // top-left origin, framebuffer pixels
};

class App {
 public:
  // with_ui: draw the ImGui panels (needs an ImGui context with a platform backend, or
  // headless_io to feed display size and time by hand).
  App(const Assets& assets, bool with_ui, bool headless_io, float base_scale, int start_chapter);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // Renders one frame into the bound framebuffer; dt advances the chapter clock.
  void frame(int fb_w, int fb_h, float dt, double now);

  Navigator& nav() { return nav_; }
  // Where the last frame's caption put its parts (window pixels, y down), for the tests.
  struct CaptionDrawn {
    float row_bottom = 0, title_top = 0, text_bottom = 0, panel_bottom = 0;
  };
  const CaptionDrawn& caption_drawn() const { return caption_drawn_; }
  // The current chapter's button, pressed (by a click, Enter, or a test): starts what it
  // names and lets a chapter that waits for it run on. False when the chapter has no button
  // on screen now.
  bool press_button();
  bool button_on_screen();
  // Whether the next frames differ from the last one without any input: a chapter still
  // animating, a toast, a job or a live run in progress. The window sleeps when this is false
  // and nothing happened (draw on demand).
  bool animating(double now);
  // The toast's words at `now` (a key's answer, "wrote onegpu-field.png"), "" when none shows.
  std::string toast_now(double now) const;
  // Background work (jobs, the long run, a live run) is going on: worth a few frames a second
  // so its status line moves, not sixty.
  bool busy();
  Lab& lab() { return *lab_; }
  RunState& run_state() { return run_state_; }
  const RunState& branch_state() const { return branch_state_; }
  // Drains the live run's event rings into the run state (App::frame does it once a frame).
  void drain_events();
  // Shows a recorded run (a trace read back) in the Lab until a live run is applied.
  void show_recorded(std::shared_ptr<const LiveRun> run, const std::vector<trainer::Event>& events);
  Chapter& chapter(int index);
  Chapter& current() { return chapter(nav_.index()); }
  const render::DrawStats& stats() const { return renderer_.stats(); }
  PixelRect scene_rect() const { return scene_; }
  render::Camera last_camera() const { return camera_; }
  void set_gl_description(std::string s) { gl_ = std::move(s); }
  void set_frame_ms(float ms) { frame_ms_ = ms; }
  // The pace a window draws at: 60 frames a second, and 30 while the Lab's run trains (the
  // trainer shares the CPU with a software rasteriser; the status bar says so while it holds).
  static constexpr int kFps = 60, kLabTrainingFps = 30;
  double frame_interval() const;
  // A PNG of the next finished frame (Ctrl+S, the Lab's PNG button); "" picks a name from the
  // chapter (onegpu-ID.png) or onegpu-lab.png.
  void request_png(std::string path = {});
  // Replays the trace at `path` in the Lab; "" when it opened, else the one-line reason.
  std::string open_recorded(const std::string& path);
  // Framebuffer pixels per screen point (the monitor's content scale), for the text rule.
  void set_pixel_density(float d) { density_ = d > 0.0f ? d : 1.0f; }
  // The labels the last frame drew in the picture, with their sizes and boxes.
  const render::LabelLog& labels() const { return renderer_.labels(); }
  // The Lab's frame kept between frames and drawn again only where it changed (on by default);
  // off: drawn whole every frame (bench_lab --whole-frame, for a before/after).
  void set_lab_damage(bool on) { lab_damage_on_ = on; }
  const FrameDamage& lab_damage() const { return lab_damage_; }
  // The story's panels kept between frames and copied in as the frame's ground (on by default);
  // off: every story frame cleared and its panels drawn whole (bench_render --whole-panels).
  void set_panel_backdrop(bool on) { backdrop_on_ = on; }
  const PanelBackdrop& panel_backdrop() const { return backdrop_; }
  // Draws the last Lab frame again whole, from the same UI and run state (tests compare it
  // with the damage-tracked frame, byte for byte).
  void redraw_lab_whole(int fb_w, int fb_h);
  // The smallest label the rule allows in a window `fb_h` pixels high whose picture is
  // `picture_h` high, at the current text size.
  float min_label_px(int fb_h, int picture_h) const;

 private:
  void rebuild_fonts();
  void draw_panels(int fb_w, int fb_h, double now);  // the four below, laid out
  void draw_chapter_list(float side_w, float height);
  float widest_list_line() const;
  static float caption_floor(float s);
  float caption_title_y(float cs) const;
  float caption_needs(float cap_w, float cs) const;
  void draw_progress_dots(float cs);
  void draw_caption(float x, float y, float cap_w, float caption_h, double now);
  void draw_status(float W, float H, float status_h);
  void draw_help();  // the key list (F1 or ?)
  void draw_toast(float center_x, double now);
  void frame_lab(int fb_w, int fb_h, float dt, double now);
  // The Lab's pixels for the UI built this frame: cleared, ranks view, panels; `whole`: all of
  // it, else only where it changed since the last Lab frame (app/ui/frame_damage.h).
  void draw_lab(int fb_w, int fb_h, bool whole);
  // Clears the whole frame (black when blanked, else `colour`).
  void clear_frame(int fb_w, int fb_h);
  void begin_ui(int fb_w, int fb_h, float dt);  // ImGui's new frame (fonts rebuilt if the scale changed)
  void after_frame(int fb_w, int fb_h, double now);  // the requests a frame left (open a trace, PNG)
  void pause_lab_run_outside_lab(double now);

  render::Renderer renderer_;
  Assets assets_;
  Navigator nav_;
  std::vector<std::unique_ptr<Chapter>> chapters_;
  bool with_ui_, headless_io_;
  float built_scale_ = 0.0f;
  ImFont* body_font_ = nullptr;
  ImFont* title_font_ = nullptr;
  ImFont* small_font_ = nullptr;
  PixelRect scene_;
  render::Camera camera_;
  int last_index_ = -1;
  int list_index_ = -1;  // the chapter the list last showed: a new one is scrolled into view
  std::string gl_;
  float frame_ms_ = 0.0f;
  CaptionDrawn caption_drawn_;
  float help_fit_ = 1.0f;  // the key list's text scale that fits the window (draw_help)
  bool help_refit_ = false;  // draw_help changed help_fit_: one more frame draws it
  float density_ = 1.0f;
  RunState run_state_;
  RunState branch_state_;  // the Lab's compare tab: the last branch of a step under another split
  std::shared_ptr<const BranchRun> branch_seen_;
  std::uint64_t recorded_over_ = 0;  // showing a recorded run while the live one is this generation
  bool recorded_ = false;
  bool lab_autostarted_ = false;  // the Lab built its default run the first time it opened
  // The Lab's run, training when the story was shown, waits for the Lab to open again (pace:
  // its ops a second, 0 for as fast as it goes).
  bool lab_was_open_ = false, lab_resume_ = false;
  double lab_resume_pace_ = 0;
  std::unique_ptr<Lab> lab_;
  render::RetainedLayer lab_frame_;  // the last Lab frame (draw_lab)
  // draw_lab's per-frame lists, kept so that a frame allocates nothing.
  std::vector<render::DrawnItem> scene_items_;
  std::vector<DrawnBox> scene_boxes_;
  std::vector<PixelBox> extra_damage_;
  std::vector<glm::ivec4> scene_clips_;
  FrameDamage lab_damage_;
  FrameDamage scene_damage_;  // the ranks view's own items, matched apart (draw_lab)
  PanelBackdrop backdrop_;  // the story's panels and ground, kept between frames (frame)
  bool backdrop_on_ = true;
  bool lab_damage_on_ = true, last_frame_lab_ = false, fonts_new_ = false;
  std::string png_request_;
  std::string notice_;      // a line after an export, shown as a toast for a few seconds
  double notice_until_ = -1;
  double last_now_ = 0;
};

}  // namespace onegpu::app
