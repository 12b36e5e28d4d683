#include "trainer/io/json.h"
#include "trainer/data/corpus.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace onegpu::trainer {
namespace {

// Expects `text` to be rejected with a message containing `needle`.
void expect_parse_error(std::string_view text, std::string_view needle) {
  try {
    json::parse(text);
    ADD_FAILURE() << "parsed without error: " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\ninput: " << text;
  }
}

TEST(Json, ParsesEveryKindOfValue) {
  auto v = json::parse(R"( {"a": [1, -2.5, true, false, null, "x"], "b": {"c": {}} , "d": []} )");
  ASSERT_TRUE(v.is_object());
  const auto& a = v.at("a").as_array();
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0].as_int(), 1);
  EXPECT_DOUBLE_EQ(a[1].as_double(), -2.5);
  EXPECT_TRUE(a[2].as_bool());
  EXPECT_FALSE(a[3].as_bool());
  EXPECT_TRUE(a[4].is_null());
  EXPECT_EQ(a[5].as_string(), "x");
  EXPECT_TRUE(v.at("b").at("c").is_object());
  EXPECT_EQ(v.at("d").size(), 0u);
  EXPECT_EQ(v.find("zzz"), nullptr);
  // Objects keep file order when dumped.
  EXPECT_EQ(json::parse(R"({"z":1,"a":2})").dump(), R"({"z":1,"a":2})");
}

TEST(Json, IntegersStayExact) {
  // safetensors offsets are int64; a double would lose the low bits above 2^53.
  auto v = json::parse("[9223372036854775807, -9223372036854775808, 9007199254740993]");
  EXPECT_EQ(v.as_array()[0].as_int(), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(v.as_array()[1].as_int(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(v.as_array()[2].as_int(), 9007199254740993LL);
  // Too big for int64: still a number, but not an integer.
  auto big = json::parse("18446744073709551616");
  EXPECT_TRUE(big.is_number());
  EXPECT_FALSE(big.is_integer());
  EXPECT_THROW(big.as_int(), Error);
  EXPECT_THROW(json::parse("1.5").as_int(), Error);
  EXPECT_DOUBLE_EQ(json::parse("1e3").as_double(), 1000.0);
  EXPECT_DOUBLE_EQ(json::parse("-0.25E-2").as_double(), -0.0025);
}

TEST(Json, EscapesRoundTrip) {
  const std::string s = "quote\" backslash\\ slash/ nl\n cr\r tab\t bs\b ff\f ctl\x01\x1f end";
  const std::string q = json::quoted(s);
  EXPECT_EQ(q, R"("quote\" backslash\\ slash/ nl\n cr\r tab\t bs\b ff\f ctl\u0001\u001f end")");
  EXPECT_EQ(json::parse(q).as_string(), s);
  // \u escapes, including a surrogate pair, decode to UTF-8.
  EXPECT_EQ(json::parse(R"("\u00e9\u4e2d\ud83d\ude00\/")").as_string(),
            "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80/");
}

TEST(Json, RandomStringsRoundTrip) {
  // Any UTF-8 string survives quoted() then parse() (metadata strings in headers and logs);
  // a string that is not UTF-8 is refused with one line, as JSON requires.
  std::mt19937 rng(7);
  int valid = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string s(rng() % 40, '\0');
    for (auto& c : s) c = static_cast<char>(i % 2 ? (rng() & 0x7F) : (rng() & 0xFF));
    if (!first_invalid_utf8(s)) {
      ++valid;
      ASSERT_EQ(json::parse(json::quoted(s)).as_string(), s);
    } else {
      expect_parse_error(json::quoted(s), "ill-formed UTF-8");
    }
  }
  EXPECT_GT(valid, 1000);
  EXPECT_EQ(json::parse(json::quoted("caf\xc3\xa9 \xf0\x9f\x98\x80")).as_string(), "caf\xc3\xa9 \xf0\x9f\x98\x80");
}

TEST(Json, DoublesRoundTripShortest) {
  std::string out;
  json::append_number(out, 0.1);
  EXPECT_EQ(out, "0.1");
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    double d;
    std::uint64_t bits = rng();
    std::memcpy(&d, &bits, sizeof d);
    if (!std::isfinite(d)) continue;
    std::string t;
    json::append_number(t, d);
    EXPECT_EQ(json::parse(t).as_double(), d) << t;
  }
  // JSON has no NaN or infinity: they become null rather than invalid text.
  std::string n;
  json::append_number(n, std::nan(""));
  EXPECT_EQ(n, "null");
}

TEST(Json, RejectsBadInputWithPosition) {
  // nlohmann-json's messages, as one line of ours: "JSON: <what> at byte N".
  expect_parse_error("", "unexpected end of input");
  expect_parse_error("{\"a\":}", "at byte 5");
  expect_parse_error("[1,]", "unexpected ']'");
  expect_parse_error("[1 2]", "expected ']'");
  expect_parse_error("{\"a\" 1}", "expected ':'");
  expect_parse_error("{1:2}", "expected string literal");
  expect_parse_error("{\"a\":1,\"a\":2}", "duplicate key");
  expect_parse_error("\"abc", "missing closing quote");
  expect_parse_error("\"a\nb\"", "control character U+000A (LF) must be escaped");
  expect_parse_error(R"("\x")", "forbidden character after backslash");
  expect_parse_error(R"("\u12")", "'\\u' must be followed by 4 hex digits");
  expect_parse_error(R"("\ud800")", "surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF");
  expect_parse_error(R"("\udc00")", "surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF");
  expect_parse_error("01", "expected end of input");
  expect_parse_error("1.", "expected digit after '.'");
  expect_parse_error("1e", "after exponent");
  expect_parse_error("-", "expected digit after '-'");
  expect_parse_error("1e999", "number overflow");
  expect_parse_error("tru", "invalid literal");
  expect_parse_error("{} x", "at byte 3");
  expect_parse_error(std::string(200, '['), "nesting deeper than 128 levels");
  expect_parse_error("\"\xff\"", "ill-formed UTF-8 byte at byte 1");
  // Raw bytes of the input never reach the message.
  try {
    json::parse("\"\x1b[2J\xff\"");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\x1b'), std::string::npos) << e.what();
  }
}

TEST(Json, DuplicateKeysFoundInBigObjects) {
  // Big objects use a hash set for the duplicate check; it must still catch them.
  std::string s = "{";
  for (int i = 0; i < 100; ++i) s += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  EXPECT_EQ(json::parse(s + "\"last\":0}").size(), 101u);
  expect_parse_error(s + "\"k3\":0}", "duplicate key \"k3\"");
  expect_parse_error(s + "\"k99\":0}", "duplicate key \"k99\"");
}

TEST(Json, MutatedInputNeverCrashes) {
  // Random edits of a valid document either parse or throw Error: nothing else.
  const std::string base =
      R"({"step":12,"loss":2.5,"name":"a\"b\u00e9","list":[1,2,{"x":null,"y":[true,false]}],"e":-1.5e-3})";
  std::mt19937 rng(11);
  for (int i = 0; i < 5000; ++i) {
    std::string s = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0: s[at] = static_cast<char>(rng() & 0xFF); break;
        case 1: s.erase(at, 1 + rng() % 4); break;
        default: s.resize(at); break;
      }
      if (s.empty()) break;
    }
    try {
      json::parse(s);
    } catch (const Error&) {
    }
  }
  SUCCEED();
}

TEST(Json, WriterPlacesCommasAndNests) {
  std::string s;
  json::Writer w(s);
  w.begin_object()
      .field("step", 3)
      .field("loss", 2.25)
      .field("name", "fox \"Pip\"")
      .field("ok", true)
      .key("mem")
      .begin_object()
      .field("weights", std::uint64_t{1} << 40)
      .field("grads", -7L)
      .end_object()
      .key("list")
      .begin_array()
      .value(1)
      .value("two")
      .null()
      .begin_array()
      .end_array()
      .end_array()
      .end_object();
  EXPECT_TRUE(w.complete());
  EXPECT_EQ(s,
            R"({"step":3,"loss":2.25,"name":"fox \"Pip\"","ok":true,"mem":{"weights":1099511627776,"grads":-7},"list":[1,"two",null,[]]})");
  // What the writer writes, the parser reads back.
  auto v = json::parse(s);
  EXPECT_EQ(v.at("mem").at("weights").as_int(), 1099511627776LL);
  EXPECT_EQ(json::parse(v.dump()), v);
}

TEST(Json, WriterRejectsMisuse) {
  std::string s;
  {
    json::Writer w(s);
    w.begin_object();
    EXPECT_THROW(w.value(1), Error);  // a key is due
  }
  {
    json::Writer w(s);
    w.begin_object().key("a");
    EXPECT_THROW(w.key("b"), Error);       // two keys in a row
    EXPECT_THROW(w.end_object(), Error);   // key without value
  }
  {
    json::Writer w(s);
    w.begin_array();
    EXPECT_THROW(w.end_object(), Error);
    EXPECT_FALSE(w.complete());
  }
  {
    json::Writer w(s);
    w.value(1);
    EXPECT_THROW(w.value(2), Error);  // one top-level value only
  }
}

TEST(Json, DomBuildAndTypeErrors) {
  auto v = json::Value::object();
  v.set("a", 1);
  v.set("b", json::Value::array());
  v.set("a", "replaced");
  v.as_object()[1].second.push_back(3.5);
  EXPECT_EQ(v.dump(), R"({"a":"replaced","b":[3.5]})");
  EXPECT_THROW(v.at("missing"), Error);
  EXPECT_THROW(v.at("a").as_int(), Error);
  EXPECT_THROW(v.push_back(1), Error);
  EXPECT_THROW(json::Value(1).as_string(), Error);
}

}  // namespace
}  // namespace onegpu::trainer

// Found by fuzz/json_fuzz.cpp: -0.0 was written as "-0", which reads back as the integer 0.
TEST(Json, NegativeZeroKeepsItsSign) {
  namespace json = onegpu::trainer::json;
  const std::string once = json::parse("[-0.0]").dump();
  EXPECT_EQ(once, "[-0.0]");
  EXPECT_TRUE(std::signbit(json::parse(once).as_array()[0].as_double()));
  EXPECT_EQ(json::parse(once).dump(), once);
}
