"""The GPU and driver queries answered as one NVIDIA H200, and nothing else.

Every stub is listed here, in STUBS, and installed by install(); the engines' own code runs
unchanged on CPU (tensors on the meta device or the CPU). The figures are an H200's:
  torch.cuda.is_available()          -> True
  torch.cuda.device_count()          -> 1
  torch.cuda.current_device()        -> 0
  torch.cuda.get_device_name(...)    -> "NVIDIA H200"
  torch.cuda.get_device_capability() -> (9, 0)
  torch.cuda.get_device_properties() -> name, total_memory 150,109,880,320 B, major 9, minor 0,
                                        multi_processor_count 132
  torch.cuda.mem_get_info(...)       -> (total_memory, total_memory)
  torch.cuda.set_device(...)         -> no-op

and, where a driver asks for it (install_nvml), the NVML queries vLLM's platform detection makes
(vllm.third_party.pynvml, its copy of NVIDIA's pynvml), listed in NVML_STUBS, answered as the same H200;
and, where a driver asks for it (install_kernel_modules), the engines' GPU kernel packages, listed
in KERNEL_MODULES: importing one (or any submodule) gives a placeholder module whose every name is
a placeholder that raises when called; no sizing code calls one (kernel_names_touched() lists the
names the engine's imports looked up, for the report). Today: sgl_kernel (SGLang's kernel wheel,
which pool_configurator's imports reach through sglang.srt.layers.quantization).
"""
import importlib.abc
import importlib.machinery
import sys
import types

H200_NAME = "NVIDIA H200"
H200_TOTAL_MEMORY = 150_109_880_320
H200_CAPABILITY = (9, 0)
H200_SMS = 132

STUBS = [
    "torch.cuda.is_available",
    "torch.cuda.device_count",
    "torch.cuda.current_device",
    "torch.cuda.get_device_name",
    "torch.cuda.get_device_capability",
    "torch.cuda.get_device_properties",
    "torch.cuda.mem_get_info",
    "torch.cuda.set_device",
]


NVML_STUBS = [
    "pynvml.nvmlInit", "pynvml.nvmlShutdown", "pynvml.nvmlDeviceGetCount", "pynvml.nvmlDeviceGetHandleByIndex",
    "pynvml.nvmlDeviceGetHandleByUUID", "pynvml.nvmlDeviceGetIndex", "pynvml.nvmlDeviceGetCudaComputeCapability",
    "pynvml.nvmlDeviceGetName", "pynvml.nvmlDeviceGetUUID", "pynvml.nvmlDeviceGetMemoryInfo",
    "torch.cuda._device_count_nvml",
]
KERNEL_MODULES = []  # filled by install_kernel_modules()


# GPU capability queries that vLLM's config resolution asks its compiled kernels (torch.ops._C),
# answered as an H200 (SM 9.0) answers them.
KERNEL_QUERY_STUBS = {
    "torch.ops._C.cutlass_scaled_mm_supports_block_fp8": lambda capability: capability >= 90,
    "torch.ops._C.cutlass_scaled_mm_supports_fp8": lambda capability: capability >= 89,
    "torch.ops._C.cutlass_scaled_mm_supports_fp4": lambda capability: capability >= 100,
    "torch.ops._C.cutlass_group_gemm_supported": lambda capability: capability >= 90,
}


def install_kernel_queries():
    """Answers the capability queries named in KERNEL_QUERY_STUBS (and returns their names)."""
    import torch
    for name, fn in KERNEL_QUERY_STUBS.items():
        setattr(torch.ops._C, name.rsplit(".", 1)[1], fn)
    STUBS.extend(KERNEL_QUERY_STUBS)
    return list(KERNEL_QUERY_STUBS)


def install_nvml(module="vllm.third_party.pynvml"):
    """Replaces exactly the functions named in NVML_STUBS in `module` (vLLM 0.33.0 ships its own copy
    of NVIDIA's pynvml as vllm.third_party.pynvml), and returns their names."""
    import importlib
    import torch
    pynvml = importlib.import_module(module)
    uuid = "GPU-00000000-0000-0000-0000-000000000000"
    pynvml.nvmlInit = lambda *a, **k: None
    pynvml.nvmlShutdown = lambda: None
    pynvml.nvmlDeviceGetCount = lambda: 1
    pynvml.nvmlDeviceGetHandleByIndex = lambda index: index
    pynvml.nvmlDeviceGetHandleByUUID = lambda device_uuid: 0
    pynvml.nvmlDeviceGetIndex = lambda handle: 0
    pynvml.nvmlDeviceGetCudaComputeCapability = lambda handle: H200_CAPABILITY
    pynvml.nvmlDeviceGetName = lambda handle: H200_NAME
    pynvml.nvmlDeviceGetUUID = lambda handle: uuid
    pynvml.nvmlDeviceGetMemoryInfo = lambda handle: types.SimpleNamespace(total=H200_TOTAL_MEMORY,
                                                                          free=H200_TOTAL_MEMORY, used=0)
    torch.cuda._device_count_nvml = lambda: 1
    names = [n.replace("pynvml.", module + ".", 1) for n in NVML_STUBS]
    STUBS.extend(names)
    return names
_TOUCHED = set()


class _KernelPlaceholder:
    """A name in a stubbed kernel module: attributes give more placeholders; calling one raises."""

    def __init__(self, name):
        self._name = name
        _TOUCHED.add(name)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _KernelPlaceholder(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"GPU kernel stub {self._name} was called: the oracle must not run kernels")

    def __repr__(self):
        return f"<GPU kernel stub {self._name}>"


class _KernelModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _KernelPlaceholder(f"{self.__name__}.{attr}")


class _KernelFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, roots):
        self.roots = set(roots)

    def find_spec(self, name, path, target=None):
        if any(name == r or name.startswith(r + ".") for r in self.roots):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _KernelModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def install_kernel_modules(roots):
    """Answers imports of the GPU kernel packages `roots` (and their submodules) with placeholders."""
    KERNEL_MODULES.extend(f"{r} (GPU kernel package: import only)" for r in roots)
    sys.meta_path.insert(0, _KernelFinder(roots))


def kernel_names_touched():
    return sorted(_TOUCHED)


def _properties(device=None):
    return types.SimpleNamespace(name=H200_NAME, total_memory=H200_TOTAL_MEMORY, major=H200_CAPABILITY[0],
                                 minor=H200_CAPABILITY[1], multi_processor_count=H200_SMS, gcnArchName="",
                                 uuid="GPU-00000000-0000-0000-0000-000000000000", L2_cache_size=60 * 2**20)


def install():
    """Replaces exactly the functions named in STUBS (and returns their names)."""
    import torch
    c = torch.cuda
    c.is_available = lambda: True
    c.device_count = lambda: 1
    c.current_device = lambda: 0
    c.get_device_name = lambda device=None: H200_NAME
    c.get_device_capability = lambda device=None: H200_CAPABILITY
    c.get_device_properties = _properties
    c.mem_get_info = lambda device=None: (H200_TOTAL_MEMORY, H200_TOTAL_MEMORY)
    c.set_device = lambda device: None
    return list(STUBS)
