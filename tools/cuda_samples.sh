#!/usr/bin/env bash
# NVIDIA's cuda-samples, unchanged, on the emulated device (issue 37): each
# non-graphics sample of 0_Introduction, 2_Concepts_and_Techniques,
# 3_CUDA_Features, 4_CUDA_Libraries and 6_Performance is built with the plain
# nvcc line (tests/emu/nvcc-emu, -I Common, the libraries it includes) and run
# with a time limit. The samples are never copied into this repository: give
# the path of a checkout made elsewhere (e.g. the `fetch` tool's snapshot,
# exported with git archive / git cat-file to /tmp/cuda-samples).
#   bash tools/cuda_samples.sh SAMPLES_ROOT [NAME...]   (SAMPLES_ROOT holds Samples/ and Common/)
# Environment: LIMIT (seconds per run, default 60), OUT (default
# build/cuda_samples: logs and results.csv), JOBS (parallel builds, default 1).
# GPUDL_EMU_DEVICE is passed on; unset, samples that ask cudaDeviceCanAccessPeer
# run on two emulated H100s (9.0:80G,9.0:80G), the rest on one.
# A sample passes when it exits 0 and prints no FAIL; exit 2 is "waived" (the
# samples' EXIT_WAIVED: a feature the device says it lacks). Samples that
# need what the emulator does not claim (OpenGL/EGL/Vulkan/Direct3D, NVRTC,
# the driver API's JIT/IPC, MPI, cuBLASXt, cuFFT/cuRAND/cuSPARSE/cuSOLVER/NPP/nvJPEG,
# Thrust/CUB, NvSci, several processes) are listed as "not claimed" with the reason.
set -u
ROOT=${1:?usage: tools/cuda_samples.sh SAMPLES_ROOT [NAME...]}; shift
ROOT=$(cd "$ROOT" && pwd)
HERE=$(cd "$(dirname "$0")/.." && pwd)
NVCC_EMU=$HERE/tests/emu/nvcc-emu
OUT=${OUT:-$HERE/build/cuda_samples}
LIMIT=${LIMIT:-60}
mkdir -p "$OUT"
CSV=$OUT/results.csv
echo "sample,result,build_s,run_s,reason" > "$CSV"
pass=0 fail=0 waived=0 unclaimed=0

# what a sample's sources name -> why the emulator does not claim it
# what a sample's includes name (an extended regex) -> why the emulator does not claim it; the first match wins
UNCLAIMED_INCLUDES=(
    '<GL/|<GLFW|helper_gl|<EGL|vulkan|d3d1|d3d9|<X11=graphics'
    'nvrtc=NVRTC' 'cufft=cuFFT' 'curand=cuRAND' 'cusparse=cuSPARSE' 'cusolver=cuSOLVER' '<npp|"npp=NPP'
    'nvjpeg|nvJPEG|FreeImage=nvJPEG/FreeImage' 'cublasXt=cuBLASXt' 'nvscibuf|nvscisync=NvSci' '<mpi.h>=MPI'
    "<thrust/|<cub/=Thrust/CUB (CCCL's algorithms)" 'nvJitLink|nvvm=nvJitLink/libNVVM'
)
unclaimed_reason() {
    local d=$1 inc e
    inc=$(grep -hE '^[[:space:]]*#[[:space:]]*include' "$d"/*.cu "$d"/*.cpp "$d"/*.h "$d"/*.cuh 2>/dev/null)
    for e in "${UNCLAIMED_INCLUDES[@]}"; do
        grep -qE -- "${e%%=*}" <<<"$inc" && { echo "${e#*=}"; return; }
    done
    cat "$d"/*.cu "$d"/*.cpp 2>/dev/null | grep -qE 'cuModuleLoad|cuLinkCreate|cuIpc|cudaIpc|cuMemCreate|fork\(\)|cudaNvSci' &&
        { echo "driver API JIT/IPC or several processes"; return; }
    return 1
}

run_sample() {   # run_sample DIR
    local d=$1 name reason libs=() srcs=() t0 t1 t2 rc out
    name=$(basename "$d")
    if reason=$(unclaimed_reason "$d"); then
        printf 'NOTCLAIMED %-36s %s\n' "$name" "$reason"; echo "$name,not claimed,,,$reason" >> "$CSV"
        unclaimed=$((unclaimed + 1)); return
    fi
    for s in "$d"/*.cu "$d"/*.cpp "$d"/*.c; do [ -f "$s" ] && srcs+=("$s"); done
    [ ${#srcs[@]} = 0 ] && return
    grep -qs 'cublas' "${srcs[@]}" "$d"/*.h && libs+=(-lcublas -lcublasLt)
    grep -qs 'cudnn' "${srcs[@]}" "$d"/*.h && libs+=(-lcudnn)
    # OpenMP, as NVIDIA's Makefiles/CMake build these samples (-Xcompiler -fopenmp, libgomp)
    grep -qsE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<omp.h>' "${srcs[@]}" "$d"/*.h && libs+=(-Xcompiler -fopenmp -lgomp)
    t0=$(date +%s.%N)
    if ! (cd "$d" && "$NVCC_EMU" -O2 -I"$ROOT/Common" -o "$OUT/$name.bin" "${srcs[@]}" "${libs[@]}") >"$OUT/$name.build.log" 2>&1; then
        t1=$(date +%s.%N)
        reason=$(grep -m1 -E 'error|not emulated' "$OUT/$name.build.log" | cut -c1-160 | tr ',' ';')
        printf 'FAIL       %-36s build: %s\n' "$name" "$reason"; fail=$((fail + 1))
        echo "$name,build failed,$(echo "$t1 - $t0" | bc),,$reason" >> "$CSV"; return
    fi
    t1=$(date +%s.%N)
    # peer-to-peer samples (cudaDeviceCanAccessPeer) waive on one GPU: two
    # emulated H100s unless GPUDL_EMU_DEVICE says otherwise
    local devs=${GPUDL_EMU_DEVICE:-}
    [ -z "$devs" ] && grep -qs 'cudaDeviceCanAccessPeer' "${srcs[@]}" && devs=9.0:80G,9.0:80G
    out=$(cd "$d" && { [ -n "$devs" ] && export GPUDL_EMU_DEVICE=$devs; timeout "$LIMIT" "$OUT/$name.bin" 2>&1 </dev/null; }); rc=$?
    t2=$(date +%s.%N)
    printf '%s\n' "$out" > "$OUT/$name.run.log"
    local bs rs; bs=$(printf '%.1f' "$(echo "$t1 - $t0" | bc)"); rs=$(printf '%.1f' "$(echo "$t2 - $t1" | bc)")
    if [ $rc = 0 ] && ! printf '%s\n' "$out" | grep -qE 'FAILED|Result = FAIL|[Tt]est failed|Test FAIL'; then
        printf 'PASS       %-36s build %5s s, run %5s s\n' "$name" "$bs" "$rs"; pass=$((pass + 1))
        echo "$name,pass,$bs,$rs," >> "$CSV"
    elif [ $rc = 2 ]; then
        reason=$(printf '%s\n' "$out" | grep -m1 -iE 'waiv|not support|requires' | cut -c1-160 | tr ',' ';')
        printf 'WAIVED     %-36s %s\n' "$name" "$reason"; waived=$((waived + 1))
        echo "$name,waived,$bs,$rs,$reason" >> "$CSV"
    else
        if [ $rc = 124 ]; then reason="timeout after $LIMIT s"
        else reason="exit $rc: $(printf '%s\n' "$out" | grep -m1 -iE 'error|fail|mismatch|cuemu' | cut -c1-140 | tr ',' ';')"; fi
        printf 'FAIL       %-36s %s\n' "$name" "$reason"; fail=$((fail + 1))
        echo "$name,fail,$bs,$rs,$reason" >> "$CSV"
    fi
}

dirs=()
if [ $# -gt 0 ]; then
    for n in "$@"; do for d in "$ROOT"/Samples/*/"$n"; do [ -d "$d" ] && dirs+=("$d"); done; done
else
    for c in 0_Introduction 2_Concepts_and_Techniques 3_CUDA_Features 4_CUDA_Libraries 6_Performance; do
        for d in "$ROOT/Samples/$c"/*/; do dirs+=("${d%/}"); done
    done
fi
for d in "${dirs[@]}"; do run_sample "$d"; done
echo "cuda-samples on the emulated device: $pass passed, $fail failed, $waived waived, $unclaimed not claimed (of ${#dirs[@]}); $CSV"
