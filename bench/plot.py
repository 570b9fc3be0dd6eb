#!/usr/bin/env python3
"""plot.py - draws the benchmarks' CSVs (make bench runs it last).

  bench/train.csv (+ bench/torch_train.csv, bench/jax_train.csv)
                                              -> bench/train.png: the step
      time and GFLOP/s per model and batch, gpudl beside PyTorch and JAX, one
      row of panels per device and precision
  bench/matmul.csv (+ bench/torch_matmul.csv) -> bench/matmul.png: GFLOP/s
      against the matrix size, per implementation and precision
  build/demo.csv (cnn_fashion --log)          -> bench/demo.png: the training
      loss against the step and the test accuracy after each epoch

Missing inputs are passed over with a line saying so. Needs matplotlib
(Debian: apt-get install python3-matplotlib); it is not a dependency of gpudl.

Usage: plot.py [--dir DIR] [--demo CSV] [--out DIR]
"""
import argparse
import csv
import os
import sys


def rows(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def plot_train(plt, d, out):
    gp = rows(os.path.join(d, "train.csv"))
    tp = rows(os.path.join(d, "torch_train.csv")) + rows(os.path.join(d, "jax_train.csv"))   # the anchors
    if not gp:
        print("plot: no %s/train.csv (make bench-train writes it): train.png passed over" % d)
        return
    flops = {}   # FLOP per step of a (device, model, batch), from gpudl's rows
    for r in gp:
        if float(r["gflops"]) > 0:
            flops[(r["device"], r["model"], r["batch"])] = float(r["gflops"]) * float(r["median_ms"]) * 1e6
    groups = sorted({(r["device"], r["precision"]) for r in gp})
    fig, axes = plt.subplots(len(groups), 2, figsize=(12, 3.6 * len(groups)), squeeze=False)
    for (dev, prec), ax in zip(groups, axes):
        cases = sorted({(r["model"], int(r["batch"])) for r in gp if (r["device"], r["precision"]) == (dev, prec)})
        impls = sorted({r["impl"] for r in gp + tp if (r["device"], r["precision"]) == (dev, prec)})
        width = 0.8 / max(1, len(impls))
        for k, impl in enumerate(impls):
            ms, gf = [], []
            for model, batch in cases:
                hit = [r for r in gp + tp if (r["device"], r["precision"], r["impl"], r["model"], int(r["batch"])) ==
                       (dev, prec, impl, model, batch)]
                t = float(hit[0]["median_ms"]) if hit else 0.0
                ms.append(t)
                f = flops.get((dev, model, str(batch)), 0.0)
                gf.append(f / (t * 1e6) if t > 0 and f > 0 else 0.0)
            xs = [i + (k - (len(impls) - 1) / 2) * width for i in range(len(cases))]
            ax[0].bar(xs, ms, width, label=impl)
            ax[1].bar(xs, gf, width, label=impl)
        labels = ["%s\nbatch %d" % c for c in cases]
        for a, what in ((ax[0], "step time, ms (lower is better)"), (ax[1], "GFLOP/s (higher is better)")):
            a.set_xticks(range(len(cases)))
            a.set_xticklabels(labels, fontsize=8)
            a.set_title("%s %s: %s" % (dev.upper(), prec, what), fontsize=10)
            a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "train.png"), dpi=110)
    print("plot: wrote %s" % os.path.join(out, "train.png"))


def plot_matmul(plt, d, out):
    rs = rows(os.path.join(d, "matmul.csv")) + rows(os.path.join(d, "torch_matmul.csv"))
    if not rs:
        print("plot: no %s/matmul.csv (make bench-matmul writes it): matmul.png passed over" % d)
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for key in sorted({(r["device"], r["impl"], r["precision"]) for r in rs}):
        pts = sorted((int(r["n"]), float(r["gflops"])) for r in rs if (r["device"], r["impl"], r["precision"]) == key)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label="%s %s %s" % key)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (n x n x n product)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("matmul throughput")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "matmul.png"), dpi=110)
    print("plot: wrote %s" % os.path.join(out, "matmul.png"))


def plot_demo(plt, path, out):
    rs = rows(path)
    if not rs:
        print("plot: no %s (make demo DEMO_ARGS='--log %s' writes it): demo.png passed over" % (path, path))
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    a.plot([int(r["step"]) for r in rs], [float(r["loss"]) for r in rs], lw=1)
    a.set_xlabel("step")
    a.set_ylabel("training loss")
    a.set_title("loss")
    ep = [r for r in rs if r["test_accuracy"]]
    b.plot([int(r["epoch"]) for r in ep], [100 * float(r["test_accuracy"]) for r in ep], marker="o")
    b.set_xlabel("epoch")
    b.set_ylabel("test accuracy, %")
    b.set_title("test accuracy after each epoch")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "demo.png"), dpi=110)
    print("plot: wrote %s" % os.path.join(out, "demo.png"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="bench")
    ap.add_argument("--demo", default="build/demo.csv")
    ap.add_argument("--out", default="bench")
    a = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot: SKIPPED, no matplotlib (Debian: apt-get install python3-matplotlib)")
        return 0
    os.makedirs(a.out, exist_ok=True)
    plot_train(plt, a.dir, a.out)
    plot_matmul(plt, a.dir, a.out)
    plot_demo(plt, a.demo, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
