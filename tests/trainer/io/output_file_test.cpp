// trainer/io/output_file: whole files are written atomically, to regular files only, through
// symbolic links, with unique temporaries; stale temporaries of ours are cleaned.
#include "trainer/io/output_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <csignal>
#include <unistd.h>
#include <utime.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/temp_dir.h"
#include "trainer/error.h"
#include "trainer/io/safetensors.h"

using namespace onegpu::trainer;
using onegpu::trainer::testing::TempDir;
namespace fs = std::filesystem;

namespace {
std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
void put(const std::string& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}
int entries(const fs::path& d) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++n;
  return n;
}
}  // namespace

TEST(OutputFile, ReplacesAtomicallyAndLeavesNoTemporary) {
  TempDir d;
  const std::string p = d.file("out.json");
  files::write_atomic(p, "first");
  files::write_atomic(p, "second");
  EXPECT_EQ(slurp(p), "second");
  EXPECT_EQ(entries(d.path()), 1);
}

TEST(OutputFile, OthersTemporariesAreNeverTouched) {
  TempDir d;
  const std::string p = d.file("pic.png");
  put(p + ".tmp", "someone's");        // the old fixed name: overwritten and deleted before
  put(p + ".tmp-abc", "someone else's");  // not our pattern (six characters)
  files::write_atomic(p, "png");
  EXPECT_EQ(slurp(p + ".tmp"), "someone's");
  EXPECT_EQ(slurp(p + ".tmp-abc"), "someone else's");
}

TEST(OutputFile, RefusesDevicesFifosAndFolders) {
  TempDir d;
  const std::string fifo = d.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::string e = error_of([&] { files::write_atomic(fifo, "x"); });
  EXPECT_NE(e.find("is a FIFO; onegpu writes only regular files"), std::string::npos) << e;
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  e = error_of([&] { files::write_atomic("/dev/null", "x"); });
  EXPECT_NE(e.find("/dev/null is a device"), std::string::npos) << e;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  e = error_of([&] { files::check_output("/dev/full", "--out"); });
  EXPECT_EQ(e, "--out: /dev/full is a device; onegpu writes only regular files");
  e = error_of([&] { files::check_output(d.path().string(), "--out"); });
  EXPECT_NE(e.find("is a directory"), std::string::npos) << e;
  EXPECT_EQ(e.find("Success"), std::string::npos) << e;
  EXPECT_EQ(entries(d.path()), 1);
  // A log may be a FIFO or /dev/stdout: writing through is what a user means there.
  EXPECT_NO_THROW(files::check_output(fifo, "--log", /*stream=*/true));
  EXPECT_NO_THROW(files::check_output("/dev/null", "--log", /*stream=*/true));
}

TEST(OutputFile, SymbolicLinksAreWrittenThrough) {
  TempDir d;
  const std::string target = d.file("real.st"), link = d.file("link.st");
  put(target, "old");
  fs::create_symlink(target, link);
  files::write_atomic(link, "new");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "new");
  // A link to nothing, or to a device, is refused.
  fs::create_symlink(d.file("nothing"), d.file("dangling"));
  EXPECT_NE(error_of([&] { files::write_atomic(d.file("dangling"), "x"); }).find("symbolic link to nothing"),
            std::string::npos);
  fs::create_symlink("/dev/null", d.file("null"));
  EXPECT_NE(error_of([&] { files::write_atomic(d.file("null"), "x"); }).find("links to /dev/null, a device"),
            std::string::npos);
}

TEST(OutputFile, MissingFolderIsOneLineWithTheReason) {
  EXPECT_EQ(error_of([] { files::check_output("/nonexistent-dir/x.json", "--trace"); }),
            "--trace: cannot write /nonexistent-dir/x.json: folder /nonexistent-dir: No such file or directory");
  EXPECT_EQ(error_of([] { files::check_output("", "--save"); }), "--save needs a file name, got an empty one");
  EXPECT_NE(error_of([] { files::write_atomic("/nonexistent-dir/x.json", "x", "trace"); }).find("No such file"),
            std::string::npos);
}

TEST(OutputFile, StaleTemporariesOfOursAreRemovedLockedOnesKept) {
  TempDir d;
  const std::string p = d.file("ck.st");
  const std::string stale = p + ".tmp-AbC123", busy = p + ".tmp-XyZ789", young = p + ".tmp-Young1";
  for (const auto& f : {stale, busy, young}) put(f, std::string(1000, 'x'));
  struct utimbuf old {};
  old.actime = old.modtime = ::time(nullptr) - 60;
  ASSERT_EQ(::utime(stale.c_str(), &old), 0);
  ASSERT_EQ(::utime(busy.c_str(), &old), 0);
  // A live writer holds its temporary locked.
  const int fd = ::open(busy.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  safetensors::File f;
  f.metadata["k"] = "v";
  safetensors::save(f, p);
  EXPECT_FALSE(fs::exists(stale));  // left by a writer killed with -9
  EXPECT_TRUE(fs::exists(busy));    // in use
  EXPECT_TRUE(fs::exists(young));   // may be between mkstemp and flock
  ::close(fd);
  EXPECT_EQ(safetensors::load(p).meta("k"), "v");
}

TEST(OutputFile, AWriterKilledWithSignalNineLeavesATemporaryTheNextSaveRemoves) {
  TempDir d;
  const std::string p = d.file("ck.st");
  files::write_atomic(p, "old");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Writes half a file, then hangs until killed.
    files::write_atomic(p, [](int fd, const std::string& name) {
      files::write_all(fd, "half", 4, name);
      for (;;) ::pause();
    });
    ::_exit(0);
  }
  std::string tmp;
  for (int i = 0; i < 500 && tmp.empty(); ++i) {
    for (const auto& e : fs::directory_iterator(d.path()))
      if (e.path().filename().string().rfind("ck.st.tmp-", 0) == 0 && fs::file_size(e.path()) == 4) tmp = e.path();
    if (tmp.empty()) ::usleep(10000);
  }
  ASSERT_FALSE(tmp.empty()) << "the child never wrote";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(slurp(p), "old");  // the target is whole
  ASSERT_TRUE(fs::exists(tmp));
  struct utimbuf old {};
  old.actime = old.modtime = ::time(nullptr) - 60;
  ASSERT_EQ(::utime(tmp.c_str(), &old), 0);
  files::write_atomic(p, "new");
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_EQ(slurp(p), "new");
  EXPECT_EQ(entries(d.path()), 1);
}
