# part_bounds.sh - CUEMU_BOUNDS=exact on correct programs (sourced by run.sh:
# ok, bad, program, OUT are its). strict_bounds.cu has the faults and their
# controls; here the self-test programs whose kernels use global memory
# every way (the runtime's, alignment, shared memory, graphs, cuDNN) must
# pass unchanged when every allocation's bounds are exact.
echo "== exact global bounds (CUEMU_BOUNDS=exact)"
for prog in runtime_kernels runtime_memory runtime_graphs strict_align strict_shared cudnn_conv; do
    if [ -x "$OUT/$prog" ]; then
        CUEMU_BOUNDS=exact program "exact_bounds_$prog" "$OUT/$prog"
    else
        bad "exact_bounds_$prog" "($OUT/$prog was not built)"
    fi
done
