#pragma once
// A value made once, by a job on the app's one job runner (app/live/job_runner.h), for the
// chapters' recorded runs. Any thread may ask for it:
//
//   PostedValue<RankBytes> bytes;                        // lives as long as anyone reads it
//   bytes.post("64-GPU run: building …", [] { return build(); });   // queued once; later calls do nothing
//   if (const RankBytes* b = bytes.ready()) draw_with(*b);          // draw(): never blocks
//   const RankBytes& b = bytes.wait();                   // headless prepare(), tests: blocks
//
// What it does not do: run anything itself (the runner does, one job after another, between
// the live run's ops), or make a value twice (a failed job stays failed: error() says why).
// A job must not wait() for another value: it would wait for a job queued behind itself, so
// wait() throws instead. Destroying a value (at exit) cancels its job if it has not begun and
// waits for it if it has, so a job may use the value's owner until it returns.
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "app/live/job_runner.h"
#include "trainer/error.h"

namespace onegpu::app {

namespace posted_detail {
// True on the runner's thread while a PostedValue's job runs.
inline thread_local bool in_job = false;
}  // namespace posted_detail

template <class T>
class PostedValue {
 public:
  PostedValue() = default;
  PostedValue(const PostedValue&) = delete;
  PostedValue& operator=(const PostedValue&) = delete;
  ~PostedValue() {
    cancelled_ = true;
    std::shared_future<void> f;
    {
      std::lock_guard<std::mutex> lock(mu_);
      f = done_;
    }
    if (f.valid()) f.wait();  // ready at once if the runner has stopped (its queue is dropped)
  }

  // Queues `make` on the runner under the name `what` (the status bar shows it while it runs).
  // Returns true if this call queued it.
  bool post(std::string what, std::function<T()> make) {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_.valid()) return false;
    what_ = what;
    done_ = JobRunner::shared().post(std::move(what), [this, make = std::move(make)] {
      if (cancelled_) return;
      posted_detail::in_job = true;
      try {
        auto v = std::make_unique<T>(make());
        std::lock_guard<std::mutex> l(mu_);
        value_ = std::move(v);
        ptr_.store(value_.get());
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> l(mu_);
        error_ = e.what();
      }
      posted_detail::in_job = false;
    });
    return true;
  }

  bool posted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return done_.valid();
  }
  // The value, or null while it is queued or being made (or if making it failed).
  const T* ready() const { return ptr_.load(); }
  // Queued or being made, not yet finished.
  bool pending() const {
    std::lock_guard<std::mutex> lock(mu_);
    return done_.valid() && done_.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
  }
  // Blocks until the job has run; throws Error if it failed or was never posted.
  const T& wait() const {
    if (const T* v = ptr_.load()) return *v;
    if (posted_detail::in_job)
      throw trainer::Error("PostedValue::wait() called from a posted job: jobs run one at a time, so it would "
                           "wait for itself. Make the value in this job instead.");
    std::shared_future<void> f;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!done_.valid()) throw trainer::Error("PostedValue::wait() before post()");
      f = done_;
    }
    f.wait();
    if (const T* v = ptr_.load()) return *v;
    std::lock_guard<std::mutex> lock(mu_);
    throw trainer::Error(what_ + " failed: " + (error_.empty() ? std::string("the job runner stopped") : error_));
  }
  // Why making it failed ("" if it did not, or has not yet).
  std::string error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  // The job's name, as the runner's status shows it while it runs ("" before post()).
  std::string what() const {
    std::lock_guard<std::mutex> lock(mu_);
    return what_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_future<void> done_;
  std::string what_, error_;
  std::unique_ptr<T> value_;
  std::atomic<const T*> ptr_{nullptr};
  std::atomic<bool> cancelled_{false};
};

// A status-bar line for a value: its job's name while it runs, "… (queued)" while it waits,
// "… failed: why" if it failed, "" once it is made (or before it is posted).
template <class T>
std::string posted_activity(const PostedValue<T>& v) {
  if (std::string e = v.error(); !e.empty()) return v.what() + " failed: " + e;
  if (!v.pending()) return {};
  const std::string now = JobRunner::shared().status().job;
  return now == v.what() ? now : v.what() + " (queued)";
}

}  // namespace onegpu::app
