#include "app/run/field_plan.h"

#include "app/run/posted.h"
#include "trainer/memory/tracker.h"
#include "trainer/model/config.h"
#include "trainer/model/params.h"

namespace onegpu::app {

namespace {
trainer::RunConfig storyboard_run() {
  const trainer::ModelConfig m = trainer::model_preset("scale");
  trainer::RunConfig c;
  c.layers = m.n_layers;
  c.experts = m.n_experts;
  c.top_k = m.top_k;
  c.pp = 8;
  c.dp = 64;
  c.ep = 8;
  c.microbatches = 8;
  return c;
}
}  // namespace

FieldPlan::FieldPlan() : layout_(storyboard_run()) {}

int FieldPlan::rank_of_cell(const FieldCell& cell) const {
  // Block = expert-parallel group, row = stage, column = expert slice.
  return layout_.rank_of(cell.stage, cell.replica * ep() + cell.column);
}

int FieldPlan::cell_of_rank(int rank) const {
  const trainer::RankCoord c = layout_.coord(rank);
  const int side = FieldLayout::kBlockSide;
  return c.ep_group * side * side + c.stage * side + c.ep;
}

GpuShare FieldPlan::share_of_cell(const FieldCell& cell) const {
  GpuShare s;
  s.rank = rank_of_cell(cell);
  const trainer::RankCoord c = layout_.coord(s.rank);
  s.stage = c.stage;
  s.copy = c.dp;
  s.first_layer = layout_.first_layer(c.stage);
  s.end_layer = layout_.end_layer(c.stage);
  s.first_expert = layout_.first_expert(s.rank);
  s.end_expert = s.first_expert + layout_.expert_count();
  return s;
}

ShareBytes share_bytes(const GpuShare& share) {
  const trainer::ModelConfig m = trainer::model_preset("scale");
  trainer::ParamShard sh;
  sh.layers.assign(static_cast<std::size_t>(m.n_layers), false);
  for (int l = share.first_layer; l < share.end_layer; ++l) sh.layers[static_cast<std::size_t>(l)] = true;
  sh.first_expert = share.first_expert;
  sh.expert_count = share.end_expert - share.first_expert;
  sh.embedding = share.first_layer == 0;
  sh.head = share.end_layer == m.n_layers;
  trainer::MemoryTracker t;
  trainer::ParamStore store(m, t, sh);
  ShareBytes b;
  b.params = store.count();
  b.weights = t.current(trainer::MemCategory::Weights);
  b.gradients = t.current(trainer::MemCategory::Gradients);
  b.optimizer = t.current(trainer::MemCategory::Optimizer);
  return b;
}

const FieldPlan& field_plan() {
  static const FieldPlan plan;  // a layout only: made at once, on whichever thread asks first
  return plan;
}

namespace {
PostedValue<ShareBytes>& posted_gpu_one() {
  static PostedValue<ShareBytes> v;
  if (!v.posted())
    v.post("512 GPUs: building GPU 1's share of the scale model",
           [] { return share_bytes(field_plan().share_of_cell(FieldLayout(512).cell(0))); });
  return v;
}
}  // namespace

const ShareBytes* gpu_one_share_bytes_ready() { return posted_gpu_one().ready(); }
const ShareBytes& gpu_one_share_bytes() { return posted_gpu_one().wait(); }
std::string gpu_one_share_bytes_activity() { return posted_activity(posted_gpu_one()); }

}  // namespace onegpu::app
