#!/usr/bin/env bash
# make test-samples: programs of ours written in the style of NVIDIA's
# cuda-samples (tests/emu/selftest/samples), one per CUDA feature a course
# teaches, each built with the plain nvcc line its header gives ("Build:
# nvcc ...") by tests/emu/nvcc-emu and run on the emulated device: exit 0
# and "PASSED". Nothing is fetched. (NVIDIA's own samples, from a checkout
# outside this repository: tools/cuda_samples.sh.)
# Ends with: N passed, N failed, N skipped.
set -u
cd "$(dirname "$0")/.."
NVCC_EMU=$PWD/tests/emu/nvcc-emu
S=tests/emu/selftest/samples
B=$PWD/build/samples
mkdir -p "$B"
passed=0; failed=0; skipped=0
t0=$SECONDS
for src in "$S"/*.cu; do
    name=$(basename "$src" .cu)
    line=$(grep -m1 -o 'Build: nvcc .*' "$src" | sed 's/^Build: nvcc //; s/ *\*\/.*$//')
    [ -n "$line" ] || continue
    read -r -a args <<<"$line"
    ts=$SECONDS
    if ! (cd "$S" && "$NVCC_EMU" "${args[@]}" -o "$B/$name") >"$B/$name.build.log" 2>&1; then
        printf 'FAIL    %-28s %s\n' "$name" "(build: nvcc $line)"; grep -m5 -E 'error|not emulated' "$B/$name.build.log" | sed 's/^/        /'
        failed=$((failed + 1)); continue
    fi
    out=$(cd "$S" && GPUDL_EMU_DEVICE=${SAMPLES_DEVICE:-9.0:80G} timeout 120 "$B/$name" 2>&1); rc=$?
    if [ $rc = 0 ] && printf '%s\n' "$out" | grep -q PASSED; then
        printf 'ok      %-28s %3d s  %s\n' "$name" $((SECONDS - ts)) "$(printf '%s\n' "$out" | grep -v PASSED | tail -1 | cut -c1-100)"
        passed=$((passed + 1))
    else
        printf 'FAIL    %-28s %s\n' "$name" "(exit $rc)"; printf '%s\n' "$out" | tail -6 | sed 's/^/        /'
        failed=$((failed + 1))
    fi
done
echo "test-samples: $((SECONDS - t0)) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
