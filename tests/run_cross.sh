#!/usr/bin/env bash
# The CPU build on the students' other machines, without those machines:
#   bash tests/run_cross.sh windows [--quick]  (make test-windows; make test: --quick)
#       cross-builds the CPU suites, the fault tests and the examples with
#       MinGW-w64 (x86_64-w64-mingw32-gcc, OpenMP linked statically) and runs
#       the suites and a short training run of the MLP example under Wine;
#       --quick: the layers, gzip, the checkpoint round trip and the fault
#       tests (a save killed midway, atomic replace).
#   bash tests/run_cross.sh arm64 [--quick]    (make test-arm64; make test: --quick)
#       cross-builds the CPU suites for aarch64 (static, OpenMP; the NEON GEMM
#       kernel) and runs them under qemu-aarch64, about 20x slower than
#       native: --quick runs the GEMM kernels (NEON against the C kernel),
#       the 16-bit conversions, the layers' gradient checks and the
#       checkpoint round trip; without it, everything (the 500^3 GEMM alone
#       takes four minutes there).
# Debian: apt-get install gcc-mingw-w64-x86-64 wine64 gcc-aarch64-linux-gnu
# qemu-user (.ci/run installs them). Without the tools each part says
# SKIPPED. Ends with: N passed, N failed, N skipped.
set -u
cd "$(dirname "$0")/.."
what=${1:-}
QUICK=0
[ "${2:-}" = "--quick" ] && QUICK=1
passed=0; failed=0; skipped=0
ok()   { printf 'ok      %-34s %s\n' "$1" "${2:-}"; passed=$((passed + 1)); }
bad()  { printf 'FAIL    %-34s %s\n' "$1" "${2:-}"; failed=$((failed + 1)); }
skip() { printf 'SKIPPED %-34s %s\n' "$1" "$2"; skipped=$((skipped + 1)); }
run_suite() {   # run_suite NAME CMD...: streams the program's lines, adds its own "N passed, N failed, N skipped"
    local name=$1 line l rc; shift
    while IFS= read -r l; do
        l=${l%$'\r'}
        if [[ $l =~ ^[0-9]+\ passed,\ [0-9]+\ failed,\ [0-9]+\ skipped$ ]]; then line=$l; else printf '%s\n' "$l"; fi
    done < <("$@" 2>"$B/$name.stderr"; echo "rc=$?" > "$B/$name.rc")
    rc=$(sed -n 's/^rc=//p' "$B/$name.rc" 2>/dev/null); rc=${rc:-1}
    if [[ ${line:-} =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
        passed=$((passed + BASH_REMATCH[1])); failed=$((failed + BASH_REMATCH[2])); skipped=$((skipped + BASH_REMATCH[3]))
        [ "$rc" -eq 0 ] || [ "${BASH_REMATCH[2]}" -gt 0 ] || bad "$name" "exit status $rc"
    else
        bad "$name" "crashed or printed no summary (exit $rc)"; printf '%s\n' "${line:-}"; tail -5 "$B/$name.stderr" | sed 's/^/        /'
    fi
}
build() {   # build NAME CC ARGS...: a cross build that must succeed
    local name=$1; shift
    if "$@" >"$B/$name.build.log" 2>&1; then return 0; fi
    bad "build_$name" "($*)"; grep -E 'error' "$B/$name.build.log" | head -10 | sed 's/^/        /'
    return 1
}
data() {   # written beside and renamed: make test runs the grader beside this script, reading these files
    mkdir -p build/test/data
    for f in data/fashion-mnist-subset/*.gz; do
        d=build/test/data/$(basename "$f" .gz); gunzip -c "$f" > "$d.$$" && mv -f "$d.$$" "$d"
    done
}

case "$what" in
windows)
    B=build/windows
    mkdir -p $B
    CC=x86_64-w64-mingw32-gcc
    WINE=$(command -v wine64 || command -v wine || ls /usr/lib/wine/wine64 2>/dev/null)
    echo "== Windows (MinGW-w64, run under Wine): $([ $QUICK = 1 ] && echo 'a subset of the CPU suites, the fault tests' || echo 'the CPU suites, the fault tests, the examples')"
    if ! command -v $CC >/dev/null || [ -z "$WINE" ]; then
        skip test_windows "needs x86_64-w64-mingw32-gcc and wine64 (apt-get install gcc-mingw-w64-x86-64 wine64)"
    else
        export WINEDEBUG=-all WINEPREFIX=${WINEPREFIX:-$PWD/$B/wineprefix}
        data
        FLAGS=(-std=c99 -O2 -Wall -Wextra -Werror -fopenmp -static -DGPUDL_NO_CUDA)
        TRAIN=(--cpu-only)
        [ $QUICK = 1 ] && TRAIN=(--only=linear --only=conv2d --only=idx_gzip --only=idx_gunzip_builtin --only=checkpoint_roundtrip_resume)
        [ $QUICK = 0 ] && build suite_core $CC "${FLAGS[@]}" -o $B/suite_core.exe tests/suite_core.c -lm \
            && run_suite win_suite_core "$WINE" $B/suite_core.exe --cpu-only
        build suite_train $CC "${FLAGS[@]}" -o $B/suite_train.exe tests/suite_train.c -lm \
            && GPUDL_TEST_DATA=build/test/data run_suite win_suite_train "$WINE" $B/suite_train.exe "${TRAIN[@]}"
        build test_faults $CC -std=c99 -O1 -Wall -Wextra -Werror -DGPUDL_NO_CUDA -o $B/test_faults.exe tests/test_faults.c -lm \
            && run_suite win_test_faults "$WINE" $B/test_faults.exe
        [ $QUICK = 1 ] && { echo "$passed passed, $failed failed, $skipped skipped"; [ $failed -eq 0 ]; exit; }
        for ex in cnn_fashion mlp_fashion mixed_precision gradcheck cpu_vs_gpu doctor gpt_text; do   # the two-file build of each
            build "ex_$ex" $CC -std=c99 -O2 -Wall -Wextra -Werror -fopenmp -static -DGPUDL_NO_CUDA -I. -o $B/$ex.exe examples/$ex.c -lm \
                && ok "win_build_$ex"
        done
        # the autograder's sandbox (child processes, Landlock, seccomp) is POSIX and Linux: on Windows
        # the grader builds and says so (use WSL), with exit status 2, never a score it cannot stand behind
        if build grade_win $CC -std=c99 -O2 -Wall -Wextra -Werror -I. -o $B/grade.exe assignments/grade.c; then
            "$WINE" $B/grade.exe maxpool assignments/maxpool/solution.c --no-train >$B/grade_win.log 2>&1; rc=$?
            msg=$(tr -d '\r' <$B/grade_win.log | grep -m1 '^grade:')
            if [ $rc -eq 2 ] && printf '%s\n' "$msg" | grep -q WSL; then ok win_grade_says_wsl "$msg"
            else bad win_grade_says_wsl "(exit status $rc: $msg)"; fi
        fi
        if [ -x $B/cnn_fashion.exe ]; then   # the demo, trained and saved twice to one path (a replace on Windows)
            "$WINE" $B/cnn_fashion.exe --cpu --data build/test/data --epochs 2 --save $B/cnn.safetensors >$B/cnn.log 2>&1
            "$WINE" $B/cnn_fashion.exe --cpu --data build/test/data --epochs 1 --save $B/cnn.safetensors >>$B/cnn.log 2>&1
            acc=$(tr -d '\r' <$B/cnn.log | sed -n 's/^test accuracy: \([0-9.]*\)%.*/\1/p' | head -1)
            if [ -n "$acc" ] && awk "BEGIN{exit !($acc >= 50)}" && [ "$(tr -d '\r' <$B/cnn.log | grep -c '^saved ')" = 2 ]; then
                ok win_cnn_fashion "${acc}% after 2 epochs of the subset; saved twice to one path"
            else
                bad win_cnn_fashion "(accuracy '${acc}', or a save failed)"; tail -5 $B/cnn.log | sed 's/^/        /'
            fi
        fi
    fi
    ;;
arm64)
    B=build/arm64
    mkdir -p $B
    CC=aarch64-linux-gnu-gcc
    QEMU=$(command -v qemu-aarch64 || command -v qemu-aarch64-static)
    echo "== ARM64 (aarch64, run under QEMU): the CPU suites$([ $QUICK = 1 ] && echo ', a subset')"
    if ! command -v $CC >/dev/null || [ -z "$QEMU" ]; then
        skip test_arm64 "needs aarch64-linux-gnu-gcc and qemu-aarch64 (apt-get install gcc-aarch64-linux-gnu qemu-user)"
    else
        data
        export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
        FLAGS=(-std=c99 -O2 -Wall -Wextra -Werror -fopenmp -static -DGPUDL_NO_CUDA)
        CORE=(--cpu-only) TRAIN=(--cpu-only)
        if [ $QUICK = 1 ]; then
            CORE=(--only=matmul_f32_each_kernel --only=half_bulk_conversions --only=cpu_flush_denormals --only=elementwise)
            TRAIN=(--only=gradcheck_every_layer --only=checkpoint_roundtrip_resume)
        fi
        build suite_core $CC "${FLAGS[@]}" -o $B/suite_core tests/suite_core.c -lm \
            && run_suite arm64_suite_core "$QEMU" $B/suite_core "${CORE[@]}"
        build suite_train $CC "${FLAGS[@]}" -o $B/suite_train tests/suite_train.c -lm \
            && GPUDL_TEST_DATA=build/test/data run_suite arm64_suite_train "$QEMU" $B/suite_train "${TRAIN[@]}"
    fi
    ;;
*)
    echo "usage: bash tests/run_cross.sh windows | arm64 [--quick]"; exit 2 ;;
esac
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
