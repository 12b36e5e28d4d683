#include "app/ui/input_queue.h"

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

namespace onegpu::app {

void InputQueue::key(int key, int action, int mods) {
  pending_.touched = true;
  if (action == GLFW_PRESS) pending_.keys.push_back({key, mods});
}

void InputQueue::wheel(float dy, double x, double y) {
  pending_.touched = true;
  if (dy != 0.0f) pending_.wheel.push_back({dy, x, y});
}

InputBatch InputQueue::take() {
  InputBatch out;
  std::swap(out, pending_);
  return out;
}

InputQueue& input_queue() {
  static InputQueue q;
  return q;
}

namespace {
void on_key(GLFWwindow*, int key, int, int action, int mods) { input_queue().key(key, action, mods); }
void on_scroll(GLFWwindow* w, double, double dy) {
  double x = 0, y = 0;
  glfwGetCursorPos(w, &x, &y);
  input_queue().wheel(static_cast<float>(dy), x, y);
}
void on_cursor(GLFWwindow*, double, double) { input_queue().touch(); }
void on_button(GLFWwindow*, int, int, int) { input_queue().touch(); }
void on_char(GLFWwindow*, unsigned) { input_queue().touch(); }
void on_enter(GLFWwindow*, int) { input_queue().touch(); }
void on_focus(GLFWwindow*, int) { input_queue().touch(); }
void on_size(GLFWwindow*, int, int) { input_queue().touch(); }
void on_refresh(GLFWwindow*) { input_queue().touch(); }
}  // namespace

void install_input_callbacks(GLFWwindow* win) {
  glfwSetKeyCallback(win, on_key);
  glfwSetScrollCallback(win, on_scroll);
  glfwSetCursorPosCallback(win, on_cursor);
  glfwSetMouseButtonCallback(win, on_button);
  glfwSetCharCallback(win, on_char);
  glfwSetCursorEnterCallback(win, on_enter);
  glfwSetWindowFocusCallback(win, on_focus);
  glfwSetFramebufferSizeCallback(win, on_size);
  glfwSetWindowRefreshCallback(win, on_refresh);
}

}  // namespace onegpu::app
