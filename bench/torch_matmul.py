#!/usr/bin/env python3
"""torch.matmul on the same GPU, sizes and precisions as bench_matmul.c.

Timing matches gpudl_bench: 3 warm-up calls, then 20 samples, each repeating
the call until it lasts >= 1 ms, timed with CUDA events; the median per call
is reported. Writes bench/torch_matmul.csv and, when bench/matmul.csv from
bench_matmul is there, prints gpudl / torch side by side.

Run:  python3 bench/torch_matmul.py [--quick]
"""
import csv
import os
import statistics
import sys

import torch

SIZES = [64, 256, 512, 1024, 2048, 4096, 8192]
PRECS = [("fp32", torch.float32, False), ("tf32", torch.float32, True),
         ("fp16", torch.float16, False), ("bf16", torch.bfloat16, False)]


def bench(fn, warmup=3, reps=20, min_sample_ms=1.0):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(warmup):
        if i == warmup - 1:
            start.record()
        fn()
        if i == warmup - 1:
            stop.record()
    stop.synchronize()
    one = start.elapsed_time(stop)
    calls = max(1, min(100000, int(min_sample_ms / one) + 1 if one > 0 else 1000))
    samples = []
    for _ in range(reps):
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) / calls)
    samples.sort()
    return statistics.median(samples), samples[0], samples[-1]


def main():
    if not torch.cuda.is_available():
        print("torch_matmul.py SKIPPED: no CUDA device visible to PyTorch")
        return 0
    quick = "--quick" in sys.argv
    sizes = SIZES[:5] if quick else SIZES
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    rows = []
    print(f"{'prec':>5} {'n':>6} {'torch ms':>12} {'TFLOP/s':>9}")
    for name, dtype, tf32 in PRECS:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        for n in sizes:
            a = torch.rand(n, n, device="cuda", dtype=dtype) * 2 - 1
            b = torch.rand(n, n, device="cuda", dtype=dtype) * 2 - 1
            c = torch.empty(n, n, device="cuda", dtype=dtype)
            med, lo, hi = bench(lambda: torch.matmul(a, b, out=c))
            med2, lo2, hi2 = bench(lambda: torch.matmul(a, b, out=c))
            if med2 < med:
                med, lo, hi = med2, lo2, hi2
            gflops = 2.0 * n ** 3 / (med * 1e6)
            rows.append(dict(device="gpu", impl="torch", precision=name, n=n, threads=0, median_ms=med,
                             min_ms=lo, max_ms=hi, gflops=gflops))
            print(f"{name:>5} {n:>6} {med:>12.4f} {gflops * 1e-3:>9.1f}", flush=True)
            del a, b, c
    os.makedirs("bench", exist_ok=True)
    with open("bench/torch_matmul.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print("wrote bench/torch_matmul.csv")
    if os.path.exists("bench/matmul.csv"):
        ours = {}
        with open("bench/matmul.csv") as f:
            for r in csv.DictReader(f):
                if r["device"] == "gpu":
                    ours[(r["impl"], r["precision"], int(r["n"]))] = float(r["median_ms"])
        print(f"\n{'prec':>5} {'n':>6} {'gpudl ms':>10} {'cuBLAS ms':>10} {'torch ms':>10} {'gpudl/torch':>12}"
              f" {'gpudl/cuBLAS time':>18}")
        for r in rows:
            k = (r["precision"], r["n"])
            g, cb = ours.get(("gpudl",) + k), ours.get(("cublas",) + k)
            if g is None:
                continue
            print(f"{r['precision']:>5} {r['n']:>6} {g:>10.4f} {cb:>10.4f} {r['median_ms']:>10.4f}"
                  f" {100.0 * r['median_ms'] / g:>11.1f}% {g / cb:>17.2f}x")
        print("(gpudl/torch = throughput ratio; gpudl/cuBLAS time = per-call time ratio)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
