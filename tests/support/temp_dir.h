#pragma once
// A fresh folder per test, removed afterwards.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace onegpu::trainer::testing {

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("onegpu_data_") + (info ? info->name() : "x") + "_" +
                       std::to_string(::getpid());
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace onegpu::trainer::testing
