#include "trainer/io/jsonl_log.h"

#include <cerrno>
#include <cstring>
#include <utility>

namespace onegpu::trainer {

JsonlLog::JsonlLog(const std::string& path, bool append) : path_(path) {
  if (path.empty()) throw Error("cannot open log: empty path");
  file_ = std::fopen(path.c_str(), append ? "ab" : "wb");
  if (!file_) throw Error("cannot open log " + path + ": " + std::strerror(errno));
}

JsonlLog::~JsonlLog() {
  if (file_) std::fclose(file_);
}

JsonlLog::JsonlLog(JsonlLog&& o) noexcept
    : file_(std::exchange(o.file_, nullptr)), path_(std::move(o.path_)), lines_(o.lines_) {}

JsonlLog& JsonlLog::operator=(JsonlLog&& o) noexcept {
  if (this != &o) {
    if (file_) std::fclose(file_);
    file_ = std::exchange(o.file_, nullptr);
    path_ = std::move(o.path_);
    lines_ = o.lines_;
  }
  return *this;
}

void JsonlLog::write_line(std::string_view object_json) {
  if (!file_) throw Error("log " + path_ + " is closed");
  if (object_json.find('\n') != std::string_view::npos)
    throw Error("log " + path_ + ": a JSONL line cannot contain a newline");
  // One valid JSON object per line, or a reader of the log breaks: check before writing.
  json::Value v;
  try {
    v = json::parse(object_json);
  } catch (const Error& e) {
    throw Error("log " + path_ + ": line is not valid JSON (" + e.what() + ")");
  }
  if (!v.is_object()) throw Error("log " + path_ + ": a JSONL line must be a JSON object");
  if (std::fwrite(object_json.data(), 1, object_json.size(), file_) != object_json.size() ||
      std::fputc('\n', file_) == EOF || std::fflush(file_) != 0)
    throw Error("cannot write log " + path_ + ": " + std::strerror(errno));
  ++lines_;
}

void JsonlLog::write(const json::Value& object) {
  if (!object.is_object()) throw Error("log " + path_ + ": a JSONL line must be a JSON object");
  write_line(object.dump());
}

}  // namespace onegpu::trainer
