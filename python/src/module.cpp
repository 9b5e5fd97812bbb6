// The module definition of dsv4_cache._core (see core.hpp).
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nlohmann/json.hpp>

#include "core.hpp"
#include "dsv4/tools/messages.hpp"

namespace {

/// `msg` as valid UTF-8 (bytes that are not, e.g. of a non-UTF-8 file name or config, as \xNN):
/// Python's str of an exception must decode, or the message is lost.
std::string utf8_text(std::string_view msg) {
  std::string out;
  while (!msg.empty()) {
    const std::size_t n = dsv4::tools::utf8_sequence_length(msg);
    if (n == 0) {
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(msg.front()));
      msg.remove_prefix(1);
    } else {
      out.append(msg.substr(0, n));
      msg.remove_prefix(n);
    }
  }
  return out;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() =
      "dsv4_cache._core: the compiled planner, layout contract and row codecs of dsv4-cache (use the dsv4_cache "
      "package, not this module)";
  // Bad input is ValueError, its message valid UTF-8: the library's std::invalid_argument, and a
  // JSON value of the wrong type in a descriptor (nlohmann's type errors).
  nanobind::register_exception_translator([](const std::exception_ptr& p, void* /*payload*/) {
    try {
      std::rethrow_exception(p);
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, utf8_text(e.what()).c_str());
    } catch (const nlohmann::json::exception& e) {
      PyErr_SetString(PyExc_ValueError, utf8_text(e.what()).c_str());
    }
  });
  dsv4::python::register_plan(m);
  dsv4::python::register_codec(m);
}
