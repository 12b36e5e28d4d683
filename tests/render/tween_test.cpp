#include <gtest/gtest.h>

#include "render/tween.h"

using namespace onegpu::render;

TEST(Ease, EveryCurveStartsAtZeroAndEndsAtOne) {
  for (Ease e : {Ease::Linear, Ease::Smooth, Ease::InCubic, Ease::OutCubic, Ease::InOutCubic, Ease::OutBack,
                 Ease::OutExpo, Ease::InOutSine}) {
    EXPECT_NEAR(ease(e, 0.0f), 0.0f, 1e-6f) << static_cast<int>(e);
    EXPECT_NEAR(ease(e, 1.0f), 1.0f, 1e-6f) << static_cast<int>(e);
    // Clamped outside [0,1], so a phase that has ended holds still.
    EXPECT_EQ(ease(e, -3.0f), ease(e, 0.0f));
    EXPECT_EQ(ease(e, 7.0f), ease(e, 1.0f));
  }
}

TEST(Ease, MonotoneCurvesNeverGoBack) {
  for (Ease e : {Ease::Linear, Ease::Smooth, Ease::InCubic, Ease::OutCubic, Ease::InOutCubic, Ease::OutExpo,
                 Ease::InOutSine}) {
    float prev = ease(e, 0.0f);
    for (int i = 1; i <= 1000; ++i) {
      float v = ease(e, i / 1000.0f);
      EXPECT_GE(v, prev - 1e-6f) << static_cast<int>(e) << " at " << i;
      prev = v;
    }
  }
}

TEST(Ease, OutBackOvershootsThenSettles) {
  float peak = 0.0f;
  for (int i = 0; i <= 100; ++i) peak = std::max(peak, ease(Ease::OutBack, i / 100.0f));
  EXPECT_GT(peak, 1.01f);
  EXPECT_NEAR(ease(Ease::OutBack, 1.0f), 1.0f, 1e-6f);
}

TEST(Phase, ClampsAndScales) {
  EXPECT_EQ(phase(0.5f, 1.0f, 2.0f), 0.0f);
  EXPECT_FLOAT_EQ(phase(2.0f, 1.0f, 2.0f), 0.5f);
  EXPECT_EQ(phase(9.0f, 1.0f, 2.0f), 1.0f);
  EXPECT_EQ(phase(1.0f, 1.0f, 0.0f), 1.0f);  // zero-length phase is a step
  EXPECT_EQ(phase(0.99f, 1.0f, 0.0f), 0.0f);
}

TEST(Tween, MovesBetweenItsEnds) {
  Tween<float> tw{10.0f, 20.0f, 1.0f, 2.0f, Ease::Linear};
  EXPECT_EQ(tw.at(0.0f), 10.0f);
  EXPECT_FLOAT_EQ(tw.at(2.0f), 15.0f);
  EXPECT_EQ(tw.at(3.0f), 20.0f);
  EXPECT_EQ(tw.at(100.0f), 20.0f);
  EXPECT_EQ(tw.end(), 3.0f);
}

TEST(Pulse, RisesAndFalls) {
  EXPECT_NEAR(pulse(0.0f, 0.0f, 1.0f), 0.0f, 1e-6f);
  EXPECT_NEAR(pulse(0.5f, 0.0f, 1.0f), 1.0f, 1e-6f);
  EXPECT_NEAR(pulse(1.0f, 0.0f, 1.0f), 0.0f, 1e-6f);
}
