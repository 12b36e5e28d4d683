#include "app/chapters/box_chapters.h"
#include "app/chapters/chapter.h"
#include "app/chapters/coming_soon_chapter.h"
#include "app/chapters/field_chapter.h"

namespace onegpu::app {

std::unique_ptr<Chapter> make_chapter(int index) {
  const auto& s = story();
  if (index < 0 || index >= static_cast<int>(s.size())) return nullptr;
  if (s[index].id == "field") return std::make_unique<FieldChapter>();
  if (s[index].id == "gpu") return std::make_unique<GpuChapter>();
  if (s[index].id == "open") return std::make_unique<OpenChapter>();
  if (s[index].id == "weights") return std::make_unique<WeightsChapter>();
  return std::make_unique<ComingSoonChapter>(index);
}

}  // namespace onegpu::app
