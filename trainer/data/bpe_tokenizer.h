#pragma once
// Byte-level byte-pair-encoding tokenizer.
//
// Ids 0..255 are the raw bytes; ids 256.. are learned merges, in the order learned; the last id
// is a special end-of-text token that encode() never produces (use encode_documents(), or add
// eot_id() yourself, to mark document boundaries). decode(encode(s)) == s for every byte string.
//
// Before merging, text is cut into pieces GPT-2 style so a leading space stays with the word
// that follows it: "Once upon a time" -> "Once", " upon", " a", " time". Merges never cross
// piece boundaries, so after training on the story corpus " time" is one token.
// Pieces: [optional space] + a run of letters (ASCII letters and every byte >= 0x80, so UTF-8
// words hold together) | [optional space] + a run of digits | [optional space] + a run of other
// visible characters | a run of whitespace (whose last space, if followed by a non-space, goes
// to the next piece). A piece longer than 64 bytes is cut into 64-byte parts.
// A trained tokenizer is immutable: its const methods may be called from many threads at once.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trainer/error.h"

namespace onegpu::trainer {

struct BpeTrainOptions {
  // Total vocabulary including the 256 byte tokens and the end-of-text token. At least 257.
  std::size_t vocab_size = 1024;
  // Stop early when the most frequent pair occurs fewer times than this (vocab_size() is then
  // smaller than asked for).
  std::int64_t min_pair_count = 2;
};

class BpeTokenizer {
 public:
  // A tokenizer with no merges: 256 byte tokens + end-of-text.
  BpeTokenizer();

  // Learns merges from documents. Deterministic: ties between equally frequent pairs go to the
  // pair with the smaller (left id, right id). Throws Error for vocab_size < 257.
  static BpeTokenizer train(std::span<const std::string> documents,
                            const BpeTrainOptions& options = {});

  std::vector<std::int32_t> encode(std::string_view text) const;
  // Each document encoded, followed by eot_id(), all in one stream. Several times faster than
  // calling encode() per document (encoded words are remembered across documents). When
  // doc_starts is given, it receives each document's first token index.
  std::vector<std::int32_t> encode_documents(std::span<const std::string> documents,
                                             std::vector<std::int64_t>* doc_starts = nullptr) const;
  // Byte-exact inverse of encode; eot_id() decodes to nothing. Throws Error for an id outside
  // the vocabulary.
  std::string decode(std::span<const std::int32_t> ids) const;

  std::size_t vocab_size() const { return tokens_.size() + 1; }  // bytes + merges + eot
  std::size_t merge_count() const { return merges_.size(); }
  std::int32_t eot_id() const { return static_cast<std::int32_t>(tokens_.size()); }

  // The bytes of one token ("<|endoftext|>" for eot_id()); Error for an id out of range.
  std::string token_text(std::int32_t id) const;
  // The id of the token whose bytes are exactly `text`, or -1 if no single token is.
  std::int32_t token_id(std::string_view text) const;

  // A compact text form (stored in a checkpoint's metadata) and back. deserialize throws Error
  // for anything malformed: bad header, counts that disagree, a merge naming an id not yet
  // defined, a duplicate merge, trailing garbage.
  std::string serialize() const;
  static BpeTokenizer deserialize(std::string_view data);

  // The pieces text is cut into before merging (views into `text`). Exposed for tests and
  // for pictures of tokenization.
  static std::vector<std::string_view> pretokenize(std::string_view text);

  const std::vector<std::pair<std::int32_t, std::int32_t>>& merges() const { return merges_; }

  friend bool operator==(const BpeTokenizer& a, const BpeTokenizer& b) {
    return a.merges_ == b.merges_;
  }

 private:
  void add_merge(std::int32_t a, std::int32_t b);
  void encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const;
  struct PieceCache;  // pieces already encoded within one call
  void encode_into(std::string_view text, std::vector<std::int32_t>& out, PieceCache& cache) const;

  std::vector<std::pair<std::int32_t, std::int32_t>> merges_;
  std::vector<std::string> tokens_;                                   // id -> bytes
  std::unordered_map<std::uint64_t, std::int32_t> merge_rank_;       // (a,b) -> merge index
  std::unordered_map<std::string, std::int32_t> id_of_;              // bytes -> id
};

}  // namespace onegpu::trainer
