// File outputs of the CLIs (tools/include/dsv4/tools/file_io.hpp): dsv4-cache-plan --svg FILE
// and dsv4-cache-layout golden --out DIR write only a new file, a regular file the real user may
// write or a symlink to one (written through), refuse everything else with exit 2 naming the path
// and what it is, and stay all or nothing (exit 3 with the system's reason, nothing left behind).
// Every kind of target is made in a mkdtemp folder; the expectations come from lstat(2) of what
// the test made, never from the code under test. Cases that need root (mknod) or an ordinary user
// (a 0444 file: root may write it) run in a forked child that becomes `nobody` (uid 65534) when
// the test runs as root, directly otherwise, and skip saying why when neither is possible.
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.hpp"
#include "dsv4/tools/file_io.hpp"
#include "dsv4/tools/layout_cli.hpp"
#include "dsv4/tools/planner_cli.hpp"

namespace {
namespace fs = std::filesystem;
namespace file_io = dsv4::tools::file_io;

constexpr uid_t kNobody = 65534;

using run_result = dsv4::cache::testing::cli_run;

/// dsv4-cache-plan in process.
run_result plan(const std::vector<std::string>& args) {
  return dsv4::cache::testing::run_in_process(
      [&](std::ostream& out, std::ostream& err) { return dsv4::cache::cli::run_planner(args, out, err); });
}

/// dsv4-cache-layout in process.
run_result layout(const std::vector<std::string>& args) {
  return dsv4::cache::testing::run_in_process(
      [&](std::ostream& out, std::ostream& err) { return dsv4::tools::run_layout(args, out, err); });
}

std::string slurp(std::FILE* f) {
  std::string s;
  std::rewind(f);
  char buf[4096];
  while (const std::size_t n = std::fread(buf, 1, sizeof buf, f)) s.append(buf, n);
  std::fclose(f);
  return s;
}

/// Runs the built binary `bin` with `args` in a forked child; `in_child` runs in the child before
/// exec (only async-signal-safe calls: setuid, setrlimit, signal). Exit code 125: `in_child`
/// failed; 127: exec failed.
run_result run_binary(const char* bin, const std::vector<std::string>& args,
                      const std::function<bool()>& in_child = {}) {
  std::vector<std::string> all{bin};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  if (out == nullptr || err == nullptr) {
    ADD_FAILURE() << "tmpfile: " << std::strerror(errno);
    return {};
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(::fileno(out), 1);
    ::dup2(::fileno(err), 2);
    if (in_child && !in_child()) ::_exit(125);
    ::execv(bin, argv.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) ADD_FAILURE() << "fork/waitpid: " << std::strerror(errno);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(out), slurp(err)};
}

/// In the child: become `nobody` (no supplementary groups). Async-signal-safe.
bool become_nobody() { return ::setgroups(0, nullptr) == 0 && ::setgid(kNobody) == 0 && ::setuid(kNobody) == 0; }

/// A fresh mkdtemp folder, removed with everything in it at the end.
struct temp_folder {
  fs::path path;
  temp_folder() {
    std::string t = (fs::temp_directory_path() / "dsv4-file-output-XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    path = t;
  }
  ~temp_folder() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    for (const auto& e : fs::recursive_directory_iterator(path, ec))
      if (e.is_directory(ec) && !e.is_symlink(ec))
        fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  fs::path operator/(const std::string& name) const { return path / name; }
  std::string str(const std::string& name) const { return (path / name).string(); }
};

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& p, const std::string& bytes, mode_t mode) {
  std::ofstream(p, std::ios::binary) << bytes;
  ASSERT_EQ(::chmod(p.c_str(), mode), 0) << p;
}

struct ::stat lstat_of(const fs::path& p) {
  struct ::stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p << ": " << std::strerror(errno);
  return st;
}

mode_t current_umask() {
  const mode_t u = ::umask(0);
  ::umask(u);
  return u;
}

/// A Unix socket bound at `p` (the file stays after the socket is closed).
bool make_socket(const fs::path& p) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (p.string().size() >= sizeof addr.sun_path) return false;
  std::strcpy(addr.sun_path, p.c_str());
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

bool is_svg(const std::string& s) { return s.rfind("<?xml", 0) == 0 && s.find("</svg>\n") != std::string::npos; }

/// One line on stderr that holds every part, nothing on stdout.
void expect_one_line(const run_result& r, std::initializer_list<std::string> parts) {
  EXPECT_TRUE(r.out.empty()) << r.out;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  for (const std::string& p : parts)
    EXPECT_NE(r.err.find(p), std::string::npos) << "missing '" << p << "' in " << r.err;
}

TEST(FileOutput, NewPathIsWrittenWithTheUmaskMode) {
  temp_folder t;
  const run_result r = plan({"--svg", t.str("plan.svg")});
  ASSERT_EQ(r.code, 0) << r.err;
  const struct ::stat st = lstat_of(t / "plan.svg");
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0666 & ~current_umask());
  EXPECT_TRUE(is_svg(read_file(t / "plan.svg")));
  EXPECT_EQ(names_in(t.path), (std::set<std::string>{"plan.svg"}));  // no temporary file left
  // The suffix is checked in any case.
  EXPECT_EQ(plan({"--svg", t.str("PLAN.SVG")}).code, 0);
}

TEST(FileOutput, RegularFileIsReplacedKeepingItsModeAndOwner) {
  temp_folder t;
  write_file(t / "plan.svg", "old", 0640);
  const bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::chown((t / "plan.svg").c_str(), kNobody, kNobody), 0);
  }
  const struct ::stat before = lstat_of(t / "plan.svg");
  const run_result r = plan({"--svg", t.str("plan.svg")});
  ASSERT_EQ(r.code, 0) << r.err;
  const struct ::stat after = lstat_of(t / "plan.svg");
  EXPECT_TRUE(S_ISREG(after.st_mode));
  EXPECT_NE(after.st_ino, before.st_ino);  // a new file renamed over it: all or nothing
  EXPECT_EQ(after.st_mode & 07777, 0640U);
  EXPECT_EQ(after.st_uid, before.st_uid);  // root may give the file back to its owner
  EXPECT_EQ(after.st_gid, before.st_gid);
  EXPECT_TRUE(is_svg(read_file(t / "plan.svg")));
  EXPECT_EQ(names_in(t.path), (std::set<std::string>{"plan.svg"}));
  if (root) {  // root may write a 0444 file (access(2) says so): written, mode kept
    write_file(t / "ro.svg", "old", 0444);
    ASSERT_EQ(plan({"--svg", t.str("ro.svg")}).code, 0);
    EXPECT_EQ(lstat_of(t / "ro.svg").st_mode & 07777, 0444U);
    EXPECT_TRUE(is_svg(read_file(t / "ro.svg")));
  }
}

TEST(FileOutput, SymlinkToARegularFileIsWrittenThrough) {
  temp_folder t;
  fs::create_directories(t / "real");
  write_file(t / "real" / "target.svg", "old", 0600);
  fs::create_symlink("real/target.svg", t / "link.svg");
  fs::create_symlink("link.svg", t / "link2.svg");  // a chain: its final target
  for (const char* name : {"link.svg", "link2.svg"}) {
    const run_result r = plan({"--svg", t.str(name)});
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    EXPECT_TRUE(S_ISLNK(lstat_of(t / name).st_mode)) << name;  // the link stays
    EXPECT_TRUE(is_svg(read_file(t / "real" / "target.svg"))) << name;
    EXPECT_EQ(lstat_of(t / "real" / "target.svg").st_mode & 07777, 0600U);
  }
  EXPECT_EQ(fs::read_symlink(t / "link.svg"), fs::path("real/target.svg"));
  EXPECT_EQ(fs::read_symlink(t / "link2.svg"), fs::path("link.svg"));
  EXPECT_EQ(names_in(t / "real"), (std::set<std::string>{"target.svg"}));
  EXPECT_EQ(names_in(t.path), (std::set<std::string>{"real", "link.svg", "link2.svg"}));
}

TEST(FileOutput, EveryOtherKindIsRefusedAndLeftAsItWas) {
  temp_folder t;
  ASSERT_EQ(::mkfifo(t.str("fifo.svg").c_str(), 0644), 0);
  ASSERT_TRUE(make_socket(t / "sock.svg")) << std::strerror(errno);
  fs::create_directories(t / "dir.svg");
  fs::create_symlink("nowhere.svg", t / "dangling.svg");
  fs::create_symlink("loop.svg", t / "loop.svg");
  fs::create_symlink("fifo.svg", t / "to-fifo.svg");
  fs::create_symlink("dir.svg", t / "to-dir.svg");
  const std::set<std::string> before = names_in(t.path);
  struct kase {
    std::string name, what;
  };
  const std::vector<kase> cases = {
      {"fifo.svg", ": a FIFO; "},
      {"sock.svg", ": a socket; "},
      {"dir.svg", ": a directory; "},
      {"dangling.svg", ": a dangling symlink"},
      {"loop.svg", ": a symlink loop"},
      {"to-fifo.svg", ": a symlink to a FIFO"},
      {"to-dir.svg", ": a symlink to a directory"},
      {"nofolder/x.svg", ": folder " + t.str("nofolder") + " does not exist"},
      {"fifo.svg/x.svg", ": cannot be reached: Not a directory"},
  };
  for (const kase& c : cases) {
    const fs::path first = t / c.name.substr(0, c.name.find('/'));  // what the path names in the folder
    const bool exists = fs::symlink_status(first).type() != fs::file_type::not_found;
    struct ::stat st {};
    if (exists) st = lstat_of(first);
    const run_result r = plan({"--svg", t.str(c.name)});
    EXPECT_EQ(r.code, 2) << c.name << ": " << r.err;
    expect_one_line(r, {"--svg " + t.str(c.name) + c.what});
    if (!exists) continue;
    const struct ::stat now = lstat_of(first);
    EXPECT_EQ(now.st_ino, st.st_ino) << c.name;
    EXPECT_EQ(now.st_mode, st.st_mode) << c.name;
  }
  EXPECT_EQ(names_in(t.path), before);  // no file made, no temporary file left
  EXPECT_TRUE(names_in(t / "dir.svg").empty());
  EXPECT_EQ(fs::read_symlink(t / "dangling.svg"), fs::path("nowhere.svg"));
  EXPECT_FALSE(fs::exists(t / "nowhere.svg"));
  // The built binary: the same refusal, exit 2.
  const run_result bin = run_binary(DSV4_PLAN_BIN, {"--svg", t.str("fifo.svg")});
  EXPECT_EQ(bin.code, 2) << bin.err;
  expect_one_line(bin, {"dsv4-cache-plan: error: --svg " + t.str("fifo.svg") + ": a FIFO"});
  EXPECT_TRUE(S_ISFIFO(lstat_of(t / "fifo.svg").st_mode));
}

TEST(FileOutput, CharacterDeviceIsRefused) {
  temp_folder t;
  if (::mknod(t.str("null.svg").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
    GTEST_SKIP() << "mknod of a character device needs root (CAP_MKNOD): " << std::strerror(errno);
  const run_result r = run_binary(DSV4_PLAN_BIN, {"--svg", t.str("null.svg")});
  EXPECT_EQ(r.code, 2) << r.err;
  expect_one_line(r, {"--svg " + t.str("null.svg") + ": a character device; "});
  const struct ::stat st = lstat_of(t / "null.svg");
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_EQ(names_in(t.path), (std::set<std::string>{"null.svg"}));
  fs::create_symlink("null.svg", t / "to-null.svg");
  expect_one_line(plan({"--svg", t.str("to-null.svg")}), {": a symlink to a character device ("});
}

TEST(FileOutput, SvgNeedsTheSvgSuffix) {
  temp_folder t;
  for (const char* name : {"x.png", "x.svg.png", "svg", "x.sv"}) {
    const run_result r = plan({"--svg", t.str(name)});
    EXPECT_EQ(r.code, 2) << name;
    expect_one_line(r, {"--svg " + t.str(name) + ": the file name must end in .svg"});
  }
  EXPECT_TRUE(names_in(t.path).empty());
}

TEST(FileOutput, ReadOnlyFileIsRefusedForAnOrdinaryUser) {
  temp_folder t;
  const bool root = ::geteuid() == 0;
  if (root) {
    // nobody owns the folder (it may write there) and the 0444 file
    ASSERT_EQ(::chmod(t.path.c_str(), 0755), 0);
    ASSERT_EQ(::chown(t.path.c_str(), kNobody, kNobody), 0);
  }
  write_file(t / "ro.svg", "old", 0444);
  if (root) {
    ASSERT_EQ(::chown(t.str("ro.svg").c_str(), kNobody, kNobody), 0);
  }
  const auto ordinary = [&](const std::vector<std::string>& args) {
    return run_binary(DSV4_PLAN_BIN, args, root ? std::function<bool()>(become_nobody) : std::function<bool()>());
  };
  if (!root && ::access(t.str("ro.svg").c_str(), W_OK) == 0)
    GTEST_SKIP() << "this user may write a 0444 file (a capability) and is not root: cannot test as an ordinary user";
  // As nobody the binary must be reachable: a clone inside a 0700 folder (mktemp -d) is not.
  if (root && ordinary({"--help"}).code == 127)
    GTEST_SKIP() << "nobody cannot execute " << DSV4_PLAN_BIN
                 << " (a folder above it is not searchable by other users): cannot test as an ordinary user";
  const run_result r = ordinary({"--svg", t.str("ro.svg")});
  ASSERT_NE(r.code, 125) << "setuid(" << kNobody << ") failed in the child";
  EXPECT_EQ(r.code, 2) << r.err;
  expect_one_line(r,
                  {"--svg " + t.str("ro.svg") + ": a regular file you may not write (mode 0444", "Permission denied"});
  EXPECT_EQ(read_file(t / "ro.svg"), "old");
  EXPECT_EQ(lstat_of(t / "ro.svg").st_mode & 07777, 0444U);
  // A symlink to it: the same.
  fs::create_symlink("ro.svg", t / "to-ro.svg");
  const run_result link = ordinary({"--svg", t.str("to-ro.svg")});
  EXPECT_EQ(link.code, 2) << link.err;
  expect_one_line(link, {": a symlink to a regular file you may not write (mode 0444"});
  // A 0644 file of the same user in the same folder is written: the folder was writable.
  write_file(t / "rw.svg", "old", 0644);
  if (root) {
    ASSERT_EQ(::chown(t.str("rw.svg").c_str(), kNobody, kNobody), 0);
  }
  const run_result rw = ordinary({"--svg", t.str("rw.svg")});
  EXPECT_EQ(rw.code, 0) << rw.err;
  EXPECT_TRUE(is_svg(read_file(t / "rw.svg")));
  EXPECT_EQ(names_in(t.path), (std::set<std::string>{"ro.svg", "to-ro.svg", "rw.svg"}));
  // A folder the user may not write: a new file there is refused, and so is golden's DIR.
  fs::create_directories(t / "locked");
  ASSERT_EQ(::chmod(t.str("locked").c_str(), 0555), 0);
  if (root) {
    ASSERT_EQ(::chown(t.str("locked").c_str(), kNobody, kNobody), 0);
  }
  const run_result folder = ordinary({"--svg", t.str("locked/new.svg")});
  EXPECT_EQ(folder.code, 2) << folder.err;
  expect_one_line(folder, {"you may not write folder " + t.str("locked") + " (mode 0555"});
  const run_result golden = run_binary(DSV4_LAYOUT_BIN, {"golden", "v4.bf16", "--rows", "2", "--out", t.str("locked")},
                                       root ? std::function<bool()>(become_nobody) : std::function<bool()>());
  EXPECT_EQ(golden.code, 2) << golden.err;
  expect_one_line(golden, {"--out " + t.str("locked") + ": a directory you may not write (mode 0555"});
  const run_result below =
      run_binary(DSV4_LAYOUT_BIN, {"golden", "v4.bf16", "--rows", "2", "--out", t.str("locked/new")},
                 root ? std::function<bool()>(become_nobody) : std::function<bool()>());
  EXPECT_EQ(below.code, 2) << below.err;
  expect_one_line(below, {"you may not write folder " + t.str("locked")});
  EXPECT_TRUE(names_in(t / "locked").empty());
}

/// In the child: files over 1,000 bytes fail with EFBIG (SIGXFSZ ignored). Async-signal-safe.
bool limit_file_size() {
  const struct rlimit lim { 1000, 1000 };
  return ::signal(SIGXFSZ, SIG_IGN) != SIG_ERR && ::setrlimit(RLIMIT_FSIZE, &lim) == 0;
}

TEST(FileOutput, FailedWriteExits3AndLeavesNothingBehind) {
  temp_folder t;
  // An existing file: untouched. A new one: not made. The SVG is several KB, over the limit.
  write_file(t / "old.svg", "old", 0644);
  for (const char* name : {"old.svg", "new.svg"}) {
    const run_result r = run_binary(DSV4_PLAN_BIN, {"--svg", t.str(name)}, limit_file_size);
    EXPECT_EQ(r.code, 3) << name << ": " << r.err;
    expect_one_line(r, {"dsv4-cache-plan: error: --svg " + t.str(name) + ": cannot write ", std::strerror(EFBIG)});
  }
  EXPECT_EQ(read_file(t / "old.svg"), "old");
  EXPECT_EQ(names_in(t.path), (std::set<std::string>{"old.svg"}));
  // golden: its folder made by this run is removed again; an existing one keeps its files.
  const run_result g =
      run_binary(DSV4_LAYOUT_BIN, {"golden", "v4.bf16", "--rows", "64", "--out", t.str("g/h")}, limit_file_size);
  EXPECT_EQ(g.code, 3) << g.err;
  expect_one_line(g, {"dsv4-cache-layout: error: --out ", std::strerror(EFBIG)});
  EXPECT_FALSE(fs::exists(t / "g"));
  fs::create_directories(t / "k");
  write_file(t / "k" / "page.bin", "old page", 0644);
  const run_result k =
      run_binary(DSV4_LAYOUT_BIN, {"golden", "v4.bf16", "--rows", "64", "--out", t.str("k")}, limit_file_size);
  EXPECT_EQ(k.code, 3) << k.err;
  EXPECT_EQ(names_in(t / "k"), (std::set<std::string>{"page.bin"}));
  EXPECT_EQ(read_file(t / "k" / "page.bin"), "old page");
}

TEST(FileOutput, TargetSwappedBeforeTheRenameIsRefused) {
  temp_folder t;
  write_file(t / "a.svg", "old", 0644);
  // Replaced by a FIFO after the check: the FIFO stays, the temporary file goes.
  EXPECT_THROW(file_io::write_file_atomic(t / "a.svg", "<svg/>", "--svg",
                                          [&] {
                                            fs::remove(t / "a.svg");
                                            ASSERT_EQ(::mkfifo(t.str("a.svg").c_str(), 0644), 0);
                                          }),
               file_io::refused_output);
  EXPECT_TRUE(S_ISFIFO(lstat_of(t / "a.svg").st_mode));
  EXPECT_EQ(names_in(t.path), (std::set<std::string>{"a.svg"}));
  // A new path where a symlink appeared meanwhile.
  try {
    file_io::write_file_atomic(t / "b.svg", "<svg/>", "--svg", [&] { fs::create_symlink("a.svg", t / "b.svg"); });
    ADD_FAILURE() << "a symlink made after the check was replaced";
  } catch (const file_io::refused_output& e) {
    EXPECT_NE(std::string(e.what()).find("changed while it was written: it is now a symlink"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(S_ISLNK(lstat_of(t / "b.svg").st_mode));
  EXPECT_EQ(names_in(t.path), (std::set<std::string>{"a.svg", "b.svg"}));
}

TEST(FileOutput, GoldenDirectoryAndItsFiles) {
  temp_folder t;
  const auto golden = [&](const std::string& out) {
    return layout({"golden", "v4.bf16", "--rows", "2", "--out", out});
  };
  const std::set<std::string> three = {"input.bf16", "page.bin", "manifest.json"};
  // DIR: a FIFO, a dangling symlink, a symlink loop, a symlink to a regular file: refused.
  ASSERT_EQ(::mkfifo(t.str("fifo").c_str(), 0644), 0);
  write_file(t / "file", "x", 0644);
  fs::create_symlink("nowhere", t / "dangling");
  fs::create_symlink("loop", t / "loop");
  fs::create_symlink("file", t / "to-file");
  for (const auto& [name, what] : std::vector<std::pair<std::string, std::string>>{
           {"fifo", ": a FIFO; the output must be a new or existing directory"},
           {"dangling", ": a dangling symlink"},
           {"loop", ": a symlink loop"},
           {"to-file", ": a symlink to a regular file"},
           {"file", ": a regular file; "}}) {
    const run_result r = golden(t.str(name));
    EXPECT_EQ(r.code, 2) << name << ": " << r.err;
    expect_one_line(r, {"--out " + t.str(name) + what});
  }
  EXPECT_EQ(read_file(t / "file"), "x");
  // A file inside DIR that is not a regular file: refused before any file is written.
  fs::create_directories(t / "d");
  ASSERT_EQ(::mkfifo(t.str("d/manifest.json").c_str(), 0644), 0);
  const run_result fifo = golden(t.str("d"));
  EXPECT_EQ(fifo.code, 2) << fifo.err;
  expect_one_line(fifo, {"--out " + t.str("d/manifest.json") + ": a FIFO"});
  EXPECT_EQ(names_in(t / "d"), (std::set<std::string>{"manifest.json"}));
  fs::remove(t / "d" / "manifest.json");
  fs::create_symlink("page.bin", t / "d" / "page.bin");  // a loop
  expect_one_line(golden(t.str("d")), {"--out " + t.str("d/page.bin") + ": a symlink loop"});
  fs::remove(t / "d" / "page.bin");
  // DIR a symlink to a directory; page.bin a symlink to a regular file elsewhere: written through.
  fs::create_directories(t / "elsewhere");
  write_file(t / "elsewhere" / "page", "old", 0600);
  fs::create_symlink("../elsewhere/page", t / "d" / "page.bin");
  fs::create_symlink("d", t / "to-d");
  const run_result ok = golden(t.str("to-d"));
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(names_in(t / "d"), three);
  EXPECT_TRUE(S_ISLNK(lstat_of(t / "d" / "page.bin").st_mode));
  ASSERT_EQ(golden(t.str("fresh")).code, 0);  // the same page written to a plain new directory
  EXPECT_EQ(read_file(t / "elsewhere" / "page"), read_file(t / "fresh" / "page.bin"));
  EXPECT_EQ(lstat_of(t / "elsewhere" / "page").st_mode & 07777, 0600U);
  EXPECT_EQ(names_in(t / "elsewhere"), (std::set<std::string>{"page"}));
}

TEST(FileOutput, GoldenRollbackPutsReplacedFilesBack) {
  temp_folder t;
  fs::create_directories(t / "d");
  write_file(t / "d" / "input.bf16", "OLD INPUT", 0644);
  write_file(t / "d" / "page.bin", "OLD PAGE", 0600);
  write_file(t / "d" / "manifest.json", "OLD MANIFEST", 0644);
  // The manifest's temporary file vanishes before the renames: input.bf16 and page.bin are
  // renamed over, the manifest's rename fails (ENOENT, exit 3), the two are put back.
  const auto drop_manifest_temp = [&] {
    for (const std::string& n : names_in(t / "d"))
      if (n.rfind(".manifest.json.tmp-", 0) == 0) fs::remove(t / "d" / n);
  };
  try {
    file_io::write_files(t / "d", {{"input.bf16", "new input"}, {"page.bin", "new page"}, {"manifest.json", "{}"}},
                         "--out", drop_manifest_temp);
    ADD_FAILURE() << "the failed rename was not reported";
  } catch (const file_io::write_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--out " + t.str("d/manifest.json") + ": cannot rename "), std::string::npos) << m;
    EXPECT_NE(m.find(std::strerror(ENOENT)), std::string::npos) << m;
  }
  EXPECT_EQ(read_file(t / "d" / "input.bf16"), "OLD INPUT");
  EXPECT_EQ(read_file(t / "d" / "page.bin"), "OLD PAGE");
  EXPECT_EQ(lstat_of(t / "d" / "page.bin").st_mode & 07777, 0600U);
  EXPECT_EQ(read_file(t / "d" / "manifest.json"), "OLD MANIFEST");
  EXPECT_EQ(names_in(t / "d"), (std::set<std::string>{"input.bf16", "page.bin", "manifest.json"}));  // no .tmp-/.bak-
  // A new directory: its folders are removed again.
  EXPECT_THROW(file_io::write_files(t / "n" / "m", {{"a", "1"}, {"b", "2"}}, "--out",
                                    [&] {
                                      for (const std::string& n : names_in(t / "n" / "m"))
                                        if (n.rfind(".b.tmp-", 0) == 0) fs::remove(t / "n" / "m" / n);
                                    }),
               file_io::write_error);
  EXPECT_FALSE(fs::exists(t / "n"));
  // Two names for one file are refused.
  fs::create_symlink("input.bf16", t / "d" / "alias");
  try {
    file_io::write_files(t / "d", {{"input.bf16", "1"}, {"alias", "2"}});
    ADD_FAILURE() << "two names for one file were written";
  } catch (const file_io::refused_output& e) {
    EXPECT_NE(std::string(e.what()).find("alias: names the same file as " + t.str("d/input.bf16")), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_file(t / "d" / "input.bf16"), "OLD INPUT");
}

}  // namespace
