#!/usr/bin/env bash
# make test: compile checks, the CPU test suite (with and without OpenMP),
# and the nvcc-built suite, whose GPU tests say SKIPPED without a GPU.
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
else
    skip impl_clang_c99_cpu "clang not installed"
fi
if [ -f "$CUDA_INC/cuda_runtime.h" ] && [ -f "$CUDA_INC/cudnn.h" ]; then
    check impl_c_with_cuda_headers   $CC -std=c99 -Wall -Wextra -Werror -I"$CUDA_INC" -c $T/impl.c -o $B/impl_cuda_c.o
    check impl_cxx_with_cuda_headers $CXX -Wall -Wextra -Werror -I"$CUDA_INC" -x c++ -c $T/impl.c -o $B/impl_cuda_cxx.o
else
    skip impl_with_cuda_headers "no CUDA/cuDNN headers under $CUDA_INC"
fi
for ex in examples/*.c bench/*.c; do
    name=$(basename "$ex" .c)
    check "cc_${name}"        $CC -std=c99 -O2 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -o $B/$name $ex -lm
done

HAVE_NVCC=0
command -v "$NVCC" >/dev/null && HAVE_NVCC=1
if [ $HAVE_NVCC = 1 ]; then
    CUDA_FLAGS=$(NVCC=$NVCC sh tools/cuda_flags.sh)   # empty where nvcc finds cuBLAS and cuDNN by itself
    check nvcc_kernels_sm80   $NVCC -O2 -gencode arch=compute_80,code=sm_80 -Xcompiler -Wall -c gpudl_kernels.cu -o $B/k80.o
    check nvcc_kernels_sm90   $NVCC -O2 -gencode arch=compute_90,code=sm_90 -Xcompiler -Wall -c gpudl_kernels.cu -o $B/k90.o
    for ex in examples/*.c bench/*.c; do
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

echo "== CPU suite (OpenMP)"
if $CC -std=c99 -O2 -Wall -Wextra -DGPUDL_NO_CUDA -fopenmp -o $B/test_cpu tests/test_gpudl.c -lm >$B/test_cpu.log 2>&1; then
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} run_suite $B/test_cpu
else
    echo "FAIL    build tests/test_gpudl.c (cc)"; cat $B/test_cpu.log; failed=$((failed + 1))
fi
echo "== CPU training suite (OpenMP)"
if $CC -std=c99 -O2 -Wall -Wextra -DGPUDL_NO_CUDA -fopenmp -o $B/test_layers tests/test_layers.c -lm >$B/test_layers.log 2>&1; then
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} run_suite $B/test_layers
else
    echo "FAIL    build tests/test_layers.c (cc)"; cat $B/test_layers.log; failed=$((failed + 1))
fi
if [ $HAVE_ZLIB = 1 ]; then
    check build_with_zlib     $CC -std=c99 -O2 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_ZLIB -o $B/test_layers_z tests/test_layers.c -lm -lz
    [ -x $B/test_layers_z ] && run_suite $B/test_layers_z idx_
else
    skip idx_gzip_with_zlib "zlib.h not installed (Debian: zlib1g-dev)"
fi
HAVE_CBLAS=0
printf '#include <cblas.h>\nint main(void){return 0;}\n' | $CC -x c - -o $B/cblas_probe -lopenblas >/dev/null 2>&1 && HAVE_CBLAS=1
if [ $HAVE_CBLAS = 1 ]; then   # the -DGPUDL_CBLAS switch: matmul and the layers through cblas_sgemm
    check build_with_cblas    $CC -std=c99 -O2 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_CBLAS -fopenmp -o $B/test_cpu_cblas tests/test_gpudl.c -lopenblas -lm
    [ -x $B/test_cpu_cblas ] && OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} run_suite $B/test_cpu_cblas matmul
    check build_layers_with_cblas $CC -std=c99 -O2 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -DGPUDL_CBLAS -fopenmp -o $B/test_layers_cblas tests/test_layers.c -lopenblas -lm
    [ -x $B/test_layers_cblas ] && OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} run_suite $B/test_layers_cblas linear
    [ -x $B/test_layers_cblas ] && OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} run_suite $B/test_layers_cblas conv2d
else
    skip matmul_with_cblas "cblas.h / libopenblas not installed (Debian: libopenblas-dev)"
fi
if python3 -c 'import safetensors, numpy' >/dev/null 2>&1 && [ -f $B/tmp_good.safetensors ]; then
    check safetensors_library_reads_checkpoint python3 tests/check_safetensors.py $B/tmp_good.safetensors
else
    skip safetensors_library_reads_checkpoint "python3 safetensors + numpy not installed (pip install safetensors numpy)"
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
       && $CC -std=c99 -O2 -fopenmp -DGPUDL_NO_CUDA -o $B/cnn_fashion examples/cnn_fashion.c -lm >$B/cnn_build.log 2>&1; then
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

echo "== CPU suite (single-threaded build, CPU tests only)"
if $CC -std=c99 -O2 -DGPUDL_NO_CUDA -o $B/test_cpu1 tests/test_gpudl.c -lm >$B/test_cpu1.log 2>&1; then
    run_suite $B/test_cpu1 --cpu-only
else
    echo "FAIL    build tests/test_gpudl.c (cc, no OpenMP)"; cat $B/test_cpu1.log; failed=$((failed + 1))
fi
echo "== CUDA build of the suite (GPU tests SKIPPED without a GPU)"
if [ $HAVE_NVCC = 1 ]; then
    if $NVCC -O2 $CUDA_ARCH -Xcompiler -fopenmp -o $B/test_cuda tests/test_gpudl.c gpudl_kernels.cu tests/gpu_faults.cu \
            -lcublas -lcublasLt -lcudnn -lgomp >$B/test_cuda.log 2>&1; then
        run_suite $B/test_cuda
    else
        echo "FAIL    build tests/test_gpudl.c (nvcc)"; cat $B/test_cuda.log; failed=$((failed + 1))
    fi
    if $NVCC -O2 $CUDA_ARCH -Xcompiler -fopenmp -o $B/test_layers_cuda tests/test_layers.c gpudl_kernels.cu \
            -lcublas -lcublasLt -lcudnn -lgomp >$B/test_layers_cuda.log 2>&1; then
        run_suite $B/test_layers_cuda
    else
        echo "FAIL    build tests/test_layers.c (nvcc)"; cat $B/test_layers_cuda.log; failed=$((failed + 1))
    fi
else
    skip test_cuda "nvcc not found"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
