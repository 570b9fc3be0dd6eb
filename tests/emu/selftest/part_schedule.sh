# Sourced by run.sh: correct CUDA programs run right under shuffled
# schedules (CUEMU_SCHEDULE=shuffle, several seeds): the self-test programs
# with kernels that use barriers, warp exchanges, atomics and shared memory
# must pass under every seed, as under the default schedule. (Programs that
# rely on block order or lock step are strict_schedule.cu's business.)
echo "== shuffled schedules (CUEMU_SCHEDULE=shuffle)"
for seed in 1 2 3; do
    for prog in runtime_kernels strict_align strict_shared; do
        if [ -x "$OUT/$prog" ]; then
            CUEMU_SCHEDULE=shuffle CUEMU_SEED=$seed program "shuffle_${seed}_$prog" "$OUT/$prog"
        else
            bad "shuffle_${seed}_$prog" "($OUT/$prog was not built)"
        fi
    done
done
