#!/usr/bin/env python3
"""Makes one virtual environment per engine release under a cache folder, from the package index
(pip, nothing else): the release's wheel without its dependencies, the released torch, and only
the packages its sizing modules import; then checks that they import (the GPU kernel packages
answered by gpu_stubs.install_kernel_modules). run.py calls ensure() for each release it compares
(tokenspeed 0.1.1's environments are made by run.py itself, on top of the vLLM one).

  python3 tools/engine-oracles/env.py RELEASE [--cache DIR]     RELEASE: vllm@0.33.0, sglang@0.5.23

torch 2.14.0 from the package index is the CUDA 13 build: it imports on a machine without a GPU
when its CUDA libraries load; this machine's CUDA 13 toolkit (/usr/local/cuda-13.0) holds most of
them, the four it lacks (cuFile, cuSPARSELt, NVSHMEM, NCCL 2.30) are installed from the index.
Download: vLLM 0.34 GB, SGLang 0.04 GB, torch 0.55 GB, the CUDA libraries 0.45 GB.
"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

TORCH = ["torch==2.14.0", "nvidia-cusparselt-cu13==0.8.1", "nvidia-nvshmem-cu13==3.4.5", "nvidia-cufile==1.15.1.6",
         "nvidia-nccl-cu13==2.30.7"]
# What torch itself imports (its other requirements are the CUDA packages above or the toolkit's).
TORCH_DEPS = ["typing_extensions", "sympy", "filelock", "jinja2", "networkx", "fsspec", "numpy", "setuptools>=78.1.1,<81",
              "mpmath", "MarkupSafe"]
RELEASES = {
    "vllm@0.33.0": {
        "wheel": "vllm==0.33.0",
        "deps": ["transformers>=5.16.1,<5.21.0", "huggingface_hub>=1.31.0", "tokenizers>=0.23.2", "safetensors",
                 "pydantic", "cachetools", "psutil", "regex", "tqdm", "blake3", "py-cpuinfo", "msgspec", "pyzmq",
                 "cloudpickle", "pyyaml", "einops", "requests", "sentencepiece", "protobuf", "prometheus_client",
                 "partial-json-parser", "cbor2", "pybase64", "ijson", "setproctitle", "watchfiles",
                 "python-json-logger", "aiohttp", "multidict", "attrs", "yarl", "propcache", "aiosignal", "frozenlist",
                 "aiohappyeyeballs", "openai-harmony", "openai", "sniffio", "pillow", "uvloop", "xgrammar",
                 "apache-tvm-ffi", "fastapi", "starlette", "opentelemetry-api", "importlib-metadata", "zipp",
                 "llguidance", "compressed-tensors", "loguru", "packaging", "pydantic-core", "typing-inspection",
                 "annotated-types", "urllib3", "httpx2", "idna", "httpcore2", "truststore", "h11", "certifi",
                 "anyio", "annotated-doc"],
        "imports": "import vllm.v1.core.kv_cache_utils",
        "kernel_stubs": ["vllm._C_stable_libtorch", "vllm._C", "vllm._moe_C", "vllm._moe_C_stable_libtorch",
                         "vllm.cumem_allocator", "vllm._flashmla_C", "vllm._flashmla_extension_C", "vllm._rocm_C",
                         "vllm.vllm_flash_attn", "vllm._deepselect_C", "vllm._flashkda_C", "vllm._qutlass_C",
                         "vllm.fs_io_C", "vllm.spinloop"],
    },
    "sglang@0.5.23": {
        "wheel": "sglang==0.5.23",
        "deps": ["transformers>=5.16.1,<5.21.0", "huggingface_hub>=1.31.0", "pydantic", "psutil", "orjson", "triton",
                 "pillow", "starlette", "IPython", "aiohttp", "torchvision==0.29.2", "dill", "apache-tvm-ffi",
                 "compressed_tensors", "loguru", "gguf", "requests", "pyyaml", "pyzmq", "numpy", "tqdm", "msgspec",
                 "einops", "sentencepiece", "protobuf", "safetensors", "tokenizers", "pybase64", "cbor2", "partial-json-parser",
                 "setproctitle", "blake3", "cachetools", "regex", "py-cpuinfo", "ijson", "python-json-logger", "urllib3", "traitlets", "pygments", "httpx2", "httpcore2", "truststore", "multidict", "attrs", "yarl",
                 "propcache", "aiohappyeyeballs", "aiosignal", "frozenlist",
                 "certifi", "idna", "charset_normalizer", "packaging", "anyio", "sniffio", "h11", "httpx", "httpcore",
                 "annotated-types", "pydantic_core", "typing-inspection", "mpmath", "MarkupSafe", "hf-xet"],
        "imports": "import sglang.srt.model_executor.pool_configurator",
        "kernel_stubs": ["sgl_kernel"],
    },
}


def default_cache():
    return os.environ.get("DSV4_ORACLE_CACHE", str(Path.home() / ".cache" / "dsv4-engine-oracles"))


def venv_python(release, cache):
    return Path(cache) / release.replace("@", "-") / "bin" / "python"


def boot_env():
    """The environment a release's Python runs in: boot/ on PYTHONPATH (the GPU stubs, sitecustomize)."""
    boot = Path(__file__).resolve().parent / "boot"
    return dict(os.environ, PYTHONPATH=str(boot))


def ensure(release, cache, quiet=False):
    """Builds (or updates) the release's environment; returns (python, None) or (None, why not)."""
    r = RELEASES[release]
    py = venv_python(release, cache)
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(py.parent.parent)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"]
    out = subprocess.DEVNULL if quiet else None
    subprocess.run(pip + TORCH + TORCH_DEPS, check=True, stdout=out)
    subprocess.run(pip + [r["wheel"]] + r["deps"], check=True, stdout=out)
    check = f"import gpu_stubs; gpu_stubs.install_kernel_modules({r['kernel_stubs']!r}); {r['imports']}"
    p = subprocess.run([str(py), "-c", check], env=boot_env(), capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"its sizing modules do not import: {p.stderr.strip().splitlines()[-1]}"
    return py, None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("release", choices=sorted(RELEASES))
    ap.add_argument("--cache", default=default_cache())
    a = ap.parse_args()
    py, why = ensure(a.release, a.cache)
    if py is None:
        print(f"{a.release}: {why}")
        return 1
    print(f"{a.release}: {py.parent.parent} ready ({RELEASES[a.release]['imports']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
