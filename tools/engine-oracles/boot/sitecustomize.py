"""Loaded by Python at start-up when tools/engine-oracles/boot is on PYTHONPATH: installs the GPU
stubs of ../gpu_stubs.py (the H200's answers to the GPU and driver queries, listed there) before
any engine module is imported."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gpu_stubs  # noqa: E402

gpu_stubs.install()
