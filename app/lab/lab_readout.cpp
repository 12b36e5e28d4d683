// What a step by hand produced, beside the chip of a one-rank run (layer-by-layer ops): the
// head's next-token guesses for the first text's last position (and the token that really
// comes next), each layer's gradient norm as the backward pass reaches it, and how far the
// update moved each layer's weights. All of it from the run's probe events.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/lab/context_line.h"
#include "app/lab/lab.h"
#include "app/lab/lab_explain.h"
#include "render/palette.h"

namespace onegpu::app {

namespace {

using namespace render::palette;
using render::Align;
using render::Rect;
using trainer::ProbeKind;

struct Readout {
  int head_step = -1, grad_step = -1, move_step = -1;
  std::string context;
  bool context_from_start = false;  // the context begins the text
  std::vector<std::pair<std::int64_t, double>> guesses;  // id, probability
  std::int64_t target = -1;
  double target_p = 0;
  std::vector<double> grads;  // per layer, -1: not reached yet
  std::vector<double> moves;  // per layer
  double moved_all = -1;
};

Readout collect(const RunState& rs, const LiveRun& run) {
  Readout r;
  const int L = run.model.n_layers;
  r.grads.assign((std::size_t)L, -1.0);
  r.moves.assign((std::size_t)L, -1.0);
  // The newest step that has each read-out (the step in progress first).
  const auto& steps = rs.steps();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    bool head = false, grad = false, move = false;
    for (const ProbeValue& p : it->probes) {
      head |= p.kind == ProbeKind::NextToken;
      grad |= p.kind == ProbeKind::LayerGradNorm;
      move |= p.kind == ProbeKind::UpdateSize;
    }
    if (head && r.head_step < 0) {
      r.head_step = it->step;
      for (const ProbeValue& p : it->probes) {
        if (p.microbatch > 0) continue;  // the first microbatch's text
        if (p.kind == ProbeKind::Context) {
          if (r.context.empty()) r.context_from_start = p.layer == 0;  // a context probe's layer is its position
          r.context += token_text(run, p.id);
        }
        if (p.kind == ProbeKind::NextToken) r.guesses.push_back({p.id, p.value});
        if (p.kind == ProbeKind::Target) r.target = p.id, r.target_p = p.value;
      }
    }
    if (grad && r.grad_step < 0) {
      r.grad_step = it->step;
      for (const ProbeValue& p : it->probes)
        if (p.kind == ProbeKind::LayerGradNorm && p.layer >= 0 && p.layer < L) r.grads[(std::size_t)p.layer] = p.value;
    }
    if (move && r.move_step < 0) {
      r.move_step = it->step;
      for (const ProbeValue& p : it->probes) {
        if (p.kind != ProbeKind::UpdateSize) continue;
        if (p.layer < 0) r.moved_all = p.value;
        else if (p.layer < L) r.moves[(std::size_t)p.layer] = p.value;
      }
    }
  }
  return r;
}

}  // namespace

void Lab::readout(render::Canvas& c, const Rect& area, const RunState& rs, float label_max) {
  const LiveRun* run = rs.run();
  if (!run) return;
  const Readout r = collect(rs, *run);
  // Which of the three columns to draw. All three where they fit at the view's text rule;
  // else (a small window, or text scaled up for a projector) the phase the step is in and the
  // next one, or that phase alone: the newest of the three read-outs, a later phase on a tie.
  // A run going free passes through every phase many times a second: it keeps the head's.
  enum Col { Head, Grad, Move };
  const int newest = std::max({r.head_step, r.grad_step, r.move_step});
  const bool free = runner_.status().mode != RunMode::Paused;
  const Col now = free || newest < 0 || r.head_step > std::max(r.grad_step, r.move_step) ? Head
                  : r.move_step == newest ? Move : Grad;
  auto choice = [&](int n) {
    if (n == 3) return std::vector<Col>{Head, Grad, Move};
    if (n == 2) return now == Head ? std::vector<Col>{Head, Grad} : std::vector<Col>{Grad, Move};
    return std::vector<Col>{now};
  };
  // The text takes the view's size rule, but never more than its area holds: the tallest
  // column's rows in the height, about eleven letters a column in the width.
  auto size_for = [&](const std::vector<Col>& cs) {
    const int L = run->model.n_layers, tall[] = {9, L + 1, L + 3};
    int rows = 0;
    for (Col k : cs) rows = std::max(rows, tall[k]);
    const float n = (float)cs.size();
    return std::min({label_max, area.size().y / ((float)rows * 1.75f + 0.6f),
                     (area.size().x - 1.6f * (n - 1.0f) * label_max) / n / 11.0f});
  };
  int n = 3;
  while (n > 1 && size_for(choice(n)) < c.min_text()) --n;
  const std::vector<Col> cols = choice(n);
  const float label = size_for(cols);
  // No room for words at the text rule's size: the timeline and the side panel still say it.
  if (label < c.min_text()) return;
  static const char* const kColName[] = {"head", "gradients", "update"};
  for (Col k : cols) drawn_.readout_columns.push_back(kColName[k]);
  auto say = [&](const std::string& str, glm::vec2 at, float size, glm::vec4 colour, Align a) {
    const float w = c.text(str, at, size, colour, a);
    const float x = a == Align::Left ? at.x : a == Align::Center ? at.x - w * 0.5f : at.x - w;
    const float drawn = c.text_size(size);  // the canvas's text rule may have raised it
    drawn_.labels.push_back({{x, at.y - drawn * 0.22f}, {x + w, at.y + drawn * 0.75f}});
  };
  auto fit = [&](std::string s, float width, float size) {
    // Keep the end (a token's text can be long), cutting whole UTF-8 sequences from the front.
    while (s.size() > 4 && c.text_width(s, size) > width) drop_first_char(s);
    return s;
  };
  // A note in a column: broken between words onto as many rows as it needs (it ran into the
  // next column in one line).
  auto say_wrapped = [&](const std::string& str, glm::vec2 at, float width, float size, glm::vec4 colour) {
    std::string line, word;
    auto flush = [&] {
      if (!line.empty()) say(line, at, size, colour, Align::Left);
      at.y -= size * 1.75f / 0.85f;
      line.clear();
    };
    for (std::size_t i = 0; i <= str.size(); ++i) {
      if (i < str.size() && str[i] != ' ') {
        word += str[i];
        continue;
      }
      if (!line.empty() && c.text_width(line + " " + word, size) > width) flush();
      line += (line.empty() ? "" : " ") + word;
      word.clear();
    }
    flush();
  };
  // A heading keeps its words and shrinks (to 70% at most) to fit its column.
  auto heading = [&](const std::string& str, glm::vec2 at, float width, glm::vec4 colour) {
    const float w = c.text_width(str, label);
    const float size = w > width ? std::max(label * 0.7f, label * width / w) : label;
    say(str, at, size, colour, Align::Left);
  };
  const float gap = label * 1.6f;
  const float col_w = (area.size().x - (float)(n - 1) * gap) / (float)n;
  auto column_x = [&](Col k) {
    const auto at = std::find(cols.begin(), cols.end(), k);
    return at == cols.end() ? -1.0f : area.min.x + (float)(at - cols.begin()) * (col_w + gap);
  };
  const float top = area.max.y - label * 0.6f;
  const float row = label * 1.75f;
  c.set_layer(3);

  // 1. After the head.
  float x = column_x(Head), y = top;
  if (x >= 0.0f) {
    heading(r.head_step >= 0 ? "After the head (step " + std::to_string(r.head_step + 1) + ")" : "After the head", {x, y},
            col_w, forward);
    y -= row;
    if (r.head_step < 0) {
      say_wrapped("not reached yet: step to the last layer", {x, y}, col_w, label * 0.85f, text_faint);
    } else {
      const float ctx_size = label * 0.85f;
      say(context_line(r.context, r.context_from_start, col_w, [&](const std::string& s) { return c.text_width(s, ctx_size); }),
          {x, y}, ctx_size, text_dim, Align::Left);
      y -= row;
      double most = 1e-9;
      for (const auto& g : r.guesses) most = std::max(most, g.second);
      // Bar, then the percentage right-aligned after it, then the token: placed by measured widths.
      const float small = label * 0.85f, pad = label * 0.4f;
      const float pct_w = c.text_width("100.0%", small), bar_max = col_w * 0.32f;
      for (const auto& [id, p] : r.guesses) {
        const float bw = bar_max * (float)(p / most);
        c.set_layer(1);
        c.box({{x, y - label * 0.25f}, {x + std::max(1.0f, bw), y + label * 0.7f}}, render::with_alpha(forward, 0.8f), 2.0f);
        c.set_layer(3);
        char pct[16];
        std::snprintf(pct, sizeof pct, "%.1f%%", 100.0 * p);
        const float px = x + bar_max + pad + pct_w;
        say(pct, {px, y}, small, text_dim, Align::Right);
        const float tx = px + pad;
        say(fit("\"" + token_text(*run, id) + "\"", x + col_w - tx, small), {tx, y}, small, id == r.target ? forward : text,
            Align::Left);
        y -= row;
      }
      if (r.target >= 0) {
        say("really next:", {x, y}, label * 0.85f, forward, Align::Left);
        y -= row;
        char t[96];
        std::snprintf(t, sizeof t, "%.1f%%  \"%s\"", 100.0 * r.target_p, token_text(*run, r.target).c_str());
        say(fit(t, col_w, label * 0.85f), {x, y}, label * 0.85f, forward, Align::Left);
      }
    }
  }

  // 2. Gradient per layer, filled in as the backward pass goes down.
  x = column_x(Grad);
  y = top;
  if (x >= 0.0f) {
    heading(r.grad_step >= 0 ? "Gradient per layer (step " + std::to_string(r.grad_step + 1) + ")" : "Gradient per layer",
            {x, y}, col_w, backward);
    y -= row;
    double gmost = 1e-12;
    for (double g : r.grads) gmost = std::max(gmost, g);
    {
      const float small = label * 0.85f, pad = label * 0.4f;
      const float name_w = c.text_width("layer 88", small), val_w = c.text_width("00.000", small);
      const float bar_x = x + name_w + pad, bar_max = std::max(label, col_w - name_w - val_w - 3 * pad);
      for (int l = (int)r.grads.size() - 1; l >= 0; --l) {
        const double g = r.grads[(std::size_t)l];
        say("layer " + std::to_string(l + 1), {x, y}, small, text_dim, Align::Left);
        if (g >= 0) {
          const float bw = bar_max * (float)(g / gmost);
          c.set_layer(1);
          c.box({{bar_x, y - label * 0.25f}, {bar_x + std::max(1.0f, bw), y + label * 0.7f}}, backward, 2.0f);
          c.set_layer(3);
          char v[24];
          std::snprintf(v, sizeof v, "%.3f", g);
          say(v, {bar_x + bar_max + pad, y}, small, text, Align::Left);
        } else {
          say("waiting", {bar_x, y}, small, text_faint, Align::Left);
        }
        y -= row;
      }
    }
  }

  // 3. How far the update moved the weights.
  x = column_x(Move);
  y = top;
  if (x < 0.0f) return;
  heading(r.move_step >= 0 ? "The update (step " + std::to_string(r.move_step + 1) + ")" : "The update", {x, y}, col_w,
          optimizer);
  y -= row;
  if (r.move_step < 0) {
    say_wrapped("after the last op of a step", {x, y}, col_w, label * 0.85f, text_faint);
    return;
  }
  say("weights moved by", {x, y}, label * 0.85f, text_dim, Align::Left);
  y -= row;
  for (int l = (int)r.moves.size() - 1; l >= 0; --l) {
    char v[48];
    std::snprintf(v, sizeof v, "layer %d: %.3f%%", l + 1, 100.0 * r.moves[(std::size_t)l]);
    say(v, {x, y}, label * 0.85f, text, Align::Left);
    y -= row;
  }
  if (r.moved_all >= 0) {
    char v[48];
    std::snprintf(v, sizeof v, "all weights: %.3f%%", 100.0 * r.moved_all);
    say(v, {x, y}, label * 0.85f, optimizer, Align::Left);
  }
}

}  // namespace onegpu::app
