#include "trainer/io/safetensors.h"

#include <filesystem>
#include <fstream>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace onegpu::trainer {
namespace {

namespace st = safetensors;

st::File sample_file() {
  st::File f;
  f.metadata["step"] = "42";
  f.metadata["config"] = "{\"layers\": 4, \"name\": \"story\"}\nline two\t\x01";
  const std::vector<float> w = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f};
  f.add_f32("layer0.w", {2, 3}, w);
  const std::vector<std::uint16_t> b = {0x3F80, 0xBF80, 0x7F80, 0x0001};
  f.add_bf16("layer0.bf", {4}, b);
  const std::vector<std::int32_t> i = {-1, 0, 2147483647};
  f.add_i32("ids", {3, 1}, i);
  const std::vector<std::int64_t> l = {-(1LL << 62), 7};
  f.add_i64("rng", {2}, l);
  const std::vector<std::uint8_t> u = {0, 255, 7};
  f.add_u8("bytes", {3}, u);
  const std::vector<float> scalar = {9.0f};
  f.add_f32("scalar", {}, scalar);
  f.add_f32("empty", {0, 5}, std::span<const float>());
  return f;
}

void expect_same(const st::File& a, const st::File& b) {
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.names(), b.names());
  for (const auto& n : a.names()) {
    const auto& x = a.get(n);
    const auto& y = b.get(n);
    EXPECT_EQ(x.dtype, y.dtype) << n;
    EXPECT_EQ(x.shape, y.shape) << n;
    EXPECT_EQ(x.bytes, y.bytes) << n;
  }
}

std::uint64_t header_len(const std::string& bytes) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  return n;
}

std::string le64(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

// A file with the given header JSON and data bytes.
std::string make(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

void expect_error(const std::string& bytes, std::string_view needle) {
  try {
    st::parse(bytes, "ckpt.safetensors");
    ADD_FAILURE() << "no error for: " << needle;
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(needle), std::string::npos) << m;
    EXPECT_NE(m.find("ckpt.safetensors"), std::string::npos) << m;  // names the file
  }
}

TEST(Safetensors, RoundTripsEveryDtypeAndMetadata) {
  const st::File f = sample_file();
  const std::string bytes = st::serialize(f);
  // Layout: 8-byte little-endian length, header padded to 8, then the data.
  const std::uint64_t n = header_len(bytes);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  EXPECT_EQ(bytes.size(), 8 + n + 24 + 8 + 12 + 16 + 3 + 4);
  const st::File g = st::parse(bytes);
  expect_same(f, g);
  EXPECT_EQ(g.get("layer0.w").f32(), (std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f}));
  EXPECT_EQ(g.get("layer0.bf").bf16(), (std::vector<std::uint16_t>{0x3F80, 0xBF80, 0x7F80, 0x0001}));
  EXPECT_EQ(g.get("ids").i32(), (std::vector<std::int32_t>{-1, 0, 2147483647}));
  EXPECT_EQ(g.get("rng").i64(), (std::vector<std::int64_t>{-(1LL << 62), 7}));
  EXPECT_EQ(g.get("bytes").u8(), (std::vector<std::uint8_t>{0, 255, 7}));
  EXPECT_EQ(g.get("scalar").numel(), 1u);
  EXPECT_EQ(g.get("empty").numel(), 0u);
  EXPECT_EQ(g.meta("step"), "42");
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  // Written by hand from the format description, to catch a reader that only reads itself.
  std::string data(12, '\0');
  const float v[2] = {1.0f, -3.5f};
  std::memcpy(data.data(), v, 8);
  const std::int32_t i = 77;
  std::memcpy(data.data() + 8, &i, 4);
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"I32","shape":[1],"data_offsets":[8,12]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const st::File f = st::parse(make(header, data));
  EXPECT_EQ(f.get("a").f32(), (std::vector<float>{1.0f, -3.5f}));
  EXPECT_EQ(f.get("b").i32(), (std::vector<std::int32_t>{77}));
  EXPECT_EQ(f.meta("format"), "pt");
}

TEST(Safetensors, SaveAndLoadAtomically) {
  testing::TempDir dir;
  const std::string path = dir.file("model.safetensors");
  st::File f = sample_file();
  st::save(f, path);
  expect_same(f, st::load(path));
  // Overwrite with different content: the new content replaces the old whole.
  st::File g;
  const std::vector<float> one = {4.0f};
  g.add_f32("only", {1}, one);
  st::save(g, path);
  const st::File h = st::load(path);
  EXPECT_EQ(h.names(), std::vector<std::string>{"only"});
  EXPECT_EQ(h.source, path);
  // No temporary files are left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST(Safetensors, SaveIntoMissingFolderFails) {
  testing::TempDir dir;
  const std::string path = dir.file("no/such/dir/model.safetensors");
  try {
    st::save(sample_file(), path);
    ADD_FAILURE() << "saved into a missing folder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Safetensors, LoadErrorsNameThePath) {
  testing::TempDir dir;
  const std::string missing = dir.file("missing.safetensors");
  try {
    st::load(missing);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_THROW(st::load(dir.path().string()), Error);  // a folder
  const std::string empty = dir.file("empty.safetensors");
  std::ofstream(empty).close();
  try {
    st::load(empty);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shorter than the 8-byte"), std::string::npos) << e.what();
  }
}

TEST(Safetensors, MissingTensorAndWrongDtypeAreErrors) {
  st::File f = st::parse(st::serialize(sample_file()), "x.safetensors");
  try {
    f.get("layer9.w");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "missing tensor 'layer9.w' in x.safetensors");
  }
  EXPECT_FALSE(f.contains("layer9.w"));
  EXPECT_TRUE(f.contains("ids"));
  EXPECT_THROW(f.meta("nope"), Error);
  EXPECT_THROW(f.get("ids").f32(), Error);  // I32 read as F32
  EXPECT_THROW(f.get("layer0.w").bf16(), Error);
}

TEST(Safetensors, AddChecksSizes) {
  st::File f;
  const std::vector<float> three = {1, 2, 3};
  EXPECT_THROW(f.add_f32("w", {2, 2}, three), Error);
  EXPECT_THROW(f.add_f32("w", {-1, 3}, three), Error);
  EXPECT_THROW(f.add_f32("", {3}, three), Error);
  EXPECT_THROW(f.add_f32("__metadata__", {3}, three), Error);
  f.add_f32("w", {3}, three);
  EXPECT_TRUE(f.contains("w"));
}

TEST(Safetensors, EveryCorruptionIsOneClearError) {
  const std::string f8(8, '\0');
  const auto t = [](const std::string& body) { return "{" + body + "}"; };
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  expect_error("", "shorter than the 8-byte header length");
  expect_error("abc", "shorter than the 8-byte header length");
  expect_error(le64(100) + "{}", "beyond the end of the file");
  expect_error(le64(std::uint64_t{1} << 63) + "{}", "beyond the end of the file");
  expect_error(make("{\"a\":", ""), "bad header JSON");
  expect_error(make("[1,2]", ""), "does not start with '{'");
  expect_error(make(t(a), f8.substr(0, 5)), "beyond the 5 data bytes");  // truncated data
  expect_error(make(t(a), f8 + "xx"), "2 bytes after the last tensor");
  expect_error(make(t(R"("a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]})"), f8), "does not match");
  expect_error(make(t(R"("a":{"dtype":"F99","shape":[2],"data_offsets":[0,8]})"), f8), "unknown dtype");
  expect_error(make(t(R"("a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), f8), "non-negative");
  expect_error(make(t(R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]})"), f8), "after end");
  expect_error(make(t(R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0]})"), f8), "data_offsets");
  expect_error(make(t(R"("a":{"shape":[2],"data_offsets":[0,8]})"), f8), "dtype");
  expect_error(make(t(R"("a":{"dtype":"F32","data_offsets":[0,8]})"), f8), "shape");
  expect_error(make(t(R"("a":[1])"), f8), "not described by an object");
  expect_error(make(t(R"("__metadata__":{"k":1})"), ""), "not a string");
  expect_error(make(t(R"("__metadata__":[])"), ""), "not an object");
  // Two tensors sharing bytes, and a hole between tensors.
  expect_error(make(t(a + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})"), f8), "overlaps");
  expect_error(make(t(R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})"), f8), "hole");
  // Shape whose element count overflows 64 bits.
  expect_error(make(t(R"("a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]})"), f8),
               "does not match");
}

TEST(Safetensors, ManyTensorsRoundTrip) {
  // A checkpoint of the largest preset holds tens of thousands of tensors in one header
  // object; reading it must not be quadratic in their number (this test takes a few ms).
  st::File f;
  for (int i = 0; i < 20000; ++i) {
    const std::vector<std::int32_t> v = {i};
    f.add_i32("layer" + std::to_string(i / 100) + ".expert" + std::to_string(i % 100), {1}, v);
  }
  const st::File g = st::parse(st::serialize(f));
  ASSERT_EQ(g.tensors().size(), 20000u);
  EXPECT_EQ(g.get("layer123.expert45").i32(), std::vector<std::int32_t>{12345});
}

TEST(Safetensors, TruncationsAndBitFlipsNeverCrash) {
  // Every truncation of a valid file is an Error (no truncation is a valid file), and random
  // bit flips give either a valid file or an Error; nothing else, and no out-of-bounds read
  // (run under the sanitizer build to see the latter).
  const std::string good = st::serialize(sample_file());
  for (std::size_t len = 0; len < good.size(); ++len)
    EXPECT_THROW(st::parse(good.substr(0, len)), Error) << "length " << len;
  std::mt19937 rng(5);
  int errors = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      // Half the flips land in the length and header, where they matter most.
      const std::size_t limit = (rng() & 1) ? 8 + header_len(good) : s.size();
      s[rng() % limit] ^= static_cast<char>(1u << (rng() % 8));
    }
    try {
      st::parse(s);
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 100);  // the checks fire, not just pass everything through
}

}  // namespace
}  // namespace onegpu::trainer
