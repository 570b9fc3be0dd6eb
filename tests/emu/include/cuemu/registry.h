/* cuemu/registry.h - what nvcc-emu knows of a translation unit's kernels
   and __device__ / __constant__ variables from its source, registered by
   static initialisers that the rewrite adds (C++ only). On a GPU this is in
   the compiled image before the first launch: a kernel's launch bounds and
   static shared memory (cudaFuncGetAttributes), its parameter types
   (cudaLaunchKernel through a const void *), the variables' symbols. */
#ifndef CUEMU_REGISTRY_H
#define CUEMU_REGISTRY_H

#include <stddef.h>
#include "../cuda_runtime_api.h"

namespace cuemu {

struct KernelInfo {
    const char *name;        /* as written in the source */
    int max_threads;         /* __launch_bounds__'s first argument; 0: none */
    int min_blocks;          /* its second argument; 0: none */
    size_t static_smem;      /* static __shared__ bytes of the kernel and the __device__ functions it calls */
    /* launches the kernel from cudaLaunchKernel's void **args (null: not known) */
    cudaError_t (*launch)(const void *func, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t stream,
                          int cooperative);
};
/* Registers (or completes) what is known of the kernel at func; returns 0. */
int kernel_register(const void *func, const KernelInfo &info);

/* A namespace-scope __device__ / __constant__ variable: shadow is the host
   object (what host code reads and writes, and the symbol handle that
   cudaMemcpyToSymbol and friends take); every device gets its own copy,
   created from the shadow's bytes at registration time. Returns 0. */
int symbol_register(void *shadow, size_t size, const char *name, int is_constant);
/* The copy that code running now sees: in a kernel, the executing device's
   copy of the variable whose shadow this is; in host code, shadow itself. */
void *symbol_resolve(void *shadow);

} /* namespace cuemu */

#endif
