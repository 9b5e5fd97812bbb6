"""vLLM 0.33.0's KV cache grouping and sizing for DeepSeek V4, run unchanged (inside the release's
environment). Reads a JSON list of grid points on stdin, prints JSON results on stdout. Each point:
{"model": "v4-flash", "memory_gib": 64, "context": 131072, "max_num_seqs": 1024, "prefill_chunk": 8192,
"async": true}. The results are the last line of stdout (vLLM logs there too).

What runs unchanged (vllm-0.33.0 wheel):
  vllm.engine.arg_utils.EngineArgs(...).create_engine_config()     the VllmConfig, from the model's
      config.json (its own ModelConfig, DeepseekV4ForCausalLMConfig hooks, cache / scheduler config)
  the model's own KV-cache layer classes, constructed with the arguments DeepseekV4Attention,
      DeepseekCompressor and DeepseekV4Indexer pass them (vllm/models/deepseek_v4/attention.py,
      compressor.py; vllm/v1/attention/backends/mla/sparse_swa.py), and each one's
      get_kv_cache_spec(vllm_config): DeepseekV4SWACache, CompressorStateCache (attention and
      indexer compressors), DeepseekV4IndexerCache
  DeepseekV4Attention.get_kv_cache_spec (the compressed-KV MLAAttentionSpec), called on a namespace
      holding the four attributes it reads (compress_ratio, head_dim, kv_cache_dtype,
      kv_cache_torch_dtype; the dtypes from the release's _resolve_dsv4_kv_cache_dtype)
  vllm.v1.attention.backends.utils.resolve_kv_cache_layout over the layouts
      vllm.v1.worker.worker_base.get_current_attn_backends / get_supported_kv_cache_layouts report
  vllm.v1.core.kv_cache_planning.get_global_kv_cache_groups, get_kv_cache_configs,
  vllm.v1.core.kv_cache_utils.generate_scheduler_kv_cache_config, update_kv_cache_capacity (its
      "GPU KV cache size ... Maximum concurrency" line), in the order EngineCore._initialize_kv_caches
      calls them
What this driver constructs: the layer modules above (not the whole model: its linear layers need
the GPU kernels), the layer names model.layers.<i>.attn..., the FlashMLA sparse (fp8_ds_mla)
layout choice of Hopper, the block size 256 the V4 backends select (update_block_size_for_backend
needs the built model), and available memory = memory_gib GiB (what determine_available_memory
would profile).
"""
import json
import logging
import sys
import tempfile
import types
from pathlib import Path

import gpu_stubs

KERNEL_MODULES = ["vllm._C_stable_libtorch", "vllm._C", "vllm._moe_C", "vllm._moe_C_stable_libtorch",
                  "vllm.cumem_allocator", "vllm._flashmla_C", "vllm._flashmla_extension_C", "vllm._rocm_C",
                  "vllm.vllm_flash_attn", "vllm._deepselect_C", "vllm._flashkda_C", "vllm._qutlass_C",
                  "vllm.fs_io_C", "vllm.spinloop"]
gpu_stubs.install_kernel_modules(KERNEL_MODULES)
gpu_stubs.install_nvml()
gpu_stubs.install_kernel_queries()

import torch  # noqa: E402

from vllm.config import set_current_vllm_config  # noqa: E402
from vllm.engine.arg_utils import EngineArgs  # noqa: E402
from vllm.models.deepseek_v4 import attention as v4_attention  # noqa: E402
from vllm.models.deepseek_v4.compressor import CompressorStateCache  # noqa: E402
from vllm.v1.attention.backends.mla.sparse_swa import DeepseekV4SWACache  # noqa: E402
from vllm.v1.attention.backends.utils import resolve_kv_cache_layout  # noqa: E402
from vllm.v1.core import kv_cache_planning, kv_cache_utils  # noqa: E402
from vllm.v1.worker import worker_base  # noqa: E402

MODELS = Path(__file__).resolve().parent.parent / "models"
BLOCK_SIZE = 256


class LogLines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def layer_specs(vc, hf):
    """The per-layer specs, from the release's layer classes (see the module docstring)."""
    cache_config = vc.cache_config
    kv_dtype, kv_torch_dtype = v4_attention._resolve_dsv4_kv_cache_dtype(True, cache_config.cache_dtype,
                                                                         cache_config)
    head_dim, index_head_dim = hf.head_dim, hf.index_head_dim
    modules = {}
    specs = {}
    with set_current_vllm_config(vc):
        for i in range(hf.num_hidden_layers):
            ratio = max(1, hf.compress_rates.get(hf.layer_types[i], 0))  # as DeepseekV4Attention.__init__
            p = f"model.layers.{i}.attn"
            modules[f"{p}.swa_cache"] = DeepseekV4SWACache(head_dim=head_dim, window_size=hf.sliding_window,
                                                            dtype=kv_torch_dtype, prefix=f"{p}.swa_cache",
                                                            cache_config=cache_config)
            if ratio > 1:
                attn = types.SimpleNamespace(compress_ratio=ratio, head_dim=head_dim, kv_cache_dtype=kv_dtype,
                                             kv_cache_torch_dtype=kv_torch_dtype)
                specs[p] = v4_attention.DeepseekV4Attention.get_kv_cache_spec(attn, vc)
                coff = 1 + (ratio == 4)
                modules[f"{p}.compressor.state_cache"] = CompressorStateCache(
                    state_dim=2 * coff * head_dim, dtype=torch.float32, compress_ratio=ratio,
                    prefix=f"{p}.compressor.state_cache")
            if ratio == 4:
                quant_block = 128
                modules[f"{p}.indexer.k_cache"] = v4_attention.DeepseekV4IndexerCache(
                    head_dim=index_head_dim + index_head_dim // quant_block * 4, dtype=torch.uint8,
                    prefix=f"{p}.indexer.k_cache", cache_config=cache_config, compress_ratio=ratio)
                modules[f"{p}.indexer.compressor.state_cache"] = CompressorStateCache(
                    state_dim=2 * 2 * index_head_dim, dtype=torch.float32, compress_ratio=ratio,
                    prefix=f"{p}.indexer.compressor.state_cache")
        for name, m in modules.items():
            specs[name] = m.get_kv_cache_spec(vc)
    return specs


def run_point(point, model_dir, log):
    args = EngineArgs(model=str(model_dir), skip_tokenizer_init=True, load_format="dummy",
                      max_model_len=point["context"], max_num_seqs=point["max_num_seqs"], block_size=BLOCK_SIZE,
                      max_num_batched_tokens=point["prefill_chunk"],
                      async_scheduling=point["async"])
    vc = args.create_engine_config()
    specs = [layer_specs(vc, vc.model_config.hf_config)]
    available = [int(point["memory_gib"] * 2**30)]
    log.lines.clear()
    logging.getLogger("vllm").addHandler(log)  # after vLLM's own logging configuration
    with set_current_vllm_config(vc):
        # As EngineCore: the layout the workers' backends support (Worker.get_supported_kv_cache_layouts).
        backends = worker_base.get_current_attn_backends(vc)
        layouts = [layout.name for layout in worker_base.get_supported_kv_cache_layouts(backends)]
        resolve_kv_cache_layout(vc, [layouts], [s for w in specs for s in w.values()])
        groups = kv_cache_planning.get_global_kv_cache_groups(vc, specs)
        try:
            configs = kv_cache_planning.get_kv_cache_configs(vc, specs, available, groups)
        except ValueError as e:
            return {"starts": False, "error": str(e).splitlines()[0]}
        sched = kv_cache_utils.generate_scheduler_kv_cache_config(configs)
        kv_cache_utils.update_kv_cache_capacity(vc, sched)
    cfg = configs[0]
    return {
        "starts": True,
        "num_blocks": cfg.num_blocks,
        "bytes_per_block": sorted({t.size // cfg.num_blocks for t in cfg.kv_cache_tensors}),
        "num_tensors": len(cfg.kv_cache_tensors),
        "num_groups": len(cfg.kv_cache_groups),
        "group_block_sizes": [g.kv_cache_spec.block_size for g in cfg.kv_cache_groups],
        "group_page_bytes": [g.kv_cache_spec.page_size_bytes for g in cfg.kv_cache_groups],
        "kv_cache_size_tokens": vc.cache_config.kv_cache_size_tokens,
        "max_concurrency": vc.cache_config.kv_cache_max_concurrency,
        "log_lines": [line for line in log.lines if "KV cache size" in line],
    }


def main():
    points = json.load(sys.stdin)
    log = LogLines()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for p in points:
            d = Path(tmp) / p["model"]
            d.mkdir(exist_ok=True)
            (d / "config.json").write_text((MODELS / f"{p['model']}.json").read_text())
            try:
                results.append(run_point(p, d, log))
            except Exception as e:  # reported, not hidden
                import traceback
                traceback.print_exc(file=sys.stderr)
                results.append({"error": f"{type(e).__name__}: {e}"})
    print()  # vLLM logs on stdout: the results are the last line
    json.dump({"results": results, "kernel_stubs_touched": gpu_stubs.kernel_names_touched(),
               "stubs": gpu_stubs.STUBS + gpu_stubs.KERNEL_MODULES}, sys.stdout)


if __name__ == "__main__":
    main()
