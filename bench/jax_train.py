#!/usr/bin/env python3
"""The same training steps as bench_train.c in JAX: forward, cross-entropy,
gradients and SGD with momentum (written out, as optax would), the whole
step under jax.jit, on data already on the device. FP32.

CPU threads: XLA's CPU backend sizes its pool from the cores it may use, so
this script pins itself to the first N cores (os.sched_setaffinity) before
JAX starts: --threads N (default: all cores), the same count gpudl and
torch_train.py get. Same timing rule as gpudl_bench: warm-up, then 20
samples of enough steps to last >= 1 ms; median per step (each sample
waits for the result: block_until_ready). Writes bench/jax_train.csv and,
when bench/train.csv is there, a side-by-side with gpudl.

Not a dependency of the kit: a benchmark anchor (python3 -m venv venv;
venv/bin/pip install jax).
Run: python3 bench/jax_train.py [--threads N] [--quick]
"""
import argparse
import csv
import os
import statistics
import time

RUNS = [("mlp", 128), ("mlp", 1024), ("lenet", 128)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--quick", action="store_true")
    args, _ = ap.parse_known_args()   # bench_train's other flags (--cpu, --amp, ...) mean nothing here
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(range(args.threads)))
    os.environ.setdefault("XLA_FLAGS", "")
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_platforms", "cpu")

    def init(name, key):
        def dense(k, i, o):   # PyTorch's default init: U(+-1/sqrt(fan_in))
            a, b = jax.random.split(k)
            s = 1.0 / (i ** 0.5)
            return (jax.random.uniform(a, (o, i), minval=-s, maxval=s), jax.random.uniform(b, (o,), minval=-s, maxval=s))

        def conv(k, c, o, kk):
            a, b = jax.random.split(k)
            s = 1.0 / ((c * kk * kk) ** 0.5)
            return (jax.random.uniform(a, (o, c, kk, kk), minval=-s, maxval=s), jax.random.uniform(b, (o,), minval=-s, maxval=s))
        ks = jax.random.split(key, 5)
        if name == "mlp":
            return [dense(ks[0], 784, 1024), dense(ks[1], 1024, 1024), dense(ks[2], 1024, 10)]
        return [conv(ks[0], 1, 6, 5), conv(ks[1], 6, 16, 5), dense(ks[2], 400, 120), dense(ks[3], 120, 84), dense(ks[4], 84, 10)]

    def forward(name, p, x):
        if name == "mlp":
            h = jax.nn.relu(x @ p[0][0].T + p[0][1])
            h = jax.nn.relu(h @ p[1][0].T + p[1][1])
            return h @ p[2][0].T + p[2][1]
        dn = ("NCHW", "OIHW", "NCHW")

        def pool(h):
            return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        h = jax.lax.conv_general_dilated(x, p[0][0], (1, 1), ((2, 2), (2, 2)), dimension_numbers=dn)
        h = pool(jax.nn.relu(h + p[0][1][None, :, None, None]))
        h = jax.lax.conv_general_dilated(h, p[1][0], (1, 1), "VALID", dimension_numbers=dn)
        h = pool(jax.nn.relu(h + p[1][1][None, :, None, None]))
        h = h.reshape(h.shape[0], -1)
        h = jax.nn.relu(h @ p[2][0].T + p[2][1])
        h = jax.nn.relu(h @ p[3][0].T + p[3][1])
        return h @ p[4][0].T + p[4][1]

    def bench(step, reps, min_ms):
        def run(k):
            t = time.perf_counter()
            for _ in range(k):
                out = step()
            jax.block_until_ready(out)
            return (time.perf_counter() - t) * 1e3
        for _ in range(4):
            jax.block_until_ready(step())
        one = run(1)
        calls = max(1, min(100000, int(min_ms / one) + 1 if one > 0 else 1000))
        samples = sorted(run(calls) / calls for _ in range(reps))
        return statistics.median(samples), samples[0], samples[-1]

    print(f"jax {jax.__version__} training step (fp32, jax.jit), on CPU, {len(os.sched_getaffinity(0))} cores")
    print(f"{'impl':<14} {'prec':<5} {'model':<6} {'batch':>6} {'median ms':>11} {'images/s':>12}")
    rows = []
    for name, n in RUNS:
        key = jax.random.PRNGKey(1)
        params = init(name, key)
        mom = jax.tree_util.tree_map(jnp.zeros_like, params)
        x = jax.random.normal(key, (n, 784) if name == "mlp" else (n, 1, 28, 28))
        y = jnp.arange(n) % 10

        def loss_fn(p, x, y, name=name):
            logits = forward(name, p, x)
            return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(x.shape[0]), y])

        @jax.jit
        def train(p, m, x, y):
            g = jax.grad(loss_fn)(p, x, y)
            m = jax.tree_util.tree_map(lambda mi, gi: 0.9 * mi + gi, m, g)   # PyTorch's SGD momentum
            p = jax.tree_util.tree_map(lambda pi, mi: pi - 0.01 * mi, p, m)
            return p, m

        state = [params, mom]

        def step():
            state[0], state[1] = train(state[0], state[1], x, y)
            return state[0]

        med, lo, hi = bench(step, 5 if args.quick else 20, 1.0)
        rows.append(dict(device="cpu", impl="jax-jit", precision="fp32", model=name, batch=n, threads=args.threads,
                         median_ms=med, min_ms=lo, max_ms=hi, gflops=0, images_per_s=1e3 * n / med))
        print(f"{'jax-jit':<14} {'fp32':<5} {name:<6} {n:>6} {med:>11.3f} {1e3 * n / med:>12.0f}", flush=True)
    os.makedirs("bench", exist_ok=True)
    with open("bench/jax_train.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print("wrote bench/jax_train.csv")
    if os.path.exists("bench/train.csv"):
        ours = {}
        with open("bench/train.csv") as fh:
            for r in csv.DictReader(fh):
                if r.get("impl", "gpudl") == "gpudl" and r["device"] == "cpu" and r.get("precision", "fp32") == "fp32":
                    ours[(r["model"], int(r["batch"]))] = float(r["median_ms"])
        print(f"\n{'model':<6} {'batch':>6} {'gpudl ms':>10} {'jax ms':>10} {'jax / gpudl':>12}")
        for r in rows:
            g = ours.get((r["model"], r["batch"]))
            if g:
                print(f"{r['model']:<6} {r['batch']:>6} {g:>10.3f} {r['median_ms']:>10.3f} {r['median_ms'] / g:>11.2f}x")
        print("(> 1 means gpudl is faster)")


if __name__ == "__main__":
    main()
