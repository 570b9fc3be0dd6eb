#!/usr/bin/env bash
# The emulator's own tests: its headers (C and C++, and against the CUDA
# toolkit's), the nvcc-emu rewrite and option handling, the compatibility
# rules for target architectures, and every self-test program, built
# plainly and under AddressSanitizer + UndefinedBehaviorSanitizer.
# Ends with one line: N passed, N failed, N skipped.
#   bash tests/emu/selftest/run.sh [--quick]   (--quick: no sanitizer builds)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
EMU=$(cd "$HERE/.." && pwd)
NVCC_EMU="$EMU/nvcc-emu"
OUT=${CUEMU_TEST_OUT:-$EMU/.cache/selftest}
mkdir -p "$OUT"
QUICK=0
[ "${1:-}" = "--quick" ] && QUICK=1
# --quick: the exhaustive 16-bit arithmetic sweeps sample their ranges (selftest.h: st_stride)
if [ $QUICK = 1 ]; then export CUEMU_SELFTEST_QUICK=1; else unset CUEMU_SELFTEST_QUICK; fi
passed=0; failed=0; skipped=0

ok()   { printf 'ok      %-40s %s\n' "$1" "${2:-}"; passed=$((passed + 1)); }
bad()  { printf 'FAIL    %-40s %s\n' "$1" "${2:-}"; failed=$((failed + 1)); }
skip() { printf 'SKIPPED %-40s %s\n' "$1" "$2"; skipped=$((skipped + 1)); }
check() {   # check NAME CMD...: must succeed
    local name=$1; shift
    if "$@" >"$OUT/$name.log" 2>&1; then ok "$name"; else bad "$name" "($*)"; sed 's/^/        /' "$OUT/$name.log" | tail -20; fi
}
program() {   # program NAME BINARY [env...]: a self-test program; its own counts are added
    local name=$1 bin=$2 out line
    out=$("$bin" 2>"$OUT/$name.stderr"); local rc=$?
    line=$(printf '%s\n' "$out" | tail -n 1)
    if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        local p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
        if [ "$f" -eq 0 ] && [ $rc -eq 0 ]; then ok "$name" "($p checks)"; passed=$((passed + p - 1))
        else bad "$name" "($f of $((p + f)) failed)"; printf '%s\n' "$out" | grep -v '^ok' | sed 's/^/        /'
            tail -5 "$OUT/$name.stderr" | sed 's/^/        /'; passed=$((passed + p)); failed=$((failed + f - 1)); fi
    else
        bad "$name" "crashed or printed no summary (exit $rc)"; printf '%s\n' "$out" | tail -5 | sed 's/^/        /'
        tail -15 "$OUT/$name.stderr" | sed 's/^/        /'
    fi
}

echo "== emulator headers"
for h in cuda_runtime_api.h cuda_runtime.h cuda_fp16.h cuda_bf16.h cublas_v2.h cublasLt.h cudnn.h nccl.h cuemu.h library_types.h; do
    if [ -f "$EMU/include/$h" ]; then
        check "header_c99_${h%.h}" gcc -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$EMU/include" -x c "$EMU/include/$h"
        check "header_cxx_${h%.h}" g++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$EMU/include" -x c++ "$EMU/include/$h"
    else
        bad "header_$h" "missing"
    fi
done
if [ -f "$HERE/abi_check.py" ]; then
    out=$(python3 "$HERE/abi_check.py" 2>&1); rc=$?
    last=$(printf '%s\n' "$out" | tail -n 1)
    if printf '%s\n' "$out" | grep -q '^SKIPPED'; then skip abi_against_cuda_13_headers "$(printf '%s\n' "$out" | grep '^SKIPPED' | head -1)"
    elif [ $rc -eq 0 ]; then ok abi_against_cuda_13_headers "($last)"
    else bad abi_against_cuda_13_headers "($last)"; printf '%s\n' "$out" | grep -v '^ok' | head -30 | sed 's/^/        /'; fi
fi

echo "== nvcc-emu: rewrite and options"
program rewrite "$HERE/rewrite_test.py"
check driver_version "$NVCC_EMU" --version
if "$NVCC_EMU" -fopenmp -o "$OUT/x" "$HERE/arch_probe.cu" >"$OUT/unknown_option.log" 2>&1 || ! grep -q "Unknown option '-fopenmp'" "$OUT/unknown_option.log"; then
    bad driver_rejects_unknown_option "(nvcc says: Unknown option '-fopenmp')"
else ok driver_rejects_unknown_option; fi
# the object cache (CUEMU_CACHE/obj): the same rewritten text, options and compiler give the kept object;
# a define the text does not use changes nothing (the text is the input); one it uses, or another option,
# compiles again; CUEMU_OBJECT_CACHE=0 keeps nothing and takes nothing
OC=$OUT/objcache; rm -rf "$OC"
oc_build() {   # oc_build NAME NVCC_OPTIONS...: arch_probe.cu's object, with a cache of its own: says hit or compiled
    local name=$1; shift
    CUEMU_CACHE=$OC CUEMU_VERBOSE=1 "$NVCC_EMU" "$@" -c "$HERE/arch_probe.cu" -o "$OUT/oc_$name.o" >"$OUT/oc_$name.log" 2>&1 \
        || { echo "failed"; return; }
    if grep -q '(object cache: ' "$OUT/oc_$name.log"; then echo hit; else echo compiled; fi
}
oc_expect() {   # oc_expect NAME WANT GOT
    if [ "$3" = "$2" ]; then ok "objcache_$1" "($3)"; else bad "objcache_$1" "($3, want $2)"; fi
}
oc_expect first_compiles compiled "$(oc_build first -O2)"
oc_expect same_build_hits hit "$(oc_build again -O2)"
if cmp -s "$OUT/oc_first.o" "$OUT/oc_again.o" && "$NVCC_EMU" -o "$OUT/oc_prog" "$OUT/oc_again.o" >"$OUT/oc_link.log" 2>&1 \
        && "$OUT/oc_prog"; then ok objcache_kept_object_runs
else bad objcache_kept_object_runs "(the kept object differs from the compiled one, or its program did not run)"; fi
oc_expect unused_define_hits hit "$(oc_build unused -O2 -DCUEMU_SELFTEST_UNUSED=1)"
oc_expect used_define_compiles compiled "$(oc_build used -O2 -Dprobe=probe_renamed)"
oc_expect option_compiles compiled "$(oc_build o1 -O1)"
oc_expect arch_compiles compiled "$(oc_build arch -O2 -arch=sm_90)"
oc_expect off_compiles compiled "$(CUEMU_OBJECT_CACHE=0 oc_build off -O2)"

echo "== target architectures (nvcc's compatibility rules)"
arch_case() {   # arch_case NAME "NVCC ARCH FLAGS" DEVICE WANT(0 ran, 3 no kernel image)
    local name=$1 flags=$2 dev=$3 want=$4
    # shellcheck disable=SC2086
    if ! "$NVCC_EMU" $flags -o "$OUT/arch_$name" "$HERE/arch_probe.cu" >"$OUT/arch_$name.log" 2>&1; then
        bad "arch_$name" "(build failed: $flags)"; cat "$OUT/arch_$name.log"; return; fi
    GPUDL_EMU_DEVICE=$dev "$OUT/arch_$name" 2>/dev/null; local rc=$?
    if [ $rc -eq "$want" ]; then ok "arch_$name"; else bad "arch_$name" "($flags on $dev: exit $rc, want $want)"; fi
}
arch_case default_build_runs_on_9.0      ""                                        9.0 0
arch_case sm80_cubin_refused_on_9.0      "-gencode arch=compute_80,code=sm_80"     9.0 3
arch_case sm80_cubin_runs_on_8.6         "-gencode arch=compute_80,code=sm_80"     8.6 0
arch_case sm86_cubin_refused_on_8.0      "-arch=sm_86 -code=sm_86"                 8.0 3
arch_case sm90_refused_on_8.0            "-arch=sm_90"                             8.0 3
arch_case compute90_ptx_runs_on_10.0     "-gencode arch=compute_90,code=compute_90" 10.0 0
arch_case sm90_cubin_refused_on_10.0     "-gencode arch=compute_90,code=sm_90"     10.0 3
arch_case sm90a_runs_on_9.0_only         "-gencode arch=compute_90a,code=sm_90a"   9.0 0
arch_case sm90a_refused_on_10.0          "-gencode arch=compute_90a,code=sm_90a"   10.0 3
arch_case gpudl_build_refused_on_7.0     "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]" 7.0 3

echo "== self-test programs"
build_and_run() {   # build_and_run NAME SRC FLAGS...
    local name=$1 src=$2; shift 2
    if "$NVCC_EMU" "$@" -I"$HERE" -o "$OUT/$name" "$src" -lcublas -lcublasLt -lcudnn -lnccl >"$OUT/$name.build.log" 2>&1; then
        program "$name" "$OUT/$name"
    else
        bad "$name" "(build failed)"; grep -E 'error|fatal' "$OUT/$name.build.log" | head -10 | sed 's/^/        /'
    fi
}
SAN=(-g -Xcompiler -fsanitize=address,undefined -Xcompiler -fno-sanitize-recover=all -Xcompiler -fno-omit-frame-pointer)
for src in "$HERE"/*.cu; do
    base=$(basename "$src" .cu)
    [ "$base" = arch_probe ] && continue
    build_and_run "$base" "$src" -O2
    # under the sanitizers: the runtime and the libraries (the 16-bit and math
    # tests are exhaustive arithmetic on host code: minutes there, nothing to find)
    if [ $QUICK = 0 ] && [[ $base != fp16_* ]] && [[ $base != math_* ]]; then
        ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
            build_and_run "${base}_asan" "$src" -O1 "${SAN[@]}"
    fi
done

# More sections, each in its own file (sourced: ok, bad, check, program,
# build_and_run, QUICK, OUT, NVCC_EMU are theirs to use).
for part in "$HERE"/part_*.sh; do
    [ -f "$part" ] && . "$part"
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
