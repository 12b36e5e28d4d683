#pragma once
// Every key press and wheel turn since the last frame, in the order they came.
//
// A presenter's clicker taps a key down and up within a few milliseconds, often inside one
// frame; a per-frame "is it down?" poll misses such taps. The GLFW callbacks below push each
// press here as it arrives, and the window takes the whole list once a frame, so every press
// counts (tests/app/ui/input_queue_test.cpp injects press/release pairs within one frame).
// Any other input (pointer moves, clicks, resizes) only marks the queue "touched", which tells
// the window that something may have changed on screen and a frame is owed.
#include <vector>

struct GLFWwindow;

namespace onegpu::app {

struct KeyPress {
  int key = 0, mods = 0;
};

struct WheelTurn {
  float dy = 0;        // > 0: away from the user (back a chapter), < 0: towards (forward)
  double x = 0, y = 0; // pointer position in window coordinates when it turned
};

struct InputBatch {
  std::vector<KeyPress> keys;
  std::vector<WheelTurn> wheel;
  bool touched = false;  // anything at all happened (keys, wheel, pointer, window)
};

class InputQueue {
 public:
  void key(int key, int action, int mods);  // GLFW's key callback arguments; repeats are not presses
  void wheel(float dy, double x, double y);
  void touch() { pending_.touched = true; }
  InputBatch take();  // everything since the last take, oldest first

 private:
  InputBatch pending_;
};

// The queue the window's callbacks fill (the window is single-threaded: callbacks run inside
// glfwPollEvents / glfwWaitEvents on the main thread).
InputQueue& input_queue();

// Installs the callbacks that fill input_queue(). Call before ImGui's GLFW backend installs
// its own: it chains to these, so ImGui still sees every event.
void install_input_callbacks(GLFWwindow* win);

}  // namespace onegpu::app
