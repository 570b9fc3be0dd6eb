# part_samples.sh - sourced by run.sh: third-party CUDA programs build and
# run unchanged on the emulated device (programs of ours in the style of
# NVIDIA's cuda-samples, in samples/), built with plain nvcc command lines;
# and nvcc's options that change the device code reach it.
echo "== samples: cuda-samples style programs, plain nvcc command lines"
SAMPLES="$HERE/samples"
# (the samples themselves, each with the nvcc line its header gives, are
# make test-samples: tests/run_samples.sh; the quick tier has
# rewrite_image.cu, which has the same constructs)

# A __constant__ variable written by device code does not compile (the
# control, which reads it, does).
# (syntax checks: the host compiler's front end is all that is needed)
if (cd "$SAMPLES" && "$NVCC_EMU" -DCONTROL -Xcompiler -fsyntax-only -c constant_write.cu -o "$OUT/constant_write.o") \
        >"$OUT/constant_write.log" 2>&1; then
    if (cd "$SAMPLES" && "$NVCC_EMU" -Xcompiler -fsyntax-only -c constant_write.cu -o "$OUT/constant_write.o") \
            >>"$OUT/constant_write.log" 2>&1; then
        bad constant_written_by_device_code_refused "(it compiled)"
    else ok constant_written_by_device_code_refused; fi
else
    bad constant_written_by_device_code_refused "(the control does not compile)"; grep error "$OUT/constant_write.log" | head -5
fi

# nvcc's floating-point options and --default-stream (nvcc's documentation).
fp_case() {   # fp_case NAME WANT NVCC-FLAGS...
    local name=$1 want=$2; shift 2
    if ! (cd "$SAMPLES" && "$NVCC_EMU" "$@" -o "$OUT/fp_$name" fp_options.cu) >"$OUT/fp_$name.log" 2>&1; then
        bad "fp_options_$name" "(build failed: $*)"; return; fi
    local got; got=$("$OUT/fp_$name" 2>&1)
    if [ "$got" = "$want" ]; then ok "fp_options_$name"; else bad "fp_options_$name" "(got '$got', want '$want')"; fi
}
# quick: the macros only (nvcc-emu -E -Xcompiler -dM: no build)
fp_macros_case() {   # fp_macros_case NAME "WANTED MACROS" "UNWANTED MACROS" NVCC-FLAGS...
    local name=$1 want=$2 unwanted=$3 m; shift 3
    if ! "$NVCC_EMU" "$@" -E -Xcompiler -dM "$SAMPLES/fp_options.cu" -o "$OUT/fp_macros_$name.h" >"$OUT/fp_macros_$name.log" 2>&1; then
        bad "fp_macros_$name" "(nvcc -E failed: $*)"; return; fi
    for m in $want; do grep -q "^#define $m " "$OUT/fp_macros_$name.h" || { bad "fp_macros_$name" "($m not defined)"; return; }; done
    for m in $unwanted; do ! grep -q "^#define $m " "$OUT/fp_macros_$name.h" || { bad "fp_macros_$name" "($m defined)"; return; }; done
    ok "fp_macros_$name"
}
fp_macros_case use_fast_math "__USE_FAST_MATH__ __CUDA_FTZ" "__CUDA_PREC_DIV __CUDA_PREC_SQRT" --use_fast_math
fp_macros_case default "__CUDA_PREC_DIV __CUDA_PREC_SQRT" "__USE_FAST_MATH__ __CUDA_FTZ"
if [ $QUICK = 0 ]; then
    fp_case use_fast_math "fast_math=1 ftz=1 prec_div=0 prec_sqrt=0 flushed=1" --use_fast_math
    fp_case default "fast_math=0 ftz=0 prec_div=1 prec_sqrt=1 flushed=0"   # the control
    fp_case ftz_true "fast_math=0 ftz=1 prec_div=1 prec_sqrt=1 flushed=1" --ftz=true
    fp_case prec_off "fast_math=0 ftz=0 prec_div=0 prec_sqrt=0 flushed=0" --prec-div=false -prec-sqrt=false
fi
if [ $QUICK = 0 ]; then
    if (cd "$SAMPLES" && "$NVCC_EMU" --default-stream per-thread -o "$OUT/per_thread_stream" per_thread_stream.cu) \
            >"$OUT/per_thread.log" 2>&1 && [ "$("$OUT/per_thread_stream")" = per_thread=1 ]; then ok default_stream_per_thread
    else bad default_stream_per_thread "(want CUDA_API_PER_THREAD_DEFAULT_STREAM=1)"; fi
fi

# -E: the preprocessed text keeps its line markers and has no rewrite markers
if "$NVCC_EMU" -E "$SAMPLES/vector_add.cu" -o "$OUT/vector_add.ii" 2>"$OUT/vector_add_E.log" \
        && grep -q '^# [0-9]* ".*vector_add.cu"' "$OUT/vector_add.ii" && ! grep -q __cuemu_global__ "$OUT/vector_add.ii"; then
    ok preprocess_only_keeps_line_markers
else bad preprocess_only_keeps_line_markers; fi
