#include "app/chapters/box_chapters.h"
#include "app/chapters/chapter.h"
#include "app/chapters/coming_soon_chapter.h"
#include "app/chapters/dp_chapters.h"
#include "app/chapters/expert_chapters.h"
#include "app/chapters/field_chapter.h"
#include "app/chapters/finale_chapters.h"
#include "app/chapters/learning_chapters.h"
#include "app/chapters/memory_chapters.h"
#include "app/chapters/pipeline_chapters.h"
#include "app/chapters/scale_chapters.h"
#include "app/chapters/split_experts_chapter.h"

namespace onegpu::app {

std::unique_ptr<Chapter> make_chapter(int index) {
  const auto& s = story();
  if (index < 0 || index >= static_cast<int>(s.size())) return nullptr;
  if (s[index].id == "field") return std::make_unique<FieldChapter>();
  if (s[index].id == "gpu") return std::make_unique<GpuChapter>();
  if (s[index].id == "open") return std::make_unique<OpenChapter>();
  if (s[index].id == "weights") return std::make_unique<WeightsChapter>();
  if (s[index].id == "copies") return std::make_unique<CopiesChapter>();
  if (s[index].id == "again") return std::make_unique<AgainChapter>();
  if (s[index].id == "one-of-512") return std::make_unique<OneOf512Chapter>();
  const std::pair<const char*, LearningScene> learning[] = {
      {"next-token", LearningScene::NextToken}, {"guess", LearningScene::Guess},
      {"gradients", LearningScene::Gradients},  {"step", LearningScene::Step},
      {"microbatches", LearningScene::Microbatches}, {"train", LearningScene::Train},
      {"slow", LearningScene::Slow}, {"new-run", LearningScene::NewRun}};
  if (s[index].id == "inside-layer") return std::make_unique<InsideLayerChapter>();
  if (s[index].id == "sync") return std::make_unique<SyncChapter>();
  if (s[index].id == "second-gpu") return std::make_unique<CopyChapter>();
  if (s[index].id == "different-text") return std::make_unique<DifferentTextChapter>();
  if (s[index].id == "split-experts") return std::make_unique<SplitExpertsChapter>();
  if (s[index].id == "tokens") return std::make_unique<TokensChapter>();
  if (s[index].id == "bigger") return std::make_unique<MemoryChapter>(false);
  if (s[index].id == "oom") return std::make_unique<MemoryChapter>(true);
  if (s[index].id == "stages") return std::make_unique<StagesChapter>();
  if (s[index].id == "wait") return std::make_unique<WaitChapter>();
  if (s[index].id == "back-to-back") return std::make_unique<BackToBackChapter>();
  if (s[index].id == "deeper") return std::make_unique<DeeperChapter>();
  if (s[index].id == "wider") return std::make_unique<WiderChapter>();
  if (s[index].id == "step-64") return std::make_unique<Step64Chapter>();
  for (const auto& [id, scene] : learning)
    if (s[index].id == id) return std::make_unique<LearningChapter>(scene);
  return std::make_unique<ComingSoonChapter>(index);
}

}  // namespace onegpu::app
