// Fuzz target: the HF config.json loader. Bytes -> parse_model_config -> build_memory_plan
// (and the budget searches). The loader must either return a config the core accepts as is
// or throw config_error; the plan must satisfy its definition or throw std::invalid_argument.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dsv4/cache/config_json.hpp"
#include "dsv4/cache/weights.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dsv4::cache;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  model_config c;
  try {
    c = parse_model_config(text, "fuzz");
  } catch (const config_error&) {
    return 0;  // the only clean rejection of the loader (a plain invalid_argument is a bug)
  }
  // An accepted config is valid: its schedule builds, and it names itself.
  const layer_schedule s = build_layer_schedule(c);
  DSV4_FUZZ_CHECK(s.num_layers == c.num_layers() && c.name.view() == "fuzz");

  plan_options o;  // defaults: the model's whole context, 1 request, FP8 indexer
  (void)dsv4::fuzz::checked_plan(c, o);
  o.context_tokens = c.max_position_embeddings < 65'536 ? c.max_position_embeddings : 65'536;
  o.indexer = indexer_format::mxfp4;
  o.cache_mtp = false;
  o.requests = 3;
  (void)dsv4::fuzz::checked_plan(c, o);
  // The weight fields (issue 42): a count, or an overflow named as such; a rank never holds more
  // than the checkpoint plus the replicated MTP layers.
  if (c.arch.known) {
    try {
      const checkpoint_totals t = checkpoint_weight_totals(c);
      DSV4_FUZZ_CHECK(t.bytes > 0 && t.tensors > 0 && t.mtp_bytes <= t.bytes);
      engine_parallel p;
      p.tp = 8;
      p.pp = c.num_hidden_layers >= 2 ? 2 : 1;
      p.mtp_loaded = true;
      const std::int64_t rank = max_rank_weight_bytes(c, weight_sharding_for(weight_engine::vllm, p));
      DSV4_FUZZ_CHECK(rank > 0 && rank <= t.bytes);
    } catch (const std::invalid_argument&) {  // a size past 64 bits: the documented error
    }
  }
  dsv4::fuzz::check_max_requests(c, o, std::uint64_t{80} << 30);
  dsv4::fuzz::check_max_context(c, o, std::uint64_t{80} << 30);
  return 0;
}
