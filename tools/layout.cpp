// dsv4-cache-layout: the row-format layout CLI (see dsv4/tools/layout_cli.hpp).
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "dsv4/tools/layout_cli.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  errno = 0;
  const int code = dsv4::tools::run_layout(args, std::cout, std::cerr);
  // std::cout goes through stdio: a full disk or a closed stdout shows only when it is flushed.
  // The errno of the failing write names the reason (ENOSPC, EPIPE, EIO, ...).
  const int before = errno;
  errno = 0;
  if ((code == 0 || code == 1 || code == 4) && (std::fflush(stdout) != 0 || std::ferror(stdout) != 0)) {
    std::cerr << "dsv4-cache-layout: error: " << dsv4::tools::write_failure(errno != 0 ? errno : before) << "\n";
    return dsv4::tools::kLayoutExitFailure;
  }
  return code;
}
