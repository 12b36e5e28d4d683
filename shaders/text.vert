#version 330 core
layout(location = 0) in vec2 a_corner;  // 0..1
layout(location = 1) in vec4 i_rect;    // world x, y (lower left), w, h
layout(location = 2) in vec4 i_uv;      // u0, v0 (top), u1, v1 (bottom)
layout(location = 3) in vec4 i_color;
uniform mat4 u_vp;
out vec2 v_uv;
flat out vec4 v_color;
void main() {
  vec2 pos = i_rect.xy + a_corner * i_rect.zw;
  v_uv = vec2(mix(i_uv.x, i_uv.z, a_corner.x), mix(i_uv.w, i_uv.y, a_corner.y));
  v_color = i_color;
  gl_Position = u_vp * vec4(pos, 0.0, 1.0);
}
