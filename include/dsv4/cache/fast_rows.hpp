// dsv4-cache: the specialized (fast) insert / gather kernels' lane work, host and device, and
// which device path a (row format, writer policy) takes.
//
// Two device paths write and read every pool (cuda/kernels.cuh):
//   fast     warp-per-row kernels with 16 B vector accesses, for three formats only:
//            `v4.fp8_ds_mla`, the FP8 indexer keys (`v4.indexer_fp8`, `v3.2.indexer_fp8`: the
//            same bytes) and `v4.indexer_mxfp4`, and only for the writer policies their chunk
//            arithmetic implements (`fast_kernels_support`);
//   generic  one lane per (token, unit) running slot_work.hpp, for every registered format and
//            every policy.
// Both take the writer's `format_policy` (default: the format's default writer, `F::writers[0]`),
// so the bytes depend on the writer, never on the path (tests/fast_rows_test.cpp emulates both
// paths' lanes on the host and compares their pages and gathers for every writer).
//
// Lane work of the fast kernels: a row of `values` BF16 is cut into chunks of 8 values (one
// 16 B load, chunk_codec.hpp); lane c of the row group owns chunk c. A scale block's lanes first
// combine their `chunk_amax` partials (the kernels with xor-shuffles, in any order: integer
// maxima), then each lane quantizes its chunk and stores its bytes (`insert_chunk`); the first
// lane of a block stores the block's scale. Gather is per chunk with no exchange
// (`gather_chunk`). What each function writes, in the page of rows_per_page rows (row r):
//   fp8_ds_mla (D = 512, R = 64; 64 chunks: 56 NoPE in 7 blocks of 8, then 8 RoPE):
//     NoPE chunk c  8 E4M3 codes at data_offset(r) + 8c; c % 8 == 0: scale byte c / 8 at
//                   scale_offset(r) + c / 8
//     RoPE chunk c  the 16 B of BF16 as loaded, at data_offset(r) + nope_bytes + 16 (c - 56)
//     pad           lane 0: the scale pad bytes [num_scales, scale_bytes) of the row, 0x00
//   indexer FP8 (d = 128: 16 chunks, one block): codes at data_offset(r) + 8c; chunk 0: the
//     fp32 scale (little-endian) at scale_offset(r)
//   indexer MXFP4 (d = 128: 16 chunks, blocks of 4): packed E2M1 at data_offset(r) + 4c;
//     c % 4 == 0: E8M0 byte c / 4 at scale_offset(r) + c / 4
// Multi-byte stores are little-endian: vector stores on the device, byte stores on the host.
// Standard library only (CUDA built-ins under __CUDA_ARCH__ alone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "dsv4/cache/chunk_codec.hpp"
#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/cache/platform.hpp"
#include "dsv4/cache/row_format.hpp"

namespace dsv4::cache {

/// The formats of the specialized kernels: `v4.fp8_ds_mla`, FP8 indexer keys (`v4.indexer_fp8`
/// and `v3.2.indexer_fp8`, the same bytes) and `v4.indexer_mxfp4`; `other` marks a format with
/// the generic kernels only.
enum class pool_format : std::uint8_t { fp8_ds_mla, indexer_fp8, indexer_mxfp4, other };

/// The registry name of a specialized-kernel format ("v4.indexer_fp8" for both FP8 indexers).
constexpr std::string_view to_string(pool_format f) {
  switch (f) {
    case pool_format::fp8_ds_mla: return formats::v4_fp8_ds_mla::layout.name;
    case pool_format::indexer_fp8: return formats::v4_indexer_fp8::layout.name;
    case pool_format::indexer_mxfp4: return formats::v4_indexer_mxfp4::layout.name;
    case pool_format::other: return "other";
  }
  return "?";
}

/// The specialized-kernel format of registry format `f` (`other` if none).
constexpr pool_format fast_format(const format_layout& f) {
  if (f.name == formats::v4_fp8_ds_mla::layout.name) return pool_format::fp8_ds_mla;
  if (f.name == formats::v4_indexer_fp8::layout.name || f.name == formats::v32_indexer_fp8::layout.name)
    return pool_format::indexer_fp8;
  if (f.name == formats::v4_indexer_mxfp4::layout.name) return pool_format::indexer_mxfp4;
  return pool_format::other;
}

/// The page layout type of a specialized format: fp8_ds_mla pages or indexer-key pages.
template <pool_format F>
using page_layout_t = std::conditional_t<F == pool_format::fp8_ds_mla, fp8_ds_mla_page_layout, indexer_page_layout>;

/// True for the formats the specialized kernels handle.
template <pool_format F>
inline constexpr bool is_kernel_format_v =
    F == pool_format::fp8_ds_mla || F == pool_format::indexer_fp8 || F == pool_format::indexer_mxfp4;

/// The default writer's policy of a specialized format (`F::default_policy` of the registry
/// format: FlashMLA's for v4.fp8_ds_mla, vLLM's for the FP8 indexer keys, the same for V4 and
/// V3.2, and vLLM's for v4.indexer_mxfp4). Fails for `other`.
constexpr format_policy fast_default_policy(pool_format f) {
  switch (f) {
    case pool_format::fp8_ds_mla: return formats::v4_fp8_ds_mla::default_policy;
    case pool_format::indexer_fp8: return formats::v4_indexer_fp8::default_policy;
    case pool_format::indexer_mxfp4: return formats::v4_indexer_mxfp4::default_policy;
    case pool_format::other: break;
  }
  fail("fast_default_policy: the format has no specialized kernels");
}

/// Whether the specialized kernels of `f` write what the registry format writes under `p`:
/// the chunk arithmetic (chunk_codec.hpp) has the exact-ceiling E4M3 exponent with any amax floor
/// and NaN policy, the power-of-two fp32 scale of the FP8 indexer keys, and the nearest-even
/// E2M1 rounding with any MXFP4 floor, scale rule and NaN policy. Anything else (TensorRT-LLM's
/// float log2, V3.2's unrounded indexer scale, tokenspeed's ties-toward-zero E2M1) is the
/// generic path's. False for `other`.
constexpr bool fast_kernels_support(pool_format f, const format_policy& p) {
  switch (f) {
    case pool_format::fp8_ds_mla: return p.fp8_exp == fp8_exponent::exact_ceil;
    case pool_format::indexer_fp8:
      return p.fp8_exp == fp8_exponent::exact_ceil && p.fp32_scale == fp32_scale_rule::power_of_two;
    case pool_format::indexer_mxfp4: return p.mxfp4_rounding == e2m1_rounding::nearest_even;
    case pool_format::other: return false;
  }
  return false;
}

/// The two device paths (see the top of this file).
enum class device_path : std::uint8_t { fast, generic };

/// "fast" or "generic".
constexpr std::string_view to_string(device_path p) { return p == device_path::fast ? "fast" : "generic"; }

/// The path a pool of registry format `f` written under policy `p` takes: fast where `f` has
/// specialized kernels that implement `p`, generic otherwise.
constexpr device_path device_path_for(const format_layout& f, const format_policy& p) {
  const pool_format k = fast_format(f);
  return k != pool_format::other && fast_kernels_support(k, p) ? device_path::fast : device_path::generic;
}

namespace fast {

/// Static shape of a specialized format's kernels: lanes per row, chunks per lane at most
/// (bounds the row: kMaxIters x kLanesPerRow x 8 values), lanes per scale block.
template <pool_format F>
struct row_traits;
template <>
struct row_traits<pool_format::fp8_ds_mla> {
  static constexpr int kLanesPerRow = 32;  ///< One warp per row.
  static constexpr int kMaxIters = 4;      ///< head_dim <= 4 x 32 x 8 = 1,024.
  static constexpr int kBlockLanes = static_cast<int>(kFp8QuantBlock) / kChunkValues;  ///< 8 lanes per scale.
};
template <>
struct row_traits<pool_format::indexer_fp8> {
  static constexpr int kLanesPerRow = 16;  ///< Two rows per warp.
  static constexpr int kMaxIters = 4;      ///< index_head_dim <= 4 x 16 x 8 = 512.
  static constexpr int kBlockLanes = static_cast<int>(kFp8IndexerBlock) / kChunkValues;  ///< 16 lanes.
};
template <>
struct row_traits<pool_format::indexer_mxfp4> {
  static constexpr int kLanesPerRow = 16;
  static constexpr int kMaxIters = 4;
  static constexpr int kBlockLanes = static_cast<int>(kMxfp4Block) / kChunkValues;  ///< 4 lanes.
};

/// Values of one row (the BF16 input / output width): head_dim (512) for fp8_ds_mla,
/// index_head_dim (128) for indexer keys.
template <pool_format F>
[[nodiscard]] DSV4_HOST_DEVICE constexpr std::int64_t row_values(const page_layout_t<F>& l) {
  if constexpr (F == pool_format::fp8_ds_mla)
    return l.format.head_dim;
  else
    return l.format.index_head_dim;
}

/// Chunks of 8 values in one row.
template <pool_format F>
[[nodiscard]] DSV4_HOST_DEVICE constexpr int row_chunks(const page_layout_t<F>& l) {
  return static_cast<int>(row_values<F>(l) / kChunkValues);
}

/// Whether chunk c belongs to a scale block (its lane's amax takes part in the block's): the
/// NoPE chunks of fp8_ds_mla, every chunk of an indexer key. Block b is chunks
/// [b x kBlockLanes, (b + 1) x kBlockLanes).
template <pool_format F>
[[nodiscard]] DSV4_HOST_DEVICE constexpr bool chunk_in_block(const page_layout_t<F>& l, int c) {
  if constexpr (F == pool_format::fp8_ds_mla)
    return c < static_cast<int>(l.format.nope_values() / kChunkValues);
  else
    return c < row_chunks<F>(l);
}

namespace detail {
// Little-endian stores and loads of 4, 8 and 16 bytes at an address aligned to their size: one
// vector access on the device (the kernels' 16 B / 8 B / 4 B transactions), bytes on the host.
DSV4_HOST_DEVICE inline void store_u32(std::uint8_t* p, std::uint32_t w) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<std::uint32_t*>(p) = w;
#else
  for (int k = 0; k < 4; ++k) p[k] = static_cast<std::uint8_t>(w >> (8 * k));
#endif
}
DSV4_HOST_DEVICE inline void store_u32x2(std::uint8_t* p, std::uint32_t w0, std::uint32_t w1) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<uint2*>(p) = make_uint2(w0, w1);
#else
  store_u32(p, w0);
  store_u32(p + 4, w1);
#endif
}
DSV4_HOST_DEVICE inline void store_u32x4(std::uint8_t* p, const bf16x8& x) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<uint4*>(p) = make_uint4(x.w[0], x.w[1], x.w[2], x.w[3]);
#else
  for (std::size_t i = 0; i < 4; ++i) store_u32(p + 4 * i, x.w[i]);
#endif
}
DSV4_HOST_DEVICE inline std::uint32_t load_u32(const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(reinterpret_cast<const unsigned*>(p));
#else
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
#endif
}
DSV4_HOST_DEVICE inline void load_u32x2(const std::uint8_t* p, std::uint32_t (&w)[2]) {
#if defined(__CUDA_ARCH__)
  const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
  w[0] = v.x;
  w[1] = v.y;
#else
  w[0] = load_u32(p);
  w[1] = load_u32(p + 4);
#endif
}
DSV4_HOST_DEVICE inline bf16x8 load_u32x4(const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
  return bf16x8{{v.x, v.y, v.z, v.w}};
#else
  return bf16x8{{load_u32(p), load_u32(p + 4), load_u32(p + 8), load_u32(p + 12)}};
#endif
}
DSV4_HOST_DEVICE inline std::uint8_t load_u8(const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}
}  // namespace detail

/// Lane work of the specialized insert: quantizes chunk `c` (input values `x`) of row `row` of
/// `page` (a page of layout `l`) and stores its bytes (see the top of this file). `block` is the
/// amax of the chunk's scale block, combined over the block's lanes; ignored for a chunk outside
/// every block (RoPE). Policy fields read: fp8_amax_floor and nan (E4M3), mxfp4_amax_floor,
/// mxfp4_scale and nan (E2M1); the caller checks `fast_kernels_support` once. Precondition
/// (unchecked, a hot path): 0 <= c < row_chunks, 0 <= row < rows_per_page.
template <pool_format F>
DSV4_HOST_DEVICE inline void insert_chunk(const page_layout_t<F>& l, std::uint8_t* page, std::int64_t row, int c,
                                          const bf16x8& x, amax_bits block, const format_policy& p) {
  using T = row_traits<F>;
  std::uint8_t* data = page + l.data_offset(row);
  std::uint8_t* scales = page + l.scale_offset(row);
  if constexpr (F == pool_format::fp8_ds_mla) {
    const int nope_chunks = static_cast<int>(l.format.nope_values() / kChunkValues);
    if (c < nope_chunks) {
      std::uint32_t codes[2];
      const std::uint8_t byte = quantize_e4m3_chunk(x, block, p.fp8_amax_floor, p.nan, codes);
      detail::store_u32x2(data + std::int64_t{c} * kChunkValues, codes[0], codes[1]);
      if (c % T::kBlockLanes == 0) scales[c / T::kBlockLanes] = byte;
    } else {  // RoPE: the BF16 bits as loaded, 16 B per chunk
      detail::store_u32x4(data + l.format.nope_bytes() + std::int64_t{c - nope_chunks} * 16, x);
    }
  } else if constexpr (F == pool_format::indexer_fp8) {
    std::uint32_t codes[2];
    const std::uint8_t byte = quantize_e4m3_chunk(x, block, p.fp8_amax_floor, p.nan, codes);
    detail::store_u32x2(data + std::int64_t{c} * kChunkValues, codes[0], codes[1]);
    if (c % T::kBlockLanes == 0)
      detail::store_u32(scales + std::int64_t{c / T::kBlockLanes} * kFp8ScaleBytes,
                        indexer_fp8_scale_bits(byte, block, p.nan));
  } else {
    static_assert(F == pool_format::indexer_mxfp4);
    std::uint32_t packed = 0;
    const std::uint8_t byte = quantize_e2m1_chunk(x, block, p.mxfp4_amax_floor, p.mxfp4_scale, p.nan, packed);
    detail::store_u32(data + std::int64_t{c} * (kChunkValues / 2), packed);
    if (c % T::kBlockLanes == 0) scales[c / T::kBlockLanes] = byte;
  }
}

/// The insert's per-row bytes outside every chunk, written by lane 0: fp8_ds_mla's scale pad
/// bytes [num_scales, scale_bytes) of row `row`, 0x00. Nothing for the indexer keys.
template <pool_format F>
DSV4_HOST_DEVICE inline void insert_row_tail(const page_layout_t<F>& l, std::uint8_t* page, std::int64_t row) {
  if constexpr (F == pool_format::fp8_ds_mla) {
    std::uint8_t* scales = page + l.scale_offset(row);
    for (std::int64_t b = l.format.num_scales(); b < l.format.scale_bytes(); ++b) scales[b] = 0;
  } else {
    (void)l;
    (void)page;
    (void)row;
  }
}

/// What the gather reads for one chunk: the 8 values as floats (NaN canonical) and, for a chunk
/// stored as BF16 (fp8_ds_mla's RoPE), those BF16 bits as stored (`raw`, `is_raw`); otherwise
/// the BF16 output is `pack_bf16x8(v)` (round to nearest even).
struct gathered_chunk {
  float v[kChunkValues];
  bf16x8 raw;
  bool is_raw;
};

/// Lane work of the specialized gather: dequantizes chunk `c` of row `row` of `page`, as the
/// registry format's `dequantize_row` does for those 8 values. Reads only the chunk's codes and
/// its block's scale. Precondition as `insert_chunk`.
template <pool_format F>
DSV4_HOST_DEVICE inline gathered_chunk gather_chunk(const page_layout_t<F>& l, const std::uint8_t* page,
                                                    std::int64_t row, int c) {
  using T = row_traits<F>;
  const std::uint8_t* data = page + l.data_offset(row);
  const std::uint8_t* scales = page + l.scale_offset(row);
  gathered_chunk g{};
  if constexpr (F == pool_format::fp8_ds_mla) {
    const int nope_chunks = static_cast<int>(l.format.nope_values() / kChunkValues);
    if (c < nope_chunks) {
      std::uint32_t codes[2];
      detail::load_u32x2(data + std::int64_t{c} * kChunkValues, codes);
      dequantize_e4m3_chunk(codes, e8m0_to_float(detail::load_u8(scales + c / T::kBlockLanes)), g.v);
    } else {  // RoPE: BF16 bits out as stored, floats exact
      g.raw = detail::load_u32x4(data + l.format.nope_bytes() + std::int64_t{c - nope_chunks} * 16);
      g.is_raw = true;
      unpack_bf16x8(g.raw, g.v);
    }
  } else if constexpr (F == pool_format::indexer_fp8) {
    std::uint32_t codes[2];
    detail::load_u32x2(data + std::int64_t{c} * kChunkValues, codes);
    const std::uint32_t scale = detail::load_u32(scales + std::int64_t{c / T::kBlockLanes} * kFp8ScaleBytes);
    dequantize_e4m3_chunk(codes, cache::detail::bits_float(scale), g.v);
  } else {
    static_assert(F == pool_format::indexer_mxfp4);
    const std::uint32_t packed = detail::load_u32(data + std::int64_t{c} * (kChunkValues / 2));
    dequantize_e2m1_chunk(packed, e8m0_to_float(detail::load_u8(scales + c / T::kBlockLanes)), g.v);
  }
  return g;
}

}  // namespace fast
}  // namespace dsv4::cache
