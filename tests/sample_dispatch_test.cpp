// The CUDA sample's dispatch (examples/cuda/dispatch.hpp), on the host: every pool region of every
// preset the sample runs (v4-flash, v4-pro, v4.1-flash, v3.2, laid out as the sample lays them
// out) gets a registry format, a writer and a device path: the specialized kernels where the
// format has them and they implement the writer's policy, the generic kernels otherwise; the
// writer is the format's default unless one is asked for and the format lists it. Each path, run
// as its lanes on the host (tests/fast_lanes.hpp: what the kernels run per lane, in shuffled
// orders), writes the bytes and reads the values the host codec of the writer used gives
// (`quantize_row<F>` / `dequantize_row<F>` under its policy), on the region's own page geometry.
// The expected paths are a table written from the formats' documentation, not from the code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../examples/cuda/arena_json.hpp"
#include "../examples/cuda/dispatch.hpp"
#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/tools/planner_cli.hpp"
#include "fast_lanes.hpp"

namespace dsv4::cache {
namespace {

using cuda::sample::dispatch_region;
using cuda::sample::region_dispatch;
using cuda::sample::sample_regions;

constexpr const char* kPresets[] = {"v4-flash", "v4-pro", "v4.1-flash", "v3.2"};

/// The arena the sample allocates for `preset` (its flags: own pools), at a small size.
arena_layout preset_arena(const char* preset) {
  cli::planner_args a;
  a.preset = preset;
  a.context = 4096;
  a.requests = 2;
  a.pools = "own";
  a.library_defaults = true;  // the library's formats of each preset (V4.1: the v41 set)
  const cli::planner_result r = cli::compute(a, false);
  return build_arena_layout(r.model, r.plan);
}

/// The formats with specialized kernels for their default writers (fast_rows.hpp's header: the
/// V4 latent row, the FP8 indexer keys of V4 and V3.2, V4's MXFP4 indexer keys).
bool fast_by_default(std::string_view format) {
  return format == "v4.fp8_ds_mla" || format == "v4.indexer_fp8" || format == "v3.2.indexer_fp8" ||
         format == "v4.indexer_mxfp4";
}

TEST(SampleDispatch, EveryRegionOfEveryPresetGetsAPath) {
  // The formats each preset's pools take (the plan's row formats) and their default paths.
  const std::map<std::string, std::set<std::pair<std::string, std::string>>> want = {
      {"v4-flash", {{"v4.fp8_ds_mla", "fast"}, {"v4.indexer_fp8", "fast"}, {"fp32_state", "generic"}}},
      {"v4-pro", {{"v4.fp8_ds_mla", "fast"}, {"v4.indexer_fp8", "fast"}, {"fp32_state", "generic"}}},
      {"v4.1-flash",
       {{"v4.1.fp8", "generic"}, {"v4.1.fp4", "generic"}, {"v4.indexer_mxfp4", "fast"}, {"fp32_state", "generic"}}},
      {"v3.2", {{"v3.2.fp8_ds_mla", "generic"}, {"v3.2.indexer_fp8", "fast"}}},
  };
  for (const char* preset : kPresets) {
    SCOPED_TRACE(preset);
    const arena_layout a = preset_arena(preset);
    std::set<std::pair<std::string, std::string>> seen;
    for (int i = 0; i < a.num_regions; ++i) {
      const pool_region r = a.region(i);
      const region_dispatch d = dispatch_region(r, std::nullopt);
      ASSERT_GE(d.format_index, 0) << "region " << i;
      EXPECT_EQ(d.writer, &kFormatWriters[static_cast<std::size_t>(d.format_index)][0]) << r.format.name;
      EXPECT_FALSE(d.writer_asked);
      EXPECT_EQ(d.path, fast_by_default(r.format.name) ? device_path::fast : device_path::generic) << r.format.name;
      seen.insert({std::string(r.format.name), std::string(to_string(d.path))});
      if (d.path == device_path::fast) {  // what the specialized kernels' view check requires
        const std::int64_t fast_page = fast_format(r.format) == pool_format::fp8_ds_mla
                                           ? a.fp8_ds_mla_layout(r).page_bytes()
                                           : a.indexer_layout(r).page_bytes();
        EXPECT_EQ(r.page_bytes % 16, 0) << r.format.name;
        EXPECT_GE(r.page_bytes, fast_page) << r.format.name;
        EXPECT_EQ(r.offset_bytes % 16, 0u) << r.format.name;
      }
      // A forced generic run exists for every region (the GPU tests compare both paths).
      EXPECT_EQ(dispatch_region(r, std::nullopt, true).path, device_path::generic);
    }
    EXPECT_EQ(seen, want.at(preset));
  }
}

// V4.1 under vLLM's defaults on a Hopper GPU is planned with V4's rows (the V4 format set): its
// latent pools take the specialized path, whose page view is the model's 584-byte row (448 NoPE
// E4M3 + 64 RoPE bf16 + 8 UE8M0 scale bytes, facts sheet) x rows per page, padded to 576 B.
TEST(SampleDispatch, V41UnderVllmOnHopperTakesTheV4RowsOnTheFastPath) {
  cli::planner_args pa;
  pa.preset = "v4.1-flash";
  pa.context = 4096;
  pa.requests = 2;
  pa.pools = "own";
  const cli::planner_result r = cli::compute(pa, false);
  const arena_layout a = build_arena_layout(r.model, r.plan);
  int latent = 0;
  for (int i = 0; i < a.num_regions; ++i) {
    const pool_region reg = a.region(i);
    if (reg.format.name != "v4.fp8_ds_mla") continue;
    ++latent;
    EXPECT_EQ(dispatch_region(reg, std::nullopt).path, device_path::fast);
    // 584-B rows, the page padded to a multiple of 576 B (FlashMLA's page alignment, facts sheet).
    EXPECT_EQ(a.fp8_ds_mla_layout(reg).page_bytes(), (reg.rows_per_page * 584 + 575) / 576 * 576);
  }
  EXPECT_GT(latent, 0);
}

TEST(SampleDispatch, TheSampleRunsEveryPoolOfTheFirstAndLastLayerOfEveryGroup) {
  for (const char* preset : kPresets) {
    SCOPED_TRACE(preset);
    const arena_layout a = preset_arena(preset);
    std::set<std::tuple<int, int, int>> want;  // (group, layer slot, pool)
    for (int g = 0; g < a.plan.num_groups; ++g) {
      const arena_group_layout& gl = a.groups[static_cast<std::size_t>(g)];
      for (int p = 0; p < gl.num_pools; ++p) {
        want.insert({g, 0, p});
        want.insert({g, gl.num_layers - 1, p});
      }
    }
    std::set<std::tuple<int, int, int>> got;
    for (const pool_region& r : sample_regions(a)) got.insert({r.group, r.layer_slot, r.pool});
    EXPECT_EQ(got, want);
    EXPECT_EQ(sample_regions(a).size(), want.size());  // none twice
  }
}

TEST(SampleDispatch, AnAskedWriterIsUsedWhereTheFormatListsIt) {
  for (const char* preset : {"v4-flash", "v4.1-flash", "v3.2"}) {
    const arena_layout a = preset_arena(preset);
    for (const writer_id w : {writer_id::flashmla, writer_id::vllm, writer_id::sglang, writer_id::tokenspeed,
                              writer_id::trtllm, writer_id::flashinfer})
      for (const pool_region& r : sample_regions(a)) {
        const region_dispatch d = dispatch_region(r, w);
        const format_writer* listed = find_writer(d.format_index, w);
        SCOPED_TRACE(std::string(preset) + " " + std::string(r.format.name) + " " + std::string(to_string(w)));
        if (listed != nullptr) {
          EXPECT_EQ(d.writer, listed);
          EXPECT_TRUE(d.writer_asked);
        } else {
          EXPECT_EQ(d.writer, &kFormatWriters[static_cast<std::size_t>(d.format_index)][0]);
          EXPECT_FALSE(d.writer_asked);
        }
      }
  }
  // Hand cases: vLLM's fp8_ds_mla writer is specialized (byte 105 for a zero block), tokenspeed's
  // MXFP4 keys (ties toward zero) are not, tokenspeed's FP8 keys are (another floor only).
  const arena_layout flash = preset_arena("v4-flash");
  const pool_region swa = flash.region(0);
  ASSERT_EQ(swa.format.name, "v4.fp8_ds_mla");
  EXPECT_EQ(dispatch_region(swa, writer_id::vllm).path, device_path::fast);
  EXPECT_EQ(dispatch_region(swa, writer_id::vllm).writer->policy.fp8_amax_floor, 1e-4f);
  const arena_layout v41 = preset_arena("v4.1-flash");
  for (const pool_region& r : sample_regions(v41))
    if (r.format.name == "v4.indexer_mxfp4") {
      EXPECT_EQ(dispatch_region(r, writer_id::tokenspeed).path, device_path::generic);
      EXPECT_EQ(dispatch_region(r, writer_id::vllm).path, device_path::fast);
    }
}

/// What the generic launchers check on the host before a launch (slot_work.hpp
/// `validate_pool_pages`): the region's format, page stride and rows. Returns "" or the error.
std::string generic_launch_check(const pool_region& r) {
  std::string error;
  visit_format(format_index(r.format.name), [&]<row_format F>() {
    try {
      validate_pool_pages<F>(r.format, pool_pages{nullptr, r.page_bytes, r.num_pages, r.rows_per_page});
    } catch (const std::invalid_argument& e) {
      error = std::string(r.format.name) + ": " + e.what();
    }
  });
  return error;
}

TEST(SampleDispatch, EveryRegionPassesItsLaunchChecksAndHasUsableSlots) {
  // The sample's arenas (preset_arena) and the GPU tests' small ones (tests/cuda/gpu_cases.cuh
  // `small_layout`: 2 requests of 1,024 tokens, 256-token prefill chunks): every region takes
  // the generic launchers' host checks, and has a page after the null page (a round trip there
  // inserts at least one row).
  std::vector<std::pair<std::string, arena_layout>> arenas;
  for (const char* preset : kPresets) arenas.emplace_back(preset, preset_arena(preset));
  for (const auto& [name, model] : {std::pair{"flash", &deepseek_v4_flash}, std::pair{"pro", &deepseek_v4_pro},
                                    std::pair{"v4.1-flash", &deepseek_v4_1_flash}, std::pair{"v3.2", &deepseek_v3_2}})
    for (const indexer_format f : {indexer_format::fp8, indexer_format::mxfp4}) {
      if (model->family == model_family::v3_2 && f == indexer_format::mxfp4) continue;
      plan_options o;
      o.context_tokens = 1024;
      o.requests = 2;
      o.prefill_chunk_tokens = 256;
      o.indexer = f;
      arenas.emplace_back(std::string("small ") + name + " " + std::string(to_string(f)),
                          build_arena_layout(*model, o));
    }
  for (const auto& [name, a] : arenas) {
    SCOPED_TRACE(name);
    for (int i = 0; i < a.num_regions; ++i) {
      const pool_region r = a.region(i);
      EXPECT_EQ(generic_launch_check(r), "") << "region " << i;
      EXPECT_GE(r.num_pages, 2) << r.format.name << " region " << i;
      if (fast_format(r.format) != pool_format::other) {  // the specialized kernels' view checks
        const std::int64_t fast_page = fast_format(r.format) == pool_format::fp8_ds_mla
                                           ? a.fp8_ds_mla_layout(r).page_bytes()
                                           : a.indexer_layout(r).page_bytes();
        EXPECT_EQ(r.page_bytes % 16, 0) << r.format.name << " region " << i;
        EXPECT_GE(r.page_bytes, fast_page) << r.format.name << " region " << i;
        EXPECT_EQ(r.offset_bytes % 16, 0u) << r.format.name << " region " << i;
      }
    }
  }
}

// ---- each path against the host codec of the writer used ----

template <class In>
std::vector<In> sample_rows(std::int64_t rows, std::int64_t values, std::mt19937& rng) {
  std::vector<In> v(static_cast<std::size_t>(rows * values));
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-20, 20);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float scale = std::ldexp(1.0f, expo(rng));
    for (std::int64_t i = 0; i < values; ++i) {
      auto& x = v[static_cast<std::size_t>(r * values + i)];
      const bool raw = r % 16 == 15;  // raw bit patterns: NaN, inf, subnormals
      if constexpr (std::is_same_v<In, float>) {
        const std::uint32_t b = bits(rng);
        float f = 0;
        std::memcpy(&f, &b, 4);
        x = raw ? f : gauss(rng) * scale;
      } else {
        x = raw ? bf16{static_cast<std::uint16_t>(bits(rng))} : float_to_bf16(gauss(rng) * scale);
      }
    }
  }
  return v;
}

std::uint32_t bits_of(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return u;
}

/// Region `r`'s geometry (its rows per page and page stride, 3 pages) through path `d.path` on
/// the host, against `quantize_row<F>` / `dequantize_row<F>` under the writer's policy. Returns ""
/// or the first difference.
template <row_format F>
std::string check_region(const arena_layout& a, const pool_region& r, const region_dispatch& d, std::mt19937& rng) {
  using In = typename F::input_type;
  const format_layout& l = r.format;
  const format_policy& p = d.writer->policy;
  const std::int64_t rows = r.rows_per_page;
  const std::int64_t pages = 3;
  const std::int64_t pb = r.page_bytes;
  const std::int64_t values = l.values;
  const std::string what =
      std::string(l.name) + " / " + std::string(to_string(d.writer->producer)) + " / " + std::string(to_string(d.path));
  std::vector<std::int64_t> slots(static_cast<std::size_t>((pages - 1) * rows));
  std::iota(slots.begin(), slots.end(), rows);
  for (const std::int64_t s : {std::int64_t{-1}, std::int64_t{0}, pages * rows}) slots.push_back(s);
  std::shuffle(slots.begin(), slots.end(), rng);
  const std::vector<In> in = sample_rows<In>(static_cast<std::int64_t>(slots.size()), values, rng);
  std::vector<std::uint8_t> got(static_cast<std::size_t>(pages * pb), 0);
  std::vector<std::uint8_t> want(got.size(), 0);
  const pool_pages gp{got.data(), pb, pages, rows};
  constexpr pool_format kFast = fast_format(F::layout);
  if (d.path == device_path::fast) {
    if constexpr (kFast == pool_format::other) {
      return what + ": the fast path for a format without specialized kernels";
    } else {
      page_layout_t<kFast> fl{};
      if constexpr (kFast == pool_format::fp8_ds_mla)
        fl = a.fp8_ds_mla_layout(r);
      else
        fl = a.indexer_layout(r);
      (void)testing::fast_insert<kFast>(fl, gp, slots, in.data(), values, p, rng);
    }
  } else {
    (void)testing::generic_insert<F>(l, gp, slots, in.data(), values, p, rng);
  }
  for (std::size_t k = 0; k < slots.size(); ++k) {  // the host codec of the writer at every writable slot
    const std::int64_t s = slots[k];
    if (s >= rows && s < pages * rows)
      quantize_row<F>(l, want.data() + (s / rows) * pb, rows, s % rows,
                      in.data() + static_cast<std::int64_t>(k) * values, p);
  }
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return what + ": page byte " + std::to_string(i) + " is " + std::to_string(got[i]) + ", the host codec says " +
             std::to_string(want[i]);
  // Gathers of every written slot: the path's lanes against dequantize_row.
  std::vector<float> f(static_cast<std::size_t>(values)), wf(f.size());
  std::vector<bf16> b(f.size()), wb(f.size());
  for (std::int64_t s = rows; s < pages * rows; ++s) {
    const std::uint8_t* page = got.data() + (s / rows) * pb;
    if constexpr (kFast != pool_format::other) {
      if (d.path == device_path::fast) {
        page_layout_t<kFast> fl{};
        if constexpr (kFast == pool_format::fp8_ds_mla)
          fl = a.fp8_ds_mla_layout(r);
        else
          fl = a.indexer_layout(r);
        testing::fast_gather_row<kFast>(fl, page, s % rows, f.data(), b.data(), rng);
      }
    }
    if (d.path == device_path::generic)
      for (const int u : testing::shuffled(F::units(l), rng)) {
        (void)gather_unit<F>(l, p, gp, s, f.data(), u);
        (void)gather_unit<F>(l, p, gp, s, b.data(), u);
      }
    dequantize_row<F>(l, page, rows, s % rows, wf.data(), p);
    dequantize_row<F>(l, page, rows, s % rows, wb.data(), p);
    for (std::size_t i = 0; i < f.size(); ++i)
      if (bits_of(f[i]) != bits_of(wf[i]) || b[i].bits != wb[i].bits)
        return what + ": slot " + std::to_string(s) + " value " + std::to_string(i) + " gathered differently";
  }
  return {};
}

TEST(SampleDispatch, EachPathWritesTheHostCodecOfTheWriterUsed) {
  std::mt19937 rng(36);
  int checked_fast = 0;
  int checked_generic = 0;
  for (const char* preset : kPresets) {
    const arena_layout a = preset_arena(preset);
    std::set<std::pair<std::string, std::int64_t>> done;  // (format, rows per page)
    for (const pool_region& r : sample_regions(a)) {
      if (!done.insert({std::string(r.format.name), r.rows_per_page}).second) continue;
      const int fi = format_index(r.format.name);
      ASSERT_GE(fi, 0);
      for (const format_writer& w : kFormatWriters[static_cast<std::size_t>(fi)]) {
        const region_dispatch d = dispatch_region(r, w.producer);
        ASSERT_EQ(d.writer, &w);
        visit_format(fi, [&]<row_format F>() { EXPECT_EQ(check_region<F>(a, r, d, rng), "") << preset; });
        (d.path == device_path::fast ? checked_fast : checked_generic) += 1;
      }
    }
  }
  EXPECT_GT(checked_fast, 0);
  EXPECT_GT(checked_generic, 0);
}

// The sample's arena (issue 45): the planner's plan for the same flags, laid out as the engine
// lays it; `--json` prints it. V4-Flash under vLLM at 1M tokens, 1 request: exactly the plan's
// bytes, num_blocks x 1,002,240 (vLLM's block: docs/engines/vllm.md), every region strided by
// the block, its offset inside the first block.
TEST(SampleArena, VllmArenaIsThePlannersPlanAsVllmLaysIt) {
  cli::planner_args a;
  a.preset = "v4-flash";
  a.engine = "vllm";
  a.context = 1'048'576;
  a.requests = 1;
  const cli::planner_result r = cli::compute(a, false);
  const arena_layout arena = build_arena_layout(r.model, r.plan);
  const nlohmann::ordered_json j = cuda_demo::arena_json(arena);
  EXPECT_EQ(j.at("total_bytes").get<std::uint64_t>(), r.plan.total_bytes);
  EXPECT_EQ(j.at("total_bytes").get<std::uint64_t>(), static_cast<std::uint64_t>(r.plan.num_blocks) * 1'002'240u);
  EXPECT_EQ(j.at("arena_bytes").get<std::uint64_t>(), r.plan.total_bytes);  // no padding
  EXPECT_EQ(j.at("allocated_bytes").get<std::uint64_t>(), r.plan.total_bytes + 8u);
  EXPECT_EQ(j.at("structure"), "shared_block_pool");
  const nlohmann::ordered_json& regions = j.at("regions");
  ASSERT_EQ(static_cast<int>(regions.size()), arena.num_regions);
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const nlohmann::ordered_json& o = regions[i];
    EXPECT_EQ(o.at("page_stride").get<std::int64_t>(), 1'002'240) << i;
    EXPECT_LE(o.at("offset").get<std::uint64_t>() + o.at("page_bytes").get<std::uint64_t>(), 1'002'240u) << i;
    EXPECT_EQ(o.at("pages").get<std::int64_t>(), r.plan.num_blocks) << i;
    const pool_region reg = arena.region(static_cast<int>(i));
    EXPECT_EQ(o.at("offset").get<std::uint64_t>(), reg.offset_bytes) << i;
    EXPECT_EQ(o.at("layer").get<int>(), reg.layer) << i;
  }
  const std::string line = cuda_demo::arena_line(arena);
  EXPECT_NE(line.find("= the plan's " + std::to_string(r.plan.total_bytes) + " B, laid out as the shared pool"),
            std::string::npos)
      << line;
  // Own pools (--pools own): the plan's bytes plus alignment padding.
  a.pools = "own";
  const cli::planner_result own = cli::compute(a, false);
  const arena_layout own_arena = build_arena_layout(own.model, own.plan);
  const nlohmann::ordered_json jo = cuda_demo::arena_json(own_arena);
  EXPECT_EQ(jo.at("total_bytes").get<std::uint64_t>(), own.plan.total_bytes);
  EXPECT_EQ(jo.at("arena_bytes").get<std::uint64_t>(), own.plan.total_bytes + own_arena.padding_bytes);
  EXPECT_EQ(jo.at("structure"), "own_pools");
}

}  // namespace
}  // namespace dsv4::cache
