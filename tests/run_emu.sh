#!/usr/bin/env bash
# make test-emu: gpudl's GPU path on the emulated CUDA device (tests/emu).
# The unchanged gpudl.h, gpudl_kernels.cu and GPU test suites, built by
# tests/emu/nvcc-emu with the Makefile's architectures, run there:
#   1. the emulator's own self-tests (tests/emu/selftest/run.sh);
#   2. the GPU suites (suite_core.c + gpu_faults.cu, suite_train.c) on a
#      machine with two H100s, plainly and under AddressSanitizer +
#      UndefinedBehaviorSanitizer (there without the slowest test);
#   3. the examples in a short mode, on the shipped Fashion-MNIST subset;
#   4. the device profiles: none (the CPU fallback and its message), 7.0 (a
#      GPU the kernels were not built for), 9.0:1G (out of device memory).
# Nothing here may say SKIPPED. Ends with: N passed, N failed, N skipped.
#   bash tests/run_emu.sh [--quick | --core]
#     --quick: no sanitizer builds (here and in the self-tests)
#     --core:  what make test runs: --quick, and without the slowest tests
#              (three epochs in three precisions; the step floor's 14
#              counted steps, whose MLP and CNN steps gpu_emu_counters_
#              training_step counts in the core; the arithmetic on
#              misaligned views, whose tensor ops stay), the examples that only
#              print (gradcheck, cpu_vs_gpu), mixed_precision and the CNN's
#              --residual run; the GPT example 4 steps instead of 30
set -u
cd "$(dirname "$0")/.."
NVCC_EMU=tests/emu/nvcc-emu
ARCH=(-gencode arch=compute_80,code=sm_80 -gencode "arch=compute_90,code=[sm_90,compute_90]")
LIBS=(-lcublas -lcublasLt -lcudnn)
B=build/emu
mkdir -p "$B"
QUICK=0 CORE=0
[ "${1:-}" = "--quick" ] && QUICK=1
[ "${1:-}" = "--core" ] && QUICK=1 CORE=1
passed=0; failed=0; skipped=0
export CUEMU_TEST_OUT=$PWD/$B/selftest
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

ok()   { printf 'ok      %-34s %s\n' "$1" "${2:-}"; passed=$((passed + 1)); }
bad()  { printf 'FAIL    %-34s %s\n' "$1" "${2:-}"; failed=$((failed + 1)); }
run_suite() {   # run_suite NAME CMD...: streams the program's lines, adds its own "N passed, N failed, N skipped"
    local name=$1 line= l rc p f s; shift
    while IFS= read -r l; do
        if [[ $l =~ ^[0-9]+\ passed,\ [0-9]+\ failed,\ [0-9]+\ skipped$ ]]; then line=$l; else printf '%s\n' "$l"; fi
    done < <("$@" 2>"$B/$name.stderr"; echo "rc=$?" > "$B/$name.rc")
    rc=$(sed -n 's/^rc=//p' "$B/$name.rc" 2>/dev/null); rc=${rc:-1}
    if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
        p=${BASH_REMATCH[1]}; f=${BASH_REMATCH[2]}; s=${BASH_REMATCH[3]}
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
        [ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || { bad "$name" "exit status $rc"; }
        [ "$f" -eq 0 ] || tail -20 "$B/$name.stderr" | sed 's/^/        /'
    else
        bad "$name" "crashed or printed no summary (exit $rc)"; printf '%s\n' "$line"; tail -20 "$B/$name.stderr" | sed 's/^/        /'
    fi
}
build() {   # build NAME SOURCES/FLAGS...: an nvcc-emu build that must succeed
    local name=$1; shift
    if "$NVCC_EMU" "$@" >"$B/$name.build.log" 2>&1; then return 0; fi
    bad "build_$name" "($NVCC_EMU $*)"; grep -E 'error|fatal' "$B/$name.build.log" | head -15 | sed 's/^/        /'
    return 1
}

# The emulator's self-tests run beside the rest (two cores); their report comes last.
SELFTEST_OUT=$B/selftest.out
if [ $QUICK = 1 ]; then bash tests/emu/selftest/run.sh --quick >$SELFTEST_OUT 2>&1 &
else bash tests/emu/selftest/run.sh >$SELFTEST_OUT 2>&1 & fi
SELFTEST_PID=$!

echo "== data: the shipped Fashion-MNIST subset"
DATA=$B/data
mkdir -p "$DATA"
for f in data/fashion-mnist-subset/*.gz; do gunzip -c "$f" > "$DATA/$(basename "$f" .gz)"; done
export GPUDL_TEST_DATA=$DATA

echo "== gpudl's GPU suites on the emulated H100 (the unchanged sources)"
SAN=(-g -Xcompiler -fsanitize=address,undefined -Xcompiler -fno-sanitize-recover=all -Xcompiler -fno-omit-frame-pointer)
# (spelt ./gpudl_kernels.cu as the grader and run_dist.sh spell it: the same text, so nvcc-emu's object cache
# gives each the object the first one built)
build kernels -O2 "${ARCH[@]}" -Xcompiler -fopenmp -c ./gpudl_kernels.cu -o $B/kernels.o
build gpu_faults -O2 "${ARCH[@]}" -c tests/gpu_faults.cu -o $B/gpu_faults.o
TWO_H100=9.0:80G,9.0:80G   # a second device for gpu_context_keeps_its_device
if build suite_core_cuda -O2 "${ARCH[@]}" -Xcompiler -fopenmp -o $B/suite_core_cuda tests/suite_core.c $B/kernels.o $B/gpu_faults.o "${LIBS[@]}" -lgomp; then
    if [ $CORE = 1 ]; then GPUDL_EMU_DEVICE=$TWO_H100 run_suite suite_core_cuda $B/suite_core_cuda --gpu-only --skip=gpu_misaligned_views_arith
    else GPUDL_EMU_DEVICE=$TWO_H100 run_suite suite_core_cuda $B/suite_core_cuda --gpu-only; fi
fi
if build suite_train_cuda -O2 "${ARCH[@]}" -Xcompiler -fopenmp -o $B/suite_train_cuda tests/suite_train.c $B/kernels.o "${LIBS[@]}" -lgomp; then
    if [ $CORE = 1 ]; then GPUDL_EMU_DEVICE=$TWO_H100 run_suite suite_train_cuda $B/suite_train_cuda --gpu-only --skip=gpu_mixed_precision_full \
        --skip=gpu_emu_step_floor
    else GPUDL_EMU_DEVICE=$TWO_H100 run_suite suite_train_cuda $B/suite_train_cuda --gpu-only; fi
fi
if [ $QUICK = 0 ]; then
    echo "== the same under AddressSanitizer + UndefinedBehaviorSanitizer"
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
    build kernels_san -O1 "${SAN[@]}" "${ARCH[@]}" -c gpudl_kernels.cu -o $B/kernels_san.o
    build gpu_faults_san -O1 "${SAN[@]}" "${ARCH[@]}" -c tests/gpu_faults.cu -o $B/gpu_faults_san.o
    if build suite_core_cuda_san -O1 "${SAN[@]}" "${ARCH[@]}" -o $B/suite_core_cuda_san tests/suite_core.c $B/kernels_san.o $B/gpu_faults_san.o "${LIBS[@]}"; then
        GPUDL_EMU_DEVICE=$TWO_H100 run_suite suite_core_cuda_san $B/suite_core_cuda_san --gpu-only
    fi
    if build suite_train_cuda_san -O1 "${SAN[@]}" "${ARCH[@]}" -o $B/suite_train_cuda_san tests/suite_train.c $B/kernels_san.o "${LIBS[@]}"; then
        run_suite suite_train_cuda_san $B/suite_train_cuda_san --gpu-only --skip=gpu_mixed_precision_full
    fi
fi

if [ $QUICK = 0 ]; then
    # GPUDL_STATIC under nvcc: two libraries in one program, each with its own
    # static gpudl and kernels (no gpudl_kernels.cu on the line): both run
    # kernels on the device (make test-embed --full: nothing is exported).
    if "$NVCC_EMU" -O1 -arch=sm_90 -o $B/static_libs tests/compile/static_lib_a.cu tests/compile/static_lib_b.cu "${LIBS[@]}" \
            >$B/static_libs.log 2>&1 && GPUDL_EMU_DEVICE=9.0:80G $B/static_libs >>$B/static_libs.log 2>&1; then
        ok gpudl_static_two_copies "$(tail -1 $B/static_libs.log)"
    else bad gpudl_static_two_copies; tail -8 $B/static_libs.log | sed 's/^/        /'; fi

    # The emulator's compute-sanitizer (issue 24): the runs make test-gpu-sanitize
    # makes on a GPU, with the same skips. The control kernel must be flagged.
    echo "== compute-sanitizer on the emulated device: memcheck (leak check), racecheck, initcheck, synccheck"
    CS=(tests/emu/compute-sanitizer --error-exitcode 1)
    if [ ! -x tests/emu/compute-sanitizer ]; then bad emu_compute_sanitizer "(tests/emu/compute-sanitizer is missing)"
    elif [ -x $B/suite_core_cuda ]; then
        if GPUDL_EMU_DEVICE=9.0:80G "${CS[@]}" --tool memcheck $B/suite_core_cuda --control-oob >$B/cs_control.log 2>&1 \
                || ! grep -q '========= ERROR SUMMARY: [1-9]' $B/cs_control.log; then
            bad cs_flags_control_kernel "(compute-sanitizer --tool memcheck suite_core_cuda --control-oob)"; tail -15 $B/cs_control.log | sed 's/^/        /'
        else ok cs_flags_control_kernel "$(grep -m1 -E 'Invalid|ERROR SUMMARY' $B/cs_control.log | sed 's/=* *//')"; fi
        for tool in memcheck racecheck initcheck synccheck; do
            extra=(); [ $tool = memcheck ] && extra=(--leak-check full)
            GPUDL_EMU_DEVICE=$TWO_H100 run_suite "cs_${tool}_core" "${CS[@]}" --tool $tool "${extra[@]}" $B/suite_core_cuda gpu_ --skip=gpu_sticky_error_is_fatal
            [ -x $B/suite_train_cuda ] && GPUDL_EMU_DEVICE=9.0:80G run_suite "cs_${tool}_train" "${CS[@]}" --tool $tool "${extra[@]}" \
                $B/suite_train_cuda gpu_layers gpu_amp gpu_fused gpu_xent gpu_transformer
        done
    fi

    # Blocks in a random order, threads switched at memory operations
    # (CUEMU_SCHEDULE=shuffle): code that relies on block order or on warps
    # in lock step fails under some seed.
    echo "== shuffled schedules (CUEMU_SCHEDULE=shuffle, seeds 1 2 3)"
    for seed in 1 2 3; do
        [ -x $B/suite_core_cuda ] && CUEMU_SCHEDULE=shuffle CUEMU_SEED=$seed GPUDL_EMU_DEVICE=$TWO_H100 \
            run_suite "shuffle_${seed}_core" $B/suite_core_cuda --gpu-only
        [ -x $B/suite_train_cuda ] && CUEMU_SCHEDULE=shuffle CUEMU_SEED=$seed GPUDL_EMU_DEVICE=9.0:80G \
            run_suite "shuffle_${seed}_train" $B/suite_train_cuda gpu_layers gpu_amp gpu_fused gpu_xent gpu_transformer
    done

    # Every math function's result anywhere within NVIDIA's documented error,
    # and cuDNN's non-deterministic algorithms summing in varying orders:
    # gpudl's GPU-vs-CPU tolerances must hold.
    echo "== device math perturbed within NVIDIA's documented ulp bounds (CUEMU_MATH=perturb)"
    [ -x $B/suite_core_cuda ] && CUEMU_MATH=perturb GPUDL_EMU_DEVICE=$TWO_H100 run_suite perturb_core $B/suite_core_cuda --gpu-only
    # (less the tests that compare two runs bit for bit: a retried step, a graph replay, 16-bit
    # batches, zero_grad's contract; perturbed math draws each call's result anew by design)
    [ -x $B/suite_train_cuda ] && CUEMU_MATH=perturb GPUDL_EMU_DEVICE=$TWO_H100 \
        run_suite perturb_train $B/suite_train_cuda --gpu-only --skip=gpu_mixed_precision_full --skip=gpu_step_atomic \
        --skip=gpu_graph_step --skip=gpu_zero_grad_contract --skip=gpu_model_input_16bit
fi

echo "== examples, short runs on the emulated GPU"
example() {   # example NAME WANT_REGEX ARGS...: builds examples/NAME.c, runs it, its output must match
    local name=$1 want=$2; shift 2
    build "ex_$name" -O2 "${ARCH[@]}" -Xcompiler -fopenmp -I. -o $B/$name examples/$name.c $B/kernels.o "${LIBS[@]}" -lgomp || return
    if "$B/$name" "$@" >"$B/ex_$name.log" 2>&1 && grep -Eq "$want" "$B/ex_$name.log" && ! grep -q 'FAIL' "$B/ex_$name.log"; then
        ok "example_$name" "$(grep -E "$want" "$B/ex_$name.log" | tail -1)"
    else
        bad "example_$name" "(./$name $*: no line matching '$want')"; tail -8 "$B/ex_$name.log" | sed 's/^/        /'
    fi
}
example cnn_fashion     'test accuracy: [0-9.]+%'  --data "$DATA" --epochs 1
# the same CNN with a custom layer (gpudl_model_add_custom) on the GPU, saved and trained (not in the core:
# suite_train's gpu_override_and_custom has the custom layer on the device)
if [ $CORE = 0 ] && [ -x $B/cnn_fashion ] && $B/cnn_fashion --data "$DATA" --epochs 1 --residual --save $B/cnn_residual.safetensors \
        >$B/ex_cnn_residual.log 2>&1 && grep -Eq '^ *12 residual ' $B/ex_cnn_residual.log \
        && grep -Eq 'test accuracy: [0-9.]+%' $B/ex_cnn_residual.log && [ -s $B/cnn_residual.safetensors ]; then
    ok example_cnn_fashion_residual "$(grep -E 'test accuracy' $B/ex_cnn_residual.log)"
elif [ $CORE = 0 ]; then
    bad example_cnn_fashion_residual "(./cnn_fashion --residual)"; tail -8 $B/ex_cnn_residual.log | sed 's/^/        /'
fi
example mlp_fashion     'test accuracy: [0-9.]+%'  --data "$DATA" --epochs 1
# (three epochs, one per precision: not in the core, whose gpu_amp_* and gpu_layers_16bit tests step FP16 and BF16)
[ $CORE = 0 ] && example mixed_precision 'BF16'    --data "$DATA" --epochs 1
# the GPT example on the emulated GPU: --short's learning check in full (100 steps), 4 steps in the core;
# then its held-out logits, computed on the GPU path, against check_gpt.py's float64 numpy forward of its checkpoint
# (30 steps in full: the learning check's 100 steps run on the CPU in make test; here the GPU path's
# logits against the float64 forward are the point, and 100 steps took 65-344 s of the emulator)
if [ $CORE = 1 ]; then example gpt_text 'checkpoint: ' --short --steps 4 --sample 20 --out $B/gpt_text.safetensors --eval-dump $B/gpt_text.eval
else example gpt_text 'checkpoint: ' --short --steps 30 --sample 40 --attention 1 --out $B/gpt_text.safetensors --eval-dump $B/gpt_text.eval; fi
if [ -x $B/gpt_text ] && python3 -c 'import numpy' >/dev/null 2>&1; then
    if python3 tests/check_gpt.py $B/gpt_text.safetensors $B/gpt_text.eval >$B/gpt_check.log 2>&1; then
        ok gpt_text_checkpoint_numpy "$(sed -n 's/^check_gpt: .*numpy float64 forward/numpy float64 forward/p' $B/gpt_check.log | cut -c1-90)"
    else bad gpt_text_checkpoint_numpy "(python3 tests/check_gpt.py $B/gpt_text.safetensors $B/gpt_text.eval)"; tail -5 $B/gpt_check.log | sed 's/^/        /'; fi
fi
if [ $CORE = 0 ]; then
    example gradcheck       'To check your own layer'
    example cpu_vs_gpu      'GPU'                      --small
fi

if [ $QUICK = 0 ] && [ -x tests/emu/compute-sanitizer ]; then
    echo "== compute-sanitizer on the examples and the assignments' solutions"
    cs_clean() {   # cs_clean NAME WANT_REGEX TOOL CMD...: no error reported, status 0, output matches
        local name=$1 want=$2 tool=$3 extra=(); shift 3
        [ "$tool" = memcheck ] && extra=(--leak-check full)
        if GPUDL_EMU_DEVICE=9.0:80G tests/emu/compute-sanitizer --error-exitcode 1 --tool "$tool" "${extra[@]}" "$@" >"$B/$name.log" 2>&1 \
                && grep -Eq '^========= (ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors)' "$B/$name.log" \
                && grep -Eq "$want" "$B/$name.log"; then
            ok "$name" "$(grep -E "$want" "$B/$name.log" | tail -1)"
        else bad "$name" "(compute-sanitizer --tool $tool $*)"; grep -E '^=========|FAIL' "$B/$name.log" | head -20 | sed 's/^/        /'; fi
    }
    # the grader's runner (assignments/grade.c with -DGRADE_RUNNER) linked with each solution, one child's
    # job per op as the grader starts it (its records on fd 3, dropped here: grade_test.sh checks the score)
    for a in relu_xent sgemm attention; do
        build "grade_runner_$a" -O2 "${ARCH[@]}" -Xcompiler -fopenmp -DGRADE_RUNNER -I. -o $B/grade_runner_$a assignments/grade.c \
            assignments/$a/solution.cu $B/kernels.o "${LIBS[@]}" -lgomp || continue
        ops=0; [ $a = relu_xent ] && ops="0 1 2 3"   # relu forward/backward, softmax-xent forward/backward; sgemm: the GEMM
        [ $a = attention ] && ops="0 1"              # the causal softmax forward, backward
        for tool in memcheck racecheck initcheck synccheck; do
            for op in $ops; do
                cs_clean "cs_${tool}_solution_${a}_op$op" 'SUMMARY' $tool $B/grade_runner_$a --child check --assignment $a \
                    --op $op --data "$DATA" 3>/dev/null
            done
        done
    done
    for tool in memcheck racecheck initcheck synccheck; do
        [ -x $B/mlp_fashion ] && cs_clean "cs_${tool}_example_mlp" 'test accuracy: [0-9.]+%' $tool $B/mlp_fashion --data "$DATA" --epochs 1
    done
fi

echo "== device profiles: no GPU, a GPU the kernels were not built for, a small GPU"
for spec in none 7.0:16G 9.0:1G; do
    [ -x $B/suite_core_cuda ] && GPUDL_EMU_DEVICE=$spec run_suite "profile_$spec" $B/suite_core_cuda emu_profile
done

echo "== make doctor's messages on each profile (and without a driver)"
doctor_says() {   # doctor_says NAME WANT_REGEX ENV...: the doctor's report under ENV must match
    local name=$1 want=$2; shift 2
    env "$@" $B/doctor >"$B/doctor_$name.log" 2>&1
    if grep -Eq "$want" "$B/doctor_$name.log"; then ok "doctor_$name" "$(grep -E "$want" "$B/doctor_$name.log" | head -1)"
    else bad "doctor_$name" "(no line matching '$want')"; sed 's/^/        /' "$B/doctor_$name.log"; fi
}
if build doctor -O2 "${ARCH[@]}" -Xcompiler -fopenmp -I. -o $B/doctor examples/doctor.c $B/kernels.o "${LIBS[@]}" -lgomp; then
    doctor_says h100      'compute capability 9\.0, [0-9]+ SMs.*the kernels run on it'  GPUDL_EMU_DEVICE=9.0:80G
    doctor_says no_device 'fix: check nvidia-smi, and CUDA_VISIBLE_DEVICES'            GPUDL_EMU_DEVICE=none
    doctor_says volta     'fix: CUDA 13 has no compiler for sm_70'                      GPUDL_EMU_DEVICE=7.0:16G
    doctor_says no_driver 'fix: install the NVIDIA driver'                              GPUDL_EMU_DRIVER=none
fi

echo "== make test-gpu-sanitize leaves out the test whose child faults on purpose"
if make -n test-gpu-sanitize 2>/dev/null | grep 'suite_core_cuda gpu_' | grep -qv -- '--skip=gpu_sticky_error_is_fatal'; then
    bad sanitize_skips_fault_tests "(a compute-sanitizer run of suite_core_cuda would include gpu_sticky_error_is_fatal)"
else ok sanitize_skips_fault_tests; fi

echo "== the emulator's self-tests (tests/emu/selftest/run.sh)"
wait $SELFTEST_PID
run_suite emu_selftest cat $SELFTEST_OUT

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$skipped" -eq 0 ]
