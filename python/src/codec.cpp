// dsv4_cache._core, formats and codecs: the registry's formats and writers, the host bulk codecs
// (`quantize_rows<F>` / `dequantize_rows<F, Out>`, host_codec.hpp) on numpy arrays and DLPack
// tensors in place, and golden pages (`make_golden`, golden.hpp). Errors are ValueError naming
// the Python parameter, the value and the rule; nothing is written before every check passed.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "core.hpp"
#include "dsv4/cache/host_codec.hpp"
#include "dsv4/tools/file_io.hpp"
#include "dsv4/tools/formats_report.hpp"
#include "dsv4/tools/golden.hpp"
#include "dsv4/tools/writers_cli.hpp"

namespace nb = nanobind;

namespace dsv4::python {
namespace {

using dsv4::tools::one_line;

[[noreturn]] void bad(const std::string& msg) { throw std::invalid_argument(msg); }

/// A format, its layout (bound to `row_bytes` for fp32_state) and a writer.
struct resolved_format {
  int index = -1;
  cache::format_layout layout;
  const cache::format_writer* writer = nullptr;
};

/// Resolves the Python arguments `format`, `writer` ("default" or a producer) and `row_bytes`
/// (0: not given; fp32_state needs it, the others refuse it). Raises ValueError naming them.
resolved_format resolve(const std::string& format, const std::string& writer, std::int64_t row_bytes) {
  resolved_format f;
  f.index = cache::format_index(format);
  if (f.index < 0)
    bad(fmt::format("format: unknown row format '{}' (registered: {})", one_line(format), cache::format_names()));
  const cache::format_layout& reg = cache::kFormats[static_cast<std::size_t>(f.index)];
  const bool bound = reg.row_bytes == 0;
  if (bound && row_bytes == 0)
    bad(
        fmt::format("row_bytes: {} rows are bound per group: give row_bytes, a positive multiple of 1024 (8192 for "
                    "the V4 CSA compressor state)",
                    reg.name));
  if (!bound && row_bytes != 0)
    bad(fmt::format("row_bytes={} is for fp32_state only ({} rows are {} B)", row_bytes, reg.name, reg.row_bytes));
  if (bound && (row_bytes <= 0 || row_bytes % 1024 != 0 || row_bytes > (std::int64_t{1} << 30)))
    bad(fmt::format("row_bytes must be a positive multiple of 1024 up to 2^30, got {}", row_bytes));
  f.layout = bound ? cache::bind_state_row_bytes(row_bytes) : reg;
  try {
    f.writer = &tools::golden_detail::resolve_writer(f.index, writer);
  } catch (const std::invalid_argument& e) {
    bad(std::string("writer: ") + e.what());
  }
  return f;
}

template <class Array>
std::string shape_text(const Array& a) {
  std::string s = "(";
  for (std::size_t i = 0; i < a.ndim(); ++i) s += fmt::format("{}{}", i ? ", " : "", a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

std::string dtype_text(const nb::dlpack::dtype& d) {
  static constexpr std::array<std::string_view, 7> kCodes = {"int", "uint", "float", "?", "bfloat", "complex", "bool"};
  const std::string_view code = d.code < kCodes.size() ? kCodes[d.code] : std::string_view("dtype code ");
  return fmt::format("{}{}{}", code, d.code < kCodes.size() ? "" : std::to_string(d.code), d.bits);
}

bool is_bf16_bits(const nb::dlpack::dtype& d) {
  return d.lanes == 1 && d.bits == 16 &&
         (d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::UInt) ||
          d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Int) ||
          d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat));
}
bool is_f32(const nb::dlpack::dtype& d) { return d == nb::dtype<float>(); }
bool is_u8(const nb::dlpack::dtype& d) { return d == nb::dtype<std::uint8_t>() || d == nb::dtype<std::int8_t>(); }

/// Raises ValueError unless `a` is a C-contiguous array on the CPU.
template <class Array>
void require_cpu_contiguous(const Array& a, const char* name) {
  if (a.device_type() != nb::device::cpu::value)
    bad(fmt::format("{} must be on the CPU (DLPack device type {}); copy it to the host first", name, a.device_type()));
  std::int64_t expected = 1;
  for (std::size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected)
      bad(
          fmt::format("{} must be C-contiguous (row-major, no strides), got strides that are not: use "
                      "numpy.ascontiguousarray({}) or {}.contiguous()",
                      name, name, name));
    expected *= static_cast<std::int64_t>(a.shape(i));
  }
}

/// Rows per page: `rows_per_page` when given (> 0), else every row in one page.
std::int64_t rows_per_page_of(std::int64_t rows_per_page, std::int64_t rows) {
  if (rows_per_page < 0) bad(fmt::format("rows_per_page must be >= 1, got {}", rows_per_page));
  const std::int64_t n = rows_per_page == 0 ? rows : rows_per_page;
  if (n > (std::int64_t{1} << 20)) bad(fmt::format("rows_per_page must be at most 2^20, got {}", n));
  return n;
}

/// (pages, page bytes) of `rows` rows in pages of `n` rows of format `f`.
std::pair<std::int64_t, std::int64_t> pages_of(const resolved_format& f, std::int64_t rows, std::int64_t n) {
  std::int64_t page_bytes = 0;
  try {
    page_bytes = f.layout.page_bytes(n);
  } catch (const std::invalid_argument& e) {
    bad(fmt::format("rows_per_page={}: {}", n, e.what()));
  }
  return {(rows + n - 1) / n, page_bytes};
}

/// The checks of `x` for quantize_rows; returns (pages, page bytes) of its rows in pages of
/// `rows_per_page` rows (0: one page).
std::pair<std::int64_t, std::int64_t> quantize_shape(const resolved_format& f, const nb::ndarray<nb::ro>& x,
                                                     std::int64_t rows_per_page) {
  const std::int64_t values = f.layout.values;
  if (x.ndim() != 2 || static_cast<std::int64_t>(x.shape(1)) != values || x.shape(0) == 0)
    bad(fmt::format("x must be a 2-D array of rows x {} values (a {} row), at least one row, got shape {}", values,
                    f.layout.name, shape_text(x)));
  if (!is_bf16_bits(x.dtype()) && !is_f32(x.dtype()))
    bad(
        fmt::format("x must hold BF16 (uint16 bit patterns, ml_dtypes.bfloat16, torch.bfloat16) or float32 values, "
                    "got {}",
                    dtype_text(x.dtype())));
  require_cpu_contiguous(x, "x");
  const auto rows = static_cast<std::int64_t>(x.shape(0));
  return pages_of(f, rows, rows_per_page_of(rows_per_page, rows));
}

/// quantize_rows: rows of `x` into `out` (pages x page bytes, zeroed first).
void quantize(const std::string& format, const std::string& writer, const nb::ndarray<nb::ro>& x,
              std::int64_t rows_per_page, std::int64_t row_bytes, const nb::ndarray<>& out) {
  const resolved_format f = resolve(format, writer, row_bytes);
  const std::pair<std::int64_t, std::int64_t> shape = quantize_shape(f, x, rows_per_page);
  const std::int64_t pages = shape.first;
  const std::int64_t page_bytes = shape.second;
  const std::int64_t values = f.layout.values;
  const auto name = f.layout.name;
  const auto rows = static_cast<std::int64_t>(x.shape(0));
  const std::int64_t n = rows_per_page_of(rows_per_page, rows);
  if (!is_u8(out.dtype())) bad(fmt::format("out must be a uint8 array, got {}", dtype_text(out.dtype())));
  const bool shape_ok = (out.ndim() == 2 && static_cast<std::int64_t>(out.shape(0)) == pages &&
                         static_cast<std::int64_t>(out.shape(1)) == page_bytes) ||
                        (out.ndim() == 1 && static_cast<std::int64_t>(out.shape(0)) == pages * page_bytes);
  if (!shape_ok)
    bad(fmt::format("out must have shape ({}, {}) (pages x page bytes of {} rows of {}), got {}", pages, page_bytes, n,
                    name, shape_text(out)));
  require_cpu_contiguous(out, "out");
  const bool f32_in = is_f32(x.dtype());
  const void* in = x.data();
  auto* page = static_cast<std::uint8_t*>(out.data());
  const nb::gil_scoped_release release;
  std::memset(page, 0, static_cast<std::size_t>(pages * page_bytes));
  cache::visit_format(f.index, [&]<cache::row_format F>() {
    using In = typename F::input_type;
    constexpr bool f32_format = std::is_same_v<In, float>;
    std::vector<In> buffer;
    for (std::int64_t p = 0; p < pages; ++p) {
      const std::int64_t first = p * n;
      const std::int64_t count = std::min(n, rows - first);
      const std::int64_t k0 = first * values;
      const In* rows_in = nullptr;
      if (f32_format == f32_in) {  // the format's own input type: no conversion, no copy
        rows_in = static_cast<const In*>(in) + k0;
      } else {
        buffer.resize(static_cast<std::size_t>(count * values));
        for (std::int64_t k = 0; k < count * values; ++k) {
          if constexpr (f32_format) {  // BF16 widened exactly
            const std::uint16_t b = static_cast<const std::uint16_t*>(in)[k0 + k];
            buffer[static_cast<std::size_t>(k)] = std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
          } else {  // float32 rounded to BF16 to nearest even (NaN -> 0x7FFF), as golden --input-type f32
            buffer[static_cast<std::size_t>(k)] = cache::float_to_bf16(static_cast<const float*>(in)[k0 + k]);
          }
        }
        rows_in = buffer.data();
      }
      cache::quantize_rows<F>(f.layout, page + p * page_bytes, n, 0, count, rows_in, f.writer->policy);
    }
  });
}

/// The checks of `pages` for dequantize_rows; returns (rows to read, page bytes): `count`, or
/// every slot of every page for count < 0.
std::pair<std::int64_t, std::int64_t> dequantize_count(const resolved_format& f, const nb::ndarray<nb::ro>& pages,
                                                       std::int64_t rows_per_page, std::int64_t count) {
  if (rows_per_page < 1) bad(fmt::format("rows must be >= 1 (rows per page), got {}", rows_per_page));
  const std::int64_t n = rows_per_page_of(rows_per_page, rows_per_page);
  const std::int64_t page_bytes = pages_of(f, n, n).second;
  if (!is_u8(pages.dtype())) bad(fmt::format("pages must be a uint8 array, got {}", dtype_text(pages.dtype())));
  require_cpu_contiguous(pages, "pages");
  const auto size = static_cast<std::int64_t>(pages.size());
  if (pages.ndim() < 1 || pages.ndim() > 2 ||
      (pages.ndim() == 2 && static_cast<std::int64_t>(pages.shape(1)) != page_bytes) || size == 0 ||
      size % page_bytes != 0)
    bad(fmt::format("pages must have shape (pages, {}) or (pages x {},): pages of {} rows of {} are {} B, got {}",
                    page_bytes, page_bytes, n, f.layout.name, page_bytes, shape_text(pages)));
  const std::int64_t num_pages = size / page_bytes;
  const std::int64_t capacity = num_pages * n;
  if (count < 0) count = capacity;
  if (count < 1 || count > capacity)
    bad(fmt::format("count must be in [1, {}] (the rows {} page(s) of {} rows hold), got {}", capacity, num_pages, n,
                    count));
  return {count, page_bytes};
}

/// dequantize_rows: the first `count` rows of `pages` into `out` (count x values, float32 or BF16).
void dequantize(const std::string& format, const std::string& writer, const nb::ndarray<nb::ro>& pages,
                std::int64_t rows_per_page, std::int64_t row_bytes, std::int64_t count_in, const nb::ndarray<>& out) {
  const resolved_format f = resolve(format, writer, row_bytes);
  const std::pair<std::int64_t, std::int64_t> shape = dequantize_count(f, pages, rows_per_page, count_in);
  const std::int64_t count = shape.first;
  const std::int64_t page_bytes = shape.second;
  const std::int64_t n = rows_per_page;
  const auto name = f.layout.name;
  const std::int64_t values = f.layout.values;
  const bool f32_out = is_f32(out.dtype());
  if (!f32_out && !is_bf16_bits(out.dtype()))
    bad(fmt::format("out must be a float32 or BF16 (uint16, ml_dtypes.bfloat16, torch.bfloat16) array, got {}",
                    dtype_text(out.dtype())));
  if (out.ndim() != 2 || static_cast<std::int64_t>(out.shape(0)) != count ||
      static_cast<std::int64_t>(out.shape(1)) != values)
    bad(fmt::format("out must have shape ({}, {}) (rows x values of {}), got {}", count, values, name,
                    shape_text(out)));
  require_cpu_contiguous(out, "out");
  const auto* in = static_cast<const std::uint8_t*>(pages.data());
  void* dst = out.data();
  const nb::gil_scoped_release release;
  cache::visit_format(f.index, [&]<cache::row_format F>() {
    for (std::int64_t p = 0; p * n < count; ++p) {
      const std::int64_t c = std::min(n, count - p * n);
      const std::int64_t k0 = p * n * values;
      if (f32_out)
        cache::dequantize_rows<F, float>(f.layout, in + p * page_bytes, n, 0, c, static_cast<float*>(dst) + k0,
                                         f.writer->policy);
      else
        cache::dequantize_rows<F, cache::bf16>(f.layout, in + p * page_bytes, n, 0, c,
                                               static_cast<cache::bf16*>(dst) + k0, f.writer->policy);
    }
  });
}

nb::bytes as_bytes(const std::vector<std::uint8_t>& v) { return nb::bytes(v.data(), v.size()); }

}  // namespace

void register_codec(nb::module_& m) {
  m.def(
      "formats_table",
      [](std::int64_t rows) {
        return to_python(tools::formats_json({rows, true}));
      },
      nb::arg("rows"), nb::sig("def formats_table(rows: int) -> list[dict[str, typing.Any]]"),
      "dsv4-cache-layout formats --json (pages of `rows` rows), as Python objects.");
  m.def(
      "writers_table", [] { return to_python(tools::writers_json()); },
      nb::sig("def writers_table() -> dict[str, typing.Any]"), "dsv4-cache-layout writers --json, as Python objects.");
  m.def(
      "values_per_row",
      [](const std::string& format, std::int64_t row_bytes) {
        return resolve(format, "default", row_bytes).layout.values;
      },
      nb::arg("format"), nb::arg("row_bytes") = 0, "Values a row of `format` holds (fp32_state: row_bytes / 4).");
  m.def(
      "page_bytes",
      [](const std::string& format, std::int64_t rows, std::int64_t row_bytes) {
        return pages_of(resolve(format, "default", row_bytes), rows, rows_per_page_of(rows, rows)).second;
      },
      nb::arg("format"), nb::arg("rows"), nb::arg("row_bytes") = 0,
      "Bytes of a page of `rows` rows, padding included.");
  m.def(
      "quantize_shape",
      [](const std::string& format, const std::string& writer, const nb::ndarray<nb::ro>& x, std::int64_t rows_per_page,
         std::int64_t row_bytes) { return quantize_shape(resolve(format, writer, row_bytes), x, rows_per_page); },
      nb::arg("format"), nb::arg("writer"), nb::arg("x").noconvert(), nb::arg("rows_per_page"), nb::arg("row_bytes"),
      "quantize_rows's checks of its arguments: (pages, page bytes) of the result.");
  m.def(
      "dequantize_shape",
      [](const std::string& format, const std::string& writer, const nb::ndarray<nb::ro>& pages,
         std::int64_t rows_per_page, std::int64_t row_bytes, std::int64_t count) {
        const resolved_format f = resolve(format, writer, row_bytes);
        return std::pair{dequantize_count(f, pages, rows_per_page, count).first, f.layout.values};
      },
      nb::arg("format"), nb::arg("writer"), nb::arg("pages").noconvert(), nb::arg("rows_per_page"),
      nb::arg("row_bytes"), nb::arg("count"),
      "dequantize_rows's checks of its arguments: (rows, values) of the result.");
  m.def("quantize_rows", &quantize, nb::arg("format"), nb::arg("writer"), nb::arg("x").noconvert(),
        nb::arg("rows_per_page"), nb::arg("row_bytes"), nb::arg("out").noconvert(),
        "Writes the rows of x into out (zeroed first), page p holding rows [p N, (p + 1) N).");
  m.def("dequantize_rows", &dequantize, nb::arg("format"), nb::arg("writer"), nb::arg("pages").noconvert(),
        nb::arg("rows_per_page"), nb::arg("row_bytes"), nb::arg("count"), nb::arg("out").noconvert(),
        "Reads the first `count` rows of pages into out (count x values).");
  m.def(
      "golden",
      [](const std::string& format, const std::string& writer, std::int64_t rows, std::uint64_t seed,
         std::int64_t row_bytes) {
        (void)resolve(format, writer, row_bytes);  // the format, writer and row_bytes messages name the parameter
        tools::golden_args a;
        a.format = format;
        a.writer = writer;
        a.rows = rows;
        a.seed = seed;
        a.row_bytes = row_bytes;
        tools::golden_image g;
        {
          const nb::gil_scoped_release release;
          g = tools::make_golden(a);
        }
        return std::tuple{g.input_name,   as_bytes(g.input), as_bytes(g.page), g.manifest_text,
                          g.input_sha256, g.page_sha256,     g.manifest_sha256};
      },
      nb::arg("format"), nb::arg("writer"), nb::arg("rows"), nb::arg("seed"), nb::arg("row_bytes"),
      "dsv4-cache-layout golden's files in memory: (input name, input, page, manifest, three SHA-256).");
  m.def(
      "write_files",
      [](const std::string& dir, const std::vector<std::pair<std::string, nb::bytes>>& files) {
        std::vector<std::pair<std::string, std::string_view>> views;
        views.reserve(files.size());
        for (const auto& [name, bytes] : files) views.emplace_back(name, std::string_view(bytes.c_str(), bytes.size()));
        try {
          tools::file_io::write_files(dir, views);
        } catch (const tools::file_io::write_error& e) {
          throw std::runtime_error(e.what());  // OSError's cause, not bad input
        }  // file_io::refused_output (a std::invalid_argument) is ValueError: the path may not be written
      },
      nb::arg("dir"), nb::arg("files"), "Writes the files into dir all or nothing (golden's writer).");
  m.def(
      "write_file",
      [](const std::string& path, const nb::bytes& data, const std::string& label) {
        try {
          tools::file_io::write_file_atomic(path, std::string_view(data.c_str(), data.size()), label);
        } catch (const tools::file_io::write_error& e) {
          throw std::runtime_error(e.what());  // OSError's cause, not bad input
        }  // file_io::refused_output (a std::invalid_argument) is ValueError: the path may not be written
      },
      nb::arg("path"), nb::arg("data"), nb::arg("label"),
      "Writes data to path all or nothing, as dsv4-cache-plan --svg writes (file_io.hpp's rule).");
}

}  // namespace dsv4::python
