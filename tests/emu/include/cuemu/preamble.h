/* cuemu/preamble.h - what tests/emu/nvcc-emu puts before every .cu file:
   nvcc includes cuda_runtime.h in .cu files implicitly. */
#ifndef CUEMU_PREAMBLE_H
#define CUEMU_PREAMBLE_H
/* C++ library headers that spell __attribute__((__noinline__)) come first,
   then __noinline__ becomes the CUDA keyword. */
#include <memory>
#include <functional>
#define __noinline__ __attribute__((noinline))
#ifndef CUEMU_ARCHS
#  define CUEMU_ARCHS ""
#endif
/* The targets this translation unit was built for: launches check them
   against the device (nvcc's compatibility rules). */
static const char cuemu_tu_archs[] __attribute__((unused)) = CUEMU_ARCHS;
#define CUEMU_TU_ARCHS cuemu_tu_archs
#include <cuda_runtime.h>
/* what the rewrite's kernel registrations and __device__ variables call */
#include "devvar.h"
#endif
