#!/usr/bin/env python3
"""The same training steps as bench_train.c in PyTorch: zero_grad, forward,
cross-entropy, backward, SGD with momentum, on data already on the device.

GPU: eager and torch.compile, FP32 with TF32 off, CUDA-event timing, then
FP16 (torch.autocast + GradScaler, PyTorch's AMP recipe) and BF16
(torch.autocast, no scaler) in both modes.
CPU (--cpu or no GPU): eager with torch.set_num_threads(N), N = --threads
(default: all cores), perf_counter timing.
Same timing rule as gpudl_bench: warm-up, then 20 samples of enough steps
to last >= 1 ms (5 ms on the GPU); median per step. Writes
bench/torch_train.csv and, when bench/train.csv is there, a side-by-side.

Run: python3 bench/torch_train.py [--cpu] [--threads N] [--quick] [--no-compile] [--amp]
(--amp: the 16-bit rows on the CPU too)
"""
import argparse
import csv
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

RUNS = [("mlp", 128), ("mlp", 1024), ("lenet", 128)]


def make(name):
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


def bench(step, gpu, reps, min_ms):
    def run(k):
        if gpu:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(k):
                step()
            b.record()
            b.synchronize()
            return a.elapsed_time(b)
        t = time.perf_counter()
        for _ in range(k):
            step()
        return (time.perf_counter() - t) * 1e3
    for _ in range(4):
        step()
    one = run(1)
    calls = max(1, min(100000, int(min_ms / one) + 1 if one > 0 else 1000))
    samples = sorted(run(calls) / calls for _ in range(reps))
    return statistics.median(samples), samples[0], samples[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--amp", action="store_true")
    args = ap.parse_args()
    gpu = torch.cuda.is_available() and not args.cpu
    dev = "cuda" if gpu else "cpu"
    if gpu:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        where = torch.cuda.get_device_name()
    else:
        torch.set_num_threads(args.threads)
        where = f"CPU, {torch.get_num_threads()} threads"
    precs = ["fp32", "fp16", "bf16"] if gpu or args.amp else ["fp32"]
    print(f"torch {torch.__version__} training step ({', '.join(precs)}; TF32 off), on {where}")
    reps = 5 if args.quick else 20
    rows = []
    modes = ["eager"] + (["compile"] if gpu and not args.no_compile and hasattr(torch, "compile") else [])
    print(f"{'impl':<14} {'prec':<5} {'model':<6} {'batch':>6} {'median ms':>11} {'images/s':>12}")
    for name, n in RUNS:
        for prec, mode in [(p, m) for p in precs for m in modes]:
            torch.manual_seed(1)
            model = make(name).to(dev)
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            x = torch.randn(n, 784 if name == "mlp" else 1, *(() if name == "mlp" else (28, 28)), device=dev)
            y = torch.arange(n, device=dev) % 10

            dt = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prec)
            scaler = torch.cuda.amp.GradScaler() if prec == "fp16" and gpu else None

            def fwd_bwd(x, y):
                if dt is None:
                    loss = F.cross_entropy(model(x), y)
                else:
                    with torch.autocast(device_type=dev, dtype=dt):
                        loss = F.cross_entropy(model(x), y)
                (scaler.scale(loss) if scaler else loss).backward()
                return loss

            f = torch.compile(fwd_bwd) if mode == "compile" else fwd_bwd

            def step():
                opt.zero_grad(set_to_none=True)
                f(x, y)
                if scaler:
                    scaler.step(opt)
                    scaler.update()
                else:
                    opt.step()

            try:
                med, lo, hi = bench(step, gpu, reps, 5.0 if gpu else 1.0)
            except RuntimeError as e:   # e.g. no FP16 autocast on this CPU build
                print(f"torch-{mode:<8} {prec:<5} {name:<6} {n:>6} SKIPPED: {str(e).splitlines()[0]}", flush=True)
                continue
            impl = f"torch-{mode}"
            rows.append(dict(device="gpu" if gpu else "cpu", impl=impl, precision=prec, model=name, batch=n,
                             threads=0 if gpu else torch.get_num_threads(), median_ms=med, min_ms=lo, max_ms=hi,
                             gflops=0, images_per_s=1e3 * n / med))
            print(f"{impl:<14} {prec:<5} {name:<6} {n:>6} {med:>11.3f} {1e3 * n / med:>12.0f}", flush=True)
    os.makedirs("bench", exist_ok=True)
    with open("bench/torch_train.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print("wrote bench/torch_train.csv")
    if os.path.exists("bench/train.csv"):
        ours = {}
        with open("bench/train.csv") as fh:
            for r in csv.DictReader(fh):
                if r.get("impl", "gpudl") != "gpudl":   # the shipped configuration only
                    continue
                ours[(r["device"], r.get("precision", "fp32"), r["model"], int(r["batch"]))] = float(r["median_ms"])
        print(f"\n{'model':<6} {'prec':<5} {'batch':>6} {'gpudl ms':>10} {'vs own fp32':>11} "
              + " ".join(f"{m + ' ms':>12} {'speedup':>8}" for m in modes))
        for name, n in RUNS:
            for prec in precs:
                g = ours.get(("gpu" if gpu else "cpu", prec, name, n))
                g32 = ours.get(("gpu" if gpu else "cpu", "fp32", name, n))
                if g is None:
                    continue
                line = f"{name:<6} {prec:<5} {n:>6} {g:>10.3f} {g32 / g:>10.2f}x "
                for m in modes:
                    t = next((r["median_ms"] for r in rows if r["model"] == name and r["batch"] == n
                              and r["impl"] == f"torch-{m}" and r["precision"] == prec), None)
                    line += f"{t:>12.3f} {t / g:>7.2f}x " if t else f"{'-':>12} {'-':>8} "
                print(line)
        print("(speedup = torch time / gpudl time at the same precision; > 1 means gpudl is faster;"
              " vs own fp32 = gpudl fp32 time / this row's)")


if __name__ == "__main__":
    main()
