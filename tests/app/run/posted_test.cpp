// PostedValue: a value made once by a job on the shared job runner, read without waiting by
// draw() and with waiting by headless renders.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "app/run/posted.h"

using namespace onegpu;
using namespace onegpu::app;

TEST(PostedValue, IsMadeOnceOnTheRunnerAndReadWithOrWithoutWaiting) {
  PostedValue<int> v;
  EXPECT_FALSE(v.posted());
  EXPECT_EQ(v.ready(), nullptr);
  EXPECT_THROW(v.wait(), trainer::Error);  // nothing posted: nothing to wait for
  std::atomic<int> made{0};
  EXPECT_TRUE(v.post("test: making 42", [&] { return ++made, 42; }));
  EXPECT_FALSE(v.post("test: making 43", [&] { return ++made, 43; }));  // once
  EXPECT_EQ(v.wait(), 42);
  ASSERT_NE(v.ready(), nullptr);
  EXPECT_EQ(*v.ready(), 42);
  EXPECT_FALSE(v.pending());
  EXPECT_EQ(v.what(), "test: making 42");
  EXPECT_EQ(made.load(), 1);
}

TEST(PostedValue, AFailedJobSaysWhyAndWaitThrows) {
  PostedValue<int> v;
  v.post("test: failing", []() -> int { throw std::runtime_error("no room"); });
  EXPECT_THROW(v.wait(), trainer::Error);
  EXPECT_EQ(v.ready(), nullptr);
  EXPECT_EQ(v.error(), "no room");
}

TEST(PostedValue, AJobThatWaitsForAnotherGetsAnErrorInsteadOfHanging) {
  PostedValue<int> inner, outer;
  inner.post("test: inner", [] { return 1; });
  outer.post("test: outer", [&] { return inner.ready() ? *inner.ready() : 0; });  // reading is fine
  EXPECT_EQ(outer.wait(), 1);  // FIFO: inner ran first
  PostedValue<int> later, waiter;
  waiter.post("test: waiter", [&] {
    later.post("test: later", [] { return 2; });
    return later.wait();  // queued behind this job: refused
  });
  EXPECT_THROW(waiter.wait(), trainer::Error);
  EXPECT_NE(waiter.error().find("from a posted job"), std::string::npos);
  EXPECT_EQ(later.wait(), 2);
}
