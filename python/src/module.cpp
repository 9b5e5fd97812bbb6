// The module definition of dsv4_cache._core (see core.hpp).
#include <stdexcept>

#include <nanobind/nanobind.h>
#include <nlohmann/json.hpp>

#include "core.hpp"
#include "dsv4/tools/messages.hpp"

NB_MODULE(_core, m) {
  m.doc() =
      "dsv4_cache._core: the compiled planner, layout contract and row codecs of dsv4-cache (use the dsv4_cache "
      "package, not this module)";
  // Bad input is ValueError, its message valid UTF-8 (Python's str of an exception must decode, or
  // the message is lost): the library's std::invalid_argument, and a JSON value of the wrong type in
  // a descriptor (nlohmann's type errors).
  nanobind::register_exception_translator([](const std::exception_ptr& p, void* /*payload*/) {
    try {
      std::rethrow_exception(p);
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, dsv4::tools::printable(e.what()).c_str());
    } catch (const nlohmann::json::exception& e) {
      PyErr_SetString(PyExc_ValueError, dsv4::tools::printable(e.what()).c_str());
    }
  });
  dsv4::python::register_plan(m);
  dsv4::python::register_codec(m);
}
