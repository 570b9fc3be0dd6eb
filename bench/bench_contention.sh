#!/usr/bin/env bash
# make bench-contention: gpudl's OpenMP threads on a machine that something
# else is using too (issue 23: a student's laptop always runs a browser).
#
# Each program, built as the README says (cc -fopenmp; and, where nvcc is
# installed, nvcc -Xcompiler -fopenmp, the build make demo uses), runs on
# 1 and on 2 OpenMP threads (OMP_NUM_THREADS), on the idle machine and while
# a busy loop (another process, not pinned) keeps one core busy:
#   mlp_fashion   one epoch of the full Fashion-MNIST (training seconds, from its images/s)
#   cnn_fashion   one epoch of the demo CNN on it (the same)
#   bench_train   its median step times (MLP batch 128, LeNet-5 batch 128)
# and, for the examples, the build without -fopenmp. The rounds interleave
# every case; the table gives medians, and the ratio 2 threads / 1 thread
# idle and busy (the goal: at most 1.10 busy, below 1 idle). A benchmark:
# it prints a table and writes bench/contention.csv, never fails on a number.
#
#   bash bench/bench_contention.sh [ROUNDS]        (default 3)
#   SRC=DIR bash bench/bench_contention.sh         the library, examples and benchmark from the
#                                                  checkout DIR (an older one: before and after)
#   PROGRAMS="mlp bench" bash bench/bench_contention.sh   a subset (mlp, cnn, bench)
set -u
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SRC=${SRC:-.}
PROGRAMS=${PROGRAMS:-"mlp cnn bench"}
B=build/contention
mkdir -p $B/src
cp "$SRC/gpudl.h" "$SRC/gpudl_kernels.cu" $B/src/
cp "$SRC/examples/mlp_fashion.c" "$SRC/examples/cnn_fashion.c" "$SRC/bench/bench_train.c" $B/src/
sed -i 's|#include "../gpudl.h"|#include "gpudl.h"|' $B/src/bench_train.c
sh data/prepare.sh >/dev/null || exit 1
DATA=build/data/fashion-mnist
NTRAIN=60000
grep -q full build/data/SOURCE || { NTRAIN=2000; echo "note: only the subset of Fashion-MNIST is here ($(cat build/data/SOURCE)): epochs are short"; }

builds=()
build() {   # build NAME CMD...
    local name=$1; shift
    if (cd $B/src && "$@") >$B/$name.build.log 2>&1; then builds+=("$name"); else echo "build $name failed:"; tail -5 $B/$name.build.log; fi
}
for p in mlp_fashion cnn_fashion bench_train; do
    build "cc_omp_$p" cc -O2 -fopenmp -DGPUDL_NO_CUDA -o ../cc_omp_$p $p.c -lm
    [ $p = bench_train ] || build "cc_plain_$p" cc -O2 -DGPUDL_NO_CUDA -o ../cc_plain_$p $p.c -lm
    if command -v nvcc >/dev/null; then
        build "nvcc_omp_$p" nvcc -O2 -Xcompiler -fopenmp -o ../nvcc_omp_$p $p.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn -lgomp
    fi
done

HOG_PID=
hog_on()  { ( trap 'exit 0' TERM; while :; do :; done ) & HOG_PID=$!; sleep 0.5; }
hog_off() { [ -n "$HOG_PID" ] && kill "$HOG_PID" 2>/dev/null; wait "$HOG_PID" 2>/dev/null; HOG_PID=; }
trap hog_off EXIT

# one run: prints "case value" lines (seconds, or ms for bench_train's steps)
run_case() {   # run_case BINARY THREADS
    local bin=$1 threads=$2 out
    case $bin in
    *bench_train)
        out=$(OMP_NUM_THREADS=$threads $B/$bin --cpu --quick 2>/dev/null)
        printf '%s\n' "$out" | awk '$1=="mlp" && $2=="fp32" && $3==128 {print "step_mlp128_ms", $4}
                                    $1=="lenet" && $2=="fp32" && $3==128 {print "step_lenet128_ms", $4}' ;;
    *)
        out=$(OMP_NUM_THREADS=$threads $B/$bin --cpu --epochs 1 --data $DATA 2>/dev/null)   # the epoch from its images/s
        printf '%s\n' "$out" | sed -n 's/^wall time: .*, \([0-9.]*\) images\/s$/\1/p' | awk -v n="$NTRAIN" '{printf "epoch_s %.3f\n", n / $1}' ;;
    esac
}

want() { case " $PROGRAMS " in *" $1 "*) return 0 ;; esac; return 1; }
: > $B/raw.txt
for r in $(seq 1 "$ROUNDS"); do
    for load in idle busy; do
        [ $load = busy ] && hog_on
        for bin in "${builds[@]}"; do
            case $bin in *mlp_fashion) want mlp || continue ;; *cnn_fashion) want cnn || continue ;; *bench_train) want bench || continue ;; esac
            for threads in 1 2; do
                [ "${bin#cc_plain_}" != "$bin" ] && [ $threads = 2 ] && continue   # no OpenMP: one thread
                run_case "$bin" $threads | while read -r what v; do
                    echo "$bin $load $threads $what $v" >> $B/raw.txt
                    printf 'round %d/%d  %-22s %-5s %d thread(s)  %-17s %s\n' "$r" "$ROUNDS" "$bin" $load $threads "$what" "$v"
                done
            done
        done
        hog_off
    done
done

echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $ROUNDS rounds, medians"
python3 - "$B/raw.txt" bench/contention.csv <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    b, load, t, what, v = line.split()
    rows[(b, what, load, int(t))].append(float(v))
keys = sorted({(b, w) for (b, w, _, _) in rows})
med = lambda k: statistics.median(rows[k]) if rows.get(k) else float('nan')
with open(sys.argv[2], 'w') as f:
    f.write("build,measure,idle_1t,idle_2t,busy_1t,busy_2t,ratio_idle,ratio_busy\n")
    print("%-24s %-17s %9s %9s %9s %9s %10s %10s" % ("build", "measure", "idle 1t", "idle 2t", "busy 1t", "busy 2t", "2t/1t idle", "2t/1t busy"))
    for b, w in keys:
        v = [med((b, w, l, t)) for l in ("idle", "busy") for t in (1, 2)]
        ri, rb = v[1] / v[0], v[3] / v[2]
        fmt = lambda x: "%9.2f" % x if x == x else "%9s" % "-"
        print("%-24s %-17s %s %s %s %s %10s %10s" % (b, w, fmt(v[0]), fmt(v[1]), fmt(v[2]), fmt(v[3]),
              "%.2f" % ri if ri == ri else "-", "%.2f" % rb if rb == rb else "-"))
        f.write("%s,%s,%s,%.4f,%.4f\n" % (b, w, ",".join("%.4f" % x for x in v), ri, rb))
print("wrote %s" % sys.argv[2])
PY
