#include "trainer/data/bpe_tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "trainer/data/story_corpus.h"

namespace onegpu::trainer {
namespace {

// One small story corpus and its tokenizer, shared by the tests (training once keeps them fast).
const Corpus& small_corpus() {
  static const Corpus c = [] {
    StoryCorpusOptions o;
    o.seed = 21;
    o.target_bytes = 400000;
    return generate_story_corpus(o);
  }();
  return c;
}

const BpeTokenizer& small_tokenizer() {
  static const BpeTokenizer t = BpeTokenizer::train(small_corpus().train);
  return t;
}

std::string random_bytes(std::mt19937& rng, std::size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xFF);
  return s;
}

// Random valid UTF-8 mixing ASCII words, spaces, and 2-, 3- and 4-byte characters.
std::string random_utf8(std::mt19937& rng, std::size_t chars) {
  static const char* ascii = "abcdefghijklmnopqrstuvwxyz ABCXYZ 0123456789 .,;!?'\"\n\t  ";
  std::string s;
  for (std::size_t i = 0; i < chars; ++i) {
    std::uint32_t cp;
    switch (rng() % 6) {
      case 0: cp = 0x80 + rng() % (0x800 - 0x80); break;
      case 1: do cp = 0x800 + rng() % (0x10000 - 0x800); while (cp >= 0xD800 && cp <= 0xDFFF); break;
      case 2: cp = 0x10000 + rng() % (0x110000 - 0x10000); break;
      default: cp = static_cast<unsigned char>(ascii[rng() % std::strlen(ascii)]);
    }
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return s;
}

using Pieces = std::vector<std::string_view>;

TEST(Pretokenize, LeadingSpaceJoinsTheWord) {
  EXPECT_EQ(BpeTokenizer::pretokenize("Once upon a time"), (Pieces{"Once", " upon", " a", " time"}));
  EXPECT_EQ(BpeTokenizer::pretokenize("Hi,  you!\n\nOK 42x"),
            (Pieces{"Hi", ",", " ", " you", "!", "\n\n", "OK", " 42", "x"}));
  EXPECT_EQ(BpeTokenizer::pretokenize("end  \n"), (Pieces{"end", "  \n"}));
  EXPECT_EQ(BpeTokenizer::pretokenize("\n Once"), (Pieces{"\n", " Once"}));
  EXPECT_EQ(BpeTokenizer::pretokenize(" caf\xC3\xA9s"), (Pieces{" caf\xC3\xA9s"}));
  EXPECT_TRUE(BpeTokenizer::pretokenize("").empty());
  // Long runs are cut into 64-byte pieces.
  const std::string longword(150, 'a');
  EXPECT_EQ(BpeTokenizer::pretokenize(longword).size(), 3u);
}

TEST(Pretokenize, PiecesCoverTheTextExactly) {
  std::mt19937 rng(1);
  for (int i = 0; i < 500; ++i) {
    const std::string s = (i % 2) ? random_bytes(rng, rng() % 300) : random_utf8(rng, rng() % 200);
    std::string joined;
    for (auto p : BpeTokenizer::pretokenize(s)) {
      ASSERT_FALSE(p.empty());
      ASSERT_LE(p.size(), 64u);
      joined += p;
    }
    ASSERT_EQ(joined, s);
  }
}

TEST(BpeTokenizer, TimeIsOneTokenAndVocabIsFull) {
  const BpeTokenizer& t = small_tokenizer();
  EXPECT_EQ(t.vocab_size(), 1024u);
  EXPECT_EQ(t.merge_count(), 1024u - 257u);
  const std::int32_t time = t.token_id(" time");
  ASSERT_GE(time, 256);  // a learned token, not a byte
  EXPECT_EQ(t.token_text(time), " time");
  const auto ids = t.encode("Once upon a time");
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.back(), time);
  EXPECT_LE(ids.size(), 4u);  // "Once", " upon", " a", " time" are all frequent
  EXPECT_EQ(t.token_id("no such token here"), -1);
  EXPECT_EQ(t.token_id("a"), 'a');
}

TEST(BpeTokenizer, DefaultCorpusMakesTimeOneToken) {
  // The real setting: the default (multi-megabyte) corpus and default vocabulary.
  const Corpus c = generate_story_corpus();
  const auto t0 = std::chrono::steady_clock::now();
  const BpeTokenizer t = BpeTokenizer::train(c.train);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("train_seconds", std::to_string(s));  // reported, never asserted
  EXPECT_EQ(t.vocab_size(), 1024u);
  EXPECT_GE(t.token_id(" time"), 256);
  const auto ids = t.encode("Once upon a");
  EXPECT_EQ(t.decode(ids), "Once upon a");
}

TEST(BpeTokenizer, RoundTripsRandomUtf8AndBytes) {
  const BpeTokenizer& t = small_tokenizer();
  std::mt19937 rng(2);
  for (int i = 0; i < 1500; ++i) {
    const std::string s = (i % 3 == 0) ? random_bytes(rng, rng() % 200) : random_utf8(rng, rng() % 150);
    const auto ids = t.encode(s);
    for (auto id : ids) ASSERT_TRUE(id >= 0 && id < t.eot_id()) << id;
    ASSERT_EQ(t.decode(ids), s);
  }
  // And real text, which merges heavily.
  for (const auto& d : small_corpus().heldout) {
    const auto ids = t.encode(d);
    ASSERT_LT(ids.size(), d.size() / 2);  // compresses
    ASSERT_EQ(t.decode(ids), d);
  }
  EXPECT_TRUE(t.encode("").empty());
  EXPECT_EQ(t.decode(t.encode(std::string("\0\0a\0", 4))), std::string("\0\0a\0", 4));
}

TEST(BpeTokenizer, EndOfTextToken) {
  const BpeTokenizer& t = small_tokenizer();
  EXPECT_EQ(t.eot_id(), static_cast<std::int32_t>(t.vocab_size()) - 1);
  EXPECT_EQ(t.token_text(t.eot_id()), "<|endoftext|>");
  // Encoding the literal text never yields the special token.
  for (auto id : t.encode("<|endoftext|>")) EXPECT_NE(id, t.eot_id());
  const std::vector<std::string> docs = {"Once upon a time.", "The end."};
  const auto ids = t.encode_documents(docs);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), t.eot_id()), 2);
  EXPECT_EQ(ids.back(), t.eot_id());
  EXPECT_EQ(t.decode(ids), "Once upon a time.The end.");
  const std::int32_t bad[] = {5, static_cast<std::int32_t>(t.vocab_size())};
  EXPECT_THROW(t.decode(bad), Error);
  const std::int32_t neg[] = {-1};
  EXPECT_THROW(t.decode(neg), Error);
  EXPECT_THROW(t.token_text(-1), Error);
}

TEST(BpeTokenizer, EncodeDocumentsMatchesEncodeOneByOne) {
  // encode_documents shares a cache of encoded words across documents; it must give exactly
  // what encoding each document alone gives.
  const BpeTokenizer& t = small_tokenizer();
  const auto& docs = small_corpus().heldout;
  std::vector<std::int32_t> want;
  std::vector<std::int64_t> want_starts;
  for (const auto& d : docs) {
    want_starts.push_back(static_cast<std::int64_t>(want.size()));
    const auto ids = t.encode(d);
    want.insert(want.end(), ids.begin(), ids.end());
    want.push_back(t.eot_id());
  }
  EXPECT_EQ(t.encode_documents(docs), want);
  std::vector<std::int64_t> starts = {99};  // replaced, not appended to
  EXPECT_EQ(t.encode_documents(docs, &starts), want);
  EXPECT_EQ(starts, want_starts);
}

TEST(BpeTokenizer, VocabSizeIsRespected) {
  const auto& docs = small_corpus().train;
  for (std::size_t v : {257u, 300u, 700u}) {
    BpeTrainOptions o;
    o.vocab_size = v;
    const BpeTokenizer t = BpeTokenizer::train(docs, o);
    EXPECT_EQ(t.vocab_size(), v);
    for (auto id : t.encode(docs[0])) EXPECT_LT(id, static_cast<std::int32_t>(v) - 1);
  }
  BpeTrainOptions o;
  o.vocab_size = 256;
  EXPECT_THROW(BpeTokenizer::train(docs, o), Error);
  // Too little text to fill the vocabulary: stops early, still correct.
  const std::vector<std::string> tiny = {"ab ab ab"};
  const BpeTokenizer t = BpeTokenizer::train(tiny);
  EXPECT_LT(t.vocab_size(), 1024u);
  EXPECT_GT(t.vocab_size(), 257u);
  EXPECT_EQ(t.decode(t.encode("ab ab abba")), "ab ab abba");
}

// A plain BPE trainer that recounts every pair on every step: slow but obviously right.
std::vector<std::pair<std::int32_t, std::int32_t>> naive_merges(const std::vector<std::string>& docs,
                                                                std::size_t merges) {
  std::map<std::string, std::int64_t> count;
  for (const auto& d : docs)
    for (auto p : BpeTokenizer::pretokenize(d)) ++count[std::string(p)];
  std::vector<std::pair<std::vector<std::int32_t>, std::int64_t>> words;
  for (const auto& [w, c] : count) {
    std::vector<std::int32_t> s;
    for (unsigned char ch : w) s.push_back(ch);
    words.emplace_back(s, c);
  }
  std::vector<std::pair<std::int32_t, std::int32_t>> out;
  for (std::size_t m = 0; m < merges; ++m) {
    std::map<std::pair<std::int32_t, std::int32_t>, std::int64_t> pairs;
    for (const auto& [s, c] : words)
      for (std::size_t i = 0; i + 1 < s.size(); ++i) pairs[{s[i], s[i + 1]}] += c;
    std::pair<std::int32_t, std::int32_t> best{-1, -1};
    std::int64_t best_count = 1;  // min_pair_count 2
    for (const auto& [p, c] : pairs)
      if (c > best_count) {  // map order: the first of equal counts is the smallest pair
        best = p;
        best_count = c;
      }
    if (best.first < 0) break;
    const std::int32_t id = 256 + static_cast<std::int32_t>(m);
    for (auto& [s, c] : words) {
      std::vector<std::int32_t> t;
      for (std::size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == best.first && s[i + 1] == best.second) {
          t.push_back(id);
          i += 2;
        } else {
          t.push_back(s[i++]);
        }
      }
      s = t;
    }
    out.push_back(best);
  }
  return out;
}

TEST(BpeTokenizer, MatchesANaiveTrainer) {
  // The incremental pair counts must learn exactly what recounting from scratch learns,
  // ties included. Story text plus repeated letters (pairs like "aa" that overlap).
  StoryCorpusOptions o;
  o.seed = 4;
  o.target_bytes = 30000;
  std::vector<std::string> docs = generate_story_corpus(o).train;
  docs.push_back("aaaa aaaaa aaa aaaaaaa bbb abab ababab \n\n\n  \t zz zz zzz");
  std::mt19937 rng(9);
  for (int i = 0; i < 20; ++i) docs.push_back(random_utf8(rng, 60));
  BpeTrainOptions opt;
  opt.vocab_size = 257 + 200;
  const BpeTokenizer t = BpeTokenizer::train(docs, opt);
  EXPECT_EQ(t.merges(), naive_merges(docs, 200));
}

TEST(BpeTokenizer, TrainingIsDeterministic) {
  const BpeTokenizer a = BpeTokenizer::train(small_corpus().train);
  EXPECT_TRUE(a == small_tokenizer());
  EXPECT_EQ(a.serialize(), small_tokenizer().serialize());
}

TEST(BpeTokenizer, SerializeRoundTrip) {
  const BpeTokenizer& t = small_tokenizer();
  const std::string s = t.serialize();
  const BpeTokenizer u = BpeTokenizer::deserialize(s);
  EXPECT_TRUE(u == t);
  EXPECT_EQ(u.vocab_size(), t.vocab_size());
  EXPECT_EQ(u.token_id(" time"), t.token_id(" time"));
  const std::string text = small_corpus().heldout[0];
  EXPECT_EQ(u.encode(text), t.encode(text));
  // The untrained tokenizer too.
  EXPECT_TRUE(BpeTokenizer::deserialize(BpeTokenizer().serialize()) == BpeTokenizer());
}

TEST(BpeTokenizer, CorruptDataIsAnError) {
  const std::string s = small_tokenizer().serialize();
  EXPECT_THROW(BpeTokenizer::deserialize(""), Error);
  EXPECT_THROW(BpeTokenizer::deserialize("hello"), Error);
  // Every truncation, and a flipped bit at many places, are caught.
  for (std::size_t len = 0; len < s.size(); len += 7)
    EXPECT_THROW(BpeTokenizer::deserialize(s.substr(0, len)), Error) << len;
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    std::string c = s;
    c[rng() % c.size()] ^= static_cast<char>(1u << (rng() % 8));
    EXPECT_THROW(BpeTokenizer::deserialize(c), Error);
  }
  EXPECT_THROW(BpeTokenizer::deserialize(s + "x"), Error);
  try {
    BpeTokenizer::deserialize("nonsense");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt tokenizer data"), std::string::npos);
  }
}

}  // namespace
}  // namespace onegpu::trainer
