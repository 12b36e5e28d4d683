#include <iterator>
#include <string_view>

#include "app/chapters/box_chapters.h"
#include "app/chapters/chapter.h"
#include "app/chapters/dp_chapters.h"
#include "app/chapters/expert_chapters.h"
#include "app/chapters/field_chapter.h"
#include "app/chapters/finale_chapters.h"
#include "app/chapters/learning_chapters.h"
#include "app/chapters/memory_chapters.h"
#include "app/chapters/pipeline_chapters.h"
#include "app/chapters/scale_chapters.h"
#include "app/chapters/split_experts_chapter.h"
#include "app/story.h"

namespace onegpu::app {

namespace {

template <class C, auto... Args>
std::unique_ptr<Chapter> make() { return std::make_unique<C>(Args...); }

// Which scene draws each chapter of the story (app/story.cpp), by the chapter's id. Every id
// of the story appears here exactly once (tests/app/story_test.cpp holds that).
struct SceneOf {
  std::string_view id;
  std::unique_ptr<Chapter> (*make)();
};
constexpr SceneOf kScenes[] = {
    {"field", make<FieldChapter>},
    {"gpu", make<GpuChapter>},
    {"open", make<OpenChapter>},
    {"weights", make<WeightsChapter>},
    {"next-token", make<LearningChapter, LearningScene::NextToken>},
    {"guess", make<LearningChapter, LearningScene::Guess>},
    {"gradients", make<LearningChapter, LearningScene::Gradients>},
    {"step", make<LearningChapter, LearningScene::Step>},
    {"microbatches", make<LearningChapter, LearningScene::Microbatches>},
    {"train", make<LearningChapter, LearningScene::Train>},
    {"slow", make<LearningChapter, LearningScene::Slow>},
    {"new-run", make<LearningChapter, LearningScene::NewRun>},
    {"inside-layer", make<InsideLayerChapter>},
    {"second-gpu", make<CopyChapter>},
    {"different-text", make<DifferentTextChapter>},
    {"sync", make<SyncChapter>},
    {"split-experts", make<SplitExpertsChapter>},
    {"tokens", make<TokensChapter>},
    {"bigger", make<MemoryChapter, false>},
    {"oom", make<MemoryChapter, true>},
    {"stages", make<StagesChapter>},
    {"wait", make<WaitChapter>},
    {"back-to-back", make<BackToBackChapter>},
    {"deeper", make<DeeperChapter>},
    {"wider", make<WiderChapter>},
    {"step-64", make<Step64Chapter>},
    {"copies", make<CopiesChapter>},
    {"again", make<AgainChapter>},
    {"one-of-512", make<OneOf512Chapter>},
};

}  // namespace

int scene_count() { return static_cast<int>(std::size(kScenes)); }

std::unique_ptr<Chapter> make_chapter(int index) {
  const auto& s = story();
  if (index < 0 || index >= static_cast<int>(s.size())) return nullptr;
  for (const SceneOf& scene : kScenes)
    if (scene.id == s[index].id) return scene.make();
  return nullptr;
}

}  // namespace onegpu::app
