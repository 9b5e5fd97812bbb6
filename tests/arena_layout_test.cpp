// Tests of arena_layout.hpp: the device arena's offsets, computed on the host.
//
// Golden values are derived by hand from the memory-plan formula (memory_plan.hpp) and the
// page bytes of docs/facts.md (section 3), not by running the code under test.
#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/descriptor.hpp"
#include "dsv4/cache/engines/registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <vector>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace dsv4::cache {
namespace {

constexpr group_id kSwa{group_kind::swa_kv, 0};
constexpr group_id kC4State{group_kind::compressor_state, 4};
constexpr group_id kC4Kv{group_kind::compressed_kv, 4};
constexpr group_id kC128State{group_kind::compressor_state, 128};
constexpr group_id kC128Kv{group_kind::compressed_kv, 128};
constexpr group_id kIdxState{group_kind::indexer_compressor_state, 4};

constexpr plan_options options(std::int64_t context, std::int64_t requests, indexer_format f = indexer_format::fp8) {
  plan_options o;
  o.context_tokens = context;
  o.requests = requests;
  o.indexer = f;
  o.pools = pools_choice::own;  // the arena lays out own pools
  return o;
}

// The whole layout is usable in a constant expression (a 4,096-token Flash plan).
constexpr arena_layout kFlash4k = build_arena_layout(deepseek_v4_flash, options(4096, 1));
static_assert(kFlash4k.num_regions == 168);
static_assert(kFlash4k.payload_bytes == kFlash4k.plan.total_bytes);
static_assert(kFlash4k.total_bytes % kArenaAlignment == 0);

// Flash, L = 4,096, N = 1, s = 1, B = 8,192, vLLM (memory_plan.hpp's formula, by hand): one
// prompt of up to 4,095 tokens is prefilled in one step, so every sliding group holds its
// whole context: per = ring, prompt pages = 1 + floor(8,191 / R), shared = min(cap - per, ..).
//   swa_kv         64 rows, W 128: cap 64,   ring ceil(127/64)+1 = 3, shared 61   -> 65 pages x 37,440 B
//   c4a state       4 rows, W 8:   cap 1024, ring ceil(7/4)+1 = 3,    shared 1021 -> 1,025 pages x 32,768 B
//   c4a kv        256 tokens/page: 4096/256 = 16 + null                            -> 17 pages x (37,440 KV + 8,448 FP8
//   keys) c128a state     8 rows, W 128: cap 512,  ring ceil(127/8)+1 = 17, shared 495  -> 513 pages x 32,768 B c128a
//   kv      256 tokens/page                                                 -> 17 pages x 1,728 B indexer state   4
//   rows, W 8                                                   -> 1,025 pages x 8,192 B
// Layers: swa 44, c4a 21 (2, 4, .., 42), c128a 20 (3, 5, .., 41).
TEST(ArenaLayout, FlashGoldenOffsets) {
  const arena_layout& a = kFlash4k;
  ASSERT_EQ(a.plan.num_groups, 6);
  EXPECT_EQ(a.alignment, 256u);

  // 65 x 37,440 = 2,433,600 = 9,506.25 x 256: padded by 192 to 2,433,792.
  const pool_region swa0 = a.find(kSwa, 0);
  EXPECT_EQ(swa0.offset_bytes, 0u);
  EXPECT_EQ(swa0.bytes, 2'433'600u);
  EXPECT_EQ(swa0.padded_bytes, 2'433'792u);
  EXPECT_EQ(swa0.num_pages, 65);
  EXPECT_EQ(a.find(kSwa, 43).offset_bytes, 43u * 2'433'792u);  // the MTP layer, last of 44

  // c4a state after 44 swa regions: 107,086,848.
  EXPECT_EQ(a.find(kC4State, 2).offset_bytes, 107'086'848u);
  EXPECT_EQ(a.find(kC4State, 2).bytes, 1025u * 32'768u);

  // c4a kv after 21 state regions of 33,587,200 B: 812,418,048. KV pool 17 x 37,440 =
  // 636,480 B (2,486.25 x 256) padded by 192 to 636,672; FP8 keys 17 x 8,448 = 143,616 B.
  const pool_region kv2 = a.find(kC4Kv, 2, 0);
  EXPECT_EQ(kv2.offset_bytes, 812'418'048u);
  EXPECT_EQ(kv2.bytes, 636'480u);
  EXPECT_EQ(kv2.padded_bytes, 636'672u);
  EXPECT_EQ(kv2.format.name, "v4.fp8_ds_mla");
  const pool_region keys6 = a.find(kC4Kv, 6, 1);  // third CSA layer, indexer keys
  EXPECT_EQ(keys6.format.name, "v4.indexer_fp8");
  EXPECT_EQ(keys6.offset_bytes, 812'418'048u + 2u * 780'288u + 636'672u);
  EXPECT_EQ(keys6.offset_bytes, 814'615'296u);
  EXPECT_EQ(keys6.bytes, 143'616u);
  EXPECT_EQ(keys6.row_bytes, 132);

  // c128a state after 21 x 780,288; c128a kv after 20 x 513 x 32,768; its regions are
  // 17 x 1,728 = 29,376 B padded to 29,440; the indexer state after 20 x 29,440.
  EXPECT_EQ(a.find(kC128State, 3).offset_bytes, 828'804'096u);
  EXPECT_EQ(a.find(kC128Kv, 3).offset_bytes, 1'165'003'776u);
  EXPECT_EQ(a.find(kC128Kv, 3).padded_bytes, 29'440u);
  EXPECT_EQ(a.find(kIdxState, 2).offset_bytes, 1'165'592'576u);

  // Payload: the plan's bytes exactly; padding: 44 x 192 + 21 x 192 + 20 x 64 = 13,760.
  EXPECT_EQ(a.payload_bytes, 1'341'911'616u);
  EXPECT_EQ(a.plan.total_bytes, 1'341'911'616u);
  EXPECT_EQ(a.padding_bytes, 13'760u);
  EXPECT_EQ(a.total_bytes, 1'341'925'376u);
}

// The arena's structure, for a set of plans of both models: only properties with a meaning of
// their own (where regions lie, in what order, aligned how), not the plan's fields read back
// through the regions (ArenaLayout.FlashGoldenOffsets and ArenaLayout.SmallFlashArenaByHand check
// the bytes against hand-computed values).
void check_layout(const model_config& c, const arena_layout& a) {
  SCOPED_TRACE(std::string(c.name.view()));
  const memory_plan& p = a.plan;
  ASSERT_GT(a.num_regions, 0);
  int expected_regions = 0;
  for (const group_plan& g : p) expected_regions += g.spec.num_layers * g.spec.num_pools;
  EXPECT_EQ(a.num_regions, expected_regions);

  std::uint64_t next = 0;  // where the next region must start
  int last_group = 0;
  int last_layer = -1;
  int last_pool = -1;
  for (int i = 0; i < a.num_regions; ++i) {
    const pool_region r = a.region(i);
    const group_plan& g = p.groups[static_cast<std::size_t>(r.group)];
    // Arena order: groups in plan order, then layers ascending, then pools in spec order.
    EXPECT_GE(r.group, last_group) << "region " << i;
    if (i > 0 && r.group == last_group) {
      EXPECT_TRUE(r.layer > last_layer || (r.layer == last_layer && r.pool == last_pool + 1)) << "region " << i;
    }
    last_group = r.group;
    last_layer = r.layer;
    last_pool = r.pool;
    // Disjoint and gap-free: each region starts where the previous one's padding ends, at a
    // multiple of the alignment, and its padding is less than one alignment unit.
    EXPECT_EQ(r.offset_bytes, next) << "region " << i;
    EXPECT_EQ(r.offset_bytes % a.alignment, 0u) << "region " << i;
    EXPECT_EQ(r.padded_bytes % a.alignment, 0u) << "region " << i;
    EXPECT_GE(r.padded_bytes, r.bytes) << "region " << i;
    EXPECT_LT(r.padded_bytes - r.bytes, a.alignment) << "region " << i;
    next = r.offset_bytes + r.padded_bytes;
    // Every pool holds the null page and at least one page a writer may use.
    EXPECT_GE(r.num_pages, 2) << "region " << i;
    // The typed page layouts the kernels address pages with (row_format.hpp) give the page stride
    // of the arena (the registry's page rule): two implementations of facts section 2 that must
    // agree. Each refuses a region of another format.
    if (r.format.name == "v4.fp8_ds_mla") {
      EXPECT_EQ(a.fp8_ds_mla_layout(r).page_bytes(), r.page_bytes);
      EXPECT_THROW((void)a.indexer_layout(r), std::invalid_argument);
    } else if (r.format.name == "v4.indexer_fp8" || r.format.name == "v4.indexer_mxfp4") {
      EXPECT_EQ(a.indexer_layout(r).page_bytes(), r.page_bytes);
      EXPECT_EQ(r.format.name == "v4.indexer_fp8", p.options.indexer == indexer_format::fp8);
      EXPECT_THROW((void)a.fp8_ds_mla_layout(r), std::invalid_argument);
    }
    // find() by (group id, model layer, pool) gives back the region of arena index i.
    EXPECT_EQ(a.find(g.spec.id, r.layer, r.pool).offset_bytes, r.offset_bytes) << "region " << i;
  }
  // The regions tile the whole arena, and the padding is at most alignment - 1 per region.
  EXPECT_EQ(next, a.total_bytes);
  EXPECT_LT(a.padding_bytes, static_cast<std::uint64_t>(a.num_regions) * a.alignment);
}

TEST(ArenaLayout, FlashAndProPlansAgreeWithTheLayout) {
  for (const model_config* c : {&deepseek_v4_flash, &deepseek_v4_pro})
    for (const std::int64_t ctx : {1, 1000, 4096, 131'072, 1'048'576})
      for (const std::int64_t n : {1, 7})
        for (const indexer_format f : {indexer_format::fp8, indexer_format::mxfp4})
          for (const std::uint64_t align : {16u, 256u, 4096u}) {
            SCOPED_TRACE(::testing::Message()
                         << "ctx " << ctx << " n " << n << " fmt " << to_string(f) << " align " << align);
            check_layout(*c, build_arena_layout(*c, options(ctx, n, f), align));
          }
}

// Flash, L = 1 token, N = 1, FP8 keys, by hand: every ring and full-history pool needs one page
// (ceil(1 / R) = 1 row-page, ceil(1 / 256) = 1 block) + the null page = 2 pages per pool.
// Per-layer page bytes, rows per page and row bytes from facts sections 2 and 3:
//   v4.swa_kv                        44 layers  37,440 B  64 rows  584 B -> 74,880 B = 292.5 x 256
//   v4.c4a.compressor_state          21 layers  32,768 B   4 rows 8,192 B -> 65,536 B = 256 x 256
//   v4.c4a.compressed_kv   KV        21 layers  37,440 B  64 rows  584 B -> 74,880 B
//                          keys      21 layers   8,448 B  64 rows  132 B -> 16,896 B = 66 x 256
//   v4.c128a.compressor_state        20 layers  32,768 B   8 rows 4,096 B -> 65,536 B
//   v4.c128a.compressed_kv           20 layers   1,728 B   2 rows  584 B ->  3,456 B = 13.5 x 256
//   v4.c4a.indexer_compressor_state  21 layers   8,192 B   4 rows 2,048 B -> 16,384 B = 64 x 256
// Payload 2 x (44 x 37,440 + 21 x 32,768 + 21 x 45,888 + 20 x 32,768 + 20 x 1,728 + 21 x 8,192)
//   = 2 x 4,161,088 = 8,322,176 B.
// Alignment 256: the 74,880 and 3,456 B regions gain 128 B each: (44 + 21 + 20) x 128 = 10,880,
//   total 8,333,056. Alignment 16: every region is a multiple of 16, total = payload.
//   Alignment 4,096: 74,880 -> 77,824 (+2,944), 16,896 -> 20,480 (+3,584), 3,456 -> 4,096 (+640):
//   44 x 2,944 + 21 x (2,944 + 3,584) + 20 x 640 = 279,424, total 8,601,600 = 2,100 x 4,096.
// Offsets at 256: c4a state after 44 x 75,008 = 3,300,352; c4a kv after 21 x 65,536 more =
// 4,676,608 (its keys 75,008 further: 4,751,616); c128a state after 21 x (75,008 + 16,896) more =
// 6,606,592; c128a kv after 20 x 65,536 more = 7,917,312; indexer state after 20 x 3,584 more =
// 7,988,992; the end 21 x 16,384 later = 8,333,056.
TEST(ArenaLayout, SmallFlashArenaByHand) {
  struct pool_facts {
    group_id id;
    int pool;
    int layers;
    std::int64_t page_bytes;
    std::int64_t rows_per_page;
    std::int64_t row_bytes;
  };
  constexpr pool_facts kFacts[] = {
      {kSwa, 0, 44, 37'440, 64, 584},      {kC4State, 0, 21, 32'768, 4, 8'192},   {kC4Kv, 0, 21, 37'440, 64, 584},
      {kC4Kv, 1, 21, 8'448, 64, 132},      {kC128State, 0, 20, 32'768, 8, 4'096}, {kC128Kv, 0, 20, 1'728, 2, 584},
      {kIdxState, 0, 21, 8'192, 4, 2'048},
  };
  for (const auto& [align, total] :
       {std::pair<std::uint64_t, std::uint64_t>{256, 8'333'056}, {16, 8'322'176}, {4096, 8'601'600}}) {
    SCOPED_TRACE(::testing::Message() << "align " << align);
    const arena_layout a = build_arena_layout(deepseek_v4_flash, options(1, 1), align);
    int regions_seen = 0;
    std::uint64_t payload = 0;
    for (const pool_facts& f : kFacts) {
      for (int slot = 0; slot < f.layers; ++slot) {
        const pool_region r = a.region(a.group_index(f.id), slot, f.pool);
        EXPECT_EQ(r.num_pages, 2);
        EXPECT_EQ(r.page_bytes, f.page_bytes);
        EXPECT_EQ(r.rows_per_page, f.rows_per_page);
        EXPECT_EQ(r.row_bytes, f.row_bytes);
        EXPECT_EQ(r.bytes, 2u * static_cast<std::uint64_t>(f.page_bytes));
        payload += 2u * static_cast<std::uint64_t>(f.page_bytes);
        ++regions_seen;
      }
    }
    EXPECT_EQ(regions_seen, 168);  // 44 + 21 + 42 + 20 + 20 + 21
    EXPECT_EQ(a.num_regions, 168);
    EXPECT_EQ(payload, 8'322'176u);
    EXPECT_EQ(a.payload_bytes, 8'322'176u);
    EXPECT_EQ(a.plan.total_bytes, 8'322'176u);
    EXPECT_EQ(a.total_bytes, total);
    EXPECT_EQ(a.padding_bytes, total - 8'322'176u);
  }
  const arena_layout a = build_arena_layout(deepseek_v4_flash, options(1, 1));
  EXPECT_EQ(a.find(kSwa, 1).offset_bytes, 75'008u);
  EXPECT_EQ(a.find(kSwa, 0).padded_bytes, 75'008u);
  EXPECT_EQ(a.find(kC4State, 2).offset_bytes, 3'300'352u);
  EXPECT_EQ(a.find(kC4Kv, 2, 0).offset_bytes, 4'676'608u);
  EXPECT_EQ(a.find(kC4Kv, 2, 1).offset_bytes, 4'751'616u);
  EXPECT_EQ(a.find(kC128State, 3).offset_bytes, 6'606'592u);
  EXPECT_EQ(a.find(kC128Kv, 3).offset_bytes, 7'917'312u);
  EXPECT_EQ(a.find(kC128Kv, 3).padded_bytes, 3'584u);
  EXPECT_EQ(a.find(kIdxState, 2).offset_bytes, 7'988'992u);
  EXPECT_EQ(a.find(kIdxState, 42).offset_bytes + 16'384u, 8'333'056u);  // the last region ends the arena
}

TEST(ArenaLayout, RegionCounts) {
  // Flash: swa 44, c4a state 21, c4a kv 21 x 2, c128a state 20, c128a kv 20, indexer state 21.
  EXPECT_EQ(build_arena_layout(deepseek_v4_flash, options(4096, 1)).num_regions, 44 + 21 + 42 + 20 + 20 + 21);
  // Pro: swa 62, c4a state 30, c4a kv 30 x 2, c128a state 31, c128a kv 31, indexer state 30.
  EXPECT_EQ(build_arena_layout(deepseek_v4_pro, options(4096, 1)).num_regions, 62 + 30 + 60 + 31 + 31 + 30);
}

TEST(ArenaLayout, ProMxfp4Keys) {
  // Pro's first CSA layer is 2; MXFP4 keys: 64 x 68 = 4,352 B per page.
  const arena_layout a = build_arena_layout(deepseek_v4_pro, options(4096, 1, indexer_format::mxfp4));
  const pool_region keys = a.find(kC4Kv, 2, 1);
  EXPECT_EQ(keys.format.name, "v4.indexer_mxfp4");
  EXPECT_EQ(keys.page_bytes, 4352);
  EXPECT_EQ(keys.row_bytes, 68);
  EXPECT_EQ(a.indexer_layout(keys).format.value_bytes, 64);
  EXPECT_EQ(a.indexer_layout(keys).scale_offset(1), 64 * 64 + 4);
  // Pro's HCA layers include 0 and 1; its SWA-only layer is the MTP layer 61.
  EXPECT_EQ(a.find(kC128Kv, 0).layer_slot, 0);
  EXPECT_EQ(a.find(kSwa, 61).layer_slot, 61);
  EXPECT_THROW((void)a.find(kC4Kv, 61), std::invalid_argument);
  EXPECT_THROW((void)a.find(kC4Kv, 3), std::invalid_argument);
}

TEST(ArenaLayout, NullPageIsCounted) {
  // One request of one token: each compressed pool holds 1 page + the null page.
  const arena_layout a = build_arena_layout(deepseek_v4_flash, options(1, 1));
  const pool_region kv = a.find(kC128Kv, 3);
  EXPECT_EQ(kv.num_pages, 2);
  EXPECT_EQ(kv.first_usable_slot(), 2);  // 2 rows per page: slots 0, 1 are the null page
  EXPECT_EQ(kv.num_slots(), 4);
}

TEST(ArenaLayout, Errors) {
  const memory_plan p = build_memory_plan(deepseek_v4_flash, options(4096, 1));
  for (const std::uint64_t bad : {0u, 1u, 8u, 48u, 257u})
    EXPECT_THROW((void)build_arena_layout(deepseek_v4_flash, p, bad), std::invalid_argument) << bad;
  // A plan of another model: a head_dim of 576 gives 640 B rows, not the plan's 584.
  model_config other = deepseek_v4_flash;
  other.head_dim = 576;
  EXPECT_THROW((void)build_arena_layout(other, p), std::invalid_argument);
  model_config other_idx = deepseek_v4_flash;
  other_idx.index_head_dim = 256;
  EXPECT_THROW((void)build_arena_layout(other_idx, p), std::invalid_argument);
  // A plan whose byte count was tampered with.
  memory_plan tampered = p;
  tampered.total_bytes += 1;
  EXPECT_THROW((void)build_arena_layout(deepseek_v4_flash, tampered), std::invalid_argument);
  memory_plan empty;
  EXPECT_THROW((void)build_arena_layout(deepseek_v4_flash, empty), std::invalid_argument);

  const arena_layout a = build_arena_layout(deepseek_v4_flash, p);
  EXPECT_THROW((void)a.region(-1), std::invalid_argument);
  EXPECT_THROW((void)a.region(a.num_regions), std::invalid_argument);
  EXPECT_THROW((void)a.region(0, 44, 0), std::invalid_argument);
  EXPECT_THROW((void)a.region(2, 0, 2), std::invalid_argument);
  EXPECT_THROW((void)a.region(6, 0, 0), std::invalid_argument);
  EXPECT_THROW((void)a.find(kSwa, 44), std::invalid_argument);
}

TEST(ArenaLayout, OverflowIsAnError) {
  // Pages that each fit in 64 bits but whose padded sum does not.
  memory_plan p = build_memory_plan(deepseek_v4_flash, options(4096, 1));
  p.groups[0].pages_per_layer = std::int64_t{1} << 48;  // x 37,440 B x 44 layers overflows
  p.groups[0].pool_pages[0] = std::int64_t{1} << 48;
  p.groups[0].bytes = 0;
  try {
    (void)build_arena_layout(deepseek_v4_flash, p);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("overflows 64 bits"), std::string::npos) << e.what();
  }
}

// ---- vLLM's shared block pool (issue 45) ----

/// Options planned for `engine` as the planner and `describe --engine` do: its policy and pool
/// rules, the engine's pool structure.
plan_options engine_options(const engine_spec& e, std::int64_t context, std::int64_t requests) {
  plan_options o;
  o.context_tokens = context;
  o.requests = requests;
  o.policy = e.policy;
  o.vllm_pools = e.vllm;
  o.sglang_pools = e.sglang;
  o.tokenspeed_pools = e.tokenspeed;
  o.pools = pools_choice::engine;
  return o;
}

// V4-Flash in vLLM's block pool, FP8 keys, by hand from vLLM's packing (docs/engines/vllm.md):
// pages padded to 576 B multiples; the full-history group holds, in registration order (index
// keys, then compressed KV, per layer), 21 x 8,640 B index-key pages, 21 x 37,440 B CSA KV pages
// and 20 x 1,728 B HCA KV pages: 181,440 + 786,240 + 34,560 = 1,002,240 B, the widest group, so
// the block. SWA layers alternate between two groups (repeats j, j + 2): layer 0 then layer 2 in
// the first, layer 1 in the second, each from byte 0 of a block.
TEST(ArenaLayout, VllmFlashBlockPoolByHand) {
  const engine_spec& vllm = *find_engine("vllm");
  const memory_plan p = build_memory_plan(deepseek_v4_flash, engine_options(vllm, 1'048'576, 1));
  const arena_layout a = build_arena_layout(deepseek_v4_flash, p);
  ASSERT_TRUE(a.engine_placed());
  EXPECT_EQ(p.pools.bytes_per_block, 1'002'240);
  EXPECT_EQ(a.total_bytes, static_cast<std::uint64_t>(p.num_blocks) * 1'002'240u);
  EXPECT_EQ(a.total_bytes, p.total_bytes);
  EXPECT_EQ(a.payload_bytes, p.total_bytes);
  EXPECT_EQ(a.padding_bytes, 0u);
  EXPECT_EQ(a.num_regions, 44 + 21 + 42 + 20 + 20 + 21);

  const pool_region swa0 = a.find(kSwa, 0);
  EXPECT_EQ(swa0.offset_bytes, 0u);
  EXPECT_EQ(swa0.page_stride, 1'002'240);
  EXPECT_EQ(swa0.page_bytes, 37'440);
  EXPECT_EQ(swa0.num_pages, p.num_blocks);
  EXPECT_EQ(swa0.rows_per_page, 64);
  EXPECT_EQ(a.find(kSwa, 2).offset_bytes, 37'440u);
  EXPECT_EQ(a.find(kSwa, 1).offset_bytes, 0u);
  EXPECT_NE(a.find(kSwa, 1).engine_group, swa0.engine_group);
  // Page 5 (block 5) of SWA layer 2: 5 blocks in, then one page.
  EXPECT_EQ(a.find(kSwa, 2).page_offset(5), 5u * 1'002'240u + 37'440u);

  const pool_region keys2 = a.find(kC4Kv, 2, 1);
  EXPECT_EQ(keys2.offset_bytes, 0u);
  EXPECT_EQ(keys2.page_bytes, 8'640);  // 8,448 padded to 15 x 576
  EXPECT_EQ(a.find(kC4Kv, 4, 1).offset_bytes, 8'640u);
  EXPECT_EQ(a.find(kC4Kv, 2, 0).offset_bytes, 181'440u);
  EXPECT_EQ(a.find(kC4Kv, 4, 0).offset_bytes, 181'440u + 37'440u);
  EXPECT_EQ(a.find(kC128Kv, 3).offset_bytes, 967'680u);
  EXPECT_EQ(a.find(kC128Kv, 3).page_bytes, 1'728);
  EXPECT_EQ(a.find(kC128Kv, 41).offset_bytes, 967'680u + 19u * 1'728u);
  EXPECT_EQ(a.find(kC128Kv, 41).offset_bytes + 1'728u, 1'002'240u);  // the widest group fills the block
  // A compressor state page: 32,768 B padded to 57 x 576 = 32,832.
  EXPECT_EQ(a.find(kC4State, 2).page_bytes, 32'832);
  EXPECT_EQ(a.fp8_ds_mla_layout(a.find(kC4Kv, 2, 0)).page_bytes(), 37'440);
}

/// Every region of the engine arena of `c` for `e` against the layout contract's placement
/// (canonical /2 JSON, parsed): page p of tensor (group, pool) in layer `layers[k]` at
/// p x block_bytes + offset + k x page_bytes; every region is one of the contract's tensors.
void check_against_contract(const model_config& c, const engine_spec& e, const plan_options& o) {
  SCOPED_TRACE(std::string(c.name.view()) + " " + std::string(e.name));
  const memory_plan p = build_memory_plan(c, o);
  const arena_layout a = build_arena_layout(c, p);
  ASSERT_TRUE(a.engine_placed());
  const nlohmann::json j = nlohmann::json::parse(canonical_layout(describe_layout(c, o, e)).view());
  ASSERT_EQ(j.at("schema"), "dsv4-cache-layout/2");
  const nlohmann::json& eng = j.at("engine");
  const auto block = eng.at("block_bytes").get<std::int64_t>();
  EXPECT_EQ(a.total_bytes, static_cast<std::uint64_t>(p.num_blocks) * static_cast<std::uint64_t>(block));
  EXPECT_EQ(a.total_bytes, p.total_bytes);
  std::set<std::tuple<int, int, int>> seen;  // (group, layer, pool)
  for (const nlohmann::json& g : eng.at("groups")) {
    for (const nlohmann::json& t : g.at("tensors")) {
      const group_id id = parse_group_id(t.at("group").get<std::string>());
      const int pool = t.at("pool").get<int>();
      const auto offset = t.at("offset").get<std::uint64_t>();
      const auto page = t.at("page_bytes").get<std::int64_t>();
      std::uint64_t k = 0;
      for (const nlohmann::json& layer : t.at("layers")) {
        const pool_region r = a.find(id, layer.get<int>(), pool);
        EXPECT_EQ(r.offset_bytes, offset + k * static_cast<std::uint64_t>(page)) << t.at("group") << " " << layer;
        EXPECT_EQ(r.page_bytes, page);
        EXPECT_EQ(r.page_stride, block);
        EXPECT_EQ(r.rows_per_page, t.at("rows_per_page").get<std::int64_t>());
        EXPECT_EQ(r.num_pages, p.num_blocks);
        EXPECT_LE(r.end_offset(), a.total_bytes);
        EXPECT_TRUE(seen.insert({r.group, r.layer, r.pool}).second) << "a tensor twice in the contract";
        ++k;
      }
    }
  }
  EXPECT_EQ(static_cast<int>(seen.size()), a.num_regions);
}

TEST(ArenaLayout, VllmOffsetsEqualTheContract) {
  for (const char* name : {"vllm", "vllm@0.33.0"}) {
    const engine_spec& e = *find_engine(name);
    for (const model_config* c : {&deepseek_v4_flash, &deepseek_v4_pro, &deepseek_v4_1_flash, &deepseek_v3_2})
      for (const std::int64_t ctx : {4096, 1'048'576}) {
        plan_options o = engine_options(e, ctx > c->max_position_embeddings ? c->max_position_embeddings : ctx, 3);
        check_against_contract(*c, e, o);
        o.indexer = indexer_format::mxfp4;
        if (c->family == model_family::v4) check_against_contract(*c, e, o);
      }
  }
  // V4.1 in V4 rows (vLLM on Hopper), and without the MTP layer.
  const engine_spec& e = *find_engine("vllm");
  plan_options o = engine_options(e, 65'536, 2);
  o.formats.set = format_set::v4;
  o.cache_mtp = false;
  check_against_contract(deepseek_v4_1_flash, e, o);
}

// tokenspeed's parent arena, V4-Flash without the MTP layer, by hand from tokenspeed's `pack`
// (docs/engines/tokenspeed.md): plane "unit.<s>" holds each group's layer-slot-s field, K pages
// of it per parent; a plane is max over its groups of K x field bytes, rounded up to lcm(256,
// K x 4 for fp32 states, K x 576 for KV fields). Fields: SWA 37,440 (43 layers), CSA KV 37,440
// (21), index keys 8,448 (21), CSA state 32,768 (21), indexer state 8,192 (21), HCA KV 1,728
// (20), HCA state 32,768 (20).
//   f4d8ec6e (keys beside the CSA KV, K 1, on plane 21 + slot): K swa 1, c4kv 1, c4st 2, idxst 8,
//     c128kv 32, c128st 2. Planes 0-19: max(37,440, 65,536, 65,536, 55,296, 65,536) = 65,536 at
//     lcm(256, 576, 32 x 576) = 18,432: 73,728; plane 20 (no HCA): at 2,304: 66,816; planes
//     21-42 (SWA, keys): 37,440 at 2,304: 39,168. Parent 20 x 73,728 + 66,816 + 22 x 39,168 =
//     2,403,072.
//   0.1.1 (keys a group of their own, on plane slot): K c4kv 2, keys 8, the rest as above. Planes
//     0-19: 2 x 37,440 = 74,880 at 18,432: 92,160; plane 20: at lcm(256, 2 x 576) = 2,304: 76,032;
//     21-42: 39,168. Parent 2,780,928.
// Arena (tokenspeed's `field_page_byte_offset`): planes in string order of their ids, each
// N x plane bytes (N parents, the null one included); page p of a field at
// plane_offset + plane - plane / K + p x plane / K.
struct ts_hand {
  const char* engine;
  std::int64_t parent;
  std::int64_t plane_low, plane_20;  // planes 0-19 and 20; planes 21-42 are 39,168
  std::int64_t k_c4kv, k_keys;
  bool keys_own_plane_slot;  // 0.1.1: keys on plane slot; f4d8ec6e: on plane 21 + slot
};

void check_tokenspeed_by_hand(const ts_hand& h) {
  SCOPED_TRACE(h.engine);
  const engine_spec& e = *find_engine(h.engine);
  plan_options o = engine_options(e, 65'536, 4);
  o.cache_mtp = false;
  const memory_plan p = build_memory_plan(deepseek_v4_flash, o);
  const arena_layout a = build_arena_layout(deepseek_v4_flash, p);
  ASSERT_TRUE(a.engine_placed());
  EXPECT_EQ(p.pools.bytes_per_block, h.parent);
  EXPECT_EQ(a.total_bytes, p.total_bytes);
  EXPECT_EQ(a.total_bytes, static_cast<std::uint64_t>(p.num_blocks) * static_cast<std::uint64_t>(h.parent));
  ASSERT_GE(p.arena_units, 2);
  ASSERT_LE(p.arena_units, p.num_blocks);
  const auto n = static_cast<std::uint64_t>(p.arena_units);
  const auto plane_bytes = [&](int s) -> std::uint64_t {
    return static_cast<std::uint64_t>(s < 20 ? h.plane_low : s == 20 ? h.plane_20 : 39'168);
  };
  // Plane offsets: ids sorted as strings.
  std::vector<std::string> ids;
  for (int s = 0; s < 43; ++s) ids.push_back("unit." + std::to_string(s));
  std::sort(ids.begin(), ids.end());
  std::map<int, std::uint64_t> plane_offset;
  std::uint64_t at = 0;
  for (const std::string& id : ids) {
    const int s = std::stoi(id.substr(5));
    plane_offset[s] = at;
    at += n * plane_bytes(s);
  }
  // "unit.2" follows unit.0, unit.1 and unit.10 .. unit.19: 12 planes of planes 0-19's bytes.
  EXPECT_EQ(plane_offset.at(2), n * 12u * static_cast<std::uint64_t>(h.plane_low));
  EXPECT_EQ(a.find(kSwa, 0).offset_bytes, 0u);  // K = 1: the null page starts plane unit.0
  for (int i = 0; i < a.num_regions; ++i) {
    const pool_region r = a.region(i);
    const group_id id = p.groups[static_cast<std::size_t>(r.group)].spec.id;
    std::int64_t k = 0;
    int plane = r.layer_slot;
    if (id == kSwa) k = 1;
    if (id == kC4Kv) k = r.pool == 0 ? h.k_c4kv : h.k_keys;
    if (id == kC4Kv && r.pool == 1 && !h.keys_own_plane_slot) plane = 21 + r.layer_slot;
    if (id == kC4State || id == kC128State) k = 2;
    if (id == kIdxState) k = 8;
    if (id == kC128Kv) k = 32;
    ASSERT_GT(k, 0) << "region " << i;
    const std::uint64_t stride = plane_bytes(plane) / static_cast<std::uint64_t>(k);
    EXPECT_EQ(r.offset_bytes, plane_offset.at(plane) + plane_bytes(plane) - stride) << "region " << i;
    EXPECT_EQ(static_cast<std::uint64_t>(r.page_stride), stride) << "region " << i;
    EXPECT_EQ(r.num_pages, 1 + (p.arena_units - 1) * k) << "region " << i;
    EXPECT_LE(r.end_offset(), n * static_cast<std::uint64_t>(h.parent)) << "region " << i;
  }
}

TEST(ArenaLayout, TokenspeedParentArenaByHand) {
  check_tokenspeed_by_hand({"tokenspeed@f4d8ec6e", 2'403'072, 73'728, 66'816, 1, 1, false});
  check_tokenspeed_by_hand({"tokenspeed@0.1.1", 2'780'928, 92'160, 76'032, 2, 8, true});
}

/// Every region of tokenspeed's arena of `c` against the layout contract's record of its parent
/// (canonical /2 JSON, parsed): with N parents (plan.arena_units), planes in the listed order,
/// each N x bytes; the k-th layer of a tensor of a group of packing K on plane planes[k], page p
/// at plane_offset + bytes - bytes / K + p x bytes / K.
void check_tokenspeed_against_contract(const model_config& c, const engine_spec& e, const plan_options& o) {
  SCOPED_TRACE(std::string(c.name.view()) + " " + engine_label(e));
  const memory_plan p = build_memory_plan(c, o);
  const arena_layout a = build_arena_layout(c, p);
  ASSERT_TRUE(a.engine_placed());
  const nlohmann::json j = nlohmann::json::parse(canonical_layout(describe_layout(c, o, e)).view());
  ASSERT_EQ(j.at("schema"), "dsv4-cache-layout/2");
  const nlohmann::json& eng = j.at("engine");
  EXPECT_EQ(eng.at("structure"), "parent_arena");
  const auto n = static_cast<std::uint64_t>(p.arena_units);
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> planes;  // id -> (offset, bytes)
  std::uint64_t at = 0;
  std::uint64_t sum = 0;
  for (const nlohmann::json& q : eng.at("planes")) {
    const auto bytes = q.at("bytes").get<std::uint64_t>();
    planes[q.at("id").get<std::string>()] = {at, bytes};
    at += n * bytes;
    sum += bytes;
  }
  EXPECT_LE(sum, eng.at("block_bytes").get<std::uint64_t>());
  EXPECT_EQ(a.total_bytes, p.total_bytes);
  EXPECT_LE(at, a.total_bytes);  // the planes of tokenspeed's parents fit the plan's bytes
  std::set<std::tuple<int, int, int>> seen;
  for (const nlohmann::json& g : eng.at("groups")) {
    const auto k = g.at("packing").get<std::uint64_t>();
    for (const nlohmann::json& t : g.at("tensors")) {
      const group_id id = parse_group_id(t.at("group").get<std::string>());
      const int pool = t.at("pool").get<int>();
      const nlohmann::json& layers = t.at("layers");
      const nlohmann::json& on = t.at("planes");
      ASSERT_EQ(layers.size(), on.size());
      for (std::size_t li = 0; li < layers.size(); ++li) {
        const pool_region r = a.find(id, layers[li].get<int>(), pool);
        const auto& [offset, bytes] = planes.at("unit." + std::to_string(on[li].get<int>()));
        EXPECT_EQ(r.offset_bytes, offset + bytes - bytes / k) << t.at("group") << " layer " << layers[li];
        EXPECT_EQ(static_cast<std::uint64_t>(r.page_stride), bytes / k);
        EXPECT_EQ(r.page_bytes, t.at("page_bytes").get<std::int64_t>());
        EXPECT_EQ(static_cast<std::uint64_t>(r.num_pages), 1 + (n - 1) * k);
        EXPECT_TRUE(seen.insert({r.group, r.layer, r.pool}).second) << "a tensor twice in the contract";
      }
    }
  }
  EXPECT_EQ(static_cast<int>(seen.size()), a.num_regions);
}

TEST(ArenaLayout, TokenspeedOffsetsEqualTheContract) {
  for (const char* name : {"tokenspeed", "tokenspeed@f4d8ec6e", "tokenspeed-default"}) {
    const engine_spec& e = *find_engine(name);
    for (const model_config* c : {&deepseek_v4_flash, &deepseek_v4_pro})
      for (const bool mtp : {false, true}) {
        plan_options o = engine_options(e, 131'072, 8);
        o.cache_mtp = mtp;
        check_tokenspeed_against_contract(*c, e, o);
        o.indexer = indexer_format::mxfp4;
        check_tokenspeed_against_contract(*c, e, o);
      }
  }
}

TEST(ArenaLayout, UnplacedStructuresAreRefused) {
  for (const char* name : {"sglang"}) {
    const engine_spec& e = *find_engine(name);
    const memory_plan p = build_memory_plan(deepseek_v4_flash, engine_options(e, 65'536, 1));
    try {
      (void)build_arena_layout(deepseek_v4_flash, p);
      ADD_FAILURE() << name << ": no exception";
    } catch (const std::invalid_argument& ex) {
      EXPECT_NE(std::string(ex.what()).find("pools_choice::own"), std::string::npos) << ex.what();
    }
  }
}

}  // namespace
}  // namespace dsv4::cache
