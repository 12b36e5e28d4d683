#pragma once
// A JSON Lines log: one JSON object per line, flushed after every line so a crash loses nothing
// already written and another process can follow the file.
#include <cstdio>
#include <string>
#include <string_view>

#include "trainer/error.h"
#include "trainer/io/json.h"

namespace onegpu::trainer {

class JsonlLog {
 public:
  // Opens (truncates, or appends when append is true) `path`; Error naming it if it cannot.
  explicit JsonlLog(const std::string& path, bool append = false);
  ~JsonlLog();
  JsonlLog(const JsonlLog&) = delete;
  JsonlLog& operator=(const JsonlLog&) = delete;
  JsonlLog(JsonlLog&& o) noexcept;
  JsonlLog& operator=(JsonlLog&& o) noexcept;

  // Writes one line. `object_json` must be one JSON object with no newline (as json::Writer
  // or json::Value::dump produce); anything else throws Error. A failed write throws Error.
  void write_line(std::string_view object_json);
  void write(const json::Value& object);

  const std::string& path() const { return path_; }
  std::size_t lines_written() const { return lines_; }

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
  std::size_t lines_ = 0;
};

}  // namespace onegpu::trainer
