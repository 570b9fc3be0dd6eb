/* doctor.c - checks this build of gpudl on this machine and says what to
   fix: the driver, the GPU and the architectures the kernels were built
   for, cuBLAS and cuDNN, the CPU and its threads, and the data. `make
   doctor` runs it; the exit status is the number of problems (at most 1).

   GPU:  nvcc -O2 -Xcompiler -fopenmp -o doctor doctor.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn -lgomp
   CPU:  cc -O2 -fopenmp -DGPUDL_NO_CUDA -o doctor doctor.c -lm */
#define GPUDL_IMPLEMENTATION
#include "gpudl.h"

int main(void) {
    char report[8192];
    int problems = gpudl_doctor(report, sizeof report);
    fputs(report, stdout);
    return problems > 0;
}
