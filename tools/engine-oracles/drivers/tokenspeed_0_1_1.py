"""tokenspeed 0.1.1's DeepSeek V4 cache recipe, run unchanged when it imports (inside one of the
release's environments: one per tokenspeed-scheduler version tried). Reads a JSON list of grid
points on stdin ({"model": "v4-flash", "memory_gib": 16}); the results are the last line of stdout.

What it would run unchanged: tokenspeed.runtime.layers.attention.kv_cache.recipes.deepseek_v4.
DeepseekV4Recipe(...).groups() / .packing() / pack() (the parent bytes) and .setup() (the token
capacity, from the compiled tokenspeed_scheduler.CapacityModel). What it constructs: the recipe's
inputs (server_args, model_config with the model's config.json, attn_config with dcp_size 1, no
draft, the budget). First it reports what imports: the scheduler (and whether it has
CacheGroupFamily, which 0.1.1's scheduler bridge imports), then the recipe module, whose import of
tokenspeed_kernel (the kernel wheel) pulls in its Triton fork and the CUTLASS DSL.
"""
import json
import sys
import traceback
import types
from pathlib import Path

import gpu_stubs  # noqa: F401  (the GPU queries, installed by boot/sitecustomize.py)

MODELS = Path(__file__).resolve().parent.parent / "models"


def last_error():
    return traceback.format_exc().strip().splitlines()[-1]


def main():
    points = json.load(sys.stdin)
    out = {"imports": {}, "results": []}
    try:
        import tokenspeed_scheduler
        out["imports"]["tokenspeed_scheduler"] = "ok"
        out["imports"]["CacheGroupFamily"] = hasattr(tokenspeed_scheduler, "CacheGroupFamily")
    except Exception:
        out["imports"]["tokenspeed_scheduler"] = last_error()
    try:
        from tokenspeed.runtime.layers.attention.kv_cache.recipes.deepseek_v4 import DeepseekV4Recipe
        from tokenspeed.runtime.layers.attention.kv_cache.recipes.plan import pack
        out["imports"]["recipe"] = "ok"
    except Exception:
        out["imports"]["recipe"] = last_error()
        print()
        print(json.dumps(out))
        return
    for p in points:
        try:
            hf = types.SimpleNamespace(**json.loads((MODELS / f"{p['model']}.json").read_text()))
            recipe = DeepseekV4Recipe(
                server_args=types.SimpleNamespace(speculative_algorithm=None, attention_use_fp4_indexer_cache=None),
                model_config=types.SimpleNamespace(hf_config=hf), attn_config=types.SimpleNamespace(dcp_size=1),
                draft_model_config=None, draft_attn_config=None, cache_budget_bytes=int(p["memory_gib"] * 2**30),
                probe_batch_rows=None, decode_input_tokens=1, overlap_schedule_depth=1)
            groups = recipe.groups()
            layout = pack(groups, prefix_granularity=recipe.prefix_granularity,
                          cache_blocks_per_lcm_block=recipe.packing(groups), alignment=recipe.alignment,
                          max_padding_fraction=recipe.max_padding_fraction)
            res = {"parent_bytes": layout.lcm_block_bytes}
            try:
                res["token_capacity"] = recipe.setup().spec.token_capacity
            except Exception:
                res["token_capacity_error"] = last_error()
            out["results"].append(res)
        except Exception:
            out["results"].append({"error": last_error()})
    print()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
