// Op kinds are spelled in one table (plan.h OpKindInfo): each kind has its row, names are
// unique, and the engine's event kind, the trace's label and describe() all come from it.
#include <gtest/gtest.h>

#include <set>

#include "trainer/plan/plan.h"

using namespace onegpu::trainer;

TEST(OpKinds, OneRowPerKindWithUniqueNames) {
  std::set<std::string_view> names, short_labels;
  for (int i = 0; i < kOpKindCount; ++i) {
    const auto k = static_cast<OpKind>(i);
    const OpKindInfo& info = op_kind_info(k);
    EXPECT_EQ(info.kind, k);
    EXPECT_EQ(to_string(k), info.name);
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_TRUE(short_labels.insert(info.short_label).second) << info.short_label;
  }
  EXPECT_EQ(op_kind_info(OpKind::BackwardInput).event, EventKind::Backward);
  EXPECT_EQ(op_kind_info(OpKind::BackwardWeight).event, EventKind::WeightGradient);
}

TEST(OpKinds, LabelsAreTheTablesPlusWhatTellsOpsApart) {
  Op op;
  op.kind = OpKind::Send;
  op.payload = Payload::Gradient;
  EXPECT_EQ(kind_label(op, false), "send grad");
  op.kind = OpKind::BackwardInput;
  EXPECT_EQ(kind_label(op, false), "Bi");
  EXPECT_EQ(kind_label(op, true), "B (input)");
  op.kind = OpKind::AllToAll;
  op.phase = AllToAllPhase::DispatchFwd;
  EXPECT_EQ(kind_label(op, false).rfind("a2a ", 0), 0u);
  EXPECT_EQ(kind_label(op, true).rfind("all-to-all ", 0), 0u);
}
