#pragma once
// Text corpora for training: the generated story corpus (story_corpus.h) and any UTF-8 file
// (load_text_corpus). A corpus is a list of documents, split into train and held-out parts that
// share no document.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/error.h"

namespace onegpu::trainer {

struct Corpus {
  std::vector<std::string> train;
  std::vector<std::string> heldout;

  std::size_t train_bytes() const;
  std::size_t heldout_bytes() const;
};

// Offset of the first byte that is not part of valid UTF-8 (overlong forms, surrogates and
// code points above U+10FFFF are invalid), or nullopt when all of s is valid.
std::optional<std::size_t> first_invalid_utf8(std::string_view s);

// Splits text into documents at blank lines (lines empty or holding only spaces, tabs or '\r').
// Documents keep their inner text byte for byte, without the surrounding blank lines.
std::vector<std::string> split_documents(std::string_view text);

// Holds out about `heldout_fraction` of the documents (every k-th one, so the split is
// deterministic and spread through the text), at least one in each part. With a single
// document, the text is cut at a line (or space, or character) boundary instead.
// Throws Error when there is too little text to make both parts non-empty, or the fraction is
// not in (0, 1).
Corpus split_heldout(std::vector<std::string> documents, double heldout_fraction = 0.05);

// `--corpus FILE`: reads any UTF-8 text (a leading byte-order mark is dropped), splits it into
// documents and a held-out part. Errors (onegpu::trainer::Error, naming the path): the file is
// missing or unreadable, empty (or only whitespace), or has a byte that is not UTF-8
// ("... is not UTF-8: invalid byte 0xff at offset 1234").
Corpus load_text_corpus(const std::string& path, double heldout_fraction = 0.05);

}  // namespace onegpu::trainer
