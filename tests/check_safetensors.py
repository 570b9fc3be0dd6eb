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
    import torch
    from safetensors.torch import load_file as torch_load
    # the recipe gpudl.h gives for PyTorch: the same layers as an nn.Sequential
    # (the test CNN of tests/train_helpers.h), the optimizer state filtered out,
    # and strict=False only for BatchNorm's num_batches_tracked, which gpudl has not
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.BatchNorm2d(6), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Dropout(0.2), torch.nn.Linear(6 * 14 * 14, 10))
    sd = {k: v for k, v in torch_load(path).items() if not k.startswith("optimizer.")}
    missing, unexpected = net.load_state_dict(sd, strict=False)
    assert not unexpected and all(k.endswith("num_batches_tracked") for k in missing), (missing, unexpected)
    assert torch.equal(net[0].weight.detach(), sd["0.weight"])
    msg += "; torch %s: load_state_dict ok" % torch.__version__
except ImportError:
    msg += "; torch: not installed"
print(msg)
