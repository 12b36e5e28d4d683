#include "app/live/comm_ledger.h"

namespace onegpu::app {

using trainer::EventKind;

const char* transfer_name(Transfer t) {
  static const char* names[] = {"pipeline: activations", "pipeline: gradients", "all-to-all (experts)",
                                "all-reduce: dense gradients", "all-reduce: expert gradients", "broadcast: weights"};
  static_assert(std::size(names) == kTransfers);
  return names[(int)t];
}

std::vector<double> ledger_formulas(const trainer::RunConfig& c) {
  const trainer::PlanSizes& z = c.sizes;
  const double A = (double)z.tokens_per_microbatch * (double)z.d_model * (double)z.activation_bytes_per_value;
  const double d = (double)z.d_model, m = c.microbatches, dp = c.dp, ep = c.ep;
  // Parameter counts as the plan takes them (defaults derived from d when the model is silent).
  const double dense_layer = z.dense_params_per_layer ? (double)z.dense_params_per_layer : 4 * d * d + 2 * d + d * c.experts;
  const double expert = z.params_per_expert ? (double)z.params_per_expert : 8 * d * d;
  const double dense_all = dense_layer * c.layers + (double)z.embedding_params + (double)z.head_params;
  std::vector<double> f(kTransfers, -1.0);
  const double boundaries = (double)(c.chunks() - 1);
  f[(int)Transfer::Activations] = boundaries * m * dp * A;
  f[(int)Transfer::Gradients] = boundaries * m * dp * A;
  f[(int)Transfer::AllToAll] = ep > 1 ? 4.0 * c.layers * m * dp * (ep - 1) / ep * c.top_k * A : 0.0;
  // Ring all-reduce: every rank sends 2 (n - 1)/n of its gradient bytes. Dense weights: each
  // stage's copies (n = dp) hold the whole model between them once per copy.
  f[(int)Transfer::AllReduceDense] = 2.0 * (dp - 1) / dp * dp * dense_all * (double)z.grad_bytes_per_param;
  const double ne = dp / ep;  // copies of one expert
  f[(int)Transfer::AllReduceExpert] =
      2.0 * (ne - 1) / ne * dp * c.layers * (double)c.experts_per_rank() * expert * (double)z.grad_bytes_per_param;
  return f;
}

CommLedger comm_ledger(const trainer::Plan& plan, const RunStep& s, int ranks_per_node) {
  CommLedger L;
  L.rows.resize(kTransfers);
  for (int i = 0; i < kTransfers; ++i) L.rows[(std::size_t)i].what = (Transfer)i;
  const std::vector<double> f = ledger_formulas(plan.config);
  for (int i = 0; i < kTransfers; ++i) L.rows[(std::size_t)i].predicted = f[(std::size_t)i];
  auto node = [&](int r) { return r / std::max(1, ranks_per_node); };
  for (const OpSpan& o : s.ops) {
    if (o.id >= plan.ops.size()) continue;
    const trainer::Op& op = plan.op(o.id);
    Transfer t;
    double wire = (double)o.bytes;
    bool between = false;
    if (o.kind == EventKind::Send) {
      t = op.payload == trainer::Payload::Gradient ? Transfer::Gradients : Transfer::Activations;
      between = node(op.rank) != node(op.peer);
    } else if (op.is_collective() && (o.kind == EventKind::AllReduce || o.kind == EventKind::AllToAll ||
                                      o.kind == EventKind::Broadcast)) {
      const trainer::Collective& c = plan.collectives[(std::size_t)op.collective];
      const double n = (double)c.ranks.size();
      for (int r : c.ranks) between |= node(r) != node(c.ranks.front());
      if (o.kind == EventKind::AllReduce) {
        t = op.group == trainer::Group::Expert ? Transfer::AllReduceExpert : Transfer::AllReduceDense;
        wire *= 2 * (n - 1) / n;
      } else if (o.kind == EventKind::AllToAll) {
        t = Transfer::AllToAll;
        wire *= (n - 1) / n;
      } else {
        t = Transfer::Broadcast;
        if (op.rank == op.peer || n < 2) wire = 0;  // the root keeps its copy
      }
    } else {
      continue;
    }
    LedgerRow& row = L.rows[(std::size_t)t];
    ++row.ops;
    (between ? row.between : row.inside) += wire;
  }
  for (const LedgerRow& r : L.rows)
    if (r.predicted >= 0) L.measured += r.measured(), L.predicted += r.predicted;
  return L;
}

}  // namespace onegpu::app
