#version 330 core
// One instance = one shape; the quad is grown by a pixel (and the glow) so that the anti-aliased
// edge is never clipped: coverage falls to zero half a pixel outside the edge, so a pixel whose
// centre is further out than that adds nothing, and a wider margin only adds work (for a cell a
// few pixels wide, half again as many pixels shaded).
#ifndef SHAPE_VARIANT
#define SHAPE_VARIANT -1  // every kind (see shape.frag)
#endif
layout(location = 0) in vec2 a_corner;
layout(location = 1) in vec4 i_geom;
layout(location = 2) in vec4 i_fill;
layout(location = 3) in vec4 i_stroke;
layout(location = 4) in vec4 i_params;
layout(location = 5) in vec4 i_extra;
layout(location = 6) in vec4 i_hatch;
layout(location = 7) in vec4 i_part;  // world min.xy, max.xy of the quad to shade; zero: all of it

uniform mat4 u_vp;
uniform float u_wpp;  // world units per pixel

out vec2 v_local;
out vec2 v_world;
flat out vec2 v_half;
flat out vec4 v_fill;
flat out vec4 v_stroke;
flat out vec4 v_params;
flat out vec4 v_extra;
flat out vec4 v_hatch;

void main() {
#if SHAPE_VARIANT < 0
  int kind = int(i_params.z + 0.5);
#elif SHAPE_VARIANT == 4
  const int kind = 0;
#else
  const int kind = SHAPE_VARIANT;
#endif
  float pad = u_wpp + i_params.w;
  vec2 pos;
  if (kind == 2) {
    vec2 d = i_geom.zw - i_geom.xy;
    float len = length(d);
    vec2 dir = len > 0.0 ? d / len : vec2(1.0, 0.0);
    vec2 nrm = vec2(-dir.y, dir.x);
    float hw = i_extra.x + pad;
    v_local = vec2(a_corner.x * (len * 0.5 + hw), a_corner.y * hw);
    v_half = vec2(len * 0.5, i_extra.x);
    pos = (i_geom.xy + i_geom.zw) * 0.5 + dir * v_local.x + nrm * v_local.y;
  } else {
    v_local = a_corner * (i_geom.zw + pad);
    v_half = i_geom.zw;
    pos = i_geom.xy + v_local;
    if (i_part.z > i_part.x) {  // a part of the quad: the same distances where it is shaded
      pos = mix(i_part.xy, i_part.zw, a_corner * 0.5 + 0.5);
      v_local = pos - i_geom.xy;
    }
  }
  v_world = pos;
  v_fill = i_fill;
  v_stroke = i_stroke;
  v_params = i_params;
  v_extra = i_extra;
  v_hatch = i_hatch;
  gl_Position = u_vp * vec4(pos, 0.0, 1.0);
}
