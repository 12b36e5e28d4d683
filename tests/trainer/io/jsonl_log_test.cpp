#include "trainer/io/jsonl_log.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace onegpu::trainer {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(JsonlLog, OneObjectPerLineFlushedAtOnce) {
  testing::TempDir dir;
  const std::string path = dir.file("run.jsonl");
  JsonlLog log(path);
  for (int step = 0; step < 3; ++step) {
    std::string s;
    json::Writer w(s);
    w.begin_object().field("step", step).field("loss", 4.0 - step * 0.5).end_object();
    log.write_line(s);
    // Flushed per line: another reader sees it before the log is closed.
    EXPECT_EQ(lines_of(path).size(), static_cast<std::size_t>(step + 1));
  }
  auto v = json::Value::object();
  v.set("step", 3);
  v.set("note", "two\nlines");  // escaped, so still one line
  log.write(v);
  EXPECT_EQ(log.lines_written(), 4u);
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_DOUBLE_EQ(json::parse(lines[2]).at("loss").as_double(), 3.0);
  EXPECT_EQ(json::parse(lines[3]).at("note").as_string(), "two\nlines");
}

TEST(JsonlLog, AppendKeepsEarlierLines) {
  testing::TempDir dir;
  const std::string path = dir.file("run.jsonl");
  { JsonlLog(path).write_line(R"({"a":1})"); }
  { JsonlLog(path, true).write_line(R"({"a":2})"); }
  EXPECT_EQ(lines_of(path), (std::vector<std::string>{R"({"a":1})", R"({"a":2})"}));
  { JsonlLog(path).write_line(R"({"a":3})"); }  // not appending: starts over
  EXPECT_EQ(lines_of(path), (std::vector<std::string>{R"({"a":3})"}));
}

TEST(JsonlLog, ErrorsForBadPathAndBadLines) {
  testing::TempDir dir;
  const std::string bad = dir.file("no/such/dir/run.jsonl");
  try {
    JsonlLog log(bad);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  JsonlLog log(dir.file("ok.jsonl"));
  EXPECT_THROW(log.write_line("{\"a\":1}\n{\"b\":2}"), Error);  // two lines
  EXPECT_THROW(log.write_line("[1,2]"), Error);                  // not an object
  EXPECT_THROW(log.write_line("{\"a\":"), Error);                // not JSON
  EXPECT_THROW(log.write(json::Value(3)), Error);
  EXPECT_EQ(log.lines_written(), 0u);
  EXPECT_TRUE(lines_of(dir.file("ok.jsonl")).empty());
}

}  // namespace
}  // namespace onegpu::trainer
