// dsv4_cache._core: the compiled half of the Python package. Each part registers its functions
// on the module; every rule comes from the library's and the CLIs' own headers (no second copy).
#pragma once

#include <nanobind/nanobind.h>

namespace dsv4::python {

/// plan(), describe(), fingerprint(), diff(), check(): planner and contract (plan.cpp).
void register_plan(nanobind::module_& m);
/// formats(), writers(), quantize_rows(), dequantize_rows(), golden() (codec.cpp).
void register_codec(nanobind::module_& m);

}  // namespace dsv4::python
