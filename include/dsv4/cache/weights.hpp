// dsv4-cache: the DeepSeek V4 checkpoint's parameter tensors, and the bytes each GPU holds.
//
// Every tensor of the published checkpoint (its safetensors names, shapes and dtypes), counted from
// `model_config::arch`. Checked: DeepSeek-V4-Flash counts 69,187 tensors and 159,609,485,896 B
// and DeepSeek-V4-Pro 145,116 tensors and 864,704,792,696 B, the `metadata.total_size` of their
// HF model.safetensors.index.json to the byte (tests/weights_test.cpp; the V4-Flash total and
// tensor names as pinned in fxp19950422/rtp-llm rtp_llm/model_loader/test/ @ 0cc3ab0b
// (dsv4_checkpoint_inventory.py), the V4-Pro total and count as pinned in public artifact
// checks found by search). Shapes and dtypes: vllm-project/vllm
// vllm/model_executor/models/deepseek_v4.py @ 023da1fc (decoder layer, MoE, head) and
// vllm/model_executor/layers/deepseek_compressor.py @ 0de10a27 (compressor `ape`, wkv/wgate).
//
// Then how an engine splits them over GPUs (`weight_sharding_for`) and the bytes of the fullest
// rank (`max_rank_weight_bytes`). Plain C++20, constexpr.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>

#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/model.hpp"
#include "dsv4/cache/platform.hpp"

namespace dsv4::cache {

/// A tensor's stored dtype (safetensors spelling in the comments).
enum class weight_dtype : std::uint8_t {
  bf16,     ///< BF16: norms, embeddings, head, router, compressor projections
  f32,      ///< F32: attention sinks, hyper-connection mixes, compressor `ape`, router bias
  f8_e4m3,  ///< F8_E4M3: the FP8 block-quantized linears (and FP8 experts)
  f8_e8m0,  ///< F8_E8M0: UE8M0 scales (FP8 block scales of FP4 checkpoints, MXFP4 scales)
  i8_fp4,   ///< I8: two packed E2M1 (MXFP4) values per byte
  i64,      ///< I64: the hash routers' token-to-expert table `tid2eid`
};

/// Bytes of one element (of one packed byte for i8_fp4).
constexpr std::int64_t dtype_bytes(weight_dtype d) {
  switch (d) {
    case weight_dtype::bf16: return 2;
    case weight_dtype::f32: return 4;
    case weight_dtype::f8_e4m3:
    case weight_dtype::f8_e8m0:
    case weight_dtype::i8_fp4: return 1;
    case weight_dtype::i64: return 8;
  }
  return 0;
}

/// "BF16", "F32", "F8_E4M3", "F8_E8M0", "I8" or "I64": the safetensors dtype name.
constexpr std::string_view to_string(weight_dtype d) {
  switch (d) {
    case weight_dtype::bf16: return "BF16";
    case weight_dtype::f32: return "F32";
    case weight_dtype::f8_e4m3: return "F8_E4M3";
    case weight_dtype::f8_e8m0: return "F8_E8M0";
    case weight_dtype::i8_fp4: return "I8";
    case weight_dtype::i64: return "I64";
  }
  return "?";
}

/// How an engine may split a tensor: what it belongs to.
enum class weight_part : std::uint8_t {
  embedding,          ///< embed.weight [vocab, hidden]: vocab-parallel under TP
  lm_head,            ///< head.weight [vocab, hidden]: vocab-parallel under TP
  global,             ///< final norm, hc_head_*: on every rank
  attn_replicated,    ///< norms, wq_a, wkv, compressors, indexer: replicated across attention TP
  attn_heads,         ///< wq_b (by heads), wo_a (by groups), attn_sink: column-split over attention TP
  attn_row,           ///< wo_b: row-split (input dim) over attention TP
  layer_replicated,   ///< hyper-connection mixes, ffn_norm, router gate / bias / tid2eid
  shared_expert_col,  ///< shared_experts.w1 / w3: column-split over TP
  shared_expert_row,  ///< shared_experts.w2: row-split over TP
  routed_expert_col,  ///< experts.N.w1 / w3 [I, H]: experts over EP, or I split over the MoE TP
  routed_expert_row,  ///< experts.N.w2 [H, I]: experts over EP, or I split over the MoE TP
  mtp_replicated,     ///< mtp.0 enorm, hnorm, e_proj, h_proj: replicated
};

/// One parameter tensor of the checkpoint, or `count` tensors of one shape (the routed experts of
/// a layer: "layers.3.ffn.experts.{E}.w1.weight", E in [0, count)).
struct weight_tensor {
  std::string_view pattern;  ///< name with "{L}" for the layer (main: layers.L, MTP: mtp.L) and "{E}" for the expert
  int layer = -1;            ///< -1: model-level; [0, num_hidden_layers): main; beyond: MTP layer
  std::int64_t count = 1;    ///< tensors of this shape (the experts of a layer)
  std::array<std::int64_t, 2> shape{1, 1};  ///< [rows, cols]; a vector has rows = length, cols = 1
  int rank = 2;                             ///< 1 for vectors
  weight_dtype dtype = weight_dtype::bf16;
  bool is_scale = false;  ///< a block / MXFP4 scale tensor (`.scale`)
  weight_part part = weight_part::global;

  /// Bytes of all `count` tensors: count x rows x cols x dtype bytes.
  [[nodiscard]] constexpr std::int64_t bytes() const {
    return checked_mul(checked_mul(checked_mul(count, shape[0]), shape[1]), dtype_bytes(dtype));
  }
};

namespace detail {
/// Fails naming why a model's weights cannot be counted.
constexpr void require_arch(const model_config& c) {
  if (c.arch.known) return;
  switch (c.arch.gap) {
    case arch_gap::v41_unmodelled:
      fail(
          "the DeepSeek V4.1 checkpoint's weights are not modelled: its vision tower, Engram tables "
          "(engram_num_embeddings, not in the released config.json) and DSpark draft tensors have no "
          "sourced shapes; give the KV budget (--memory-gib) or the weights and reserve (--reserved-gib)");
    case arch_gap::v32_unmodelled:
      fail(
          "the DeepSeek V3.2 checkpoint's weights are not modelled (the V3 MLA tensor list); give the KV "
          "budget (--memory-gib) or the weights and reserve (--reserved-gib)");
    default:
      fail(
          "the config.json has no weight fields (hidden_size and the rest): the weights cannot be counted; "
          "give the KV budget (--memory-gib) or the weights and reserve (--reserved-gib)");
  }
}

/// The fp8 block-quantized linear [rows, cols] and its scale tensor.
template <class F>
constexpr void fp8_linear(const model_arch& a, std::string_view w, std::string_view s, int layer, std::int64_t rows,
                          std::int64_t cols, weight_part part, F& f) {
  f(weight_tensor{w, layer, 1, {rows, cols}, 2, weight_dtype::f8_e4m3, false, part});
  const weight_dtype sd = a.scales == block_scale_dtype::ue8m0 ? weight_dtype::f8_e8m0 : weight_dtype::f32;
  f(weight_tensor{
      s,
      layer,
      1,
      {ceil_div<std::int64_t>(rows, a.weight_block_rows), ceil_div<std::int64_t>(cols, a.weight_block_cols)},
      2,
      sd,
      true,
      part});
}

/// The compressor of a ratio-r layer at `width` (head_dim or index_head_dim): wkv and wgate
/// [coff x width, hidden] BF16, norm [width] BF16, ape [r, coff x width] F32; coff = 2 with the
/// overlap of ratio 4, else 1 (deepseek_compressor.py @ 0de10a27: `ape`, `fused_wkv_wgate`).
template <class F>
constexpr void compressor(const model_arch& a, bool indexer, int layer, int ratio, std::int64_t width, F& f) {
  const std::int64_t coff = ratio == 4 ? 2 : 1;
  const std::int64_t h = a.hidden_size;
  f(weight_tensor{indexer ? "layers.{L}.attn.indexer.compressor.wkv.weight" : "layers.{L}.attn.compressor.wkv.weight",
                  layer,
                  1,
                  {coff * width, h},
                  2,
                  weight_dtype::bf16,
                  false,
                  weight_part::attn_replicated});
  f(weight_tensor{
      indexer ? "layers.{L}.attn.indexer.compressor.wgate.weight" : "layers.{L}.attn.compressor.wgate.weight",
      layer,
      1,
      {coff * width, h},
      2,
      weight_dtype::bf16,
      false,
      weight_part::attn_replicated});
  f(weight_tensor{indexer ? "layers.{L}.attn.indexer.compressor.norm.weight" : "layers.{L}.attn.compressor.norm.weight",
                  layer,
                  1,
                  {width, 1},
                  1,
                  weight_dtype::bf16,
                  false,
                  weight_part::attn_replicated});
  f(weight_tensor{indexer ? "layers.{L}.attn.indexer.compressor.ape" : "layers.{L}.attn.compressor.ape",
                  layer,
                  1,
                  {ratio, coff * width},
                  2,
                  weight_dtype::f32,
                  false,
                  weight_part::attn_replicated});
}

/// One transformer block (main layer `layer`, or an MTP block with ratio 0 and no hash router).
template <class F>
constexpr void block(const model_config& c, int layer, int ratio, bool hash_router, F& f) {
  const model_arch& a = c.arch;
  const std::int64_t h = a.hidden_size;
  const std::int64_t heads = a.num_attention_heads;
  const std::int64_t hd = c.head_dim;
  f(weight_tensor{
      "layers.{L}.attn_norm.weight", layer, 1, {h, 1}, 1, weight_dtype::bf16, false, weight_part::attn_replicated});
  f(weight_tensor{"layers.{L}.attn.q_norm.weight",
                  layer,
                  1,
                  {a.q_lora_rank, 1},
                  1,
                  weight_dtype::bf16,
                  false,
                  weight_part::attn_replicated});
  f(weight_tensor{
      "layers.{L}.attn.kv_norm.weight", layer, 1, {hd, 1}, 1, weight_dtype::bf16, false, weight_part::attn_replicated});
  f(weight_tensor{
      "layers.{L}.attn.attn_sink", layer, 1, {heads, 1}, 1, weight_dtype::f32, false, weight_part::attn_heads});
  // vLLM: wq_a and wkv fused and replicated (disable_tp), wq_b ColumnParallel over heads, wo_a
  // ColumnParallel over o_groups, wo_b RowParallel (deepseek_v4.py @ 023da1fc, DeepseekV4Attention).
  fp8_linear(a, "layers.{L}.attn.wq_a.weight", "layers.{L}.attn.wq_a.scale", layer, a.q_lora_rank, h,
             weight_part::attn_replicated, f);
  fp8_linear(a, "layers.{L}.attn.wq_b.weight", "layers.{L}.attn.wq_b.scale", layer, heads * hd, a.q_lora_rank,
             weight_part::attn_heads, f);
  fp8_linear(a, "layers.{L}.attn.wkv.weight", "layers.{L}.attn.wkv.scale", layer, hd, h, weight_part::attn_replicated,
             f);
  fp8_linear(a, "layers.{L}.attn.wo_a.weight", "layers.{L}.attn.wo_a.scale", layer,
             std::int64_t{a.o_groups} * a.o_lora_rank, heads * hd / a.o_groups, weight_part::attn_heads, f);
  fp8_linear(a, "layers.{L}.attn.wo_b.weight", "layers.{L}.attn.wo_b.scale", layer, h,
             std::int64_t{a.o_groups} * a.o_lora_rank, weight_part::attn_row, f);
  if (ratio == 4 || ratio == 128) compressor(a, false, layer, ratio, hd, f);
  if (ratio == 4) {  // the lightning indexer: wq_b FP8, weights_proj BF16, its own compressor
    fp8_linear(a, "layers.{L}.attn.indexer.wq_b.weight", "layers.{L}.attn.indexer.wq_b.scale", layer,
               std::int64_t{a.index_n_heads} * c.index_head_dim, a.q_lora_rank, weight_part::attn_replicated, f);
    f(weight_tensor{"layers.{L}.attn.indexer.weights_proj.weight",
                    layer,
                    1,
                    {a.index_n_heads, h},
                    2,
                    weight_dtype::bf16,
                    false,
                    weight_part::attn_replicated});
    compressor(a, true, layer, ratio, c.index_head_dim, f);
  }
  // Hyper-connections: fn [(2 + m) m, m H], base [(2 + m) m], scale [3], F32 (DeepseekV4DecoderLayer).
  const std::int64_t m = a.hc_mult;
  const std::int64_t mix = (2 + m) * m;
  for (const bool attn : {true, false}) {
    f(weight_tensor{attn ? "layers.{L}.hc_attn_fn" : "layers.{L}.hc_ffn_fn",
                    layer,
                    1,
                    {mix, m * h},
                    2,
                    weight_dtype::f32,
                    false,
                    weight_part::layer_replicated});
    f(weight_tensor{attn ? "layers.{L}.hc_attn_base" : "layers.{L}.hc_ffn_base",
                    layer,
                    1,
                    {mix, 1},
                    1,
                    weight_dtype::f32,
                    false,
                    weight_part::layer_replicated});
    f(weight_tensor{attn ? "layers.{L}.hc_attn_scale" : "layers.{L}.hc_ffn_scale",
                    layer,
                    1,
                    {3, 1},
                    1,
                    weight_dtype::f32,
                    false,
                    weight_part::layer_replicated});
  }
  f(weight_tensor{
      "layers.{L}.ffn_norm.weight", layer, 1, {h, 1}, 1, weight_dtype::bf16, false, weight_part::layer_replicated});
  f(weight_tensor{"layers.{L}.ffn.gate.weight",
                  layer,
                  1,
                  {a.n_routed_experts, h},
                  2,
                  weight_dtype::bf16,
                  false,
                  weight_part::layer_replicated});
  if (hash_router)  // tid2eid [vocab, top-k] I64 (the checkpoint's 18,616,320 B for V4-Pro's 3 tables)
    f(weight_tensor{"layers.{L}.ffn.gate.tid2eid",
                    layer,
                    1,
                    {a.vocab_size, a.num_experts_per_tok},
                    2,
                    weight_dtype::i64,
                    false,
                    weight_part::layer_replicated});
  else
    f(weight_tensor{"layers.{L}.ffn.gate.bias",
                    layer,
                    1,
                    {a.n_routed_experts, 1},
                    1,
                    weight_dtype::f32,
                    false,
                    weight_part::layer_replicated});
  if (a.n_shared_experts > 0) {  // one MLP of I x n_shared (DeepseekV4MoE: MergedColumn + RowParallel)
    const std::int64_t si = std::int64_t{a.moe_intermediate_size} * a.n_shared_experts;
    fp8_linear(a, "layers.{L}.ffn.shared_experts.w1.weight", "layers.{L}.ffn.shared_experts.w1.scale", layer, si, h,
               weight_part::shared_expert_col, f);
    fp8_linear(a, "layers.{L}.ffn.shared_experts.w2.weight", "layers.{L}.ffn.shared_experts.w2.scale", layer, h, si,
               weight_part::shared_expert_row, f);
    fp8_linear(a, "layers.{L}.ffn.shared_experts.w3.weight", "layers.{L}.ffn.shared_experts.w3.scale", layer, si, h,
               weight_part::shared_expert_col, f);
  }
  const std::int64_t e = a.n_routed_experts;
  const std::int64_t in = a.moe_intermediate_size;
  constexpr std::array<std::string_view, 3> weights{"layers.{L}.ffn.experts.{E}.w1.weight",
                                                    "layers.{L}.ffn.experts.{E}.w2.weight",
                                                    "layers.{L}.ffn.experts.{E}.w3.weight"};
  constexpr std::array<std::string_view, 3> scales{"layers.{L}.ffn.experts.{E}.w1.scale",
                                                   "layers.{L}.ffn.experts.{E}.w2.scale",
                                                   "layers.{L}.ffn.experts.{E}.w3.scale"};
  for (std::size_t w = 0; w < 3; ++w) {
    const bool down = w == 1;  // w2 [H, I]; w1, w3 [I, H]
    const std::int64_t rows = down ? h : in;
    const std::int64_t cols = down ? in : h;
    const weight_part part = down ? weight_part::routed_expert_row : weight_part::routed_expert_col;
    if (a.experts == expert_storage::fp4) {  // MXFP4: [rows, cols / 2] I8 + [rows, cols / 32] UE8M0
      f(weight_tensor{weights[w], layer, e, {rows, cols / 2}, 2, weight_dtype::i8_fp4, false, part});
      f(weight_tensor{scales[w], layer, e, {rows, cols / 32}, 2, weight_dtype::f8_e8m0, true, part});
    } else {  // FP8 blocks like the dense linears
      f(weight_tensor{weights[w], layer, e, {rows, cols}, 2, weight_dtype::f8_e4m3, false, part});
      const weight_dtype sd = a.scales == block_scale_dtype::ue8m0 ? weight_dtype::f8_e8m0 : weight_dtype::f32;
      f(weight_tensor{
          scales[w],
          layer,
          e,
          {ceil_div<std::int64_t>(rows, a.weight_block_rows), ceil_div<std::int64_t>(cols, a.weight_block_cols)},
          2,
          sd,
          true,
          part});
    }
  }
}

/// hc_head_fn [m, m H], hc_head_base [m], hc_head_scale [1], F32; `mtp` prefixes "mtp.{L}.".
template <class F>
constexpr void hc_head(const model_arch& a, int layer, bool mtp, F& f) {
  const std::int64_t m = a.hc_mult;
  f(weight_tensor{mtp ? "mtp.{L}.hc_head_fn" : "hc_head_fn",
                  layer,
                  1,
                  {m, m * a.hidden_size},
                  2,
                  weight_dtype::f32,
                  false,
                  weight_part::global});
  f(weight_tensor{mtp ? "mtp.{L}.hc_head_base" : "hc_head_base",
                  layer,
                  1,
                  {m, 1},
                  1,
                  weight_dtype::f32,
                  false,
                  weight_part::global});
  f(weight_tensor{mtp ? "mtp.{L}.hc_head_scale" : "hc_head_scale",
                  layer,
                  1,
                  {1, 1},
                  1,
                  weight_dtype::f32,
                  false,
                  weight_part::global});
}
}  // namespace detail

/// Calls `f(const weight_tensor&)` for every parameter tensor of the checkpoint, in order: embed,
/// the main layers 0 .. num_hidden_layers-1 (compressor on ratios 4 and 128, indexer on ratio 4,
/// a hash router on the first num_hash_layers), final norm, head, hc_head, then each MTP block
/// (mtp.N: a ratio-0 block without hash router, plus norm, hc_head, enorm, hnorm, e_proj and
/// h_proj [H, H] FP8). Tensor counts: sum of `count`. MTP layers are layers num_hidden_layers
/// and up; their names read "mtp.N." where the pattern says "layers.{L}." (N = layer -
/// num_hidden_layers). Throws std::invalid_argument naming why if `c.arch` is not known (V4.1,
/// V3.2, a config without weight fields).
template <class F>
constexpr void for_each_weight(const model_config& c, F&& f) {
  detail::require_arch(c);
  validate_arch(c);
  const model_arch& a = c.arch;
  const std::int64_t h = a.hidden_size;
  f(weight_tensor{"embed.weight", -1, 1, {a.vocab_size, h}, 2, weight_dtype::bf16, false, weight_part::embedding});
  for (int l = 0; l < c.num_hidden_layers; ++l)
    detail::block(c, l, c.compress_ratios[static_cast<std::size_t>(l)], l < a.num_hash_layers, f);
  f(weight_tensor{"norm.weight", -1, 1, {h, 1}, 1, weight_dtype::bf16, false, weight_part::global});
  f(weight_tensor{"head.weight", -1, 1, {a.vocab_size, h}, 2, weight_dtype::bf16, false, weight_part::lm_head});
  detail::hc_head(a, -1, false, f);
  for (int l = c.num_hidden_layers; l < c.num_layers(); ++l) {
    detail::block(c, l, 0, false, f);
    f(weight_tensor{"mtp.{L}.norm.weight", l, 1, {h, 1}, 1, weight_dtype::bf16, false, weight_part::mtp_replicated});
    detail::hc_head(a, l, true, f);
    f(weight_tensor{"mtp.{L}.enorm.weight", l, 1, {h, 1}, 1, weight_dtype::bf16, false, weight_part::mtp_replicated});
    f(weight_tensor{"mtp.{L}.hnorm.weight", l, 1, {h, 1}, 1, weight_dtype::bf16, false, weight_part::mtp_replicated});
    detail::fp8_linear(a, "mtp.{L}.e_proj.weight", "mtp.{L}.e_proj.scale", l, h, h, weight_part::mtp_replicated, f);
    detail::fp8_linear(a, "mtp.{L}.h_proj.weight", "mtp.{L}.h_proj.scale", l, h, h, weight_part::mtp_replicated, f);
  }
}

/// Bytes and tensor count of the whole checkpoint (main and MTP layers): the safetensors index's
/// `metadata.total_size` and its number of entries. Errors as `for_each_weight`.
struct checkpoint_totals {
  std::int64_t bytes = 0;
  std::int64_t tensors = 0;
  std::int64_t mtp_bytes = 0;  ///< of which the MTP layers
};

constexpr checkpoint_totals checkpoint_weight_totals(const model_config& c) {
  checkpoint_totals t;
  for_each_weight(c, [&](const weight_tensor& w) {
    t.bytes = checked_add(t.bytes, w.bytes());
    t.tensors += w.count;
    if (w.layer >= c.num_hidden_layers) t.mtp_bytes = checked_add(t.mtp_bytes, w.bytes());
  });
  return t;
}

/// Bytes of every parameter tensor of the checkpoint (`checkpoint_weight_totals(c).bytes`).
constexpr std::int64_t checkpoint_weight_bytes(const model_config& c) { return checkpoint_weight_totals(c).bytes; }

/// The serving engines whose weight split is modelled.
enum class weight_engine : std::uint8_t { vllm, sglang, tokenspeed };

/// A parallel layout as the operator gives it.
struct engine_parallel {
  int tp = 1;  ///< tensor parallel size (--tensor-parallel-size / --tp)
  int dp = 1;  ///< data parallel size (--data-parallel-size / --dp)
  /// Expert parallel size; 1 = off. vLLM: --enable-expert-parallel spans DP x TP, so ep is tp x dp.
  int ep = 1;
  int pp = 1;  ///< pipeline parallel size
  /// SGLang --enable-dp-attention: dp attention replicas inside the tp GPUs (attention TP = tp / dp).
  /// vLLM has no such flag: each DP rank is its own replica (attention TP = tp).
  bool dp_attention = false;
  bool mtp_loaded = false;  ///< the MTP / draft layers are loaded (speculative decoding on)
};

/// The divisors an engine applies to each `weight_part`, and the pipeline split.
struct weight_sharding {
  int attention_tp = 1;  ///< heads / groups split (attn_heads, attn_row)
  int dense_tp = 1;      ///< shared experts split
  int embed_tp = 1;      ///< embedding vocab split
  int head_tp = 1;       ///< lm_head vocab split
  int expert_ranks = 1;  ///< ranks the experts are divided among (EP)
  int moe_tp = 1;        ///< split of each expert's intermediate dim (MoE TP, EP off)
  int pp = 1;            ///< pipeline stages the main layers are divided among
  bool mtp_loaded = false;
  int gpus = 1;  ///< GPUs the layout uses: tp x pp (x dp for vLLM and without DP attention)
};

/// How `engine` splits the weights under `p`. Throws std::invalid_argument naming the flag for a
/// size < 1, an ep that the engine cannot take, or dp_attention with an engine without it.
///
/// vLLM (vllm-project/vllm @ 023da1fc deepseek_v4.py; FusedMoE): attention and shared experts
/// TP over tp (wq_a / wkv / compressors replicated); DP ranks are full replicas; the MoE is split
/// over tp x dp, by experts with --enable-expert-parallel (ep = tp x dp) or else by intermediate
/// dim; embed and lm_head vocab-parallel over tp; PP splits layers (embed on the first, head on
/// the last stage).
/// SGLang (sgl-project/sglang python/sglang/srt/models/deepseek_v4.py, indexer ReplicatedLinear):
/// with --enable-dp-attention attention TP is tp / dp and the embedding is replicated
/// (VocabParallelEmbedding enable_tp = not dp attention); shared experts and lm_head over tp; the
/// MoE by experts over ep (--ep-size) with the intermediate split over tp / ep.
/// tokenspeed: as SGLang (lightseekorg/tokenspeed @ f4d8ec6e: one mapping of world_size = tp).
constexpr weight_sharding weight_sharding_for(weight_engine engine, const engine_parallel& p) {
  require(p.tp >= 1, "--tp must be >= 1", {"tp", p.tp});
  require(p.dp >= 1, "--dp must be >= 1", {"dp", p.dp});
  require(p.ep >= 1, "--ep must be >= 1", {"ep", p.ep});
  require(p.pp >= 1, "--pp must be >= 1", {"pp", p.pp});
  weight_sharding s;
  s.pp = p.pp;
  s.mtp_loaded = p.mtp_loaded;
  if (engine == weight_engine::vllm) {
    require(!p.dp_attention, "vLLM has no --enable-dp-attention: its DP ranks are replicas with their own TP",
            {"dp", p.dp});
    const int moe = checked_mul(p.tp, p.dp);
    require(p.ep == 1 || p.ep == moe,
            "vLLM's --enable-expert-parallel spreads the experts over tp x dp GPUs: --ep must be 1 or tp x dp",
            {"ep", p.ep}, {"tp", p.tp}, {"dp", p.dp});
    s.attention_tp = s.dense_tp = s.embed_tp = s.head_tp = p.tp;
    s.expert_ranks = p.ep;
    s.moe_tp = p.ep == 1 ? moe : 1;
    s.gpus = checked_mul(moe, p.pp);
    return s;
  }
  // SGLang and tokenspeed: dp (attention) lives inside the tp GPUs.
  require(!p.dp_attention || p.tp % p.dp == 0, "--dp must divide --tp with DP attention", {"tp", p.tp}, {"dp", p.dp});
  require(p.tp % p.ep == 0, "--ep must divide --tp (the experts are spread over the tp GPUs)", {"ep", p.ep},
          {"tp", p.tp});
  s.attention_tp = p.dp_attention ? p.tp / p.dp : p.tp;
  s.dense_tp = p.tp;
  s.embed_tp = p.dp_attention ? 1 : p.tp;
  s.head_tp = p.tp;
  s.expert_ranks = p.ep;
  s.moe_tp = p.tp / p.ep;
  s.gpus = checked_mul(p.dp_attention ? p.tp : checked_mul(p.tp, p.dp), p.pp);
  return s;
}

/// The main layers pipeline stage `stage` of `stages` holds, [first, last): vLLM's
/// `get_pp_indices` (vllm/distributed/utils.py): n / pp each, the remainder one more each on the
/// stages before the last, counted back from the second-to-last.
constexpr std::array<int, 2> pp_layer_range(int layers, int stages, int stage) {
  require(stages >= 1 && stage >= 0 && stage < stages, "pipeline stage out of range", {"stage", stage},
          {"stages", stages});
  require(layers >= stages, "--pp must be <= num_hidden_layers (every stage holds a layer)", {"pp", stages},
          {"num_hidden_layers", layers});
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    int n = layers / stages;
    const int rem = layers % stages;
    // stages [stages-1-rem, stages-1) get one more (the last stage holds the head)
    if (rem > 0 && s >= stages - 1 - rem && s < stages - 1) ++n;
    if (s == stage) return {first, first + n};
    first += n;
  }
  return {first, first};
}

/// Bytes of `w` on one rank under `s` (ceil of each split dim: the largest rank).
constexpr std::int64_t rank_tensor_bytes(const weight_tensor& w, const weight_sharding& s) {
  weight_tensor r = w;
  const auto split = [&](int dim, int by) {
    r.shape[static_cast<std::size_t>(dim)] = ceil_div<std::int64_t>(r.shape[static_cast<std::size_t>(dim)], by);
  };
  switch (w.part) {
    case weight_part::embedding: split(0, s.embed_tp); break;
    case weight_part::lm_head: split(0, s.head_tp); break;
    case weight_part::attn_heads: split(0, s.attention_tp); break;
    case weight_part::attn_row: split(1, s.attention_tp); break;
    case weight_part::shared_expert_col: split(0, s.dense_tp); break;
    case weight_part::shared_expert_row: split(1, s.dense_tp); break;
    case weight_part::routed_expert_col:
      r.count = ceil_div<std::int64_t>(r.count, s.expert_ranks);
      split(0, s.moe_tp);
      break;
    case weight_part::routed_expert_row:
      r.count = ceil_div<std::int64_t>(r.count, s.expert_ranks);
      split(1, s.moe_tp);
      break;
    default: break;
  }
  return r.bytes();
}

/// Weight bytes on one GPU of pipeline stage `stage`: its main layers, the embedding on stage 0,
/// final norm and head on the last stage, hc_head everywhere (vLLM declares it on every stage),
/// and the MTP layers on the last stage when `s.mtp_loaded`. Errors as `for_each_weight`.
constexpr std::int64_t rank_weight_bytes(const model_config& c, const weight_sharding& s, int stage = 0) {
  const std::array<int, 2> range = pp_layer_range(c.num_hidden_layers, s.pp, stage);
  const int first = range[0];  // not a structured binding: the lambda below captures them
  const int last = range[1];
  const bool is_first = stage == 0;
  const bool is_last = stage == s.pp - 1;
  std::int64_t total = 0;
  for_each_weight(c, [&](const weight_tensor& w) {
    bool here = false;
    if (w.layer >= c.num_hidden_layers)
      here = s.mtp_loaded && is_last;
    else if (w.layer >= 0)
      here = w.layer >= first && w.layer < last;
    else if (w.part == weight_part::embedding)
      here = is_first;
    else if (w.part == weight_part::lm_head || w.pattern == "norm.weight")
      here = is_last;
    else
      here = true;  // hc_head
    if (here) total = checked_add(total, rank_tensor_bytes(w, s));
  });
  return total;
}

/// The largest `rank_weight_bytes` over the pipeline stages: what the fullest GPU must hold.
constexpr std::int64_t max_rank_weight_bytes(const model_config& c, const weight_sharding& s) {
  std::int64_t most = 0;
  for (int stage = 0; stage < s.pp; ++stage) most = std::max(most, rank_weight_bytes(c, s, stage));
  return most;
}

}  // namespace dsv4::cache
