#!/bin/sh
# make doctor: what this machine offers gpudl, in seconds, each missing piece
# with the command that adds it; then gpudl's own report (examples/doctor.c:
# the build, the GPU and driver, the CPU's GEMM kernel and threads, the
# data), built with cc where no NVIDIA driver is installed (seconds) and
# with nvcc where one is (the GPU checks need the CUDA build; the kernels for
# two architectures take 20 s to a few minutes to compile).
cd "$(dirname "$0")/.." || exit 1
CC=${CC:-cc}
NVCC=${NVCC:-nvcc}
note() { printf '%s\n' "$*"; }
missing() {   # missing WHAT FIX: an optional piece, and how to add it
    printf 'missing: %s\n  fix: %s\n' "$1" "$2"
}
root_hint=""
[ "$(id -u)" = 0 ] && root_hint=" (as root: mpirun --allow-run-as-root)"

note "== this machine"
if command -v "$CC" >/dev/null 2>&1; then note "C compiler: $("$CC" --version 2>/dev/null | head -n 1)"
else missing "a C compiler ($CC)" "apt-get install build-essential (Debian)"; fi
if command -v "$NVCC" >/dev/null 2>&1; then
    note "CUDA compiler: $("$NVCC" --version 2>/dev/null | sed -n 's/.*\(release [0-9.]*\).*/nvcc \1/p' | head -n 1)"
else
    note "CUDA compiler: none (nvcc not found): programs build for the CPU (cc -DGPUDL_NO_CUDA); install the CUDA toolkit for the GPU"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
    gpus=$(nvidia-smi -L 2>/dev/null)
    if [ -n "$gpus" ]; then note "GPU: $(printf '%s\n' "$gpus" | head -n 1)$([ "$(printf '%s\n' "$gpus" | wc -l)" -gt 1 ] && echo " (and $(($(printf '%s\n' "$gpus" | wc -l) - 1)) more)")"
    else note "GPU: the NVIDIA driver is installed but nvidia-smi lists no GPU (the CUDA report below says why)"; fi
else
    note "GPU: none here (no NVIDIA driver: nvidia-smi not found). Programs run on the CPU; the GPU path still runs on the emulated CUDA device (next line)"
fi
if command -v python3 >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1; then
    note "emulated CUDA device: tests/emu/nvcc-emu builds any CUDA program to run on the CPU (make test-emu; make test runs its core)"
else
    missing "the emulated CUDA device needs python3 and g++ (make test runs the GPU path on it)" "apt-get install python3 g++"
fi
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
    note "MPI: $(mpirun --version 2>/dev/null | head -n 1); data parallel: make, then mpirun -np 2 ./build/mlp_fashion --dist$root_hint"
else
    missing "MPI (mpicc, mpirun): data-parallel training (--dist) and make test-dist need it" "apt-get install openmpi-bin libopenmpi-dev"
fi
if [ -f /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz ] || [ -f data/fashion-mnist/t10k-labels-idx1-ubyte ] \
   || [ -f data/fashion-mnist/t10k-labels-idx1-ubyte.gz ]; then :
else
    missing "the full Fashion-MNIST (the demo trains on the 2000-image subset shipped here instead)" \
        "apt-get install dataset-fashion-mnist (make demo does it when run as root)"
fi
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 && { command -v wine64 >/dev/null 2>&1 || [ -x /usr/lib/wine/wine64 ]; } \
    || note "optional: make test-windows needs MinGW-w64 and Wine (apt-get install gcc-mingw-w64-x86-64 wine64)"
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1 \
    || note "optional: make test-arm64 needs an aarch64 cross compiler and QEMU (apt-get install gcc-aarch64-linux-gnu qemu-user)"

note "== gpudl's report (examples/doctor.c)"
mkdir -p build
if command -v nvidia-smi >/dev/null 2>&1 && command -v "$NVCC" >/dev/null 2>&1; then
    note "building it with nvcc, for the GPU checks (the kernels for sm_80 and sm_90: 20 s to a few minutes) ..."
    make --no-print-directory build/doctor >build/doctor.build.log 2>&1 || { tail -20 build/doctor.build.log; exit 1; }
    libdirs=$(NVCC=$NVCC sh tools/cuda_flags.sh --libdirs)   # cuDNN outside the usual places (PyTorch's wheels)
    LD_LIBRARY_PATH=$libdirs${libdirs:+${LD_LIBRARY_PATH:+:}}${LD_LIBRARY_PATH:-} ./build/doctor
else
    make --no-print-directory build/doctor_cpu >build/doctor.build.log 2>&1 || { tail -20 build/doctor.build.log; exit 1; }
    ./build/doctor_cpu
fi
exit 0
