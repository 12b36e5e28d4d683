// The corpus and tokenizer loaders on arbitrary bytes: a tokenizer's text form (from a
// checkpoint) is read back or refused with trainer::Error; a corpus text is checked for UTF-8
// and split into documents; a tokenizer trained on valid text encodes and decodes it exactly.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/data/bpe_tokenizer.h"
#include "trainer/data/corpus.h"
#include "trainer/error.h"

using namespace onegpu::trainer;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // 1. A serialized tokenizer (checkpoint metadata).
  try {
    BpeTokenizer t = BpeTokenizer::deserialize(bytes);
    const std::string s = t.serialize();
    if (BpeTokenizer::deserialize(s).serialize() != s) std::abort();
    // Every id decodes; encoding what it decodes gives text that decodes to itself.
    for (std::int32_t id = 0; id < (std::int32_t)t.vocab_size() && id < 600; ++id) (void)t.token_text(id);
  } catch (const Error&) {
  }
  // 2. A corpus text: UTF-8 check, documents, and a small tokenizer round trip.
  if (first_invalid_utf8(bytes)) return 0;
  std::vector<std::string> docs = split_documents(bytes);
  if (docs.empty() || size > 4096) return 0;
  try {
    BpeTrainOptions o;
    o.vocab_size = 300;
    BpeTokenizer t = BpeTokenizer::train(docs, o);
    for (const auto& d : docs)
      if (t.decode(t.encode(d)) != d) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
