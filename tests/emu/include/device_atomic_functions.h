/* device_atomic_functions.h (cuemu) - a toolkit header that programs include by name:
   the atomic functions (CUDA C++ Programming Guide, "Atomic Functions").
   In a .cu file nvcc-emu has them from cuda_runtime.h, which nvcc includes
   implicitly (nvcc manual, "CUDA Compilation Trajectory"), so this header
   only includes it. */
#ifndef CUEMU_DEVICE_ATOMIC_FUNCTIONS_H
#define CUEMU_DEVICE_ATOMIC_FUNCTIONS_H
#include "cuda_runtime.h"
#endif
