// Shared test helpers: expecting an error whose message names the rule and the values.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dsv4/cache/memory_plan.hpp"

namespace dsv4::cache::testing {

/// A command line run in process: its exit code and what it wrote to stdout and stderr.
struct cli_run {
  int code = -1;
  std::string out;
  std::string err;
};

/// `cli_main(out, err)` (a call of the tools' run_planner, run_layout or run_golden: its exit
/// code) with both streams captured.
template <class Main>
cli_run run_in_process(Main&& cli_main) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = cli_main(out, err);
  return {code, out.str(), err.str()};
}

/// One GiB in bytes (2^30), the unit of the tests' memory budgets.
inline constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

/// `o` in the library's own pools (one pool per group): the per-group formula the hand sums of
/// the memory-plan tests check, whatever the engine's pool structure.
constexpr plan_options own(plan_options o = {}) {
  o.pools = pools_choice::own;
  return o;
}
/// `build_memory_plan(c, own(o))`.
constexpr memory_plan build_own(const model_config& c, const plan_options& o = {}) {
  return build_memory_plan(c, own(o));
}

/// A path in the temporary directory unique to the running test and process:
/// `<tmp>/dsv4-<name>-<suite>.<test>-<pid>`. Tests run in parallel under ctest (one process per
/// test), so no two tests ever share a temporary file.
inline std::filesystem::path unique_temp_path(const std::string& name) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test = info != nullptr ? std::string(info->test_suite_name()) + "." + info->name() : "no-test";
  for (char& c : test)
    if (c == '/') c = '_';  // parameterized names
  return std::filesystem::temp_directory_path() / ("dsv4-" + name + "-" + test + "-" + std::to_string(::getpid()));
}

/// Runs `f`, expects std::invalid_argument (or a subclass) whose what() contains every part.
template <class F>
void expect_invalid(F&& f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "expected std::invalid_argument, nothing was thrown";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
  }
}

}  // namespace dsv4::cache::testing
