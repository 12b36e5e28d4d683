#pragma once
// Starting threads where the system may refuse one (a thread-count or address-space limit,
// `ulimit -v`): std::thread throws std::system_error, and the threads already started would
// then be destroyed while still running, which aborts the program. start_threads stops and
// joins the ones it started and throws one Error that says what could not start and why.
#include <functional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "trainer/error.h"

namespace onegpu::trainer {

// Appends `count` threads running body(i), i in [0, count), to `out`. If one cannot start,
// stop() is called (it must make the bodies already running return), every thread in `out` is
// joined, `out` is cleared, and an Error names `what`, how many of `count` started and the
// system's reason.
template <class Body>
void start_threads(std::vector<std::thread>& out, int count, const char* what, Body body,
                   const std::function<void()>& stop = {}) {
  for (int i = 0; i < count; ++i) {
    try {
      out.emplace_back(body, i);
    } catch (const std::system_error& e) {
      if (stop) stop();
      for (auto& t : out) t.join();
      out.clear();
      throw Error("could not start " + std::string(what) + " thread " + std::to_string(i + 1) + " of " +
                  std::to_string(count) + ": " + e.code().message() +
                  " (the system's limit on threads or memory; ask for fewer workers or threads)");
    }
  }
}

}  // namespace onegpu::trainer
