// The host slot calls of host_codec.hpp (`host_insert_rows`, `host_gather_rows`): every
// registered format, on 1 to 8 threads, against the per-row scalar codec placed by slot
// (`quantize_row` / `dequantize_row` at page = slot / rows_per_page, row = slot % rows_per_page),
// with padding slots, and the errors, which leave the pool untouched. Then the engine's way
// (issue 45): emulated lanes writing rows through vLLM block tables into a host arena laid out
// as vLLM's block pool, against golden pages placed at the layout contract's offsets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/block_table.hpp"
#include "dsv4/cache/descriptor.hpp"
#include "dsv4/cache/engines/registry.hpp"
#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/cache/host_block_table.hpp"
#include "dsv4/cache/host_codec.hpp"

namespace dsv4::cache {
namespace {

constexpr std::int64_t kRowsPerPage = 16;
constexpr std::int64_t kPages = 40;  // page 0 the null page: 624 writable slots

template <row_format F>
format_layout slot_test_layout() {
  if constexpr (std::is_same_v<F, formats::fp32_state>) {
    return bind_state_row_bytes(1024);
  } else {
    return F::layout;
  }
}

/// Activation-like rows (normal samples at 2^(k % 20 - 10), some zeros): the blocks the fast
/// kernels take and the ones they leave to the general path.
template <class In>
std::vector<In> activation_rows(std::int64_t rows, std::int64_t values) {
  std::vector<In> v(static_cast<std::size_t>(rows * values));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto row = static_cast<int>(i / static_cast<std::size_t>(values));
    const float x = rng() % 32 == 0 ? 0.0f : normal(rng) * exp2i(row % 20 - 10);
    if constexpr (std::is_same_v<In, float>) {
      v[i] = x;
    } else {
      v[i] = float_to_bf16(x);
    }
  }
  return v;
}

/// `tokens` slots: distinct writable slots in random order, every 7th token padding (-1).
std::vector<std::int64_t> random_slots(std::int64_t tokens, std::uint32_t seed) {
  std::vector<std::int64_t> all(static_cast<std::size_t>((kPages - 1) * kRowsPerPage));
  std::iota(all.begin(), all.end(), kRowsPerPage);
  std::mt19937 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<std::int64_t> s(all.begin(), all.begin() + tokens);
  for (std::size_t k = 3; k < s.size(); k += 7) s[k] = -1;
  return s;
}

template <row_format F>
void check_slots(int threads) {
  using In = typename F::input_type;
  const format_layout l = slot_test_layout<F>();
  const std::int64_t pb = l.page_bytes(kRowsPerPage) + 64;  // a page stride above the page bytes
  const pool_pages shape{nullptr, pb, kPages, kRowsPerPage};
  const std::int64_t tokens = 500;
  const std::vector<std::int64_t> slots = random_slots(tokens, 5U + static_cast<std::uint32_t>(threads));
  const std::vector<In> in = activation_rows<In>(tokens, l.values);
  SCOPED_TRACE(std::string(l.name) + " on " + std::to_string(threads) + " threads");

  std::vector<std::uint8_t> want(static_cast<std::size_t>(kPages * pb), 0);
  for (std::int64_t k = 0; k < tokens; ++k) {
    if (slots[k] < 0) continue;
    quantize_row<F>(l, want.data() + (slots[k] / kRowsPerPage) * pb, kRowsPerPage, slots[k] % kRowsPerPage,
                    in.data() + k * l.values);
  }
  std::vector<std::uint8_t> got(want.size(), 0);
  pool_pages pool = shape;
  pool.base = got.data();
  host_insert_rows<F>(l, pool, slots.data(), tokens, in.data(), F::default_policy, threads);
  ASSERT_EQ(got, want) << "insert: pool bytes differ";

  const auto check_gather = [&]<class Out>(Out /*tag*/) {
    std::vector<Out> ref(static_cast<std::size_t>(tokens * l.values));
    for (std::int64_t k = 0; k < tokens; ++k) {
      const std::int64_t s = slots[k] < 0 ? 0 : slots[k];  // padding reads row 0 of the null page
      dequantize_row<F, Out>(l, want.data() + (s / kRowsPerPage) * pb, kRowsPerPage, s % kRowsPerPage,
                             ref.data() + k * l.values);
    }
    for (host_store store : {host_store::cached, host_store::streaming}) {
      std::vector<Out> out(ref.size());
      host_gather_rows<F, Out>(l, pool, slots.data(), tokens, out.data(), F::default_policy, store, threads);
      ASSERT_EQ(std::memcmp(out.data(), ref.data(), ref.size() * sizeof(Out)), 0)
          << "gather to " << (std::is_same_v<Out, float> ? "float" : "bf16") << " (" << to_string(store) << ")";
    }
  };
  check_gather(float{});
  check_gather(bf16{});
}

TEST(HostSlots, EveryFormatMatchesTheRowCodecsOnAnyThreadCount) {
  for (int threads : {1, 2, 3, 8}) {
    for (int i = 0; i < static_cast<int>(kFormats.size()); ++i)
      visit_format(i, [&]<row_format F>() { check_slots<F>(threads); });
  }
}

TEST(HostSlots, RejectBadCallsBeforeWriting) {
  using F = formats::v4_fp8_ds_mla;
  const format_layout l = F::layout;
  const std::int64_t pb = l.page_bytes(kRowsPerPage);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(kPages * pb), 0);
  const pool_pages pool{bytes.data(), pb, kPages, kRowsPerPage};
  std::vector<bf16> in(static_cast<std::size_t>(4 * l.values), float_to_bf16(1.0f));
  std::vector<float> out(in.size());
  const auto insert_into = [&](const pool_pages& p, std::vector<std::int64_t> s, int threads) {
    host_insert_rows<F>(l, p, s.data(), static_cast<std::int64_t>(s.size()), in.data(), F::default_policy, threads);
  };
  const auto insert = [&](std::vector<std::int64_t> s, int threads = 1) { insert_into(pool, std::move(s), threads); };
  // The null page (slots 0..15), past the pool, below -1: refused, naming the token and the slot.
  for (std::int64_t bad : {std::int64_t{0}, kRowsPerPage - 1, kPages * kRowsPerPage, std::int64_t{-2}}) {
    try {
      insert({kRowsPerPage, kRowsPerPage + 1, bad});
      ADD_FAILURE() << "slot " << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("token=2"), std::string::npos) << what;
      EXPECT_NE(what.find("slot=" + std::to_string(bad)), std::string::npos) << what;
    }
  }
  EXPECT_THROW(insert({kRowsPerPage}, 0), std::invalid_argument);
  EXPECT_THROW(insert({kRowsPerPage}, kHostMaxThreads + 1), std::invalid_argument);
  // A repeated slot: a race on several threads, refused there; on one thread the last row wins.
  EXPECT_THROW(insert({kRowsPerPage + 1, kRowsPerPage + 2, kRowsPerPage + 1}, 2), std::invalid_argument);
  pool_pages small = pool;
  small.page_bytes = pb - 1;
  EXPECT_THROW(insert_into(small, {kRowsPerPage}, 1), std::invalid_argument);
  try {
    host_insert_rows<F>(formats::v4_bf16::layout, pool, nullptr, 0, in.data());
    ADD_FAILURE() << "another format's layout accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'v4.bf16', not the called format 'v4.fp8_ds_mla'"), std::string::npos)
        << e.what();
  }
  const std::int64_t one = kRowsPerPage;
  EXPECT_THROW(host_insert_rows<F>(l, pool, &one, -1, in.data()), std::invalid_argument);
  EXPECT_THROW(host_insert_rows<F>(l, pool, nullptr, 1, in.data()), std::invalid_argument);
  EXPECT_THROW((host_gather_rows<F, float>(l, pool, &one, 1, nullptr)), std::invalid_argument);
  for (std::uint8_t b : bytes) ASSERT_EQ(b, 0) << "a refused call wrote";

  // The accepted repeated slot on one thread: the last token's row.
  in[static_cast<std::size_t>(2 * l.values)] = float_to_bf16(2.0f);
  insert({kRowsPerPage + 1, kRowsPerPage + 2, kRowsPerPage + 1}, 1);
  const std::int64_t s = kRowsPerPage + 1;
  host_gather_rows<F, float>(l, pool, &s, 1, out.data());
  EXPECT_EQ(out[0], 2.0f);
  // Zero tokens: nothing to do, no pointers needed.
  EXPECT_NO_THROW(host_insert_rows<F>(l, pool, nullptr, 0, nullptr, F::default_policy, 4));
}

// ---- Block tables (block_table.hpp), the engine's slot mapping ----

TEST(BlockTables, SlotMappingAndRefusals) {
  // Request 0: blocks 3, null 0, padding -1, 99 (>= num_blocks), -5; request 1: block 7.
  const std::vector<std::int32_t> indices = {3, 0, -1, 99, -5, 7};
  const std::vector<std::int32_t> indptr = {0, 5, 6};
  const block_table_view t{indices.data(), indptr.data(), 2, 10, 4};
  EXPECT_NO_THROW(validate_block_table(t));
  for (std::int64_t j = 0; j < 4; ++j) EXPECT_EQ(t.slot(0, j), 12 + j);  // 3 x 4 + j
  EXPECT_EQ(t.slot(0, 5), 1);                                            // the null block: page 0
  EXPECT_EQ(t.slot(0, 9), kPaddingSlot);                                 // a padding entry
  EXPECT_EQ(t.slot(0, 12), kRefusedSlot);                                // id 99 past the pool
  EXPECT_EQ(t.slot(0, 16), kRefusedSlot);                                // id -5
  EXPECT_EQ(t.slot(0, 20), kRefusedSlot);                                // past the table
  EXPECT_EQ(t.slot(0, -1), kPaddingSlot);                                // a padding row
  EXPECT_EQ(t.slot(0, -3), kRefusedSlot);
  EXPECT_EQ(t.slot(1, 2), 30);  // 7 x 4 + 2
  EXPECT_EQ(t.slot(2, 0), kRefusedSlot);
  EXPECT_EQ(t.slot(-1, 0), kRefusedSlot);
  EXPECT_EQ(t.num_entries(0), 5);
  EXPECT_EQ(t.num_entries(1), 1);
  // Every mapped slot classifies as today's rules say.
  const pool_pages pool{nullptr, 64, 10, 4};
  EXPECT_EQ(classify_slot(pool, t.slot(0, 5)), slot_status::refused);
  EXPECT_EQ(classify_slot(pool, t.slot(0, 9)), slot_status::padding);
  EXPECT_EQ(classify_slot(pool, t.slot(0, 12)), slot_status::refused);
  EXPECT_EQ(classify_slot(pool, t.slot(1, 2)), slot_status::written);
  static_assert(std::is_trivially_copyable_v<block_table_view>);

  // Bad tables: named errors.
  const std::vector<std::int32_t> down = {0, 5, 4};
  EXPECT_THROW(validate_block_table({indices.data(), down.data(), 2, 10, 4}), std::invalid_argument);
  const std::vector<std::int32_t> late = {1, 5, 6};
  EXPECT_THROW(validate_block_table({indices.data(), late.data(), 2, 10, 4}), std::invalid_argument);
  EXPECT_THROW(validate_block_table({indices.data(), indptr.data(), 2, 10, 0}), std::invalid_argument);
  EXPECT_THROW(validate_block_table({indices.data(), indptr.data(), 2, 0, 4}), std::invalid_argument);
  EXPECT_THROW(validate_block_table({nullptr, indptr.data(), 2, 10, 4}), std::invalid_argument);
  EXPECT_THROW(validate_block_table({indices.data(), nullptr, 2, 10, 4}), std::invalid_argument);
  EXPECT_THROW(validate_block_table({indices.data(), indptr.data(), 2, std::int64_t{1} << 62, 4}),
               std::invalid_argument);

  // The host insert through the table refuses a row in the null block, naming the token and its
  // slot, before writing anything; a row past the table names kRefusedSlot.
  using F = formats::v4_indexer_fp8;
  const format_layout l = F::layout;
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(10 * l.page_bytes(4)), 0);
  const pool_pages p{bytes.data(), l.page_bytes(4), 10, 4};
  std::vector<bf16> in(static_cast<std::size_t>(3 * l.values), float_to_bf16(1.0f));
  for (const auto& [bad, slot] :
       {std::pair<std::int64_t, std::int64_t>{5, 1}, {20, kRefusedSlot}, {12, kRefusedSlot}}) {
    const std::vector<std::int64_t> rows = {0, 1, bad};
    try {
      host_insert_through_table<F>(l, p, t, 0, rows.data(), 3, in.data());
      ADD_FAILURE() << "row " << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("token=2"), std::string::npos) << what;
      EXPECT_NE(what.find("slot=" + std::to_string(slot)), std::string::npos) << what;
    }
  }
  const pool_pages other_rows{bytes.data(), l.page_bytes(4), 10, 8};
  const std::vector<std::int64_t> ok_rows = {0, 1, 9};
  EXPECT_THROW(host_insert_through_table<F>(l, other_rows, t, 0, ok_rows.data(), 3, in.data()), std::invalid_argument);
  for (const std::uint8_t b : bytes) ASSERT_EQ(b, 0) << "a refused call wrote";
  // Rows 0, 1 into block 3, row 9 a padding entry: written, then read back through the table.
  host_insert_through_table<F>(l, p, t, 0, ok_rows.data(), 3, in.data());
  std::vector<float> out(static_cast<std::size_t>(3 * l.values), -1.0f);
  host_gather_through_table<F, float>(l, p, t, 0, ok_rows.data(), 3, out.data());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[static_cast<std::size_t>(l.values)], 1.0f);
  EXPECT_EQ(out[static_cast<std::size_t>(2 * l.values)], 0.0f);        // padding reads zeros
  EXPECT_NE(bytes[static_cast<std::size_t>(3 * l.page_bytes(4))], 0);  // block 3's page was written
}

/// Rows of `values` inputs, a seed of their own per region and request (splitmix64 bits: a
/// sign, a magnitude in [0, 2), a power of two in [2^-6, 2^5], one value in 32 zero).
template <class In>
std::vector<In> seeded_rows(std::int64_t rows, std::int64_t values, std::uint64_t seed) {
  std::vector<In> v(static_cast<std::size_t>(rows * values));
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ULL;
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    const float mag = static_cast<float>(z >> 40) * 0x1p-23f;  // 24 bits: [0, 2)
    const float signed_mag = ((z >> 5) & 1U) != 0 ? -mag : mag;
    const float x = (z & 31U) == 0 ? 0.0f : signed_mag * exp2i(static_cast<int>(i / 97 % 12) - 6);
    if constexpr (std::is_same_v<In, float>) {
      v[i] = x;
    } else {
      v[i] = float_to_bf16(x);
    }
  }
  return v;
}

/// One engine group's block tables as the test's scheduler assigned them: entries per request
/// (block ids; 0 for a sliding table's pages that left the window), and the live entries' rows.
struct group_tables {
  std::vector<std::int32_t> indices;
  std::vector<std::int32_t> indptr{0};
  std::vector<std::int64_t> first_live;  ///< Per request: the first entry holding a real block.
};

/// vLLM's arena of `c` for `requests` requests of `tokens` tokens written through block tables by
/// emulated lanes (slot_work.hpp `insert_unit`, every (row, unit) in a shuffled order) against
/// golden pages (`quantize_row`) placed where the layout contract (describe --engine vllm, its /2
/// JSON parsed) puts them: page of block b of tensor (group, pool) in its k-th layer at
/// b x block_bytes + offset + k x page_bytes. Then the gather lanes against `dequantize_row`.
void check_vllm_arena_through_tables(const model_config& c, plan_options o, std::int64_t tokens) {
  SCOPED_TRACE(std::string(c.name.view()));
  const engine_spec& e = *find_engine("vllm");
  o.policy = e.policy;  // async scheduling off
  o.vllm_pools = e.vllm;
  o.pools = pools_choice::engine;
  const memory_plan plan = build_memory_plan(c, o);
  const arena_layout a = build_arena_layout(c, plan);
  ASSERT_TRUE(a.engine_placed());
  ASSERT_LT(a.total_bytes, std::uint64_t{1} << 28) << "the test's arena should stay small: " << plan.num_blocks;
  const std::int64_t num_blocks = plan.num_blocks;

  // The contract's placement: (group, pool, layer) -> (offset of page 0 in the block, page bytes,
  // rows per page).
  const nlohmann::json j = nlohmann::json::parse(canonical_layout(describe_layout(c, o, e)).view());
  const auto block_bytes = j.at("engine").at("block_bytes").get<std::uint64_t>();
  std::map<std::tuple<std::string, int, int>, std::tuple<std::uint64_t, std::int64_t, std::int64_t>> contract;
  for (const nlohmann::json& g : j.at("engine").at("groups"))
    for (const nlohmann::json& t : g.at("tensors")) {
      std::uint64_t k = 0;
      for (const nlohmann::json& layer : t.at("layers")) {
        const auto page = t.at("page_bytes").get<std::uint64_t>();
        contract[{t.at("group").get<std::string>(), t.at("pool").get<int>(), layer.get<int>()}] = {
            t.at("offset").get<std::uint64_t>() + k++ * page, static_cast<std::int64_t>(page),
            t.at("rows_per_page").get<std::int64_t>()};
      }
    }

  // The scheduler: block ids from a shuffled free queue, block 0 never handed out; per request
  // and engine group, ceil(tokens / block tokens) entries (a ring: one), of which a sliding
  // table keeps the plan's blocks per request and points the older ones at the null block.
  std::vector<std::int32_t> free_ids(static_cast<std::size_t>(num_blocks - 1));
  std::iota(free_ids.begin(), free_ids.end(), 1);
  std::mt19937 rng(11);
  std::shuffle(free_ids.begin(), free_ids.end(), rng);
  std::size_t next_free = 0;
  const std::int64_t requests = o.requests;
  std::vector<group_tables> tables(static_cast<std::size_t>(plan.pools.num_groups));
  for (std::int64_t r = 0; r < requests; ++r)
    for (int eg = 0; eg < plan.pools.num_groups; ++eg) {
      const engine_group& g = plan.pools[eg];
      group_tables& gt = tables[static_cast<std::size_t>(eg)];
      const std::int64_t entries =
          g.rule.kind == table_kind::request_ring ? 1 : (tokens + g.rule.page_tokens - 1) / g.rule.page_tokens;
      const std::int64_t keep =
          g.rule.sliding() ? std::min(entries, plan.engine_groups[static_cast<std::size_t>(eg)].pages_per_request)
                           : entries;
      gt.first_live.push_back(entries - keep);
      for (std::int64_t i = 0; i < entries; ++i) {
        if (i < entries - keep) {
          gt.indices.push_back(0);
          continue;
        }
        ASSERT_LT(next_free, free_ids.size()) << "the plan's blocks ran out";
        gt.indices.push_back(free_ids[next_free++]);
      }
      gt.indptr.push_back(static_cast<std::int32_t>(gt.indices.size()));
    }

  std::vector<std::uint8_t> got(static_cast<std::size_t>(a.total_bytes), 0);
  std::vector<std::uint8_t> want(got.size(), 0);
  std::int64_t rows_written = 0;
  for (int i = 0; i < a.num_regions; ++i) {
    const pool_region reg = a.region(i);
    const group_tables& gt = tables[static_cast<std::size_t>(reg.engine_group)];
    const engine_group& g = plan.pools[reg.engine_group];
    // (no structured binding: clang 14 cannot capture one in the lambda below)
    const auto& placed =
        contract.at({to_string(a.plan.groups[static_cast<std::size_t>(reg.group)].spec.id), reg.pool, reg.layer});
    const std::uint64_t offset = std::get<0>(placed);
    const std::int64_t rows_per_page = std::get<2>(placed);
    ASSERT_EQ(rows_per_page, reg.rows_per_page);
    const block_table_view view = region_block_table(reg, gt.indices.data(), gt.indptr.data(), requests);
    const pool_pages pool = region_pages(got.data(), reg);
    const std::int64_t tokens_per_row =
        g.rule.kind == table_kind::request_ring ? 1 : g.rule.page_tokens / rows_per_page;
    visit_format(format_index(reg.format.name), [&]<row_format F>() {
      using In = typename F::input_type;
      const format_layout& l = reg.format;
      for (std::int64_t r = 0; r < requests; ++r) {
        const std::int64_t entries = view.num_entries(r);
        const std::int64_t rows =
            g.rule.kind == table_kind::request_ring
                ? rows_per_page
                : std::min((tokens + tokens_per_row - 1) / tokens_per_row, entries * rows_per_page);
        // Lanes: every (row, unit) of the request's live rows and the two rows before them, in a
        // shuffled order; rows in null-block entries are refused and write nothing. Input and
        // output row k is row first + k.
        const std::int64_t first =
            std::max<std::int64_t>(0, gt.first_live[static_cast<std::size_t>(r)] * rows_per_page - 2);
        const std::vector<In> in =
            seeded_rows<In>(rows - first, l.values, static_cast<std::uint64_t>(i) * 7 + static_cast<std::uint64_t>(r));
        const auto at = [&](std::int64_t row) { return (row - first) * l.values; };
        std::vector<std::pair<std::int64_t, int>> lanes;
        for (std::int64_t row = first; row < rows; ++row)
          for (int u = 0; u < F::units(l); ++u) lanes.emplace_back(row, u);
        std::shuffle(lanes.begin(), lanes.end(), rng);
        for (const auto& [row, u] : lanes) {
          const slot_status st = insert_unit<F>(l, F::default_policy, pool, view.slot(r, row), in.data() + at(row), u);
          const bool live = row / rows_per_page >= gt.first_live[static_cast<std::size_t>(r)];
          ASSERT_EQ(st, live ? slot_status::written : slot_status::refused) << "row " << row;
        }
        // Golden: the test's own block ids at the contract's offsets.
        for (std::int64_t row = first; row < rows; ++row) {
          if (row / rows_per_page < gt.first_live[static_cast<std::size_t>(r)]) continue;
          const auto block = static_cast<std::uint64_t>(
              gt.indices[static_cast<std::size_t>(gt.indptr[static_cast<std::size_t>(r)] + row / rows_per_page)]);
          quantize_row<F>(l, want.data() + block * block_bytes + offset, rows_per_page, row % rows_per_page,
                          in.data() + at(row));
          ++rows_written;
        }
        // Gather lanes through the table against the golden pages (refused rows read zeros).
        std::vector<float> out(static_cast<std::size_t>((rows - first) * l.values));
        std::vector<float> ref(out.size());
        const pool_pages golden{want.data() + offset, static_cast<std::int64_t>(block_bytes), num_blocks,
                                rows_per_page};
        for (std::int64_t row = first; row < rows; ++row) {
          for (int u = 0; u < F::units(l); ++u)
            (void)gather_unit<F, float>(l, F::default_policy, pool, view.slot(r, row), out.data() + at(row), u);
          const std::int64_t s =
              classify_slot(golden, view.slot(r, row)) == slot_status::written ? view.slot(r, row) : 0;
          dequantize_row<F, float>(l,
                                   want.data() + offset + static_cast<std::uint64_t>(s / rows_per_page) * block_bytes,
                                   rows_per_page, s % rows_per_page, ref.data() + at(row));
        }
        ASSERT_EQ(std::memcmp(out.data(), ref.data(), out.size() * sizeof(float)), 0) << "gather, request " << r;
      }
    });
    ASSERT_FALSE(testing::Test::HasFatalFailure()) << "region " << i;
  }
  EXPECT_GT(rows_written, 0);
  // Block 0, the null block, is never written.
  EXPECT_TRUE(std::all_of(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(block_bytes),
                          [](std::uint8_t b) { return b == 0; }));
  ASSERT_TRUE(got == want) << "the arena's bytes differ from the golden pages at the contract's offsets";
}

TEST(BlockTables, VllmArenaWrittenThroughBlockTablesMatchesGoldenPages) {
  // A small plan: 2 requests of 1,024 tokens, 64-token steps without async scheduling (vLLM's
  // startup charge and the prompts of a step then stay a few blocks per table).
  plan_options o;
  o.context_tokens = 1024;
  o.requests = 2;
  o.prefill_chunk_tokens = 64;
  check_vllm_arena_through_tables(deepseek_v4_flash, o, 300);
  check_vllm_arena_through_tables(deepseek_v4_pro, o, 200);
  check_vllm_arena_through_tables(deepseek_v4_1_flash, o, 300);
  check_vllm_arena_through_tables(deepseek_v3_2, o, 300);
  o.indexer = indexer_format::mxfp4;
  check_vllm_arena_through_tables(deepseek_v4_flash, o, 300);
}

}  // namespace
}  // namespace dsv4::cache
