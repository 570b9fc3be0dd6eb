#!/usr/bin/env bash
# make test: compile checks, the CPU test suites (with and without OpenMP),
# the nvcc-built suites' CPU tests, and the GPU path on the emulated CUDA
# device (tests/run_emu.sh: nothing skipped there).
# Ends with one line: N passed, N failed, N skipped.
set -u
cd "$(dirname "$0")/.."
CC=${CC:-cc}
CXX=${CXX:-c++}
NVCC=${NVCC:-nvcc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
CUDA_ARCH=${CUDA_ARCH:-"-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]"}
B=build/test
mkdir -p "$B"
passed=0; failed=0; skipped=0

check() {   # check NAME CMD...: a compile (or other) check that must succeed
    local name=$1; shift
    if "$@" >"$B/$name.log" 2>&1; then
        printf 'ok      %-34s\n' "$name"; passed=$((passed + 1))
    else
        printf 'FAIL    %-34s (%s)\n' "$name" "$*"; sed 's/^/        /' "$B/$name.log" | head -20; failed=$((failed + 1))
    fi
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
run_suite() {   # run_suite BINARY [filter]: adds the binary's own counts
    local out line p f s
    out=$("$@" 2>&1); local rc=$?
    printf '%s\n' "$out" | sed '$d'
    line=$(printf '%s\n' "$out" | tail -n 1)
    if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
        p=${BASH_REMATCH[1]}; f=${BASH_REMATCH[2]}; s=${BASH_REMATCH[3]}
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
        [ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || failed=$((failed + 1))
    else
        printf 'FAIL    %-34s crashed or printed no summary (exit %d)\n' "$1" "$rc"; printf '%s\n' "$line"
        failed=$((failed + 1))
    fi
}

echo "== compile checks"
T=tests/compile
check api_c99_pedantic        $CC -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only $T/api.c
check api_cxx_pedantic        $CXX -std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c++ $T/api.c
check impl_c99_cpu            $CC -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -c $T/impl.c -o $B/impl_c99.o
check impl_c99_cpu_openmp     $CC -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -fopenmp -c $T/impl.c -o $B/impl_omp.o
check impl_cxx_cpu            $CXX -std=c++11 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -x c++ -c $T/impl.c -o $B/impl_cxx.o
check impl_c_cpu_no_simd      $CC -std=c99 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_NO_SIMD -c $T/impl.c -o $B/impl_nosimd.o
check readme_tour_compiles    $CC -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -fsyntax-only $T/readme_tour.c
check two_translation_units   $CC -std=c99 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -o $B/two_tu $T/two_tu_main.c $T/two_tu_other.c -lm
check two_translation_units_run $B/two_tu
check static_linkage          $CC -std=c99 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_STATIC -DGPUDL_TU_STATIC -o $B/two_tu_static $T/two_tu_main.c $T/two_tu_other.c -lm
check_fails fast_math_refused "do not build with -ffast-math" $CC -std=c99 -ffast-math -DGPUDL_NO_CUDA -c $T/impl.c -o $B/fast.o
check_fails allocator_all_or_none "define all of GPUDL_MALLOC" $CC -std=c99 -DGPUDL_NO_CUDA -DGPUDL_MALLOC=malloc -c $T/impl.c -o $B/alloc.o
if command -v clang >/dev/null; then
    check impl_clang_c99_cpu  clang -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -c $T/impl.c -o $B/impl_clang.o
    # clang's OpenMP regions do not inherit a function's target("avx512f"): vector code inside one fails to compile
    if echo '#include <omp.h>' | clang -fopenmp -x c -fsyntax-only - 2>/dev/null; then
        check impl_clang_c99_cpu_openmp clang -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -fopenmp -c $T/impl.c -o $B/impl_clang_omp.o
    else
        skip impl_clang_c99_cpu_openmp "clang has no omp.h (libomp-dev)"
    fi
else
    skip impl_clang_c99_cpu "clang not installed"
    skip impl_clang_c99_cpu_openmp "clang not installed"
fi
if [ -f "$CUDA_INC/cuda_runtime.h" ] && [ -f "$CUDA_INC/cudnn.h" ]; then
    check impl_c_with_cuda_headers   $CC -std=c99 -Wall -Wextra -Werror -I"$CUDA_INC" -c $T/impl.c -o $B/impl_cuda_c.o
    check impl_cxx_with_cuda_headers $CXX -Wall -Wextra -Werror -I"$CUDA_INC" -x c++ -c $T/impl.c -o $B/impl_cuda_cxx.o
else
    skip impl_with_cuda_headers "no CUDA/cuDNN headers under $CUDA_INC"
fi
if command -v mpicc >/dev/null; then   # the data-parallel switches (C API of MPI; NCCL with the CUDA headers)
    check impl_c99_mpi            mpicc -std=c99 -pedantic -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_MPI -c $T/impl.c -o $B/impl_mpi.o
    if [ -f "$CUDA_INC/nccl.h" ]; then
        check impl_cxx_mpi_nccl   mpicxx -Wall -Wextra -Werror -DGPUDL_MPI -DGPUDL_NCCL -I"$CUDA_INC" -x c++ -c $T/impl.c -o $B/impl_nccl.o
        check impl_c_nccl_no_mpi  $CC -std=c99 -Wall -Wextra -Werror -DGPUDL_NCCL -I"$CUDA_INC" -c $T/impl.c -o $B/impl_nccl_c.o
    else
        skip impl_nccl "no nccl.h under $CUDA_INC"
    fi
else
    skip impl_c99_mpi "no mpicc (apt-get install openmpi-bin libopenmpi-dev)"
fi
# Every example builds in a folder of its own with just the two files, as
# the README says (cc's line, with -fopenmp); the benchmarks in place.
dropin() {   # dropin NAME: a fresh folder with gpudl.h, gpudl_kernels.cu and examples/NAME.c
    rm -rf "$B/dropin_$1" && mkdir -p "$B/dropin_$1" && cp gpudl.h gpudl_kernels.cu "examples/$1.c" "$B/dropin_$1/"
}
for ex in examples/*.c; do
    name=$(basename "$ex" .c)
    dropin "$name"
    check "cc_${name}"        sh -c "cd $B/dropin_$name && $CC -std=c99 -O2 -fopenmp -Wall -Wextra -Werror -DGPUDL_NO_CUDA -o $name $name.c -lm"
done
for ex in bench/*.c; do
    name=$(basename "$ex" .c)
    check "cc_${name}"        $CC -std=c99 -O2 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -o $B/$name $ex -lm
done
check make_help_lists_targets sh -c 'make --no-print-directory help | grep "make doctor" >/dev/null'
check make_all_builds_every_example sh -c 'for f in examples/*.c; do n=$(basename $f .c); make -n all -B | grep -q -- "-o build/$n examples/$n.c" || { echo "make all does not build $f"; exit 1; }; done'

HAVE_NVCC=0
command -v "$NVCC" >/dev/null && HAVE_NVCC=1
if [ $HAVE_NVCC = 1 ]; then
    CUDA_FLAGS=$(NVCC=$NVCC sh tools/cuda_flags.sh)   # empty where nvcc finds cuBLAS and cuDNN by itself
    check nvcc_kernels_sm80   $NVCC -O2 -gencode arch=compute_80,code=sm_80 -Xcompiler -Wall -c gpudl_kernels.cu -o $B/k80.o
    check nvcc_kernels_sm90   $NVCC -O2 -gencode arch=compute_90,code=sm_90 -Xcompiler -Wall -c gpudl_kernels.cu -o $B/k90.o
    for ex in examples/*.c; do   # nvcc's line from the README, with OpenMP, in the drop-in folder
        name=$(basename "$ex" .c)
        check "nvcc_${name}"  sh -c "cd $B/dropin_$name && $NVCC -O2 -Xcompiler -fopenmp,-Wall,-Werror -o ${name}_cuda $name.c gpudl_kernels.cu $CUDA_FLAGS -lcublas -lcublasLt -lcudnn -lgomp"
    done
    for ex in bench/*.c; do
        name=$(basename "$ex" .c)
        check "nvcc_${name}"  $NVCC -O2 -Xcompiler -Wall,-Werror -o $B/${name}_cuda $ex gpudl_kernels.cu $CUDA_FLAGS -lcublas -lcublasLt -lcudnn
    done
else
    skip nvcc_builds "nvcc not found"
fi

echo "== data: the shipped Fashion-MNIST subset, decompressed for the tests"
export GPUDL_TEST_DATA=$B/data
mkdir -p "$GPUDL_TEST_DATA"
for f in data/fashion-mnist-subset/*.gz; do gunzip -c "$f" > "$GPUDL_TEST_DATA/$(basename "$f" .gz)"; done
HAVE_ZLIB=0
printf '#include <zlib.h>\nint main(void){return 0;}\n' | $CC -x c - -o $B/zlib_probe -lz >/dev/null 2>&1 && HAVE_ZLIB=1

echo "== CPU core suite (OpenMP): status, half, context, tensor, matmul, arith, timing"
if $CC -std=c99 -O2 -Wall -Wextra -DGPUDL_NO_CUDA -fopenmp -o $B/suite_core tests/suite_core.c -lm >$B/suite_core.log 2>&1; then
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} run_suite $B/suite_core
else
    echo "FAIL    build tests/suite_core.c (cc)"; cat $B/suite_core.log; failed=$((failed + 1))
fi
echo "== CPU training suite (OpenMP): layers, model, gradcheck, optim, amp, data, io"
if $CC -std=c99 -O2 -Wall -Wextra -DGPUDL_NO_CUDA -fopenmp -o $B/suite_train tests/suite_train.c -lm >$B/suite_train.log 2>&1; then
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} run_suite $B/suite_train
else
    echo "FAIL    build tests/suite_train.c (cc)"; cat $B/suite_train.log; failed=$((failed + 1))
fi
if [ $HAVE_ZLIB = 1 ]; then
    check build_with_zlib     $CC -std=c99 -O2 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_ZLIB -o $B/suite_train_zlib tests/suite_train.c -lm -lz
    [ -x $B/suite_train_zlib ] && run_suite $B/suite_train_zlib idx_
else
    skip idx_gzip_with_zlib "zlib.h not installed (Debian: zlib1g-dev)"
fi
HAVE_CBLAS=0
printf '#include <cblas.h>\nint main(void){return 0;}\n' | $CC -x c - -o $B/cblas_probe -lopenblas >/dev/null 2>&1 && HAVE_CBLAS=1
if [ $HAVE_CBLAS = 1 ]; then   # the -DGPUDL_CBLAS switch: matmul and the layers through cblas_sgemm
    check build_with_cblas    $CC -std=c99 -O2 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_CBLAS -fopenmp -o $B/suite_core_cblas tests/suite_core.c -lopenblas -lm
    [ -x $B/suite_core_cblas ] && OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} run_suite $B/suite_core_cblas matmul
    check build_layers_with_cblas $CC -std=c99 -O2 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_CBLAS -fopenmp -o $B/suite_train_cblas tests/suite_train.c -lopenblas -lm
    [ -x $B/suite_train_cblas ] && OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} run_suite $B/suite_train_cblas linear
    [ -x $B/suite_train_cblas ] && OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} run_suite $B/suite_train_cblas conv2d
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

echo "== faults: allocation failures, failed writes, NULL arguments, misuse, logger"
if $CC -std=c99 -O1 -Wall -Wextra -DGPUDL_NO_CUDA -o $B/test_faults tests/test_faults.c -lm >$B/test_faults.log 2>&1; then
    run_suite $B/test_faults
else
    echo "FAIL    build tests/test_faults.c"; cat $B/test_faults.log; failed=$((failed + 1))
fi

echo "== end to end: one epoch of the demo's CNN on the full Fashion-MNIST (CPU)"
if [ -f /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz ] || [ -f data/fashion-mnist/t10k-labels-idx1-ubyte ]; then
    if sh data/prepare.sh >$B/prepare.log 2>&1 && grep -q "full" build/data/SOURCE 2>/dev/null \
       && $CC -std=c99 -O2 -fopenmp -DGPUDL_NO_CUDA -I. -o $B/cnn_fashion examples/cnn_fashion.c -lm >$B/cnn_build.log 2>&1; then
        OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} $B/cnn_fashion --cpu --epochs 1 --data build/data/fashion-mnist >$B/cnn_1epoch.log 2>&1
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

echo "== CPU core suite (single-threaded build, CPU tests only)"
if $CC -std=c99 -O2 -DGPUDL_NO_CUDA -o $B/suite_core_1thread tests/suite_core.c -lm >$B/suite_core_1thread.log 2>&1; then
    run_suite $B/suite_core_1thread --cpu-only
else
    echo "FAIL    build tests/suite_core.c (cc, no OpenMP)"; cat $B/suite_core_1thread.log; failed=$((failed + 1))
fi
echo "== CPU core suite built by clang, with LLVM's OpenMP runtime"
# (that runtime gives the calling thread its floating-point control word back at each join: cpu_flush_denormals)
if command -v clang >/dev/null && echo '#include <omp.h>' | clang -fopenmp -x c -fsyntax-only - 2>/dev/null; then
    if clang -std=c99 -O2 -DGPUDL_NO_CUDA -fopenmp -Wno-pass-failed -o $B/suite_core_clang tests/suite_core.c -lm \
            >$B/suite_core_clang.log 2>&1; then
        OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} run_suite $B/suite_core_clang --cpu-only
    else
        echo "FAIL    build tests/suite_core.c (clang -fopenmp)"; cat $B/suite_core_clang.log; failed=$((failed + 1))
    fi
else
    skip suite_core_clang "clang with omp.h (libomp-dev) not installed"
fi

echo "== CUDA build of the suites: their CPU tests (their GPU tests run on the emulated device below)"
if [ $HAVE_NVCC = 1 ]; then
    if $NVCC -O2 $CUDA_ARCH -Xcompiler -fopenmp -o $B/suite_core_cuda tests/suite_core.c gpudl_kernels.cu tests/gpu_faults.cu \
            -lcublas -lcublasLt -lcudnn -lgomp >$B/suite_core_cuda.log 2>&1; then
        run_suite $B/suite_core_cuda --cpu-only
    else
        echo "FAIL    build tests/suite_core.c (nvcc)"; cat $B/suite_core_cuda.log; failed=$((failed + 1))
    fi
    if $NVCC -O2 $CUDA_ARCH -Xcompiler -fopenmp -o $B/suite_train_cuda tests/suite_train.c gpudl_kernels.cu \
            -lcublas -lcublasLt -lcudnn -lgomp >$B/suite_train_cuda.log 2>&1; then
        run_suite $B/suite_train_cuda --cpu-only
    else
        echo "FAIL    build tests/suite_train.c (nvcc)"; cat $B/suite_train_cuda.log; failed=$((failed + 1))
    fi
else
    skip test_cuda "nvcc not found"
fi

run_suite bash tests/grade_test.sh   # the assignments' autograder cannot be fooled cheaply (its own == sections)
run_suite bash tests/run_cross.sh windows        # make test-windows
run_suite bash tests/run_cross.sh arm64 --quick  # a subset of make test-arm64 (QEMU is slow)
run_suite bash tests/run_dist.sh                 # make test-dist: 2 ranks under mpirun (MPI on CPUs, NCCL on the emulated GPU)
echo "== the GPU path on the emulated CUDA device (make test-emu)"
if command -v python3 >/dev/null && command -v g++ >/dev/null; then
    run_suite bash tests/run_emu.sh
else
    skip test_emu "the emulated device needs python3 and g++"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
