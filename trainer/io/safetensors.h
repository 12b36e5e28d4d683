#pragma once
// The safetensors file format (https://github.com/huggingface/safetensors, format only):
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   JSON: { "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//                     ..., "__metadata__": {"key": "string value", ...} }
//   rest      the raw little-endian tensor bytes; offsets are relative to the start of this part.
// Writing pads the header with spaces to a multiple of 8 bytes and orders tensors by name.
// Reading validates everything (lengths, JSON, dtypes, shapes, offsets in range, no overlap, no
// holes, shape × dtype size == byte count) and throws onegpu::trainer::Error with one clear line
// naming the file; it never reads out of bounds.
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/error.h"

namespace onegpu::trainer::safetensors {

enum class DType { BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64 };

std::size_t dtype_size(DType d);           // bytes per element
std::string_view dtype_name(DType d);      // "F32", "BF16", ...
DType dtype_from_name(std::string_view s); // throws Error for an unknown name

struct Tensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;  // empty = scalar (1 element)
  std::vector<std::uint8_t> bytes;  // little-endian, numel() * dtype_size(dtype) bytes

  std::size_t numel() const;
  // Copies of the data; a dtype mismatch throws Error naming the tensor.
  std::vector<float> f32() const;
  std::vector<std::uint16_t> bf16() const;  // raw bf16 bit patterns
  std::vector<std::int32_t> i32() const;
  std::vector<std::int64_t> i64() const;
  std::vector<std::uint8_t> u8() const;
};

// An in-memory safetensors file: named tensors plus string metadata.
class File {
 public:
  std::map<std::string, std::string> metadata;

  // Adds (or replaces) a tensor. Throws Error when bytes.size() != product(shape) × dtype size,
  // a dimension is negative, or the name is empty or "__metadata__".
  void add(std::string name, DType dtype, std::vector<std::int64_t> shape,
           std::span<const std::uint8_t> bytes);
  void add_f32(std::string name, std::vector<std::int64_t> shape, std::span<const float> v);
  void add_bf16(std::string name, std::vector<std::int64_t> shape, std::span<const std::uint16_t> v);
  void add_i32(std::string name, std::vector<std::int64_t> shape, std::span<const std::int32_t> v);
  void add_i64(std::string name, std::vector<std::int64_t> shape, std::span<const std::int64_t> v);
  void add_u8(std::string name, std::vector<std::int64_t> shape, std::span<const std::uint8_t> v);

  bool contains(std::string_view name) const;
  // Throws Error "missing tensor 'x' in <source>" when absent.
  const Tensor& get(std::string_view name) const;
  // Metadata lookup; throws Error "missing metadata key 'x' in <source>" when absent.
  const std::string& meta(std::string_view key) const;
  std::vector<std::string> names() const;  // sorted
  const std::map<std::string, Tensor, std::less<>>& tensors() const { return tensors_; }

  // Where this came from (a path, or "<memory>"); used in error messages.
  std::string source = "<memory>";

 private:
  std::map<std::string, Tensor, std::less<>> tensors_;
};

// The whole file as bytes, and back. parse() names `source` in its errors.
std::string serialize(const File& f);
File parse(std::string_view bytes, std::string_view source = "<memory>");

// Writes atomically: a temporary file in the same folder, fsync, rename over `path`, fsync of
// the folder. On failure the old file (if any) is untouched and Error names the path.
void save(const File& f, const std::string& path);
// Reads and validates; Error for a missing/unreadable file and every kind of corruption.
File load(const std::string& path);

}  // namespace onegpu::trainer::safetensors
