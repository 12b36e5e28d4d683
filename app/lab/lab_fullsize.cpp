// The Lab's full-size panel: ZeRO-1 for the live run, and for any split of the full-size
// model (trainer/memory/full_size.h) what one GPU would hold, by category and sharding,
// against an H100 and an H200, with the step's modelled time and traffic. Nothing here is
// measured: every figure is labelled modelled.
#include <algorithm>
#include <cstdio>
#include <string>

#include <imgui.h>

#include "app/lab/lab.h"
#include "app/lab/lab_flow.h"
#include "app/scene/full_size_bars.h"
#include "app/ui/imgui_colour.h"
#include "render/palette.h"
#include "trainer/error.h"

namespace onegpu::app {

namespace {

// The split the panel models: the story's 512 GPUs until the user changes it.
struct FullSizeEdit {
  trainer::FootprintSplit split = trainer::full_size_split();
  int gpu = 1;  // 1-based, as the story counts GPUs
};
FullSizeEdit& edit() {
  static FullSizeEdit e;
  return e;
}

void int_input(const char* label, int* v, int lo, int hi, float w) {
  ImGui::SetNextItemWidth(w);
  if (ImGui::InputInt(label, v)) *v = std::clamp(*v, lo, hi);
}

}  // namespace

void Lab::full_size_panel(float s, const LabFonts& fonts) {
  ImGui::Spacing();
  ImGui::PushStyleColor(ImGuiCol_Text, im(render::palette::forward));
  ImGui::PushFont(fonts.small);
  ImGui::SetNextItemOpen(true, ImGuiCond_FirstUseEver);
  const bool open = ImGui::CollapsingHeader("FULL SIZE · MODELLED");
  ImGui::PopFont();
  ImGui::PopStyleColor();
  if (!open) return;
  ImGui::PushFont(fonts.small);
  ImGui::PushTextWrapPos(0.0f);

  // ZeRO-1 for the live run: applied with the configuration (Apply above).
  bool zero1 = edit_.zero == 1;
  if (ImGui::Checkbox("ZeRO-1 for this run (Apply to use)", &zero1)) edit_.zero = zero1 ? 1 : 0;
  words_dim("splits the fp32 master and Adam moments over the copies: reduce-scatter, update a piece, all-gather");

  ImGui::Spacing();
  FullSizeEdit& e = edit();
  const float w = 96.0f * s;
  ImGui::TextUnformatted("The 1.2 T model, split as:");
  int_input("pp", &e.split.pp, 1, 64, w);
  ImGui::SameLine();
  int_input("dp", &e.split.dp, 1, 4096, w);
  int_input("ep", &e.split.ep, 1, 64, w);
  ImGui::SameLine();
  int_input("microbatches", &e.split.microbatches, 1, 1024, w);
  int_input("GPU", &e.gpu, 1, e.split.pp * e.split.dp, w);
  ImGui::SameLine();
  if (ImGui::SmallButton("the story's 512")) e = FullSizeEdit{};

  trainer::ShareFigures f;
  try {
    f = trainer::share_figures(trainer::full_size_model(), e.split, std::clamp(e.gpu, 1, e.split.pp * e.split.dp) - 1,
                               trainer::full_size_storage(), trainer::h100());
  } catch (const trainer::Error& err) {
    words_in(im(render::palette::backward), err.what());
    ImGui::PopTextWrapPos();
    ImGui::PopFont();
    return;
  }
  const trainer::GpuModel gpus[2] = {trainer::h100(), trainer::h200()};
  words_dim("GPU %d holds %.1f B of the %.2f T weights (modelled)", e.gpu, f.zero[0].params / 1e9, f.model_params / 1e12);
  for (int i = 0; i < FullSizeBars::kRows; ++i) {
    const trainer::RankFootprint& r = FullSizeBars::row(f, i);
    std::string fits;
    for (const trainer::GpuModel& g : gpus)
      if (r.total() <= g.memory_bytes) fits += (fits.empty() ? "fits " : ", ") + g.name;
    words_coloured(im(fits.empty() ? render::palette::backward : render::palette::text), "%-18s %9s  %s",
                   FullSizeBars::row_name(i).c_str(), gigabytes((double)r.total()).c_str(),
                   fits.empty() ? "does not fit" : fits.c_str());
    using trainer::MemCategory;
    words_dim("   weights %s · grads %s · optimizer %s · activations %s · buffers %s",
              gigabytes((double)r[MemCategory::Weights]).c_str(), gigabytes((double)r[MemCategory::Gradients]).c_str(),
              gigabytes((double)r[MemCategory::Optimizer]).c_str(),
              gigabytes((double)r[MemCategory::Activations]).c_str(),
                        gigabytes((double)r[MemCategory::Communication]).c_str());
  }
  for (const trainer::GpuModel& g : gpus) {
    const std::string how = trainer::what_fits(f, g);
    words("To fit an %s (%.0f GB): %s", g.name.c_str(), g.memory_bytes / 1e9,
          how.empty() ? "none of these; more GPUs or a deeper pipeline" : how.c_str());
  }
  words_dim("One step (modelled): %.2f x 10^18 FLOPs over %d GPUs at %.0f%% of %.0f TFLOP/s: %.1f s",
            f.flops_per_step / 1e18, f.gpus, 100.0 * f.utilisation, f.peak_flops / 1e12, f.step_seconds);
  for (const trainer::CollectiveFigure& c : f.collectives)
    words_dim("%s: %s over %s x%lld, %.2f s (modelled)", c.what.c_str(), gigabytes((double)c.sent_bytes).c_str(),
              c.link.c_str(), (long long)c.calls, c.seconds);
  ImGui::PopTextWrapPos();
  ImGui::PopFont();
}

}  // namespace onegpu::app
