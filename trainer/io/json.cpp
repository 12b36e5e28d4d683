#include "trainer/io/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_set>

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

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  Parser(std::string_view s, int max_depth) : s_(s), max_depth_(max_depth) {}

  Value document() {
    skip_ws();
    Value v = value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("JSON: " + what + " at byte " + std::to_string(pos_));
  }
  void skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  Value value(int depth) {
    if (pos_ >= s_.size()) fail("unexpected end of input");
    char c = s_[pos_];
    switch (c) {
      case '{': return object(depth + 1);
      case '[': return array(depth + 1);
      case '"': return Value(string());
      case 't': if (literal("true")) return Value(true); break;
      case 'f': if (literal("false")) return Value(false); break;
      case 'n': if (literal("null")) return Value(); break;
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return number();
    }
    fail(std::string("unexpected character '") + printable(c) + "'");
  }

  static std::string printable(char c) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) return std::string(1, c);
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", u);
    return buf;
  }

  Value object(int depth) {
    if (depth > max_depth_) fail("nesting deeper than " + std::to_string(max_depth_));
    ++pos_;  // '{'
    Value v = Value::object();
    auto& members = v.as_object();
    std::unordered_set<std::string> seen;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return v;
    }
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a string key");
      std::size_t key_pos = pos_;
      std::string key = string();
      // Duplicate keys: a scan for small objects, a hash set for big ones (a checkpoint header
      // holds thousands of tensor names in one object).
      bool dup = false;
      if (members.size() < 16) {
        for (const auto& m : members) dup = dup || m.first == key;
      } else {
        if (seen.empty())
          for (const auto& m : members) seen.insert(m.first);
        dup = !seen.insert(key).second;
      }
      if (dup) {
        pos_ = key_pos;
        fail("duplicate key " + quoted(key));
      }
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') fail("expected ':'");
      ++pos_;
      skip_ws();
      members.emplace_back(std::move(key), value(depth));
      skip_ws();
      if (pos_ >= s_.size()) fail("unexpected end of input in an object");
      if (s_[pos_] == ',') { ++pos_; continue; }
      if (s_[pos_] == '}') { ++pos_; return v; }
      fail("expected ',' or '}'");
    }
  }

  Value array(int depth) {
    if (depth > max_depth_) fail("nesting deeper than " + std::to_string(max_depth_));
    ++pos_;  // '['
    Value v = Value::array();
    auto& items = v.as_array();
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return v;
    }
    for (;;) {
      skip_ws();
      items.push_back(value(depth));
      skip_ws();
      if (pos_ >= s_.size()) fail("unexpected end of input in an array");
      if (s_[pos_] == ',') { ++pos_; continue; }
      if (s_[pos_] == ']') { ++pos_; return v; }
      fail("expected ',' or ']'");
    }
  }

  std::uint32_t hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_ + i];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else fail("bad hex digit in \\u escape");
    }
    pos_ += 4;
    return v;
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') { ++pos_; return out; }
      if (c < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        // Copy a run of plain bytes at once.
        std::size_t start = pos_;
        while (pos_ < s_.size()) {
          unsigned char d = static_cast<unsigned char>(s_[pos_]);
          if (d == '"' || d == '\\' || d < 0x20) break;
          ++pos_;
        }
        out.append(s_.substr(start, pos_ - start));
        continue;
      }
      ++pos_;
      if (pos_ >= s_.size()) fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(pos_, 2) != "\\u") fail("unpaired surrogate in \\u escape");
            pos_ += 2;
            std::uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("unpaired surrogate in \\u escape");
          }
          append_utf8(out, cp);
          break;
        }
        default:
          --pos_;
          fail(std::string("invalid escape '\\") + printable(e) + "'");
      }
    }
  }

  Value number() {
    std::size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      std::size_t b = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ - b;
    };
    std::size_t int_start = pos_;
    std::size_t n_int = digits();
    if (n_int == 0) fail("expected digits in a number");
    if (n_int > 1 && s_[int_start] == '0') {
      pos_ = int_start;
      fail("leading zero in a number");
    }
    bool integral = true;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      integral = false;
      if (digits() == 0) fail("expected digits after '.'");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      integral = false;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (digits() == 0) fail("expected digits in an exponent");
    }
    const char* b = s_.data() + start;
    const char* e = s_.data() + pos_;
    if (integral) {
      long long iv = 0;
      auto r = std::from_chars(b, e, iv);
      if (r.ec == std::errc() && r.ptr == e) return Value(iv);
      // Too large for int64: fall through to double.
    }
    double d = 0;
    auto r = std::from_chars(b, e, d);
    if (r.ec == std::errc::result_out_of_range) {
      pos_ = start;
      fail("number out of range");
    }
    if (r.ec != std::errc() || r.ptr != e) {
      pos_ = start;
      fail("bad number");
    }
    return Value(d);
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  int max_depth_;
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

Value parse(std::string_view text, int max_depth) { return Parser(text, max_depth).document(); }

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
