// The Lab's ranks view: the run's GPUs as stages (rows, stage 1 at the bottom: the forward
// pass climbs) by data-parallel copies (columns), expert groups bracketed under each row.
// Each chip shows its rank's measured memory as a wall (lavender weights and gradients, sand
// optimizer state, amber activations) and lights amber while it runs a forward op, pink for
// backward, at the playhead; beads travel for every hand-over in flight, a teal ring marks an
// all-to-all, a lavender bar joins the copies while their gradients are all-reduced. Past 16
// columns chips lose their words, past 40 px they become field cells.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "app/lab/lab.h"
#include "app/scene/chip.h"
#include "render/palette.h"

namespace onegpu::app {

namespace {

using trainer::EventKind;
using namespace render::palette;
using render::Align;
using render::Rect;

const glm::vec4 kAllToAll = render::rgb(0x4fc1b0);

std::string mb(double bytes) {
  char s[32];
  if (bytes >= 1e9) std::snprintf(s, sizeof s, "%.1f GB", bytes / 1e9);
  else std::snprintf(s, sizeof s, "%.1f MB", bytes / 1e6);
  return s;
}

}  // namespace

void Lab::ranks(render::Canvas& c, glm::vec2 vp, const RunState& rs, float s) {
  drawn_.labels.clear();
  drawn_.chips.clear();
  drawn_.readout_columns.clear();
  drawn_.ranks_viewport = vp;
  // Every word goes through here, so a test can check none overlaps another or leaves the view.
  auto say = [&](const std::string& str, glm::vec2 at, float size, glm::vec4 colour, Align a) {
    const float w = c.text(str, at, size, colour, a);
    const float x = a == Align::Left ? at.x : a == Align::Center ? at.x - w * 0.5f : at.x - w;
    const float drawn = c.text_size(size);  // the canvas's text rule may have raised it
    drawn_.labels.push_back({{x, at.y - drawn * 0.22f}, {x + w, at.y + drawn * 0.75f}});
  };
  const LiveRun* run = rs.run();
  // One size for the view's words, never under the canvas's text rule (render/text_rule.h).
  const float label = std::max({12.0f * s, std::min(vp.x, vp.y) * 0.022f, c.min_text()});
  if (!run) {
    say(runner_.status().building ? "Building the run…" : "No run yet: choose a configuration and press Apply.",
        {vp.x * 0.5f, vp.y * 0.5f}, label * 1.2f, text_dim, Align::Center);
    return;
  }
  const RunStep* rec = shown(rs);
  const trainer::Plan& plan = run->plan_of(rec ? rec->step : 0);
  const trainer::Layout& L = plan.layout;
  const int pp = plan.config.pp, dp = plan.config.dp, ep = plan.config.ep, world = run->world();
  const double P = playhead(rs);
  drawn_.playhead = P;
  drawn_.step = rec ? rec->step : -1;
  drawn_.rank_op.assign((std::size_t)world, -1);

  // Geometry: a title line, a label column for the stages, then a grid of cells.
  // The footer (the walls' scale and colours) takes one line, or two where one would be cut.
  const std::string walls_scale = "walls: measured bytes per GPU, full height ", walls_key =
      "lavender weights + gradients · sand optimizer · amber activations";
  const bool recorded = !run->recorded_from.empty();
  const bool footer_two = !recorded && c.text_width(walls_scale + "000.0 MB   ·   " + walls_key, label * 0.8f) > vp.x - label * 1.6f;
  const float top = label * 2.2f, left = label * 7.0f, bottom = label * (footer_two ? 2.65f : 1.6f), right = label;
  float gw = vp.x - left - right;
  const float gh = vp.y - top - bottom;
  // One rank stepped layer by layer: the chip takes the left, what each piece produced the rest.
  Rect read{};
  if (run->by_layer) {
    const float chip_w = std::min(gw * 0.26f, gh);
    read = {{left + chip_w + label * 2.0f, bottom}, {vp.x - right, vp.y - top}};
    gw = chip_w;
  }
  const float cell = std::max(2.0f, std::min(gw / (float)dp, gh / (float)pp));
  const float gx = left + (gw - cell * (float)dp) * 0.5f, gy = bottom + (gh - cell * (float)pp) * 0.5f;
  const bool cards = cell >= 90.0f * s;
  const bool chips = cell >= 26.0f * s;
  auto cell_rect = [&](int rank) {
    const trainer::RankCoord rc = L.coord(rank);
    const glm::vec2 a{gx + cell * (float)rc.dp, gy + cell * (float)rc.stage};
    const float m = cell * (cards ? 0.08f : chips ? 0.1f : 0.08f);
    return Rect{a + glm::vec2(m), a + glm::vec2(cell - m)};
  };

  // Title: what the view is, and whose numbers.
  char title[160];
  std::snprintf(title, sizeof title, "%d GPU%s: %d stage%s × %d cop%s%s", world, world > 1 ? "s" : "", pp,
                pp > 1 ? "s" : "", dp, dp > 1 ? "ies" : "y",
                ep > 1 ? (", experts split over groups of " + std::to_string(ep)).c_str() : "");
  c.set_layer(3);
  {
    const float want = label * 1.1f, w = c.text_width(title, want), room = vp.x - label * 1.6f;
    say(title, {label * 0.8f, vp.y - label * 1.4f}, w > room ? want * room / w : want, text, Align::Left);
  }

  // Memory: the last finished step's bytes per rank; activations follow the playhead.
  const std::vector<RankMemory>& mem = rs.resident();
  std::vector<std::int64_t> act((std::size_t)world, 0);
  if (rec && !index_.by_op.empty()) {
    for (const auto& [id, bytes] : rec->activations) {
      if (id >= index_.by_op.size() || index_.by_op[id] < 0) continue;
      const OpSpan& o = rec->ops[(std::size_t)index_.by_op[id]];
      const double end = wall_clock_ ? (double)(o.wend - rec->wall_begin) * 1e-9 : o.vend;
      if (end <= P + 1e-12) act[(std::size_t)o.rank] = bytes;
    }
  }
  double most = 1;
  for (int r = 0; r < world; ++r) {
    double held = (double)act[(std::size_t)r];
    if ((std::size_t)r < mem.size()) {
      const RankMemory& m = mem[(std::size_t)r];
      held = (double)(m.current[0] + m.current[1] + m.current[2]) + std::max<double>((double)m.peak[3], held);
    }
    most = std::max(most, held);
  }

  // What each rank does at the playhead.
  auto time_of = [&](const OpSpan& o, bool end) {
    if (wall_clock_) return (double)((end ? o.wend : o.wbegin) - rec->wall_begin) * 1e-9;
    return end ? o.vend : o.vbegin;
  };
  const double step_end = wall_clock_ ? index_.end_wall : index_.end_virtual;
  for (int r = 0; r < world; ++r) {
    const Rect box = cell_rect(r);
    const OpSpan* now = nullptr;
    bool started = false, more = !rec || !rec->complete;
    if (rec && (std::size_t)r < index_.by_rank.size()) {
      now = op_at(*rec, index_.by_rank[(std::size_t)r], P, wall_clock_);
      for (std::uint32_t i : index_.by_rank[(std::size_t)r]) {
        const OpSpan& o = rec->ops[i];
        if (time_of(o, false) <= P) started = true;
        if (time_of(o, true) > P) more = true;
      }
    }
    drawn_.rank_op[(std::size_t)r] = now ? (std::int32_t)now->id : -1;
    glm::vec4 die = chip_body;
    float glow = 0;
    if (now) {
      switch (now->kind) {
        case EventKind::Forward: die = forward; glow = 1; break;
        case EventKind::Backward: die = backward; glow = 1; break;
        case EventKind::WeightGradient: die = render::mix(backward, text, 0.45f); glow = 1; break;
        case EventKind::Update: die = optimizer; glow = 0.6f; break;
        default: break;
      }
    }
    const bool idle_wait = started && more && !glow && P < step_end;
    c.set_layer(0);
    if (!chips) {
      // Field cell.
      glm::vec4 fill = glow ? die : idle_wait ? waiting_bg : lit_dim;
      c.box(box, fill, std::min(3.0f, cell * 0.15f));
      continue;
    }
    drawn_.chips.push_back(box);
    if (glow > 0) c.glow(box, render::with_alpha(die, 0.35f * glow), cell * 0.06f, cell * 0.12f);
    if (idle_wait)
      c.hatched(box, waiting_bg, render::with_alpha(waiting, 0.6f), std::max(4.0f, cell * 0.06f), 1.0f, cell * 0.08f,
                chip_edge, 1.0f);
    else
      c.box(box, chip_body, cell * 0.08f, chip_edge, 1.0f);
    // The memory wall on the chip's left: weights+gradients, optimizer, activations (bottom up).
    const glm::vec2 sz = box.size();
    if (mem.empty()) {  // a recorded run has no memory: no wall rather than an empty one
      const Rect d{{box.min.x + sz.x * 0.1f, box.min.y + sz.y * 0.2f}, {box.max.x - sz.x * 0.1f, box.max.y - sz.y * (cards ? 0.34f : 0.2f)}};
      c.set_layer(1);
      c.box(d, glow ? die : render::mix(chip_body, lit_dim, 0.6f), sz.x * 0.04f);
      if (cards) {
        c.set_layer(3);
        say("GPU " + std::to_string(r + 1), {box.min.x + sz.x * 0.08f, box.max.y - sz.y * 0.14f}, label, text, Align::Left);
      }
      continue;
    }
    const Rect wall{{box.min.x + sz.x * 0.08f, box.min.y + sz.y * 0.1f}, {box.min.x + sz.x * 0.26f, box.max.y - sz.y * (cards ? 0.24f : 0.1f)}};
    c.set_layer(1);
    c.box(wall, memory_fill, 2.0f, memory, 1.0f);
    float y = wall.min.y;
    const float wh = wall.size().y;
    auto band = [&](double bytes, glm::vec4 colour) {
      const float h = (float)(bytes / most) * wh;
      if (h <= 0) return;
      c.box({{wall.min.x + 1, y}, {wall.max.x - 1, std::min(wall.max.y, y + h)}}, colour, 1.0f);
      y += h;
    };
    if ((std::size_t)r < mem.size()) {
      const RankMemory& m = mem[(std::size_t)r];
      band((double)(m.current[0] + m.current[1]), weights);
      band((double)m.current[2], optimizer);
    }
    band((double)act[(std::size_t)r], render::with_alpha(forward, 0.75f));
    // The compute die, lit by the op at the playhead.
    const Rect d{{box.min.x + sz.x * 0.36f, box.min.y + sz.y * 0.2f}, {box.max.x - sz.x * 0.1f, box.max.y - sz.y * (cards ? 0.34f : 0.2f)}};
    c.box(d, glow ? die : render::mix(chip_body, lit_dim, 0.6f), sz.x * 0.04f);
    if (now && (now->kind == EventKind::AllToAll))
      c.ring(box.center(), sz.x * 0.5f, 2.0f * s, kAllToAll);
    if (cards) {
      c.set_layer(3);
      say("GPU " + std::to_string(r + 1), {box.min.x + sz.x * 0.08f, box.max.y - sz.y * 0.14f}, label, text, Align::Left);
      if ((std::size_t)r < mem.size()) {
        const RankMemory& m = mem[(std::size_t)r];
        const std::string bytes = mb((double)(m.current[0] + m.current[1] + m.current[2] + act[(std::size_t)r]));
        // Beside the name only where both fit the chip's width at the size drawn.
        const float room = sz.x * 0.84f - c.text_width("GPU " + std::to_string(r + 1), label) - label * 0.5f;
        if (c.text_width(bytes, label * 0.85f) <= room)
          say(bytes, {box.max.x - sz.x * 0.08f, box.max.y - sz.y * 0.14f}, label * 0.85f, text_dim, Align::Right);
      }
      if (ep > 1) {
        // The chip's experts, under its die and right of its wall: whole ("experts 1–8"), as
        // the range alone where that does not fit, or left out (the group's bracket still shows).
        const int e0 = L.first_expert(r);
        const std::string range = std::to_string(e0 + 1) + "\u2013" + std::to_string(e0 + L.expert_count());
        const float size = label * 0.8f, drawn = c.text_size(size);
        const float xa = wall.max.x + sz.x * 0.04f, xb = box.max.x - sz.x * 0.05f;
        const float base = box.min.y + sz.y * 0.06f;
        // One form for every chip: the one the widest range (the last group's) fits in.
        const int n = L.expert_count();
        const std::string last = std::to_string((ep - 1) * n + 1) + "\u2013" + std::to_string(ep * n);
        if (base + drawn * 0.75f <= d.min.y - 1.0f && base - drawn * 0.22f >= box.min.y + 1.0f) {
          if (c.text_width("experts " + last, size) <= xb - xa)
            say("experts " + range, {(xa + xb) * 0.5f, base}, size, text_dim, Align::Center);
          else if (c.text_width(last, size) <= xb - xa)
            say(range, {(xa + xb) * 0.5f, base}, size, text_dim, Align::Center);
        }
      }
    } else if (cell >= 44.0f * s && dp <= 16) {
      c.set_layer(3);
      say(std::to_string(r + 1), {box.center().x + sz.x * 0.13f, box.min.y + sz.y * 0.3f}, label * 0.85f, text, Align::Center);
    }
  }

  // Stage labels and expert-group brackets.
  c.set_layer(3);
  // Where rows are lower than a line of text, every k-th stage is named (stage 1 always).
  const int every = std::max(1, (int)std::ceil(c.text_size(label) * 1.1f / cell));
  // Each stage's layers as ranges: "layer 4" alone, "layers 1–2", or an interleaved stage's
  // chunks apart ("layers 1, 3": one range over them named layers it does not hold).
  std::vector<std::string> layer_names((std::size_t)pp);
  for (int st = 0; st < pp; ++st) {
    std::vector<std::pair<int, int>> held;  // [first, end) by chunk, merged where adjacent
    for (int ch : L.chunks_of_stage(st)) {
      if (!held.empty() && held.back().second == L.first_layer(ch))
        held.back().second = L.end_layer(ch);
      else
        held.push_back({L.first_layer(ch), L.end_layer(ch)});
    }
    std::string names;
    int count = 0;
    for (const auto& [a, b] : held) {
      names += (names.empty() ? "" : ", ") + std::to_string(a + 1) + (b > a + 1 ? "\u2013" + std::to_string(b) : "");
      count += b - a;
    }
    if (count > 0) layer_names[(std::size_t)st] = (count == 1 ? "layer " : "layers ") + names;
  }
  const bool layers_named = label * 2.4f < cell;
  // The names stand just left of the grid where they fit there (a centred grid in a wide view
  // left them far off at the view's left edge), else at that edge.
  float names_w = 0;
  for (int st = 0; st < pp; ++st) {
    if (st % every == 0) names_w = std::max(names_w, c.text_width("stage " + std::to_string(st + 1), label));
    if (layers_named) names_w = std::max(names_w, c.text_width(layer_names[(std::size_t)st], label * 0.8f));
  }
  const bool beside = gx - 0.6f * label - names_w >= label * 0.8f;
  const float name_x = beside ? gx - 0.6f * label : label * 0.8f;
  const Align name_align = beside ? Align::Right : Align::Left;
  for (int st = 0; st < pp; ++st) {
    const float cy = gy + cell * ((float)st + 0.5f);
    if (st % every == 0)
      say("stage " + std::to_string(st + 1), {name_x, cy + label * 0.15f}, label, text, name_align);
    if (layers_named && !layer_names[(std::size_t)st].empty())
      say(layer_names[(std::size_t)st], {name_x, cy - label * 1.05f}, label * 0.8f, text_dim, name_align);
    if (ep > 1 && dp / ep <= 16 && chips) {
      for (int g = 0; g < dp / ep; ++g) {
        const float xa = gx + cell * (float)(g * ep) + cell * 0.12f, xb = gx + cell * (float)((g + 1) * ep) - cell * 0.12f;
        const float yb = gy + cell * (float)st + cell * 0.04f;
        c.line({xa, yb}, {xb, yb}, 1.5f * s, render::with_alpha(kAllToAll, 0.7f));
        c.line({xa, yb}, {xa, yb + cell * 0.05f}, 1.5f * s, render::with_alpha(kAllToAll, 0.7f));
        c.line({xb, yb}, {xb, yb + cell * 0.05f}, 1.5f * s, render::with_alpha(kAllToAll, 0.7f));
      }
    }
  }

  // The learner's main read, a size up where it fits; a trace keeps no guesses, gradients or
  // moves to read (its three columns only said "waiting").
  if (run->by_layer && run->recorded_from.empty()) readout(c, read, rs, label * 1.35f);
  if (!rec) return;
  // In flight at the playhead: hand-overs as beads, all-reduces as a bar across the copies.
  c.set_layer(2);
  int beads = 0;
  for (const OpSpan& o : rec->ops) {
    if (beads > 3000) break;
    if (o.kind == EventKind::Send && o.id < plan.ops.size()) {
      const trainer::Op& op = plan.op(o.id);
      if (op.match < 0 || (std::size_t)op.match >= index_.by_op.size() || index_.by_op[(std::size_t)op.match] < 0) continue;
      const OpSpan& rv = rec->ops[(std::size_t)index_.by_op[(std::size_t)op.match]];
      const double a = time_of(o, false), b = time_of(rv, true);
      if (P < a || P > b || b <= a) continue;
      const float f = (float)((P - a) / (b - a));
      const glm::vec2 pa = cell_rect(o.rank).center(), pb = cell_rect(rv.rank).center();
      const glm::vec4 bc = op.payload == trainer::Payload::Activation ? forward : backward;
      c.line(pa, pb, 1.0f * s, render::with_alpha(bc, 0.25f));
      c.disc(pa + (pb - pa) * f, std::max(2.5f * s, cell * 0.06f), bc);
      ++beads;
    } else if (o.kind == EventKind::AllToAll && time_of(o, false) <= P && P <= time_of(o, true) && o.id < plan.ops.size() &&
               chips) {
      // Token rows travelling between the group's GPUs: out to the experts on dispatch, back
      // on combine (a bead per other member, moving with the op's progress).
      const trainer::Op& op = plan.op(o.id);
      if (op.collective < 0) continue;
      const double a = time_of(o, false), b = time_of(o, true);
      float f = b > a ? (float)((P - a) / (b - a)) : 1.0f;
      const bool out = op.phase == trainer::AllToAllPhase::DispatchFwd || op.phase == trainer::AllToAllPhase::CombineBwd;
      if (!out) f = 1.0f - f;
      const glm::vec2 from = cell_rect(o.rank).center();
      for (int m : plan.collectives[(std::size_t)op.collective].ranks) {
        if (m == o.rank) continue;
        const glm::vec2 to = cell_rect(m).center();
        c.disc(from + (to - from) * (0.15f + 0.7f * f), std::max(2.0f * s, cell * 0.035f), kAllToAll);
        ++beads;
      }
    } else if (o.kind == EventKind::Broadcast && time_of(o, false) <= P && P <= time_of(o, true) && o.peer >= 0 &&
               o.peer != o.rank) {
      // The first copy's weights arriving (lavender: weights).
      const double a = time_of(o, false), b = time_of(o, true);
      const float f = b > a ? (float)((P - a) / (b - a)) : 1.0f;
      const glm::vec2 from = cell_rect(o.peer).center(), to = cell_rect(o.rank).center();
      c.line(from, to, 1.0f * s, render::with_alpha(weights, 0.25f));
      c.disc(from + (to - from) * (0.15f + 0.7f * f), std::max(2.5f * s, cell * 0.05f), weights);
      ++beads;
    } else if (o.kind == EventKind::AllReduce && time_of(o, false) <= P && P <= time_of(o, true) && chips) {
      const Rect b = cell_rect(o.rank);
      c.line({b.min.x - cell * 0.1f, b.max.y + cell * 0.03f}, {b.max.x + cell * 0.1f, b.max.y + cell * 0.03f}, 3.0f * s,
             weights);
    }
  }

  // Scale note: every wall is measured, on one scale.
  c.set_layer(3);
  {
    // The footer: the scale of the walls, shrunk (not cut) to the view's width.
    std::vector<std::string> lines;
    if (recorded) lines = {"a recorded run: the trace keeps no memory, so the chips have no walls"};
    else if (footer_two) lines = {walls_scale + mb(most), walls_key};
    else lines = {walls_scale + mb(most) + "   ·   " + walls_key};
    const float want = label * 0.8f, room = vp.x - label * 1.6f;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const float w = c.text_width(lines[i], want);
      say(lines[i], {label * 0.8f, label * (0.5f + 1.05f * (float)(lines.size() - 1 - i))}, w > room ? want * room / w : want,
          text_faint, Align::Left);
    }
  }
}

}  // namespace onegpu::app
