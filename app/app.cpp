#include "app/app.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include <imgui.h>
#include <imgui_impl_opengl3.h>

#include "app/live/trace_run.h"
#include "render/framebuffer.h"
#include "render/gl.h"
#include "render/palette.h"
#include "app/ui/imgui_colour.h"
#include "app/ui/key_commands.h"
#include "render/text_rule.h"
#include "app/png_file.h"

namespace onegpu::app {

namespace {

// The panels' colour. The frame is cleared to it and the panels that tile the window's edges
// draw no background of their own: the same pixels, without filling half the window twice
// (on a software rasteriser the panels' backgrounds were 0.5 of the 1.2 million pixels a frame
// shaded).
constexpr glm::vec4 kPanelBg = render::rgb(0x10141d);


void apply_style(float scale) {
  ImGuiStyle style;
  ImGui::StyleColorsDark(&style);
  using namespace render::palette;
  ImVec4* c = style.Colors;
  c[ImGuiCol_WindowBg] = im(kPanelBg);
  c[ImGuiCol_ChildBg] = im(kPanelBg);
  c[ImGuiCol_Border] = im(render::rgb(0x232a38));
  c[ImGuiCol_Text] = im(text);
  c[ImGuiCol_TextDisabled] = im(text_faint);
  c[ImGuiCol_Header] = im(render::rgb(0x26324a));
  c[ImGuiCol_HeaderHovered] = im(render::rgb(0x2d3b57));
  c[ImGuiCol_HeaderActive] = im(render::rgb(0x34456a));
  c[ImGuiCol_Button] = im(render::rgb(0x2a3550));
  c[ImGuiCol_ButtonHovered] = im(render::rgb(0x354468));
  c[ImGuiCol_ButtonActive] = im(render::rgb(0x405282));
  c[ImGuiCol_ScrollbarBg] = im(render::rgb(0x10141d));
  c[ImGuiCol_Separator] = im(render::rgb(0x232a38));
  style.WindowRounding = 0.0f;
  style.FrameRounding = 6.0f;
  style.WindowBorderSize = 1.0f;
  style.WindowPadding = {16, 12};
  style.ItemSpacing = {8, 6};
  style.FramePadding = {12, 6};
  style.ScrollbarSize = 10;
  style.ScaleAllSizes(scale);
  ImGui::GetStyle() = style;
}

constexpr ImGuiWindowFlags kPanel = ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize |
                                    ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoCollapse |
                                    ImGuiWindowFlags_NoSavedSettings |
                                    ImGuiWindowFlags_NoBringToFrontOnFocus;
// The panels along the window's edges, over the cleared frame (see kPanelBg).
constexpr ImGuiWindowFlags kEdgePanel = kPanel | ImGuiWindowFlags_NoBackground;
// What opens over the panels (the key list): ImGui creates a NoBringToFrontOnFocus window behind
// every other, where the edge panels' text showed through it.
constexpr ImGuiWindowFlags kOverlay = (kPanel & ~ImGuiWindowFlags_NoBringToFrontOnFocus) | ImGuiWindowFlags_AlwaysAutoResize;

// The outline ImGui draws round a window only when it has a background: drawn here for an edge
// panel, as ImGui would (under the contents, clipped to the display, no rounding).
void edge_panel_border() {
  const ImVec2 p = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(vp->Pos, {vp->Pos.x + vp->Size.x, vp->Pos.y + vp->Size.y}, false);
  dl->AddRect(p, {p.x + size.x, p.y + size.y}, ImGui::GetColorU32(ImGuiCol_Border), 0.0f, 0,
              ImGui::GetStyle().WindowBorderSize);
  dl->PopClipRect();
}

// The panels' sizes. At text scale 1 in a window of 1280 or more they are what they always
// were; they take no more than a share of the window (more text, or a small window), so the
// picture keeps most of its room, and what they hold is scaled to fit the room they get.
constexpr float kSideW = 290.0f, kCaptionH = 168.0f;
constexpr const char* kLabListLine = "    Lab: split, step, watch  (L)";
constexpr const char* kListSubtitle = "how big models train on many GPUs";
constexpr float kSideShare = 0.24f, kCaptionShare = 0.28f;
float side_width(float W, float s) {
  return std::round(std::min(kSideW * s, std::max(kSideShare * W, 200.0f)));
}
// The Lab's largest text scale in a W x H window: its side panel (a third of the width) keeps
// some 25 characters a line and the window some sixteen lines of body text (19 px at scale 1).
// Past it the panels break words apart ("backwar d"); at 1024x640 it is 1.68, at 1920x1080 3.16.
float lab_scale_limit(float W, float H) { return std::max(1.0f, std::min(W / (32.0f * 19.0f), H / (16.0f * 19.0f))); }
float status_height(float H, float s) { return std::round(std::min(28.0f * s, std::max(28.0f, 0.04f * H))); }
float caption_room(float H, float s) { return std::round(std::min(kCaptionH * s, std::max(kCaptionH, kCaptionShare * H))); }

}  // namespace

App::App(const Assets& assets, bool with_ui, bool headless_io, float base_scale, int start_chapter)
    : renderer_(assets.scene),
      assets_(assets),
      nav_(static_cast<int>(story().size()), start_chapter, base_scale),
      chapters_(story().size()),
      with_ui_(with_ui),
      headless_io_(headless_io),
      lab_(std::make_unique<Lab>(JobRunner::shared())) {
  if (with_ui_) {
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;  // nothing written beside the user's files
    if (headless_io_) {
      io.BackendFlags |= ImGuiBackendFlags_None;
      ImGui_ImplOpenGL3_Init("#version 330 core");
    }
    rebuild_fonts();
  }
}

App::~App() {
  if (with_ui_ && headless_io_) ImGui_ImplOpenGL3_Shutdown();
}

Chapter& App::chapter(int index) {
  if (!chapters_[index]) chapters_[index] = make_chapter(index);
  return *chapters_[index];
}

void App::rebuild_fonts() {
  float s = nav_.ui_scale();
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  // Latin plus the punctuation, arrows and maths signs the captions and status line use.
  static const ImWchar ranges[] = {0x0020, 0x00FF, 0x2000, 0x206F, 0x2190, 0x21FF,
                                   0x2200, 0x22FF, 0x25A0, 0x25FF, 0};
  auto load = [&](const std::filesystem::path& p, float px) -> ImFont* {
    if (!p.empty()) {
      if (ImFont* f = io.Fonts->AddFontFromFileTTF(p.c_str(), px, nullptr, ranges)) return f;
    }
    ImFontConfig cfg;
    cfg.SizePixels = px;
    return io.Fonts->AddFontDefault(&cfg);  // the built-in font keeps the app usable
  };
  body_font_ = load(assets_.ui_font, std::round(19.0f * s));
  title_font_ = load(assets_.ui_title_font.empty() ? assets_.ui_font : assets_.ui_title_font, std::round(28.0f * s));
  small_font_ = load(assets_.ui_font, std::round(15.0f * s));
  io.FontDefault = body_font_;
  ImGui_ImplOpenGL3_DestroyFontsTexture();
  ImGui_ImplOpenGL3_CreateFontsTexture();
  apply_style(s);
  built_scale_ = s;
  fonts_new_ = true;  // the kept Lab frame's glyphs are stale: the next Lab frame is drawn whole
  backdrop_.invalidate();  // and the story's kept panels
}

void App::clear_frame(int fb_w, int fb_h) {
  glBindVertexArray(0);
  glViewport(0, 0, fb_w, fb_h);
  glDisable(GL_SCISSOR_TEST);
  if (nav_.blank()) glClearColor(0.0f, 0.0f, 0.0f, 1.0f);
  else glClearColor(kPanelBg.r, kPanelBg.g, kPanelBg.b, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
}

void App::begin_ui(int fb_w, int fb_h, float dt) {
  if (built_scale_ != nav_.ui_scale()) rebuild_fonts();
  ImGuiIO& io = ImGui::GetIO();
  ImGui_ImplOpenGL3_NewFrame();
  if (headless_io_) {
    io.DisplaySize = {static_cast<float>(fb_w), static_cast<float>(fb_h)};
    io.DisplayFramebufferScale = {1.0f, 1.0f};
    io.DeltaTime = dt > 0.0f ? dt : 1.0f / 60.0f;
  }
  ImGui::NewFrame();
}

void App::drain_events() {
  // A branch run once (compare tab): its events are all there when it is published.
  if (auto b = JobRunner::shared().branched(); b && b != branch_seen_) {
    branch_seen_ = b;
    branch_state_.attach(b->run);
    for (const trainer::Event& e : b->events) branch_state_.consume(e);
  }
  auto live = JobRunner::shared().live();
  const std::uint64_t gen = live ? live->generation : 0;
  if (recorded_ && gen == recorded_over_) return;  // a recorded run stays until a live one starts
  recorded_ = false;
  if (live && gen != run_state_.generation()) run_state_.attach(live);
  run_state_.drain();
}

void App::show_recorded(std::shared_ptr<const LiveRun> run, const std::vector<trainer::Event>& events) {
  auto live = JobRunner::shared().live();
  recorded_over_ = live ? live->generation : 0;
  recorded_ = true;
  run_state_.attach(std::move(run));
  for (const trainer::Event& e : events) run_state_.consume(e);
}

bool App::button_on_screen() {
  if (nav_.lab_open() || story()[nav_.index()].action.empty()) return false;
  Chapter& ch = current();
  if (ch.waits_for_button_at() >= 0.0f && nav_.button_done()) return false;  // pressed: what it named is playing
  return ch.button_offered();
}

bool App::press_button() {
  if (!button_on_screen()) return false;
  nav_.mark_button_done();
  current().on_action();
  if (nav_.reduced_motion()) nav_.set_time(current().duration());
  return true;
}

bool App::busy() {
  const RunnerStatus st = JobRunner::shared().status();
  // A by-hand command still being carried out counts: when it ends, the window owes the frames
  // that show what it did (else a paused Lab sleeps through the end of "One step").
  if (!st.job.empty() || st.building || st.queued > 0 || st.working || st.mode != RunMode::Paused) return true;
  return !nav_.lab_open() && !current().activity().empty();
}

bool App::animating(double now) {
  if (!toast_now(now).empty()) return true;
  if (nav_.help_open() && help_refit_) return true;
  if (nav_.lab_open()) {  // the Lab redraws while its run moves or a recorded step replays
    const RunnerStatus st = JobRunner::shared().status();
    return st.mode != RunMode::Paused || st.building || st.queued > 0 || lab_->animating();
  }
  if (nav_.blank()) return false;
  Chapter& ch = current();
  if (nav_.index() != last_index_) return true;  // arriving: the first frame sets the clock
  const float hold = ch.waits_for_button_at();
  if (hold >= 0.0f && !nav_.button_done()) return nav_.time() < hold;  // standing at its button
  return nav_.time() < ch.duration() + 0.05f;  // one frame past the end draws the end state
}

float App::min_label_px(int fb_h, int picture_h) const {
  return render::min_label_px(static_cast<float>(fb_h), static_cast<float>(picture_h), nav_.ui_scale(), density_);
}

// The Lab's run stops training while the story is shown: it took a core from the chapters'
// own measured runs (the times they show) and from their frames, unseen. It trains on, at its
// pace, when the Lab opens again.
void App::pause_lab_run_outside_lab(double now) {
  const bool open = nav_.lab_open();
  if (open == lab_was_open_) return;
  lab_was_open_ = open;
  JobRunner& jr = JobRunner::shared();
  if (open) {
    if (lab_resume_) jr.play(lab_resume_pace_);
    lab_resume_ = false;
    return;
  }
  const RunnerStatus st = jr.status();
  lab_resume_ = st.mode != RunMode::Paused;
  lab_resume_pace_ = st.mode == RunMode::Paced ? st.ops_per_second : 0.0;
  if (!lab_resume_) return;
  jr.pause();
  notice_ = "The Lab's run waits while the story is shown: L goes back to it, training";
  notice_until_ = now + 4.0;
}

void App::frame(int fb_w, int fb_h, float dt, double now) {
  drain_events();
  pause_lab_run_outside_lab(now);
  nav_.set_scale_limit(nav_.lab_open() ? lab_scale_limit((float)fb_w, (float)fb_h) : Navigator::kMaxScale);
  if (nav_.lab_open()) {
    frame_lab(fb_w, fb_h, dt, now);
    return;
  }
  if (nav_.index() != last_index_) {
    // Arriving from the chapter after shows this one finished; otherwise it plays (or, with
    // reduced motion, opens finished, or at its button if it waits for one).
    if (nav_.entered_backward()) nav_.set_time(current().duration());
    else if (nav_.reduced_motion()) {
      const float hold = current().waits_for_button_at();
      nav_.set_time(hold >= 0.0f ? hold : current().duration());
    }
    last_index_ = nav_.index();
  }
  if (nav_.take_button_request()) press_button();
  nav_.advance(dt);
  // A chapter that waits for its button stands still at that moment until it is pressed.
  if (const float hold = current().waits_for_button_at(); hold >= 0.0f && !nav_.button_done())
    nav_.set_time(std::min(nav_.time(), hold));

  last_frame_lab_ = false;  // the kept Lab frame is drawn whole when the Lab opens again
  if (nav_.blank()) {  // the presenter blanked the screen: black, nothing else
    clear_frame(fb_w, fb_h);
    return;
  }

  scene_ = {0, 0, fb_w, fb_h};
  if (with_ui_) {
    begin_ui(fb_w, fb_h, dt);
    if (!nav_.clean()) draw_panels(fb_w, fb_h, now);
    else draw_toast(fb_w * 0.5f, now);  // clean: the picture fills the window, no panel at all
    if (nav_.help_open()) draw_help();
    ImGui::Render();
  }
  // The frame's ground: the kept panels copied in (app/ui/panel_backdrop.h), or a clear, with
  // the panels drawn after the scene.
  const PixelBox scene_box{scene_.x, scene_.y, scene_.x + scene_.w, scene_.y + scene_.h};
  const bool kept = with_ui_ && backdrop_on_ &&
                    backdrop_.draw(*ImGui::GetDrawData(), fb_w, fb_h, scene_box, {kPanelBg.r, kPanelBg.g, kPanelBg.b, 1.0f},
                                   render::palette::background);
  if (!kept) clear_frame(fb_w, fb_h);

  // The scene, in the viewport the panels leave free (GL counts rows from the bottom).
  Chapter& ch = current();
  float t = std::min(nav_.time(), ch.duration() + 0.001f);
  glm::vec2 vp{static_cast<float>(std::max(1, scene_.w)), static_cast<float>(std::max(1, scene_.h))};
  // Kept: the ground was copied in (on llvmpipe a clear of part of the frame is a shaded quad).
  renderer_.begin(scene_.x, fb_h - scene_.y - scene_.h, scene_.w, scene_.h, render::palette::background, !kept);
  const float min_px = min_label_px(fb_h, scene_.h);
  ch.set_ui_scale(nav_.ui_scale());
  ch.set_min_label_px(min_px);
  camera_ = ch.camera(vp, t);
  renderer_.set_text_rule(camera_, min_px);
  SceneFrame f{renderer_.world(), renderer_.screen(), vp, t, nav_.ui_scale()};
  ch.draw(f, camera_);
  renderer_.end(camera_);

  if (with_ui_) {
    glViewport(0, 0, fb_w, fb_h);
    if (kept) backdrop_.draw_over(*ImGui::GetDrawData());
    else ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  }
  after_frame(fb_w, fb_h, now);
}

void App::request_png(std::string path) {
  if (path.empty()) path = nav_.lab_open() ? "onegpu-lab.png" : "onegpu-" + std::string(story()[nav_.index()].id) + ".png";
  png_request_ = std::move(path);
}

std::string App::open_recorded(const std::string& path) {
  try {
    TraceRun t = load_trace_run(path);
    nav_.set_lab(true);
    show_recorded(t.run, t.events);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string App::toast_now(double now) const {
  std::string t = nav_.toast(now);
  if (t.empty() && now < notice_until_) t = notice_;
  return t;
}

void App::after_frame(int fb_w, int fb_h, double now) {
  last_now_ = now;
  if (std::string p = lab_->take_open_request(); !p.empty()) {
    const std::string why = open_recorded(p);
    lab_->set_message(why.empty() ? "replaying " + p + " (no training)" : why, !why.empty());
  }
  if (std::string p = lab_->take_png_request(); !p.empty()) png_request_ = p;
  if (png_request_.empty()) return;
  const std::string p = std::exchange(png_request_, std::string());
  try {
    save_png(p, fb_w, fb_h, render::read_pixels(fb_w, fb_h));
    notice_ = "wrote " + p;
  } catch (const std::exception& e) {
    notice_ = std::string("PNG not written: ") + e.what();
  }
  notice_until_ = now + 4.0;
  if (nav_.lab_open()) lab_->set_message(notice_, notice_.rfind("wrote", 0) != 0);
}

void App::frame_lab(int fb_w, int fb_h, float dt, double now) {
  // Opened with nothing to show: start the panel's configuration, so "Step one op" works at once.
  // While the runner is busy with a chapter's job (a teacher pressed L mid-chapter), ask again
  // on a later frame instead of leaving the Lab empty.
  if (!recorded_ && !lab_autostarted_) {
    const RunnerStatus st = JobRunner::shared().status();
    if (JobRunner::shared().live() || !st.error.empty()) {
      lab_autostarted_ = true;  // a run to show, or an error to read
    } else if (!st.building && st.queued == 0) {
      JobRunner::shared().configure(lab_->args());
      lab_autostarted_ = true;
    }
  }
  const float s = nav_.ui_scale();
  scene_ = {0, 0, fb_w, fb_h};
  LabLayout where{0, 0, (float)fb_w, (float)fb_h};
  if (with_ui_) {
    begin_ui(fb_w, fb_h, dt);
    const float status_h = status_height((float)fb_h, s);
    lab_->set_branch(&branch_state_, branch_seen_.get());
    where = lab_->panels(run_state_, (float)fb_w, (float)fb_h, s, LabFonts{body_font_, title_font_, small_font_});
    ImGui::PushStyleColor(ImGuiCol_WindowBg, kLabPanelBg);
    draw_status((float)fb_w, (float)fb_h, status_h);
    ImGui::PopStyleColor();
    if (nav_.help_open()) draw_help();
    draw_toast(where.x + where.w * 0.5f, now);
    ImGui::Render();
  }
  scene_ = {(int)where.x, (int)where.y, std::max(1, (int)where.w), std::max(1, (int)where.h)};
  draw_lab(fb_w, fb_h, !lab_damage_on_ || !last_frame_lab_);
  last_frame_lab_ = true;
  after_frame(fb_w, fb_h, now);
}

void App::draw_lab(int fb_w, int fb_h, bool whole) {
  // The Lab's panels tile the window around the ranks view, so their background is the clear
  // colour and they draw none (lab.h, kLabPanelBg): on a software rasteriser, shading a million
  // background pixels a frame cost 10 ms of CPU, a third of the frame.
  // With the UI, the frame is kept (lab_frame_) and drawn again only where it changed: the
  // shapes and words of the ranks view that differ from the last frame's and what FrameDamage
  // finds in the panels; then copied to the window. The pixels are those of drawing it all
  // (tests/pictures/lab_damage_test.cpp).
  ImDrawData* dd = with_ui_ ? ImGui::GetDrawData() : nullptr;
  const bool kept = dd && FrameDamage::tracks(*dd);
  if (!kept) clear_frame(fb_w, fb_h);
  const glm::vec2 vp{(float)scene_.w, (float)scene_.h};
  renderer_.begin(scene_.x, fb_h - scene_.y - scene_.h, scene_.w, scene_.h, render::palette::background, !kept);
  camera_ = render::Camera::fit({{0, 0}, vp}, vp, 0.0f);
  renderer_.set_text_rule(camera_, min_label_px(fb_h, scene_.h));
  lab_->ranks(renderer_.screen(), vp, run_state_, nav_.ui_scale());
  if (!kept) {
    renderer_.end(camera_);
    if (dd) {
      glViewport(0, 0, fb_w, fb_h);
      ImGui_ImplOpenGL3_RenderDrawData(dd);
    }
    return;
  }
  whole = lab_frame_.resize(fb_w, fb_h) || std::exchange(fonts_new_, false) || whole;
  // What the ranks view will draw, in window pixels, for FrameDamage to match with the last frame's.
  renderer_.prepare(camera_);
  scene_items_.clear();
  renderer_.drawn_items(scene_items_);
  scene_boxes_.clear();
  for (const render::DrawnItem& it : scene_items_) {
    const PixelBox b{std::max(scene_.x, scene_.x + it.box.x), std::max(scene_.y, scene_.y + it.box.y),
                     std::min(scene_.x + scene_.w, scene_.x + it.box.z), std::min(scene_.y + scene_.h, scene_.y + it.box.w)};
    scene_boxes_.push_back({it.hash, b});
  }
  // The scene's changes are matched on their own and given as one box: the scene is then drawn
  // inside one or two rectangles rather than up to 16 (each a draw call per run of shapes, which
  // costs llvmpipe's drawing thread more than shading the few pixels between them).
  scene_damage_.update(scene_boxes_, fb_w, fb_h, whole);
  extra_damage_.clear();
  if (const PixelBox b = scene_damage_.bounds(); !b.empty()) extra_damage_.push_back(b);
  for (const PixelBox& d : lab_->drawn().lanes_dirty) extra_damage_.push_back(d);
  lab_damage_.update(*dd, fb_w, fb_h, extra_damage_, whole);
  lab_frame_.begin();
  glBindVertexArray(0);
  const glm::vec4 bg = nav_.blank() ? glm::vec4(0, 0, 0, 1) : glm::vec4(kPanelBg.r, kPanelBg.g, kPanelBg.b, 1.0f);
  scene_clips_.clear();
  for (const PixelBox& r : lab_damage_.rects()) {
    lab_frame_.clear(bg, {r.x0, fb_h - r.y1, r.x1 - r.x0, r.y1 - r.y0});
    const int x0 = std::max(r.x0, scene_.x), y0 = std::max(r.y0, scene_.y);
    const int x1 = std::min(r.x1, scene_.x + scene_.w), y1 = std::min(r.y1, scene_.y + scene_.h);
    if (x1 > x0 && y1 > y0) scene_clips_.push_back({x0, fb_h - y1, x1 - x0, y1 - y0});
  }
  renderer_.end_clipped(scene_clips_, render::palette::background);
  glViewport(0, 0, fb_w, fb_h);
  ImGui_ImplOpenGL3_RenderDrawData(lab_damage_.clipped(*dd));
  lab_frame_.end();
  glDisable(GL_SCISSOR_TEST);
  lab_frame_.copy({0, 0, fb_w, fb_h});
  glDisable(GL_SCISSOR_TEST);
}

void App::redraw_lab_whole(int fb_w, int fb_h) { draw_lab(fb_w, fb_h, true); }

double App::frame_interval() const {
  const bool training = nav_.lab_open() && JobRunner::shared().status().mode != RunMode::Paused;
  return 1.0 / (training ? kLabTrainingFps : kFps);
}

void App::draw_status(float W, float H, float status_h) {
  const float s = nav_.ui_scale();
  ImGui::SetNextWindowPos({0, H - status_h});
  ImGui::SetNextWindowSize({W, status_h});
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, {12.0f * s, 5.0f * s});
  ImGui::Begin("##status", nullptr, kEdgePanel | ImGuiWindowFlags_NoScrollbar);
  edge_panel_border();
  ImGui::SetWindowFontScale(std::min(1.0f, status_h / std::round(28.0f * s)));
  ImGui::PushFont(small_font_);
  const RunnerStatus st = JobRunner::shared().status();
  std::string activity;
  if (!nav_.lab_open()) activity = current().activity();
  if (activity.empty() && !st.job.empty()) activity = st.job;
  if (activity.empty() && st.building) activity = st.building_what;
  if (activity.empty()) activity = st.mode == RunMode::Paused ? "trainer: idle" : "trainer: running";
  char frame[64] = "headless render";
  if (frame_ms_ >= 0.0f) std::snprintf(frame, sizeof frame, "frame %.1f ms", frame_ms_);
  if (nav_.lab_open() && st.mode != RunMode::Paused)  // the window's pace while the run trains
    std::snprintf(frame + std::strlen(frame), sizeof frame - std::strlen(frame), " (%d fps while training)", kLabTrainingFps);
  // Events the live run could not hand over: never silent.
  char events[96] = "";
  if (run_state_.run()) {
    if (run_state_.dropped() > 0)
      std::snprintf(events, sizeof events, "  ·  events LOST: %llu", (unsigned long long)run_state_.dropped());
    else
      std::snprintf(events, sizeof events, "  ·  events: none lost (ring %.0f%%)", 100.0 * run_state_.ring_fill());
  }
  // Where the live run's ops run (its --device, resolved when the run was built).
  const char* device = "";
  if (run_state_.run()) device = run_state_.run()->args.device == "cuda" ? "  ·  ops on the GPU (CUDA)" : "  ·  ops on the CPU";
  char head[512];
  std::snprintf(head, sizeof head, "%s  ·  %s%s%s", frame, activity.c_str(), events, device);
  // Then the key hints and the GL renderer, each only where it fits whole: a narrow window (or
  // a projector's text scale) drops hints rather than cutting one off in the middle. The
  // story's first hint is the one that leads to every other.
  static constexpr const char* kStoryHints[] = {"F1 all keys", "← → chapters", "Enter button", "R replay",
                                                "B blank", "H hide panels"};
  // The Lab's: its stepping keys (key_commands.cpp), how to leave, then the rest.
  static const std::vector<const char*> kLabHints = [] {
    std::vector<const char*> h;
    for (const LabKeyRow& r : lab_keys())
      if (*r.hint) h.push_back(r.hint);
    h.insert(h.begin() + std::min<std::ptrdiff_t>(4, (std::ptrdiff_t)h.size()), lab_leave_key().hint);
    h.push_back("Ctrl+S PNG");
    h.push_back("F1 all keys");
    return h;
  }();
  std::string status = head;
  const float room = ImGui::GetContentRegionAvail().x;
  auto add_if_it_fits = [&](const char* part) {
    if (!*part) return;  // no GL renderer name in a headless render
    std::string longer = status + "  ·  " + part;
    if (ImGui::CalcTextSize(longer.c_str()).x <= room) status = std::move(longer);
  };
  if (nav_.lab_open())
    for (const char* h : kLabHints) add_if_it_fits(h);
  else
    for (const char* h : kStoryHints) add_if_it_fits(h);
  add_if_it_fits(gl_.c_str());
  ImGui::TextColored(im(run_state_.dropped() > 0 ? render::palette::backward : render::palette::text_faint), "%s", status.c_str());
  ImGui::PopFont();
  ImGui::End();
  ImGui::PopStyleVar();
}

// A short message (for example "Press Esc again to quit") over the scene.
void App::draw_toast(float center_x, double now) {
  std::string toast = toast_now(now);
  if (toast.empty()) return;
  // In front of the panels (an overlay), centred where asked but inside the window: over the
  // Lab's ranks view a long message would otherwise run off the right edge.
  const ImGuiIO& io = ImGui::GetIO();
  const ImGuiStyle& st = ImGui::GetStyle();
  const float w = std::min(ImGui::CalcTextSize(toast.c_str()).x + 2.0f * st.WindowPadding.x, 0.96f * io.DisplaySize.x);
  const float x = std::clamp(center_x, 0.5f * w, std::max(0.5f * w, io.DisplaySize.x - 0.5f * w));
  ImGui::SetNextWindowPos({x, 24.0f * nav_.ui_scale()}, 0, {0.5f, 0.0f});
  ImGui::SetNextWindowSizeConstraints({0, 0}, {w, io.DisplaySize.y});
  ImGui::Begin("##toast", nullptr, kOverlay);
  ImGui::PushTextWrapPos(w - st.WindowPadding.x);
  ImGui::TextUnformatted(toast.c_str());
  ImGui::PopTextWrapPos();
  ImGui::End();
}

// The keys, from the same table the window maps presses through. An overlay: in front of the
// panels (a window with NoBringToFrontOnFocus is created behind the others), and its text
// shrinks until it fits a small window at a projector's text scale.
void App::draw_help() {
  const ImGuiIO& io = ImGui::GetIO();
  const ImVec2 room{io.DisplaySize.x * 0.96f, io.DisplaySize.y * 0.94f};
  ImGui::SetNextWindowPos({io.DisplaySize.x * 0.5f, io.DisplaySize.y * 0.5f}, 0, {0.5f, 0.5f});
  ImGui::SetNextWindowSizeConstraints({0, 0}, room);
  ImGui::Begin("##help", nullptr, kOverlay);
  ImGui::SetWindowFontScale(help_fit_);
  ImGui::PushFont(title_font_);
  ImGui::TextUnformatted("Keys");
  ImGui::PopFont();
  // One table, so the second section's rows line up under the first's. In the Lab its own keys
  // come first and the chapters' keys are left out (key_commands.h: help_lines).
  const std::vector<HelpLine> lines = help_lines(nav_.lab_open());
  if (ImGui::BeginTable("##keys", 2, ImGuiTableFlags_SizingFixedFit)) {
    for (const HelpLine& l : lines) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      if (l.heading) {
        ImGui::Spacing();
        ImGui::TextUnformatted(l.keys.c_str());
        continue;
      }
      ImGui::TextColored(im(render::palette::forward), "%s", l.keys.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(l.does.c_str());
    }
    ImGui::EndTable();
  }
  ImGui::PushFont(small_font_);
  ImGui::TextDisabled("Any key closes this list.");
  ImGui::PopFont();
  // What the text needs at this scale against the room there is: shrink (or grow back towards 1)
  // for the next frame. Text widths scale linearly with the font scale, so it settles at once.
  const ImGuiStyle& st = ImGui::GetStyle();
  float keys_w = 0.0f, does_w = 0.0f;
  auto widen = [&](const char* keys, const char* does) {
    keys_w = std::max(keys_w, ImGui::CalcTextSize(keys).x);
    does_w = std::max(does_w, ImGui::CalcTextSize(does).x);
  };
  for (const HelpLine& l : lines)
    if (!l.heading) widen(l.keys.c_str(), l.does.c_str());
  const float need_w = keys_w + does_w + 4.0f * st.CellPadding.x + 2.0f * st.WindowPadding.x;
  const float need_h = ImGui::GetCursorPosY() + st.WindowPadding.y;
  const float fit = std::min(room.x / std::max(1.0f, need_w), room.y / std::max(1.0f, need_h));
  const float was = help_fit_;
  if (fit < 1.0f || help_fit_ < 1.0f) help_fit_ = std::clamp(help_fit_ * fit * 0.98f, 0.3f, 1.0f);
  // A new scale is drawn by the next frame, which an idle window owes (else the list stays cut
  // until something else moves: the story's list opened after the Lab's narrower one).
  help_refit_ = std::abs(help_fit_ - was) > 0.005f;
  ImGui::End();
}

// The chapter list's widest line at full text size (the body font), for its text scale.
float App::widest_list_line() const {
  const auto& chapters = story();
  auto w = [&](const char* t) { return body_font_->CalcTextSizeA(body_font_->FontSize, FLT_MAX, 0.0f, t).x; };
  float widest = w(kLabListLine);  // the subtitle wraps
  char label[160];
  for (int i = 0; i < static_cast<int>(chapters.size()); ++i) {
    std::snprintf(label, sizeof label, "%2d  %s", i + 1, std::string(chapters[i].title).c_str());
    widest = std::max(widest, w(label));
  }
  return widest;
}

// The chapter list on the left (Tab hides it): the parts, every chapter, and the Lab.
void App::draw_chapter_list(float side_w, float height) {
  const auto& chapters = story();
  ImGui::SetNextWindowPos({0, 0});
  ImGui::SetNextWindowSize({side_w, height});
  ImGui::Begin("##chapters", nullptr, kEdgePanel);
  edge_panel_border();
  // Narrower than asked (a small window, large text): smaller text, to half size at most, so
  // the longest title fits beside the padding and the scrollbar (which keep the style's size);
  // a title still too wide goes on two lines rather than being cut off.
  const ImGuiStyle& st = ImGui::GetStyle();
  const float room = side_w - 2.0f * st.WindowPadding.x - st.ScrollbarSize;
  ImGui::SetWindowFontScale(std::clamp(room / std::max(1.0f, widest_list_line()), 0.5f, 1.0f));
  auto fitted = [&](const std::string& line) {
    std::string out, row;
    std::size_t i = 0;
    while (i < line.size()) {
      std::size_t j = line.find(' ', i + 1);
      if (j == std::string::npos) j = line.size();
      const std::string word = line.substr(i, j - i);  // with its space in front
      const bool blank = word.find_first_not_of(' ') == std::string::npos;
      if (!blank && row.find_first_not_of(' ') != std::string::npos && ImGui::CalcTextSize((row + word).c_str()).x > room) {
        out += row + "\n";
        row = "    " + word.substr(word.find_first_not_of(' '));  // under the title, not its number
      } else {
        row += word;
      }
      i = j;
    }
    return out + row;
  };
  ImGui::PushFont(title_font_);
  ImGui::TextUnformatted("onegpu");
  ImGui::PopFont();
  ImGui::PushFont(small_font_);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("%s", kListSubtitle);
  ImGui::PopTextWrapPos();
  ImGui::PopFont();
  ImGui::Spacing();
  std::string_view part;
  for (int i = 0; i < static_cast<int>(chapters.size()); ++i) {
    const auto& c = chapters[i];
    if (c.part != part) {
      part = c.part;
      ImGui::Spacing();
      ImGui::PushFont(small_font_);
      ImGui::TextColored(im(render::palette::forward), "%s", std::string(part).c_str());
      ImGui::PopFont();
    }
    char label[160];
    std::snprintf(label, sizeof label, "%2d  %s", i + 1, std::string(c.title).c_str());
    if (ImGui::Selectable((fitted(label) + "##" + std::to_string(i)).c_str(), i == nav_.index())) {
      nav_.go_to(i);
    }
    // A chapter just opened is brought into view, and the list left where it is when it shows.
    // (Not "while its clock is under 50 ms": a key pressed after a still frame comes with a long
    // frame time, so Home from the last chapter left chapter 1 scrolled out of the list.)
    if (i == nav_.index() && list_index_ != nav_.index()) {
      const float top = ImGui::GetWindowPos().y, bottom = top + ImGui::GetWindowHeight();
      if (ImGui::GetItemRectMin().y < top || ImGui::GetItemRectMax().y > bottom) ImGui::SetScrollHereY(0.3f);
    }
  }
  ImGui::Spacing();
  ImGui::PushFont(small_font_);
  ImGui::TextColored(im(render::palette::forward), "%s", "Your own run");
  ImGui::PopFont();
  if (ImGui::Selectable((fitted(kLabListLine) + "##lab").c_str(), false)) nav_.set_lab(true);
  ImGui::End();
  list_index_ = nav_.index();
}

// Where the story is: "3 / 29 · part" and one dot a chapter, right-aligned on the caption's
// first line; each dot jumps to its chapter. They get smaller rather than run over the words
// on their left (the part's name goes first). Drawn inside the caption panel, at its scale cs.
void App::draw_progress_dots(float cs) {
  const auto& chapters = story();
  const ChapterInfo& info = chapters[nav_.index()];
  ImGui::PushFont(small_font_);
  ImVec2 win = ImGui::GetWindowPos();
  int parts = 0;
  std::string_view p;
  for (const auto& c : chapters) if (c.part != p) { p = c.part; ++parts; }
  char where[96];
  std::snprintf(where, sizeof where, "%d / %zu  ·  %s", nav_.index() + 1, chapters.size(), std::string(info.part).c_str());
  auto dots_step = [&](const char* words) {
    const float words_end = ImGui::GetCursorScreenPos().x + ImGui::CalcTextSize(words).x + 24.0f * cs;
    const float room = win.x + ImGui::GetWindowWidth() - 16.0f * cs - words_end;
    return std::min(13.0f * cs, room / (chapters.size() + (parts - 1) * 9.0f / 13.0f));
  };
  float step = dots_step(where);
  if (step < 8.0f * cs) {
    std::snprintf(where, sizeof where, "%d / %zu", nav_.index() + 1, chapters.size());
    step = std::max(dots_step(where), 4.0f);
  }
  ImGui::TextColored(im(render::palette::text_dim), "%s", where);
  ImGui::PopFont();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float r = step * 4.0f / 13.0f, part_gap = step * 9.0f / 13.0f;
  float dots_w = step * chapters.size() + part_gap * (parts - 1);
  float x = win.x + ImGui::GetWindowWidth() - dots_w - 16.0f * cs;
  float y = win.y + 12.0f * cs + 6.0f * cs;
  p = chapters[0].part;
  for (int i = 0; i < static_cast<int>(chapters.size()); ++i) {
    if (chapters[i].part != p) { p = chapters[i].part; x += part_gap; }
    ImVec2 c{x + step * 0.5f, y};
    bool here = i == nav_.index();
    if (here) dl->AddCircleFilled(c, r * 1.5f, col(render::palette::focus));
    else dl->AddCircleFilled(c, r, col(i < nav_.index() ? render::palette::lit : render::palette::text_dim));
    ImGui::SetCursorScreenPos({x, y - step * 0.5f});
    ImGui::PushID(i);
    if (ImGui::InvisibleButton("dot", {step, step})) nav_.go_to(i);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%d  %s", i + 1, std::string(chapters[i].title).c_str());
    ImGui::PopID();
    x += step;
  }
}

// The caption's text scale goes no lower than this.
float App::caption_floor(float s) { return std::min(0.5f * s, 1.0f); }

// The title goes under the first row (the list button and the dots), which starts at the
// window's padding: that padding and the spacing are the style's (scale s), not the caption's
// shrunk cs, so at a large s in a small window a fixed 34 cs put the title over the row.
float App::caption_title_y(float cs) const {
  const float s = nav_.ui_scale();
  return std::max(34.0f * cs, ImGui::GetStyle().WindowPadding.y + small_font_->FontSize * cs / s + 2.0f * cs + 4.0f * cs);
}

// The height the caption's words take at text scale cs in a panel cap_w wide.
float App::caption_needs(float cap_w, float cs) const {
  const float s = nav_.ui_scale();
  const ImGuiStyle& st = ImGui::GetStyle();
  const ChapterInfo& info = story()[nav_.index()];
  const float button_w = info.action.empty() ? 0.0f : std::min(250.0f * cs, 0.4f * cap_w);
  const float wrap_w = std::max(50.0f, cap_w - button_w - 24.0f * cs - st.WindowPadding.x);
  const ImVec2 text = body_font_->CalcTextSizeA(body_font_->FontSize * cs / s, FLT_MAX, wrap_w, std::string(info.caption).c_str());
  const float below_button = info.action.empty() ? 0.0f : 116.0f * cs + small_font_->FontSize * cs / s + 8.0f * cs;
  return std::max(caption_title_y(cs) + title_font_->FontSize * cs / s + st.ItemSpacing.y + text.y + 10.0f * cs, below_button);
}

// The caption panel: the chapter's place and progress dots, its title and caption, and its
// button, all at the caption's own scale cs: the text scale, or less when the caption would not
// fit in the room the panel may take.
void App::draw_caption(float x, float y, float cap_w, float caption_h, double now) {
  const float s = nav_.ui_scale();
  const ChapterInfo& info = story()[nav_.index()];
  const std::string caption(info.caption);
  float cs = s;
  // Smaller until it fits, down to half the asked scale or to scale 1 where that is smaller
  // (a projector's large text in a small window: the caption's last line was cut off).
  const float floor_cs = caption_floor(s);
  for (int i = 0; i < 24 && caption_needs(cap_w, cs) > caption_h && cs * 0.94f >= floor_cs; ++i) cs *= 0.94f;
  ImGui::SetNextWindowPos({x, y});
  ImGui::SetNextWindowSize({cap_w, caption_h});
  ImGui::Begin("##caption", nullptr, kEdgePanel | ImGuiWindowFlags_NoScrollbar);
  edge_panel_border();
  ImGui::SetWindowFontScale(cs / s);
  {
    ImGui::PushFont(small_font_);
    ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, {8.0f * cs, 1.0f * cs});
    if (ImGui::SmallButton(nav_.sidebar_open() ? "Hide list" : "Chapters")) nav_.apply(Action::ToggleSidebar, now);
    ImGui::PopStyleVar();
    ImGui::PopFont();
    ImGui::SameLine();
    draw_progress_dots(cs);
    const ImVec2 win = ImGui::GetWindowPos();
    const float row_bottom = ImGui::GetItemRectMax().y - win.y;  // the last dot's
    const float title_top = std::max(caption_title_y(cs), row_bottom + 4.0f * cs);
    ImGui::SetCursorScreenPos({win.x + ImGui::GetStyle().WindowPadding.x, win.y + title_top});
    caption_drawn_ = {win.y + row_bottom, win.y + title_top, 0.0f, win.y + ImGui::GetWindowHeight()};
    ImGui::PushFont(title_font_);
    ImGui::TextUnformatted(std::string(info.title).c_str());
    ImGui::PopFont();
    const bool button = button_on_screen();
    const bool waiting = button && current().waits_for_button_at() >= 0.0f;
    float button_w = button ? std::min(250.0f * cs, 0.4f * cap_w) : 0.0f;
    ImGui::PushTextWrapPos(ImGui::GetWindowWidth() - button_w - 24.0f * cs);
    ImGui::TextUnformatted(caption.c_str());
    caption_drawn_.text_bottom = ImGui::GetItemRectMax().y;
    ImGui::PopTextWrapPos();
    if (button) {
      ImGui::SetCursorScreenPos({win.x + ImGui::GetWindowWidth() - button_w - 16.0f * cs, win.y + 70.0f * cs});
      if (ImGui::Button(std::string(info.action).c_str(), {button_w, 40.0f * cs})) press_button();
      ImGui::SetCursorScreenPos({win.x + ImGui::GetWindowWidth() - button_w - 16.0f * cs, win.y + 116.0f * cs});
      ImGui::PushFont(small_font_);
      ImGui::TextDisabled(waiting ? "Enter presses it · → skips" : "Enter presses it · → reads on");
      ImGui::PopFont();
    }
  }
  ImGui::End();
}

// Every panel around the picture: the chapter list, the caption, the status bar and a toast;
// what is left is the scene's viewport.
void App::draw_panels(int fb_w, int fb_h, double now) {
  const float s = nav_.ui_scale();
  const float W = static_cast<float>(fb_w), H = static_cast<float>(fb_h);
  const float status_h = status_height(H, s);
  const float side_w = nav_.sidebar_open() ? side_width(W, s) : 0.0f;
  // Taller than its share where the words at their smallest still need it (large text in a
  // small window), up to 36% of the window.
  float caption_h = caption_room(H, s);
  caption_h = std::max(caption_h, std::min(std::ceil(caption_needs(W - side_w, caption_floor(s))), 0.36f * H));
  if (side_w > 0) draw_chapter_list(side_w, H - status_h);
  draw_caption(side_w, H - status_h - caption_h, W - side_w, caption_h, now);
  draw_status(W, H, status_h);
  draw_toast(side_w + (W - side_w) * 0.5f, now);
  scene_ = {static_cast<int>(side_w), 0, fb_w - static_cast<int>(side_w),
            fb_h - static_cast<int>(status_h + caption_h)};
}

}  // namespace onegpu::app
