#version 330 core
// Distance-field text: the edge (0.5) is resolved over about one screen pixel at any scale.
in vec2 v_uv;
flat in vec4 v_color;
uniform sampler2D u_atlas;
out vec4 o_color;
void main() {
  float d = texture(u_atlas, v_uv).r;
  float w = max(fwidth(d) * 0.7, 1e-4);
  float a = smoothstep(0.5 - w, 0.5 + w, d) * v_color.a;
  o_color = vec4(v_color.rgb * a, a);
}
