/* crt/host_defines.h (cuemu) - the CUDA execution-space and attribute
   keywords. Kernels and device functions are ordinary host functions here,
   so __device__, __host__, __global__ and friends expand to nothing.
   __shared__ is deliberately not a macro: tests/emu/nvcc-emu rewrites
   __shared__ declarations so that each block gets its own copy. */
#ifndef CUEMU_HOST_DEFINES_H
#define CUEMU_HOST_DEFINES_H

#define __HOST_DEFINES_H__   /* the toolkit header's own include guard */

#if defined(__CUEMU_MARKERS__)
/* A .cu file compiled by tests/emu/nvcc-emu: these keywords survive
   preprocessing as markers that nvcc-emu's rewrite consumes (every one of
   them), so that what a GPU's compiled image holds is known from the source:
   kernels with their launch bounds and static shared memory, __device__ and
   __constant__ variables with a copy per device (Programming Guide,
   "Function Execution Space Specifiers", "Variable Memory Space Specifiers",
   "Launch Bounds"). */
#  define __device__ __cuemu_device__
#  define __host__ __cuemu_host__   /* __host__ __device__: nvcc-emu merges both passes (the device one by the target macro) */
#  define __global__ __cuemu_global__
#  define __constant__ __cuemu_constant__
#  define __launch_bounds__(...) __cuemu_launch_bounds__(__VA_ARGS__)
/* __managed__: one variable that host and device code share (unified
   memory), so not a copy per device */
#  define __managed__ __cuemu_managed__
#else
#  define __host__
#  define __managed__
#  define __device__
#  define __global__
#  define __constant__
#  define __launch_bounds__(...)
#endif
#define __grid_constant__
#define __device_builtin__
#define __device_builtin_texture_type__
#define __device_builtin_surface_type__
#define __cudart_builtin__
#define __builtin_align__(a) __attribute__((aligned(a)))
#define __align__(n) __attribute__((aligned(n)))
#define __maxnreg__(n)
#define __cluster_dims__(...)
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __inline_hint__
#define __thread__ __thread
#define CUDARTAPI
#define __CUDA_ALIGN__(n) __attribute__((aligned(n)))
/* __noinline__ is defined last by the emulator's preamble, after the C++
   library headers that spell __attribute__((__noinline__)) are in. */

#endif
