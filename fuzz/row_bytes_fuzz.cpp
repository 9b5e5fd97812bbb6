// Fuzz target: the row-bytes functions of row_format.hpp, forward and inverse. Every result is
// compared with an independent 128-bit oracle of the format (facts sheet section 2):
//   indexer MXFP4: valid d iff d > 0, d % 32 == 0; row = d/2 + d/32; valid row iff row > 0, row % 17 == 0
//                  and d = row/17*32 fits in int64
//   indexer FP8:   valid d iff d > 0, d % 128 == 0; row = d + 4*d/128; valid row iff row > 0, row % 132 == 0
//   fp8_ds_mla:    valid iff 0 <= R < D, (D-R) % 64 == 0; row = (D-R) + 2R + (D-R)/64 + 1
// and the inverse functions must round-trip the forward ones. A result that does not fit in
// int64 must be an error, never a wrapped number.
#include <cstddef>
#include <cstdint>
#include <limits>

#include "fuzz_common.hpp"

namespace {
using namespace dsv4::cache;
using dsv4::fuzz::expect_clean;
using dsv4::fuzz::i128;
using dsv4::fuzz::pick;

constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();

bool fits(i128 v) { return v >= kI64Min && v <= kI64Max; }

void check_mxfp4(std::int64_t d, std::int64_t row) {
  const auto fwd = expect_clean([&] { return indexer_mxfp4_row_bytes(d); });
  DSV4_FUZZ_CHECK(fwd.has_value() == (d > 0 && d % 32 == 0));
  if (fwd) {
    DSV4_FUZZ_CHECK(*fwd == d / 2 + d / 32);
    DSV4_FUZZ_CHECK(indexer_mxfp4_layout_from_row_bytes(*fwd) == (indexer_mxfp4_layout{d, d / 2, d / 32}));
  }
  const auto inv = expect_clean([&] { return indexer_mxfp4_layout_from_row_bytes(row); });
  DSV4_FUZZ_CHECK(inv.has_value() == (row > 0 && row % 17 == 0 && fits(static_cast<i128>(row) / 17 * 32)));
  if (inv) {
    DSV4_FUZZ_CHECK(inv->value_bytes + inv->scale_bytes == row);
    DSV4_FUZZ_CHECK(indexer_mxfp4_row_bytes(inv->index_head_dim) == row);
    DSV4_FUZZ_CHECK(indexer_mxfp4_value_bytes(inv->index_head_dim) == inv->value_bytes);
    DSV4_FUZZ_CHECK(indexer_mxfp4_scale_dim(inv->index_head_dim) == inv->scale_bytes);
  }
}

void check_fp8(std::int64_t d, std::int64_t row) {
  const auto fwd = expect_clean([&] { return indexer_fp8_row_bytes(d); });
  const i128 want = static_cast<i128>(d) + static_cast<i128>(d) / 128 * 4;
  DSV4_FUZZ_CHECK(fwd.has_value() == (d > 0 && d % 128 == 0 && fits(want)));
  if (fwd) {
    DSV4_FUZZ_CHECK(*fwd == want);
    DSV4_FUZZ_CHECK(indexer_fp8_layout_from_row_bytes(*fwd) == (indexer_fp8_layout{d, d / 32}));
  }
  const auto inv = expect_clean([&] { return indexer_fp8_layout_from_row_bytes(row); });
  DSV4_FUZZ_CHECK(inv.has_value() == (row > 0 && row % 132 == 0));
  if (inv) {
    DSV4_FUZZ_CHECK(inv->index_head_dim + inv->scale_bytes == row);
    DSV4_FUZZ_CHECK(indexer_fp8_row_bytes(inv->index_head_dim) == row);
    DSV4_FUZZ_CHECK(indexer_fp8_scale_bytes(inv->index_head_dim) == inv->scale_bytes);
  }
}

void check_indexer_page(indexer_format f, std::int64_t d, std::int64_t rows) {
  const auto fmt = expect_clean([&] { return make_indexer_row_format(f, d); });
  if (!fmt) return;
  DSV4_FUZZ_CHECK(fmt->row_bytes() ==
                  (f == indexer_format::fp8 ? indexer_fp8_row_bytes(d) : indexer_mxfp4_row_bytes(d)));
  const auto page = expect_clean([&] { return make_indexer_page_layout(*fmt, rows); });
  const i128 want = static_cast<i128>(rows) * fmt->row_bytes();
  DSV4_FUZZ_CHECK(page.has_value() == (rows > 0 && fits(want)));
  if (!page) return;
  DSV4_FUZZ_CHECK(page->page_bytes() == want);
  DSV4_FUZZ_CHECK(page->data_offset(rows - 1) + fmt->value_bytes == page->scale_offset(0));
  DSV4_FUZZ_CHECK(page->scale_offset(rows - 1) + fmt->scale_bytes == page->page_bytes());
}

void check_fp8_ds_mla(std::int64_t head, std::int64_t rope, std::int64_t rows) {
  const bool valid_dims = rope >= 0 && head > rope && (static_cast<i128>(head) - rope) % 64 == 0;
  const i128 nope = static_cast<i128>(head) - rope;
  const i128 stride = nope + 2 * static_cast<i128>(rope);
  const i128 row = stride + nope / 64 + 1;
  const auto got = expect_clean([&] { return swa_row_bytes(head, rope); });
  DSV4_FUZZ_CHECK(got.has_value() == (valid_dims && fits(row)));
  if (!got) return;
  DSV4_FUZZ_CHECK(*got == row);
  DSV4_FUZZ_CHECK(swa_token_stride(head, rope) == stride && swa_scale_dim(head, rope) == nope / 64 + 1);
  const fp8_ds_mla_format f = make_fp8_ds_mla_format(head, rope);
  DSV4_FUZZ_CHECK(f.row_bytes() == row && f.token_stride() == stride);
  const auto page = expect_clean([&] { return make_fp8_ds_mla_page_layout(f, rows); });
  const i128 used = static_cast<i128>(rows) * row;
  const i128 padded = (used + stride - 1) / stride * stride;
  DSV4_FUZZ_CHECK(page.has_value() == (rows > 0 && fits(padded)));
  if (!page) return;
  DSV4_FUZZ_CHECK(page->page_bytes() == padded && page->used_bytes() == used);
  DSV4_FUZZ_CHECK(page->data_offset(rows - 1) + stride == page->scale_offset(0));
  DSV4_FUZZ_CHECK(page->scale_offset(rows - 1) + f.scale_bytes() <= page->page_bytes());
}

void check_compressor(std::int64_t ratio, std::int64_t dim) {
  const i128 coff = ratio == 4 ? 2 : 1;
  const i128 floats = 2 * coff * dim;
  const auto got = expect_clean([&] { return compressor_state_row_bytes(ratio, dim); });
  DSV4_FUZZ_CHECK(got.has_value() == (ratio > 1 && dim > 0 && fits(floats * 4)));
  if (got) DSV4_FUZZ_CHECK(*got == floats * 4);
  const auto window = expect_clean([&] { return compressor_state_window_tokens(ratio); });
  DSV4_FUZZ_CHECK(window.has_value() == (ratio > 1 && fits(coff * ratio)));
  if (window) DSV4_FUZZ_CHECK(*window == coff * ratio);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider fdp(data, size);
  const std::initializer_list<std::int64_t> dims = {-1, 0, 1, 2, 31, 32, 64, 96, 128, 256, 512, kI64Max, kI64Min};
  const std::initializer_list<std::int64_t> rows = {-1, 0, 1, 2, 4, 8, 64, 256, kI64Max, kI64Min};
  const std::int64_t d = pick<std::int64_t>(fdp, dims);
  const std::int64_t row = pick<std::int64_t>(fdp, {-17, 0, 1, 16, 17, 34, 68, 132, 264, 584, kI64Max, kI64Min});
  check_mxfp4(d, row);
  check_fp8(d, row);
  check_indexer_page(fdp.ConsumeBool() ? indexer_format::fp8 : indexer_format::mxfp4, d, pick<std::int64_t>(fdp, rows));
  const std::int64_t head = pick<std::int64_t>(fdp, dims);
  const std::int64_t rope = pick<std::int64_t>(fdp, {-1, 0, 1, 63, 64, 448, 512, kI64Max / 2, kI64Max});
  check_fp8_ds_mla(head, rope, pick<std::int64_t>(fdp, rows));
  check_compressor(pick<std::int64_t>(fdp, {-1, 0, 1, 2, 4, 8, 128, kI64Max}), pick<std::int64_t>(fdp, dims));
  return 0;
}
