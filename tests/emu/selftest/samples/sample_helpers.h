/* sample_helpers.h - an error-checking header in the style that NVIDIA's
   cuda-samples use (ours, not theirs): it turns on the error-string helper
   for each library whose header is already in, by testing the include
   guards of NVIDIA's headers (__DRIVER_TYPES_H__, __CUDA_RUNTIME_H__,
   CUBLAS_API_H_). A program built by nvcc-emu must see them defined. */
#ifndef SAMPLE_HELPERS_H
#define SAMPLE_HELPERS_H
#include <stdio.h>
#include <stdlib.h>

#ifdef __DRIVER_TYPES_H__
static const char *sample_error_name(cudaError_t e) { return cudaGetErrorName(e); }
#define SAMPLE_HAVE_RUNTIME_ERRORS 1
#endif

#ifdef CUBLAS_API_H_
static const char *sample_error_name(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    default: return "<other cuBLAS status>";
    }
}
#define SAMPLE_HAVE_CUBLAS_ERRORS 1
#endif

#ifdef __CUDA_RUNTIME_H__
template <class T> static void sample_check(T result, const char *what, const char *file, int line) {
    if (result) {
        fprintf(stderr, "%s:%d: %s failed: %d (%s)\n", file, line, what, (int)result, sample_error_name(result));
        exit(EXIT_FAILURE);
    }
}
#define checkErrors(call) sample_check((call), #call, __FILE__, __LINE__)
#define checkLastError(what) sample_check(cudaGetLastError(), what, __FILE__, __LINE__)
#endif

#endif
