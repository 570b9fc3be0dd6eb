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
# Steps, in the order given (default: env build test train matmul demo):
#   env       the GPU, driver, nvcc, where cuBLAS/cuDNN were found, PyTorch
#   build     the GPU test suites, benchmarks and examples (make -j)
#   test      make test-gpu-suites: every op and layer GPU vs CPU, training
#             parity, FP16/BF16 accuracy on the full Fashion-MNIST
#   sanitize  make test-gpu-sanitize: compute-sanitizer over the suites
#   train     make bench-train: training steps, gpudl and PyTorch (eager,
#             torch.compile, AMP) side by side
#   matmul    make bench-matmul: matmul vs raw cuBLAS and torch.matmul
#   demo      make demo and the mixed-precision example on the GPU
# On the lent machine, with the full Fashion-MNIST carried in data/fashion-mnist
# (git-ignored; copy it from /usr/share/datasets/fashion-mnist):
#   tools/gpu_session.sh $OUT                  build, suites, benchmarks, demos
#   tools/gpu_session.sh $OUT build sanitize   compute-sanitizer, in a second call
# Environment: BUDGET (seconds for the whole call, default 570),
# CUDA_ARCH (default: sm_90 only, which halves the build time on an
# H100/H200), JOBS (make -j, default the core count).
set -u
cd "$(dirname "$0")/.."
OUTDIR=${1:?usage: tools/gpu_session.sh OUTDIR [STEP...]}
shift
STEPS=${*:-env build test train matmul demo}
BUDGET=${BUDGET:-570}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
export CUDA_ARCH=${CUDA_ARCH:-"-gencode arch=compute_90,code=sm_90"}
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
    ls /usr/local/cuda/lib64 2>/dev/null | grep -E '^lib(cublas|cublasLt|cudnn)\.so' || echo "no cuBLAS/cuDNN in /usr/local/cuda/lib64"
    find / -name cudnn_version.h -not -path '/proc/*' 2>/dev/null | head -n 3
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name(0))'
    command -v compute-sanitizer || echo "no compute-sanitizer"
    nproc; free -g | head -n 2
}
export -f env_report

for s in $STEPS; do
    case $s in
        env)      step env 60 bash -c env_report ;;
        build)    step build 240 make -j"$JOBS" build/suite_core_cuda build/suite_train_cuda build/bench_matmul build/bench_train \
                      build/cnn_fashion build/mlp_fashion build/mixed_precision build/cpu_vs_gpu build/gradcheck ;;
        test)     step test 240 make test-gpu-suites ;;
        sanitize) step sanitize 480 make test-gpu-sanitize ;;
        train)    step train 240 make bench-train ;;
        matmul)   step matmul 150 make bench-matmul ;;
        demo)     step demo 150 bash -c 'make demo && ./build/mixed_precision --data build/data/fashion-mnist' ;;
        *)        echo "unknown step '$s'" | tee -a "$SUM" ;;
    esac
done

cp bench/*.csv build/sanitizer_control.log "$LOG"/ 2>/dev/null
tar czf "$OUTDIR/gpu_session.tgz" -C build gpu_session
cp "$SUM" "$OUTDIR/summary.txt"
echo "== summary ($(( $(date +%s) - t0 )) s)"; cat "$SUM"
