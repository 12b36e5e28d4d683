#include <gtest/gtest.h>

#include "ring_stress.h"
#include "trainer/events/event_stream.h"

namespace onegpu::trainer {
namespace {

TEST(SpscRing, FillsToCapacityThenCountsDrops) {
  SpscRing<int> ring(5);  // rounds up to 8
  ASSERT_EQ(ring.capacity(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(ring.try_push(i));
  EXPECT_FALSE(ring.try_push(99));
  EXPECT_EQ(ring.dropped(), 1u);
  int v = -1;
  ASSERT_TRUE(ring.pop(v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(ring.try_push(8));  // the freed slot is reused
  std::vector<int> seen;
  EXPECT_EQ(ring.drain([&](int x) { seen.push_back(x); }), 8u);
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_FALSE(ring.pop(v));
}

TEST(EventStream, DroppedMarkerPrecedesTheNextEvent) {
  EventStream s(1, 4);
  for (std::uint32_t i = 0; i < 6; ++i) {
    Event e;
    e.id = i;
    s.push(0, e);
  }
  EXPECT_EQ(s.dropped(), 2u);  // 4 fit, 2 lost
  std::vector<Event> got;
  s.drain([&](const Event& e) { got.push_back(e); });
  ASSERT_EQ(got.size(), 4u);
  Event e;
  e.id = 6;
  EXPECT_TRUE(s.push(0, e));
  got.clear();
  s.drain([&](const Event& x) { got.push_back(x); });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].kind, EventKind::Dropped);
  EXPECT_EQ(got[0].bytes, 2);
  EXPECT_EQ(got[1].id, 6u);
}

TEST(EventStream, StressConsumerKeepsUpNothingLost) {
  const auto r = stress::run(4, 1'000'000, 1u << 14, /*polite=*/true);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.received, r.produced);
  EXPECT_EQ(r.dropped, 0u);
}

TEST(EventStream, StressSmallRingOverflowAddsUpExactly) {
  const auto r = stress::run(4, 300'000, 64, /*polite=*/false);
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_GT(r.dropped, 0u);  // the overflow path really ran
  EXPECT_EQ(r.announced, r.dropped);
  EXPECT_EQ(r.received + r.dropped, r.produced);
}

TEST(EventKindNames, AreDistinct) {
  EXPECT_EQ(to_string(EventKind::WeightGradient), "weight-gradient");
  EXPECT_EQ(to_string(EventKind::AllToAll), "all-to-all");
}

}  // namespace
}  // namespace onegpu::trainer
