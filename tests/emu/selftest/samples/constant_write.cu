/* constant_write.cu - device code that writes a __constant__ variable does
   not compile (CUDA C++ Programming Guide, "__constant__": read-only from
   device code); the control (-DCONTROL) reads it and builds. */
#include <cuda_runtime.h>
__constant__ float gain;
__constant__ int lut[4];
__global__ void k(float *x) {
#ifdef CONTROL
    x[0] = gain * lut[1];
#else
    gain = x[0];
#endif
}
__global__ void k2(float *x) {
#ifndef CONTROL
    lut[1] = 3;
#endif
    x[1] = lut[0];
}
int main() { return 0; }
