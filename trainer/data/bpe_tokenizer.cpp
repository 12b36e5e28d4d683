#include "trainer/data/bpe_tokenizer.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <queue>
#include <unordered_set>

namespace onegpu::trainer {

namespace {

constexpr std::size_t kMaxPiece = 64;
constexpr std::string_view kEotText = "<|endoftext|>";
constexpr std::string_view kMagic = "onegpu-bpe 1\n";

std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

enum class Cls { Letter, Digit, Space, OtherSpace, Other };

Cls cls(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return Cls::Letter;
  if (c >= '0' && c <= '9') return Cls::Digit;
  if (c == ' ') return Cls::Space;
  if (c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return Cls::OtherSpace;
  return Cls::Other;
}

bool is_space(Cls c) { return c == Cls::Space || c == Cls::OtherSpace; }

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

std::vector<std::string_view> BpeTokenizer::pretokenize(std::string_view s) {
  std::vector<std::string_view> out;
  auto emit = [&](std::size_t b, std::size_t e) {
    while (e - b > kMaxPiece) {
      out.push_back(s.substr(b, kMaxPiece));
      b += kMaxPiece;
    }
    if (e > b) out.push_back(s.substr(b, e - b));
  };
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    std::size_t start = i;
    Cls c = cls(static_cast<unsigned char>(s[i]));
    if (is_space(c)) {
      std::size_t j = i;
      while (j < n && is_space(cls(static_cast<unsigned char>(s[j])))) ++j;
      if (j == n || s[j - 1] != ' ') {  // whitespace to the end, or not ending in a space
        emit(i, j);
        i = j;
        continue;
      }
      // The run's last space goes with the word after it.
      emit(i, j - 1);
      start = j - 1;
      i = j;
      c = cls(static_cast<unsigned char>(s[i]));
    }
    std::size_t j = i;
    while (j < n && cls(static_cast<unsigned char>(s[j])) == c) ++j;
    emit(start, j);
    i = j;
  }
  return out;
}

BpeTokenizer::BpeTokenizer() {
  tokens_.reserve(256);
  for (int b = 0; b < 256; ++b) {
    tokens_.emplace_back(1, static_cast<char>(b));
    id_of_.emplace(tokens_.back(), b);
  }
}

void BpeTokenizer::add_merge(std::int32_t a, std::int32_t b) {
  const auto id = static_cast<std::int32_t>(tokens_.size());
  merge_rank_.emplace(pair_key(a, b), static_cast<std::int32_t>(merges_.size()));
  merges_.emplace_back(a, b);
  tokens_.push_back(tokens_[a] + tokens_[b]);
  id_of_.emplace(tokens_.back(), id);  // keeps the first id if two merges spell the same bytes
}

BpeTokenizer BpeTokenizer::train(std::span<const std::string> documents,
                                 const BpeTrainOptions& options) {
  if (options.vocab_size < 257)
    throw Error("tokenizer vocabulary size must be at least 257 (256 bytes + end-of-text), got " +
                std::to_string(options.vocab_size));
  if (options.vocab_size > (std::size_t{1} << 30))
    throw Error("tokenizer vocabulary size " + std::to_string(options.vocab_size) + " is too large");
  BpeTokenizer tok;
  const std::size_t target_merges = options.vocab_size - 257;
  if (target_merges == 0) return tok;

  // Unique pieces and how often each occurs.
  std::unordered_map<std::string_view, std::int64_t> piece_count;
  for (const auto& d : documents)
    for (std::string_view p : pretokenize(d)) ++piece_count[p];
  std::vector<std::pair<std::string_view, std::int64_t>> uniq(piece_count.begin(), piece_count.end());
  std::sort(uniq.begin(), uniq.end());  // a fixed order, independent of hashing

  std::vector<std::vector<std::int32_t>> words(uniq.size());
  std::vector<std::int64_t> freq(uniq.size());
  std::unordered_map<std::uint64_t, std::int64_t> count;             // pair -> occurrences
  std::unordered_map<std::uint64_t, std::vector<std::int32_t>> where;  // pair -> words (may be stale)
  for (std::size_t w = 0; w < uniq.size(); ++w) {
    freq[w] = uniq[w].second;
    for (unsigned char c : uniq[w].first) words[w].push_back(c);
    const auto& s = words[w];
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
      const auto k = pair_key(s[i], s[i + 1]);
      count[k] += freq[w];
      auto& wl = where[k];
      if (wl.empty() || wl.back() != static_cast<std::int32_t>(w)) wl.push_back(static_cast<std::int32_t>(w));
    }
  }

  // Max-heap of (count, pair) with stale entries skipped when popped. Ties: smaller pair first.
  using Entry = std::pair<std::int64_t, std::uint64_t>;
  auto worse = [](const Entry& x, const Entry& y) {
    return x.first != y.first ? x.first < y.first : x.second > y.second;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(worse)> heap(worse);
  for (const auto& [k, c] : count) heap.emplace(c, k);

  std::vector<std::uint64_t> touched;
  while (tok.merges_.size() < target_merges && !heap.empty()) {
    const auto [c, key] = heap.top();
    heap.pop();
    auto it = count.find(key);
    if (it == count.end() || it->second != c) continue;  // stale
    if (c < options.min_pair_count) break;
    const auto a = static_cast<std::int32_t>(key >> 32);
    const auto b = static_cast<std::int32_t>(key & 0xffffffffu);
    const auto m = static_cast<std::int32_t>(tok.tokens_.size());
    tok.add_merge(a, b);

    touched.clear();
    std::vector<std::int32_t> wl = std::move(where[key]);
    where.erase(key);
    for (std::int32_t w : wl) {
      auto& s = words[w];
      bool has = false;
      for (std::size_t i = 0; i + 1 < s.size(); ++i)
        if (s[i] == a && s[i + 1] == b) {
          has = true;
          break;
        }
      if (!has) continue;
      const std::int64_t f = freq[w];
      for (std::size_t i = 0; i + 1 < s.size(); ++i) {
        const auto k = pair_key(s[i], s[i + 1]);
        count[k] -= f;
        touched.push_back(k);
      }
      std::vector<std::int32_t> merged;
      merged.reserve(s.size());
      for (std::size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          merged.push_back(m);
          i += 2;
        } else {
          merged.push_back(s[i++]);
        }
      }
      s = std::move(merged);
      for (std::size_t i = 0; i + 1 < s.size(); ++i) {
        const auto k = pair_key(s[i], s[i + 1]);
        count[k] += f;
        touched.push_back(k);
        if (s[i] == m || s[i + 1] == m) {  // only pairs with the new token are new to this word
          auto& nl = where[k];
          if (nl.empty() || nl.back() != w) nl.push_back(w);
        }
      }
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (auto k : touched) {
      auto ct = count.find(k);
      if (ct == count.end()) continue;
      if (ct->second <= 0) {
        count.erase(ct);
      } else {
        heap.emplace(ct->second, k);
      }
    }
    count.erase(key);
  }
  return tok;
}

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const {
  std::vector<std::int32_t> s(piece.size());
  for (std::size_t i = 0; i < piece.size(); ++i) s[i] = static_cast<unsigned char>(piece[i]);
  while (s.size() > 1) {
    // The adjacent pair learned earliest is merged first, everywhere in the piece.
    std::int32_t best = -1;
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
      auto it = merge_rank_.find(pair_key(s[i], s[i + 1]));
      if (it != merge_rank_.end() && (best < 0 || it->second < best)) best = it->second;
    }
    if (best < 0) break;
    const auto [a, b] = merges_[best];
    const std::int32_t m = 256 + best;
    std::size_t o = 0;
    for (std::size_t i = 0; i < s.size();) {
      if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
        s[o++] = m;
        i += 2;
      } else {
        s[o++] = s[i++];
      }
    }
    s.resize(o);
  }
  out.insert(out.end(), s.begin(), s.end());
}

// Pieces already encoded in this call: where their tokens sit in the output.
struct BpeTokenizer::PieceCache
    : std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>> {};

void BpeTokenizer::encode_into(std::string_view text, std::vector<std::int32_t>& out,
                               PieceCache& cache) const {
  for (std::string_view p : pretokenize(text)) {
    auto it = cache.find(p);
    if (it != cache.end()) {
      const auto [at, len] = it->second;
      for (std::size_t i = 0; i < len; ++i) out.push_back(out[at + i]);
      continue;
    }
    const std::size_t at = out.size();
    encode_piece(p, out);
    if (cache.size() < 200000) cache.emplace(p, std::make_pair(at, out.size() - at));
  }
}

std::vector<std::int32_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> out;
  out.reserve(text.size() / 3 + 1);
  PieceCache cache;
  encode_into(text, out, cache);
  return out;
}

std::vector<std::int32_t> BpeTokenizer::encode_documents(std::span<const std::string> documents,
                                                         std::vector<std::int64_t>* doc_starts) const {
  std::vector<std::int32_t> out;
  std::size_t bytes = 0;
  for (const auto& d : documents) bytes += d.size();
  out.reserve(bytes / 3 + documents.size());
  PieceCache cache;  // shared by all documents: most words repeat across them
  if (doc_starts) doc_starts->clear();
  for (const auto& d : documents) {
    if (doc_starts) doc_starts->push_back(static_cast<std::int64_t>(out.size()));
    encode_into(d, out, cache);
    out.push_back(eot_id());
  }
  return out;
}

std::string BpeTokenizer::decode(std::span<const std::int32_t> ids) const {
  std::string out;
  for (std::int32_t id : ids) {
    if (id == eot_id()) continue;
    if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size())
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " +
                  std::to_string(vocab_size()));
    out += tokens_[id];
  }
  return out;
}

std::string BpeTokenizer::token_text(std::int32_t id) const {
  if (id == eot_id()) return std::string(kEotText);
  if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size())
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " +
                std::to_string(vocab_size()));
  return tokens_[id];
}

std::int32_t BpeTokenizer::token_id(std::string_view text) const {
  auto it = id_of_.find(std::string(text));
  return it == id_of_.end() ? -1 : it->second;
}

std::string BpeTokenizer::serialize() const {
  std::string body(kMagic);
  body += "merges " + std::to_string(merges_.size()) + "\n";
  for (const auto& [a, b] : merges_) {
    body += std::to_string(a);
    body += ' ';
    body += std::to_string(b);
    body += '\n';
  }
  char check[40];
  std::snprintf(check, sizeof check, "check %016llx\n", static_cast<unsigned long long>(fnv1a(body)));
  return body + check;
}

BpeTokenizer BpeTokenizer::deserialize(std::string_view data) {
  auto bad = [](const std::string& what) { return Error("corrupt tokenizer data: " + what); };
  if (data.substr(0, kMagic.size()) != kMagic) throw bad("it does not start with \"onegpu-bpe 1\"");
  // The checksum covers everything before its line, so any flipped byte is caught.
  const std::size_t check_at = data.rfind("check ");
  if (check_at == std::string_view::npos || check_at == 0 || data[check_at - 1] != '\n')
    throw bad("no checksum line");
  {
    // Compared as text, so even a flipped letter case in the hex digits is caught.
    char want[40];
    std::snprintf(want, sizeof want, "check %016llx\n",
                  static_cast<unsigned long long>(fnv1a(data.substr(0, check_at))));
    if (data.substr(check_at) != std::string_view(want)) throw bad("checksum mismatch");
  }
  std::string_view body = data.substr(kMagic.size(), check_at - kMagic.size());
  std::size_t pos = 0;
  auto next_line = [&]() -> std::string_view {
    std::size_t nl = body.find('\n', pos);
    if (nl == std::string_view::npos) throw bad("unterminated line");
    std::string_view l = body.substr(pos, nl - pos);
    pos = nl + 1;
    return l;
  };
  auto number = [&](std::string_view s, const char* what) -> std::uint64_t {
    std::uint64_t v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size())
      throw bad(std::string("bad ") + what + " \"" + std::string(s) + "\"");
    return v;
  };
  std::string_view head = next_line();
  if (head.substr(0, 7) != "merges ") throw bad("missing merge count");
  const std::uint64_t m = number(head.substr(7), "merge count");
  if (m > (std::uint64_t{1} << 30)) throw bad("merge count too large");
  BpeTokenizer tok;
  for (std::uint64_t i = 0; i < m; ++i) {
    if (pos >= body.size()) throw bad("only " + std::to_string(i) + " of " + std::to_string(m) + " merges present");
    std::string_view l = next_line();
    std::size_t sp = l.find(' ');
    if (sp == std::string_view::npos) throw bad("merge line without two ids");
    const std::uint64_t a = number(l.substr(0, sp), "token id");
    const std::uint64_t b = number(l.substr(sp + 1), "token id");
    if (a >= tok.tokens_.size() || b >= tok.tokens_.size())
      throw bad("merge " + std::to_string(i) + " uses a token id not yet defined");
    if (tok.merge_rank_.count(pair_key(static_cast<std::int32_t>(a), static_cast<std::int32_t>(b))))
      throw bad("merge " + std::to_string(i) + " repeats an earlier merge");
    tok.add_merge(static_cast<std::int32_t>(a), static_cast<std::int32_t>(b));
  }
  if (pos != body.size()) throw bad("unexpected data after the merges");
  return tok;
}

}  // namespace onegpu::trainer
