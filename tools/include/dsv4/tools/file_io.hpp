// File outputs of the CLIs: dsv4-cache-plan --svg FILE, dsv4-cache-layout golden --out DIR (its
// three files) and the Python package's Golden.write. One checked, all-or-nothing write path.
//
// What may be written (checked before anything is written: `check_output_file`):
//   - a new file in an existing folder the real user may write and search;
//   - an existing regular file the real user may write (access(2) checks the real uid and gid,
//     not the effective ones) in such a folder: it keeps its mode, and its owner where the
//     process may set it;
//   - a symlink whose final target is such a regular file: written through (the target is
//     replaced, the link stays).
// Anything else is refused with `refused_output` (a std::invalid_argument: the CLIs' exit 2), one
// line naming the path and what it is: a character or block device, a FIFO, a socket, a
// directory, a dangling symlink, a symlink loop, a symlink to something else than a regular file,
// a file or folder the user may not write, a folder that does not exist. `golden --out DIR` takes
// a new or existing directory (`check_output_dir`) and applies the same rule to each file in it.
//
// How a write goes: each file to a temporary file in its target's folder (O_CREAT | O_EXCL |
// O_NOFOLLOW, mode 0666 & ~umask; an existing target's mode and owner copied), written whole and
// fsync'd; an existing target hard-linked to a backup name (where the file system allows it);
// each target lstat'ed again just before rename(2) (refused if it changed kind or inode), renamed
// over; the folders fsync'd; the backups removed. A failed system call throws `write_error` (the
// CLIs' exit 3) with the system's reason (strerror): the temporary files are removed, the targets
// renamed over so far are put back from their backups (or removed when they were new), and the
// folders this write created are removed.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
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

/// An output path the CLIs refuse to write (the CLIs' exit 2): not a new file, a regular file the
/// real user may write or a symlink to one (or, for golden's DIR, a new or existing directory).
struct refused_output : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// The system's text for errno `e` (strerror), e.g. "Permission denied".
inline std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

/// What a file of mode `m` is, as the refusals name it: "a FIFO", "a character device", ...
inline std::string_view kind_of(::mode_t m) {
  if (S_ISREG(m)) return "a regular file";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISLNK(m)) return "a symlink";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "a special file";
}

/// The rule every refusal of a file output ends with.
inline constexpr std::string_view kOutputFileRule =
    "an output is written only as a new file, a regular file you may write, or a symlink to one";
/// The rule of golden's --out DIR.
inline constexpr std::string_view kOutputDirRule = "the output must be a new or existing directory you may write";

/// A checked output file (`check_output_file`).
struct output_target {
  std::filesystem::path path;    ///< as given
  std::filesystem::path file;    ///< the file replaced: `path`, or a symlink's final target (realpath)
  std::filesystem::path folder;  ///< file's folder: the temporary file is created there
  bool exists = false;           ///< `file` exists (a regular file): its mode and owner are kept
  bool via_symlink = false;      ///< `path` is a symlink to `file`
  ::dev_t dev = 0;               ///< `file`'s device and inode when it exists (checked again before rename)
  ::ino_t ino = 0;
  ::mode_t mode = 0;
  ::uid_t uid = 0;
  ::gid_t gid = 0;
};

namespace detail {

namespace fs = std::filesystem;

[[noreturn]] inline void refuse(std::string_view flag, const fs::path& path, std::string_view what) {
  throw refused_output(fmt::format("{} {}: {}", flag, path.string(), what));
}

[[noreturn]] inline void fail(std::string_view flag, const fs::path& path, std::string_view what, int e) {
  throw write_error(fmt::format("{} {}: {}: {}", flag, path.string(), what, errno_text(e)));
}

/// errno values of lstat/stat/realpath that are the path's fault (bad input), not the system's.
inline bool path_errno(int e) { return e == ENOTDIR || e == ELOOP || e == EACCES || e == ENAMETOOLONG; }
/// errno values of access(2) that mean "you may not write it".
inline bool denied_errno(int e) { return e == EACCES || e == EPERM || e == EROFS || e == ETXTBSY; }

inline fs::path folder_of(const fs::path& p) {
  return p.has_parent_path() && !p.parent_path().empty() ? p.parent_path() : fs::path(".");
}

/// A name no file has yet: ".NAME.<what>-XXXXXXXXXXXX".
inline std::string random_name(const fs::path& file, std::string_view what) {
  static thread_local std::random_device rd;
  const std::uint64_t tag = (std::uint64_t{rd()} << 32 | rd()) & 0xFFFFFFFFFFFFULL;
  return fmt::format(".{}.{}-{:012x}", file.filename().string(), what, tag);
}

/// Refuses unless `folder` (symlinks followed) is a directory the real user may write and search.
inline void check_folder(const fs::path& folder, std::string_view flag, const fs::path& path) {
  struct ::stat st {};
  if (::stat(folder.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT) refuse(flag, path, fmt::format("folder {} does not exist", folder.string()));
    if (path_errno(e))
      refuse(flag, path, fmt::format("folder {} cannot be reached: {}", folder.string(), errno_text(e)));
    fail(flag, path, fmt::format("cannot stat folder {}", folder.string()), e);
  }
  if (!S_ISDIR(st.st_mode))
    refuse(flag, path, fmt::format("{} is {}, not a folder", folder.string(), kind_of(st.st_mode)));
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    const int e = errno;
    if (denied_errno(e))
      refuse(flag, path,
             fmt::format("you may not write folder {} (mode {:04o}, owner uid {}): {}", folder.string(),
                         st.st_mode & 07777, st.st_uid, errno_text(e)));
    fail(flag, path, fmt::format("cannot check folder {}", folder.string()), e);
  }
}

}  // namespace detail

/// Checks that `path` may be written (the rule at the top of this file) and says what will be
/// replaced. `flag` names the option in messages ("--svg"). Throws refused_output (exit 2) naming
/// the path and what it is; write_error (exit 3) when a system call fails for another reason.
inline output_target check_output_file(const std::filesystem::path& path, std::string_view flag) {
  namespace fs = std::filesystem;
  using detail::refuse;
  output_target t;
  t.path = path;
  t.file = path;
  if (path.empty()) refuse(flag, path, "an empty path");
  struct ::stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT) {  // a new file (or a missing folder: check_folder says which)
      t.folder = detail::folder_of(path);
      detail::check_folder(t.folder, flag, path);
      return t;
    }
    if (detail::path_errno(e)) refuse(flag, path, fmt::format("cannot be reached: {}", errno_text(e)));
    detail::fail(flag, path, "cannot stat it", e);
  }
  if (S_ISLNK(st.st_mode)) {
    char* real = ::realpath(path.c_str(), nullptr);
    if (real == nullptr) {
      const int e = errno;
      if (e == ENOENT)
        refuse(flag, path, fmt::format("a dangling symlink (its target does not exist); {}", kOutputFileRule));
      if (e == ELOOP) refuse(flag, path, fmt::format("a symlink loop ({}); {}", errno_text(e), kOutputFileRule));
      if (detail::path_errno(e))
        refuse(flag, path, fmt::format("a symlink whose target cannot be reached: {}", errno_text(e)));
      detail::fail(flag, path, "cannot resolve the symlink", e);
    }
    t.file = real;
    std::free(real);
    t.via_symlink = true;
    if (::lstat(t.file.c_str(), &st) != 0) {
      const int e = errno;
      refuse(flag, path,
             fmt::format("a symlink whose target {} cannot be reached: {}", t.file.string(), errno_text(e)));
    }
    if (!S_ISREG(st.st_mode))
      refuse(flag, path,
             fmt::format("a symlink to {} ({}); {}", kind_of(st.st_mode), t.file.string(), kOutputFileRule));
  } else if (!S_ISREG(st.st_mode)) {
    refuse(flag, path, fmt::format("{}; {}", kind_of(st.st_mode), kOutputFileRule));
  }
  t.exists = true;
  t.dev = st.st_dev;
  t.ino = st.st_ino;
  t.mode = st.st_mode;
  t.uid = st.st_uid;
  t.gid = st.st_gid;
  if (::access(t.file.c_str(), W_OK) != 0) {  // the real user's right, not the effective one's
    const int e = errno;
    if (detail::denied_errno(e))
      refuse(flag, path,
             fmt::format("{}a regular file you may not write (mode {:04o}, owner uid {}): {}",
                         t.via_symlink ? "a symlink to " : "", st.st_mode & 07777, st.st_uid, errno_text(e)));
    detail::fail(flag, path, "cannot check it", e);
  }
  t.folder = detail::folder_of(t.file);
  detail::check_folder(t.folder, flag, path);
  return t;
}

namespace detail {

/// Refuses unless `dir` (lstat'ed into `st`) is a directory or a symlink to one the real user may
/// write and search.
inline void check_existing_dir(const fs::path& dir, struct ::stat& st, std::string_view flag) {
  if (S_ISLNK(st.st_mode)) {
    if (::stat(dir.c_str(), &st) != 0) {
      const int e = errno;
      if (e == ENOENT) refuse(flag, dir, fmt::format("a dangling symlink; {}", kOutputDirRule));
      if (e == ELOOP) refuse(flag, dir, fmt::format("a symlink loop ({}); {}", errno_text(e), kOutputDirRule));
      if (path_errno(e)) refuse(flag, dir, fmt::format("a symlink whose target cannot be reached: {}", errno_text(e)));
      fail(flag, dir, "cannot stat it", e);
    }
    if (!S_ISDIR(st.st_mode))
      refuse(flag, dir, fmt::format("a symlink to {}; {}", kind_of(st.st_mode), kOutputDirRule));
  } else if (!S_ISDIR(st.st_mode)) {
    refuse(flag, dir, fmt::format("{}; {}", kind_of(st.st_mode), kOutputDirRule));
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    const int e = errno;
    if (denied_errno(e))
      refuse(flag, dir,
             fmt::format("a directory you may not write (mode {:04o}, owner uid {}): {}", st.st_mode & 07777, st.st_uid,
                         errno_text(e)));
    fail(flag, dir, "cannot check it", e);
  }
}

}  // namespace detail

/// Checks golden's output directory `dir`: an existing directory (or a symlink to one) the real
/// user may write, or a new one whose nearest existing ancestor is such a directory. Returns the
/// folders to create, `dir` first (empty when it exists). Throws refused_output (exit 2) naming
/// `dir` and what it is; write_error (exit 3) for another failed system call.
inline std::vector<std::filesystem::path> check_output_dir(const std::filesystem::path& dir, std::string_view flag) {
  namespace fs = std::filesystem;
  if (dir.empty()) detail::refuse(flag, dir, "an empty path");
  struct ::stat st {};
  if (::lstat(dir.c_str(), &st) == 0) {
    detail::check_existing_dir(dir, st, flag);
    return {};
  }
  // Missing: walk up to the nearest existing ancestor (ENOTDIR: a file on the way, named by
  // check_folder), which must be a folder the real user may write.
  std::vector<fs::path> missing;
  fs::path p = dir;
  while (::lstat(p.c_str(), &st) != 0) {
    const int e = errno;
    if (e != ENOENT && e != ENOTDIR) {
      if (detail::path_errno(e))
        detail::refuse(flag, dir, fmt::format("{} cannot be reached: {}", p.string(), errno_text(e)));
      detail::fail(flag, dir, fmt::format("cannot stat {}", p.string()), e);
    }
    missing.push_back(p);
    const fs::path up = detail::folder_of(p);
    if (up == p) break;
    p = up;
  }
  detail::check_folder(p, flag, dir);
  return missing;
}

namespace detail {

/// Writes all of `bytes` to `fd`. Returns 0 or the errno of the failed write.
inline int write_all(int fd, std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    done += static_cast<std::size_t>(w);
  }
  return 0;
}

/// Gives `fd` t's owner (where the process may: EPERM is let be, an ordinary user cannot give a
/// file away) and mode. Returns 0 or the errno, with `what` saying which step failed.
inline int keep_mode_and_owner(int fd, const output_target& t, const char*& what) {
  struct ::stat own {};
  if (::fstat(fd, &own) != 0) return errno;
  if ((own.st_uid != t.uid || own.st_gid != t.gid) && ::fchown(fd, t.uid, t.gid) != 0 && errno != EPERM) {
    what = "cannot set the owner of";
    return errno;
  }
  if (::fchmod(fd, t.mode & 07777) != 0) {
    what = "cannot set the mode of";
    return errno;
  }
  return 0;
}

/// Writes `bytes` to a new temporary file in t.folder, with t's mode and owner when t exists,
/// synced. Returns its path; throws write_error, leaving no file behind.
inline fs::path write_temp(const output_target& t, std::string_view bytes, std::string_view flag) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    fs::path tmp = t.folder / random_name(t.file, "tmp");
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      fail(flag, t.path, fmt::format("cannot create {}", tmp.string()), errno);
    }
    const char* what = "cannot write";
    int failed = write_all(fd, bytes);
    if (failed == 0 && t.exists) failed = keep_mode_and_owner(fd, t, what);
    if (failed == 0 && ::fsync(fd) != 0) {
      failed = errno;
      what = "cannot sync";
    }
    if (::close(fd) != 0 && failed == 0) {
      failed = errno;
      what = "cannot close";
    }
    if (failed != 0) {
      ::unlink(tmp.c_str());
      fail(flag, t.path, fmt::format("{} {}", what, tmp.string()), failed);
    }
    return tmp;
  }
  throw write_error(
      fmt::format("{} {}: cannot find a free temporary name in {}", flag, t.path.string(), t.folder.string()));
}

/// A hard link to t.file under a free backup name in its folder, so that a failure after the
/// rename can put it back. Empty when the file system or fs.protected_hardlinks allows no link
/// (then a failure after the rename cannot restore it). Throws write_error for another failure.
inline fs::path backup_of(const output_target& t, std::string_view flag) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    fs::path b = t.folder / random_name(t.file, "bak");
    if (::link(t.file.c_str(), b.c_str()) == 0) return b;
    const int e = errno;
    if (e == EEXIST) continue;
    if (e == EPERM || e == EXDEV || e == EMLINK || e == ENOTSUP || e == EOPNOTSUPP || e == EACCES) return {};
    fail(flag, t.path, fmt::format("cannot link {} to {}", t.file.string(), b.string()), e);
  }
  return {};
}

/// Undoes a failed write_targets: targets [0, renamed) put back from their backups (or removed
/// when they were new), the other temporary files and backups removed.
inline void roll_back(const std::vector<output_target>& targets, const std::vector<fs::path>& temps,
                      const std::vector<fs::path>& backups, std::size_t renamed) {
  for (std::size_t k = 0; k < targets.size(); ++k) {
    if (k < renamed) {
      if (!backups[k].empty())
        (void)::rename(backups[k].c_str(), targets[k].file.c_str());
      else if (!targets[k].exists)
        (void)::unlink(targets[k].file.c_str());
      continue;
    }
    if (k < temps.size()) (void)::unlink(temps[k].c_str());
    if (!backups[k].empty()) (void)::unlink(backups[k].c_str());
  }
}

/// Refuses when t's target changed since `check_output_file` (another kind, another inode, a
/// file where there was none, a symlink that names another file).
inline void recheck(const output_target& t, std::string_view flag) {
  if (t.via_symlink) {
    char* real = ::realpath(t.path.c_str(), nullptr);
    const bool same = real != nullptr && fs::path(real) == t.file;
    std::free(real);
    if (!same)
      refuse(flag, t.path,
             fmt::format("changed while it was written: the symlink no longer names {}", t.file.string()));
  }
  struct ::stat st {};
  if (::lstat(t.file.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT && !t.exists) return;
    refuse(flag, t.path, fmt::format("changed while it was written: {}", errno_text(e)));
  }
  if (!t.exists) refuse(flag, t.path, fmt::format("changed while it was written: it is now {}", kind_of(st.st_mode)));
  if (!S_ISREG(st.st_mode) || st.st_dev != t.dev || st.st_ino != t.ino)
    refuse(flag, t.path,
           fmt::format("changed while it was written: it is now {}",
                       S_ISREG(st.st_mode) ? "another file" : kind_of(st.st_mode)));
}

/// Syncs the folder `dir` (its renames). File systems that cannot sync a folder are let be.
inline void sync_folder(const fs::path& dir, std::string_view flag, const fs::path& path) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(flag, path, fmt::format("cannot open folder {} to sync it", dir.string()), errno);
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0 && e != EINVAL && e != EROFS) fail(flag, path, fmt::format("cannot sync folder {}", dir.string()), e);
}

}  // namespace detail

/// Writes `bytes[k]` over `targets[k]` (each from `check_output_file`) all or nothing, as the top
/// of this file says. `before_rename`, when set, runs after every temporary file is written and
/// before the targets are checked again (tests swap a target there). Throws refused_output when a
/// target changed meanwhile, write_error when a system call fails; either way nothing is left
/// changed: the temporary files are removed, the targets already replaced put back.
inline void write_targets(const std::vector<output_target>& targets, const std::vector<std::string_view>& bytes,
                          std::string_view flag, const std::function<void()>& before_rename = {}) {
  namespace fs = std::filesystem;
  if (targets.size() != bytes.size()) throw std::logic_error("file_io::write_targets: one byte string per target");
  std::vector<fs::path> temps;
  std::vector<fs::path> backups(targets.size());
  std::size_t renamed = 0;
  try {
    for (std::size_t k = 0; k < targets.size(); ++k) temps.push_back(detail::write_temp(targets[k], bytes[k], flag));
    for (std::size_t k = 0; k < targets.size(); ++k)
      if (targets[k].exists) backups[k] = detail::backup_of(targets[k], flag);
    if (before_rename) before_rename();
    for (std::size_t k = 0; k < targets.size(); ++k) {
      detail::recheck(targets[k], flag);
      if (::rename(temps[k].c_str(), targets[k].file.c_str()) != 0)
        detail::fail(flag, targets[k].path,
                     fmt::format("cannot rename {} over {}", temps[k].string(), targets[k].file.string()), errno);
      ++renamed;
    }
    std::vector<fs::path> folders;
    for (const output_target& t : targets)
      if (std::find(folders.begin(), folders.end(), t.folder) == folders.end()) folders.push_back(t.folder);
    for (const fs::path& f : folders) detail::sync_folder(f, flag, targets.front().path);
  } catch (...) {
    detail::roll_back(targets, temps, backups, renamed);
    throw;
  }
  for (const fs::path& b : backups)
    if (!b.empty()) (void)::unlink(b.c_str());
}

/// Writes `bytes` to `path` all or nothing: `check_output_file`, then `write_targets`. `flag`
/// names the option in messages (e.g. "--svg"). Throws refused_output (exit 2) or write_error
/// (exit 3); on either, nothing was changed.
inline void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, std::string_view flag,
                              const std::function<void()>& before_rename = {}) {
  write_targets({check_output_file(path, flag)}, {bytes}, flag, before_rename);
}

/// Writes `files` (name, bytes) into `dir` all or nothing: `dir` is checked (`check_output_dir`)
/// and created with its missing parents; each file is checked (`check_output_file`; two names
/// for one file are refused) and written by `write_targets`, in order (golden writes its manifest
/// last). On any failure the files are as they were and the folders this call created are
/// removed. Throws refused_output (exit 2) naming the path and what it is, or write_error (exit 3).
inline void write_files(const std::filesystem::path& dir,
                        const std::vector<std::pair<std::string, std::string_view>>& files,
                        std::string_view flag = "--out", const std::function<void()>& before_rename = {}) {
  namespace fs = std::filesystem;
  const std::vector<fs::path> missing = check_output_dir(dir, flag);
  std::vector<fs::path> created;
  const auto remove_created = [&] {
    for (const fs::path& c : created) (void)::rmdir(c.c_str());  // deepest first; only if empty
  };
  for (std::size_t k = missing.size(); k-- > 0;) {  // the shallowest first
    const fs::path& m = missing[k];
    if (::mkdir(m.c_str(), 0777) != 0) {
      const int e = errno;
      struct ::stat st {};
      if (e == EEXIST && ::stat(m.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;  // made meanwhile
      remove_created();
      detail::fail(flag, dir, fmt::format("cannot create folder {}", m.string()), e);
    }
    created.insert(created.begin(), m);
  }
  try {
    std::vector<output_target> targets;
    std::vector<std::string_view> bytes;
    for (const auto& [name, data] : files) {
      if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        throw std::logic_error("file_io::write_files: a file name, not a path: " + name);
      output_target t = check_output_file(dir / name, flag);
      for (const output_target& o : targets)
        if ((t.exists && o.exists && t.dev == o.dev && t.ino == o.ino) || (!t.exists && !o.exists && t.file == o.file))
          detail::refuse(flag, t.path, fmt::format("names the same file as {}", o.path.string()));
      targets.push_back(std::move(t));
      bytes.push_back(data);
    }
    write_targets(targets, bytes, flag, before_rename);
  } catch (...) {
    remove_created();
    throw;
  }
}

}  // namespace dsv4::tools::file_io
