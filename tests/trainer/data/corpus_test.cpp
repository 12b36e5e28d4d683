#include "trainer/data/corpus.h"

#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace onegpu::trainer {
namespace {

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string load_error(const std::string& path) {
  try {
    load_text_corpus(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CorpusUtf8, AcceptsValidText) {
  EXPECT_FALSE(first_invalid_utf8(""));
  EXPECT_FALSE(first_invalid_utf8("plain ascii\n\t"));
  EXPECT_FALSE(first_invalid_utf8("\xC3\xA9t\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF"));
  EXPECT_FALSE(first_invalid_utf8(std::string("nul\0inside", 10)));
}

TEST(CorpusUtf8, FindsTheFirstBadByte) {
  EXPECT_EQ(first_invalid_utf8("ab\x80"), 2u);             // stray continuation byte
  EXPECT_EQ(first_invalid_utf8("\xC0\x80"), 0u);           // overlong NUL
  EXPECT_EQ(first_invalid_utf8("x\xE0\x80\x80"), 1u);      // overlong 3-byte form
  EXPECT_EQ(first_invalid_utf8("\xF0\x80\x80\x80"), 0u);   // overlong 4-byte form
  EXPECT_EQ(first_invalid_utf8("ok\xED\xA0\x80"), 2u);     // surrogate U+D800
  EXPECT_EQ(first_invalid_utf8("\xF4\x90\x80\x80"), 0u);   // above U+10FFFF
  EXPECT_EQ(first_invalid_utf8("\xF5\x80\x80\x80"), 0u);
  EXPECT_EQ(first_invalid_utf8("abc\xE4\xB8"), 3u);        // cut short at the end
  EXPECT_EQ(first_invalid_utf8("\xC3\xA9\xC3("), 2u);      // bad continuation
  EXPECT_EQ(first_invalid_utf8("\xFF"), 0u);
}

TEST(Corpus, SplitsDocumentsAtBlankLines) {
  EXPECT_EQ(split_documents("a\nb\n\n\nc\n  \t\nd\n"), (std::vector<std::string>{"a\nb", "c", "d"}));
  EXPECT_EQ(split_documents("\n\n  one \r\n\r\ntwo"), (std::vector<std::string>{"  one \r", "two"}));
  EXPECT_TRUE(split_documents(" \n\t\n").empty());
}

TEST(Corpus, HeldOutIsDisjointAndSpread) {
  std::vector<std::string> docs;
  for (int i = 0; i < 200; ++i) docs.push_back("doc " + std::to_string(i));
  Corpus c = split_heldout(docs, 0.05);
  EXPECT_EQ(c.heldout.size(), 10u);
  EXPECT_EQ(c.train.size(), 190u);
  std::set<std::string> train(c.train.begin(), c.train.end());
  for (const auto& h : c.heldout) EXPECT_EQ(train.count(h), 0u) << h;
  // Spread through the text, not just the tail.
  EXPECT_EQ(c.heldout.front(), "doc 19");
  EXPECT_EQ(c.heldout.back(), "doc 199");
  EXPECT_THROW(split_heldout(docs, 0.0), Error);
  EXPECT_THROW(split_heldout(docs, 1.0), Error);
  EXPECT_THROW(split_heldout({}, 0.1), Error);
  // Two documents: one each side even with a tiny fraction.
  Corpus two = split_heldout({"x", "y"}, 0.01);
  EXPECT_EQ(two.train.size(), 1u);
  EXPECT_EQ(two.heldout.size(), 1u);
}

TEST(Corpus, OneDocumentIsCutAtALine) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "line number " + std::to_string(i) + "\n";
  text += "last";
  Corpus c = split_heldout({text}, 0.1);
  ASSERT_EQ(c.train.size(), 1u);
  ASSERT_EQ(c.heldout.size(), 1u);
  EXPECT_EQ(c.train[0] + c.heldout[0], text);  // nothing lost
  EXPECT_EQ(c.train[0].back(), '\n');           // cut after a line break
  EXPECT_NEAR(static_cast<double>(c.heldout[0].size()) / text.size(), 0.1, 0.02);
  // Multi-byte characters are never cut in half.
  Corpus u = split_heldout({"\xC3\xA9\xC3\xA9\xC3\xA9"}, 0.5);
  EXPECT_FALSE(first_invalid_utf8(u.train[0]));
  EXPECT_FALSE(first_invalid_utf8(u.heldout[0]));
  EXPECT_THROW(split_heldout({"x"}, 0.1), Error);  // one character cannot be split
}

TEST(Corpus, LoadsAFile) {
  testing::TempDir dir;
  const std::string path = dir.file("text.txt");
  std::string text = "\xEF\xBB\xBF";  // a byte-order mark is dropped
  std::vector<std::string> want;
  for (int i = 0; i < 40; ++i) {
    want.push_back("Paragraph " + std::to_string(i) + " caf\xC3\xA9.\nSecond line.");
    text += want.back() + "\n\n";
  }
  write_file(path, text);
  Corpus c = load_text_corpus(path, 0.1);
  EXPECT_EQ(c.heldout.size(), 4u);
  EXPECT_EQ(c.train.size(), 36u);
  std::multiset<std::string> got(c.train.begin(), c.train.end());
  got.insert(c.heldout.begin(), c.heldout.end());
  EXPECT_EQ(got, std::multiset<std::string>(want.begin(), want.end()));
}

TEST(Corpus, LoadErrorsAreClear) {
  testing::TempDir dir;
  const std::string missing = dir.file("missing.txt");
  EXPECT_NE(load_error(missing).find("cannot open corpus " + missing), std::string::npos);
  const std::string empty = dir.file("empty.txt");
  write_file(empty, "");
  EXPECT_EQ(load_error(empty), "corpus " + empty + " is empty");
  const std::string blank = dir.file("blank.txt");
  write_file(blank, " \n\n\t\n");
  EXPECT_NE(load_error(blank).find("only whitespace"), std::string::npos);
  const std::string binary = dir.file("binary.bin");
  write_file(binary, "hello\xFFworld");
  EXPECT_EQ(load_error(binary), "corpus " + binary + " is not UTF-8: invalid byte 0xff at offset 5");
  EXPECT_NE(load_error(dir.path().string()).find("not a regular file"), std::string::npos);
  const std::string tiny = dir.file("tiny.txt");
  write_file(tiny, "x");
  EXPECT_NE(load_error(tiny).find("too small"), std::string::npos);
}

}  // namespace
}  // namespace onegpu::trainer
