// Compile-time checks: the DeepSeek V4 Flash and Pro layouts, proven with static_assert only.
// This translation unit is built as part of the test tree; if any check fails, the build does.
// Expected values come from docs/facts.md (sections 2-3) and hand sums in the comments.
#include "dsv4/cache.hpp"
#include "dsv4/cache/weights.hpp"

namespace {
using namespace dsv4::cache;

// ---- Row formats (facts section 2) ----
static_assert(swa_token_stride(512, 64) == 576);  // 448 e4m3 + 64 x 2 bf16
static_assert(swa_scale_dim(512, 64) == 8);       // 448 / 64 ue8m0 + 1 pad
static_assert(swa_row_bytes(512, 64) == 584);
static_assert(indexer_fp8_row_bytes(128) == 132);   // 128 e4m3 + 4 fp32
static_assert(indexer_mxfp4_row_bytes(128) == 68);  // 64 packed e2m1 + 4 e8m0
static_assert(indexer_mxfp4_layout_from_row_bytes(68) == indexer_mxfp4_layout{128, 64, 4});
static_assert(indexer_fp8_layout_from_row_bytes(132) == indexer_fp8_layout{128, 4});
constexpr fp8_ds_mla_page_layout kPage64 = make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), 64);
static_assert(kPage64.page_bytes() == 37'440);  // 64 x 584 = 37,376 -> 65 x 576
static_assert(kPage64.data_offset(1) == 576);
static_assert(kPage64.scale_offset(1) == 36'872);  // 64 x 576 + 8, not 584
static_assert(make_fp8_ds_mla_page_layout(make_fp8_ds_mla_format(512, 64), 2).page_bytes() == 1'728);
static_assert(compressor_state_row_bytes(4, 512) == 8'192);
static_assert(compressor_state_row_bytes(128, 512) == 4'096);
static_assert(compressor_state_row_bytes(4, 128) == 2'048);

// ---- Schedules (facts section 1) ----
constexpr layer_schedule kFlash = build_layer_schedule(deepseek_v4_flash);
static_assert(kFlash.num_layers == 44);
static_assert(kFlash.count(attention_kind::swa, false) == 2 && kFlash.count(attention_kind::csa, false) == 21 &&
              kFlash.count(attention_kind::hca, false) == 20);
static_assert(kFlash[43].mtp && kFlash[43].kind == attention_kind::swa);
constexpr layer_schedule kPro = build_layer_schedule(deepseek_v4_pro);
static_assert(kPro.num_layers == 62);
static_assert(kPro.count(attention_kind::csa, false) == 30 && kPro.count(attention_kind::hca, false) == 31 &&
              kPro.count(attention_kind::swa, false) == 0);
static_assert(kPro[61].mtp && kPro[61].kind == attention_kind::swa);

// ---- Group specs (facts section 3), seed order ----
constexpr group_spec_list kFlashGroups = build_cache_specs(deepseek_v4_flash, indexer_format::mxfp4);
static_assert(kFlashGroups.num_groups == 6);
static_assert(kFlashGroups[0].id == parse_group_id("v4.swa_kv") && kFlashGroups[0].page_bytes() == 37'440 &&
              kFlashGroups[0].num_layers == 44);
static_assert(kFlashGroups[1].id == parse_group_id("v4.c4a.compressor_state") &&
              kFlashGroups[1].page_bytes() == 32'768);
static_assert(kFlashGroups[2].id == parse_group_id("v4.c4a.compressed_kv") &&
              kFlashGroups[2].page_bytes() == 37'440 + 4'352 && kFlashGroups[2].rows_per_page == 64 &&
              kFlashGroups[2].page_size_tokens() == 256 && kFlashGroups[2].num_layers == 21);
static_assert(kFlashGroups[3].id == parse_group_id("v4.c128a.compressor_state") &&
              kFlashGroups[3].page_bytes() == 32'768 && kFlashGroups[3].sliding_window_tokens == 128);
static_assert(kFlashGroups[4].id == parse_group_id("v4.c128a.compressed_kv") && kFlashGroups[4].page_bytes() == 1'728 &&
              kFlashGroups[4].rows_per_page == 2 && kFlashGroups[4].page_size_tokens() == 256);
static_assert(kFlashGroups[5].id == parse_group_id("v4.c4a.indexer_compressor_state") &&
              kFlashGroups[5].page_bytes() == 8'192 && kFlashGroups[5].sliding_window_tokens == 8);
constexpr group_spec_list kProGroups = build_cache_specs(deepseek_v4_pro, indexer_format::fp8);
static_assert(kProGroups.num_groups == 6 && kProGroups[2].page_bytes() == 37'440 + 8'448 &&
              kProGroups[2].num_layers == 30 && kProGroups[4].num_layers == 31 && kProGroups[0].num_layers == 62);

// ---- DeepSeek V4.1-Flash (layout-variants 1.3, 1.10): owners 2, 8, 14, 20 keep the global caches ----
constexpr layer_schedule kV41 = build_layer_schedule(deepseek_v4_1_flash);
static_assert(kV41.num_layers == 43 && kV41.count(attention_kind::csa2, false) == 18 &&
              kV41.count(attention_kind::csa1, false) == 20 && kV41.count(attention_kind::swa) == 5);
static_assert(kV41[13].kv_owner == 8 && kV41[13].role == layer_role::reuse && kV41[36].role == layer_role::reindex &&
              kV41[42].role == layer_role::draft);
constexpr group_spec_list kV41Groups = build_cache_specs(deepseek_v4_1_flash);
static_assert(kV41Groups.num_groups == 4);
static_assert(kV41Groups[0].id == parse_group_id("v4.1.swa") && kV41Groups[0].page_bytes() == 64 * 528 &&
              kV41Groups[0].num_layers == 43);
static_assert(kV41Groups[1].id == parse_group_id("v4.1.global_r2") && kV41Groups[1].num_layers == 3 &&
              kV41Groups[1].page_bytes() == 64 * 288 + 64 * 68 && kV41Groups[1].page_size_tokens() == 128);
static_assert(kV41Groups[2].id == parse_group_id("v4.1.global_r1") && kV41Groups[2].num_layers == 1 &&
              kV41Groups[2].page_size_tokens() == 64);
static_assert(kV41Groups[3].id == parse_group_id("v4.1.compressor_state_r2") && kV41Groups[3].page_bytes() == 8'192 &&
              kV41Groups[3].sliding_window_tokens == 2);

// ---- A plan total (facts section 3 model, worked by hand for Flash, L = 2^20, N = 1, FP8 indexer) ----
// swa_kv:        37,440 x 44 x (3 + 128 + 1)    =   217,451,520
// c4a state:     32,768 x 21 x (3 + 2048 + 1)   = 1,412,038,656
// c4a kv:        45,888 x 21 x (4096 + 0 + 1)   = 3,948,065,856
// c128a state:   32,768 x 20 x (17 + 1024 + 1)  =   682,885,120
// c128a kv:       1,728 x 20 x (4096 + 0 + 1)   =   141,592,320
// indexer state:  8,192 x 21 x (3 + 2048 + 1)   =   353,009,664
//                                          sum  = 6,755,043,136  (own pools: one pool per group)
constexpr memory_plan kFlashPlan = build_memory_plan(deepseek_v4_flash, {.pools = pools_choice::own});
static_assert(kFlashPlan.total_bytes == 6'755'043'136ULL);
static_assert(kFlashPlan.groups[3].pages_per_request == 17);  // ceil((128 + 1 - 2) / 8) + 1

// ---- vLLM's shared block pool (engines/vllm/engine.hpp), the same plan, worked by hand ----
// bytes_per_block = the full-history group: 21 x 37,440 + 20 x 1,728 + 21 x 8,640 = 1,002,240
// one request's startup charge: 4,096 + 2 x (ceil(8,319 / 64) + 1) + (ceil(8,199 / 4) + 1)
//                               + (ceil(8,319 / 8) + 1) = 4,096 + 262 + 2,051 + 1,041 = 7,450 blocks
// plan = 7,451 blocks (the null block too) x 1,002,240 = 7,467,690,240 B
constexpr memory_plan kFlashVllm = build_memory_plan(deepseek_v4_flash);
static_assert(kFlashVllm.pools.bytes_per_block == 21 * 37'440 + 20 * 1'728 + 21 * 8'640);
static_assert(kFlashVllm.startup_blocks == 4'096 + 2 * 131 + 2'051 + 1'041 + 1);
static_assert(kFlashVllm.total_bytes == 7'451ULL * 1'002'240);

// ---- tokenspeed's parent arena (engines/tokenspeed/engine.hpp), the same request, worked by hand ----
// The pin (tokenspeed@f4d8ec6e): parent = 2,403,072 B (tokenspeed_engine_test: plane by plane) +
// the MTP layer's SWA plane (39,168 B) = 2,442,240; the request's pages bind 131 (SWA, K = 1) +
// 2,051 / 2 -> 1,026 (CSA states) + 2,051 / 8 -> 257 (indexer states) + 1,041 / 2 -> 521 (HCA
// states) + 4,096 (CSA KV, K = 1) + 4,096 / 32 = 128 (HCA KV) = 6,159 parents, + the null parent.
constexpr plan_options tokenspeed_options(const tokenspeed_pool_rules& rules) {
  plan_options o;
  o.policy = tokenspeed_policy;
  o.tokenspeed_pools = rules;
  return o;
}
constexpr memory_plan kFlashTokenspeed =
    build_memory_plan(deepseek_v4_flash, tokenspeed_options(tokenspeed_rules_f4d8ec6e));
static_assert(kFlashTokenspeed.pools.structure == &tokenspeed_parent_arena);
static_assert(kFlashTokenspeed.pools.bytes_per_block == 2'403'072 + 39'168);
static_assert(kFlashTokenspeed.planned_blocks == 131 + 1'026 + 257 + 521 + 4'096 + 128 + 1);
static_assert(kFlashTokenspeed.total_bytes == 6'160ULL * 2'442'240);
// tokenspeed 0.1.1 (the default): parent = 2,780,928 B (20 x 92,160 + 76,032 + 22 x 39,168,
// tokenspeed_engine_test Release011PackingAndParentBytesByHand) + 39,168 = 2,820,096; the CSA KV
// (K = 2) binds 4,096 / 2 = 2,048 parents and the index keys, a group of their own (K = 8),
// 4,096 / 8 = 512.
constexpr memory_plan kFlashTokenspeed011 =
    build_memory_plan(deepseek_v4_flash, tokenspeed_options(tokenspeed_rules_0_1_1));
static_assert(kFlashTokenspeed011.pools.num_groups == 7);
static_assert(kFlashTokenspeed011.pools.bytes_per_block == 20 * 92'160 + 76'032 + 22 * 39'168 + 39'168);
static_assert(kFlashTokenspeed011.planned_blocks == 131 + 1'026 + 257 + 521 + 2'048 + 512 + 128 + 1);
// ---- the checkpoint's weights (weights.hpp), at compile time: the published index totals ----
static_assert(checkpoint_weight_bytes(deepseek_v4_flash) == 159'609'485'896);
static_assert(checkpoint_weight_totals(deepseek_v4_pro).bytes == 864'704'792'696);
static_assert(checkpoint_weight_totals(deepseek_v4_pro).tensors == 145'116);
}  // namespace
