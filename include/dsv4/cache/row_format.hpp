// dsv4-cache: byte layout of every DeepSeek V4 cache row and page.
//
// Source: tokenspeed `deepseek_v4_cache_spec.py` (the seed); the functions keep its names
// without the `deepseek_v4_` prefix and reject every input it rejects. Stricter than the
// seed, and documented per function: negative or zero dims and row sizes are errors too
// (Python would return negative strides for them). All sizes are bytes unless named
// otherwise; all arithmetic is 64-bit and overflow-checked.
//
// fp8_ds_mla row (SWA window and the CSA/HCA compressed KV), D = 512, R = 64:
//   448 B e4m3 NoPE + 128 B bf16 RoPE + 7 B ue8m0 scales + 1 B pad = 584 B
// stored split in a page of N rows: [N, 576] token data, then [N, 8] scales, then zero
// padding up to a multiple of 576 B (N = 64: 37,376 -> 37,440; N = 2: 1,168 -> 1,728).
//
// Indexer key row (CSA only), d = 128:
//   FP8:   128 B e4m3 + 1 x 4 B fp32 scale            = 132 B
//   MXFP4:  64 B packed e2m1 (2 per byte) + 4 B e8m0   =  68 B
// stored split in a page of N rows: [N, value bytes], then [N, scale bytes]; no padding.
//
// Compressor state row (fp32): [kv state | score state], each coff x D floats, coff = 2
// for ratio 4 (overlapping windows), 1 for ratio 128: CSA 2048 floats = 8,192 B, HCA
// 1024 floats = 4,096 B, CSA indexer compressor (D = 128) 512 floats = 2,048 B.
#pragma once

#include <cstdint>
#include <string_view>

#include "dsv4/cache/checked.hpp"

namespace dsv4::cache {

inline constexpr double kFp8Max = 448.0;               ///< Largest finite E4M3 (fn) magnitude.
inline constexpr std::int64_t kFp8QuantBlock = 64;     ///< NoPE values per UE8M0 scale (fp8_ds_mla).
inline constexpr std::int64_t kFp8IndexerBlock = 128;  ///< Indexer values per fp32 scale (FP8 keys).
inline constexpr std::int64_t kFp8ScaleBytes = 4;      ///< One fp32 scale of an FP8 indexer key.
inline constexpr std::int64_t kMxfp4Block = 32;        ///< Values per E8M0 scale (MXFP4 keys).
inline constexpr std::int64_t kMxfp4ScaleBytes = 1;    ///< One E8M0 scale byte.
inline constexpr std::int64_t kBf16Bytes = 2;
inline constexpr std::int64_t kFp32Bytes = 4;

// ---- fp8_ds_mla row (seed: deepseek_v4_nope_dim ... deepseek_v4_swa_row_bytes) ----

/// NoPE width head_dim - rope_dim, in values. Fails unless head_dim > rope_dim (seed rule)
/// and rope_dim >= 0 (stricter than the seed).
DSV4_HOST_DEVICE constexpr std::int64_t nope_dim(std::int64_t head_dim, std::int64_t rope_dim) {
  require(rope_dim >= 0, "rope_dim must be >= 0", {"rope_dim", rope_dim});
  require(head_dim > rope_dim, "head_dim must be larger than rope_dim", {"head_dim", head_dim}, {"rope_dim", rope_dim});
  return head_dim - rope_dim;
}

/// Token data bytes of one row: NoPE as E4M3 (1 B each) + RoPE as BF16 (2 B each); 576 for
/// D = 512, R = 64. Errors as `nope_dim`.
DSV4_HOST_DEVICE constexpr std::int64_t swa_token_stride(std::int64_t head_dim, std::int64_t rope_dim) {
  return checked_add(nope_dim(head_dim, rope_dim), checked_mul(rope_dim, kBf16Bytes));
}

/// Scale bytes of one row: one UE8M0 per 64 NoPE values + 1 pad byte; 8 for D = 512, R = 64.
/// Fails if the NoPE width is not a multiple of 64 (seed rule), or as `nope_dim`.
DSV4_HOST_DEVICE constexpr std::int64_t swa_scale_dim(std::int64_t head_dim, std::int64_t rope_dim) {
  const std::int64_t nope = nope_dim(head_dim, rope_dim);
  require(nope % kFp8QuantBlock == 0, "DeepSeek V4 FP8 NoPE dim must be divisible by 64", {"nope_dim", nope});
  return nope / kFp8QuantBlock + 1;
}

/// Bytes of one fp8_ds_mla row: token stride + scale bytes; 584 for D = 512, R = 64.
DSV4_HOST_DEVICE constexpr std::int64_t swa_row_bytes(std::int64_t head_dim, std::int64_t rope_dim) {
  return checked_add(swa_token_stride(head_dim, rope_dim), swa_scale_dim(head_dim, rope_dim));
}

/// The fp8_ds_mla row format as a value (see the worked byte sum at the top of this file).
struct fp8_ds_mla_format {
  std::int64_t head_dim = 0;  ///< D, values (512).
  std::int64_t rope_dim = 0;  ///< R, values (64).

  // Worked values for D = 512, R = 64 in each comment. Host and device: the row codecs and
  // kernels read them.
  /// 448
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t nope_values() const { return head_dim - rope_dim; }
  /// 448
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t nope_bytes() const { return nope_values(); }
  /// 128
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t rope_bytes() const { return rope_dim * kBf16Bytes; }
  /// 576
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t token_stride() const { return nope_bytes() + rope_bytes(); }
  /// 7
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t num_scales() const { return nope_values() / kFp8QuantBlock; }
  /// 8
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t scale_bytes() const { return num_scales() + 1; }
  /// 584
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t row_bytes() const { return token_stride() + scale_bytes(); }
};

/// Validated fp8_ds_mla format for (head_dim, rope_dim); errors as `swa_row_bytes`.
DSV4_HOST_DEVICE constexpr fp8_ds_mla_format make_fp8_ds_mla_format(std::int64_t head_dim, std::int64_t rope_dim) {
  (void)swa_row_bytes(head_dim, rope_dim);  // every seed check, overflow included
  return {head_dim, rope_dim};
}

/// A page of `rows_per_page` fp8_ds_mla rows, split layout:
/// `[rows_per_page, token_stride]` token data, then `[rows_per_page, scale_bytes]` scales,
/// then zeros up to a multiple of token_stride. Row r's scales are at
/// rows_per_page * 576 + r * 8, never at r * 584 (the classic bug, facts section 5.6).
struct fp8_ds_mla_page_layout {
  fp8_ds_mla_format format{};
  std::int64_t rows_per_page = 0;

  /// Offset of row r's token data ([nope e4m3 | rope bf16]) from the page start, bytes.
  /// Precondition 0 <= r < rows_per_page, unchecked here (a hot path): the row codecs check it.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t data_offset(std::int64_t r) const {
    return r * format.token_stride();
  }
  /// Offset of row r's scale bytes ([num_scales ue8m0 | pad]) from the page start, bytes.
  /// Precondition 0 <= r < rows_per_page, unchecked (see data_offset).
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t scale_offset(std::int64_t r) const {
    return rows_per_page * format.token_stride() + r * format.scale_bytes();
  }
  /// Unpadded bytes of the page: rows_per_page * row_bytes.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t used_bytes() const {
    return checked_mul(rows_per_page, format.row_bytes(),
                       "fp8_ds_mla page bytes (rows_per_page x row_bytes) overflow 64 bits");
  }
  /// Page bytes, padded up to a multiple of token_stride: 37,440 for 64 rows, 1,728 for 2.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t page_bytes() const {
    return round_up(used_bytes(), format.token_stride());
  }
};

/// Validated page layout; fails unless rows_per_page > 0 or on overflow.
DSV4_HOST_DEVICE constexpr fp8_ds_mla_page_layout make_fp8_ds_mla_page_layout(const fp8_ds_mla_format& f,
                                                                              std::int64_t rows_per_page) {
  require(rows_per_page > 0, "rows_per_page must be > 0", {"rows_per_page", rows_per_page});
  const fp8_ds_mla_page_layout l{make_fp8_ds_mla_format(f.head_dim, f.rope_dim), rows_per_page};
  (void)l.page_bytes();  // overflow check
  return l;
}

// ---- Indexer key rows (seed: deepseek_v4_indexer_*) ----

/// Packed E2M1 bytes of an MXFP4 indexer key: index_head_dim / 2 (two values per byte, value
/// 2i in the low nibble). Fails if index_head_dim is odd (seed rule) or <= 0 (stricter).
DSV4_HOST_DEVICE constexpr std::int64_t indexer_mxfp4_value_bytes(std::int64_t index_head_dim) {
  require(index_head_dim > 0, "index_head_dim must be > 0", {"index_head_dim", index_head_dim});
  require(index_head_dim % 2 == 0, "MXFP4 index head dim must be even", {"index_head_dim", index_head_dim});
  return index_head_dim / 2;
}

/// E8M0 scale bytes of an MXFP4 indexer key: one per 32 values. Fails unless
/// index_head_dim % 32 == 0 (seed rule) and > 0 (stricter).
DSV4_HOST_DEVICE constexpr std::int64_t indexer_mxfp4_scale_dim(std::int64_t index_head_dim) {
  require(index_head_dim > 0, "index_head_dim must be > 0", {"index_head_dim", index_head_dim});
  require(index_head_dim % kMxfp4Block == 0, "MXFP4 index head dim must be divisible by 32",
          {"index_head_dim", index_head_dim});
  return index_head_dim / kMxfp4Block * kMxfp4ScaleBytes;
}

/// Bytes of one MXFP4 indexer key: value bytes + scale bytes; 64 + 4 = 68 for d = 128.
DSV4_HOST_DEVICE constexpr std::int64_t indexer_mxfp4_row_bytes(std::int64_t index_head_dim) {
  return indexer_mxfp4_value_bytes(index_head_dim) + indexer_mxfp4_scale_dim(index_head_dim);
}

/// Result of `indexer_mxfp4_layout_from_row_bytes`.
struct indexer_mxfp4_layout {
  std::int64_t index_head_dim = 0;  ///< values
  std::int64_t value_bytes = 0;     ///< packed E2M1 bytes
  std::int64_t scale_bytes = 0;     ///< E8M0 bytes
  friend constexpr bool operator==(const indexer_mxfp4_layout&, const indexer_mxfp4_layout&) = default;
};

/// Inverse of `indexer_mxfp4_row_bytes`: 68 -> {128, 64, 4}. Fails unless row_bytes is a
/// positive whole number of 17-byte (16 value + 1 scale) blocks.
DSV4_HOST_DEVICE constexpr indexer_mxfp4_layout indexer_mxfp4_layout_from_row_bytes(std::int64_t row_bytes) {
  constexpr std::int64_t value_bytes_per_block = kMxfp4Block / 2;
  constexpr std::int64_t bytes_per_block = value_bytes_per_block + kMxfp4ScaleBytes;
  require(row_bytes > 0, "MXFP4 indexer row bytes must be > 0", {"row_bytes", row_bytes});
  require(row_bytes % bytes_per_block == 0, "MXFP4 indexer row bytes must be value+scale aligned (a multiple of 17)",
          {"row_bytes", row_bytes});
  const std::int64_t blocks = row_bytes / bytes_per_block;
  require(blocks <= INT64_MAX / kMxfp4Block, "MXFP4 indexer row bytes give an index_head_dim that overflows 64 bits",
          {"row_bytes", row_bytes});
  const indexer_mxfp4_layout l{blocks * kMxfp4Block, blocks * value_bytes_per_block, blocks * kMxfp4ScaleBytes};
  require(indexer_mxfp4_scale_dim(l.index_head_dim) == l.scale_bytes, "invalid MXFP4 indexer row bytes",
          {"row_bytes", row_bytes});
  return l;
}

/// fp32 scale bytes of an FP8 indexer key: 4 per 128 values. Fails unless
/// index_head_dim % 128 == 0 (seed rule) and > 0 (stricter).
DSV4_HOST_DEVICE constexpr std::int64_t indexer_fp8_scale_bytes(std::int64_t index_head_dim) {
  require(index_head_dim > 0, "index_head_dim must be > 0", {"index_head_dim", index_head_dim});
  require(index_head_dim % kFp8IndexerBlock == 0, "FP8 index head dim must be divisible by 128",
          {"index_head_dim", index_head_dim});
  return index_head_dim / kFp8IndexerBlock * kFp8ScaleBytes;
}

/// Bytes of one FP8 indexer key: index_head_dim E4M3 bytes + scale bytes; 132 for d = 128.
DSV4_HOST_DEVICE constexpr std::int64_t indexer_fp8_row_bytes(std::int64_t index_head_dim) {
  return checked_add(index_head_dim, indexer_fp8_scale_bytes(index_head_dim));
}

/// Result of `indexer_fp8_layout_from_row_bytes`.
struct indexer_fp8_layout {
  std::int64_t index_head_dim = 0;  ///< values (= E4M3 bytes)
  std::int64_t scale_bytes = 0;     ///< fp32 scale bytes
  friend constexpr bool operator==(const indexer_fp8_layout&, const indexer_fp8_layout&) = default;
};

/// Inverse of `indexer_fp8_row_bytes`: 132 -> {128, 4}. Fails unless row_bytes is a positive
/// whole number of 132-byte (128 value + 4 scale) blocks.
DSV4_HOST_DEVICE constexpr indexer_fp8_layout indexer_fp8_layout_from_row_bytes(std::int64_t row_bytes) {
  constexpr std::int64_t bytes_per_block = kFp8IndexerBlock + kFp8ScaleBytes;
  require(row_bytes > 0, "FP8 indexer row bytes must be > 0", {"row_bytes", row_bytes});
  require(row_bytes % bytes_per_block == 0, "FP8 indexer row bytes must be value+scale aligned (a multiple of 132)",
          {"row_bytes", row_bytes});
  const std::int64_t d = row_bytes / bytes_per_block * kFp8IndexerBlock;
  const std::int64_t scale = indexer_fp8_scale_bytes(d);
  require(d + scale == row_bytes, "invalid FP8 indexer row bytes", {"row_bytes", row_bytes});
  return {d, scale};
}

/// How indexer keys are stored.
enum class indexer_format : std::uint8_t { fp8, mxfp4 };

/// "fp8" or "mxfp4".
constexpr std::string_view to_string(indexer_format f) { return f == indexer_format::fp8 ? "fp8" : "mxfp4"; }

/// An indexer key row format as a value: 132 B (FP8) or 68 B (MXFP4) for d = 128.
struct indexer_row_format {
  indexer_format format = indexer_format::fp8;
  std::int64_t index_head_dim = 0;  ///< values
  std::int64_t value_bytes = 0;     ///< E4M3 bytes, or packed E2M1 bytes
  std::int64_t scale_bytes = 0;     ///< fp32 bytes, or E8M0 bytes
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t row_bytes() const { return value_bytes + scale_bytes; }
};

/// Validated indexer row format; errors as the seed function of that format.
DSV4_HOST_DEVICE constexpr indexer_row_format make_indexer_row_format(indexer_format f, std::int64_t index_head_dim) {
  if (f == indexer_format::fp8) {
    (void)indexer_fp8_row_bytes(index_head_dim);  // the seed's checks, and the row bytes must fit in 64 bits
    return {f, index_head_dim, index_head_dim, indexer_fp8_scale_bytes(index_head_dim)};
  }
  return {f, index_head_dim, indexer_mxfp4_value_bytes(index_head_dim), indexer_mxfp4_scale_dim(index_head_dim)};
}

/// A page of `rows_per_page` indexer keys: `[rows_per_page, value_bytes]` then
/// `[rows_per_page, scale_bytes]`; page bytes = rows_per_page * row_bytes (64 x 68 = 4,352).
struct indexer_page_layout {
  indexer_row_format format{};
  std::int64_t rows_per_page = 0;

  /// Offset of row r's values from the page start, bytes. Precondition 0 <= r < rows_per_page,
  /// unchecked here (a hot path): the row codecs check it.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t data_offset(std::int64_t r) const {
    return r * format.value_bytes;
  }
  /// Offset of row r's scales from the page start, bytes. Precondition as data_offset.
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t scale_offset(std::int64_t r) const {
    return rows_per_page * format.value_bytes + r * format.scale_bytes;
  }
  [[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t page_bytes() const {
    return rows_per_page * format.row_bytes();
  }
};

/// Validated indexer page layout; fails unless rows_per_page > 0 or on overflow.
DSV4_HOST_DEVICE constexpr indexer_page_layout make_indexer_page_layout(const indexer_row_format& f,
                                                                        std::int64_t rows_per_page) {
  require(rows_per_page > 0, "rows_per_page must be > 0", {"rows_per_page", rows_per_page});
  const indexer_row_format v = make_indexer_row_format(f.format, f.index_head_dim);  // validated before row_bytes()
  (void)checked_mul(rows_per_page, v.row_bytes(), "indexer page bytes (rows_per_page x row_bytes) overflow 64 bits");
  return {v, rows_per_page};
}

// ---- Compressor state rows ----

/// Overlap factor coff of a compressor: 2 for ratio 4 (overlapping windows), 1 otherwise.
DSV4_HOST_DEVICE constexpr std::int64_t compressor_overlap_factor(std::int64_t ratio) { return ratio == 4 ? 2 : 1; }

/// fp32 values of one compressor-state row, [kv state | score state] of coff x dim each:
/// 2048 (CSA, D = 512), 1024 (HCA), 512 (CSA indexer, D = 128). Fails unless ratio > 1, dim > 0.
DSV4_HOST_DEVICE constexpr std::int64_t compressor_state_row_floats(std::int64_t ratio, std::int64_t dim) {
  require(ratio > 1, "compressor ratio must be > 1", {"ratio", ratio});
  require(dim > 0, "compressor state dim must be > 0", {"dim", dim});
  return checked_mul(checked_mul<std::int64_t>(2, compressor_overlap_factor(ratio)), dim);
}

/// Bytes of one compressor-state row: 4 x `compressor_state_row_floats`.
DSV4_HOST_DEVICE constexpr std::int64_t compressor_state_row_bytes(std::int64_t ratio, std::int64_t dim) {
  return checked_mul(compressor_state_row_floats(ratio, dim), kFp32Bytes);
}

/// Tokens a compressor must keep: (1 + overlap) x ratio = 8 for CSA, 128 for HCA.
DSV4_HOST_DEVICE constexpr std::int64_t compressor_state_window_tokens(std::int64_t ratio) {
  require(ratio > 1, "compressor ratio must be > 1", {"ratio", ratio});
  return checked_mul(compressor_overlap_factor(ratio), ratio);
}

}  // namespace dsv4::cache
