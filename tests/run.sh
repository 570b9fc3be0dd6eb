#!/usr/bin/env bash
# The test tiers (README, "Tests"):
#   bash tests/run.sh           make test: every area of the kit in 10 minutes
#                               or less on 2 cores without a GPU: compile
#                               checks, the CPU suites, the faults, one epoch
#                               of the demo, a core of the GPU suites on the
#                               emulated device, the examples in a short mode,
#                               the autograder's core, data parallel on CPU
#                               ranks, and smoke runs of Windows and ARM64
#                               where their tools are installed (.ci/run
#                               installs them).
#   bash tests/run.sh --extra   make test-extra: what make test leaves out:
#                               the compile checks' other configurations, the
#                               sanitizers, fuzzing, every example built with
#                               nvcc, the CUDA-built suites' CPU tests, CBLAS
#                               layers, data parallel on NCCL ranks of the
#                               emulated GPU, the autograder in full with its
#                               training runs, and the full emulated device,
#                               Windows and ARM64 tiers. make test-all = make
#                               test-extra, then make test (as .ci/run does).
# A line at least every 30 seconds: each section starts with the time so far,
# each program's lines stream as they come, and a step silent for 20 s says
# what it is still doing. Ends with one line: N passed, N failed, N skipped.
set -u
cd "$(dirname "$0")/.."
EXTRA=0
[ "${1:-}" = "--extra" ] && EXTRA=1
CC=${CC:-cc}
CXX=${CXX:-c++}
NVCC=${NVCC:-nvcc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
CUDA_ARCH=${CUDA_ARCH:-"-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]"}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
B=build/test
mkdir -p "$B"
passed=0; failed=0; skipped=0
TIER=$([ $EXTRA = 1 ] && echo "make test-extra" || echo "make test")

# >>progress: every line that leaves this script touches $HB; a watcher
# prints a line when nothing has for 20 s (what runs, and for how long).
HB=$B/.heartbeat.$$
STEP=$B/.step.$$
: > "$HB"; echo "starting" > "$STEP"
START=$(date +%s)
exec 3>&1
exec > >(while IFS= read -r l; do printf '%s\n' "$l" >&3; : > "$HB"; done) 2>&1
OUT_PID=$!
(   while sleep 5; do
        [ -f "$HB" ] || exit 0
        now=$(date +%s); last=$(stat -c %Y "$HB" 2>/dev/null || echo "$now")
        if [ $((now - last)) -ge 20 ]; then
            t=$(( now - START ))
            printf '        ... %s: still running (%d:%02d into %s)\n' "$(cat "$STEP" 2>/dev/null)" $((t / 60)) $((t % 60)) "$TIER" >&3
            : > "$HB"
        fi
    done ) >&3 2>&3 &
WATCH_PID=$!
finish() { rm -f "$HB" "$STEP" "$B/.rc.$$"; kill "$WATCH_PID" 2>/dev/null; exec >&3 2>&3; wait "$OUT_PID" 2>/dev/null; }
trap finish EXIT
SECTION=
section() {   # section TITLE: a header with the time so far
    local t=$(( $(date +%s) - START ))
    printf '== [%d:%02d] %s\n' $((t / 60)) $((t % 60)) "$1"
    SECTION=$1
    echo "$1" > "$STEP"
}

check() {   # check NAME CMD...: a compile (or other) check that must succeed
    local name=$1; shift
    if "$@" >"$B/$name.log" 2>&1; then
        printf 'ok      %-34s\n' "$name"; passed=$((passed + 1))
    else
        printf 'FAIL    %-34s (%s)\n' "$name" "$*"; sed 's/^/        /' "$B/$name.log" | head -20; failed=$((failed + 1))
    fi
}
# pcheck NAME CMD...: a check run beside the next one (two at a time: the
# machine has two cores); the results print in order. pflush waits for all.
PENDING=()
pcheck_report() {   # pcheck_report NAME PID CMD
    local name=$1 pid=$2 cmd=$3
    wait "$pid"
    if [ "$(cat "$B/$name.rc" 2>/dev/null)" = 0 ]; then
        printf 'ok      %-34s\n' "$name"; passed=$((passed + 1))
    else
        printf 'FAIL    %-34s (%s)\n' "$name" "$cmd"; sed 's/^/        /' "$B/$name.log" | head -20; failed=$((failed + 1))
    fi
}
pcheck() {
    local name=$1; shift
    ( "$@" >"$B/$name.log" 2>&1; echo $? >"$B/$name.rc" ) &
    PENDING+=("$name" "$!" "$*")
    if [ ${#PENDING[@]} -ge 6 ]; then
        pcheck_report "${PENDING[0]}" "${PENDING[1]}" "${PENDING[2]}"
        PENDING=("${PENDING[@]:3}")
    fi
}
pflush() {
    while [ ${#PENDING[@]} -gt 0 ]; do
        pcheck_report "${PENDING[0]}" "${PENDING[1]}" "${PENDING[2]}"
        PENDING=("${PENDING[@]:3}")
    done
}
check_fails() {   # check_fails NAME MESSAGE CMD...: must fail, saying MESSAGE (a guard that has to fire)
    local name=$1 want=$2; shift 2
    if "$@" >"$B/$name.log" 2>&1 || ! grep -q "$want" "$B/$name.log"; then
        printf 'FAIL    %-34s (expected a compile error saying "%s")\n' "$name" "$want"; failed=$((failed + 1))
    else
        printf 'ok      %-34s\n' "$name"; passed=$((passed + 1))
    fi
}
skip() { printf 'SKIPPED %-34s %s\n' "$1" "$2"; skipped=$((skipped + 1)); }
run_suite() {   # run_suite CMD...: streams the program's lines and adds its "N passed, N failed, N skipped" (each, if several)
    local line seen=0 p=0 f=0 sk=0 rc rcf=$B/.rc.$$
    echo "$SECTION: $(basename "$1") ${2:-}" > "$STEP"
    while IFS= read -r line; do
        if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
            seen=1; p=$((p + BASH_REMATCH[1])); f=$((f + BASH_REMATCH[2])); sk=$((sk + BASH_REMATCH[3]))
        else printf '%s\n' "$line"; fi
    done < <("$@" 2>&1; echo $? > "$rcf")
    rc=$(cat "$rcf" 2>/dev/null || echo 1)
    if [ $seen = 1 ]; then
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + sk))
        [ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || { printf 'FAIL    %-34s exit status %d\n' "$1" "$rc"; failed=$((failed + 1)); }
    else
        printf 'FAIL    %-34s crashed or printed no summary (exit %d)\n' "$1" "$rc"; failed=$((failed + 1))
    fi
}

HAVE_NVCC=0
command -v "$NVCC" >/dev/null && HAVE_NVCC=1
CUDA_FLAGS=
[ $HAVE_NVCC = 1 ] && CUDA_FLAGS=$(NVCC=$NVCC sh tools/cuda_flags.sh)   # empty where nvcc finds cuBLAS and cuDNN by itself
HAVE_CLANG_OMP=0
command -v clang >/dev/null && echo '#include <omp.h>' | clang -fopenmp -x c -fsyntax-only - 2>/dev/null && HAVE_CLANG_OMP=1
# Every example builds in a folder of its own with just the two files, as the README says.
dropin() {   # dropin NAME: a fresh folder with gpudl.h, gpudl_kernels.cu and examples/NAME.c
    rm -rf "$B/dropin_$1" && mkdir -p "$B/dropin_$1" && cp gpudl.h gpudl_kernels.cu "examples/$1.c" "$B/dropin_$1/"
}
nvcc_dropin() {   # nvcc_dropin NAME: the README's nvcc line (with OpenMP) in its drop-in folder, as a pcheck
    pcheck "nvcc_$1" sh -c "cd $B/dropin_$1 && $NVCC -O2 -Xcompiler -fopenmp,-Wall,-Werror -o $1_cuda $1.c gpudl_kernels.cu $CUDA_FLAGS -lcublas -lcublasLt -lcudnn -lgomp"
}
export GPUDL_TEST_DATA=$B/data
prepare_data() {   # the shipped Fashion-MNIST subset, decompressed (the suites read both forms)
    mkdir -p "$GPUDL_TEST_DATA"
    for f in data/fashion-mnist-subset/*.gz; do gunzip -c "$f" > "$GPUDL_TEST_DATA/$(basename "$f" .gz)"; done
}

if [ $EXTRA = 0 ]; then
# ============================================================== make test
section "compile checks (two at a time; make test-extra: the same compiles in other configurations)"
# (moved to make test-extra, its first section: impl_c99_cpu, impl_cxx_cpu, impl_clang_c99_cpu, which make
# test's embedding section compiles under stricter warnings (cc C99 -fno-openmp, c++ C++11, clang C11);
# impl_c99_strict_posix_openmp, user_macros_impl_cxx, impl_c_with_cuda_headers, impl_c_nccl_no_mpi and
# nvcc_user_macros, variants of checks that stay here; DESIGN.md keeps nvcc for sm_80 and sm_90 here)
T=tests/compile
pcheck api_c99_pedantic        $CC -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only $T/api.c
pcheck api_cxx_pedantic        $CXX -std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c++ $T/api.c
pcheck impl_c99_cpu_openmp     $CC -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -fopenmp -c $T/impl.c -o $B/impl_omp.o
pcheck impl_c_cpu_no_simd      $CC -std=c99 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_NO_SIMD -c $T/impl.c -o $B/impl_nosimd.o
# a program's one-letter and short macros before the header, and its implementation (issue 35)
pcheck user_macros_api_c99     $CC -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only $T/user_macros.c
pcheck user_macros_impl_c99    $CC -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DUSER_MACROS_IMPL -c $T/user_macros.c -o $B/user_macros.o
pcheck impl_after_stdio_c99    $CC -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -c $T/impl_after_stdio.c -o $B/impl_after_stdio.o
if command -v tcc >/dev/null; then   # a small compiler without SSE intrinsics: the scalar paths, the README's example
    pcheck tcc_mlp_fashion      tcc -I. -DGPUDL_NO_CUDA -o $B/mlp_fashion_tcc examples/mlp_fashion.c -lm
else
    skip tcc_mlp_fashion "tcc not installed (apt-get install tcc)"
fi
pcheck readme_tour_compiles    $CC -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -fsyntax-only $T/readme_tour.c
pcheck two_translation_units   sh -c "$CC -std=c99 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -o $B/two_tu $T/two_tu_main.c $T/two_tu_other.c -lm && $B/two_tu"
pcheck static_linkage          $CC -std=c99 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_STATIC -DGPUDL_TU_STATIC -o $B/two_tu_static $T/two_tu_main.c $T/two_tu_other.c -lm
if command -v clang >/dev/null; then
    # clang's OpenMP regions do not inherit a function's target("avx512f"): vector code inside one fails to compile
    if [ $HAVE_CLANG_OMP = 1 ]; then
        pcheck impl_clang_c99_cpu_openmp clang -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -fopenmp -c $T/impl.c -o $B/impl_clang_omp.o
    else
        skip impl_clang_c99_cpu_openmp "clang has no omp.h (libomp-dev)"
    fi
else
    skip impl_clang_c99_cpu_openmp "clang not installed"
fi
if [ -f "$CUDA_INC/cuda_runtime.h" ] && [ -f "$CUDA_INC/cudnn.h" ]; then
    pcheck impl_cxx_with_cuda_headers $CXX -Wall -Wextra -Werror -I"$CUDA_INC" -x c++ -c $T/impl.c -o $B/impl_cuda_cxx.o
else
    skip impl_with_cuda_headers "no CUDA/cuDNN headers under $CUDA_INC"
fi
if command -v mpicc >/dev/null; then   # the data-parallel switches (C API of MPI; NCCL with the CUDA headers)
    pcheck impl_c99_mpi            mpicc -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_MPI -c $T/impl.c -o $B/impl_mpi.o
    if [ -f "$CUDA_INC/nccl.h" ]; then
        pcheck impl_cxx_mpi_nccl   mpicxx -Wall -Wextra -Werror -DGPUDL_MPI -DGPUDL_NCCL -I"$CUDA_INC" -x c++ -c $T/impl.c -o $B/impl_nccl.o
    else
        skip impl_nccl "no nccl.h under $CUDA_INC"
    fi
else
    skip impl_c99_mpi "no mpicc (apt-get install openmpi-bin libopenmpi-dev)"
fi
# every example in a folder of its own with just the two files, cc's line with -fopenmp; the benchmarks in place
for ex in examples/*.c; do
    name=$(basename "$ex" .c)
    dropin "$name"
    pcheck "cc_${name}"       sh -c "cd $B/dropin_$name && $CC -std=c99 -O2 -fopenmp -Wall -Wextra -Werror -DGPUDL_NO_CUDA -o $name $name.c -lm"
done
for ex in bench/*.c; do
    name=$(basename "$ex" .c)
    pcheck "cc_${name}"       $CC -std=c99 -O2 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -o $B/$name $ex -lm
done
if [ $HAVE_NVCC = 1 ]; then   # the kernels for both architectures; the README's nvcc line for the demo
    # (make test-extra builds every example and benchmark with nvcc, and user_macros.c)
    pcheck nvcc_kernels_sm80  $NVCC -O2 -gencode arch=compute_80,code=sm_80 -Xcompiler -Wall -c gpudl_kernels.cu -o $B/k80.o
    pcheck nvcc_kernels_sm90  $NVCC -O2 -gencode arch=compute_90,code=sm_90 -Xcompiler -Wall -c gpudl_kernels.cu -o $B/k90.o
    nvcc_dropin cnn_fashion
else
    skip nvcc_builds "nvcc not found"
fi
pflush
check_fails fast_math_refused "do not build with -ffast-math" $CC -std=c99 -ffast-math -DGPUDL_NO_CUDA -c $T/impl.c -o $B/fast.o
check_fails c89_refused_clearly "needs C99 or later" $CC -std=c89 -fsyntax-only $T/api.c
check_fails allocator_all_or_none "define all of GPUDL_MALLOC" $CC -std=c99 -DGPUDL_NO_CUDA -DGPUDL_MALLOC=malloc -c $T/impl.c -o $B/alloc.o
check make_help_lists_targets sh -c 'make --no-print-directory help | grep "make doctor" >/dev/null'
# make help and make doctor answer in seconds: neither starts nvcc where no NVIDIA driver is (issue 23: the
# doctor's nvcc build took two minutes on a busy machine, make help 4 s probing for NCCL)
# (nvcc's and python3's stand-ins below record every call but nvcc --version)
mkdir -p $B/fakebin && rm -f $B/probe_calls.log
printf '#!/bin/sh\n[ "$1" = --version ] && exit 1\necho "$0 $*" >> "%s"\nexit 1\n' "$PWD/$B/probe_calls.log" > $B/fakebin/nvcc
cp $B/fakebin/nvcc $B/fakebin/python3 && chmod +x $B/fakebin/nvcc $B/fakebin/python3
if command -v nvidia-smi >/dev/null; then quick_targets=help; else quick_targets="help doctor"; fi
check make_help_doctor_start_no_nvcc sh -c "for t in $quick_targets; do PATH=$PWD/$B/fakebin:\$PATH make --no-print-directory \$t >$B/quick_\$t.log 2>&1 || exit 1; done; [ ! -s $B/probe_calls.log ] || { echo 'started:'; cat $B/probe_calls.log; exit 1; }"
# the doctor names the emulated device and MPI (each with its fix when missing) and reads the data it reports
check make_doctor_reports_emu_mpi_data sh -c "make --no-print-directory doctor >$B/doctor.log 2>&1; grep -q 'emulated CUDA device' $B/doctor.log && grep -Eq '^(MPI: |missing: MPI)' $B/doctor.log && grep -Eq '^data: Fashion-MNIST in |^problem: .*Fashion-MNIST' $B/doctor.log || { cat $B/doctor.log; exit 1; }"
check make_all_builds_every_example sh -c 'for f in examples/*.c; do n=$(basename $f .c); make -n all -B | grep -q -- "-o build/$n examples/$n.c" || { echo "make all does not build $f"; exit 1; }; done'

section "data: the shipped Fashion-MNIST subset, decompressed for the tests"
prepare_data

section "CPU core suite (OpenMP): status, half, context, tensor, matmul, arith, timing"
if $CC -std=c99 -O2 -Wall -Wextra -DGPUDL_NO_CUDA -fopenmp -o $B/suite_core tests/suite_core.c -lm >$B/suite_core.log 2>&1; then
    run_suite $B/suite_core
else
    echo "FAIL    build tests/suite_core.c (cc)"; cat $B/suite_core.log; failed=$((failed + 1))
fi
section "CPU training suite (OpenMP): layers, model, gradcheck, optim, amp, data, io"
if $CC -std=c99 -O2 -Wall -Wextra -DGPUDL_NO_CUDA -fopenmp -o $B/suite_train tests/suite_train.c -lm >$B/suite_train.log 2>&1; then
    run_suite $B/suite_train
else
    echo "FAIL    build tests/suite_train.c (cc)"; cat $B/suite_train.log; failed=$((failed + 1))
fi
section "the CPU's baseline paths (issue 38): the same binaries with GPUDL_CPU_ISA=baseline, and under QEMU as a CPU without AVX"
if [ -x $B/suite_train ]; then
    GPUDL_CPU_ISA=baseline run_suite $B/suite_train activations   # the loops with AVX2/AVX-512 versions
    GPUDL_CPU_ISA=baseline run_suite $B/suite_core matmul
    if command -v qemu-x86_64 >/dev/null && [ "$(uname -m)" = x86_64 ]; then
        run_suite qemu-x86_64 -cpu Nehalem $B/suite_train activations
    else
        skip baseline_cpu_under_qemu "qemu-x86_64 not installed (Debian: qemu-user)"
    fi
fi
section "build switches: zlib, a CBLAS; the checkpoint read by safetensors; the plots"
if printf '#include <zlib.h>\nint main(void){return 0;}\n' | $CC -x c - -o $B/zlib_probe -lz >/dev/null 2>&1; then
    check build_with_zlib     $CC -std=c99 -O2 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_ZLIB -o $B/suite_train_zlib tests/suite_train.c -lm -lz
    [ -x $B/suite_train_zlib ] && run_suite $B/suite_train_zlib idx_
else
    skip idx_gzip_with_zlib "zlib.h not installed (Debian: zlib1g-dev)"
fi
if printf '#include <cblas.h>\nint main(void){return 0;}\n' | $CC -x c - -o $B/cblas_probe -lopenblas >/dev/null 2>&1; then
    check build_with_cblas    $CC -std=c99 -O2 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_CBLAS -fopenmp -o $B/suite_core_cblas tests/suite_core.c -lopenblas -lm
    [ -x $B/suite_core_cblas ] && run_suite $B/suite_core_cblas matmul
else
    skip matmul_with_cblas "cblas.h / libopenblas not installed (Debian: libopenblas-dev)"
fi
if python3 -c 'import safetensors, numpy' >/dev/null 2>&1 && [ -f $B/tmp_good.safetensors ]; then
    check safetensors_library_reads_checkpoint python3 tests/check_safetensors.py $B/tmp_good.safetensors
else
    skip safetensors_library_reads_checkpoint "python3 safetensors + numpy not installed (pip install safetensors numpy)"
fi
PLOT_PY=python3; [ -x /usr/bin/python3 ] && PLOT_PY=/usr/bin/python3
if $PLOT_PY -c 'import matplotlib' >/dev/null 2>&1; then   # bench/plot.py on small CSVs of each kind
    mkdir -p $B/plot && cat > $B/plot/train.csv <<'CSV'
device,impl,precision,model,batch,threads,median_ms,min_ms,max_ms,gflops,images_per_s,activation_bytes
cpu,gpudl,fp32,mlp,128,2,7.0,6.9,7.2,73.1,18285.7,0
CSV
    printf 'device,impl,precision,model,batch,threads,median_ms,min_ms,max_ms,gflops,images_per_s\ncpu,torch-eager,fp32,mlp,128,2,25.3,25.0,26.0,0,5059.3\n' > $B/plot/torch_train.csv
    printf 'device,impl,precision,n,threads,median_ms,min_ms,max_ms,gflops\ncpu,gpudl,fp32,256,2,0.12,0.11,0.13,284.5\ncpu,gpudl,fp32,512,2,0.84,0.8,0.9,318.9\n' > $B/plot/matmul.csv
    printf 'epoch,step,loss,test_accuracy,seconds\n1,0,2.3,,0.1\n1,20,0.9,,1.0\n1,40,0.6,0.81,2.0\n2,60,0.5,,3.0\n2,80,0.4,0.85,4.0\n' > $B/plot/demo.csv
    check bench_plots sh -c "$PLOT_PY bench/plot.py --dir $B/plot --demo $B/plot/demo.csv --out $B/plot && [ -s $B/plot/train.png ] && [ -s $B/plot/matmul.png ] && [ -s $B/plot/demo.png ]"
else
    skip bench_plots "no matplotlib for $PLOT_PY (Debian: apt-get install python3-matplotlib)"
fi

section "faults: allocation failures, failed writes, NULL arguments, misuse, logger"
if $CC -std=c99 -O1 -Wall -Wextra -DGPUDL_NO_CUDA -o $B/test_faults tests/test_faults.c -lm >$B/test_faults.log 2>&1; then
    run_suite $B/test_faults
else
    echo "FAIL    build tests/test_faults.c"; cat $B/test_faults.log; failed=$((failed + 1))
fi

section "a guest in the host's process: affinity, signals, locale, FP environment as the context found them (issue 35)"
for omp in -fopenmp ""; do
    name=test_guest${omp:+_omp}
    if $CC -std=c99 -O2 -Wall -Wextra $omp -DGPUDL_NO_CUDA -o $B/$name tests/test_guest.c -lm -lpthread >$B/$name.log 2>&1; then
        run_suite $B/$name
    else
        echo "FAIL    build tests/test_guest.c ${omp:-(no OpenMP)}"; cat $B/$name.log; failed=$((failed + 1))
    fi
done

section "embedding: the implementation warning-free under users' flags (-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror), a shared library's exports (make test-embed; the whole matrix in make test-extra)"
run_suite bash tests/run_embed.sh

# The autograder's core and the emulated device's core start here and run beside every section up to
# the data-parallel and cross sections: many of those keep one core busy (one test program, a compiler,
# one MPI or QEMU process), so side by side both cores stay busy to the end (in a row, the grader alone
# waited a minute for its last gradings on one core, and one core idled in the single-threaded sections).
# Their lines come after the others'. (Both build the kernels and the emulator's library through
# nvcc-emu: its caches are locked, so one builds and the other takes what it built.)
section "the assignments' autograder: its core, started beside the sections up to the cross runs (make test-extra: every seeded bug, class and hostile submission, and the training runs)"
# the grader and its data first, in the foreground: nothing below may write them while it reads
check grader_builds make --no-print-directory build/grade/grade build/test/data/.stamp
( bash tests/grade_test.sh --no-train --core >$B/grade_core.out 2>&1; echo $? >$B/grade_core.rc ) &
GRADE_PID=$!
section "the GPU path on the emulated CUDA device: its core, started beside them too (make test-emu in full)"
EMU_PID=
if command -v python3 >/dev/null && command -v g++ >/dev/null; then
    ( bash tests/run_emu.sh --core >$B/emu_core.out 2>&1; echo $? >$B/emu_core.rc ) &
    EMU_PID=$!
else
    skip test_emu "the emulated device needs python3 and g++"
fi
section "gpudl_check_op for any seed: gpudl's own ops pass every op's battery for 27 seeds (11 for the attention's)"
if $CC -std=c99 -O2 -Wall -Wextra -DGPUDL_NO_CUDA -o $B/test_check_seeds tests/test_check_seeds.c -lm >$B/test_check_seeds.log 2>&1; then
    run_suite $B/test_check_seeds
else
    echo "FAIL    build tests/test_check_seeds.c"; cat $B/test_check_seeds.log; failed=$((failed + 1))
fi

section "the full Fashion-MNIST: the drop-in build reads Debian's .gz; one epoch of the demo's CNN (CPU)"
DEB=/usr/share/datasets/fashion-mnist
if [ -f $DEB/t10k-labels-idx1-ubyte.gz ] && [ -x $B/dropin_mlp_fashion/mlp_fashion ]; then
    # README's one-line cc build, no zlib, no --data: it finds Debian's files and trains on them
    if (cd $B/dropin_mlp_fashion && ./mlp_fashion --cpu --epochs 1 >mlp_debian.log 2>&1) \
            && grep -q "data: $DEB" $B/dropin_mlp_fashion/mlp_debian.log; then
        printf 'ok      %-34s %s\n' dropin_build_reads_debian_gz "$(grep -E '^test accuracy' $B/dropin_mlp_fashion/mlp_debian.log) after one epoch from $DEB"
        passed=$((passed + 1))
    else
        printf 'FAIL    %-34s %s\n' dropin_build_reads_debian_gz "(mlp_fashion in $B/dropin_mlp_fashion)"; tail -5 $B/dropin_mlp_fashion/mlp_debian.log; failed=$((failed + 1))
    fi
else
    skip dropin_build_reads_debian_gz "the full Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)"
fi
if [ -f $DEB/t10k-labels-idx1-ubyte.gz ] || [ -f data/fashion-mnist/t10k-labels-idx1-ubyte ]; then
    if sh data/prepare.sh >$B/prepare.log 2>&1 && grep -q "full" build/data/SOURCE 2>/dev/null \
       && $CC -std=c99 -O2 -fopenmp -DGPUDL_NO_CUDA -I. -o $B/cnn_fashion examples/cnn_fashion.c -lm >$B/cnn_build.log 2>&1; then
        echo "cnn_fashion: one epoch" > "$STEP"
        $B/cnn_fashion --cpu --epochs 1 --data build/data/fashion-mnist >$B/cnn_1epoch.log 2>&1
        acc=$(sed -n 's/^test accuracy: \([0-9.]*\)%$/\1/p' $B/cnn_1epoch.log)
        if [ -n "$acc" ] && awk "BEGIN{exit !($acc >= 85.0)}"; then
            printf 'ok      %-34s %s%% after one epoch (%s)\n' cnn_fashion_one_epoch_85 "$acc" "$(grep '^wall time' $B/cnn_1epoch.log)"; passed=$((passed + 1))
        else
            printf 'FAIL    %-34s accuracy %s%% (want >= 85)\n' cnn_fashion_one_epoch_85 "${acc:-?}"; tail -5 $B/cnn_1epoch.log; failed=$((failed + 1))
        fi
    else
        skip cnn_fashion_one_epoch_85 "could not prepare the full dataset ($(cat build/data/SOURCE 2>/dev/null))"
    fi
else
    skip cnn_fashion_one_epoch_85 "the full Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)"
fi

section "the examples that only print, from their drop-in cc builds (the others train above and on the emulated GPU)"
for run in "gradcheck|To check your own layer|" "cpu_vs_gpu|FP32 +CPU|--small --cpu-only"; do
    IFS='|' read -r name want args <<<"$run"
    # shellcheck disable=SC2086
    if [ -x $B/dropin_$name/$name ] && (cd $B/dropin_$name && ./$name $args >$name.log 2>&1) && grep -Eq "$want" $B/dropin_$name/$name.log \
            && ! grep -q FAIL $B/dropin_$name/$name.log; then
        printf 'ok      %-34s %s\n' "example_cpu_$name" "$(grep -E "$want" $B/dropin_$name/$name.log | head -1 | cut -c1-90)"; passed=$((passed + 1))
    else
        printf 'FAIL    %-34s (./%s %s: no line matching %s)\n' "example_cpu_$name" "$name" "$args" "$want"
        tail -5 $B/dropin_$name/$name.log 2>/dev/null | sed 's/^/        /'; failed=$((failed + 1))
    fi
done

section "the GPT example, short, from its drop-in cc build: it must learn; its checkpoint read back in numpy (and PyTorch)"
# gpt_text --short fails unless its held-out loss falls below the loss of the training text's character
# frequencies there; check_gpt.py checks nanoGPT's names and shapes, and recomputes the example's held-out
# logits and loss from the checkpoint in float64 numpy (and, where torch imports, with load_state_dict(strict=True))
GPT_TEXT=; [ -f /usr/share/common-licenses/GPL-3 ] || { cat README.md gpudl.h > $B/gpt_corpus.txt; GPT_TEXT=$PWD/$B/gpt_corpus.txt; }
if [ -x $B/dropin_gpt_text/gpt_text ] && (cd $B/dropin_gpt_text && ./gpt_text --short --cpu $GPT_TEXT --out gpt.safetensors \
        --eval-dump gpt.eval >gpt.log 2>&1) && grep -q '^val loss' $B/dropin_gpt_text/gpt.log && ! grep -q FAIL $B/dropin_gpt_text/gpt.log; then
    printf 'ok      %-34s %s\n' example_cpu_gpt_text_learns "$(grep '^val loss' $B/dropin_gpt_text/gpt.log | cut -c1-90)"; passed=$((passed + 1))
else
    printf 'FAIL    %-34s (./gpt_text --short --cpu: no val loss line, or it said FAIL)\n' example_cpu_gpt_text_learns
    tail -8 $B/dropin_gpt_text/gpt.log 2>/dev/null | sed 's/^/        /'; failed=$((failed + 1))
fi
if python3 -c 'import numpy' >/dev/null 2>&1 && [ -f $B/dropin_gpt_text/gpt.safetensors ]; then
    check gpt_checkpoint_numpy_forward python3 tests/check_gpt.py $B/dropin_gpt_text/gpt.safetensors $B/dropin_gpt_text/gpt.eval
    sed -n 's/^check_gpt: /        /p' $B/gpt_checkpoint_numpy_forward.log | cut -c1-200
else
    skip gpt_checkpoint_numpy_forward "no numpy for python3, or no checkpoint (pip install numpy)"
fi

section "CPU core suite, single-threaded build (CPU tests only)"
if $CC -std=c99 -O2 -DGPUDL_NO_CUDA -o $B/suite_core_1thread tests/suite_core.c -lm >$B/suite_core_1thread.log 2>&1; then
    run_suite $B/suite_core_1thread --cpu-only
else
    echo "FAIL    build tests/suite_core.c (cc, no OpenMP)"; cat $B/suite_core_1thread.log; failed=$((failed + 1))
fi
section "CPU core suite built by clang, with LLVM's OpenMP runtime"
# (that runtime gives the calling thread its floating-point control word back at each join: cpu_flush_denormals)
if [ $HAVE_CLANG_OMP = 1 ]; then
    if clang -std=c99 -O2 -DGPUDL_NO_CUDA -fopenmp -Wno-pass-failed -o $B/suite_core_clang tests/suite_core.c -lm \
            >$B/suite_core_clang.log 2>&1; then
        run_suite $B/suite_core_clang --cpu-only
    else
        echo "FAIL    build tests/suite_core.c (clang -fopenmp)"; cat $B/suite_core_clang.log; failed=$((failed + 1))
    fi
else
    skip suite_core_clang "clang with omp.h (libomp-dev) not installed"
fi

section "data parallel: 2 CPU ranks under mpirun (make test-dist; make test-extra: 2 NCCL ranks on the emulated GPU)"
run_suite bash tests/run_dist.sh --cpu
section "Windows (MinGW-w64 under Wine) and ARM64 (QEMU): smoke runs (make test-windows, make test-arm64 in full)"
run_suite bash tests/run_cross.sh windows --quick
run_suite bash tests/run_cross.sh arm64 --quick
section "the assignments' autograder: its core's lines (started above)"
echo "$SECTION: waiting for tests/grade_test.sh --core" > "$STEP"
wait $GRADE_PID
run_suite sh -c "cat $B/grade_core.out; exit \$(cat $B/grade_core.rc 2>/dev/null || echo 1)"
section "the GPU path on the emulated CUDA device: its core's lines (started above; make test-emu in full)"
if [ -n "$EMU_PID" ]; then
    echo "$SECTION: waiting for tests/run_emu.sh --core" > "$STEP"
    wait $EMU_PID
    run_suite sh -c "cat $B/emu_core.out; exit \$(cat $B/emu_core.rc 2>/dev/null || echo 1)"
fi

else
# ======================================================== make test-extra
section "compile checks in other configurations (make test compiles the rest; its embedding section C99, C++11, clang)"
T=tests/compile
pcheck impl_c99_cpu            $CC -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -c $T/impl.c -o $B/impl_c99.o
pcheck impl_cxx_cpu            $CXX -std=c++11 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -x c++ -c $T/impl.c -o $B/impl_cxx.o
# the route the header's top comment gives when a system header comes first: POSIX asked for, nothing more
pcheck impl_c99_strict_posix_openmp $CC -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -DGPUDL_NO_CUDA -fopenmp -c $T/impl.c -o $B/impl_posix.o
# a program's one-letter and short macros before the header, and its implementation, in C++ (issue 35)
pcheck user_macros_impl_cxx    $CXX -std=c++11 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DUSER_MACROS_IMPL -x c++ -c $T/user_macros.c -o $B/user_macros_cxx.o
if command -v clang >/dev/null; then
    pcheck impl_clang_c99_cpu  clang -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -c $T/impl.c -o $B/impl_clang.o
else
    skip impl_clang_c99_cpu "clang not installed"
fi
if [ -f "$CUDA_INC/cuda_runtime.h" ] && [ -f "$CUDA_INC/cudnn.h" ]; then
    pcheck impl_c_with_cuda_headers   $CC -std=c99 -Wall -Wextra -Werror -I"$CUDA_INC" -c $T/impl.c -o $B/impl_cuda_c.o
else
    skip impl_c_with_cuda_headers "no CUDA/cuDNN headers under $CUDA_INC"
fi
if [ -f "$CUDA_INC/nccl.h" ]; then
    pcheck impl_c_nccl_no_mpi  $CC -std=c99 -Wall -Wextra -Werror -DGPUDL_NCCL -I"$CUDA_INC" -c $T/impl.c -o $B/impl_nccl_c.o
else
    skip impl_c_nccl_no_mpi "no nccl.h under $CUDA_INC"
fi
if [ $HAVE_NVCC = 1 ]; then
    pcheck nvcc_user_macros     $NVCC -O0 -gencode arch=compute_80,code=sm_80 -x cu -c $T/user_macros.c -o $B/user_macros_nvcc.o
else
    skip nvcc_user_macros "nvcc not found"
fi
pflush
section "the CPU suites under AddressSanitizer + UndefinedBehaviorSanitizer (make test-sanitize)"
run_suite make --no-print-directory test-sanitize
section "libFuzzer on the IDX and checkpoint loaders (make fuzz FUZZ_SECONDS=${FUZZ_SECONDS:-15})"
if command -v clang >/dev/null; then
    check fuzz_loaders make --no-print-directory fuzz FUZZ_SECONDS=${FUZZ_SECONDS:-15}
    grep -E '^(#|fuzzing)' $B/fuzz_loaders.log | tail -4
else
    skip fuzz_loaders "clang not installed"
fi
section "every example and benchmark with nvcc's line; the CUDA-built suites' CPU tests"
if [ $HAVE_NVCC = 1 ]; then
    for ex in examples/*.c; do
        dropin "$(basename "$ex" .c)"
        nvcc_dropin "$(basename "$ex" .c)"
    done
    for ex in bench/*.c; do
        name=$(basename "$ex" .c)
        pcheck "nvcc_${name}" $NVCC -O2 -Xcompiler -Wall,-Werror -o $B/${name}_cuda $ex gpudl_kernels.cu $CUDA_FLAGS -lcublas -lcublasLt -lcudnn
    done
    pcheck build_suite_core_cuda $NVCC -O2 $CUDA_ARCH -Xcompiler -fopenmp -o $B/suite_core_cuda tests/suite_core.c gpudl_kernels.cu \
        tests/gpu_faults.cu -lcublas -lcublasLt -lcudnn -lgomp
    pcheck build_suite_train_cuda $NVCC -O2 $CUDA_ARCH -Xcompiler -fopenmp -o $B/suite_train_cuda tests/suite_train.c gpudl_kernels.cu \
        -lcublas -lcublasLt -lcudnn -lgomp
    pflush
    prepare_data
    [ -x $B/suite_core_cuda ] && run_suite $B/suite_core_cuda --cpu-only
    [ -x $B/suite_train_cuda ] && run_suite $B/suite_train_cuda --cpu-only
else
    skip nvcc_builds "nvcc not found"
fi
section "embedding, the whole matrix: gcc/clang C99-C2x, g++/clang++ C++11-20, -O0..-O3, -flto, -fPIC; nvcc -Werror (make test-embed --full)"
run_suite bash tests/run_embed.sh --full
section "the CBLAS build's layers"
if printf '#include <cblas.h>\nint main(void){return 0;}\n' | $CC -x c - -o $B/cblas_probe -lopenblas >/dev/null 2>&1; then
    prepare_data
    check build_layers_with_cblas $CC -std=c99 -O2 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_CBLAS -fopenmp -o $B/suite_train_cblas tests/suite_train.c -lopenblas -lm
    [ -x $B/suite_train_cblas ] && run_suite $B/suite_train_cblas linear
    [ -x $B/suite_train_cblas ] && run_suite $B/suite_train_cblas conv2d
else
    skip layers_with_cblas "cblas.h / libopenblas not installed (Debian: libopenblas-dev)"
fi
section "data parallel: 2 NCCL ranks on the emulated GPU, started by mpirun (make test-dist's GPU half; make test runs the CPU ranks)"
run_suite bash tests/run_dist.sh --gpu
section "the assignments' autograder, with the solutions trained and every hostile submission"
run_suite bash tests/grade_test.sh
section "Windows (MinGW-w64 under Wine), in full (make test-windows)"
run_suite bash tests/run_cross.sh windows
section "ARM64 (QEMU), in full (make test-arm64)"
run_suite bash tests/run_cross.sh arm64
section "the GPU path on the emulated CUDA device, in full (make test-emu)"
if command -v python3 >/dev/null && command -v g++ >/dev/null; then
    run_suite bash tests/run_emu.sh
else
    skip test_emu "the emulated device needs python3 and g++"
fi
section "CUDA programs in the cuda-samples style, one per feature a course teaches, on the emulated device (make test-samples)"
if command -v python3 >/dev/null && command -v g++ >/dev/null; then
    run_suite bash tests/run_samples.sh
else
    skip test_samples "the emulated device needs python3 and g++"
fi
fi

t=$(( $(date +%s) - START ))
echo "$TIER took $((t / 60)) min $((t % 60)) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
