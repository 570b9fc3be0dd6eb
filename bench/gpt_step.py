#!/usr/bin/env python3
"""The GPT training step of examples/gpt_text.c on the CPU: gpudl against
PyTorch 2 (eager, nanoGPT's module with F.scaled_dot_product_attention) and
JAX (the whole step under jax.jit), same model, same batch, same thread
count, in one run.

The step, in all three: a batch of B random windows of T characters from
the text (gathered each step), forward, cross-entropy over all B*T
positions, backward, gradient clipping at norm 1, AdamW (lr 1e-3, betas
0.9/0.99, eps 1e-8, weight decay 0.01). Model: 4 layers, 4 heads, width 128,
context 64, batch 32, vocabulary 86 (the default text's), exact GELU,
layer norm eps 1e-5, lm_head with a bias (gpt_text.c's model).

Rounds are interleaved (gpudl, torch, jax, gpudl, ...), each implementation
in a fresh process; in each, 3 warm-up steps (JAX: after its compile), then
--steps steps timed one by one, waiting for each (torch on the CPU is
synchronous; JAX: block_until_ready). Per round the median step; the table
gives the median of the rounds' medians, and their min and max, over all
rounds and over the quiet ones: before each round, /proc/stat says how many
cores other programs kept busy for half a second (a shared machine's load
slows the three very differently: PyTorch's threads most). Threads:
OMP_NUM_THREADS for gpudl, torch.set_num_threads for PyTorch, and JAX
(whose XLA pool sizes itself from the cores it may use) pinned to the first
N cores with sched_setaffinity, as bench/jax_train.py does. Writes CSV.

Not dependencies of the kit: PyTorch and JAX are anchors, each run by the
Python that has it (--torch-python, --jax-python; by default build/torchvenv
and build/jaxvenv where they exist, else this Python).

Run: python3 bench/gpt_step.py [--threads 2] [--rounds 5] [--steps 20] [--quick] [--quiet CORES]
         [--gpudl build/gpt_text_cpu] [--text FILE] [--csv bench/gpt_step.csv]
(make bench-gpt)
"""
import argparse
import csv
import os
import platform
import re
import statistics
import subprocess
import sys
import time

LICENSES = ["Apache-2.0", "Artistic", "BSD", "CC0-1.0", "GFDL-1.2", "GFDL-1.3", "GPL-1", "GPL-2", "GPL-3", "LGPL-2",
            "LGPL-2.1", "LGPL-3", "MPL-1.1", "MPL-2.0"]
CFG = dict(layers=4, heads=4, width=128, context=64, batch=32)


def load_text(path):
    """gpt_text.c's text and vocabulary: the distinct bytes, sorted; the first 90% train."""
    if path:
        data = open(path, "rb").read()
    else:
        data = b"".join(open(os.path.join("/usr/share/common-licenses", f), "rb").read() for f in LICENSES
                        if os.path.exists(os.path.join("/usr/share/common-licenses", f)))
    vocab = sorted(set(data))
    idx = {b: i for i, b in enumerate(vocab)}
    ids = [idx[b] for b in data]
    return ids[:len(ids) - len(ids) // 10], len(vocab)


def others_busy(seconds=0.5):
    """Cores kept busy by other programs over a short window before a round (Linux /proc/stat; None elsewhere)."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return (1.0 - (i1 - i0) / max(1, t1 - t0)) * (os.cpu_count() or 1)


def summary(times):
    times = sorted(times)
    return statistics.median(times), times[0], times[-1]


# ---------------------------------------------------------------- PyTorch
def worker_torch(args):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    train, V = load_text(args.text)
    L, H, C, T, B = (CFG[k] for k in ("layers", "heads", "width", "context", "batch"))

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)

        def forward(self, x):
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(C), Attn(), nn.LayerNorm(C)
            self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(C, 4 * C), c_proj=nn.Linear(4 * C, C)))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(V, C), wpe=nn.Embedding(T, C),
                                                  h=nn.ModuleList([Block() for _ in range(L)]), ln_f=nn.LayerNorm(C)))
            self.lm_head = nn.Linear(C, V)

        def forward(self, idx):
            x = self.transformer.wte(idx) + self.transformer.wpe.weight[:T]
            for b in self.transformer.h:
                x = b(x)
            return self.lm_head(self.transformer.ln_f(x))

    net = GPT()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.01)
    data = torch.tensor(train, dtype=torch.long)
    offs = torch.arange(T)
    gen = torch.Generator().manual_seed(1)

    def step():
        starts = torch.randint(0, len(train) - T - 1, (B,), generator=gen)
        x = data[starts[:, None] + offs]
        y = data[starts[:, None] + offs + 1]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(x).view(-1, V), y.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        return loss

    times = []
    for i in range(3 + args.steps):
        t = time.perf_counter()
        loss = step()
        if i >= 3:
            times.append((time.perf_counter() - t) * 1e3)
    med, lo, hi = summary(times)
    print(f"bench: {args.steps} steps  median_ms {med:.4f}  min_ms {lo:.4f}  max_ms {hi:.4f}  loss {loss.item():.4f}  "
          f"version torch-{torch.__version__}-threads-{torch.get_num_threads()}")


# ---------------------------------------------------------------- JAX
def worker_jax(args):
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(range(args.threads)))
    import jax
    import jax.numpy as jnp
    import numpy as np
    jax.config.update("jax_platforms", "cpu")
    train, V = load_text(args.text)
    L, H, C, T, B = (CFG[k] for k in ("layers", "heads", "width", "context", "batch"))
    HS = C // H
    rng = np.random.default_rng(1)

    def lin(i, o):   # PyTorch's default init: U(+-1/sqrt(fan_in))
        s = 1.0 / np.sqrt(i)
        return {"w": jnp.asarray(rng.uniform(-s, s, (o, i)), jnp.float32), "b": jnp.asarray(rng.uniform(-s, s, o), jnp.float32)}

    def ln():
        return {"w": jnp.ones(C, jnp.float32), "b": jnp.zeros(C, jnp.float32)}
    params = {"wte": jnp.asarray(rng.normal(0, 0.02, (V, C)), jnp.float32),
              "wpe": jnp.asarray(rng.normal(0, 0.02, (T, C)), jnp.float32),
              "h": [{"ln_1": ln(), "c_attn": lin(C, 3 * C), "c_proj": lin(C, C), "ln_2": ln(),
                     "c_fc": lin(C, 4 * C), "mlp_proj": lin(4 * C, C)} for _ in range(L)],
              "ln_f": ln(), "lm_head": lin(C, V)}

    def layernorm(p, x):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * p["w"] + p["b"]

    def dense(p, x):
        return x @ p["w"].T + p["b"]

    mask = jnp.tril(jnp.ones((T, T), bool))

    def forward(p, idx):
        x = p["wte"][idx] + p["wpe"]
        for blk in p["h"]:
            qkv = dense(blk["c_attn"], layernorm(blk["ln_1"], x))
            q, k, v = (qkv[..., j * C:(j + 1) * C].reshape(B, T, H, HS).transpose(0, 2, 1, 3) for j in range(3))
            s = jnp.where(mask, (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(HS), -jnp.inf)
            y = (jax.nn.softmax(s, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
            x = x + dense(blk["c_proj"], y)
            x = x + dense(blk["mlp_proj"], jax.nn.gelu(dense(blk["c_fc"], layernorm(blk["ln_2"], x)), approximate=False))
        return dense(p["lm_head"], layernorm(p["ln_f"], x))

    def loss_fn(p, x, y):
        logp = jax.nn.log_softmax(forward(p, x), axis=-1)
        return -jnp.take_along_axis(logp, y[..., None], axis=-1).mean()

    @jax.jit
    def step(p, m, v, t, x, y):   # AdamW as torch.optim.AdamW, after clipping at global norm 1
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        norm = jnp.sqrt(sum(jnp.sum(a * a) for a in jax.tree_util.tree_leaves(g)))
        g = jax.tree_util.tree_map(lambda a: a * jnp.minimum(1.0, 1.0 / (norm + 1e-6)), g)
        lr, b1, b2, eps, wd = 1e-3, 0.9, 0.99, 1e-8, 0.01
        m = jax.tree_util.tree_map(lambda a, b: b1 * a + (1 - b1) * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: b2 * a + (1 - b2) * b * b, v, g)
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        p = jax.tree_util.tree_map(lambda w, a, b: w * (1 - lr * wd) - lr * (a / bc1) / (jnp.sqrt(b / bc2) + eps), p, m, v)
        return p, m, v, loss

    m = jax.tree_util.tree_map(jnp.zeros_like, params)
    v = jax.tree_util.tree_map(jnp.zeros_like, params)
    data = np.asarray(train, np.int32)
    offs = np.arange(T)

    def batch():
        starts = rng.integers(0, len(train) - T - 1, B)
        return data[starts[:, None] + offs], data[starts[:, None] + offs + 1]
    x, y = batch()
    params, m, v, loss = step(params, m, v, 1.0, x, y)   # compile
    loss.block_until_ready()
    times = []
    for i in range(3 + args.steps):
        t = time.perf_counter()
        x, y = batch()
        params, m, v, loss = step(params, m, v, float(i + 2), x, y)
        loss.block_until_ready()
        if i >= 3:
            times.append((time.perf_counter() - t) * 1e3)
    med, lo, hi = summary(times)
    print(f"bench: {args.steps} steps  median_ms {med:.4f}  min_ms {lo:.4f}  max_ms {hi:.4f}  loss {float(loss):.4f}  "
          f"version jax-{jax.__version__}-threads-{args.threads}")


# ---------------------------------------------------------------- driver
def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"bench: \d+ steps\s+median_ms ([0-9.]+)\s+min_ms ([0-9.]+)\s+max_ms ([0-9.]+)", p.stdout)
    if p.returncode != 0 or not m:
        sys.stderr.write(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout[-800:]}{p.stderr[-1500:]}\n")
        return None, ""
    v = re.search(r"version (\S+)", p.stdout)
    return float(m.group(1)), v.group(1) if v else ""


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)

    def venv(name):
        p = os.path.join(root, "build", name, "bin", "python")
        return p if os.path.exists(p) else sys.executable
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="2 rounds of 5 steps")
    ap.add_argument("--gpudl", default=os.path.join(root, "build", "gpt_text_cpu"))
    ap.add_argument("--torch-python", default=venv("torchvenv"))
    ap.add_argument("--jax-python", default=venv("jaxvenv"))
    ap.add_argument("--text", default=None)
    ap.add_argument("--csv", default=os.path.join(here, "gpt_step.csv"))
    ap.add_argument("--only", default="gpudl,torch,jax")
    ap.add_argument("--quiet", type=float, default=0.3, help="a round is quiet when other programs kept fewer cores busy")
    ap.add_argument("--worker", choices=["torch", "jax"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.steps = 2, 5
    if args.worker == "torch":
        return worker_torch(args)
    if args.worker == "jax":
        return worker_jax(args)

    me = os.path.abspath(__file__)
    common = ["--threads", str(args.threads), "--steps", str(args.steps)] + (["--text", args.text] if args.text else [])
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    cmds = {"gpudl": [args.gpudl, "--cpu", "--bench", "--steps", str(args.steps)] + ([args.text] if args.text else []),
            "torch": [args.torch_python, me, "--worker", "torch"] + common,
            "jax": [args.jax_python, me, "--worker", "jax"] + common}
    impls = [i for i in args.only.split(",") if i in cmds]
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    cfg = ", ".join(f"{k} {v}" for k, v in CFG.items())
    print(f"GPT training step on the CPU ({cfg}; vocabulary of the text): {args.rounds} interleaved rounds of "
          f"{args.steps} steps, {args.threads} threads; {cpu}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    res = {i: [] for i in impls}
    quiet = {i: [] for i in impls}
    ver = {i: "" for i in impls}
    for r in range(args.rounds):
        line = []
        busy = others_busy()
        calm = busy is not None and busy < args.quiet
        for i in impls:
            ms, v = run(cmds[i], env)
            if ms is not None:
                res[i].append(ms)
                if calm:
                    quiet[i].append(ms)
                ver[i] = ver[i] or v
                line.append(f"{i} {ms:.2f}")
            else:
                line.append(f"{i} failed")
        where = f"other programs busy on {busy:.2f} cores before it" if busy is not None else "load unknown"
        print(f"round {r + 1}: " + ", ".join(line) + f" ms/step ({where})", flush=True)
    tokens = CFG["batch"] * CFG["context"]
    rows = []
    for label, sets in (("all rounds", res), (f"quiet rounds (other programs on < {args.quiet} cores)", quiet)):
        if not any(sets.values()):
            print(f"\n{label}: none")
            continue
        base = statistics.median(sets["gpudl"]) if sets.get("gpudl") else None
        print(f"\n{label}:\n{'impl':<8} {'rounds':>6} {'median ms':>10} {'min':>9} {'max':>9} {'tokens/s':>10} {'vs gpudl':>9}  version")
        for i in impls:
            if not sets[i]:
                print(f"{i:<8} {'-':>6}")
                continue
            med, lo, hi = summary(sets[i])
            ratio = f"{med / base:.2f}x" if base else "-"
            print(f"{i:<8} {len(sets[i]):6d} {med:10.2f} {lo:9.2f} {hi:9.2f} {tokens * 1e3 / med:10.0f} {ratio:>9}  "
                  f"{ver[i] or 'gpudl'}")
            rows.append(dict(rounds_kind="all" if sets is res else "quiet", impl=i, threads=args.threads,
                             rounds=len(sets[i]), steps=args.steps, median_ms=round(med, 4), min_ms=round(lo, 4),
                             max_ms=round(hi, 4), tokens_per_s=round(tokens * 1e3 / med), version=ver[i] or "gpudl", **CFG))
    print("(vs gpudl: the step time over gpudl's; above 1.00x gpudl is faster)")
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["rounds_kind", "impl", "threads", "rounds", "steps", "median_ms", "min_ms",
                                          "max_ms", "tokens_per_s", "version"] + list(CFG))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
