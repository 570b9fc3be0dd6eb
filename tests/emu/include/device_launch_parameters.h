/* device_launch_parameters.h (cuemu) - a toolkit header that programs include by name:
   the built-in variables threadIdx, blockIdx, blockDim, gridDim and warpSize (CUDA C++ Programming Guide, "Built-in Variables").
   In a .cu file nvcc-emu has them from cuda_runtime.h, which nvcc includes
   implicitly (nvcc manual, "CUDA Compilation Trajectory"), so this header
   only includes it. */
#ifndef CUEMU_DEVICE_LAUNCH_PARAMETERS_H
#define CUEMU_DEVICE_LAUNCH_PARAMETERS_H
#include "cuda_runtime.h"
#endif
