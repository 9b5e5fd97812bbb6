// Shared test helpers: expecting an error whose message names the rule and the values.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "dsv4/cache/memory_plan.hpp"

namespace dsv4::cache::testing {

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
