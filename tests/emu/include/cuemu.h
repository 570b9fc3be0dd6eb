/* cuemu.h - what only the emulated CUDA device offers: counters of what a
   program asked the device to do, and the device profile in use. Include it
   under #ifdef __CUEMU__ (defined by tests/emu/nvcc-emu in every build). C
   and C++. Counts are deterministic: they may be asserted in tests. */
#ifndef CUEMU_H
#define CUEMU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cuemu_counters {
    uint64_t kernel_launches;   /* kernels the host launched directly (<<<>>>, cudaLaunchKernel*), not from graphs */
    uint64_t library_calls;     /* cuBLAS / cuBLASLt / cuDNN calls that queued device work */
    uint64_t library_api_calls; /* other cuBLAS / cuBLASLt / cuDNN calls */
    uint64_t host_waits;        /* calls that block the host until device work is done:
                                   *Synchronize, copies to host memory, blocking copies */
    uint64_t mallocs, frees;    /* cudaMalloc* / cudaFree* of device memory */
    uint64_t host_allocs, host_frees; /* cudaMallocHost / cudaHostAlloc / cudaFreeHost */
    uint64_t memcpy_calls, memset_calls;
    uint64_t h2d_bytes, d2h_bytes, d2d_bytes;
    uint64_t graph_launches;    /* cudaGraphLaunch calls (each one unit of work to the host) */
    uint64_t graph_kernels;     /* kernels run by those launches (not in kernel_launches) */
    uint64_t runtime_api_calls; /* CUDA runtime API calls (cuda*, a <<<>>> launch counted as the
                                   cudaLaunchKernel it is), one per call the program makes */
    uint64_t graph_library_calls; /* library calls' work run by graph launches (not in library_calls) */
    uint64_t graph_memsets, graph_memcpys; /* memset / copy nodes run by graph launches */
} cuemu_counters;

/* The counters since the start or the last reset, summed over host threads. */
void cuemu_counters_get(cuemu_counters *out);
void cuemu_counters_reset(void);
/* "9.0:80G" or "none": the profile GPUDL_EMU_DEVICE selected. */
const char *cuemu_device_spec(void);

#ifdef __cplusplus
}
#endif
#endif
