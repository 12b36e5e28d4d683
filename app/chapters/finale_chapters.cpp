#include "app/scene/with_commas.h"
#include "app/chapters/finale_chapters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/chapters/box_chapters.h"
#include "app/chapters/field_chapter.h"
#include "app/run/field_plan.h"
#include "app/run/model_memory.h"
#include "app/run/story_run.h"
#include "render/text_rule.h"
#include "app/scene/chip.h"
#include "app/scene/full_size_bars.h"
#include "app/scene/gpu_box.h"
#include "app/scene/scale_block.h"
#include "render/palette.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;

Rect block_bounds(const FieldLayout& layout, int block, float pad) {
  const int per = FieldLayout::kBlockSide * FieldLayout::kBlockSide;
  Rect r = layout.chip_rect(block * per);
  for (int g = block * per; g < (block + 1) * per; ++g) {
    Rect c = layout.chip_rect(g);
    r.min = glm::min(r.min, c.min);
    r.max = glm::max(r.max, c.max);
  }
  r.min -= glm::vec2(pad * FieldLayout::kChip);
  r.max += glm::vec2(pad * FieldLayout::kChip);
  return r;
}

namespace {

// A bracket: a line from a to b with end ticks of length `tick` towards `inward`.
void bracket(Canvas& c, glm::vec2 a, glm::vec2 b, glm::vec2 inward, float tick, float w, glm::vec4 col) {
  c.line(a, b, w, col);
  c.line(a, a + inward * tick, w, col);
  c.line(b, b + inward * tick, w, col);
}

// One line of the model's writing, fit for the panel: no line breaks, at most `max_chars` bytes
// (cut at a UTF-8 boundary, with an ellipsis).
std::string one_line(std::string s, std::size_t max_chars) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
  if (s.size() <= max_chars) return s;
  std::size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "…";
}

}  // namespace

// ---- Scene 27: eight copies ----

float CopiesChapter::on_at(const FieldCell& cell) {
  if (cell.replica == 0) return -1.0f;  // the block we ran the step on is already on
  // Block by block, and inside a block from the bottom row up, so each copy visibly fills.
  return kCopy + (cell.replica - 1) * kCopyEvery + 0.012f * (cell.stage * FieldLayout::kBlockSide + cell.column) * 0.3f;
}

namespace {
// Where the data bracket and the three lines under the field sit, as depths below its bottom
// edge, for text drawn `ts(size)` big: the one place that spaces them, for the drawing and for
// the view that leaves them room. Lines are spaced by the size they are drawn at: the text rule
// grows small labels (a projector's scale, a small window), and fixed spacing let them collide.
struct LinesBelow {
  float bracket, first, second, third, bottom;
};
constexpr float kBig = 0.55f, kSmall = 0.4f;
// From one baseline to the next, for a line of size `above` over one of size `below`.
template <class TextSize>
float line_gap(TextSize ts, float above, float below, float at_least) {
  return std::max(at_least, render::line_pitch(ts(above), ts(below)));
}
template <class TextSize>
LinesBelow lines_below(TextSize ts) {
  auto under = [&](float above, float below, float at_least) { return line_gap(ts, above, below, at_least); };
  LinesBelow l;
  l.bracket = 0.45f;
  l.first = l.bracket + std::max(0.7f, 0.3f + ts(kSmall));
  l.second = l.first + under(kSmall, kBig * 1.2f, 0.85f);
  l.third = l.second + under(kBig * 1.2f, kSmall, 0.75f);
  l.bottom = l.third + 0.25f * ts(kSmall) + 0.1f;  // the last line's descent, and a margin
  return l;
}
}  // namespace

Camera CopiesChapter::field_view(glm::vec2 viewport) const {
  Rect b = layout_.bounds();
  // Room on the left for the stage bracket, above for the expert bracket's line, below for the
  // data bracket and its lines; the count has a band of pixels at the top (field_camera).
  b.min.x -= 3.4f;
  b.max.y += 1.2f;
  const float edge = b.min.y;
  // The lines are as big as the text rule draws them at this view's scale, which depends on the
  // room left for them: a few rounds settle it (each round's room is at least the last's).
  float room = 3.0f;
  Camera cam;
  for (int round = 0; round < 5; ++round) {
    b.min.y = edge - room;
    cam = fit_below_count(b, viewport, 0.03f, ui_scale_);
    const float min_em = min_label_px_ * cam.world_per_pixel();
    const float need = lines_below([&](float size) { return std::max(size, min_em); }).bottom;
    if (need <= room + 0.01f) break;
    room = need;
  }
  return cam;
}

Camera CopiesChapter::camera(glm::vec2 viewport, float t) const {
  // Start where chapter 26 leaves the camera: the 64-GPU block with room for its charts.
  Camera block = Camera::fit(ScaleBlock().view(), viewport, 0.02f);
  return dive(block, field_view(viewport), phase(t, kPull, kPullFor, Ease::InOutCubic));
}

void CopiesChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  Canvas& c = f.world;
  const FieldPlan& plan = field_plan();
  int lit = 0;
  c.set_layer(0);
  for (const FieldCell& cell : layout_.cells()) {
    ChipLook look;
    const float at = on_at(cell);
    look.power = at < 0.0f ? 1.0f : phase(t, at, 0.3f, Ease::OutCubic);
    look.flash = at < 0.0f ? 0.0f : pulse(t, at, 0.6f) * 0.8f;
    look.fade = 1.0f;
    draw_chip(c, layout_.chip_rect(cell.gpu), look, wpp);
    if (look.power >= 0.5f) ++lit;
  }

  // The count, top right of the view.
  draw_gpu_count(f, cam, layout_.bounds(), lit, "GPUs", 1.0f);

  // Brackets, from the plan's own numbers.
  const float a = phase(t, kLabels, 0.7f, Ease::Smooth);
  if (a <= 0.0f) return;
  c.set_layer(2);
  const Rect field = layout_.bounds();
  const float w = std::max(1.5f * wpp, 0.03f), big = kBig, small = kSmall;
  const glm::vec4 ink = with_alpha(palette::text, a), dim = with_alpha(palette::text_dim, a);
  char line[160];

  // Left: the eight stages of the top-left block (block 0, where GPU 1 is).
  Rect b0 = block_bounds(layout_, 0);
  float x = field.min.x - 0.35f;
  bracket(c, {x, b0.min.y}, {x, b0.max.y}, {1.0f, 0.0f}, 0.2f, w, dim);
  std::snprintf(line, sizeof line, "%d stages", plan.pp());
  c.text(line, {x - 0.25f, b0.center().y + 0.2f}, big, ink, Align::Right);
  const auto drawn = [&](float size) { return c.text_size(size); };
  const float pipeline_gap = line_gap(drawn, big, small, 0.65f);
  c.text("pipeline", {x - 0.25f, b0.center().y + 0.2f - pipeline_gap}, small, dim, Align::Right);

  // Top: one row of a block is one machine, its GPUs splitting the experts.
  float y = b0.max.y + 0.3f;
  bracket(c, {b0.min.x, y}, {b0.max.x, y}, {0.0f, -1.0f}, 0.2f, w, dim);
  std::snprintf(line, sizeof line, "experts split %d ways across a machine's row", plan.ep());
  c.text(line, {b0.center().x, y + 0.25f}, small, ink, Align::Center);

  // Bottom: every stage row, over all blocks, is the data-parallel copies of that stage.
  const LinesBelow below = lines_below(drawn);
  y = field.min.y - below.bracket;
  bracket(c, {field.min.x, y}, {field.max.x, y}, {0.0f, 1.0f}, 0.2f, w, dim);
  std::snprintf(line, sizeof line, "data parallel: %d copies of every stage (%d blocks × %d GPUs), each reading its own microbatch",
                plan.dp(), plan.dp() / plan.ep(), plan.ep());
  c.text(line, {field.center().x, field.min.y - below.first}, small, ink, Align::Center);
  std::snprintf(line, sizeof line, "%d stages × %d copies = %d GPUs", plan.pp(), plan.dp(), plan.world());
  c.text(line, {field.center().x, field.min.y - below.second}, big * 1.2f, ink, Align::Center);

  // Stage 1 everywhere: 64 GPUs that each take a microbatch at the same moment.
  const float hl = phase(t, kLabels + 0.9f, 0.6f, Ease::Smooth);
  for (const FieldCell& cell : layout_.cells())
    if (cell.stage == 0) {
      Rect r = layout_.chip_rect(cell.gpu);
      c.box(Rect::centered(r.center(), r.size() + glm::vec2(0.14f)), {0, 0, 0, 0}, 0.08f,
            with_alpha(palette::forward, 0.9f * hl), std::max(1.5f * wpp, 0.035f));
    }
  std::snprintf(line, sizeof line, "outlined: stage 1's %d GPUs, each starting a microbatch of its own at the same moment",
                plan.dp());
  c.text(line, {field.center().x, field.min.y - below.third}, small, with_alpha(palette::forward, hl), Align::Center);
  c.set_layer(0);
}

// ---- Scene 28: many more steps ----

int AgainChapter::shown(float t, int available) {
  int by_time = t < kFirstLine ? 0 : 1 + static_cast<int>((t - kFirstLine) / kLineEvery);
  return std::clamp(std::min(by_time, available), 0, 5);
}

Rect AgainChapter::writing_area() const {
  Rect field = layout_.bounds();
  const float h = field.size().y * 0.62f;
  return {{field.min.x, field.min.y - 0.5f - h}, {field.max.x, field.min.y - 0.5f}};
}

Camera AgainChapter::camera(glm::vec2 viewport, float) const {
  Rect b = layout_.bounds();
  b.min.y = writing_area().min.y;
  b.max.y += 1.6f;
  return Camera::fit(b, viewport, 0.03f);
}

void AgainChapter::on_action() { StoryRun::get().start_training(1000); }
// Shown only while there is a long run left to start (chapter 10 may have trained it already).
bool AgainChapter::button_offered() const { return !StoryRun::get().training_started(); }

void AgainChapter::prepare(float) {
  StoryRun::get().start_training(1000);
  StoryRun::get().wait_for_training();
}

std::string AgainChapter::activity() const {
  StoryRun& run = StoryRun::get();
  if (run.training_done() || run.trained_steps() == 0) return {};
  char b[96];
  std::snprintf(b, sizeof b, "training: step %s of %s", with_commas(run.trained_steps()).c_str(),
                with_commas(run.training_target()).c_str());
  return b;
}

void AgainChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  Canvas& c = f.world;
  StoryRun& run = StoryRun::get();
  const std::vector<Prediction> ms = run.milestones();
  const int n = shown(t, static_cast<int>(ms.size()));

  // The field: every chip on, re-toned a shade at each tenfold shown, with the rows of one
  // step sweeping through every block: forward up the stages, then backward down.
  const float tone = n <= 1 ? 0.0f : 0.1f * static_cast<float>(n - 1);
  const float flash = n >= 1 ? pulse(t, kFirstLine + (n - 1) * kLineEvery, 0.7f) : 0.0f;
  const float sweeping = t >= kSweep && t < duration() - 0.6f ? 1.0f : 0.0f;
  const float cyc = std::fmod(std::max(0.0f, t - kSweep), kPeriod) / kPeriod;  // 0..1 through a step
  const int stages = FieldLayout::kBlockSide;
  for (const FieldCell& cell : layout_.cells()) {
    ChipLook look;
    look.power = 1.0f;
    Rect r = layout_.chip_rect(cell.gpu);
    c.set_layer(0);
    draw_chip(c, r, look, wpp);
    c.set_layer(1);
    glm::vec4 wash = with_alpha(palette::weights, std::min(0.6f, tone + 0.35f * flash));
    if (wash.a > 0.0f) c.box(r, wash, 0.06f);
    if (sweeping > 0.0f) {
      // Forward fills the first half of the cycle bottom-up, backward the second half top-down.
      float up = cyc * 2.0f * stages, down = (cyc - 0.5f) * 2.0f * stages;
      float fwd = cyc < 0.5f ? std::clamp(1.0f - std::fabs(up - (cell.stage + 0.5f)), 0.0f, 1.0f) : 0.0f;
      float bwd = cyc >= 0.5f ? std::clamp(1.0f - std::fabs(down - (stages - 0.5f - cell.stage)), 0.0f, 1.0f) : 0.0f;
      if (fwd > 0.0f) c.box(r, with_alpha(palette::forward, 0.75f * fwd), 0.06f);
      if (bwd > 0.0f) c.box(r, with_alpha(palette::backward, 0.75f * bwd), 0.06f);
    }
  }

  // Step count, top right: the real run's step at the last milestone shown.
  const float s = 15.0f * f.ui_scale;
  glm::vec2 at{f.viewport.x - 2.0f * s, f.viewport.y - 3.2f * s};
  const int step = n >= 1 ? ms[n - 1].step : 0;
  const std::string count = "step " + with_commas(step), label = "of the story model, trained here";
  const float under = std::max(1.3f * s, 0.3f * f.screen.text_size(2.2f * s) + f.screen.text_size(s));
  // Where the field reaches under the count (a small window, large text): a badge, as chapter
  // 1's count has, so the words are not read across the chips.
  {
    const float w = std::max(f.screen.text_width(count, 2.2f * s), f.screen.text_width(label, s)), pad = 0.5f * s;
    const Rect box{{at.x - w - pad, at.y - under - 0.45f * f.screen.text_size(s) - pad}, {at.x + pad, at.y + 1.9f * s + pad}};
    const Rect words{box.min + glm::vec2(pad), box.max - glm::vec2(pad)};  // the words themselves, not the badge's margin
    if (gpu_count_covers_field(cam, layout_.bounds(), f.viewport, words))
      f.screen.box(box, palette::background, 0.4f * s, palette::chip_edge, std::max(1.0f, 0.08f * s));
  }
  f.screen.text(count, at, 2.2f * s, palette::text, Align::Right);
  f.screen.text(label, at - glm::vec2(0.0f, under), s, palette::text_dim, Align::Right);

  // The writing, a line per tenfold.
  c.set_layer(2);
  Rect wa = writing_area();
  const float big = 0.5f, small = 0.4f;
  // The heading with the legend for the sweeping rows at its right (aligned with the field),
  // and the note under it, each wrapped to its room at whatever size the rule gives.
  const float legend_size = c.text_size(small), swatch = 0.4f, gap = 0.6f * legend_size;
  const float w_back = c.text_width("backward pass", small), w_fwd = c.text_width("forward pass", small);
  const float x_back = wa.max.x - w_back, x_fwd = x_back - 2.0f * gap - swatch - w_fwd - gap;
  const float legend_left = x_fwd - gap - swatch;
  const float top = wa.max.y - 0.1f, legend_y = top - c.font().ascent() * c.text_size(big);
  c.box(Rect::centered({x_fwd - gap - swatch * 0.5f, legend_y + 0.15f}, {swatch, swatch}), palette::forward, 0.06f);
  c.text("forward pass", {x_fwd, legend_y}, small, palette::text_dim, Align::Left);
  c.box(Rect::centered({x_back - gap - swatch * 0.5f, legend_y + 0.15f}, {swatch, swatch}), palette::backward, 0.06f);
  c.text("backward pass", {x_back, legend_y}, small, palette::text_dim, Align::Left);
  float below = c.paragraph("What the story model writes after “Once upon a”, at every tenfold of steps",
                            {wa.min.x, top}, legend_left - gap - wa.min.x, big, palette::text);
  // The note, unless it would leave the five rows less than a line each (a small window).
  const char* note =
      "Real samples, same seed each time, from the small model trained on this computer. The 512 GPUs are a "
      "picture of the full-size run, which goes on like this for hundreds of thousands of steps.";
  const float line_h = 1.25f * c.text_size(big), with_note = below - 0.15f - c.paragraph_height(note, wa.size().x, small);
  if ((std::min(wa.max.y - 2.1f, with_note - 0.15f) - wa.min.y) / 5.0f >= line_h)
    below = c.paragraph(note, {wa.min.x, below - 0.15f}, wa.size().x, small, palette::text_dim);
  // The rows share what is left under the note.
  const float rows_top = std::min(wa.max.y - 2.1f, below - 0.3f);
  const float row = (rows_top - wa.min.y) / 5.0f;
  if (ms.size() <= 1 && !run.training_done()) {
    c.text(run.trained_steps() > 0 ? "training…" : "Press “Keep training” to train the story model to step 1,000.",
           {wa.min.x, rows_top - row}, big, palette::forward, Align::Left);
  }
  for (int k = 0; k < n && k < static_cast<int>(ms.size()); ++k) {
    const float a = phase(t, kFirstLine + k * kLineEvery, 0.5f, Ease::Smooth);
    const float y = rows_top - (k + 0.6f) * row;
    c.text("step " + with_commas(ms[k].step), {wa.min.x + 3.0f, y}, small, with_alpha(palette::text_dim, a),
           Align::Right);
    c.text("Once upon a" + one_line(ms[k].sample, 90), {wa.min.x + 3.4f, y}, big,
           with_alpha(k == n - 1 ? palette::text : palette::text_dim, a), Align::Left);
  }
  c.set_layer(0);
}

// ---- Scene 29: GPU 1, one of 512 ----

namespace {
Camera gpu1_view(const FieldLayout& layout, glm::vec2 viewport) {
  Rect chip = layout.chip_rect(0);
  const float s = chip.size().x;
  // The opened box with room below for its share and above for the experts' heading.
  return Camera::fit({{chip.min.x - 0.28f * s, chip.min.y - 0.42f * s}, {chip.max.x + 0.28f * s, chip.max.y + 0.16f * s}},
                     viewport, 0.02f);
}
}  // namespace

Rect OneOf512Chapter::full_size_area() const {
  Rect chip = layout_.chip_rect(0);
  const float s = chip.size().x;
  return {{chip.max.x + 0.34f * s, chip.min.y - 0.40f * s}, {chip.max.x + 1.94f * s, chip.max.y + 0.14f * s}};
}

Camera OneOf512Chapter::camera(glm::vec2 viewport, float t) const {
  Camera field = field_camera(layout_, viewport, ui_scale_);
  Camera gpu1 = dive(field, gpu1_view(layout_, viewport), phase(t, kDive, kDiveFor, Ease::InOutCubic));
  // Then room on the right for the full-size share.
  Rect chip = layout_.chip_rect(0), full = full_size_area();
  const float s = chip.size().x;
  Camera wide = Camera::fit({{chip.min.x - 0.42f * s, full.min.y - 0.02f * s}, {full.max.x + 0.04f * s, full.max.y + 0.02f * s}},
                            viewport, 0.02f);
  return dive(gpu1, wide, phase(t, kFull, 0.9f, Ease::InOutCubic));
}

Rect OneOf512Chapter::expert_rect(int layer, int e) const {
  BoxParts b = box_parts(layout_.chip_rect(0));
  Rect slab = b.slab(layer, 4);
  float x0 = slab.min.x + 0.4f * slab.size().x, w = (slab.max.x - 0.01f * b.s - x0) / 8.0f;
  float y0 = slab.min.y + 0.2f * slab.size().y, y1 = slab.max.y - 0.2f * slab.size().y;
  return {{x0 + e * w + 0.1f * w, y0}, {x0 + (e + 1) * w - 0.1f * w, y1}};
}

const trainer::ShareFigures& OneOf512Chapter::full_size_figures() const {
  static const trainer::ShareFigures figures =
      trainer::share_figures(trainer::full_size_model(), trainer::full_size_split(),
                             field_plan().share_of_cell(layout_.cell(0)).rank, trainer::full_size_storage(), trainer::h100());
  return figures;
}

std::string OneOf512Chapter::full_size_share() const {
  const GpuShare share = field_plan().share_of_cell(layout_.cell(0));
  char text[200];
  std::snprintf(text, sizeof text, "GPU 1's share: %.1f billion weights (layers %d–%d, experts %d–%d%s)",
                full_size_figures().zero[0].params / 1e9, share.first_layer + 1, share.end_layer, share.first_expert + 1,
                share.end_expert, share.stage == 0 ? ", the embedding" : "");
  return text;
}

Rect OneOf512Chapter::full_size_room(const Canvas& c, glm::vec2 viewport) const {
  const Rect area = full_size_area();
  if (FullSizeBars::layout(c, area, area, full_size_figures(), full_size_share()).detail == FullSizeBars::Detail::Full)
    return area;
  // At most the height the chapter's last view shows (not the moving camera's: the panel holds
  // still); at least what the most the panel can tell there takes, grown evenly up and down
  // while the view has room on both sides.
  const Rect v = camera(viewport, duration()).visible();
  const float margin = 0.02f * layout_.chip_rect(0).size().x;
  const float up_room = std::max(0.0f, v.max.y - margin - area.max.y), down_room = std::max(0.0f, area.min.y - v.min.y - margin);
  const Rect most{{area.min.x, area.min.y - down_room}, {area.max.x, area.max.y + up_room}};
  const FullSizeBars::Layout l = FullSizeBars::layout(c, area, most, full_size_figures(), full_size_share());
  const float need = most.max.y - l.bottom + 0.015f * area.size().y;
  const float extra = std::clamp(need - area.size().y, 0.0f, up_room + down_room);
  float up = std::min(0.5f * extra, up_room);
  const float down = std::min(extra - up, down_room);
  up = extra - down;
  return {{area.min.x, area.min.y - down}, {area.max.x, area.max.y + up}};
}

FullSizeBars::Layout OneOf512Chapter::full_size_layout(const Canvas& c, glm::vec2 viewport) const {
  return FullSizeBars::layout(c, full_size_area(), full_size_room(c, viewport), full_size_figures(), full_size_share());
}

void OneOf512Chapter::prepare(float) { gpu_one_share_bytes(); }
std::string OneOf512Chapter::activity() const { return gpu_one_share_bytes_activity(); }

void OneOf512Chapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  Canvas& c = f.world;
  const float open = phase(t, kOpen, 0.8f, Ease::InOutCubic);
  const float dive_p = phase(t, kDive, kDiveFor, Ease::InOutCubic);

  if (open <= 0.0f) {
    FieldDraw d;
    d.others_fade = 1.0f - 0.8f * dive_p;
    d.ring = 1.0f - phase(t, kDive + 1.2f, 0.6f);
    draw_field(c, layout_, d, wpp);
  } else {
    draw_field_behind(c, layout_, 0.2f, wpp);
  }

  const FieldCell& cell = layout_.cell(0);
  const GpuShare share = field_plan().share_of_cell(cell);
  const ShareBytes* bytes_ready = gpu_one_share_bytes_ready();  // a job: empty walls until it is made
  const ShareBytes bytes = bytes_ready ? *bytes_ready : ShareBytes{};
  if (!bytes_ready && open > 0.0f) draw_measuring(c, box_parts(layout_.chip_rect(0)).chip, gpu_one_share_bytes_activity());
  const double cap = static_cast<double>(toy_capacity_bytes());

  BoxParts b = box_parts(layout_.chip_rect(0));
  const float s = b.s, line = std::max(wpp, 0.003f * s);
  if (open > 0.0f) {
    c.set_layer(1);
    BoxLook look;
    look.lid = 1.0f - open;
    look.layers = share.end_layer - share.first_layer;
    look.drawn_layers = 4;
    look.split = true;
    const float fill = phase(t, kOpen + 0.5f, 1.0f, Ease::InOutCubic);
    look.fill_weights = fill * static_cast<float>((bytes.weights + bytes.gradients) / cap);
    look.fill_optimizer = fill * static_cast<float>(bytes.optimizer / cap);
    look.capacity_label = format_bytes(toy_capacity_bytes()) + " · toy GPU";
    look.label_room = 0.4f;  // the experts take the rest of each slab
    draw_box(c, b, look, wpp);
    c.set_layer(2);
    const float ex = phase(t, kExperts, 0.6f, Ease::Smooth);
    // The experts' numbers over the top layer, where each fits over its square at the rule's size.
    const Rect e0 = expert_rect(0, 0);
    const float pitch = expert_rect(0, 1).center().x - e0.center().x;
    const bool numbers = c.text_width(std::to_string(share.end_expert), 0.026f * s) + 0.4f * c.text_size(0.026f * s) < pitch;
    for (int l = 0; l < look.layers; ++l)
      for (int e = 0; e < share.end_expert - share.first_expert; ++e) {
        Rect r = expert_rect(l, e);
        float a = ex * phase(t, kExperts + 0.05f * (l * 8 + e), 0.3f);
        c.box(r, with_alpha(palette::weights, 0.85f * a), 0.002f * s, with_alpha(palette::weights, a), line);
        if (l == look.layers - 1 && numbers)
          c.text(std::to_string(share.first_expert + e + 1), {r.center().x, r.max.y + 0.05f * s}, 0.026f * s,
                 with_alpha(palette::text_dim, a), Align::Center);
      }
  }

  // What the plan gives GPU 1, and what it costs.
  const float la = phase(t, kLabels, 0.6f, Ease::Smooth);
  if (la > 0.0f) {
    c.set_layer(2);
    const FieldPlan& plan = field_plan();
    char text[200];
    std::snprintf(text, sizeof text, "experts %d–%d of %d, in each of its layers", share.first_expert + 1,
                  share.end_expert, plan.experts());
    c.text(text, {b.chip.center().x, b.chip.max.y + 0.07f * s}, 0.042f * s, with_alpha(palette::text, la),
           Align::Center);
    // Under the chip, centred on it and wrapped to the room beside it (the view, and once the
    // full-size panel comes, the gap before it): each line at its place, or lower when the one
    // above is drawn bigger than that leaves room for.
    const Rect vis = cam.visible();
    const float cx = b.chip.center().x, margin = 0.03f * s;
    const float right = t >= kFull ? full_size_area().min.x : vis.max.x;
    const float half = std::max(0.5f * s, std::min(cx - vis.min.x, right - cx) - margin);
    float last = b.chip.min.y, last_size = 0.0f;
    auto under = [&](const char* line, float depth, float size, glm::vec4 col) {
      const float drawn = c.text_size(size);
      const float base = std::min(b.chip.min.y - depth * s, last - render::line_pitch(c.text_size(last_size), drawn));
      const float top = base + c.font().ascent() * drawn, h = c.paragraph_height(line, 2.0f * half, size);
      c.text_in(line, {{cx - half, top - h}, {cx + half, top}}, size, col, Align::Center);
      last = top - h + c.font().descent() * drawn;
      last_size = size;
    };
    std::snprintf(text, sizeof text, "GPU 1 of %d · stage %d of %d · layers %d–%d of %d", plan.world(), share.stage + 1,
                  plan.pp(), share.first_layer + 1, share.end_layer, plan.layers());
    under(text, 0.09f, 0.05f * s, with_alpha(palette::text, la));
    std::snprintf(text, sizeof text,
                  "%s of weights, gradients and optimizer state (%s weights), measured",
                  format_bytes(bytes.total()).c_str(), with_commas(bytes.params).c_str());
    under(text, 0.16f, 0.033f * s, with_alpha(palette::text_dim, la));
    const float end = phase(t, kLabels + 0.9f, 0.6f, Ease::Smooth);
    std::snprintf(text, sizeof text, "The other %d GPUs each do the same with a share of their own.", plan.world() - 1);
    under(text, 0.25f, 0.04f * s, with_alpha(palette::forward, end));
  }

  // The same share of the full-size model: modelled, since no machine here could hold it.
  const float full = phase(t, kFull + 0.6f, 0.7f, Ease::Smooth);
  if (full > 0.0f) {
    c.set_layer(2);
    FullSizeBars::draw(c, full_size_area(), full_size_room(c, f.viewport), full_size_figures(), full_size_share(), full,
                       wpp);
  }
  c.set_layer(0);
}

}  // namespace onegpu::app
