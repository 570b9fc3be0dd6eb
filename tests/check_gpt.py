#!/usr/bin/env python3
"""Checks the GPT that examples/gpt_text.c saved, against its own outputs.

  1. Reads the checkpoint (safetensors) with numpy alone (the format is a
     JSON header and raw little-endian data) and checks that the names and
     shapes are nanoGPT's, for the layer count, width, context and
     vocabulary they imply, and that nothing else is there but the
     optimizer's state ("optimizer.m", "optimizer.v").
  2. Runs the GPT's forward in float64 numpy (layer norm, causal
     multi-head attention, exact erf GELU, lm_head with its bias) on the
     held-out batch that the example evaluated (--eval-dump), and compares
     the logits and the loss with the example's.
  3. Where PyTorch imports: builds a torch.nn.Module with nanoGPT's module
     names (lm_head with a bias, not tied to wte: gpt_text.c's model),
     loads the checkpoint with load_state_dict(strict=True) and compares
     its logits and F.cross_entropy with the example's.
Exit 0 = all agree. No dependency but numpy (PyTorch optional).

Usage: check_gpt.py CHECKPOINT EVAL_DUMP [--atol A] [--rtol R]
  (default tolerances fit an FP32 run; a 16-bit run's logits are rounded to
  16 bits: pass e.g. --atol 0.05 --rtol 0.02)
Example: ./gpt_text --short --out g.safetensors --eval-dump g.eval
         python3 tests/check_gpt.py g.safetensors g.eval
"""
import argparse
import json
import math
import re
import struct
import sys

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    meta = header.pop("__metadata__", {})
    base = 8 + hlen
    dtypes = {"F32": np.float32, "F16": np.float16, "I32": np.int32, "U8": np.uint8, "F64": np.float64}
    out = {}
    for name, d in header.items():
        a, b = d["data_offsets"]
        out[name] = np.frombuffer(raw[base + a:base + b], dtype=np.dtype(dtypes[d["dtype"]]).newbyteorder("<")).reshape(d["shape"])
    return out, meta


def read_dump(path):
    with open(path, "rb") as f:
        line = f.readline().decode()
        tag, n, t, v, heads, loss = line.split()
        assert tag == "gpt_text-eval", line
        n, t, v, heads, loss = int(n), int(t), int(v), int(heads), float(loss)
        ids = np.frombuffer(f.read(4 * n * t), dtype="<i4").reshape(n, t)
        targets = np.frombuffer(f.read(4 * n * t), dtype="<i4").reshape(n, t)
        logits = np.frombuffer(f.read(4 * n * t * v), dtype="<f4").reshape(n, t, v)
        vocab = f.read(v)
        assert len(vocab) == v and not f.read(1), "the dump is longer or shorter than its header says"
    return dict(ids=ids, targets=targets, logits=logits, loss=loss, heads=heads, vocab=vocab)


def expected_shapes(L, V, C, T):
    s = {"transformer.wte.weight": (V, C), "transformer.wpe.weight": (T, C),
         "transformer.ln_f.weight": (C,), "transformer.ln_f.bias": (C,),
         "lm_head.weight": (V, C), "lm_head.bias": (V,)}
    for i in range(L):
        p = f"transformer.h.{i}."
        s.update({p + "ln_1.weight": (C,), p + "ln_1.bias": (C,),
                  p + "attn.c_attn.weight": (3 * C, C), p + "attn.c_attn.bias": (3 * C,),
                  p + "attn.c_proj.weight": (C, C), p + "attn.c_proj.bias": (C,),
                  p + "ln_2.weight": (C,), p + "ln_2.bias": (C,),
                  p + "mlp.c_fc.weight": (4 * C, C), p + "mlp.c_fc.bias": (4 * C,),
                  p + "mlp.c_proj.weight": (C, 4 * C), p + "mlp.c_proj.bias": (C,)})
    return s


def layernorm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu(x):   # exact: x Phi(x)
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def forward_numpy(p, ids, L, H):
    P = {k: v.astype(np.float64) for k, v in p.items()}
    N, T = ids.shape
    C = P["transformer.wte.weight"].shape[1]
    hs = C // H
    x = P["transformer.wte.weight"][ids] + P["transformer.wpe.weight"][:T]
    mask = np.tril(np.ones((T, T), dtype=bool))
    for i in range(L):
        q = f"transformer.h.{i}."
        h = layernorm(x, P[q + "ln_1.weight"], P[q + "ln_1.bias"])
        qkv = h @ P[q + "attn.c_attn.weight"].T + P[q + "attn.c_attn.bias"]
        qq, kk, vv = (qkv[..., j * C:(j + 1) * C].reshape(N, T, H, hs).transpose(0, 2, 1, 3) for j in range(3))
        s = qq @ kk.transpose(0, 1, 3, 2) / math.sqrt(hs)
        s = np.where(mask, s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        att = s / s.sum(-1, keepdims=True)
        y = (att @ vv).transpose(0, 2, 1, 3).reshape(N, T, C)
        x = x + y @ P[q + "attn.c_proj.weight"].T + P[q + "attn.c_proj.bias"]
        h = layernorm(x, P[q + "ln_2.weight"], P[q + "ln_2.bias"])
        h = gelu(h @ P[q + "mlp.c_fc.weight"].T + P[q + "mlp.c_fc.bias"])
        x = x + h @ P[q + "mlp.c_proj.weight"].T + P[q + "mlp.c_proj.bias"]
    x = layernorm(x, P["transformer.ln_f.weight"], P["transformer.ln_f.bias"])
    return x @ P["lm_head.weight"].T + P["lm_head.bias"]


def xent(logits, targets):
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return float(-np.take_along_axis(logp, targets[..., None].astype(np.int64), -1).mean())


def compare(what, got, ref, atol, rtol):
    err = np.abs(got.astype(np.float64) - ref)
    bad = err > atol + rtol * np.abs(ref)
    if bad.any():
        i = np.unravel_index(np.argmax(err - (atol + rtol * np.abs(ref))), ref.shape)
        sys.exit(f"FAIL {what}: {int(bad.sum())} of {ref.size} logits differ beyond {atol} + {rtol}|ref|; "
                 f"worst at {tuple(int(k) for k in i)}: {float(got[i]):.6g} against {float(ref[i]):.6g}")
    return float(err.max())


def torch_check(params, dump, L, H, atol, rtol):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    V, C = params["transformer.wte.weight"].shape
    T = params["transformer.wpe.weight"].shape[0]

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)

        def forward(self, x):
            B, Tx, _ = x.shape
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, Tx, H, C // H).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(C // H)
            att = att.masked_fill(~torch.tril(torch.ones(Tx, Tx, dtype=torch.bool)), float("-inf"))
            y = F.softmax(att, dim=-1) @ v
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, Tx, C))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(C, 4 * C)
            self.gelu = nn.GELU()   # exact erf, as gpudl's GPUDL_ACT_GELU
            self.c_proj = nn.Linear(4 * C, C)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(C)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):   # nanoGPT's names; lm_head with a bias and untied (gpt_text.c's model)
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(V, C), wpe=nn.Embedding(T, C),
                                                  h=nn.ModuleList([Block() for _ in range(L)]), ln_f=nn.LayerNorm(C)))
            self.lm_head = nn.Linear(C, V, bias=True)

        def forward(self, idx):
            pos = torch.arange(idx.shape[1])
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            return self.lm_head(self.transformer.ln_f(x))

    net = GPT()
    sd = {k: torch.from_numpy(v.copy()) for k, v in params.items()}
    net.load_state_dict(sd, strict=True)
    net = net.double().eval()
    with torch.no_grad():
        logits = net(torch.from_numpy(dump["ids"].astype(np.int64)))
        loss = F.cross_entropy(logits.view(-1, V), torch.from_numpy(dump["targets"].astype(np.int64)).view(-1)).item()
    err = compare("torch logits", dump["logits"], logits.numpy(), atol, rtol)
    if abs(loss - dump["loss"]) > atol + rtol * abs(loss):
        sys.exit(f"FAIL torch loss: {loss:.6f} against the example's {dump['loss']:.6f}")
    return f"torch {torch.__version__}: load_state_dict(strict=True) ok, max |logit diff| {err:.2e}, loss {loss:.5f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("dump")
    ap.add_argument("--atol", type=float, default=2e-4)
    ap.add_argument("--rtol", type=float, default=2e-4)
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()

    tensors, meta = read_safetensors(args.checkpoint)
    dump = read_dump(args.dump)
    if meta.get("format") != "gpudl":
        sys.exit(f"FAIL: not a gpudl checkpoint (metadata {meta})")
    params = {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}
    others = set(tensors) - set(params)
    if not others <= {"optimizer.m", "optimizer.v"}:
        sys.exit(f"FAIL: unexpected tensors {sorted(others)}")
    if "transformer.wte.weight" not in params:
        sys.exit(f"FAIL: no transformer.wte.weight; names: {sorted(params)[:8]} ...")
    V, C = params["transformer.wte.weight"].shape
    T = params["transformer.wpe.weight"].shape[0]
    L = len({m.group(1) for k in params for m in [re.match(r"transformer\.h\.(\d+)\.", k)] if m})
    H = dump["heads"]
    want = expected_shapes(L, V, C, T)
    if set(params) != set(want):
        sys.exit(f"FAIL: names differ from nanoGPT's: missing {sorted(set(want) - set(params))}, "
                 f"unexpected {sorted(set(params) - set(want))}")
    for k, s in want.items():
        if params[k].shape != s or params[k].dtype != np.float32:
            sys.exit(f"FAIL: {k} is {params[k].dtype} {params[k].shape}, want float32 {s}")
    if dump["logits"].shape[1:] != (T, V) or C % H:
        sys.exit(f"FAIL: the dump's batch {dump['logits'].shape} does not fit T {T}, V {V} (heads {H}, width {C})")
    msg = [f"{len(params)} tensors with nanoGPT's names and shapes ({L} layers, {H} heads, width {C}, context {T}, "
           f"vocabulary {V}; step {meta.get('step')})"]

    ref = forward_numpy(params, dump["ids"], L, H)
    err = compare("numpy logits", dump["logits"], ref, args.atol, args.rtol)
    loss = xent(ref, dump["targets"])
    if abs(loss - dump["loss"]) > args.atol + args.rtol * abs(loss):
        sys.exit(f"FAIL numpy loss: {loss:.6f} against the example's {dump['loss']:.6f}")
    msg.append(f"numpy float64 forward on {dump['ids'].shape[0]}x{T} held-out tokens: max |logit diff| {err:.2e}, "
               f"loss {loss:.5f} (example {dump['loss']:.5f})")
    if not args.no_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            msg.append("torch: not installed (the numpy check stands)")
        else:
            msg.append(torch_check(params, dump, L, H, args.atol, args.rtol))
    print("check_gpt: " + "; ".join(msg))


if __name__ == "__main__":
    main()
