// The module definition of dsv4_cache._core (see core.hpp).
#include <nanobind/nanobind.h>

#include "core.hpp"

NB_MODULE(_core, m) {
  m.doc() =
      "dsv4_cache._core: the compiled planner, layout contract and row codecs of dsv4-cache (use the dsv4_cache "
      "package, not this module)";
  dsv4::python::register_plan(m);
  dsv4::python::register_codec(m);
}
