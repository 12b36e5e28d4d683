// The Compare verdict's words on where the live step and its branch began
// (app/lab/lab_explain.h: compare_began_words), with and without the weights' fingerprints: a
// big run's steps carry none, and its verdict still says what the branch trained.
#include <gtest/gtest.h>

#include <string>

#include "app/lab/lab_explain.h"

namespace onegpu::app {
namespace {

TEST(CompareBegan, FingerprintsSayWhetherTheWeightsWereEqual) {
  EXPECT_EQ(compare_began_words(0, 0, 0, 0), "· both began from the seed's initial weights");
  EXPECT_EQ(compare_began_words(5, 42, 42, 3), "· both began from weights equal bit for bit");
  EXPECT_NE(compare_began_words(5, 42, 43, 0).find("differ in rounding"), std::string::npos);
}

TEST(CompareBegan, WithoutFingerprintsTheyNameTheStepsTheBranchTrained) {
  // Steps from 0 here, from 1 on screen: step 9 is "step 10".
  EXPECT_EQ(compare_began_words(9, 0, 0, 9), "· the branch began from the live run's state before this step");
  EXPECT_EQ(compare_began_words(9, 0, 0, 7),
            "· the branch began from the live run's state after step 7 and trained steps 8 to 10 under its split");
  EXPECT_EQ(compare_began_words(9, 0, 0, 0), "· the branch trained steps 1 to 10 under its split from the seed's weights");
  // The live step's fingerprint alone (the branch took none) says nothing of equality.
  EXPECT_EQ(compare_began_words(9, 0, 77, 9), "· the branch began from the live run's state before this step");
}

}  // namespace
}  // namespace onegpu::app
