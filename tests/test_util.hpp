// Shared test helpers: expecting an error whose message names the rule and the values.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <stdexcept>
#include <string>

namespace dsv4::cache::testing {

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
