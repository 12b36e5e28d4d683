#include "app/cli/asset_files.h"

#include <cstdlib>
#include <mutex>
#include <system_error>

#include "trainer/data/story_corpus.h"

namespace onegpu::cli {

namespace fs = std::filesystem;

namespace {

fs::path exe_dir() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : p.parent_path();
}

}  // namespace

fs::path assets_dir() {
  if (const char* env = std::getenv("ONEGPU_ASSETS"); env && *env) return env;
  std::error_code ec;
  if (fs::is_directory(exe_dir() / "assets", ec)) return exe_dir() / "assets";
#ifdef ONEGPU_ASSETS_DIR
  return ONEGPU_ASSETS_DIR;
#else
  return "assets";
#endif
}

std::shared_ptr<const trainer::StoryWords> story_words() {
  static std::mutex mu;
  static std::shared_ptr<const trainer::StoryWords> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (!loaded)
    loaded = std::make_shared<const trainer::StoryWords>(trainer::load_story_words(assets_dir() / "corpus" / "story.json"));
  return loaded;
}

trainer::Corpus training_corpus(const std::string& corpus_file) {
  if (!corpus_file.empty()) return trainer::load_text_corpus(corpus_file);
  trainer::StoryCorpusOptions o;
  o.words = story_words();
  return trainer::generate_story_corpus(o);
}

}  // namespace onegpu::cli
