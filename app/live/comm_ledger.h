#pragma once
// The communication ledger of one step: the bytes each kind of transfer moved, split by link
// class (inside a node, between nodes), beside what the textbook formulas predict from the
// run's configuration alone:
//   pipeline sends   2 (chunks - 1) m dp A        (an activation forward and its gradient
//                                                   back at every chunk boundary; A = one
//                                                   microbatch's hidden states)
//   all-to-all       4 L m dp (ep - 1)/ep k A     (dispatch and combine, forward and backward,
//                                                   each member keeping 1/ep of its rows)
//   all-reduce       2 (n - 1)/n G per rank        (ring: reduce-scatter then all-gather of
//                                                   the G gradient bytes the rank holds;
//                                                   n = dp for dense weights, dp/ep for experts)
// "Measured" adds up the step's own spans (each op's bytes as the engine reported them), with
// a collective's bytes on the wire per member by the same ring rule for its real member count.
// The weights' broadcast (the first step only) has no prediction.
#include <cstdint>
#include <string>
#include <vector>

#include "app/live/run_state.h"
#include "trainer/plan/plan.h"

namespace onegpu::app {

enum class Transfer { Activations, Gradients, AllToAll, AllReduceDense, AllReduceExpert, Broadcast };
inline constexpr int kTransfers = 6;
const char* transfer_name(Transfer t);

struct LedgerRow {
  Transfer what = Transfer::Activations;
  std::int64_t ops = 0;          // spans counted (a collective: one per member)
  double inside = 0, between = 0;  // bytes on the wire, by link class
  double predicted = -1;         // the formula's bytes (-1: none)
  double measured() const { return inside + between; }
};

struct CommLedger {
  std::vector<LedgerRow> rows;  // one per Transfer, in its order
  double measured = 0, predicted = 0;  // over the rows that have a prediction
  const LedgerRow& row(Transfer t) const { return rows[(std::size_t)t]; }
};

// The ledger of step `s` run with `plan`; ranks_per_node as the cost model counts machines.
CommLedger comm_ledger(const trainer::Plan& plan, const RunStep& s, int ranks_per_node = 8);

// The formulas alone, for a configuration (bytes per transfer, -1 where none applies).
std::vector<double> ledger_formulas(const trainer::RunConfig& c);

}  // namespace onegpu::app
