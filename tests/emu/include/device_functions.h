/* device_functions.h (cuemu) - a toolkit header that programs include by name:
   the device runtime functions and intrinsics (CUDA C++ Programming Guide, "C++ Language Extensions"; CUDA Math API, "Intrinsics").
   In a .cu file nvcc-emu has them from cuda_runtime.h, which nvcc includes
   implicitly (nvcc manual, "CUDA Compilation Trajectory"), so this header
   only includes it. */
#ifndef CUEMU_DEVICE_FUNCTIONS_H
#define CUEMU_DEVICE_FUNCTIONS_H
#include "cuda_runtime.h"
#endif
