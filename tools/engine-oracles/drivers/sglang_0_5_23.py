"""SGLang 0.5.23's DeepSeek V4 pool sizing, run unchanged (inside the release's environment).

Reads a JSON list of grid points on stdin, prints a JSON list of results on stdout. Each point:
{"model": "v4-flash", "memory_gib": 64, "swa_full_tokens_ratio": 0.1, "max_running_requests": 256}.

What runs unchanged (sglang-0.5.23 wheel):
  sglang.srt.configs.model_config.ModelConfig(model_dir)            the model's config.json read by SGLang
  sglang.srt.runtime_context.get_context().override_server_args(...) publishes a ServerArgs(model_path="dummy")
      resolved by its own resolve_once(), with the operator's flags: --swa-full-tokens-ratio,
      --max-running-requests (the seed _swa_full_tokens_ratio_explicitly_set=True is what its CLI
      parser records when the flag is given)
  sglang.srt.model_executor.pool_configurator.create_memory_pool_configurator(kvc)
      -> DSV4PoolConfigurator(kvc).calculate_pool_sizes(available_bytes, page_size)
      -> .finalize_with_max_running_requests(config)
What this driver constructs: `kvc`, a namespace holding the inputs the configurator reads from
SGLang's KVCacheConfigurator (which needs a loaded model and a process group): the ModelConfig
above, page_size 256 (SGLang's DeepSeek V4 page), the layers [0, num_hidden_layers) (one pipeline
stage), sliding_window_size from the ModelConfig, attn_dp_size 1, pp_size 1, no speculative
algorithm, kv_cache_dtype_str "fp8_e4m3" (V4's resolved "auto"), is_hybrid_swa True (what
ModelRunner reports for V4). available_bytes is the planner's budget (memory_gib GiB).
The GPU kernel package sgl_kernel is stubbed (gpu_stubs.KERNEL_MODULES): imported, never called.
"""
import json
import logging
import sys
import types
from pathlib import Path

import gpu_stubs

gpu_stubs.install_kernel_modules(["sgl_kernel"])

from sglang.srt.configs.model_config import ModelConfig  # noqa: E402
from sglang.srt.model_executor import pool_configurator  # noqa: E402
from sglang.srt.model_executor.model_runner_components.layer_setup import ModelLayerInfo  # noqa: E402
from sglang.srt.runtime_context import get_context  # noqa: E402
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm  # noqa: E402

PAGE_SIZE = 256
MODELS = Path(__file__).resolve().parent.parent / "models"


class LogLines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def kv_cache_configurator(model_config):
    n = model_config.num_hidden_layers
    return types.SimpleNamespace(
        model_config=model_config,
        kv_cache_dtype_str="fp8_e4m3",
        page_size=PAGE_SIZE,
        layer_info=ModelLayerInfo(start_layer=0, end_layer=n, num_effective_layers=n),
        sliding_window_size=model_config.sliding_window_size,
        attn_dp_size=1,
        pp_size=1,
        pp_group=None,
        spec_algorithm=SpeculativeAlgorithm.NONE,
        spec_aux_config=None,
        is_draft_worker=False,
        is_hybrid_swa=True,
    )


def run_point(point, model_dirs, log):
    override = get_context().override_server_args(
        swa_full_tokens_ratio=point["swa_full_tokens_ratio"],
        max_running_requests=point["max_running_requests"],
        _swa_full_tokens_ratio_explicitly_set=True,
    )
    override.install()
    try:
        model_config = ModelConfig(str(model_dirs[point["model"]]))
        kvc = kv_cache_configurator(model_config)
        configurator = pool_configurator.create_memory_pool_configurator(kvc)
        available = int(point["memory_gib"] * 2**30)
        log.lines.clear()
        config = configurator.calculate_pool_sizes(available, PAGE_SIZE)
        config.max_running_requests = point["max_running_requests"]
        config = configurator.finalize_with_max_running_requests(config)
        return {
            "configurator": type(configurator).__name__,
            "bytes_per_full_token": configurator.bytes_per_full_token,
            "max_total_num_tokens": config.max_total_num_tokens,
            "full": config.full_max_total_num_tokens,
            "swa": config.swa_max_total_num_tokens,
            "c4": config.c4_max_total_num_tokens,
            "c128": config.c128_max_total_num_tokens,
            "c4_state": config.c4_state_pool_size,
            "c128_state": config.c128_state_pool_size,
            "log_lines": [line for line in log.lines if line.startswith("DSV4 ")],
        }
    finally:
        override.restore()


def main():
    import tempfile
    points = json.load(sys.stdin)
    log = LogLines()
    logging.getLogger("sglang.srt.model_executor.pool_configurator").addHandler(log)
    logging.getLogger("sglang.srt.model_executor.pool_configurator").setLevel(logging.INFO)
    with tempfile.TemporaryDirectory() as tmp:
        model_dirs = {}
        for name in {p["model"] for p in points}:
            d = Path(tmp) / name
            d.mkdir()
            (d / "config.json").write_text((MODELS / f"{name}.json").read_text())
            model_dirs[name] = d
        results = []
        for p in points:
            try:
                results.append(run_point(p, model_dirs, log))
            except Exception as e:  # reported, not hidden
                results.append({"error": f"{type(e).__name__}: {e}"})
    json.dump({"results": results, "kernel_stubs_touched": gpu_stubs.kernel_names_touched(),
               "stubs": gpu_stubs.STUBS + gpu_stubs.KERNEL_MODULES}, sys.stdout)


if __name__ == "__main__":
    main()
