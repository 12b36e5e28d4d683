#pragma once
// A small JSON reader and writer: the safetensors header, the JSONL step log and Chrome traces.
//
//   Writer  appends JSON text to a std::string you own, placing commas itself.
//   Value   a small DOM (null, bool, number, string, array, object) that parse() returns;
//           objects keep their keys in file order.
//
// Reading is done by Debian's nlohmann-json (a well-kept parser; the text is untrusted input:
// safetensors headers, traces). On top of it: no duplicate keys, nesting at most max_depth.
// Strings read must be UTF-8 (JSON's rule); the writer passes bytes >= 0x80 through unchecked,
// so write UTF-8 (everything onegpu writes is).
// Numbers keep their exact int64 value when written as an integer (safetensors offsets need it).
// Non-finite doubles are written as null (JSON has no NaN). Bad input throws onegpu::trainer::Error.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainer/error.h"

namespace onegpu::trainer::json {

// Appends s as a quoted JSON string ("\"", "\\", control characters escaped) to out.
void append_quoted(std::string& out, std::string_view s);
std::string quoted(std::string_view s);
// Appends a double in the shortest form that reads back to the same value; null if not finite.
void append_number(std::string& out, double v);

class Value {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };
  using Array = std::vector<Value>;
  using Object = std::vector<std::pair<std::string, Value>>;  // file order, unique keys

  Value() = default;  // null
  Value(std::nullptr_t) {}
  Value(bool b) : type_(Type::Bool), bool_(b) {}
  Value(double d);
  Value(int v) : Value(static_cast<long long>(v)) {}
  Value(long v) : Value(static_cast<long long>(v)) {}
  Value(long long v);
  Value(unsigned v) : Value(static_cast<unsigned long long>(v)) {}
  Value(unsigned long v) : Value(static_cast<unsigned long long>(v)) {}
  Value(unsigned long long v);  // above INT64_MAX it is stored as a double
  Value(std::string s) : type_(Type::String), string_(std::move(s)) {}
  Value(std::string_view s) : type_(Type::String), string_(s) {}
  Value(const char* s) : type_(Type::String), string_(s) {}
  static Value array(Array items = {});
  static Value object(Object members = {});

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool is_bool() const { return type_ == Type::Bool; }
  bool is_number() const { return type_ == Type::Number; }
  bool is_integer() const { return type_ == Type::Number && is_int_; }  // exact int64
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_object() const { return type_ == Type::Object; }

  // Typed access; a wrong type throws Error ("expected a string, found a number").
  bool as_bool() const;
  double as_double() const;
  std::int64_t as_int() const;  // only for integers (no fraction, fits int64)
  const std::string& as_string() const;
  const Array& as_array() const;
  Array& as_array();
  const Object& as_object() const;
  Object& as_object();

  // Object helpers. find() returns nullptr when absent (or when this is not an object);
  // at() throws Error naming the key; set() replaces or appends.
  const Value* find(std::string_view key) const;
  const Value& at(std::string_view key) const;
  Value& set(std::string key, Value v);
  // Array helper.
  Value& push_back(Value v);
  std::size_t size() const;  // elements of an array or members of an object, else 0

  // Compact JSON text (no spaces), objects in stored order.
  std::string dump() const;
  void dump_to(std::string& out) const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  Type type_ = Type::Null;
  bool bool_ = false;
  bool is_int_ = false;
  double number_ = 0.0;
  std::int64_t int_ = 0;
  std::string string_;
  Array array_;
  Object object_;
};

// Parses one JSON document (surrounding whitespace allowed, nothing else after it).
// Throws Error "JSON: <problem> at byte N" for bad input: duplicate keys, invalid escapes,
// unpaired surrogates, raw control characters in strings, nesting deeper than max_depth.
Value parse(std::string_view text, int max_depth = 128);

// Streaming writer. Usage:
//   std::string s; json::Writer w(s);
//   w.begin_object().key("step").value(3).key("loss").value(2.5).end_object();
// Misuse (a value where a key is due, unbalanced end_*) throws Error.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  Writer& begin_object();
  Writer& end_object();
  Writer& begin_array();
  Writer& end_array();
  Writer& key(std::string_view k);
  Writer& value(std::string_view s);
  Writer& value(const char* s) { return value(std::string_view(s)); }
  Writer& value(const std::string& s) { return value(std::string_view(s)); }
  Writer& value(bool b);
  Writer& value(double d);
  Writer& value(float f) { return value(static_cast<double>(f)); }
  Writer& value(int v) { return write_int(v); }
  Writer& value(long v) { return write_int(v); }
  Writer& value(long long v) { return write_int(v); }
  Writer& value(unsigned v) { return write_uint(v); }
  Writer& value(unsigned long v) { return write_uint(v); }
  Writer& value(unsigned long long v) { return write_uint(v); }
  Writer& value(const Value& v);  // a whole DOM value
  Writer& null();
  // key(k).value(v) in one call.
  template <class T>
  Writer& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  bool complete() const { return stack_.empty() && wrote_root_; }

 private:
  Writer& write_int(long long v);
  Writer& write_uint(unsigned long long v);
  void before_value();
  std::string& out_;
  enum class Ctx : std::uint8_t { ObjectKey, ObjectValue, Array };
  std::vector<Ctx> stack_;
  std::vector<bool> first_;
  bool wrote_root_ = false;
};

}  // namespace onegpu::trainer::json
