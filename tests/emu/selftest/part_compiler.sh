# part_compiler.sh - sourced by run.sh: nvcc-emu's own rules as a compiler
# driver (issue 37): device symbols whatever their size's spelling, the
# libraries and headers the emulator does not claim refused by name (and a
# real CUDA install's headers never read), inline PTX and dynamic
# parallelism refused at compile time, __CUDA_ARCH__ as nvcc's two passes
# define it. Sources in compiler/; each refusal has a control that builds.
echo "== nvcc-emu as a compiler driver"
COMPILER="$HERE/compiler"
cc_run() {   # cc_run NAME SRC NVCC-ARGS...: builds, runs, wants exit 0 and PASSED
    local name=$1 src=$2 out rc; shift 2
    if ! "$NVCC_EMU" "$@" -o "$OUT/cc_$name" "$COMPILER/$src" >"$OUT/cc_$name.build.log" 2>&1; then
        bad "$name" "(build failed: nvcc $* $src)"; grep -E 'error|fatal' "$OUT/cc_$name.build.log" | head -8 | sed 's/^/        /'
        return
    fi
    out=$("$OUT/cc_$name" 2>&1); rc=$?
    if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q PASSED; then ok "$name"
    else bad "$name" "(exit $rc)"; printf '%s\n' "$out" | tail -5 | sed 's/^/        /'; fi
}
cc_refused() {   # cc_refused NAME WANT NVCC-ARGS...: nvcc-emu fails and says WANT (a fixed string)
    local name=$1 want=$2; shift 2
    if "$NVCC_EMU" "$@" >"$OUT/cc_$name.log" 2>&1; then bad "$name" "(accepted: nvcc $*)"
    elif grep -qF -- "$want" "$OUT/cc_$name.log"; then ok "$name"
    else bad "$name" "(no \"$want\" in the output)"; tail -5 "$OUT/cc_$name.log" | sed 's/^/        /'; fi
}
cc_accepted() {   # cc_accepted NAME NVCC-ARGS...: the control: nvcc-emu succeeds
    local name=$1; shift
    if "$NVCC_EMU" "$@" >"$OUT/cc_$name.log" 2>&1; then ok "$name"
    else bad "$name" "(refused: nvcc $*)"; grep -E 'error|fatal' "$OUT/cc_$name.log" | head -5 | sed 's/^/        /'; fi
}

# #pragma unroll is nvcc's: no unknown-pragma warning under the user's
# -Xcompiler -Wall,-Werror (the host compiler's front end is enough)
cc_accepted pragma_unroll_under_werror -Xcompiler -Wall,-Werror,-fsyntax-only -c -o "$OUT/cc_pragma_unroll.o" "$COMPILER/pragma_unroll.cu"

# (a) __constant__ / __device__ arrays sized by macros, '[(2 * 8 + 1)]':
# device symbols (the rewrite's unit tests have the quick form; this is the
# program, a build of some seconds: full tier)
[ $QUICK = 0 ] && cc_run symbol_arrays_sized_by_macros symbol_arrays.cu

# (b) toolkit libraries the emulator does not provide are refused at link
# time by name (-lcufft used to reach the host linker: rstrip('_static')
# strips characters, not the suffix); -c links nothing and refuses nothing;
# the control links the claimed ones, _static forms included
cc_refused lib_cufft_refused "-lcufft: cuFFT is not emulated" -o "$OUT/cc_lib" "$COMPILER/symbol_arrays.cu" -lcufft
cc_refused lib_curand_static_refused "-lcurand_static: cuRAND is not emulated" -o "$OUT/cc_lib" "$COMPILER/symbol_arrays.cu" -lcurand_static
cc_refused lib_npp_refused "-lnppial: NPP is not emulated" -o "$OUT/cc_lib" "$COMPILER/symbol_arrays.cu" -lcublas -l nppial -lnppc
cc_accepted lib_not_linked_with_c -c -Xcompiler -fsyntax-only -o "$OUT/cc_lib.o" "$COMPILER/symbol_arrays.cu" -lcufft
[ $QUICK = 0 ] && cc_run lib_claimed_ones_link symbol_arrays.cu -lcudart_static -lcublas_static -lcublasLt -lcudnn -lnccl_static -lcuda

# (c) headers: a toolkit header the emulator cannot provide is refused by
# name ("not emulated: <name>"), with or without a -I into a CUDA install
# (dropped); a toolkit header reached some other way (a system folder of
# links into a toolkit, an absolute path) is refused after preprocessing;
# the control: the headers it ships build, and their preprocessed text
# names no file of a CUDA install even with -I/usr/local/cuda/include
SYN=(-c -Xcompiler -fsyntax-only -o "$OUT/cc_hdr.o" "$COMPILER/include_one.cu")
cc_refused hdr_cufft_refused "not emulated: <cufft.h>" "${SYN[@]}" "-DHEADER=<cufft.h>"
cc_refused hdr_curand_kernel_refused "not emulated: <curand_kernel.h>" "${SYN[@]}" "-DHEADER=<curand_kernel.h>"
cc_refused hdr_cublasXt_refused_with_toolkit_I "not emulated: <cublasXt.h>" "${SYN[@]}" "-DHEADER=<cublasXt.h>" -I/usr/local/cuda/include
cc_refused hdr_driver_api_refused "not emulated: <cuda.h>" "${SYN[@]}" "-DHEADER=<cuda.h>" -isystem /usr/local/cuda/include
cc_refused hdr_internal_header_refused "crt/math_functions.h" "${SYN[@]}" "-DHEADER=<crt/math_functions.h>"
if [ -f /usr/local/cuda/include/cuComplex.h ]; then
    cc_refused hdr_absolute_toolkit_path_refused "not emulated: <cuComplex.h>" "${SYN[@]}" '-DHEADER="/usr/local/cuda/include/cuComplex.h"'
else skip hdr_absolute_toolkit_path_refused "(no CUDA install at /usr/local/cuda)"; fi
cc_accepted hdr_provided_ones_build -c -Xcompiler -fsyntax-only -o "$OUT/cc_hdr.o" "$COMPILER/headers_provided.cu" \
    -I/usr/local/cuda/include
if "$NVCC_EMU" -E -I/usr/local/cuda/include -isystem /usr/local/cuda/include "$COMPILER/headers_provided.cu" \
        -o "$OUT/cc_hdr.ii" >"$OUT/cc_hdr_E.log" 2>&1; then
    read_from=$(grep -o '^# [0-9]* "[^"]*"' "$OUT/cc_hdr.ii" | sed 's/.*"\(.*\)"/\1/' | sort -u | while read -r f; do
        [ -f "$f" ] && case $(readlink -f "$f") in */cuda*/include/*) echo "$f";; esac; done | head -3)
    if [ -z "$read_from" ]; then ok hdr_no_toolkit_header_read; else bad hdr_no_toolkit_header_read "(read: $read_from)"; fi
else bad hdr_no_toolkit_header_read "(nvcc -E failed)"; tail -3 "$OUT/cc_hdr_E.log"; fi

# inline PTX in device code and dynamic parallelism are refused at compile
# time, naming the instruction or the launch and the line (never the host
# assembler, never a launch dropped); the control builds and runs, with an
# asm statement in its host code
DR=(-c -Xcompiler -fsyntax-only -o "$OUT/cc_dr.o" "$COMPILER/device_refusals.cu")
cc_refused ptx_in_kernel_refused 'device_refusals.cu:38: nvcc-emu: error: inline PTX is not emulated: "trap;"' "${DR[@]}" -DCASE=1
cc_refused ptx_asm_volatile_refused 'inline PTX is not emulated: "mov.u32 %0, %%laneid;"' "${DR[@]}" -DCASE=2
cc_refused ptx_in_member_function_refused 'inline PTX is not emulated: "add.s32 %0, %1, %1;"' "${DR[@]}" -DCASE=3
cc_refused ptx_in_device_lambda_refused 'inline PTX is not emulated: "membar.gl;"' "${DR[@]}" -DCASE=6
cc_refused device_launch_refused 'dynamic parallelism is not emulated: a kernel launch in device code (child<<<...>>>' "${DR[@]}" -DCASE=4
cc_refused device_synchronize_refused 'dynamic parallelism is not emulated: cudaDeviceSynchronize in device code' "${DR[@]}" -DCASE=5
cc_accepted device_refusals_control_compiles "${DR[@]}"
[ $QUICK = 0 ] && cc_run device_refusals_control_runs device_refusals.cu

# __CUDA_ARCH__: the target's value in device code (kernels, __device__
# functions, the device side of __host__ __device__ ones, member functions),
# undefined in host code; with several targets the device runs the code of
# the image NVIDIA's rules pick (the best cubin, else the highest PTX not
# above it); never a kernel from the host pass's text
MULTI=(-gencode arch=compute_75,code=compute_75 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86
       -gencode "arch=compute_90,code=[sm_90,compute_90]")
if "$NVCC_EMU" "${MULTI[@]}" -DWANT=0 -o "$OUT/cc_cuda_arch_multi" "$COMPILER/cuda_arch.cu" >"$OUT/cc_cuda_arch_multi.log" 2>&1; then
    for x in 7.5:750 8.0:800 8.9:860 9.0:900 10.0:900; do
        if GPUDL_EMU_DEVICE=${x%:*} WANT_ARCH=${x#*:} "$OUT/cc_cuda_arch_multi" 2>&1 | grep -q PASSED; then
            ok "cuda_arch_on_${x%:*}_runs_${x#*:}"
        else bad "cuda_arch_on_${x%:*}_runs_${x#*:}"; GPUDL_EMU_DEVICE=${x%:*} WANT_ARCH=${x#*:} "$OUT/cc_cuda_arch_multi" 2>&1 | tail -4; fi
    done
else bad cuda_arch_multi_target_build; grep -E 'error|fatal' "$OUT/cc_cuda_arch_multi.log" | head -5; fi
if [ $QUICK = 0 ]; then
    cc_run cuda_arch_sm80 cuda_arch.cu -arch=sm_80 -DWANT=800
    cc_run cuda_arch_default_750 cuda_arch.cu -DWANT=750
    cc_run cuda_arch_sm90a_feature_macros cuda_arch.cu -DFEAT=1 -DWANT=900 -gencode arch=compute_90a,code=sm_90a
    cc_run cuda_arch_targets_same_code cuda_arch.cu -DSAME_ON_TARGETS -gencode arch=compute_80,code=sm_80 \
        -gencode "arch=compute_90,code=[sm_90,compute_90]"
fi
CA=(-c -Xcompiler -fsyntax-only -o "$OUT/cc_ca.o" "$COMPILER/cuda_arch.cu")
cc_accepted cuda_arch_device_only_function_compiles "${CA[@]}" -DWANT=750 -DCASE=1
cc_accepted cuda_arch_control_compiles "${CA[@]}" -DWANT=750

# declarations only the device pass has ('#if __CUDA_ARCH__ >= 700' around
# an #include or a whole __device__ function, type, template, namespace):
# device code sees them, host code does not (a host use fails as nvcc's
# host pass does); what one translation unit cannot hold (an overload or
# a second definition of a name the host pass declares, a member only one
# pass has, different ones per target) is refused by name, and so is what
# nvcc itself fails on (a kernel or __device__ variable only the device
# pass declares: nvcc's host-side registration names it). The control
# compiles with the real nvcc -arch=sm_90 -c as it is, and runs here.
if [ $QUICK = 0 ]; then   # some seconds a build: full tier
    CD=(-c -Xcompiler -fsyntax-only -o "$OUT/cc_cd.o" "$COMPILER/cuda_arch_decls.cu")
    cc_accepted cuda_arch_decls_control_compiles "${CD[@]}"
    cc_run cuda_arch_decls_control_runs cuda_arch_decls.cu
    cc_refused cuda_arch_decls_host_use_refused "the host pass (__CUDA_ARCH__ undefined) does not compile" "${CD[@]}" -DCASE=1
    cc_refused cuda_arch_decls_overload_refused "a declaration of pick only the device pass has" "${CD[@]}" -DCASE=2
    cc_refused cuda_arch_decls_member_refused "cuda_arch_decls.cu:59: nvcc-emu: error: a part of a declaration, or a declaration inside a class" "${CD[@]}" -DCASE=3
    cc_refused cuda_arch_decls_typedef_refused "a declaration of real_t only the device pass has" "${CD[@]}" -DCASE=4
    cc_refused cuda_arch_decls_per_target_refused "differ between the targets' device passes" "${CD[@]}" -DCASE=5 \
        -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80
    cc_refused cuda_arch_decls_device_variable_refused "device_only_count is declared only in the device pass" "${CD[@]}" -DCASE=6
    cc_refused cuda_arch_decls_kernel_refused "device_only_kernel is declared only in the device pass" "${CD[@]}" -DCASE=7
fi
