// dsv4-cache-plan: the planner CLI (see planner_cli.hpp and the README).
#include <iostream>
#include <string>
#include <vector>

#include "planner_cli.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return dsv4::cache::cli::run_planner(args, std::cout, std::cerr);
}
