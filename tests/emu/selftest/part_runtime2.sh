# part_runtime2.sh - sourced by run.sh: runtime rules of issue 37, in
# runtime2/ (one program per area, each checking many rules with controls):
# launch_rules.cu (occupancy with static shared memory, cooperative launch
# size, cluster dimensions, warp votes by disjoint lane groups, device clock
# rate, synchronous copies from pageable memory), run plainly and under
# shuffled schedules.
echo "== runtime rules (issue 37): launches, clocks, copies"
build_and_run runtime2_launch_rules "$HERE/runtime2/launch_rules.cu" -O2
if [ -x "$OUT/runtime2_launch_rules" ]; then
    for seed in 1 4 7; do
        CUEMU_SCHEDULE=shuffle CUEMU_SEED=$seed program "runtime2_launch_rules_shuffle_$seed" "$OUT/runtime2_launch_rules"
    done
fi
# coop_groups.cu: the thread_group base, partitions, block_tile_memory,
# tiles of several warps, grid_group::sync() in cooperative launches; and
# failing cases, each in its own run (each leaves a sticky error)
build_and_run runtime2_coop_groups "$HERE/runtime2/coop_groups.cu" -O2
if [ -x "$OUT/runtime2_coop_groups" ]; then
    CUEMU_SCHEDULE=shuffle CUEMU_SEED=5 program runtime2_coop_groups_shuffle "$OUT/runtime2_coop_groups"
    for c in not_cooperative exits_early tile_not_dividing tile_split_sync; do
        CUEMU_ST_CASE=$c program "runtime2_coop_groups_$c" "$OUT/runtime2_coop_groups"
    done
    GPUDL_EMU_DEVICE=7.5 CUEMU_ST_CASE=tile_needs_memory program runtime2_coop_groups_tile_needs_memory_on_7.5 \
        "$OUT/runtime2_coop_groups"
fi
# a tile of several warps has no shfl_down (nor shfl_up/xor, ballot, match;
# nvcc 13's header has none) and is no thread_group: both do not compile;
# the control is the build above
if [ $QUICK = 0 ]; then
    if "$NVCC_EMU" -DBIG_TILE_SHFL -I"$HERE" -c -Xcompiler -fsyntax-only -o "$OUT/cg_shfl.o" "$HERE/runtime2/coop_groups.cu" \
        >"$OUT/cg_shfl.log" 2>&1; then bad runtime2_coop_groups_big_tile_shfl_refused "(compiled)"
    elif grep -q "thread_block_tile<N>::shfl_down is available only for tiles of at most 32 threads" "$OUT/cg_shfl.log"; then
        ok runtime2_coop_groups_big_tile_shfl_refused
    else bad runtime2_coop_groups_big_tile_shfl_refused "(no message)"; grep error "$OUT/cg_shfl.log" | head -3; fi
fi
# (the rest in the full tier, make test-extra: make test keeps its 10 minutes;
# make test-samples also runs a program per area)
[ $QUICK = 1 ] && return 0
# runtime_apis.cu: __dp4a/__dp2a, memory pools, cudaStreamAttachMemAsync,
# stream attributes, 3-D copies (before issue 37 it did not compile)
build_and_run runtime2_runtime_apis "$HERE/runtime2/runtime_apis.cu" -O2
if [ -x "$OUT/runtime2_runtime_apis" ]; then   # memory pool access from a second device
    GPUDL_EMU_DEVICE=9.0:80G,9.0:80G CUEMU_ST_CASE=two_devices program runtime2_runtime_apis_two_devices "$OUT/runtime2_runtime_apis"
fi
# textures.cu: texture objects over linear, pitch-2D memory and CUDA arrays
# (before issue 37 it did not compile)
build_and_run runtime2_textures "$HERE/runtime2/textures.cu" -O2
# texture_arrays.cu: layered (1-D, 2-D) and cubemap (layered) textures,
# cudaMalloc3DArray's shapes, cudaMemcpy3D with arrays, surface objects
# (x in bytes, clamp/zero); each case that ends the grid in a run of its own
build_and_run runtime2_texture_arrays "$HERE/runtime2/texture_arrays.cu" -O2
if [ -x "$OUT/runtime2_texture_arrays" ]; then
    for c in surf_trap surf_misaligned layer_range wrong_function; do
        CUEMU_ST_CASE=$c program "runtime2_texture_arrays_$c" "$OUT/runtime2_texture_arrays"
    done
fi
# pipeline.cu: cuda_pipeline_primitives.h / cuda_pipeline.h (copies happen
# when a wait covers their batch); a misaligned source in a run of its own
build_and_run runtime2_pipeline "$HERE/runtime2/pipeline.cu" -O2
if [ -x "$OUT/runtime2_pipeline" ]; then
    CUEMU_ST_CASE=misaligned program runtime2_pipeline_misaligned "$OUT/runtime2_pipeline"
fi
# libcuxx_barrier.cu: <cuda/barrier> (cuda::barrier, cuda::memcpy_async bound
# to it); a phase short of arrivals in a run of its own
build_and_run runtime2_libcuxx_barrier "$HERE/runtime2/libcuxx_barrier.cu" -O2
if [ -x "$OUT/runtime2_libcuxx_barrier" ]; then
    CUEMU_SCHEDULE=shuffle CUEMU_SEED=3 program runtime2_libcuxx_barrier_shuffle "$OUT/runtime2_libcuxx_barrier"
    CUEMU_ST_CASE=short program runtime2_libcuxx_barrier_short "$OUT/runtime2_libcuxx_barrier"
fi
# libcuxx_pipeline.cu: <cuda/pipeline> (a block's two-stage pipeline, a
# thread's own)
build_and_run runtime2_libcuxx_pipeline "$HERE/runtime2/libcuxx_pipeline.cu" -O2
if [ -x "$OUT/runtime2_libcuxx_pipeline" ]; then
    CUEMU_SCHEDULE=shuffle CUEMU_SEED=2 program runtime2_libcuxx_pipeline_shuffle "$OUT/runtime2_libcuxx_pipeline"
fi
# graph_nodes.cu: graph memcpy nodes (3-D and 1-D, get/set params, the exec
# forms, exec updates of them); conditional nodes (IF, WHILE, SWITCH, default
# values, capture into a body graph, capture dependencies updated)
build_and_run runtime2_graph_nodes "$HERE/runtime2/graph_nodes.cu" -O2
# cublas_lu.cu: cuBLAS batched LU (getrfBatched with and without pivoting,
# info for singular matrices, getriBatched)
build_and_run runtime2_cublas_lu "$HERE/runtime2/cublas_lu.cu" -O2
