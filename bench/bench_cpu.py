#!/usr/bin/env python3
"""bench_cpu.py - issue 38's table: CPU training and SGEMM, gpudl against
PyTorch 2 (eager), JAX (jax.jit) and OpenBLAS, same machine, same threads,
in one run of interleaved rounds.

gpudl is built twice, both CPU-only: the README's line (cc -O2 -fopenmp)
and the same with -O3 -march=native, into build/bench_cpu/{readme,native}/.
Rows (each: the median of the rounds' medians; a round runs every
implementation once, each in a fresh process, in an order that rotates):
  mlp 128, mlp 1024, lenet 128   bench/bench_train.c (SGD with momentum),
                                 bench/torch_train.py, bench/jax_train.py
  gpt step                       examples/gpt_text.c --bench, and
                                 bench/gpt_step.py's PyTorch and JAX workers
  sgemm 1024, sgemm 2048         bench/bench_matmul.c: gpudl and OpenBLAS
                                 (-lopenblas, when it links), the same process
Threads: OMP_NUM_THREADS for gpudl and OpenBLAS, torch.set_num_threads,
and JAX pinned to the first N cores (as jax_train.py and gpt_step.py do).
Before each round, /proc/stat says how many cores other programs kept busy
(a loaded machine slows the implementations very differently).

ratio = the best anchor's time / gpudl's time: above 1 gpudl is faster.
PyTorch and JAX are anchors, run by the Python that has them: build/torchvenv
and build/jaxvenv where they exist (make them with python3 -m venv and pip
install torch / jax), else this Python; a missing one is left out, never faked.

  amp                            bench_train --amp: gpudl's FP16 and BF16 mixed
                                 precision against its own FP32 (README build)

--isa avx2: an AVX2-only machine, on an AVX-512 one, by capping what each
implementation may use: gpudl GPUDL_CPU_ISA=avx2 (both builds; "native" is
-O3 -march=x86-64-v3, what -march=native is on an AVX2 machine), PyTorch
ATEN_CPU_CAPABILITY=avx2 with MKL_ENABLE_INSTRUCTIONS=AVX2 and
ONEDNN_MAX_CPU_ISA=AVX2, JAX XLA_FLAGS=--xla_cpu_max_isa=AVX2, OpenBLAS
OPENBLAS_CORETYPE=Haswell. A stand-in for the machine, not the machine: the
caches and clocks stay this CPU's.

Run: python3 bench/bench_cpu.py [--threads 2] [--rounds 5] [--quick] [--isa avx2]
         [--only mlp,lenet,gpt,sgemm,amp] [--csv bench/cpu.csv]        (make bench-cpu)
"""
import argparse
import csv
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILDS = {"readme": ["-O2", "-fopenmp"], "native": ["-O3", "-march=native", "-fopenmp"]}
PROGRAMS = {"bench_train": "bench/bench_train.c", "gpt_text": "examples/gpt_text.c", "bench_matmul": "bench/bench_matmul.c"}


def others_busy(seconds=0.5):
    """Cores kept busy by other programs over `seconds` (from /proc/stat), or None."""
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    try:
        t0, i0 = snap()
        time.sleep(seconds)
        t1, i1 = snap()
    except OSError:
        return None
    ncpu = os.cpu_count() or 1
    return ncpu * (1 - (i1 - i0) / max(1, t1 - t0))


def build(cc, openblas):
    out = {}
    for b, flags in BUILDS.items():
        d = os.path.join(ROOT, "build", "bench_cpu", b)
        os.makedirs(d, exist_ok=True)
        for prog, src in PROGRAMS.items():
            exe = os.path.join(d, prog)
            extra = ["-DGPUDL_BENCH_OPENBLAS"] if prog == "bench_matmul" and openblas else []
            libs = ["-lopenblas"] if extra else []
            cmd = [cc] + flags + ["-DGPUDL_NO_CUDA", "-I" + ROOT] + extra + ["-o", exe, os.path.join(ROOT, src), "-lm"] + libs
            stamp = exe + ".cmd"   # rebuilt when the sources are newer or the command differs
            if not os.path.exists(exe) or not os.path.exists(stamp) or open(stamp).read() != " ".join(cmd) or \
                    os.path.getmtime(exe) < max(os.path.getmtime(os.path.join(ROOT, "gpudl.h")), os.path.getmtime(os.path.join(ROOT, src))):
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode:
                    sys.exit(f"build failed: {' '.join(cmd)}\n{p.stderr[-2000:]}")
                open(stamp, "w").write(" ".join(cmd))
            out[(b, prog)] = exe
    return out


def openblas_links(cc):
    with tempfile.TemporaryDirectory() as t:
        src = os.path.join(t, "t.c")
        open(src, "w").write("#include <cblas.h>\nint main(void){float a=1,b=1,c=0;"
                             "cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,1,1,1,1,&a,1,&b,1,0,&c,1);return c!=1;}\n")
        return subprocess.run([cc, src, "-o", os.path.join(t, "t"), "-lopenblas"], capture_output=True).returncode == 0


def run(cmd, env, cwd=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    if p.returncode:
        sys.stderr.write(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout[-600:]}{p.stderr[-1200:]}\n")
        return None
    return p.stdout


def venv(name):
    p = os.path.join(ROOT, "build", name, "bin", "python")
    return p if os.path.exists(p) else sys.executable


def has(py, module):
    return subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 rounds, fewer steps")
    ap.add_argument("--only", default="mlp,lenet,gpt,sgemm,amp")
    ap.add_argument("--gpt-steps", type=int, default=15)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--torch-python", default=venv("torchvenv"))
    ap.add_argument("--jax-python", default=venv("jaxvenv"))
    ap.add_argument("--quiet", type=float, default=0.3, help="a round is quiet when other programs kept fewer cores busy")
    ap.add_argument("--csv", default=os.path.join(HERE, "cpu.csv"))
    ap.add_argument("--isa", choices=("native", "avx2"), default="native",
                    help="avx2: every implementation capped at AVX2 (an AVX2-only machine's stand-in)")
    args = ap.parse_args()
    capped = {}
    if args.isa == "avx2":
        BUILDS["native"] = ["-O3", "-march=x86-64-v3", "-fopenmp"]
        capped = dict(GPUDL_CPU_ISA="avx2", ATEN_CPU_CAPABILITY="avx2", MKL_ENABLE_INSTRUCTIONS="AVX2",
                      ONEDNN_MAX_CPU_ISA="AVX2", XLA_FLAGS="--xla_cpu_max_isa=AVX2", OPENBLAS_CORETYPE="Haswell")
    if args.quick:
        args.rounds, args.gpt_steps = 2, 5
    want = set(args.only.split(","))
    blas = openblas_links(args.cc)
    exe = build(args.cc, blas)
    torch_ok, jax_ok = has(args.torch_python, "torch"), has(args.jax_python, "jax")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), **capped)
    q = ["--quick"] if args.quick else []
    T = str(args.threads)
    gpt_worker = os.path.join(HERE, "gpt_step.py")
    tmp = tempfile.mkdtemp(prefix="bench_cpu_")   # the anchors' side files (bench/*.csv) go there
    os.makedirs(os.path.join(tmp, "bench"), exist_ok=True)

    # each job: (name, command, parser) -> {row: ms}
    def train_csv(path):
        def parse(_):
            rows = {}
            with open(path) as f:
                for r in csv.DictReader(f):
                    if r["precision"] == "fp32":
                        rows[f"{r['model']} {r['batch']}"] = float(r["median_ms"])
            return rows
        return parse

    def table_lines(impl):
        def parse(out):
            rows = {}
            for m in re.finditer(rf"^{impl}\s+fp32\s+(\w+)\s+(\d+)\s+([0-9.]+)", out, re.M):
                rows[f"{m.group(1)} {m.group(2)}"] = float(m.group(3))
            return rows
        return parse

    def gpt(out):
        m = re.search(r"median_ms ([0-9.]+)", out)
        return {"gpt step": float(m.group(1))} if m else {}

    def matmul(b):
        path = os.path.join(tmp, f"matmul_{b}.csv")

        def parse(_):
            rows = {}
            with open(path) as f:
                for r in csv.DictReader(f):
                    if r["device"] == "cpu" and r["n"] in ("1024", "2048"):
                        rows[(r["impl"], f"sgemm {r['n']}")] = float(r["median_ms"])
            return rows
        return path, parse

    jobs = []
    if want & {"mlp", "lenet"}:
        for b in BUILDS:
            path = os.path.join(tmp, f"train_{b}.csv")
            jobs.append((f"gpudl-{b}", [exe[(b, "bench_train")], "--cpu", "--csv", path] + q, train_csv(path)))
    if "amp" in want:   # gpudl's FP16 and BF16 mixed precision against its own FP32, the README's build
        amp_csv = os.path.join(tmp, "train_amp.csv")

        def amp(_):
            rows = {}
            with open(amp_csv) as f:
                for r in csv.DictReader(f):
                    rows[(f"amp-{r['precision']}", f"{r['model']} {r['batch']}")] = float(r["median_ms"])
            return rows
        jobs.append(("gpudl-amp", [exe[("readme", "bench_train")], "--cpu", "--amp", "--csv", amp_csv] + q, amp))
    if want & {"mlp", "lenet"}:
        if torch_ok:
            jobs.append(("torch", [args.torch_python, os.path.join(HERE, "torch_train.py"), "--cpu", "--threads", T] + q,
                         table_lines("torch-eager")))
        if jax_ok:
            jobs.append(("jax", [args.jax_python, os.path.join(HERE, "jax_train.py"), "--threads", T] + q, table_lines("jax-jit")))
    if "gpt" in want:
        steps = ["--steps", str(args.gpt_steps)]
        for b in BUILDS:
            jobs.append((f"gpudl-{b}", [exe[(b, "gpt_text")], "--cpu", "--bench"] + steps, gpt))
        if torch_ok:
            jobs.append(("torch", [args.torch_python, gpt_worker, "--worker", "torch", "--threads", T] + steps, gpt))
        if jax_ok:
            jobs.append(("jax", [args.jax_python, gpt_worker, "--worker", "jax", "--threads", T] + steps, gpt))
    if "sgemm" in want:
        for b in BUILDS:
            path, parse = matmul(b)
            jobs.append((f"sgemm-{b}", [exe[(b, "bench_matmul")], "--cpu-only", "--csv", path] + q, parse))

    cpu = platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    isa = "AVX-512" if " avx512f" in flags else "AVX2" if " avx2" in flags else "no AVX2"
    if capped:
        isa += ", every implementation capped at AVX2: " + " ".join(f"{k}={v}" for k, v in capped.items())
    print(f"CPU training and SGEMM: {args.rounds} interleaved rounds, {args.threads} threads; {cpu} ({isa}); "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("anchors: " + ", ".join(n for n, ok in (("PyTorch", torch_ok), ("JAX", jax_ok), ("OpenBLAS", blas)) if ok)
          + (" (missing: " + ", ".join(n for n, ok in (("PyTorch", torch_ok), ("JAX", jax_ok), ("OpenBLAS", blas))
                                        if not ok) + ")" if not (torch_ok and jax_ok and blas) else ""))
    res, quiet = {}, {}   # (impl, row) -> [ms per round]
    for r in range(args.rounds):
        busy = others_busy()
        calm = busy is not None and busy < args.quiet
        k = r % len(jobs)
        for name, cmd, parse in jobs[k:] + jobs[:k]:
            out = run(cmd, env, cwd=tmp)
            if out is None:
                continue
            for key, ms in parse(out).items():
                impl, row = key if isinstance(key, tuple) else (name, key)
                if impl == "gpudl" and name.startswith("sgemm-"):
                    impl = "gpudl-" + name.split("-", 1)[1]
                elif impl == "openblas":
                    impl = "openblas-" + name.split("-", 1)[1]
                res.setdefault((impl, row), []).append(ms)
                if calm:
                    quiet.setdefault((impl, row), []).append(ms)
        where = f"other programs busy on {busy:.2f} cores before it" if busy is not None else "load unknown"
        print(f"round {r + 1} done ({where})", flush=True)

    order = ["mlp 128", "mlp 1024", "lenet 128", "gpt step", "sgemm 1024", "sgemm 2048"]
    out_rows = []
    for label, sets in (("all rounds", res), (f"quiet rounds (other programs on < {args.quiet} cores)", quiet)):
        if not sets:
            print(f"\n{label}: none")
            continue
        if any(not i.startswith("amp-") for i, _ in sets):
            print(f"\n{label}: median ms per step (SGEMM: per call)")
            print(f"{'row':<11} {'gpudl README':>12} {'gpudl native':>12} {'torch':>9} {'jax':>9} {'openblas':>9} "
                  f"{'best anchor':>12} {'ratio README':>12} {'ratio native':>12}")
        for row in order:
            med = {}
            for impl in ("gpudl-readme", "gpudl-native", "torch", "jax", "openblas-readme", "openblas-native"):
                v = sets.get((impl, row))
                if v:
                    med[impl] = statistics.median(v)
            if not med:
                continue
            if "openblas-readme" in med or "openblas-native" in med:   # one library: both processes' samples
                med["openblas"] = statistics.median(sets.get(("openblas-readme", row), []) +
                                                    sets.get(("openblas-native", row), []))
            anchors = {a: med[a] for a in ("torch", "jax", "openblas") if a in med}
            best = min(anchors, key=anchors.get) if anchors else None

            def cell(k, w=9):
                return f"{med[k]:{w}.2f}" if k in med else f"{'-':>{w}}"

            def ratio(k):
                return f"{anchors[best] / med[k]:12.2f}" if best and k in med else f"{'-':>12}"
            print(f"{row:<11} {cell('gpudl-readme', 12)} {cell('gpudl-native', 12)} {cell('torch')} {cell('jax')} "
                  f"{cell('openblas')} {best or '-':>12} {ratio('gpudl-readme')} {ratio('gpudl-native')}")
            out_rows.append(dict(rounds_kind="all" if sets is res else "quiet", row=row, threads=args.threads,
                                 rounds=max(len(v) for (i, r2), v in sets.items() if r2 == row),
                                 gpudl_readme_ms=med.get("gpudl-readme", ""), gpudl_native_ms=med.get("gpudl-native", ""),
                                 torch_ms=med.get("torch", ""), jax_ms=med.get("jax", ""),
                                 openblas_ms=med.get("openblas", ""), best_anchor=best or "",
                                 ratio_readme=round(anchors[best] / med["gpudl-readme"], 3)
                                 if best and "gpudl-readme" in med else "",
                                 ratio_native=round(anchors[best] / med["gpudl-native"], 3)
                                 if best and "gpudl-native" in med else ""))
        amp_rows = [row for row in order[:3] if (("amp-fp32", row)) in sets]
        if amp_rows:
            print(f"\n{label}: gpudl's mixed precision against its own FP32 (README build), median ms per step")
            print(f"{'row':<11} {'fp32':>9} {'fp16':>9} {'bf16':>9} {'fp16/fp32':>10} {'bf16/fp32':>10}")
            for row in amp_rows:
                m = {p: statistics.median(sets[(f"amp-{p}", row)]) for p in ("fp32", "fp16", "bf16") if (f"amp-{p}", row) in sets}
                if len(m) < 3:
                    continue
                print(f"{row:<11} {m['fp32']:9.2f} {m['fp16']:9.2f} {m['bf16']:9.2f} {m['fp16'] / m['fp32']:10.2f} "
                      f"{m['bf16'] / m['fp32']:10.2f}")
                out_rows.append(dict(rounds_kind="all" if sets is res else "quiet", row=row + " amp", threads=args.threads,
                                     rounds=len(sets[("amp-fp32", row)]), gpudl_readme_ms=m["fp32"], gpudl_native_ms="",
                                     torch_ms="", jax_ms="", openblas_ms="", best_anchor="gpudl fp32",
                                     ratio_readme=round(m["fp16"] / m["fp32"], 3), ratio_native=round(m["bf16"] / m["fp32"], 3)))
    print("(ratio: the best anchor's time over gpudl's; above 1 gpudl is faster. README: cc -O2 -fopenmp; "
          f"native: {' '.join(BUILDS['native'][:2])}; the amp rows' CSV ratios are fp16/fp32 and bf16/fp32)")
    if out_rows:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(out_rows[0]))
            w.writeheader()
            w.writerows(out_rows)
        print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
