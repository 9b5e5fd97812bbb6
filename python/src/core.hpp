// dsv4_cache._core: the compiled half of the Python package. Each part registers its functions
// on the module; every rule comes from the library's and the CLIs' own headers (no second copy).
#pragma once

#include <nanobind/nanobind.h>
#include <nlohmann/json.hpp>

namespace dsv4::python {

/// A JSON value (a renderer's) as the Python objects `json.loads` would make of its text, built
/// directly (plan.cpp).
nanobind::object to_python(const nlohmann::ordered_json& j);

/// plan(), describe(), fingerprint(), diff(), check(): planner and contract (plan.cpp).
void register_plan(nanobind::module_& m);
/// formats(), writers(), quantize_rows(), dequantize_rows(), golden() (codec.cpp).
void register_codec(nanobind::module_& m);

}  // namespace dsv4::python
