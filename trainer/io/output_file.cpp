#include "trainer/io/output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "trainer/error.h"
#include "trainer/io/text.h"

namespace onegpu::trainer::files {

namespace {

std::string reason(int err) { return std::strerror(err); }

std::string folder_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

bool is_our_temporary(const std::string& name, const std::string& base) {
  const std::string prefix = base + ".tmp-";
  return name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

std::string resolve_target(const std::string& path, std::string_view flag) {
  const std::string f(flag), p = text::printable(path);
  if (path.empty()) throw Error(f + " needs a file name, got an empty one");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return path;  // a new file
    throw Error(f + ": cannot write " + p + ": " + reason(errno));
  }
  if (S_ISREG(st.st_mode)) return path;
  if (!S_ISLNK(st.st_mode))
    throw Error(f + ": " + p + " is " + kind_of(st.st_mode) + "; onegpu writes only regular files");
  // A symbolic link: write through to the file it names.
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf))
    throw Error(f + ": " + p + " is a symbolic link to nothing (" + reason(errno) + "); remove it or name another file");
  struct stat t {};
  if (::stat(buf, &t) != 0) throw Error(f + ": cannot write " + p + ": " + reason(errno));
  if (!S_ISREG(t.st_mode))
    throw Error(f + ": " + p + " links to " + text::printable(buf) + ", " + kind_of(t.st_mode) +
                "; onegpu writes only regular files");
  return buf;
}

void check_output(const std::string& path, std::string_view flag, bool stream) {
  const std::string f(flag), p = text::printable(path);
  if (path.empty()) throw Error(f + " needs a file name, got an empty one");
  if (stream) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) return;
  }
  const std::string target = resolve_target(path, flag);
  const std::string dir = folder_of(target);
  struct stat d {};
  if (::stat(dir.c_str(), &d) != 0) throw Error(f + ": cannot write " + p + ": folder " + text::printable(dir) + ": " + reason(errno));
  if (!S_ISDIR(d.st_mode)) throw Error(f + ": cannot write " + p + ": " + text::printable(dir) + " is not a folder");
  // The one sure test: create a temporary there (as write_atomic will), then remove it.
  std::string tmpl = target + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw Error(f + ": cannot write " + p + ": " + reason(errno));
  ::close(fd);
  ::unlink(tmpl.c_str());
}

void write_all(int fd, const void* data, std::size_t n, const std::string& name) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot write " + text::printable(name) + ": " + reason(errno));
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

int remove_stale_temporaries(const std::string& target, int min_age_s) {
  const std::string dir = folder_of(target), base = base_of(target);
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  int removed = 0;
  const std::time_t now = std::time(nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (!is_our_temporary(name, base)) continue;
    const std::string full = dir + "/" + name;
    const int fd = ::open(full.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    // Ours are regular files, unlocked once their writer is gone, and not brand new (a writer
    // may be between mkstemp and flock).
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime >= min_age_s &&
        ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      if (::unlink(full.c_str()) == 0) ++removed;
    }
    ::close(fd);
  }
  ::closedir(d);
  return removed;
}

void write_atomic(const std::string& path, const std::function<void(int, const std::string&)>& fill,
                  std::string_view what) {
  const std::string w(what);
  const std::string target = resolve_target(path, "cannot write " + w);
  remove_stale_temporaries(target);
  std::string tmpl = target + ".tmp-XXXXXX";
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw Error("cannot write " + text::printable(path) + " (" + w + "): " + reason(errno));
  const std::string tmp = tmpl;
  try {
    ::flock(fd, LOCK_EX | LOCK_NB);  // held until close: marks the temporary as in use
    fill(fd, path);
    ::fchmod(fd, 0644);
    if (::fsync(fd) != 0) throw Error("cannot write " + text::printable(path) + " (" + w + "): " + reason(errno));
    const int c = ::close(fd);
    const int err = errno;
    fd = -1;
    if (c != 0) throw Error("cannot write " + text::printable(path) + " (" + w + "): " + reason(err));
    if (::rename(tmp.c_str(), target.c_str()) != 0)
      throw Error("cannot write " + text::printable(path) + " (" + w + "): " + reason(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // Make the rename itself durable.
  const int dfd = ::open(folder_of(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_atomic(const std::string& path, std::string_view bytes, std::string_view what) {
  write_atomic(path, [&](int fd, const std::string& name) { write_all(fd, bytes.data(), bytes.size(), name); }, what);
}

}  // namespace onegpu::trainer::files
