#!/usr/bin/env bash
# make test-embed (issue 35): gpudl.h as a guest in other people's builds.
# The implementation (tests/compile/impl.c) and the API alone under the
# flags users build with, warnings as errors: -Wall -Wextra -Wpedantic
# -Wshadow -Wconversion -Werror, gcc and clang as C99/C11/C17/C2x, g++ and
# clang++ as C++11/14/17/20, at -O0/-O2/-O3, with -flto and -fPIC, OpenMP
# on; a shared library that exports gpudl's API only (GPUDL_SHARED with
# -fvisibility=hidden) and one that exports none of it; with --full also
# nvcc with -Xcompiler -Wall,-Werror on gpudl_kernels.cu and on a user's .cu
# that holds the implementation. The core (make test): one configuration
# per compiler and language with the extremes; --full (make test-extra):
# every combination. Ends with "N passed, N failed, N skipped".
#   bash tests/run_embed.sh [--full]
set -u
cd "$(dirname "$0")/.."
FULL=0; [ "${1:-}" = --full ] && FULL=1
B=build/test/embed
mkdir -p "$B"
passed=0; failed=0; skipped=0
W="-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror"
T=tests/compile
t0=$SECONDS
one() {   # one NAME CMD...: builds, must be silent and succeed
    local name=$1; shift
    if "$@" >"$B/$name.log" 2>&1 && [ ! -s "$B/$name.log" ]; then
        printf 'ok      %-34s\n' "embed_$name"; passed=$((passed + 1))
    else
        printf 'FAIL    %-34s %s\n' "embed_$name" "$*"; head -8 "$B/$name.log" | sed 's/^/        /'; failed=$((failed + 1))
    fi
}
have() { command -v "$1" >/dev/null; }
configs=()
add() { configs+=("$1|$2|$3|$4"); }   # add COMPILER LANG STD OPTS
if [ $FULL = 1 ]; then
    for std in c99 c11 c17 c2x; do for o in -O0 -O2 -O3 "-O3 -flto" "-O2 -fPIC" "-O3 -fPIC -fno-openmp"; do add cc c $std "$o"; have clang && add clang c $std "$o"; done; done
    for std in c++11 c++14 c++17 c++20; do for o in -O0 -O2 -O3 "-O3 -flto" "-O2 -fPIC" "-O2 -fno-openmp"; do add c++ c++ $std "$o"; have clang++ && add clang++ c++ $std "$o"; done; done
else
    add cc c c99 "-O2 -fPIC"; add cc c c17 "-O3 -flto"; add c++ c++ c++11 "-O2"; add c++ c++ c++20 "-O3"
    add cc c c99 "-O3 -fPIC -fno-openmp"; add c++ c++ c++17 "-O2 -fno-openmp"   # without OpenMP: other inlining, other warnings
    have clang && add clang c c11 "-O2"; have clang++ && add clang++ c++ c++17 "-O3 -fPIC"
fi
run_config() {
    local cc=$1 lang=$2 std=$3 opts=$4 name omp=-fopenmp
    name=$(echo "${cc}_${std}_${opts}" | tr -d ' ' | tr '+' 'x' | tr -c 'A-Za-z0-9_\n' '_')
    if [ "${cc#clang}" != "$cc" ] && ! echo '#include <omp.h>' | $cc -fopenmp -x c -fsyntax-only - 2>/dev/null; then omp=; fi
    # shellcheck disable=SC2086
    one "$name" $cc -std=$std $W $omp $opts -DGPUDL_NO_CUDA -x $lang -c $T/impl.c -o $B/$name.o
}
i=0
for cfg in "${configs[@]}"; do   # two at a time: the 2-core machine
    IFS='|' read -r cc lang std opts <<<"$cfg"
    run_config "$cc" "$lang" "$std" "$opts" > "$B/.out.$i" &
    i=$((i + 1))
    if [ $((i % 2)) = 0 ]; then wait; fi
done
wait
for ((k = 0; k < i; k++)); do
    cat "$B/.out.$k"
    grep -q '^ok' "$B/.out.$k" && passed=$((passed + 1)) || failed=$((failed + 1))
done
rm -f "$B"/.out.*
# the API alone, C89 aside (it must refuse with one clear #error: make test's compile checks)
one api_c99_all_warnings cc -std=c99 $W -fsyntax-only $T/api.c
one api_cxx98_all_warnings c++ -std=c++98 -Wall -Wextra -Werror -fsyntax-only -x c++ $T/api.c
# two contexts created at once in two threads, OpenMP on, under ThreadSanitizer: no race
if cc -std=c11 -g -O1 -fopenmp -fsanitize=thread -DGPUDL_NO_CUDA -o $B/two_threads $T/two_threads.c -lm -lpthread >$B/tsan.log 2>&1 \
   && OMP_NUM_THREADS=2 TSAN_OPTIONS=halt_on_error=0 timeout 300 $B/two_threads >>$B/tsan.log 2>&1 && ! grep -q 'WARNING: ThreadSanitizer' $B/tsan.log; then
    printf 'ok      %-34s %s\n' embed_two_threads_tsan "two contexts at once, OpenMP on: no race"; passed=$((passed + 1))
elif grep -q 'cannot find -ltsan\|unsupported option' $B/tsan.log; then
    printf 'SKIPPED %-34s %s\n' embed_two_threads_tsan "no ThreadSanitizer runtime"; skipped=$((skipped + 1))
else
    printf 'FAIL    %-34s\n' embed_two_threads_tsan; grep -A6 'WARNING: ThreadSanitizer' $B/tsan.log | head -14 | sed 's/^/        /'; failed=$((failed + 1))
fi
# a shared library: GPUDL_SHARED and -fvisibility=hidden export exactly the API; -fvisibility=hidden alone none of gpudl
if cc -O1 -fPIC -shared -fvisibility=hidden -DGPUDL_NO_CUDA -DGPUDL_SHARED -o $B/libgpudl_api.so $T/impl.c -lm >$B/shared.log 2>&1 \
   && cc -O1 -fPIC -shared -fvisibility=hidden -DGPUDL_NO_CUDA -o $B/libgpudl_none.so $T/impl.c -lm >>$B/shared.log 2>&1; then
    api=$(grep -c '^GPUDL_API' gpudl.h); got=$(nm -D --defined-only $B/libgpudl_api.so | grep -c ' T gpudl_')
    private=$(nm -D --defined-only $B/libgpudl_api.so | grep -c ' gpudl__'); none=$(nm -D --defined-only $B/libgpudl_none.so | grep -c 'gpudl')
    if [ "$got" = "$api" ] && [ "$private" = 0 ] && [ "$none" = 0 ]; then
        printf 'ok      %-34s %s\n' embed_shared_library_exports "GPUDL_SHARED: the $api API functions, nothing private; hidden alone: none"
        passed=$((passed + 1))
    else
        printf 'FAIL    %-34s %s\n' embed_shared_library_exports "API $got of $api, private $private, hidden-only $none"; failed=$((failed + 1))
    fi
else
    printf 'FAIL    %-34s\n' embed_shared_library_exports; cat $B/shared.log; failed=$((failed + 1))
fi
if [ $FULL = 1 ]; then
    NVCC=${NVCC:-nvcc}; command -v "$NVCC" >/dev/null || NVCC=/usr/local/cuda/bin/nvcc
    if [ -x "$(command -v "$NVCC")" ]; then
        printf '#define GPUDL_IMPLEMENTATION\n#include "../../../gpudl.h"\nint main(void) { gpudl_ctx *c = 0; return gpudl_ctx_create(0, &c) == GPUDL_OK ? 0 : 1; }\n' > $B/user_impl.cu
        one nvcc_kernels_wall_werror "$NVCC" -O2 -gencode arch=compute_80,code=sm_80 -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings -c gpudl_kernels.cu -o $B/k.o
        one nvcc_user_cu_holds_impl "$NVCC" -O2 -gencode arch=compute_80,code=sm_80 -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings -c $B/user_impl.cu -o $B/user_impl.o
        # GPUDL_STATIC in two .cu files (two libraries in one program): links without gpudl_kernels.cu, exports nothing of gpudl
        if "$NVCC" -O1 -gencode arch=compute_80,code=sm_80 -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings -o $B/static_libs \
                $T/static_lib_a.cu $T/static_lib_b.cu -lcublas -lcublasLt -lcudnn >$B/static_libs.log 2>&1; then
            g=$(nm $B/static_libs | grep -c '^[0-9a-f]* [A-Z] .*gpudl')
            if [ "$g" = 0 ]; then printf 'ok      %-34s %s\n' embed_nvcc_static_two_copies "nothing of gpudl global"; passed=$((passed + 1))
            else printf 'FAIL    %-34s %s\n' embed_nvcc_static_two_copies "$g global gpudl symbols"; nm $B/static_libs | grep '^[0-9a-f]* [A-Z] .*gpudl' | head -5; failed=$((failed + 1)); fi
        else printf 'FAIL    %-34s\n' embed_nvcc_static_two_copies; grep -E 'error|multiple' $B/static_libs.log | head -8; failed=$((failed + 1)); fi
        if command -v clang++ >/dev/null; then   # clang as nvcc's host compiler: gpudl's own lines warning-free (CUDA's headers are not)
            "$NVCC" -O2 -gencode arch=compute_80,code=sm_80 -ccbin clang++ -Xcompiler -Wall,-Wextra -c $B/user_impl.cu -o $B/user_impl_clang.o >$B/nvcc_clang.log 2>&1
            if [ $? = 0 ] && ! grep -q 'gpudl[^ ]*: warning' $B/nvcc_clang.log; then printf 'ok      %-34s\n' embed_nvcc_clang_host_impl; passed=$((passed + 1))
            else printf 'FAIL    %-34s\n' embed_nvcc_clang_host_impl; grep 'gpudl[^ ]*: warning' $B/nvcc_clang.log | head -5; failed=$((failed + 1)); fi
        fi
    else
        printf 'SKIPPED %-34s %s\n' embed_nvcc "no nvcc"; skipped=$((skipped + 1))
    fi
fi
echo "test-embed: $((SECONDS - t0)) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
