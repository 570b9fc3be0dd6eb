#!/usr/bin/env python3
"""Reads a checkpoint written by gpudl_model_save with the safetensors
library (numpy flavour; the torch flavour too when PyTorch is installed)
and checks names, shapes, dtypes and metadata. Exit 0 = readable.

Usage: check_safetensors.py FILE"""
import sys

from safetensors import safe_open
from safetensors.numpy import load_file

path = sys.argv[1]
tensors = load_file(path)
with safe_open(path, framework="numpy") as f:
    meta = f.metadata()
assert meta["format"] == "gpudl", meta
assert int(meta["step"]) >= 0
w = tensors["0.weight"]
assert w.shape == (6, 1, 5, 5) and str(w.dtype) == "float32", (w.shape, w.dtype)
assert tensors["1.running_var"].shape == (6,)
assert all(str(t.dtype) == "float32" for t in tensors.values())
msg = f"numpy: {len(tensors)} tensors, step {meta['step']}"
try:
    import torch  # noqa: F401
    from safetensors.torch import load_file as torch_load
    t = torch_load(path)
    assert tuple(t["0.weight"].shape) == (6, 1, 5, 5)
    msg += "; torch: ok"
except ImportError:
    msg += "; torch: not installed"
print(msg)
