#pragma once
// Writing output files safely: every file onegpu writes whole (a checkpoint, a trace, a PNG)
// goes through write_atomic, and every path a command will write is checked with
// check_output before any work starts.
//
// The rules, in one place:
//   - The file is written to a unique temporary next to it (NAME.tmp-XXXXXX, mkstemp), synced,
//     and renamed over NAME, so a reader sees the old file or the new one, never half of one;
//     an existing NAME.tmp or NAME.tmp-abc of someone else is never touched.
//   - Only regular files are written. A directory, a device (/dev/full, /dev/sda), a FIFO or a
//     socket is refused with one line; a device is never opened.
//   - A symbolic link is written through: the file it points to is replaced and the link kept.
//     A link to nothing, or to something that is not a regular file, is refused.
//   - While writing, the temporary is locked (flock). A temporary left by a writer that died
//     (kill -9) is unlocked: the next write of the same NAME removes it, if it is older than a
//     few seconds.
// Errors are trainer::Error, one line naming the path and the reason (strerror of the call
// that failed, never of a later clean-up).
#include <functional>
#include <string>
#include <string_view>

namespace onegpu::trainer::files {

// Throws Error unless `path` can be written as a whole file by write_atomic: not empty, not an
// existing non-regular file, its folder exists and a temporary can be created there (tried).
// `flag` starts the message ("--save", "--trace", ...). With stream=true (a log that is
// appended to) a FIFO or character device is accepted too: writing through it is what a user
// who says `--log /dev/stdout` means.
void check_output(const std::string& path, std::string_view flag, bool stream = false);

// Writes the file atomically as described above; fill(fd) writes the contents to the
// temporary (use write_all; the name it is given is `path`, for messages). `what` names the file in messages ("trace", "checkpoint").
void write_atomic(const std::string& path, const std::function<void(int fd, const std::string& tmp)>& fill,
                  std::string_view what = "file");
void write_atomic(const std::string& path, std::string_view bytes, std::string_view what = "file");

// write(2) until done; Error "cannot write <name>: <reason>".
void write_all(int fd, const void* data, std::size_t n, const std::string& name);

// The file write_atomic would replace for `path` (a symbolic link resolved); throws like
// check_output for targets it refuses.
std::string resolve_target(const std::string& path, std::string_view flag);

// Removes NAME.tmp-XXXXXX files of ours left next to `target` by writers that died (unlocked
// and older than min_age_s seconds). Returns how many were removed.
int remove_stale_temporaries(const std::string& target, int min_age_s = 5);

}  // namespace onegpu::trainer::files
