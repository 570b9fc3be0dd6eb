/* cuda_profiler_api.h (cuemu): the profiler calls are accepted and do nothing. */
#ifndef CUEMU_CUDA_PROFILER_API_H
#define CUEMU_CUDA_PROFILER_API_H
/* the toolkit header's own include guard, which programs test (helper_cuda.h) */
#define __CUDA_PROFILER_API_H__
#include "cuda_runtime_api.h"
#if defined(__cplusplus)
extern "C" {
#endif
extern cudaError_t cudaProfilerStart(void);
extern cudaError_t cudaProfilerStop(void);
#if defined(__cplusplus)
}
#endif
#endif
