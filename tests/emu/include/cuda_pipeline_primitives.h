/* cuda_pipeline_primitives.h (cuemu) - the pipeline primitives (CUDA C++
   Programming Guide, "Pipeline Primitives Interface"): per-thread batches
   of asynchronous copies from global to shared memory (exec.cpp). */
#ifndef CUEMU_CUDA_PIPELINE_PRIMITIVES_H
#define CUEMU_CUDA_PIPELINE_PRIMITIVES_H
#include <cuda_runtime.h>
#if defined(__cplusplus) && defined(__CUDACC__)

inline void __pipeline_memcpy_async(void *__restrict__ dst_shared, const void *__restrict__ src_global, size_t size_and_align,
                                    size_t zfill = 0) {
    cuemu::pipeline_copy(dst_shared, src_global, size_and_align, zfill);
}
inline void __pipeline_commit() { cuemu::pipeline_commit(); }
inline void __pipeline_wait_prior(size_t prior) { cuemu::pipeline_wait_prior(prior); }

#endif
#endif
