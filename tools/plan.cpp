// dsv4-cache-plan: the planner CLI (see dsv4/tools/planner_cli.hpp and the README).
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "dsv4/tools/messages.hpp"
#include "dsv4/tools/planner_cli.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  errno = 0;
  const int code = dsv4::cache::cli::run_planner(args, std::cout, std::cerr);
  // std::cout goes through stdio: a full disk or a closed stdout shows only when it is flushed.
  // The errno of the failing write names the reason (ENOSPC, EPIPE, EIO, ...).
  const int before = errno;
  errno = 0;
  if ((code == 0 || code == 1 || code == 4) && (std::fflush(stdout) != 0 || std::ferror(stdout) != 0)) {
    std::cerr << "dsv4-cache-plan: error: " << dsv4::tools::write_failure(errno != 0 ? errno : before) << "\n";
    return 3;  // the exit-code table: a write error
  }
  return code;
}
