// Fuzz target: the plan builder from fuzzed numbers. A model (layer counts, dims, window,
// max context, per-layer ratios), plan options (indexer, context, requests, tokens per step,
// prefill chunk, MTP) and a byte budget up to 2^64 - 1 go through build_memory_plan,
// max_requests_for_budget, max_context_for_budget, compute_block_budget and
// build_arena_layout, in the engine's pool structure (vLLM's shared block pool) or own pools.
// Each must return numbers that satisfy their definitions (checked in
// 128-bit arithmetic, fuzz_common.hpp) or throw std::invalid_argument.
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "dsv4/cache/arena_layout.hpp"
#include "fuzz_common.hpp"

namespace {
using namespace dsv4::cache;
using dsv4::fuzz::pick;
using dsv4::fuzz::u128;

constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

model_config fuzz_model(FuzzedDataProvider& fdp) {
  model_config c = fdp.ConsumeBool() ? deepseek_v4_flash : deepseek_v4_pro;
  if (fdp.ConsumeBool()) c.num_hidden_layers = pick<int>(fdp, {-1, 0, 1, 2, 43, 61, 255, 256, 257});
  if (fdp.ConsumeBool()) c.num_nextn_predict_layers = pick<int>(fdp, {-1, 0, 1, 2, 3});
  if (fdp.ConsumeBool()) c.head_dim = pick<int>(fdp, {-1, 0, 1, 64, 65, 128, 512, 576, 1 << 20});
  if (fdp.ConsumeBool()) c.qk_rope_head_dim = pick<int>(fdp, {-1, 0, 1, 63, 64, 448, 512});
  if (fdp.ConsumeBool()) c.index_head_dim = pick<int>(fdp, {-1, 0, 1, 32, 64, 96, 128, 256, 1 << 30});
  if (fdp.ConsumeBool()) c.sliding_window = pick<int>(fdp, {-1, 0, 1, 2, 8, 127, 128, 4096, 1 << 30});
  if (fdp.ConsumeBool())
    c.max_position_embeddings = pick<std::int64_t>(
        fdp, {-1, 0, 1, 2, 255, 256, 1'048'576, std::int64_t{1} << 40, std::int64_t{1} << 62, kI64Max});
  const std::int64_t n = std::int64_t{c.num_hidden_layers} + c.num_nextn_predict_layers;  // unvalidated: no int sum
  const int layers = n < 0 ? 0 : static_cast<int>(n > kMaxLayers ? kMaxLayers : n);
  if (fdp.ConsumeBool()) {
    for (int i = 0; i < layers; ++i)
      c.compress_ratios[static_cast<std::size_t>(i)] =
          fdp.ConsumeProbability<float>() < 0.01f ? fdp.ConsumeIntegral<int>() : pick<int>(fdp, {0, 1, 4, 128});
  }
  return c;
}

plan_options fuzz_options(FuzzedDataProvider& fdp) {
  plan_options o;
  o.indexer = fdp.ConsumeBool() ? indexer_format::fp8 : indexer_format::mxfp4;
  o.context_tokens =
      pick<std::int64_t>(fdp, {-1, 0, 1, 2, 3, 127, 128, 129, 1000, 8192, 1'048'576, std::int64_t{1} << 40, kI64Max});
  o.requests = pick<std::int64_t>(fdp, {-1, 0, 1, 2, 64, std::int64_t{1} << 30, std::int64_t{1} << 40, kI64Max});
  o.tokens_per_step = pick<std::int64_t>(fdp, {-1, 0, 1, 2, 4, 5, 8, 1000, kI64Max});
  o.prefill_chunk_tokens = pick<std::int64_t>(fdp, {-1, 0, 1, 63, 64, 8192, kI64Max});
  o.cache_mtp = fdp.ConsumeBool();
  constexpr std::array<std::string_view, 3> kEngineNames{"vllm", "tokenspeed", "tokenspeed-default"};
  o.policy =
      policy_for(kEngineNames[static_cast<std::size_t>(fdp.ConsumeIntegralInRange<int>(0, 2))], fdp.ConsumeBool());
  o.pools = fdp.ConsumeBool() ? pools_choice::engine : pools_choice::own;
  return o;
}

/// The arena of a plan: regions in order, inside the arena, aligned, payload = plan bytes (an
/// engine's placement: exactly the plan's bytes, every page inside them, pages not overlapping).
void check_arena(const model_config& c, const memory_plan& p, std::uint64_t alignment) {
  const auto a = dsv4::fuzz::expect_clean([&] { return build_arena_layout(c, p, alignment); });
  if (!a) return;
  DSV4_FUZZ_CHECK(a->payload_bytes == p.total_bytes && a->total_bytes == a->payload_bytes + a->padding_bytes);
  if (a->engine_placed()) {
    DSV4_FUZZ_CHECK(a->total_bytes == p.total_bytes);
    for (int i = 0; i < a->num_regions; ++i) {
      const pool_region r = a->region(i);
      DSV4_FUZZ_CHECK(r.offset_bytes % 16 == 0 && r.page_bytes <= r.page_stride);
      DSV4_FUZZ_CHECK(static_cast<u128>(r.offset_bytes) + r.span_bytes() <= a->total_bytes);
    }
    return;
  }
  std::uint64_t prev_end = 0;
  for (int i = 0; i < a->num_regions; ++i) {
    const pool_region r = a->region(i);
    DSV4_FUZZ_CHECK(r.offset_bytes % a->alignment == 0 && r.offset_bytes >= prev_end);
    DSV4_FUZZ_CHECK(static_cast<u128>(r.offset_bytes) + r.padded_bytes <= a->total_bytes);
    DSV4_FUZZ_CHECK(r.bytes <= r.padded_bytes && r.padded_bytes - r.bytes < a->alignment);
    prev_end = r.offset_bytes + r.padded_bytes;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider fdp(data, size);
  const model_config c = fuzz_model(fdp);
  const plan_options o = fuzz_options(fdp);
  const std::uint64_t budget = pick<std::uint64_t>(
      fdp, {0, 1, std::uint64_t{80} << 30, std::uint64_t{141} << 30, std::uint64_t{1} << 63, kU64Max});

  dsv4::fuzz::set_context(c, o, budget);
  const auto plan = dsv4::fuzz::checked_plan(c, o);
  dsv4::fuzz::check_max_requests(c, o, budget);
  dsv4::fuzz::check_max_context(c, o, budget);
  // The arena lays out own pools; a shared block pool is refused cleanly (check_arena expects clean errors).
  if (plan) check_arena(c, *plan, pick<std::uint64_t>(fdp, {0, 15, 16, 100, 256, 4096, std::uint64_t{1} << 63}));

  // The seed's block budget, corrected: blocks per request = ceil(L / block).
  const std::int64_t block = pick<std::int64_t>(fdp, {-1, 0, 1, 4, 128, 256, 512, kI64Max});
  const std::int64_t headroom = pick<std::int64_t>(fdp, {-1, 0, 10, 100, kI64Max});
  const auto schema = dsv4::fuzz::expect_clean([&] { return build_model_schema(c, o.indexer, block); });
  if (schema) {
    const auto b =
        dsv4::fuzz::expect_clean([&] { return compute_block_budget(*schema, o.context_tokens, o.requests, headroom); });
    if (b) {
      const u128 bpr = (static_cast<u128>(o.context_tokens) + static_cast<u128>(block) - 1) / static_cast<u128>(block);
      DSV4_FUZZ_CHECK(static_cast<u128>(b->blocks_per_request) == bpr);
      const u128 raw = bpr * static_cast<u128>(o.requests);
      const u128 with_headroom = (raw * (100 + static_cast<u128>(headroom)) + 99) / 100;
      DSV4_FUZZ_CHECK(b->csa_blocks == 0 || static_cast<u128>(b->csa_blocks) == with_headroom);
      DSV4_FUZZ_CHECK(b->hca_blocks == 0 || static_cast<u128>(b->hca_blocks) == with_headroom);
      DSV4_FUZZ_CHECK(b->state_slots == o.requests);
    }
  }
  return 0;
}
