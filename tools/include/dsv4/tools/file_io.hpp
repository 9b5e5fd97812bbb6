// All-or-nothing file writes of the CLIs: `golden`'s three files, dsv4-cache-plan --svg.
// A write either leaves every file complete and synced under its name, or removes what it
// wrote and throws `write_error` naming the path and the system's reason (the CLIs' exit 3).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace dsv4::tools::file_io {

/// A filesystem failure: the file or directory was not written (the CLIs' exit 3).
struct write_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

/// Writes `n` bytes to a new temporary file in `dir` (a name no other file has) and syncs it.
/// Returns its path. Throws write_error, leaving no file behind.
inline std::filesystem::path write_temp(const std::filesystem::path& dir, const std::string& name,
                                        const std::uint8_t* data, std::size_t n) {
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::uint64_t tag = (std::uint64_t{rd()} << 32 | rd()) & 0xFFFFFFFFFFFFULL;
    std::filesystem::path tmp = dir / fmt::format(".{}.tmp-{:012x}", name, tag);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      throw write_error(fmt::format("cannot create {}: {}", tmp.string(), errno_text(errno)));
    }
    std::size_t done = 0;
    int failed = 0;
    while (done < n && failed == 0) {
      const ssize_t w = ::write(fd, data + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0)
        failed = w < 0 ? errno : EIO;
      else
        done += static_cast<std::size_t>(w);
    }
    if (failed == 0 && ::fsync(fd) != 0) failed = errno;
    if (::close(fd) != 0 && failed == 0) failed = errno;
    if (failed != 0) {
      ::unlink(tmp.c_str());
      throw write_error(fmt::format("cannot write {}: {}", tmp.string(), errno_text(failed)));
    }
    return tmp;
  }
  throw write_error(fmt::format("cannot create a temporary file for {} in {}", name, dir.string()));
}

/// Writes `files` (name, bytes) to `dir`, all or nothing: `dir` is created with its parents when
/// missing; each file is written to a temporary file in `dir` and synced, then all are renamed
/// over their names. On any failure the temporaries, the files already renamed and a directory
/// it created are removed (a file it replaced is gone: it was renamed over), and write_error
/// names the path and the system's reason.
inline void write_files(const std::filesystem::path& dir,
                        const std::vector<std::pair<std::string, std::string_view>>& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool existed = fs::exists(dir, ec);
  if (!existed) {
    fs::create_directories(dir, ec);
    if (ec) throw write_error(fmt::format("cannot create directory {}: {}", dir.string(), ec.message()));
  } else if (!fs::is_directory(dir, ec)) {
    throw write_error(fmt::format("{} exists and is not a directory", dir.string()));
  }
  std::vector<fs::path> temps;
  std::size_t renamed = 0;
  try {
    for (const auto& [name, bytes] : files)
      temps.push_back(write_temp(dir, name, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
    for (std::size_t k = 0; k < files.size(); ++k) {
      fs::rename(temps[k], dir / files[k].first, ec);
      if (ec)
        throw write_error(fmt::format("cannot rename {} to {}: {}", temps[k].string(), files[k].first, ec.message()));
      ++renamed;
    }
    // Best effort: make the renames durable.
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      (void)::fsync(dfd);
      ::close(dfd);
    }
  } catch (...) {
    for (std::size_t k = 0; k < temps.size(); ++k) fs::remove(k < renamed ? dir / files[k].first : temps[k], ec);
    if (!existed) fs::remove(dir, ec);  // removes it only if empty
    throw;
  }
}

/// Writes `bytes` to `path` all or nothing (a temporary file in its directory, synced, renamed
/// over it). The directory must exist. Throws write_error naming `flag` (e.g. "--svg") and the path.
inline void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, std::string_view flag) {
  namespace fs = std::filesystem;
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw write_error(fmt::format("{} {}: directory {} does not exist", flag, path.string(), dir.string()));
  if (fs::is_directory(path, ec)) throw write_error(fmt::format("{} {}: is a directory", flag, path.string()));
  const fs::path tmp =
      write_temp(dir, path.filename().string(), reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw write_error(
        fmt::format("{} {}: cannot rename {} over it: {}", flag, path.string(), tmp.string(), ec.message()));
  }
}

}  // namespace dsv4::tools::file_io
