// Prefill -> decode transfer manifests (issue 46): the merge, vLLM's NIXL rule against hand sums,
// the proof on host arenas that decode reads exactly prefill's bytes after the manifest's copies
// (and that a manifest missing a state group, or a window clipped one block short, fails it), and
// the CLI: exit codes, the refusal naming the difference, the NIXL and Mooncake shapes.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../test_util.hpp"
#include "dsv4/cache.hpp"
#include "dsv4/cache/engines/tokenspeed/transfer.hpp"
#include "dsv4/cache/engines/vllm/transfer.hpp"
#include "dsv4/cache/transfer.hpp"
#include "dsv4/tools/layout_cli.hpp"

namespace {

using namespace dsv4::cache;  // NOLINT(google-build-using-namespace)
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

using cli_out = dsv4::cache::testing::cli_run;

cli_out layout(const std::vector<std::string>& args) {
  return dsv4::cache::testing::run_in_process(
      [&](std::ostream& out, std::ostream& err) { return dsv4::tools::run_layout(args, out, err); });
}

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path p = dsv4::cache::testing::unique_temp_path("transfer-" + name);
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

ojson describe_json(std::vector<std::string> args) {
  args.insert(args.begin(), "describe");
  const cli_out r = layout(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return ojson::parse(r.out);
}

TEST(TransferMerge, JoinsRunsContiguousOnBothSidesOnly) {
  // Hand-made: 0..10 -> 100..110 and 10..20 -> 110..120 join; 20..30 -> 200 breaks on dst;
  // 40..50 -> 210 breaks on src; a zero length vanishes.
  const std::vector<transfer_range> in = {{0, 100, 10}, {10, 110, 10}, {20, 200, 10}, {40, 210, 10}, {50, 220, 0}};
  const std::vector<transfer_range> want = {{0, 100, 20}, {20, 200, 10}, {40, 210, 10}};
  EXPECT_EQ(merge_ranges(in), want);
  // An end past 2^64 is refused, never wrapped.
  const std::vector<transfer_range> wrap = {{~std::uint64_t{0} - 4, 0, 8}, {4, 8, 8}};
  EXPECT_THROW(merge_ranges(wrap), std::invalid_argument);
}

/// V4-Flash's vLLM tables as `describe --engine vllm` records them (windows from info).
std::vector<transfer_table> flash_tables() {
  return {{"swa even", true, false, 64, 128},
          {"swa odd", true, false, 64, 128},
          {"full", false, false, 256, 0},
          {"c4 states", true, false, 4, 8},
          {"c128 state", true, false, 8, 128}};
}

TEST(TransferVllm, FlashAt131072TokensIsTheHandSum) {
  // Hand sums (vLLM's rules: full tables every block, 131,072 / 256 = 512; sliding tables hold
  // ceil(P / R) - floor((P - W + 1) / R) blocks and move the last cdiv(W, R) + 1 entries, the
  // null ones skipped): SWA 2048 - 2046 = 2 each, c4 states 32768 - 32766 = 2, c128 state
  // 16384 - 16368 = 16. 534 blocks x 1,002,240 B = 535,196,160 B.
  const std::vector<transfer_table> t = flash_tables();
  const transfer_pool pool{1'002'240, 10'847};
  const auto ids = vllm_dry_run_blocks(t, 131'072);
  const transfer_manifest m = vllm_transfer_manifest(t, pool, pool, {ids, ids}, 131'072);
  ASSERT_EQ(m.groups.size(), 5U);
  EXPECT_EQ(m.groups[0].first_entry, 2045);  // 2048 - (2 + 1)
  EXPECT_EQ(m.groups[0].blocks_moved, 2);
  EXPECT_EQ(m.groups[2].blocks_moved, 512);
  EXPECT_EQ(m.groups[3].blocks_moved, 2);
  EXPECT_EQ(m.groups[4].first_entry, 16384 - 17);
  EXPECT_EQ(m.groups[4].blocks_moved, 16);
  EXPECT_EQ(m.bytes_moved, 535'196'160U);
  EXPECT_EQ(m.bytes_held, 535'196'160U);
  EXPECT_EQ(m.ranges_before_merge, 534);
  EXPECT_EQ(m.ranges.size(), 1U);  // a dry run's ids are consecutive on both sides
  // A prefix of 65,536 tokens on decode: the full table moves entries [256, 512).
  const transfer_manifest h = vllm_transfer_manifest(t, pool, pool, {ids, ids}, 131'072, 65'536);
  EXPECT_EQ(h.groups[2].first_entry, 256);
  EXPECT_EQ(h.groups[2].blocks_moved, 256);
}

TEST(TransferVllm, BadInputNamesTheValue) {
  const std::vector<transfer_table> t = flash_tables();
  const transfer_pool pool{1'002'240, 100};
  auto ids = vllm_dry_run_blocks(t, 1000);
  const auto message = [&](const transfer_blocks& b, std::int64_t prompt, std::int64_t prefix,
                           transfer_pool dst = {1'002'240, 100}) {
    try {
      (void)vllm_transfer_manifest(t, pool, dst, b, prompt, prefix);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({ids, ids}, 1000, 1000).find("prefix"), std::string::npos);
  EXPECT_NE(message({ids, ids}, 1000, 100).find("whole blocks"), std::string::npos);
  EXPECT_NE(message({ids, ids}, 2000, 0).find("entries, but a prompt of this length needs"), std::string::npos);
  EXPECT_NE(message({ids, ids}, 1000, 0, {917'568, 100}).find("same block bytes"), std::string::npos);
  auto bad = ids;
  bad[2][1] = 100;  // == num_blocks
  EXPECT_NE(message({bad, ids}, 1000, 0).find("block id 100 at entry 1 is outside the pool [0, 100)"),
            std::string::npos);
  bad = ids;
  bad[2][0] = 0;
  EXPECT_NE(message({ids, bad}, 1000, 0).find("decode block table of full: entry 0 is the null block"),
            std::string::npos);
}

/// The engine groups of a /2 descriptor with, per group, its tensors' pages in a block: (offset,
/// page bytes, layer count).
struct page_set {
  std::uint64_t offset;
  std::uint64_t page_bytes;
  std::uint64_t layers;
};

std::vector<std::vector<page_set>> pages_of(const ojson& d) {
  std::vector<std::vector<page_set>> out;
  for (const ojson& g : d["layout"]["engine"]["groups"]) {
    std::vector<page_set> v;
    for (const ojson& t : g["tensors"])
      v.push_back({t["offset"].get<std::uint64_t>(), t["page_bytes"].get<std::uint64_t>(), t["layers"].size()});
    out.push_back(v);
  }
  return out;
}

/// Where decode's reads of one request differ from prefill's bytes, after the copies `ranges`
/// on host arenas (every block random; the decode side's prefix blocks already prefill's), or
/// empty. What decode reads, independently of the connector: the pages of every entry covering a
/// token of a full table, the last W - 1 prompt tokens of a sliding table (the ones vLLM keeps:
/// first kept token P - W + 1), a ring's one entry.
std::string decode_mismatch(const std::vector<transfer_table>& tables, const std::vector<std::vector<page_set>>& pages,
                            std::uint64_t block_bytes, const transfer_blocks& ids, std::int64_t prompt,
                            std::int64_t prefix, const std::vector<transfer_range>& ranges) {
  std::int64_t max_id = 0;
  for (const auto* side : {&ids.prefill, &ids.decode})
    for (const auto& v : *side)
      for (const std::int64_t x : v) max_id = std::max(max_id, x);
  const std::size_t bytes = static_cast<std::size_t>(max_id + 1) * block_bytes;
  std::vector<std::uint8_t> src(bytes);
  std::vector<std::uint8_t> dst(bytes);
  std::mt19937_64 rng(static_cast<std::uint64_t>(prompt) * 7919U + static_cast<std::uint64_t>(prefix));
  for (auto* a : {&src, &dst})
    for (std::size_t i = 0; i + 8 <= a->size(); i += 8) {
      const std::uint64_t w = rng();
      std::memcpy(a->data() + i, &w, 8);
    }
  for (std::size_t k = 0; k < tables.size(); ++k)  // the prefix decode holds already
    for (std::int64_t e = 0; !tables[k].ring && e < prefix / tables[k].block_tokens; ++e) {
      const auto s = static_cast<std::size_t>(ids.prefill[k][static_cast<std::size_t>(e)]);
      const auto d = static_cast<std::size_t>(ids.decode[k][static_cast<std::size_t>(e)]);
      if (s != 0 && d != 0) std::memcpy(&dst[d * block_bytes], &src[s * block_bytes], block_bytes);
    }
  for (const transfer_range& r : ranges) {
    if (r.src_offset + r.length > bytes || r.dst_offset + r.length > bytes) return "a range outside the arenas";
    std::memcpy(&dst[r.dst_offset], &src[r.src_offset], r.length);
  }
  for (std::size_t k = 0; k < tables.size(); ++k) {
    const transfer_table& t = tables[k];
    std::int64_t first_token = 0;
    if (t.sliding) first_token = std::max<std::int64_t>(0, prompt - t.window_tokens + 1);
    // Each entry once: the one holding `tok`, then the next entry's first token.
    for (std::int64_t tok = first_token; tok < prompt;
         tok = t.ring ? prompt : (tok / t.block_tokens + 1) * t.block_tokens) {
      const std::int64_t e = t.ring ? 0 : tok / t.block_tokens;
      const auto s = static_cast<std::size_t>(ids.prefill[k][static_cast<std::size_t>(e)]);
      const auto d = static_cast<std::size_t>(ids.decode[k][static_cast<std::size_t>(e)]);
      for (const page_set& p : pages[k])
        for (std::uint64_t l = 0; l < p.layers; ++l) {
          const std::size_t at = p.offset + l * p.page_bytes;
          if (std::memcmp(&dst[d * block_bytes + at], &src[s * block_bytes + at], p.page_bytes) != 0)
            return t.name + " entry " + std::to_string(e) + " (token " + std::to_string(tok) + ", layer slot " +
                   std::to_string(l) + ")";
        }
    }
  }
  return {};
}

/// Decode's block ids for the same request: the dry run's, handed out from the pool's far end
/// downwards (so that runs merge on the prefill side only).
std::vector<std::vector<std::int64_t>> reversed_ids(const std::vector<std::vector<std::int64_t>>& ids) {
  std::int64_t max_id = 0;
  for (const auto& v : ids)
    for (const std::int64_t x : v) max_id = std::max(max_id, x);
  auto out = ids;
  for (auto& v : out)
    for (std::int64_t& x : v)
      if (x != 0) x = max_id + 1 - x;
  return out;
}

TEST(TransferProof, DecodeReadsPrefillsBytesForEveryFamilyAndBoundary) {
  for (const char* preset : {"v4-flash", "v4-pro", "v4.1-flash", "v3.2"}) {
    const ojson d = describe_json({"--preset", preset, "--engine", "vllm"});
    std::vector<transfer_table> tables;
    transfer_pool pool;
    dsv4::tools::transfer_detail::tables_of(d, preset, tables, pool);
    const auto pages = pages_of(d);
    std::int64_t lcm = 1;
    for (const transfer_table& t : tables)
      if (!t.ring) lcm = std::lcm(lcm, t.block_tokens);
    for (const std::int64_t prompt : {1,   2,   3,   4,   5,   7,   8,   9,   31,  32,  33,   63,   64,  65,
                                      127, 128, 129, 130, 255, 256, 257, 383, 384, 385, 1000, 1024, 1025}) {
      for (const std::int64_t prefix : {std::int64_t{0}, lcm, 2 * lcm}) {
        if (prefix >= prompt) continue;
        const auto pre = vllm_dry_run_blocks(tables, prompt);
        const transfer_blocks ids{pre, reversed_ids(pre)};
        const transfer_manifest m = vllm_transfer_manifest(tables, pool, pool, ids, prompt, prefix);
        const std::string where =
            std::string(preset) + " P=" + std::to_string(prompt) + " prefix=" + std::to_string(prefix);
        EXPECT_EQ(decode_mismatch(tables, pages, pool.block_bytes, ids, prompt, prefix, m.ranges), "") << where;
        // No byte beyond the request's blocks: every range starts and ends on a block the request
        // holds on each side.
        for (const transfer_range& r : m.ranges) {
          EXPECT_EQ(r.src_offset % pool.block_bytes, 0U) << where;
          EXPECT_EQ(r.length % pool.block_bytes, 0U) << where;
        }
        std::uint64_t held = 0;
        for (std::size_t k = 0; k < tables.size(); ++k)
          for (const std::int64_t x : pre[k]) held += x != 0 ? pool.block_bytes : 0;
        EXPECT_EQ(m.bytes_held, held) << where;
      }
    }
  }
}

TEST(TransferProof, AMissingStateGroupOrAShortWindowFails) {
  const ojson d = describe_json({"--preset", "v4-flash", "--engine", "vllm"});
  std::vector<transfer_table> tables;
  transfer_pool pool;
  dsv4::tools::transfer_detail::tables_of(d, "v4-flash", tables, pool);
  const auto pages = pages_of(d);
  const std::int64_t prompt = 1000;
  const auto pre = vllm_dry_run_blocks(tables, prompt);
  const transfer_blocks ids{pre, reversed_ids(pre)};
  const transfer_manifest m = vllm_transfer_manifest(tables, pool, pool, ids, prompt, 0);
  ASSERT_EQ(decode_mismatch(tables, pages, pool.block_bytes, ids, prompt, 0, m.ranges), "");
  // SGLang's #24878: the compressor state pools not sent. Every group's ranges but the states'.
  std::vector<transfer_range> no_state;
  for (const transfer_group& g : m.groups)
    if (g.name.find("compressor_state") == std::string::npos)
      no_state.insert(no_state.end(), g.ranges.begin(), g.ranges.end());
  EXPECT_NE(decode_mismatch(tables, pages, pool.block_bytes, ids, prompt, 0, no_state).find("compressor_state"),
            std::string::npos);
  // A window clipped to cdiv(W, R) blocks (no "+ 1"): at P = 1000 the SWA window's first token
  // 873 lies in entry 13, the clip's first entry would be 14.
  std::vector<transfer_range> short_window;
  for (std::size_t k = 0; k < m.groups.size(); ++k) {
    const transfer_group& g = m.groups[k];
    const bool swa = g.name.find("swa_kv") != std::string::npos;
    for (std::int64_t e = g.first_entry + (swa ? 1 : 0); e < g.end_entry; ++e) {
      const std::int64_t s = ids.prefill[k][static_cast<std::size_t>(e)];
      const std::int64_t t = ids.decode[k][static_cast<std::size_t>(e)];
      if (s != 0)
        short_window.push_back({static_cast<std::uint64_t>(s) * pool.block_bytes,
                                static_cast<std::uint64_t>(t) * pool.block_bytes, pool.block_bytes});
    }
  }
  EXPECT_NE(decode_mismatch(tables, pages, pool.block_bytes, ids, prompt, 0, short_window)
                .find("v4.swa_kv] entry 13 (token 873"),
            std::string::npos);
}

TEST(TransferCli, TpEightPrefillToDpEightDecode) {
  const cli_out p = layout({"describe", "--preset", "v4-flash", "--engine", "vllm", "--tp", "8"});
  const cli_out d = layout({"describe", "--preset", "v4-flash", "--engine", "vllm", "--dp", "8"});
  ASSERT_EQ(p.code, 0);
  ASSERT_EQ(d.code, 0);
  EXPECT_EQ(ojson::parse(p.out)["info"]["parallel"]["tp"], 8);
  const fs::path pf = write_temp("p.json", p.out);
  const fs::path df = write_temp("d.json", d.out);
  const cli_out text = layout({"transfer", pf.string(), df.string(), "--prompt-len", "131072"});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("total: 535,196,160 B moved of 535,196,160 B held"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("assumed: block ids: a dry run"), std::string::npos);
  const cli_out json = layout({"transfer", pf.string(), df.string(), "--prompt-len", "131072", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  const ojson j = ojson::parse(json.out);
  EXPECT_EQ(j["bytes_moved"], 535'196'160U);
  EXPECT_EQ(j["ranges_before_merge"], 534);
  EXPECT_EQ(j["pairs"].size(), 1U);  // decode DP rank 0 (TP 1) reads from prefill TP rank 0
  const cli_out nixl =
      layout({"transfer", pf.string(), df.string(), "--prompt-len", "131072", "--nixl", "--decode-dp-rank", "5"});
  ASSERT_EQ(nixl.code, 0) << nixl.err;
  const ojson n = ojson::parse(nixl.out);
  ASSERT_EQ(n["pairs"].size(), 1U);
  EXPECT_EQ(n["pairs"][0]["dst_rank"], 5);
  EXPECT_EQ(n["pairs"][0]["src"].size(), n["pairs"][0]["dst"].size());
  EXPECT_EQ(n["pairs"][0]["src"][0]["len"], 535'196'160U);
  const cli_out moon = layout({"transfer", pf.string(), df.string(), "--prompt-len", "131072", "--mooncake"});
  ASSERT_EQ(moon.code, 0) << moon.err;
  EXPECT_EQ(ojson::parse(moon.out)["batches"][0]["requests"][0]["opcode"], "WRITE");
  // TP 8 -> TP 4: each decode TP rank reads from prefill rank 2 x its rank.
  const cli_out d4 = layout({"describe", "--preset", "v4-flash", "--engine", "vllm", "--tp", "4"});
  const fs::path d4f = write_temp("d4.json", d4.out);
  const ojson q = ojson::parse(layout({"transfer", pf.string(), d4f.string(), "--prompt-len", "4096", "--json"}).out);
  ASSERT_EQ(q["pairs"].size(), 4U);
  EXPECT_EQ(q["pairs"][3]["src_rank"], 6);
  EXPECT_EQ(q["pairs"][3]["dst_rank"], 3);
}

TEST(TransferCli, RefusalsAndBadInput) {
  const fs::path flash = write_temp("flash.json", layout({"describe", "--preset", "v4-flash", "--engine", "vllm"}).out);
  const fs::path pro = write_temp("pro.json", layout({"describe", "--preset", "v4-pro", "--engine", "vllm"}).out);
  const fs::path own = write_temp("own.json", layout({"describe", "--preset", "v4-flash"}).out);
  const cli_out other = layout({"transfer", flash.string(), pro.string(), "--prompt-len", "4096"});
  EXPECT_EQ(other.code, 1);
  EXPECT_NE(other.out.find("refused: the layouts cannot exchange pages: incompatible: engine block 1,002,240 B vs"),
            std::string::npos)
      << other.out;
  const cli_out lib = layout({"transfer", flash.string(), own.string(), "--prompt-len", "4096"});
  EXPECT_EQ(lib.code, 2);
  EXPECT_NE(lib.err.find("no engine placement"), std::string::npos) << lib.err;
  EXPECT_EQ(layout({"transfer", flash.string(), flash.string(), "--prompt-len", "0"}).code, 2);
  // A block table shorter than the prompt, and a block id outside the pool, name the value.
  const ojson d = ojson::parse(layout({"describe", "--preset", "v4-flash", "--engine", "vllm"}).out);
  std::vector<transfer_table> tables;
  transfer_pool pool;
  dsv4::tools::transfer_detail::tables_of(d, "flash", tables, pool);
  const auto ids = vllm_dry_run_blocks(tables, 300);
  const fs::path blocks = write_temp("blocks.json", ojson{{"prefill", ids}, {"decode", ids}}.dump());
  const cli_out longer =
      layout({"transfer", flash.string(), flash.string(), "--prompt-len", "600", "--blocks", blocks.string()});
  EXPECT_EQ(longer.code, 2);
  EXPECT_NE(longer.err.find("entries, but a prompt of this length needs"), std::string::npos) << longer.err;
  auto far = ids;
  far[2][0] = pool.num_blocks;
  const fs::path bad = write_temp("bad.json", ojson{{"prefill", far}, {"decode", ids}}.dump());
  const cli_out outside =
      layout({"transfer", flash.string(), flash.string(), "--prompt-len", "300", "--blocks", bad.string()});
  EXPECT_EQ(outside.code, 2);
  EXPECT_NE(outside.err.find("block id " + std::to_string(pool.num_blocks) + " at entry 0 is outside the pool"),
            std::string::npos)
      << outside.err;
  const cli_out given =
      layout({"transfer", flash.string(), flash.string(), "--prompt-len", "300", "--blocks", blocks.string()});
  EXPECT_EQ(given.code, 0) << given.err;
  // One table fewer than the layout's groups; an id past 2^63 - 1 (never wrapped to a negative one).
  auto fewer = ids;
  fewer.pop_back();
  const cli_out short_list =
      layout({"transfer", flash.string(), flash.string(), "--prompt-len", "300", "--blocks",
              write_temp("fewer.json", ojson{{"prefill", fewer}, {"decode", ids}}.dump()).string()});
  EXPECT_EQ(short_list.code, 2);
  EXPECT_NE(short_list.err.find(fmt::format("{} prefill and {} decode tables given, the layout has {} engine groups",
                                            fewer.size(), ids.size(), ids.size())),
            std::string::npos)
      << short_list.err;
  EXPECT_NE(short_list.err.find("(--blocks "), std::string::npos) << short_list.err;
  const fs::path huge = write_temp("huge.json", R"({"prefill": [[18446744073709551615]], "decode": [[1]]})");
  const cli_out wrapped =
      layout({"transfer", flash.string(), flash.string(), "--prompt-len", "300", "--blocks", huge.string()});
  EXPECT_EQ(wrapped.code, 2);
  EXPECT_NE(wrapped.err.find("block id 18446744073709551615 is not an integer in [0, 2^63)"), std::string::npos)
      << wrapped.err;
  EXPECT_TRUE(wrapped.out.empty()) << wrapped.out;
}

}  // namespace

namespace {

// What a hand-edited or foreign descriptor, or a request the pool cannot hold, gets: a refusal
// (exit 1) when the sliding windows differ (the pages are the same bytes, the tokens kept are
// not), else exit 2 naming the value, and nothing on stdout.
TEST(TransferCli, WindowsInfoPromptsAndDuplicates) {
  const ojson p = describe_json({"--preset", "v4-flash", "--engine", "vllm", "--tp", "8"});
  const ojson d = describe_json({"--preset", "v4-flash", "--engine", "vllm", "--dp", "8"});
  const fs::path pf = write_temp("w-p.json", p.dump());
  const fs::path df = write_temp("w-d.json", d.dump());
  // A V4-Flash config with a 256-token sliding window (the model's, in info.windows).
  ojson cfg = ojson::parse(std::ifstream(fs::path(DSV4_TEST_DATA_DIR) / "deepseek-v4-flash.config.json"));
  cfg["sliding_window"] = 256;
  const fs::path dir = dsv4::cache::testing::unique_temp_path("transfer-w256");
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << cfg.dump();
  const fs::path wide =
      write_temp("w-wide.json", layout({"describe", "--config", dir.string(), "--engine", "vllm", "--dp", "8"}).out);
  fs::remove_all(dir);
  const cli_out refused = layout({"transfer", pf.string(), wide.string(), "--prompt-len", "1000"});
  EXPECT_EQ(refused.code, 1) << refused.err;
  EXPECT_NE(refused.out.find("incompatible: sliding window of v4.swa_kv: 128 vs 256 tokens (info.windows)"),
            std::string::npos)
      << refused.out;
  const cli_out diff = layout({"diff", pf.string(), wide.string()});
  EXPECT_EQ(diff.code, 1);
  EXPECT_EQ(diff.out.rfind("incompatible: sliding window of v4.swa_kv: 128 vs 256 tokens", 0), 0U) << diff.out;
  // info fields of the wrong type or out of range name the file, the key and the value.
  const auto edited = [&](const std::string& name, const auto& edit) {
    ojson x = p;
    edit(x);
    const cli_out r = layout({"transfer", write_temp(name, x.dump()).string(), df.string(), "--prompt-len", "1000"});
    EXPECT_EQ(r.code, 2) << name << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    return r.err;
  };
  EXPECT_NE(
      edited("model.json", [](ojson& x) { x["info"]["model"] = nullptr; }).find("info.model: null is not a string"),
      std::string::npos);
  EXPECT_NE(edited("tp.json", [](ojson& x) { x["info"]["parallel"]["tp"] = INT64_MAX; })
                .find("info.parallel.tp: 9223372036854775807 is outside [1, 1048576]"),
            std::string::npos);
  EXPECT_NE(edited("win.json", [](ojson& x) { x["info"]["windows"]["v4.swa_kv"] = "x"; })
                .find("info.windows.v4.swa_kv: \"x\" is not a window"),
            std::string::npos);
  EXPECT_NE(edited("nb.json", [](ojson& x) { x["info"]["num_blocks"] = INT64_MAX; }).find("is past 2^63 - 1 bytes"),
            std::string::npos);
  // A prompt longer than the deployment's context (max_model_len), and a pool too small for it.
  const cli_out longer = layout({"transfer", pf.string(), df.string(), "--prompt-len", "4294967296"});
  EXPECT_EQ(longer.code, 2);
  EXPECT_NE(longer.err.find("--prompt-len 4294967296 is longer than the context, 1048576 tokens (info.context_tokens"),
            std::string::npos)
      << longer.err;
  ojson small = d;
  small["info"]["num_blocks"] = 100;
  const cli_out full =
      layout({"transfer", pf.string(), write_temp("small.json", small.dump()).string(), "--prompt-len", "65536"});
  EXPECT_EQ(full.code, 2);
  EXPECT_NE(full.err.find("--prompt-len 65536: a fresh pool cannot hold the request"), std::string::npos) << full.err;
  EXPECT_NE(full.err.find("holds [0, 100)"), std::string::npos) << full.err;
  // One block id in two entries of one side; a FIFO as --blocks.
  std::vector<transfer_table> tables;
  transfer_pool pool;
  dsv4::tools::transfer_detail::tables_of(p, "p", tables, pool);
  auto ids = vllm_dry_run_blocks(tables, 1000);
  auto twice = ids;
  twice.back().back() = ids.front().back();
  const cli_out dup = layout({"transfer", pf.string(), df.string(), "--prompt-len", "1000", "--blocks",
                              write_temp("dup.json", ojson{{"prefill", ids}, {"decode", twice}}.dump()).string()});
  EXPECT_EQ(dup.code, 2);
  EXPECT_NE(dup.err.find(fmt::format("decode block tables: block id {} is at entry", ids.front().back())),
            std::string::npos)
      << dup.err;
  EXPECT_NE(dup.err.find("one id holds one page of one request"), std::string::npos) << dup.err;
  const fs::path fifo = dsv4::cache::testing::unique_temp_path("transfer-fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const cli_out pipe =
      layout({"transfer", pf.string(), df.string(), "--prompt-len", "1000", "--blocks", fifo.string()});
  fs::remove(fifo);
  EXPECT_EQ(pipe.code, 2);
  EXPECT_NE(pipe.err.find("not a regular file"), std::string::npos) << pipe.err;
}

TEST(TransferCli, PipelineStagesDcpShardsAndDraftLayers) {
  // PP 2 on both sides: stage 1 of each holds the same layers; its pairs are stage 1's ranks.
  const auto describe_file = [](const std::string& name, const std::vector<std::string>& flags,
                                const std::string& preset = "v4-flash") {
    std::vector<std::string> args = {"describe", "--preset", preset, "--engine", "vllm"};
    args.insert(args.end(), flags.begin(), flags.end());
    const cli_out r = layout(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return write_temp(name, r.out);
  };
  const fs::path p1 = describe_file("pp-p1.json", {"--pp", "2", "--tp", "2", "--rank", "2"});
  const fs::path d1 = describe_file("pp-d1.json", {"--pp", "2", "--rank", "1"});
  const fs::path d0 = describe_file("pp-d0.json", {"--pp", "2", "--rank", "0"});
  const cli_out same = layout({"transfer", p1.string(), d1.string(), "--prompt-len", "4096", "--json"});
  ASSERT_EQ(same.code, 0) << same.err << same.out;
  const ojson j = ojson::parse(same.out);
  ASSERT_EQ(j["pairs"].size(), 1U);
  EXPECT_EQ(j["pairs"][0]["src_rank"], 2);  // dp 0, stage 1, tp rank 0 of tp 2
  EXPECT_EQ(j["pairs"][0]["dst_rank"], 1);  // dp 0, stage 1, tp 1
  const cli_out other = layout({"transfer", p1.string(), d0.string(), "--prompt-len", "4096"});
  EXPECT_EQ(other.code, 1);
  EXPECT_NE(other.out.find("refused:"), std::string::npos) << other.out;
  // DCP shards that differ are refused: a block moves whole (V3.2: vLLM refuses DCP for V4).
  const fs::path dcp = describe_file("dcp.json", {"--tp", "4", "--dcp", "2", "--rank", "1"}, "v3.2");
  const fs::path tp4 = describe_file("tp4.json", {"--tp", "4", "--rank", "1"}, "v3.2");
  const cli_out shards = layout({"transfer", tp4.string(), dcp.string(), "--prompt-len", "4096"});
  EXPECT_EQ(shards.code, 1) << shards.err;
  EXPECT_NE(shards.out.find("refused:"), std::string::npos) << shards.out;
  // The MTP (draft) layers' pages move with their groups: the proof holds with them cached.
  const ojson m = describe_json({"--preset", "v4-flash", "--engine", "vllm", "--mtp"});
  std::vector<transfer_table> tables;
  transfer_pool pool;
  dsv4::tools::transfer_detail::tables_of(m, "mtp", tables, pool);
  const auto pages = pages_of(m);
  for (const std::int64_t prompt : {129, 1000, 1025}) {
    const auto pre = vllm_dry_run_blocks(tables, prompt);
    const transfer_blocks ids{pre, reversed_ids(pre)};
    const transfer_manifest t = vllm_transfer_manifest(tables, pool, pool, ids, prompt, 0);
    EXPECT_EQ(decode_mismatch(tables, pages, pool.block_bytes, ids, prompt, 0, t.ranges), "") << prompt;
  }
}

}  // namespace

namespace {

TEST(TransferTokenspeed, FlashAt131072TokensIsTheHandSum) {
  // tokenspeed sends the pages [prefix / G, ceil(P / G)) of a group, a sliding one from
  // (P - W + 1) / G; one range per field (tensor x layer) and page of the field's payload.
  // V4-Flash, tokenspeed 0.1.1 (MTP cached: 43 SWA layers): SWA 2048 - 130945 / 64 = 2 pages x 43
  // x 37,440; c4 states 2 x 21 x 32,768; CSA KV 512 x 21 x 37,440; index keys 512 x 21 x 8,448;
  // c128 states 16 x 20 x 32,768; HCA KV 512 x 20 x 1,728; c4 index states 2 x 21 x 8,192.
  const cli_out p = layout({"describe", "--preset", "v4-flash", "--engine", "tokenspeed"});
  ASSERT_EQ(p.code, 0) << p.err;
  const fs::path pf = write_temp("ts.json", p.out);
  const cli_out j = layout({"transfer", pf.string(), pf.string(), "--prompt-len", "131072", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const ojson m = ojson::parse(j.out);
  EXPECT_EQ(m["connector"], "tokenspeed-mooncake");
  const std::uint64_t want = 2ULL * 43 * 37'440 + 2ULL * 21 * 32'768 + 512ULL * 21 * 37'440 + 512ULL * 21 * 8'448 +
                             16ULL * 20 * 32'768 + 512ULL * 20 * 1'728 + 2ULL * 21 * 8'192;
  EXPECT_EQ(m["bytes_moved"], want);
  EXPECT_EQ(m["ranges_before_merge"], 2 * 43 + 2 * 21 + 512 * 21 + 512 * 21 + 16 * 20 + 512 * 20 + 2 * 21);
  EXPECT_EQ(m["groups"][0]["first_entry"], 2046);  // vLLM's clip starts at 2045
  // tokenspeed and vLLM never pair.
  const fs::path vf = write_temp("v.json", layout({"describe", "--preset", "v4-flash", "--engine", "vllm"}).out);
  EXPECT_EQ(layout({"transfer", pf.string(), vf.string(), "--prompt-len", "4096"}).code, 1);
}

/// Page ids of the dry run with the groups given parents in reverse order (another packing of
/// the same request): ids differ from the forward dry run's.
std::vector<std::vector<std::int64_t>> reversed_group_pages(const std::vector<transfer_table>& tables,
                                                            const std::vector<std::int64_t>& packing,
                                                            std::int64_t prompt) {
  std::vector<transfer_table> rt(tables.rbegin(), tables.rend());
  std::vector<std::int64_t> rk(packing.rbegin(), packing.rend());
  auto ids = tokenspeed_dry_run_pages(rt, rk, prompt);
  std::reverse(ids.begin(), ids.end());
  return ids;
}

TEST(TransferProof, TokenspeedDecodeReadsPrefillsBytesAcrossPackings) {
  // The two sides' arenas hold different parent counts (32 and 27): every plane's offset
  // differs, as tokenspeed allows (the contract compares no offset). Decode's reads are checked
  // through the library's arena (arena_layout.hpp: engines/tokenspeed/arena.hpp), not through
  // the descriptor the transfer reads.
  for (const char* engine : {"tokenspeed", "tokenspeed@f4d8ec6e"}) {
    for (const char* preset : {"v4-flash", "v4-pro"}) {
      const ojson d = describe_json({"--preset", preset, "--engine", engine, "--context", "8192", "--mtp"});
      ojson dp = d;
      ojson dd = d;
      dp["info"]["num_blocks"] = 32;
      dd["info"]["num_blocks"] = 27;
      std::vector<transfer_table> tables;
      dsv4::tools::transfer_side sp;
      dsv4::tools::transfer_side sd;
      dsv4::tools::transfer_detail::tables_of(dp, "prefill", tables, sp);
      dsv4::tools::transfer_detail::tables_of(dd, "decode", tables, sd);
      const engine_spec& e = *find_engine(engine);
      plan_options o;
      o.context_tokens = 8192;
      o.policy = e.policy;
      o.vllm_pools = e.vllm;
      o.sglang_pools = e.sglang;
      o.tokenspeed_pools = e.tokenspeed;
      o.pools = pools_choice::engine;
      o.cache_mtp = true;  // as --mtp
      const model_config& c = std::string(preset) == "v4-pro" ? deepseek_v4_pro : deepseek_v4_flash;
      memory_plan pp = build_memory_plan(c, o);
      memory_plan pd = pp;
      pp.arena_units = 32;
      pd.arena_units = 27;
      const arena_layout ap = build_arena_layout(c, pp);
      const arena_layout ad = build_arena_layout(c, pd);
      ASSERT_EQ(static_cast<std::size_t>(pp.pools.num_groups), tables.size());
      std::uint64_t src_bytes = 0;
      std::uint64_t dst_bytes = 0;
      for (int i = 0; i < ap.num_regions; ++i) {
        const pool_region a = ap.region(i);
        const pool_region b = ad.find(ap.plan.groups[static_cast<std::size_t>(a.group)].spec.id, a.layer, a.pool);
        src_bytes = std::max(src_bytes, a.offset_bytes + static_cast<std::uint64_t>(a.num_pages * a.page_stride));
        dst_bytes = std::max(dst_bytes, b.offset_bytes + static_cast<std::uint64_t>(b.num_pages * b.page_stride));
      }
      std::vector<std::uint8_t> src(src_bytes);
      std::vector<std::uint8_t> fresh(dst_bytes);  // decode's arena before the transfer
      std::mt19937_64 rng(src_bytes);
      for (auto* v : {&src, &fresh})
        for (std::size_t i = 0; i + 8 <= v->size(); i += 8) {
          const std::uint64_t w = rng();
          std::memcpy(v->data() + i, &w, 8);
        }
      for (const std::int64_t prompt : {1, 4, 5, 63, 64, 65, 129, 255, 256, 257, 1000, 1025}) {
        for (const std::int64_t prefix : {std::int64_t{0}, std::int64_t{256}}) {
          if (prefix >= prompt) continue;
          const transfer_blocks ids{tokenspeed_dry_run_pages(tables, sp.packing, prompt),
                                    reversed_group_pages(tables, sd.packing, prompt)};
          const transfer_manifest m = tokenspeed_transfer_manifest(tables, sp.fields, sd.fields, ids, prompt, prefix);
          const std::string where =
              std::string(engine) + " " + preset + " P=" + std::to_string(prompt) + " prefix=" + std::to_string(prefix);
          std::vector<std::uint8_t> dst = fresh;
          // Decode holds the prefix already: its pages of every field.
          const auto page_of = [](const pool_region& r, std::int64_t id) {
            return r.offset_bytes + static_cast<std::uint64_t>(id * r.page_stride);
          };
          for (int i = 0; i < ap.num_regions; ++i) {
            const pool_region a = ap.region(i);
            const pool_region b = ad.find(ap.plan.groups[static_cast<std::size_t>(a.group)].spec.id, a.layer, a.pool);
            const auto k = static_cast<std::size_t>(a.engine_group);
            for (std::int64_t en = 0; en < prefix / tables[k].block_tokens; ++en)
              std::memcpy(&dst[page_of(b, ids.decode[k][static_cast<std::size_t>(en)])],
                          &src[page_of(a, ids.prefill[k][static_cast<std::size_t>(en)])],
                          static_cast<std::size_t>(a.page_bytes));
          }
          for (const transfer_range& r : m.ranges) {
            ASSERT_LE(r.src_offset + r.length, src_bytes) << where;
            ASSERT_LE(r.dst_offset + r.length, dst_bytes) << where;
            std::memcpy(&dst[r.dst_offset], &src[r.src_offset], r.length);
          }
          for (int i = 0; i < ap.num_regions; ++i) {
            const pool_region a = ap.region(i);
            const pool_region b = ad.find(ap.plan.groups[static_cast<std::size_t>(a.group)].spec.id, a.layer, a.pool);
            const auto k = static_cast<std::size_t>(a.engine_group);
            const transfer_table& t = tables[k];
            const std::int64_t first_token = t.sliding ? std::max<std::int64_t>(0, prompt - t.window_tokens + 1) : 0;
            for (std::int64_t en = first_token / t.block_tokens; en * t.block_tokens < prompt; ++en) {
              const std::uint64_t s = page_of(a, ids.prefill[k][static_cast<std::size_t>(en)]);
              const std::uint64_t x = page_of(b, ids.decode[k][static_cast<std::size_t>(en)]);
              ASSERT_EQ(std::memcmp(&dst[x], &src[s], static_cast<std::size_t>(a.page_bytes)), 0)
                  << where << " " << t.name << " layer " << a.layer << " pool " << a.pool << " entry " << en;
            }
          }
        }
      }
    }
  }
}

}  // namespace
