/* gpudl_kernels.cu - v0.1.0 - the CUDA kernels of gpudl - MIT (see gpudl.h)

   Compile together with the translation unit that defines GPUDL_IMPLEMENTATION:
       nvcc -O2 -o app app.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
   For a specific GPU add its architecture, e.g. -arch=sm_90 (H100/H200) or
   -arch=sm_80 (A100); gpudl refuses to start on a GPU it has no code for
   and says which architectures it was built for.

   Layout: element access by dtype, then the kernels in the order of the
   header's API (>>tensor, >>ops), then the extern "C" launchers, which
   compute the grid, launch on the caller's stream and return
   cudaGetLastError(). The per-element math (FP16/BF16 rounding, the RNG,
   NaN-propagating max) comes from gpudl.h, shared with the CPU backend. */
#include "gpudl.h"
#include <cuda_runtime.h>
#include <math.h>

#if !defined(CUDART_VERSION) || CUDART_VERSION < 11000
#  error "gpudl_kernels.cu needs CUDA >= 11.0"
#endif

/* >>dtypes ---------------------------------------------------------------- */

struct gpudl__f16s { uint16_t bits; };   /* FP16 storage */
struct gpudl__bf16s { uint16_t bits; };  /* BF16 storage */

__device__ __forceinline__ float gpudl__ld(float x) { return x; }
__device__ __forceinline__ float gpudl__ld(gpudl__f16s x) { return gpudl_f16_to_f32(x.bits); }
__device__ __forceinline__ float gpudl__ld(gpudl__bf16s x) { return gpudl_bf16_to_f32(x.bits); }

template <typename T> __device__ __forceinline__ T gpudl__cv(float v);
template <> __device__ __forceinline__ float gpudl__cv<float>(float v) { return v; }
template <> __device__ __forceinline__ gpudl__f16s gpudl__cv<gpudl__f16s>(float v) { gpudl__f16s h; h.bits = gpudl_f32_to_f16(v); return h; }
template <> __device__ __forceinline__ gpudl__bf16s gpudl__cv<gpudl__bf16s>(float v) { gpudl__bf16s h; h.bits = gpudl_f32_to_bf16(v); return h; }

/* Runs the statement with T bound to the storage type of a float dtype. */
#define GPUDL__DISPATCH(dt, T, ...) do { switch (dt) { \
    case GPUDL_F32:  { typedef float T; __VA_ARGS__; } break; \
    case GPUDL_F16:  { typedef gpudl__f16s T; __VA_ARGS__; } break; \
    case GPUDL_BF16: { typedef gpudl__bf16s T; __VA_ARGS__; } break; \
    default: return (int)cudaErrorInvalidValue; } } while (0)

#define GPUDL__THREADS 256

/* Blocks for a grid-stride loop over n elements. */
static unsigned gpudl__blocks(int64_t n) {
    int64_t b = (n + GPUDL__THREADS - 1) / GPUDL__THREADS;
    return (unsigned)(b < 1 ? 1 : b > 8192 ? 8192 : b);
}

#define GPUDL__GRID_STRIDE(i, n) for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
                                      i += (int64_t)gridDim.x * blockDim.x)

/* >>tensor ---------------------------------------------------------------- */

__global__ void gpudl_probe_kernel(void) {}

template <typename T>
__global__ void gpudl_fill_kernel(T *x, int64_t n, float value) {
    T v = gpudl__cv<T>(value);
    GPUDL__GRID_STRIDE(i, n) x[i] = v;
}

template <typename T>
__global__ void gpudl_random_kernel(T *x, int64_t n, uint64_t seed, uint64_t offset, int normal, float a, float b) {
    GPUDL__GRID_STRIDE(i, n) {
        float v = normal ? a + b * gpudl_rng_normal(seed, offset + (uint64_t)i)
                         : a + (b - a) * gpudl_rng_uniform(seed, offset + (uint64_t)i);
        x[i] = gpudl__cv<T>(v);
    }
}

template <typename D, typename S>
__global__ void gpudl_cast_kernel(D *dst, const S *src, int64_t n) {
    GPUDL__GRID_STRIDE(i, n) dst[i] = gpudl__cv<D>(gpudl__ld(src[i]));
}

/* >>ops ------------------------------------------------------------------- */

template <typename T>
__global__ void gpudl_binary_kernel(int op, T *out, const T *a, const T *b, int64_t n) {
    GPUDL__GRID_STRIDE(i, n) {
        float x = gpudl__ld(a[i]), y = gpudl__ld(b[i]);
        out[i] = gpudl__cv<T>(op == GPUDL_K_ADD ? x + y : x * y);
    }
}

template <typename T>
__global__ void gpudl_axpby_kernel(T *y, float alpha, const T *x, float beta, int64_t n) {
    GPUDL__GRID_STRIDE(i, n) {
        float v = alpha * gpudl__ld(x[i]);
        if (beta != 0.0f) v += beta * gpudl__ld(y[i]);
        y[i] = gpudl__cv<T>(v);
    }
}

#define GPUDL__REDUCE_BLOCKS 1024

__device__ __forceinline__ float gpudl__red(int op, float a, float b) { return op == GPUDL_K_SUM ? a + b : gpudl_nanmax(a, b); }

/* Reduces v over the block; the result is valid in thread 0. */
__device__ float gpudl__block_reduce(int op, float v) {
    __shared__ float warp_part[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    for (int o = 16; o > 0; o >>= 1) v = gpudl__red(op, v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0) warp_part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? warp_part[lane] : (op == GPUDL_K_SUM ? 0.0f : -INFINITY);
        for (int o = 16; o > 0; o >>= 1) v = gpudl__red(op, v, __shfl_down_sync(0xffffffffu, v, o));
    }
    return v;
}

/* Pass 1: each block reduces a grid-stride share into partial[block]. */
template <typename T>
__global__ void gpudl_reduce_partial_kernel(int op, const T *x, int64_t n, float *partial) {
    float acc = op == GPUDL_K_SUM ? 0.0f : -INFINITY;
    GPUDL__GRID_STRIDE(i, n) acc = gpudl__red(op, acc, gpudl__ld(x[i]));
    acc = gpudl__block_reduce(op, acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

/* Pass 2: one block reduces the partials (a fixed order: deterministic). */
__global__ void gpudl_reduce_final_kernel(int op, const float *partial, int nparts, float *out) {
    float acc = op == GPUDL_K_SUM ? 0.0f : -INFINITY;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) acc = gpudl__red(op, acc, partial[i]);
    acc = gpudl__block_reduce(op, acc);
    if (threadIdx.x == 0) *out = acc;
}

/* (value, index) pairs for argmax: larger wins, NaN beats numbers, ties go
   to the lower index. */
__device__ __forceinline__ void gpudl__argmax_merge(float &v, int64_t &i, float ov, int64_t oi) {
    bool vn = v != v, on = ov != ov;
    bool take = (on && !vn) || (on == vn && (ov > v || ((ov == v || on) && oi < i)));
    if (take) { v = ov; i = oi; }
}

/* One warp per row. */
template <typename T>
__global__ void gpudl_argmax_rows_kernel(int32_t *out, const T *x, int64_t rows, int64_t cols) {
    int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const T *xr = x + row * cols;
    float best = -INFINITY;
    int64_t bi = cols;   /* "none yet": loses every merge */
    for (int64_t c = lane; c < cols; c += 32) gpudl__argmax_merge(best, bi, gpudl__ld(xr[c]), c);
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_down_sync(0xffffffffu, best, o);
        int64_t oi = __shfl_down_sync(0xffffffffu, bi, o);
        gpudl__argmax_merge(best, bi, ov, oi);
    }
    if (lane == 0) out[row] = (int32_t)(bi < cols ? bi : 0);
}

/* >>kernel-abi: launchers ------------------------------------------------- */

#define GPUDL__STR2(...) #__VA_ARGS__
#define GPUDL__STR(...) GPUDL__STR2(__VA_ARGS__)

extern "C" {

int gpudl_k_probe(void *stream) {
    gpudl_probe_kernel<<<1, 1, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}

const char *gpudl_k_archs(void) {
#ifdef __CUDA_ARCH_LIST__
    return "sm " GPUDL__STR(__CUDA_ARCH_LIST__);
#else
    return "nvcc's default architecture";
#endif
}

int gpudl_k_fill(void *stream, void *x, int dtype, int64_t n, float value) {
    GPUDL__DISPATCH(dtype, T, (gpudl_fill_kernel<T><<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>((T *)x, n, value)));
    return (int)cudaGetLastError();
}

int gpudl_k_random(void *stream, void *x, int dtype, int64_t n, uint64_t seed, uint64_t offset, int normal, float a, float b) {
    GPUDL__DISPATCH(dtype, T, (gpudl_random_kernel<T><<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        (T *)x, n, seed, offset, normal, a, b)));
    return (int)cudaGetLastError();
}

int gpudl_k_cast(void *stream, void *dst, int dst_dtype, const void *src, int src_dtype, int64_t n) {
    GPUDL__DISPATCH(dst_dtype, D, GPUDL__DISPATCH(src_dtype, S, (gpudl_cast_kernel<D, S><<<gpudl__blocks(n),
        GPUDL__THREADS, 0, (cudaStream_t)stream>>>((D *)dst, (const S *)src, n))));
    return (int)cudaGetLastError();
}

int gpudl_k_binary(void *stream, int op, void *out, const void *a, const void *b, int dtype, int64_t n) {
    GPUDL__DISPATCH(dtype, T, (gpudl_binary_kernel<T><<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        op, (T *)out, (const T *)a, (const T *)b, n)));
    return (int)cudaGetLastError();
}

int gpudl_k_axpby(void *stream, void *y, float alpha, const void *x, float beta, int dtype, int64_t n) {
    GPUDL__DISPATCH(dtype, T, (gpudl_axpby_kernel<T><<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        (T *)y, alpha, (const T *)x, beta, n)));
    return (int)cudaGetLastError();
}

int64_t gpudl_k_reduce_scratch(void) { return GPUDL__REDUCE_BLOCKS; }

int gpudl_k_reduce(void *stream, int op, float *out, const void *x, int dtype, int64_t n, float *scratch) {
    unsigned nb = gpudl__blocks(n);
    if (nb > GPUDL__REDUCE_BLOCKS) nb = GPUDL__REDUCE_BLOCKS;
    GPUDL__DISPATCH(dtype, T, (gpudl_reduce_partial_kernel<T><<<nb, GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        op, (const T *)x, n, scratch)));
    gpudl_reduce_final_kernel<<<1, 1024, 0, (cudaStream_t)stream>>>(op, scratch, (int)nb, out);
    return (int)cudaGetLastError();
}

int gpudl_k_argmax_rows(void *stream, int32_t *out, const void *x, int dtype, int64_t rows, int64_t cols) {
    const int64_t rows_per_block = GPUDL__THREADS / 32;
    unsigned nb = (unsigned)((rows + rows_per_block - 1) / rows_per_block);
    GPUDL__DISPATCH(dtype, T, (gpudl_argmax_rows_kernel<T><<<nb, GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        out, (const T *)x, rows, cols)));
    return (int)cudaGetLastError();
}

} /* extern "C" */
