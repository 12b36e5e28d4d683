#include "trainer/io/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace onegpu::trainer::json {

namespace {

const char* type_name(Value::Type t) {
  switch (t) {
    case Value::Type::Null: return "null";
    case Value::Type::Bool: return "a boolean";
    case Value::Type::Number: return "a number";
    case Value::Type::String: return "a string";
    case Value::Type::Array: return "an array";
    case Value::Type::Object: return "an object";
  }
  return "?";
}

[[noreturn]] void wrong_type(const char* want, Value::Type got) {
  throw Error(std::string("JSON: expected ") + want + ", found " + type_name(got));
}

// Builds our Value from nlohmann's SAX events: nlohmann's parser reads the text (grammar,
// escapes, surrogates, UTF-8, numbers); this keeps our two rules on top of it, no duplicate
// keys and no nesting deeper than max_depth, and turns its errors into one line of ours.
class Builder {
 public:
  explicit Builder(int max_depth) : max_depth_(max_depth) {}

  bool null() { return put(Value()); }
  bool boolean(bool b) { return put(Value(b)); }
  bool number_integer(std::int64_t v) { return put(Value(static_cast<long long>(v))); }
  bool number_unsigned(std::uint64_t v) { return put(Value(static_cast<unsigned long long>(v))); }
  bool number_float(double v, const std::string&) { return put(Value(v)); }
  bool string(std::string& v) { return put(Value(std::move(v))); }
  bool binary(nlohmann::json::binary_t&) { return false; }  // JSON text has none
  bool start_object(std::size_t) { return open(Value::object()); }
  bool start_array(std::size_t) { return open(Value::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    Frame& f = stack_.back();
    // Small objects are searched; big ones keep a hash set (a header of thousands of tensors).
    const auto& members = f.value.as_object();
    bool dup = false;
    if (members.size() < 16) {
      for (const auto& [name, v] : members) dup = dup || name == k;
    } else {
      if (f.keys.empty())
        for (const auto& [name, v] : members) f.keys.insert(name);
      dup = f.keys.count(k) != 0;
    }
    if (dup) throw Error("JSON: duplicate key " + ::onegpu::trainer::json::quoted(k));
    if (members.size() >= 16) f.keys.insert(k);
    f.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." ->
    // "JSON: syntax error ... at byte 5".
    std::string what = ex.what();
    if (!what.empty() && what[0] == '[') {
      const auto close = what.find("] ");
      if (close != std::string::npos) what = what.substr(close + 2);
    }
    if (what.rfind("parse error", 0) == 0) {
      const auto colon = what.find(": ");
      if (colon != std::string::npos) what = what.substr(colon + 2);
    }
    // nlohmann quotes the token it stopped in, which may be long or hold raw bytes: left out.
    if (const auto last = what.find("; last read: "); last != std::string::npos) what.resize(last);
    throw Error("JSON: " + what + " at byte " + std::to_string(position > 0 ? position - 1 : 0));
  }

  Value take() { return std::move(root_); }

 private:
  struct Frame {
    Value value;
    std::string key;                       // the key of the member being read (objects)
    std::unordered_set<std::string> keys;  // filled once an object is big
  };
  bool open(Value v) {
    if (static_cast<int>(stack_.size()) >= max_depth_)
      throw Error("JSON: nesting deeper than " + std::to_string(max_depth_) + " levels");
    stack_.push_back({std::move(v), {}, {}});
    return true;
  }
  bool close() {
    Value v = std::move(stack_.back().value);
    stack_.pop_back();
    return put(std::move(v));
  }
  bool put(Value v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return true;
    }
    Frame& f = stack_.back();
    if (f.value.is_array()) f.value.as_array().push_back(std::move(v));
    else f.value.as_object().emplace_back(std::move(f.key), std::move(v));
    return true;
  }

  int max_depth_;
  std::vector<Frame> stack_;
  Value root_;
};

}  // namespace

void append_quoted(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  std::size_t run = 0;  // start of the pending run of plain bytes
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.substr(run, i - run));
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
    }
  }
  out.append(s.substr(run));
  out += '"';
}

std::string quoted(std::string_view s) {
  std::string out;
  append_quoted(out, s);
  return out;
}

void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  if (v == 0 && std::signbit(v)) {  // "-0" would read back as the integer 0 and lose the sign
    out += "-0.0";
    return;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  out.append(buf, r.ptr);
}

// ---- Value ----

Value::Value(double d) : type_(Type::Number), number_(d) {}

Value::Value(long long v)
    : type_(Type::Number), is_int_(true), number_(static_cast<double>(v)), int_(v) {}

Value::Value(unsigned long long v) : type_(Type::Number), number_(static_cast<double>(v)) {
  if (v <= static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max())) {
    is_int_ = true;
    int_ = static_cast<std::int64_t>(v);
  }
}

Value Value::array(Array items) {
  Value v;
  v.type_ = Type::Array;
  v.array_ = std::move(items);
  return v;
}

Value Value::object(Object members) {
  Value v;
  v.type_ = Type::Object;
  v.object_ = std::move(members);
  return v;
}

bool Value::as_bool() const {
  if (type_ != Type::Bool) wrong_type("a boolean", type_);
  return bool_;
}
double Value::as_double() const {
  if (type_ != Type::Number) wrong_type("a number", type_);
  return number_;
}
std::int64_t Value::as_int() const {
  if (type_ != Type::Number) wrong_type("an integer", type_);
  if (!is_int_) throw Error("JSON: expected an integer, found " + dump());
  return int_;
}
const std::string& Value::as_string() const {
  if (type_ != Type::String) wrong_type("a string", type_);
  return string_;
}
const Value::Array& Value::as_array() const {
  if (type_ != Type::Array) wrong_type("an array", type_);
  return array_;
}
Value::Array& Value::as_array() {
  if (type_ != Type::Array) wrong_type("an array", type_);
  return array_;
}
const Value::Object& Value::as_object() const {
  if (type_ != Type::Object) wrong_type("an object", type_);
  return object_;
}
Value::Object& Value::as_object() {
  if (type_ != Type::Object) wrong_type("an object", type_);
  return object_;
}

const Value* Value::find(std::string_view key) const {
  if (type_ != Type::Object) return nullptr;
  for (const auto& m : object_)
    if (m.first == key) return &m.second;
  return nullptr;
}

const Value& Value::at(std::string_view key) const {
  if (type_ != Type::Object) wrong_type("an object", type_);
  if (const Value* v = find(key)) return *v;
  throw Error("JSON: missing key " + quoted(key));
}

Value& Value::set(std::string key, Value v) {
  if (type_ != Type::Object) wrong_type("an object", type_);
  for (auto& m : object_)
    if (m.first == key) {
      m.second = std::move(v);
      return m.second;
    }
  object_.emplace_back(std::move(key), std::move(v));
  return object_.back().second;
}

Value& Value::push_back(Value v) {
  if (type_ != Type::Array) wrong_type("an array", type_);
  array_.push_back(std::move(v));
  return array_.back();
}

std::size_t Value::size() const {
  if (type_ == Type::Array) return array_.size();
  if (type_ == Type::Object) return object_.size();
  return 0;
}

std::string Value::dump() const {
  std::string out;
  dump_to(out);
  return out;
}

void Value::dump_to(std::string& out) const {
  switch (type_) {
    case Type::Null: out += "null"; break;
    case Type::Bool: out += bool_ ? "true" : "false"; break;
    case Type::Number:
      if (is_int_) out += std::to_string(int_);
      else append_number(out, number_);
      break;
    case Type::String: append_quoted(out, string_); break;
    case Type::Array:
      out += '[';
      for (std::size_t i = 0; i < array_.size(); ++i) {
        if (i) out += ',';
        array_[i].dump_to(out);
      }
      out += ']';
      break;
    case Type::Object:
      out += '{';
      for (std::size_t i = 0; i < object_.size(); ++i) {
        if (i) out += ',';
        append_quoted(out, object_[i].first);
        out += ':';
        object_[i].second.dump_to(out);
      }
      out += '}';
      break;
  }
}

bool operator==(const Value& a, const Value& b) {
  if (a.type_ != b.type_) return false;
  switch (a.type_) {
    case Value::Type::Null: return true;
    case Value::Type::Bool: return a.bool_ == b.bool_;
    case Value::Type::Number:
      if (a.is_int_ && b.is_int_) return a.int_ == b.int_;
      return a.number_ == b.number_;
    case Value::Type::String: return a.string_ == b.string_;
    case Value::Type::Array: return a.array_ == b.array_;
    case Value::Type::Object: return a.object_ == b.object_;
  }
  return false;
}

Value parse(std::string_view text, int max_depth) {
  Builder b(max_depth);
  // strict: nothing but whitespace after the value; comments are not JSON.
  nlohmann::json::sax_parse(text.begin(), text.end(), &b, nlohmann::json::input_format_t::json, /*strict=*/true,
                            /*ignore_comments=*/false);
  return b.take();
}

// ---- Writer ----

void Writer::before_value() {
  if (stack_.empty()) {
    if (wrote_root_) throw Error("JSON writer: a second top-level value");
    wrote_root_ = true;
    return;
  }
  switch (stack_.back()) {
    case Ctx::ObjectKey: throw Error("JSON writer: a value where an object key is due");
    case Ctx::ObjectValue: stack_.back() = Ctx::ObjectKey; break;
    case Ctx::Array:
      if (!first_.back()) out_ += ',';
      first_.back() = false;
      break;
  }
}

Writer& Writer::begin_object() {
  before_value();
  out_ += '{';
  stack_.push_back(Ctx::ObjectKey);
  first_.push_back(true);
  return *this;
}

Writer& Writer::end_object() {
  if (stack_.empty() || stack_.back() != Ctx::ObjectKey)
    throw Error("JSON writer: end_object without a matching begin_object (or after a key)");
  out_ += '}';
  stack_.pop_back();
  first_.pop_back();
  return *this;
}

Writer& Writer::begin_array() {
  before_value();
  out_ += '[';
  stack_.push_back(Ctx::Array);
  first_.push_back(true);
  return *this;
}

Writer& Writer::end_array() {
  if (stack_.empty() || stack_.back() != Ctx::Array)
    throw Error("JSON writer: end_array without a matching begin_array");
  out_ += ']';
  stack_.pop_back();
  first_.pop_back();
  return *this;
}

Writer& Writer::key(std::string_view k) {
  if (stack_.empty() || stack_.back() != Ctx::ObjectKey)
    throw Error("JSON writer: a key outside an object, or two keys in a row");
  if (!first_.back()) out_ += ',';
  first_.back() = false;
  append_quoted(out_, k);
  out_ += ':';
  stack_.back() = Ctx::ObjectValue;
  return *this;
}

Writer& Writer::value(std::string_view s) {
  before_value();
  append_quoted(out_, s);
  return *this;
}

Writer& Writer::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

Writer& Writer::value(double d) {
  before_value();
  append_number(out_, d);
  return *this;
}

Writer& Writer::write_int(long long v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

Writer& Writer::write_uint(unsigned long long v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

Writer& Writer::value(const Value& v) {
  before_value();
  v.dump_to(out_);
  return *this;
}

Writer& Writer::null() {
  before_value();
  out_ += "null";
  return *this;
}

}  // namespace onegpu::trainer::json
