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
"""
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
