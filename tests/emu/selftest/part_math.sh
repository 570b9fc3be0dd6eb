# part_math.sh - device math in each CUEMU_MATH mode and under
# --use_fast_math (sourced by run.sh after the self-test programs, which
# built $OUT/math_accuracy and $OUT/math_intrinsics in the default mode).
# CUDA C++ Programming Guide, "Mathematical Functions": every result within
# the documented bound whatever the mode; the default is deterministic,
# perturb draws anew (and differently for each CUEMU_SEED).
echo "== device math: modes and --use_fast_math"
if [ -x "$OUT/math_accuracy" ]; then
    CUEMU_MATH=perturb CUEMU_SEED=7 program math_accuracy_perturb "$OUT/math_accuracy"
    CUEMU_MATH=exact program math_accuracy_exact "$OUT/math_accuracy"
    # the modes set explicitly: the caller may have exported CUEMU_MATH
    a=$(CUEMU_MATH=default "$OUT/math_accuracy" --checksum 2>/dev/null); b=$(CUEMU_MATH=default "$OUT/math_accuracy" --checksum 2>/dev/null)
    if [ -n "$a" ] && [ "$a" = "$b" ]; then ok math_default_deterministic_across_runs
    else bad math_default_deterministic_across_runs "($a vs $b)"; fi
    p1=$(CUEMU_MATH=perturb CUEMU_SEED=1 "$OUT/math_accuracy" --checksum 2>/dev/null)
    p2=$(CUEMU_MATH=perturb CUEMU_SEED=2 "$OUT/math_accuracy" --checksum 2>/dev/null)
    if [ -n "$p1" ] && [ "$p1" != "$p2" ] && [ "$p1" != "$a" ]; then ok math_perturb_varies_with_seed
    else bad math_perturb_varies_with_seed "(seed 1: $p1, seed 2: $p2, default: $a)"; fi
else
    bad math_accuracy_modes "(math_accuracy was not built)"
fi
if [ -x "$OUT/math_intrinsics" ]; then
    CUEMU_MATH=perturb CUEMU_SEED=7 program math_intrinsics_perturb "$OUT/math_intrinsics"
fi
build_and_run math_accuracy_fast_math "$HERE/math_accuracy.cu" -O2 --use_fast_math
