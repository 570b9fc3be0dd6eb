// The toolkit headers the emulator provides, included by name as programs
// do (part_compiler.sh: builds, with -I/usr/local/cuda/include too, and
// reads no file of a CUDA install).
#include <cuda_runtime.h>
#include <cuda_runtime_api.h>
#include <device_launch_parameters.h>
#include <device_functions.h>
#include <device_atomic_functions.h>
#include <math_functions.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <cudnn.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#include <cooperative_groups.h>
#include <math_constants.h>
#include <cuda_profiler_api.h>
int main(void) { return 0; }
