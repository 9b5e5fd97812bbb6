// Prints weights.hpp's figures for a config.json as one JSON object, for tests/oracle/weights_oracle.py:
// the checkpoint's bytes and tensor count, and the fullest rank's bytes for a fixed list of layouts.
// Usage: weights_dump CONFIG.json
#include <cstdio>
#include <exception>

#include <nlohmann/json.hpp>

#include "dsv4/cache/config_json.hpp"
#include "dsv4/cache/weights.hpp"

int main(int argc, char** argv) {
  using namespace dsv4::cache;
  if (argc != 2) {
    std::fputs("usage: weights_dump CONFIG.json\n", stderr);
    return 2;
  }
  try {
    const model_config c = load_model_config(argv[1]);
    const checkpoint_totals t = checkpoint_weight_totals(c);
    nlohmann::json out{{"bytes", t.bytes}, {"tensors", t.tensors}, {"mtp_bytes", t.mtp_bytes}};
    struct layout {
      const char* engine;
      weight_engine e;
      engine_parallel p;
    };
    const auto par = [](int tp, int dp, int ep, int pp, bool dpa, bool mtp) {
      engine_parallel p;
      p.tp = tp;
      p.dp = dp;
      p.ep = ep;
      p.pp = pp;
      p.dp_attention = dpa;
      p.mtp_loaded = mtp;
      return p;
    };
    const layout layouts[] = {
        {"vllm", weight_engine::vllm, par(1, 1, 1, 1, false, false)},
        {"vllm", weight_engine::vllm, par(8, 1, 1, 1, false, false)},
        {"vllm", weight_engine::vllm, par(8, 1, 8, 1, false, true)},
        {"vllm", weight_engine::vllm, par(2, 4, 8, 1, false, false)},
        {"vllm", weight_engine::vllm, par(4, 1, 1, 2, false, true)},
        {"vllm", weight_engine::vllm, par(2, 1, 1, 3, false, false)},
        {"sglang", weight_engine::sglang, par(8, 8, 8, 1, true, false)},
        {"sglang", weight_engine::sglang, par(8, 1, 1, 1, false, true)},
        {"sglang", weight_engine::sglang, par(8, 2, 4, 2, true, false)},
        {"tokenspeed", weight_engine::tokenspeed, par(4, 1, 4, 1, false, false)},
    };
    for (const layout& l : layouts) {
      const weight_sharding s = weight_sharding_for(l.e, l.p);
      out["layouts"].push_back({{"engine", l.engine},
                                {"tp", l.p.tp},
                                {"dp", l.p.dp},
                                {"ep", l.p.ep},
                                {"pp", l.p.pp},
                                {"dp_attention", l.p.dp_attention},
                                {"mtp", l.p.mtp_loaded},
                                {"max_rank_bytes", max_rank_weight_bytes(c, s)}});
    }
    std::puts(out.dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weights_dump: %s\n", e.what());
    return 2;
  }
}
