#include "trainer/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include "trainer/io/json.h"
#include "trainer/io/output_file.h"
#include "trainer/train/limits.h"

namespace onegpu::trainer::safetensors {

namespace {

struct DTypeInfo {
  DType d;
  std::string_view name;
  std::size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::BOOL, "BOOL", 1}, {DType::U8, "U8", 1},     {DType::I8, "I8", 1},
    {DType::I16, "I16", 2},   {DType::U16, "U16", 2},   {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I32, "I32", 4},   {DType::U32, "U32", 4},
    {DType::F32, "F32", 4},   {DType::I64, "I64", 8},   {DType::U64, "U64", 8},
    {DType::F64, "F64", 8},
};

// Largest header we accept (the reference implementation's limit is 100 MB too).
constexpr std::uint64_t kMaxHeader = 100u << 20;

// numel with overflow checks; returns false on overflow or a negative dimension.
bool checked_numel(const std::vector<std::int64_t>& shape, std::uint64_t& out) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) return false;
    std::uint64_t u = static_cast<std::uint64_t>(d);
    if (u != 0 && n > std::numeric_limits<std::uint64_t>::max() / u) return false;
    n *= u;
  }
  out = n;
  return true;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

template <class T>
std::vector<T> copy_as(const Tensor& t, DType want) {
  if (t.dtype != want)
    throw Error("tensor '" + t.name + "' has dtype " + std::string(dtype_name(t.dtype)) +
                ", expected " + std::string(dtype_name(want)));
  std::vector<T> v(t.bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(T));
  return v;
}

template <class T>
std::span<const std::uint8_t> as_bytes(std::span<const T> v) {
  return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size_bytes()};
}

}  // namespace

std::size_t dtype_size(DType d) {
  for (const auto& i : kDTypes)
    if (i.d == d) return i.size;
  throw Error("safetensors: unknown dtype");
}

std::string_view dtype_name(DType d) {
  for (const auto& i : kDTypes)
    if (i.d == d) return i.name;
  throw Error("safetensors: unknown dtype");
}

DType dtype_from_name(std::string_view s) {
  for (const auto& i : kDTypes)
    if (i.name == s) return i.d;
  throw Error("safetensors: unknown dtype \"" + std::string(s) + "\"");
}

std::size_t Tensor::numel() const {
  std::uint64_t n = 0;
  if (!checked_numel(shape, n)) throw Error("tensor '" + name + "' has an invalid shape");
  return static_cast<std::size_t>(n);
}

std::vector<float> Tensor::f32() const { return copy_as<float>(*this, DType::F32); }
std::vector<std::uint16_t> Tensor::bf16() const { return copy_as<std::uint16_t>(*this, DType::BF16); }
std::vector<std::int32_t> Tensor::i32() const { return copy_as<std::int32_t>(*this, DType::I32); }
std::vector<std::int64_t> Tensor::i64() const { return copy_as<std::int64_t>(*this, DType::I64); }
std::vector<std::uint8_t> Tensor::u8() const { return copy_as<std::uint8_t>(*this, DType::U8); }

void File::add(std::string name, DType dtype, std::vector<std::int64_t> shape,
               std::span<const std::uint8_t> bytes) {
  if (name.empty()) throw Error("safetensors: a tensor needs a name");
  if (name == "__metadata__") throw Error("safetensors: \"__metadata__\" cannot name a tensor");
  std::uint64_t n = 0;
  if (!checked_numel(shape, n))
    throw Error("safetensors: tensor '" + name + "' has an invalid shape " + shape_text(shape));
  std::uint64_t es = dtype_size(dtype);
  if (n > std::numeric_limits<std::uint64_t>::max() / es || n * es != bytes.size())
    throw Error("safetensors: tensor '" + name + "' of shape " + shape_text(shape) + " and dtype " +
                std::string(dtype_name(dtype)) + " needs " + std::to_string(n * es) +
                " bytes, got " + std::to_string(bytes.size()));
  Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.assign(bytes.begin(), bytes.end());
  tensors_.insert_or_assign(std::move(name), std::move(t));
}

void File::add_f32(std::string name, std::vector<std::int64_t> shape, std::span<const float> v) {
  add(std::move(name), DType::F32, std::move(shape), as_bytes(v));
}
void File::add_bf16(std::string name, std::vector<std::int64_t> shape,
                    std::span<const std::uint16_t> v) {
  add(std::move(name), DType::BF16, std::move(shape), as_bytes(v));
}
void File::add_i32(std::string name, std::vector<std::int64_t> shape,
                   std::span<const std::int32_t> v) {
  add(std::move(name), DType::I32, std::move(shape), as_bytes(v));
}
void File::add_i64(std::string name, std::vector<std::int64_t> shape,
                   std::span<const std::int64_t> v) {
  add(std::move(name), DType::I64, std::move(shape), as_bytes(v));
}
void File::add_u8(std::string name, std::vector<std::int64_t> shape,
                  std::span<const std::uint8_t> v) {
  add(std::move(name), DType::U8, std::move(shape), v);
}

bool File::contains(std::string_view name) const { return tensors_.find(name) != tensors_.end(); }

const Tensor& File::get(std::string_view name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    throw Error("missing tensor '" + std::string(name) + "' in " + source);
  return it->second;
}

const std::string& File::meta(std::string_view key) const {
  auto it = metadata.find(std::string(key));
  if (it == metadata.end())
    throw Error("missing metadata key '" + std::string(key) + "' in " + source);
  return it->second;
}

std::vector<std::string> File::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [k, v] : tensors_) out.push_back(k);
  return out;
}

namespace {

std::string header_json(const File& f) {
  std::string h;
  json::Writer w(h);
  w.begin_object();
  if (!f.metadata.empty()) {
    w.key("__metadata__").begin_object();
    for (const auto& [k, v] : f.metadata) w.field(k, v);
    w.end_object();
  }
  std::uint64_t offset = 0;
  for (const auto& [name, t] : f.tensors()) {
    w.key(name).begin_object();
    w.field("dtype", dtype_name(t.dtype));
    w.key("shape").begin_array();
    for (auto d : t.shape) w.value(static_cast<long long>(d));
    w.end_array();
    w.key("data_offsets").begin_array();
    w.value(static_cast<unsigned long long>(offset));
    offset += t.bytes.size();
    w.value(static_cast<unsigned long long>(offset));
    w.end_array();
    w.end_object();
  }
  w.end_object();
  while (h.size() % 8 != 0) h += ' ';  // align the data part to 8 bytes
  return h;
}

void put_u64_le(char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

}  // namespace

std::string serialize(const File& f) {
  std::string h = header_json(f);
  std::size_t total = 8 + h.size();
  for (const auto& [n, t] : f.tensors()) total += t.bytes.size();
  std::string out;
  out.reserve(total);
  out.resize(8);
  put_u64_le(out.data(), h.size());
  out += h;
  for (const auto& [n, t] : f.tensors())
    out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return out;
}

File parse(std::string_view bytes, std::string_view source) {
  const std::string src(source);
  auto bad = [&](const std::string& what) -> Error {
    return Error(src + " is not a valid safetensors file: " + what);
  };
  if (bytes.size() < 8)
    throw bad("it is " + std::to_string(bytes.size()) + " bytes long, shorter than the 8-byte header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  const std::uint64_t available = bytes.size() - 8;
  if (n > available)
    throw bad("header length " + std::to_string(n) + " is beyond the end of the file (" +
              std::to_string(available) + " bytes after the length)");
  if (n > kMaxHeader) throw bad("header length " + std::to_string(n) + " is over 100 MB");
  if (n < 2) throw bad("header of " + std::to_string(n) + " bytes is too short for JSON");
  std::string_view header = bytes.substr(8, n);
  if (header[0] != '{') throw bad("header does not start with '{'");
  json::Value root;
  try {
    root = json::parse(header);
  } catch (const Error& e) {
    throw bad(std::string("bad header ") + e.what());
  }
  if (!root.is_object()) throw bad("header is not a JSON object");
  const std::string_view data = bytes.substr(8 + n);

  File f;
  f.source = src;
  struct Span {
    std::uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Span> spans;
  for (const auto& [name, v] : root.as_object()) {
    if (name == "__metadata__") {
      if (!v.is_object()) throw bad("\"__metadata__\" is not an object");
      for (const auto& [k, mv] : v.as_object()) {
        if (!mv.is_string()) throw bad("metadata value for " + json::quoted(k) + " is not a string");
        f.metadata[k] = mv.as_string();
      }
      continue;
    }
    // Names come from the file: quoted and escaped, so the error stays one printable line.
    const std::string where = "tensor " + json::quoted(name);
    if (name.empty()) throw bad("a tensor has an empty name");
    if (!v.is_object()) throw bad(where + " is not described by an object");
    const json::Value* dt = v.find("dtype");
    const json::Value* sh = v.find("shape");
    const json::Value* off = v.find("data_offsets");
    if (!dt || !dt->is_string()) throw bad(where + " has no string \"dtype\"");
    if (!sh || !sh->is_array()) throw bad(where + " has no array \"shape\"");
    if (!off || !off->is_array() || off->size() != 2)
      throw bad(where + " has no \"data_offsets\" pair [begin, end]");
    DType dtype;
    try {
      dtype = dtype_from_name(dt->as_string());
    } catch (const Error&) {
      throw bad(where + " has unknown dtype " + json::quoted(dt->as_string()));
    }
    std::vector<std::int64_t> shape;
    for (const auto& d : sh->as_array()) {
      if (!d.is_integer() || d.as_int() < 0)
        throw bad(where + " has a shape entry that is not a non-negative integer");
      shape.push_back(d.as_int());
    }
    const auto& o = off->as_array();
    if (!o[0].is_integer() || !o[1].is_integer() || o[0].as_int() < 0 || o[1].as_int() < 0)
      throw bad(where + " has data_offsets that are not non-negative integers");
    const auto b = static_cast<std::uint64_t>(o[0].as_int());
    const auto e = static_cast<std::uint64_t>(o[1].as_int());
    if (b > e) throw bad(where + " has data_offsets with begin " + std::to_string(b) + " after end " + std::to_string(e));
    if (e > data.size())
      throw bad(where + " has data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                "] beyond the " + std::to_string(data.size()) + " data bytes (truncated file?)");
    std::uint64_t numel = 0;
    const std::uint64_t es = dtype_size(dtype);
    if (!checked_numel(shape, numel) || numel > std::numeric_limits<std::uint64_t>::max() / es ||
        numel * es != e - b)
      throw bad(where + " of shape " + shape_text(shape) + " and dtype " + dt->as_string() +
                " does not match its " + std::to_string(e - b) + " data bytes");
    spans.push_back({b, e, &name});
    f.add(name, dtype, std::move(shape),
          std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(data.data()) + b,
                                        static_cast<std::size_t>(e - b)));
  }
  // The data part must be covered exactly: no overlaps, no holes, nothing left over.
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t at = 0;
  for (const auto& s : spans) {
    if (s.begin < at) throw bad("tensor " + json::quoted(*s.name) + " overlaps the tensor before it");
    if (s.begin > at)
      throw bad("a hole of unused bytes [" + std::to_string(at) + ", " + std::to_string(s.begin) +
                ") before tensor " + json::quoted(*s.name));
    at = s.end;
  }
  if (at != data.size())
    throw bad(std::to_string(data.size() - at) + " bytes after the last tensor belong to none");
  return f;
}

void save(const File& f, const std::string& path) {
  if (path.empty()) throw Error("safetensors: empty output path");
  const std::string h = header_json(f);
  files::write_atomic(
      path,
      [&](int fd, const std::string& name) {
        char len[8];
        put_u64_le(len, h.size());
        files::write_all(fd, len, 8, name);
        files::write_all(fd, h.data(), h.size(), name);
        for (const auto& [n, t] : f.tensors()) files::write_all(fd, t.bytes.data(), t.bytes.size(), name);
      },
      "checkpoint");
}

File load(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error("cannot load " + path + ": not a regular file");
  limits::require_memory(2 * static_cast<std::uint64_t>(st.st_size),
                         "checkpoint " + path + " (" + limits::bytes_text(static_cast<std::uint64_t>(st.st_size)) + ")",
                         "it cannot be loaded here");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path + ": " + std::strerror(errno));
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<std::size_t>(in.gcount()) != bytes.size()) throw Error("cannot read all of " + path);
  return parse(bytes, path);
}

}  // namespace onegpu::trainer::safetensors
