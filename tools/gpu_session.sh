#!/usr/bin/env bash
# tools/gpu_session.sh - everything that needs a GPU, in one command, for a
# machine lent for a short while: each step runs under a time limit and the
# session goes on past a failed one, so one call brings back every result
# there is. Each step logs to build/gpu_session/STEP.log, and the tail of
# each log is printed; at the end OUTDIR gets two files: summary.txt and
# gpu_session.tgz (every log and the benchmarks' CSVs).
#
#   tools/gpu_session.sh OUTDIR [STEP...]
#
# Steps, in the order given (default: env build test compare matmul demo gpt):
#   env       the GPU, driver, nvcc, where cuBLAS/cuDNN were found, PyTorch
#   build     the GPU test suites, benchmarks and examples (make -j)
#   test      make test-gpu-suites: every op and layer GPU vs CPU, training
#             parity, FP16/BF16 accuracy on the full Fashion-MNIST
#   sanitize  make test-gpu-sanitize: compute-sanitizer over the suites
#   compare   issue 26: the training step measured beside bench/model_step.py's
#             prediction for this GPU, in one run: gpudl as built (cuBLASLt off
#             and on), each of STEP_VARIANTS (CUDA Graphs off, ...), gpudl
#             before issue 26 (commit 42ad03e, from git history or a carried
#             build/before),
#             PyTorch eager and torch.compile (bench/torch_train.py); writes
#             OUTDIR/step_compare.csv (measured and modelled side by side) and
#             OUTDIR/model.txt. Takes the train step's place in the default list.
#   train     make bench-train: training steps, gpudl and PyTorch (eager,
#             torch.compile, AMP) side by side
#   matmul    make bench-matmul: matmul vs raw cuBLAS and torch.matmul
#   demo      make demo and the mixed-precision example on the GPU
#   grade     issue 34: the CUDA assignments graded with nvcc on the GPU (not
#             in the default list): tensor_core's solution (its WMMA on real
#             tensor cores, the training run in FP16 against gpudl's own) and
#             three seeded bugs (an FP16 accumulator: the hardware's rounding;
#             a missing barrier and an assumed fragment layout: does real
#             hardware expose them as the emulator's shuffle does?), then
#             the other CUDA solutions, checks only
#   gpt       issue 27: the GPT step (examples/gpt_text.c, 4 layers, width 128,
#             context 64, batch 32) timed on the GPU with each attention path
#             (--attention 1: cuBLAS GEMMs + softmax, 2: the fused kernels; the
#             model's choice is gpudl__attn_path's launch model) in FP32 and
#             FP16, its per-layer profile, then make demo-gpt on the GPU
# On the lent machine, with the full Fashion-MNIST carried in data/fashion-mnist
# (git-ignored; copy it from /usr/share/datasets/fashion-mnist):
#   tools/gpu_session.sh $OUT                  build, suites, benchmarks, demos
#   tools/gpu_session.sh $OUT build sanitize   compute-sanitizer, in a second call
#   tools/gpu_session.sh $OUT build compare    the step against the model (issue 26),
#                                              in a call of its own (torch.compile's
#                                              compilations take minutes)
# Environment: BUDGET (seconds for the whole call, default 570),
# CUDA_ARCH (default: sm_90 only, which halves the build time on an
# H100/H200), JOBS (make -j, default the core count), BENCH_PY (the Python
# with torch, default python3), STEP_VARIANTS (below).
# Without an NVIDIA GPU it says so and exits (status 2): it never writes a
# number measured anywhere else.
set -u
cd "$(dirname "$0")/.." || exit 1
OUTDIR=${1:?usage: tools/gpu_session.sh OUTDIR [STEP...]}
shift
STEPS=${*:-env build test compare matmul demo gpt}
BUDGET=${BUDGET:-570}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
export CUDA_ARCH=${CUDA_ARCH:-"-gencode arch=compute_90,code=sm_90"}
export BENCH_PY=${BENCH_PY:-python3}
# >>placeholder (issue 26): bench_train's switches for the step's settings,
# "label:arguments" each, run as extra rows of the compare step. The step's
# helper names them; until bench_train's usage line lists a switch, its
# variant is skipped with a note (never run blind). bench_train already
# times each configuration with cuBLASLt's epilogues off and on (impl
# gpudl / gpudl-cublaslt); with a desc field and no switch, add one to
# bench_train.c. Label "graph-off" is compared with the model's "gpudl
# after, no graph" row, the default build's gpudl rows with the model's
# STEP_DEFAULT_ROW ("gpudl after, CUDA Graph": graphs on by default, as
# issue 26 asks; "gpudl after, no graph" if they end up opt-in).
export STEP_VARIANTS=${STEP_VARIANTS:-"graph-off:--no-graph"}
export STEP_DEFAULT_ROW=${STEP_DEFAULT_ROW:-"gpudl after, CUDA Graph"}
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "tools/gpu_session.sh: no NVIDIA GPU here (nvidia-smi lists none): nothing measured, nothing written."
    echo "(the model of the step needs no GPU: python3 bench/model_step.py)"
    exit 2
fi
libdirs=$(sh tools/cuda_flags.sh --libdirs)   # cuDNN from pip wheels: for programs run outside make too
[ -n "$libdirs" ] && export LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
LOG=build/gpu_session
rm -rf "$LOG"; mkdir -p "$LOG" "$OUTDIR"
t0=$(date +%s)
SUM=$LOG/summary.txt
: > "$SUM"

# step NAME LIMIT CMD...: runs CMD with at most LIMIT seconds (less if the
# budget is nearly spent), logs to $LOG/NAME.log, notes rc and time.
step() {
    local name=$1 limit=$2 left rc t1; shift 2
    left=$((BUDGET - ($(date +%s) - t0) - 15))
    [ "$left" -lt "$limit" ] && limit=$left
    if [ "$limit" -lt 10 ]; then echo "$name: not run (budget spent)" | tee -a "$SUM"; return; fi
    t1=$(date +%s)
    timeout -k 5 "$limit" "$@" > "$LOG/$name.log" 2>&1
    rc=$?
    [ $rc = 124 ] && echo "(killed after $limit s)" >> "$LOG/$name.log"
    echo "$name: rc=$rc in $(( $(date +%s) - t1 )) s (limit $limit s)" | tee -a "$SUM"
    echo "---- $name.log: failures, then the tail"
    grep -E -m 15 'FAIL|rror' "$LOG/$name.log"; tail -n 12 "$LOG/$name.log"; echo "----"
}

env_report() {
    date -u; uname -m
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || nvidia-smi
    nvcc --version | tail -n 2
    echo "cuda_flags: [$(sh tools/cuda_flags.sh)]"
    echo "libdirs:    [$(sh tools/cuda_flags.sh --libdirs)]"
    find /usr/local/cuda/lib64/ -maxdepth 1 -regex '.*/lib\(cublas\|cublasLt\|cudnn\)\.so.*' 2>/dev/null | grep . ||
        echo "no cuBLAS/cuDNN in /usr/local/cuda/lib64"
    find / -name cudnn_version.h -not -path '/proc/*' 2>/dev/null | head -n 3
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name(0))'
    command -v compute-sanitizer || echo "no compute-sanitizer"
    nproc; free -g | head -n 2
}
export -f env_report

# compare: the step measured beside the model (issue 26). The rows of
# OUTDIR/step_compare.csv: measured median and min (ms, batch 128, from
# bench_train.c's and torch_train.py's own timing: warm-up, 20 samples of
# >= 5 ms) and the model's low-high step time (us) for the same row.
compare_step() {
    local gpu key mem v label args usage t
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
    mem=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n 1)
    case $gpu in
        *H200*) key=h200 ;;
        *H100*PCIe*) key=h100-pcie ;;
        *H100*) key=h100-sxm ;;
        *A100*) if [ "${mem%%.*}" -gt 50000 ] 2>/dev/null; then key=a100-80; else key=a100-40; fi ;;
        *) key= ;;
    esac
    echo "GPU: $gpu ($mem MiB) -> model: ${key:-none (bench/model_step.py has no such GPU: measured rows only)}"
    if [ -n "$key" ]; then
        python3 bench/model_step.py --gpu "$key" --lenet-optim sgd --csv "$LOG/model.csv" | tee "$OUTDIR/model.txt"
    fi
    [ -x build/bench_train ] || make build/bench_train || return 1
    ./build/bench_train --csv "$LOG/train_default.csv"
    usage=$(./build/bench_train --help 2>&1)
    for v in $STEP_VARIANTS; do
        label=${v%%:*}; args=${v#*:}
        t=${args%% *}
        if ! printf '%s\n' "$usage" | grep -q -- "$t"; then
            echo "variant $label SKIPPED: bench_train's usage has no $t (a placeholder in tools/gpu_session.sh: STEP_VARIANTS)"
            continue
        fi
        # shellcheck disable=SC2086  # the variant's arguments are words
        ./build/bench_train $args --csv "$LOG/train_$label.csv"
    done
    # gpudl before issue 26: the tree of commit 42ad03e, built by its own
    # Makefile; from git history, or carried (a machine lent without .git:
    # here `mkdir -p build/before && git archive 42ad03e | tar -x -C
    # build/before`, then carry build/before)
    if [ ! -f build/before/Makefile ] && git rev-parse -q --verify '42ad03e^{commit}' >/dev/null 2>&1; then
        mkdir -p build/before && git archive 42ad03e | tar -x -C build/before
    fi
    if [ -f build/before/Makefile ]; then
        make -C build/before build/bench_train &&
            (cd build/before && ./build/bench_train --csv "../../$LOG/train_before.csv")
    else
        echo "gpudl before issue 26 SKIPPED: neither git history (commit 42ad03e) nor a carried build/before here"
    fi
    if $BENCH_PY -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        $BENCH_PY bench/torch_train.py && cp bench/torch_train.csv "$LOG/torch_train.csv"
    else
        echo "PyTorch SKIPPED: no torch with CUDA for $BENCH_PY (set BENCH_PY)"
    fi
    python3 - "$LOG" "$OUTDIR/step_compare.csv" "$gpu" "$key" <<'PY'
import csv, os, sys
log, out, gpu, key = sys.argv[1:5]
model = {}
if os.path.exists(os.path.join(log, "model.csv")):
    for r in csv.DictReader(open(os.path.join(log, "model.csv"))):
        model[(r["model"], r["precision"], r["variant"])] = r
# (file, impl) -> the model's row; impl is bench_train's or torch_train's column
which = {("train_before.csv", "gpudl"): "gpudl before", ("train_before.csv", "gpudl-cublaslt"): "gpudl before, cuBLASLt on",
         ("train_default.csv", "gpudl"): os.environ.get("STEP_DEFAULT_ROW", "gpudl after, CUDA Graph"),
         ("train_graph-off.csv", "gpudl"): "gpudl after, no graph",
         ("torch_train.csv", "torch-eager"): "PyTorch eager"}
rows = []
for f in sorted(os.listdir(log)):
    if not (f.startswith("train_") or f == "torch_train.csv") or not f.endswith(".csv"):
        continue
    for r in csv.DictReader(open(os.path.join(log, f))):
        if r.get("device") != "gpu":   # a CPU fallback is not a GPU number
            continue
        v = which.get((f, r["impl"]), "")
        m = model.get((r["model"], r.get("precision", "fp32"), v)) if int(r["batch"]) == 128 else None
        med_us = float(r["median_ms"]) * 1e3
        verdict = ""
        if m:
            lo, hi = float(m["step_us_low"]), float(m["step_us_high"])
            verdict = "inside" if lo <= med_us <= hi else ("faster than modelled" if med_us < lo else "slower than modelled")
        rows.append(dict(gpu=gpu, source=f, impl=r["impl"], model=r["model"], precision=r.get("precision", "fp32"),
                         batch=r["batch"], median_us=round(med_us, 1), min_us=round(float(r["min_ms"]) * 1e3, 1),
                         model_variant=v if m else "", model_gpu=key if m else "",
                         model_step_us_low=m["step_us_low"] if m else "", model_step_us_high=m["step_us_high"] if m else "",
                         verdict=verdict, model_source=m["source"] if m else ""))
if not rows:
    print("no GPU rows measured: no step_compare.csv")
    sys.exit(1)
with open(out, "w", newline="") as fh:
    w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
print(f"{'source':<20} {'impl':<15} {'model':<6} {'prec':<5} {'batch':>5} {'median us':>10} {'modelled us':>13}  verdict")
for r in rows:
    mod = f"{r['model_step_us_low']}-{r['model_step_us_high']}" if r["model_variant"] else "-"
    print(f"{r['source']:<20} {r['impl']:<15} {r['model']:<6} {r['precision']:<5} {r['batch']:>5} {r['median_us']:>10} {mod:>13}  {r['verdict']}")
print(f"wrote {out}")
PY
}
export -f compare_step
export LOG OUTDIR

for s in $STEPS; do
    case $s in
        env)      step env 60 bash -c env_report ;;
        build)    step build 240 make -j"$JOBS" build/suite_core_cuda build/suite_train_cuda build/bench_matmul build/bench_train \
                      build/cnn_fashion build/mlp_fashion build/mixed_precision build/cpu_vs_gpu build/gradcheck build/gpt_text ;;
        test)     step test 240 make test-gpu-suites ;;
        sanitize) step sanitize 480 make test-gpu-sanitize ;;
        compare)  step compare 330 bash -c compare_step ;;
        train)    step train 240 make bench-train ;;
        matmul)   step matmul 150 make bench-matmul ;;
        demo)     step demo 150 bash -c 'make demo && ./build/mixed_precision --data build/data/fashion-mnist' ;;
        gpt)      step gpt 180 bash -c 'for p in "" --fp16; do for a in 1 2 0; do echo "== gpt_text --bench --steps 50 --attention $a $p";
                      ./build/gpt_text --bench --steps 50 --attention $a $p || exit 1; done; done;
                      ./build/gpt_text --bench --steps 20 --profile && make demo-gpt' ;;
        grade)    step grade 300 bash -c 'for f in assignments/tensor_core/solution.cu tests/grade/tc_half_acc.cu tests/grade/tc_no_sync.cu \
                      tests/grade/tc_layout.cu; do echo "== $f"; make grade A=tensor_core SRC=$f || exit 1; done;
                      for a in sgemm attention relu_xent; do make grade A=$a SRC=assignments/$a/solution.cu GRADE_ARGS=--no-train || exit 1; done' ;;
        *)        echo "unknown step '$s'" | tee -a "$SUM" ;;
    esac
done

cp bench/*.csv build/sanitizer_control.log "$LOG"/ 2>/dev/null
tar czf "$OUTDIR/gpu_session.tgz" -C build gpu_session
cp "$SUM" "$OUTDIR/summary.txt"
echo "== summary ($(( $(date +%s) - t0 )) s)"; cat "$SUM"
