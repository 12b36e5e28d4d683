#version 330 core
// Shapes as signed distances (negative inside), anti-aliased over one pixel.
// Output is premultiplied alpha.
//
// SHAPE_VARIANT (set by the renderer, render/shape_programs.h) compiles the program for one kind
// of shape only: a software rasteriser runs every branch of a shader for every pixel, so the
// general program (-1, every kind, picked per instance) shades each pixel of a box with the
// ring's, the segment's, the glow's and the hatching's arithmetic as well. The variants are this
// same text with the kind fixed, so they give the same pixels.
#ifndef SHAPE_VARIANT
#define SHAPE_VARIANT -1
#endif
in vec2 v_local;
in vec2 v_world;
flat in vec2 v_half;
flat in vec4 v_fill;
flat in vec4 v_stroke;
flat in vec4 v_params;
flat in vec4 v_extra;
flat in vec4 v_hatch;

uniform float u_wpp;
out vec4 o_color;

const float PI = 3.14159265;

float sd_round_box(vec2 p, vec2 b, float r) {
  r = min(r, min(b.x, b.y));
  vec2 q = abs(p) - b + r;
  return length(max(q, 0.0)) + min(max(q.x, q.y), 0.0) - r;
}

vec4 premul(vec4 c) { return vec4(c.rgb * c.a, c.a); }

float cover(float d) { return clamp(0.5 - d / u_wpp, 0.0, 1.0); }

void main() {
#if SHAPE_VARIANT < 0
  int kind = int(v_params.z + 0.5);
  bool hatched = kind == 0 && v_extra.x > 0.0;
#elif SHAPE_VARIANT == 4
  const int kind = 0;  // a hatched box
  const bool hatched = true;
#else
  const int kind = SHAPE_VARIANT;
  const bool hatched = false;
#endif
  float d;
  if (kind == 1) {
    float r = length(v_local);
    d = max(r - v_half.x, v_params.x - r);
    float sweep = v_extra.y;
    if (sweep < 2.0 * PI - 1e-4) {
      // An arc: its start and end directions come with the instance (in the hatch slot, which
      // rings do not use), so no angle is taken here. A software rasteriser runs every branch
      // of this shader for every pixel, and an atan per pixel cost a quarter of a frame.
      // Outside the sweep the distance is to the nearer end's ray; within the one-pixel edge
      // that equals the arc length the end used to be measured by, so the ends stay smooth.
      vec2 p = v_local, u0 = v_hatch.xy, u1 = v_hatch.zw;
      float c0 = u0.x * p.y - u0.y * p.x;  // > 0: counter-clockwise of the start
      float c1 = p.x * u1.y - p.y * u1.x;  // > 0: clockwise of the end
      bool inside = sweep <= PI ? (c0 >= 0.0 && c1 >= 0.0) : (c0 >= 0.0 || c1 >= 0.0);
      if (!inside) {
        float e0 = dot(p, u0) > 0.0 ? abs(c0) : r;
        float e1 = dot(p, u1) > 0.0 ? abs(c1) : r;
        d = max(d, min(e0, e1));
      }
    }
  } else if (kind == 2) {
    vec2 p = v_local;
    d = length(vec2(max(abs(p.x) - v_half.x, 0.0), p.y)) - v_half.y;
  } else {
    d = sd_round_box(v_local, v_half, v_params.x);
  }

  if (kind == 3) {
    // Glow: full inside, fading outward over the glow width.
    float w = max(v_params.w, u_wpp);
    float g = d <= 0.0 ? 1.0 : exp(-3.0 * (d / w) * (d / w));
    o_color = premul(v_fill) * g;
    return;
  }

  vec4 fill = v_fill;
  if (hatched) {
    // Diagonal hatching in world space, so it stays put as the camera moves.
    float u = (v_world.x + v_world.y) / v_extra.x;
    float dist = abs(fract(u) - 0.5) * v_extra.x * 0.7071;
    float line = clamp(0.5 - (dist - v_extra.y * 0.5) / u_wpp, 0.0, 1.0);
    fill = mix(fill, v_hatch, line * v_hatch.a);
  }
  vec4 c = premul(fill);
  float sw = v_params.y;
  if (sw > 0.0) {
    float s = clamp(0.5 + (d + sw) / u_wpp, 0.0, 1.0);
    c = mix(c, premul(v_stroke), s);
  }
  o_color = c * cover(d);
}
