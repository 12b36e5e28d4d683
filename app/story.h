#pragma once
// The story's chapters in order: stable short ids, the part each belongs to, a title and a
// caption (all in the program's own words), and its button if it has one.
#include <string_view>
#include <vector>

namespace onegpu::app {

struct ChapterInfo {
  std::string_view id;
  std::string_view part;
  std::string_view title;
  std::string_view caption;
  std::string_view action;  // the chapter's button, empty when it has none
};

const std::vector<ChapterInfo>& story();
int find_chapter(std::string_view id);  // index, or -1
std::string_view first_chapter_id();

}  // namespace onegpu::app
