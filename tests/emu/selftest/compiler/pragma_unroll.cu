/* #pragma unroll, with and without a count (CUDA C++ Programming Guide,
   "#pragma unroll"): nvcc accepts it silently, so a program built with
   -Xcompiler -Wall,-Werror must build here too (the host compiler would
   call it an unknown pragma). So are nvcc's diagnostic pragmas
   ("Diagnostic Pragmas": nv_diag_suppress ..., and the older diag_suppress
   the cuda-samples use). */
#pragma nv_diag_suppress 177
#pragma diag_suppress static_var_with_dynamic_init
__global__ void scale(float *x, int n) {
#pragma unroll
    for (int i = 0; i < 4; i++) x[i] *= 2.0f;
#pragma unroll 2
    for (int i = 4; i < n; i++) x[i] += 1.0f;
#define UNROLL_BY(n) _Pragma("unroll")
    UNROLL_BY(4)
    for (int i = 0; i < 4; i++) x[i] -= 1.0f;
}
