// The story corpus's words-file reader (trainer::parse_story_words, assets/corpus/story.json) on
// arbitrary text: lists the generator can draw from, or one trainer::Error, never a crash. When
// a file is accepted, one story is written from it: every brace the reader let through must be
// a slot the generator fills (an unclosed one would loop forever there).
#include <cstdint>
#include <memory>
#include <string_view>

#include "trainer/data/story_corpus.h"
#include "trainer/data/story_words.h"
#include "trainer/error.h"

using namespace onegpu;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    auto w = std::make_shared<const trainer::StoryWords>(
        trainer::parse_story_words(std::string_view(reinterpret_cast<const char*>(data), size), "story words fuzz"));
    trainer::StoryCorpusOptions o;
    o.words = w;
    for (std::uint64_t seed = 1; seed <= 4; ++seed)
      if (trainer::generate_story(seed, o).find_first_of("{}") != std::string::npos) __builtin_trap();
  } catch (const trainer::Error&) {
  }
  return 0;
}
