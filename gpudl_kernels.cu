/* gpudl_kernels.cu - v0.1.0 - the CUDA kernels of gpudl - MIT (see gpudl.h)

   Compile together with the translation unit that defines GPUDL_IMPLEMENTATION:
       nvcc -O2 -o app app.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
   For a specific GPU add its architecture, e.g. -arch=sm_90 (H100/H200) or
   -arch=sm_80 (A100); gpudl refuses to start on a GPU it has no code for
   and says which architectures it was built for.

   Layout: a preamble (launch geometry, the grid-stride loop), then one
   section per op in the order of the header's sections. Each section holds
   the op's kernels followed by their extern "C" launchers, which compute
   the grid, launch on the caller's stream and return cudaGetLastError().
   A helper that several sections use sits in the first of them. The
   per-element math (FP16/BF16 rounding, the RNG, NaN-propagating max)
   comes from gpudl.h, shared with the CPU backend. */
#include "gpudl.h"
#include <cuda_runtime.h>
#include <math.h>

#if !defined(CUDART_VERSION) || CUDART_VERSION < 11000
#  error "gpudl_kernels.cu needs CUDA >= 11.0"
#endif

#define GPUDL__THREADS 256

/* Blocks for a grid-stride loop over n elements. */
static unsigned gpudl__blocks(int64_t n) {
    int64_t b = (n + GPUDL__THREADS - 1) / GPUDL__THREADS;
    return (unsigned)(b < 1 ? 1 : b > 8192 ? 8192 : b);
}

#define GPUDL__GRID_STRIDE(i, n) for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
                                      i += (int64_t)gridDim.x * blockDim.x)

#define GPUDL__GRID(n) gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream

/* >>half ------------------------------------------------------------------ */

struct gpudl__f16s { uint16_t bits; };   /* FP16 storage */
struct gpudl__bf16s { uint16_t bits; };  /* BF16 storage */

__device__ __forceinline__ float gpudl__to_f32(float x) { return x; }
__device__ __forceinline__ float gpudl__to_f32(gpudl__f16s x) { return gpudl_f16_to_f32(x.bits); }
__device__ __forceinline__ float gpudl__to_f32(gpudl__bf16s x) { return gpudl_bf16_to_f32(x.bits); }

template <typename T> __device__ __forceinline__ T gpudl__from_f32(float v);
template <> __device__ __forceinline__ float gpudl__from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ gpudl__f16s gpudl__from_f32<gpudl__f16s>(float v) { gpudl__f16s h; h.bits = gpudl_f32_to_f16(v); return h; }
template <> __device__ __forceinline__ gpudl__bf16s gpudl__from_f32<gpudl__bf16s>(float v) { gpudl__bf16s h; h.bits = gpudl_f32_to_bf16(v); return h; }

/* Runs the statement with T bound to the storage type of a float dtype. */
#define GPUDL__DISPATCH(dt, T, ...) do { switch (dt) { \
    case GPUDL_F32:  { typedef float T; __VA_ARGS__; } break; \
    case GPUDL_F16:  { typedef gpudl__f16s T; __VA_ARGS__; } break; \
    case GPUDL_BF16: { typedef gpudl__bf16s T; __VA_ARGS__; } break; \
    default: return (int)cudaErrorInvalidValue; } } while (0)

/* >>context --------------------------------------------------------------- */

__global__ void gpudl_probe_kernel(void) {}

#define GPUDL__STR2(...) #__VA_ARGS__
#define GPUDL__STR(...) GPUDL__STR2(__VA_ARGS__)

extern "C" {

int gpudl_k_probe(void *stream) {
    gpudl_probe_kernel<<<1, 1, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}

/* "sm_80 sm_90" from nvcc's __CUDA_ARCH_LIST__ ("800,900"). */
const char *gpudl_k_archs(void) {
#ifdef __CUDA_ARCH_LIST__
    static char s[128];
    if (!s[0]) {
        const char *p = GPUDL__STR(__CUDA_ARCH_LIST__);
        size_t n = 0;
        while (*p && n + 12 < sizeof s) {
            int v = 0;
            while (*p >= '0' && *p <= '9') v = 10 * v + (*p++ - '0');
            n += (size_t)snprintf(s + n, sizeof s - n, "%ssm_%d", n ? " " : "", v / 10);
            while (*p && (*p < '0' || *p > '9')) p++;
        }
    }
    return s;
#else
    return "nvcc's default architecture";
#endif
}

} /* extern "C" */

/* >>tensor ---------------------------------------------------------------- */

template <typename T>
__global__ void gpudl_fill_kernel(T *x, int64_t n, float value) {
    T v = gpudl__from_f32<T>(value);
    GPUDL__GRID_STRIDE(i, n) x[i] = v;
}

__global__ void gpudl_fill_u32_kernel(uint32_t *x, int64_t n, uint32_t bits) {
    GPUDL__GRID_STRIDE(i, n) x[i] = bits;
}

template <typename D, typename S>
__global__ void gpudl_cast_kernel(D *dst, const S *src, int64_t n) {
    GPUDL__GRID_STRIDE(i, n) dst[i] = gpudl__from_f32<D>(gpudl__to_f32(src[i]));
}

extern "C" {

int gpudl_k_fill(void *stream, void *x, int dtype, int64_t n, float value) {
    GPUDL__DISPATCH(dtype, T, (gpudl_fill_kernel<T><<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>((T *)x, n, value)));
    return (int)cudaGetLastError();
}

int gpudl_k_fill_u32(void *stream, uint32_t *x, int64_t n, uint32_t bits) {
    gpudl_fill_u32_kernel<<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(x, n, bits);
    return (int)cudaGetLastError();
}

int gpudl_k_cast(void *stream, void *dst, int dst_dtype, const void *src, int src_dtype, int64_t n) {
    GPUDL__DISPATCH(dst_dtype, D, GPUDL__DISPATCH(src_dtype, S, (gpudl_cast_kernel<D, S><<<gpudl__blocks(n),
        GPUDL__THREADS, 0, (cudaStream_t)stream>>>((D *)dst, (const S *)src, n))));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>rng ------------------------------------------------------------------- */

template <typename T>
__global__ void gpudl_random_kernel(T *x, int64_t n, uint64_t seed, uint64_t offset, int normal, float a, float b) {
    GPUDL__GRID_STRIDE(i, n) {
        x[i] = gpudl__from_f32<T>(gpudl_rng_fill_value(seed, offset + (uint64_t)i, normal, a, b));
    }
}

extern "C" {

int gpudl_k_random(void *stream, void *x, int dtype, int64_t n, uint64_t seed, uint64_t offset, int normal, float a, float b) {
    GPUDL__DISPATCH(dtype, T, (gpudl_random_kernel<T><<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        (T *)x, n, seed, offset, normal, a, b)));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>arith ----------------------------------------------------------------- */

template <typename T>
__global__ void gpudl_binary_kernel(int op, T *out, const T *a, const T *b, int64_t n) {
    GPUDL__GRID_STRIDE(i, n) {
        float x = gpudl__to_f32(a[i]), y = gpudl__to_f32(b[i]);
        out[i] = gpudl__from_f32<T>(op == GPUDL_K_ADD ? x + y : x * y);
    }
}

template <typename T>
__global__ void gpudl_axpby_kernel(T *y, float alpha, const T *x, float beta, int64_t n) {
    GPUDL__GRID_STRIDE(i, n) {
        float v = alpha * gpudl__to_f32(x[i]);
        if (beta != 0.0f) v += beta * gpudl__to_f32(y[i]);
        y[i] = gpudl__from_f32<T>(v);
    }
}

/* The two-pass reductions. GPUDL__REDUCE_BLOCKS (the scratch floats) and
   gpudl__block_reduce serve the later sections' sums too. */
#define GPUDL__REDUCE_BLOCKS 1024

__device__ __forceinline__ float gpudl__red(int op, float a, float b) { return op == GPUDL_K_SUM ? a + b : gpudl__nanmax(a, b); }

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
    GPUDL__GRID_STRIDE(i, n) acc = gpudl__red(op, acc, gpudl__to_f32(x[i]));
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
    for (int64_t c = lane; c < cols; c += 32) gpudl__argmax_merge(best, bi, gpudl__to_f32(xr[c]), c);
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_down_sync(0xffffffffu, best, o);
        int64_t oi = __shfl_down_sync(0xffffffffu, bi, o);
        gpudl__argmax_merge(best, bi, ov, oi);
    }
    if (lane == 0) out[row] = (int32_t)(bi < cols ? bi : 0);
}

extern "C" {

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

/* >>activation ------------------------------------------------------------ */

/* T: the activations' storage (float, FP16 or BF16); math in float, one rounding on store. */

/* act(x), rounded once to T; the bias+activation kernel uses it too. */
template <typename T>
__device__ __forceinline__ T gpudl__act_elem(int act, T x, float alpha) {
    return gpudl__from_f32<T>(gpudl__act_f(act, gpudl__to_f32(x), alpha));
}

template <typename T>
__global__ void gpudl_act_fwd_kernel(int act, float alpha, T *y, const T *x, int64_t n) {
    GPUDL__GRID_STRIDE(i, n) y[i] = gpudl__act_elem(act, x[i], alpha);
}

template <typename T>
__global__ void gpudl_act_bwd_kernel(int act, float alpha, T *dx, const T *dy, const T *x, const T *y, int64_t n) {
    GPUDL__GRID_STRIDE(i, n) dx[i] = gpudl__from_f32<T>(gpudl__to_f32(dy[i]) * gpudl__act_df(act, gpudl__to_f32(x[i]), gpudl__to_f32(y[i]), alpha));
}

extern "C" {

int gpudl_k_act_fwd(void *stream, int act, float alpha, void *y, const void *x, int dtype, int64_t n) {
    GPUDL__DISPATCH(dtype, T, (gpudl_act_fwd_kernel<T><<<GPUDL__GRID(n)>>>(act, alpha, (T *)y, (const T *)x, n)));
    return (int)cudaGetLastError();
}

int gpudl_k_act_bwd(void *stream, int act, float alpha, void *dx, const void *dy, const void *x, const void *y, int dtype,
                    int64_t n) {
    GPUDL__DISPATCH(dtype, T, (gpudl_act_bwd_kernel<T><<<GPUDL__GRID(n)>>>(act, alpha, (T *)dx, (const T *)dy, (const T *)x,
                                                                          (const T *)y, n)));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>linear ---------------------------------------------------------------- */
/* From the arith section: gpudl__block_reduce, GPUDL__REDUCE_BLOCKS; from activation: gpudl__act_elem. */

/* y + b[(i / inner) % C] (the bias of element i's channel), rounded once to T. */
template <typename T>
__device__ __forceinline__ T gpudl__bias_elem(T y, const T *b, int64_t i, int64_t C, int64_t inner) {
    return gpudl__from_f32<T>(gpudl__to_f32(y) + gpudl__to_f32(b[(i / inner) % C]));
}

template <typename T>
__global__ void gpudl_bias_add_kernel(T *y, const T *b, int64_t n, int64_t C, int64_t inner) {
    GPUDL__GRID_STRIDE(i, n) y[i] = gpudl__bias_elem(y[i], b, i, C, inner);
}

/* pre[i] += b[(i / inner) % C], rounded once to T; post[i] = act(that
   rounded value): the bias add and the activation after a GEMM or a
   convolution in one pass, with the same bits as the two kernels apart. */
template <typename T>
__global__ void gpudl_bias_act_kernel(int act, float alpha, T *pre, T *post, const T *b, int64_t n, int64_t C, int64_t inner) {
    GPUDL__GRID_STRIDE(i, n) {
        T v = gpudl__bias_elem(pre[i], b, i, C, inner);
        pre[i] = v;
        post[i] = gpudl__act_elem(act, v, alpha);
    }
}

/* out[c] += sum_n x[n, c] (a bias gradient). A 32 x 32 block owns 32
   columns: warp ty reads rows ty, ty + 32, ... (32 adjacent floats per
   load, coalesced), so each thread adds N / 32 values instead of N (one
   thread per column made 1024 serial, latency-bound loads per thread at
   batch 1024). The partials meet in shared memory and are added in a fixed
   order: the same bits every run. */
template <typename T>
__global__ void gpudl_col_sum_acc_kernel(float *out, const T *x, int64_t N, int64_t C) {
    __shared__ float part[32][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t c = (int64_t)blockIdx.x * 32 + tx;
    float s = 0.0f;
    if (c < C)
        for (int64_t n = ty; n < N; n += 32) s += gpudl__to_f32(x[n * C + c]);
    part[ty][tx] = s;
    __syncthreads();
    s = part[tx][ty];   /* warp ty now holds the 32 partials of column 32 * blockIdx.x + ty */
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    c = (int64_t)blockIdx.x * 32 + ty;
    if (tx == 0 && c < C) out[c] += s;
}

/* out[c] += sum over (n, i) of x[n, c, i] (a conv bias gradient), in two
   passes so that small channel counts still fill the GPU: block (c, g)
   sums images [g * per, (g + 1) * per) of channel c into dst[g * C + c]
   (or, with one chunk, adds straight into out); then each channel's
   partials are added in order. */
template <typename T>
__global__ void gpudl_channel_sum_partial_kernel(float *dst, int accumulate, const T *x, int64_t N, int64_t C, int64_t inner,
                                                 int64_t per) {
    int64_t c = blockIdx.x, n0 = (int64_t)blockIdx.y * per, n1 = n0 + per < N ? n0 + per : N, M = (n1 - n0) * inner;
    const T *base = x + (n0 * C + c) * inner;
    float s = 0.0f;
    for (int64_t k = threadIdx.x; k < M; k += blockDim.x) {
        int64_t n = k / inner;
        s += gpudl__to_f32(base[n * C * inner + (k - n * inner)]);
    }
    s = gpudl__block_reduce(GPUDL_K_SUM, s);
    if (threadIdx.x == 0) {
        if (accumulate) dst[c] += s;
        else dst[(int64_t)blockIdx.y * C + c] = s;
    }
}

__global__ void gpudl_channel_sum_final_kernel(float *out, const float *partial, int64_t C, int G) {
    int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0.0f;
    for (int g = 0; g < G; g++) s += partial[g * C + c];
    out[c] += s;
}

extern "C" {

int gpudl_k_bias_add(void *stream, void *y, const void *b, int dtype, int64_t n, int64_t C, int64_t inner) {
    GPUDL__DISPATCH(dtype, T, (gpudl_bias_add_kernel<T><<<GPUDL__GRID(n)>>>((T *)y, (const T *)b, n, C, inner)));
    return (int)cudaGetLastError();
}

int gpudl_k_bias_act(void *stream, int act, float alpha, void *pre, void *post, const void *b, int dtype, int64_t n, int64_t C,
                     int64_t inner) {
    GPUDL__DISPATCH(dtype, T, (gpudl_bias_act_kernel<T><<<GPUDL__GRID(n)>>>(act, alpha, (T *)pre, (T *)post, (const T *)b, n, C,
                                                                          inner)));
    return (int)cudaGetLastError();
}

/* Per-channel reductions over (N, C, inner) split the N images into G
   chunks of per images, about 8192 values each, at most N and at most cap
   chunks (returns G). */
static int64_t gpudl__chunks(int64_t N, int64_t inner, int64_t cap, int64_t *per) {
    int64_t G = (N * inner + 8191) / 8192;
    if (G > N) G = N;
    if (G > cap) G = cap;
    if (G < 1) G = 1;
    *per = (N + G - 1) / G;
    return (N + *per - 1) / *per;
}

int gpudl_k_channel_sum_acc(void *stream, float *out, const void *x, int dtype, int64_t N, int64_t C, int64_t inner,
                            float *scratch) {
    if (inner == 1) {
        dim3 block(32, 32);
        GPUDL__DISPATCH(dtype, T, (gpudl_col_sum_acc_kernel<T><<<(unsigned)((C + 31) / 32), block, 0, (cudaStream_t)stream>>>(
            out, (const T *)x, N, C)));
    } else {
        int64_t per, G = gpudl__chunks(N, inner, GPUDL__REDUCE_BLOCKS / C, &per);   /* C * G partials fit the scratch */
        GPUDL__DISPATCH(dtype, T, (gpudl_channel_sum_partial_kernel<T><<<dim3((unsigned)C, (unsigned)G), GPUDL__THREADS, 0,
            (cudaStream_t)stream>>>(G == 1 ? out : scratch, G == 1, (const T *)x, N, C, inner, per)));
        if (G > 1)
            gpudl_channel_sum_final_kernel<<<(unsigned)((C + GPUDL__THREADS - 1) / GPUDL__THREADS), GPUDL__THREADS, 0,
                                             (cudaStream_t)stream>>>(out, scratch, C, (int)G);
    }
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>loss ------------------------------------------------------------------ */
/* From the arith section: gpudl__block_reduce, GPUDL__REDUCE_BLOCKS. */

__device__ __forceinline__ int64_t gpudl__label_at(const void *labels, int dt, int64_t i) {
    return dt == GPUDL_U8 ? (int64_t)((const uint8_t *)labels)[i] : (int64_t)((const int32_t *)labels)[i];
}

/* One warp per row: stable softmax, the row's loss into rowloss[r]. A label
   outside [0, K): a NaN loss, and the row and K into report (pinned host
   memory, read by the host after its next wait; any one bad row will do). */
template <typename T>
__global__ void gpudl_softmax_xent_rows_kernel(float *probs, float *rowloss, const T *logits, const void *labels, int ldt,
                                               int64_t N, int64_t K, int32_t *report) {
    int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= N) return;
    const T *z = logits + r * K;
    float mx = -INFINITY, s = 0.0f;
    for (int64_t k = lane; k < K; k += 32) mx = gpudl__nanmax(mx, gpudl__to_f32(z[k]));
    for (int o = 16; o > 0; o >>= 1) mx = gpudl__nanmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    for (int64_t k = lane; k < K; k += 32) s += expf(gpudl__to_f32(z[k]) - mx);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    for (int64_t k = lane; k < K; k += 32) probs[r * K + k] = expf(gpudl__to_f32(z[k]) - mx) / s;
    if (lane == 0) {
        int64_t lab = gpudl__label_at(labels, ldt, r);
        int bad = lab < 0 || lab >= K;
        rowloss[r] = bad ? NAN : mx + logf(s) - gpudl__to_f32(z[lab]);
        if (bad && report) {
            report[1] = (int32_t)K;
            report[0] = (int32_t)r;
        }
    }
}

/* out = scale * sum of v[0..n) in a fixed order (one block). */
__global__ void gpudl_sum_scaled_kernel(float *out, const float *v, int64_t n, float scale) {
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
    s = gpudl__block_reduce(GPUDL_K_SUM, s);
    if (threadIdx.x == 0) *out = s * scale;
}

/* The gradient is scaled in float before its one rounding, so a loss scale
   lifts small FP16 gradients out of the subnormals instead of scaling zeros. */
template <typename T>
__global__ void gpudl_softmax_xent_bwd_kernel(T *dl, const float *probs, const void *labels, int ldt, int64_t N, int64_t K,
                                              float scale, const float *dscale) {
    if (dscale) scale *= *dscale;
    GPUDL__GRID_STRIDE(i, N * K) {
        int64_t r = i / K, k = i % K;
        dl[i] = gpudl__from_f32<T>(scale * (probs[i] - (k == gpudl__label_at(labels, ldt, r) ? 1.0f : 0.0f)) / (float)N);
    }
}

template <typename T>
__global__ void gpudl_sq_diff_partial_kernel(const T *p, const float *t, int64_t n, float *partial) {
    float acc = 0.0f;
    GPUDL__GRID_STRIDE(i, n) { float d = gpudl__to_f32(p[i]) - t[i]; acc += d * d; }
    acc = gpudl__block_reduce(GPUDL_K_SUM, acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

template <typename T>
__global__ void gpudl_mse_bwd_kernel(T *dp, const T *p, const float *t, int64_t n, float scale, const float *dscale) {
    if (dscale) scale *= *dscale;
    GPUDL__GRID_STRIDE(i, n) dp[i] = gpudl__from_f32<T>(scale * 2.0f * (gpudl__to_f32(p[i]) - t[i]) / (float)n);
}

extern "C" {

int gpudl_k_softmax_xent_fwd(void *stream, float *loss, float *probs, const void *logits, int dtype, const void *labels,
                             int label_dtype, int64_t N, int64_t K, float *scratch, int32_t *report) {
    float *rowloss = scratch + GPUDL__REDUCE_BLOCKS;
    unsigned nb = (unsigned)((N + (GPUDL__THREADS / 32) - 1) / (GPUDL__THREADS / 32));
    GPUDL__DISPATCH(dtype, T, (gpudl_softmax_xent_rows_kernel<T><<<nb, GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        probs, rowloss, (const T *)logits, labels, label_dtype, N, K, report)));
    gpudl_sum_scaled_kernel<<<1, 1024, 0, (cudaStream_t)stream>>>(loss, rowloss, N, 1.0f / (float)N);
    return (int)cudaGetLastError();
}

int gpudl_k_softmax_xent_bwd(void *stream, void *dlogits, int dtype, const float *probs, const void *labels, int label_dtype,
                             int64_t N, int64_t K, float scale, const float *dscale) {
    GPUDL__DISPATCH(dtype, T, (gpudl_softmax_xent_bwd_kernel<T><<<GPUDL__GRID(N * K)>>>((T *)dlogits, probs, labels,
                                                                                        label_dtype, N, K, scale, dscale)));
    return (int)cudaGetLastError();
}

int gpudl_k_mse_fwd(void *stream, float *loss, const void *pred, int dtype, const float *target, int64_t n, float *scratch) {
    unsigned nb = gpudl__blocks(n);
    if (nb > GPUDL__REDUCE_BLOCKS) nb = GPUDL__REDUCE_BLOCKS;
    GPUDL__DISPATCH(dtype, T, (gpudl_sq_diff_partial_kernel<T><<<nb, GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        (const T *)pred, target, n, scratch)));
    gpudl_sum_scaled_kernel<<<1, 1024, 0, (cudaStream_t)stream>>>(loss, scratch, nb, 1.0f / (float)n);
    return (int)cudaGetLastError();
}

int gpudl_k_mse_bwd(void *stream, void *dpred, const void *pred, int dtype, const float *target, int64_t n, float scale,
                    const float *dscale) {
    GPUDL__DISPATCH(dtype, T, (gpudl_mse_bwd_kernel<T><<<GPUDL__GRID(n)>>>((T *)dpred, (const T *)pred, target, n, scale,
                                                                          dscale)));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>conv ------------------------------------------------------------------ */
/* cuDNN computes the convolutions; the bias add is the linear section's. */

/* out[i] += src[i]: conv2d backward adds cuDNN's 16-bit dw into the f32 weight gradient. */
template <typename T>
__global__ void gpudl_acc_f32_kernel(float *out, const T *src, int64_t n) {
    GPUDL__GRID_STRIDE(i, n) out[i] += gpudl__to_f32(src[i]);
}

extern "C" int gpudl_k_acc_f32(void *stream, float *out, const void *src, int dtype, int64_t n) {
    GPUDL__DISPATCH(dtype, T, (gpudl_acc_f32_kernel<T><<<GPUDL__GRID(n)>>>(out, (const T *)src, n)));
    return (int)cudaGetLastError();
}

/* >>pool ------------------------------------------------------------------ */

template <typename T>
__global__ void gpudl_pool_fwd_kernel(int kind, T *y, const void *x, int dt, int64_t NC, int64_t H, int64_t W, int64_t Ho,
                                      int64_t Wo, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    GPUDL__GRID_STRIDE(i, NC * Ho * Wo) {
        int64_t p = i / (Ho * Wo), oh = (i / Wo) % Ho, ow = i % Wo, arg;
        y[i] = gpudl__from_f32<T>(gpudl__pool_window(kind, x, dt, p * H * W, H, W, oh, ow, kh, kw, sh, sw, ph, pw, &arg));
    }
}

template <typename T>
__global__ void gpudl_pool_bwd_kernel(int kind, T *dx, const void *dy, const void *x, int dt, int64_t NC, int64_t H, int64_t W,
                                      int64_t Ho, int64_t Wo, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    GPUDL__GRID_STRIDE(i, NC * H * W) {
        int64_t p = i / (H * W);
        dx[i] = gpudl__from_f32<T>(gpudl__pool_backward_elem(kind, x, dy, dt, p * H * W, p * Ho * Wo, H, W, Ho, Wo, (i / W) % H, i % W,
                                                      kh, kw, sh, sw, ph, pw));
    }
}

extern "C" {

int gpudl_k_pool_fwd(void *stream, int kind, void *y, const void *x, int dtype, int64_t NC, int64_t H, int64_t W, int64_t Ho,
                     int64_t Wo, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    GPUDL__DISPATCH(dtype, T, (gpudl_pool_fwd_kernel<T><<<GPUDL__GRID(NC * Ho * Wo)>>>(kind, (T *)y, x, dtype, NC, H, W, Ho, Wo,
                                                                                       kh, kw, sh, sw, ph, pw)));
    return (int)cudaGetLastError();
}

int gpudl_k_pool_bwd(void *stream, int kind, void *dx, const void *dy, const void *x, int dtype, int64_t NC, int64_t H,
                     int64_t W, int64_t Ho, int64_t Wo, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    GPUDL__DISPATCH(dtype, T, (gpudl_pool_bwd_kernel<T><<<GPUDL__GRID(NC * H * W)>>>(kind, (T *)dx, dy, x, dtype, NC, H, W, Ho,
                                                                                     Wo, kh, kw, sh, sw, ph, pw)));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>batchnorm ------------------------------------------------------------- */
/* From the arith section: gpudl__block_reduce; from the linear section: gpudl__chunks. */

/* Batch norm over x viewed as (N, C, inner), in chunks like the channel
   sums above: block (c, g) handles images [g * per, (g + 1) * per) of
   channel c, so a layer with 16 channels still fills the GPU (one block
   per channel left 16 SMs of 132 busy, each thread ~100 latency-bound
   loads per pass at the demo's sizes). The per-channel combination runs
   one thread per channel, in chunk order: deterministic. */
#define GPUDL__BN_CHUNK(x) int64_t c = blockIdx.x, n0 = (int64_t)blockIdx.y * per, \
    M = ((n0 + per < N ? n0 + per : N) - n0) * inner; \
    const int64_t base = (n0 * C + c) * inner
#define GPUDL__BN_AT(k) (base + ((k) / inner) * C * inner + (k) % inner)

/* Training statistics, pass 1: each chunk's count, mean and sum of squared
   deviations (two passes over the chunk; the second finds it in cache). */
template <typename T>
__global__ void gpudl_bn_stats_partial_kernel(float *part, const T *x, int64_t N, int64_t C, int64_t inner, int64_t per) {
    __shared__ float mean_s;
    GPUDL__BN_CHUNK(x);
    float s = 0.0f, ss = 0.0f, mean;
    for (int64_t k = threadIdx.x; k < M; k += blockDim.x) s += gpudl__to_f32(x[GPUDL__BN_AT(k)]);
    s = gpudl__block_reduce(GPUDL_K_SUM, s);
    if (threadIdx.x == 0) mean_s = s / (float)M;
    __syncthreads();
    mean = mean_s;
    for (int64_t k = threadIdx.x; k < M; k += blockDim.x) { float d = gpudl__to_f32(x[GPUDL__BN_AT(k)]) - mean; ss += d * d; }
    ss = gpudl__block_reduce(GPUDL_K_SUM, ss);
    if (threadIdx.x == 0) {
        float *p = part + 3 * ((int64_t)blockIdx.y * C + c);
        p[0] = (float)M; p[1] = mean; p[2] = ss;
    }
}

/* Pass 2: the chunks combined (Chan et al.'s pairwise update, in double),
   the saved statistics and the running ones. */
__global__ void gpudl_bn_stats_final_kernel(float *save_mean, float *save_invstd, float *rmean, float *rvar, const float *part,
                                            int64_t C, int G, int64_t Mtot, float momentum, float eps) {
    int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    double n = 0, mean = 0, m2 = 0, var;
    if (c >= C) return;
    for (int g = 0; g < G; g++) {
        const float *p = part + 3 * ((int64_t)g * C + c);
        double nb = p[0], delta = (double)p[1] - mean, tot = n + nb;
        mean += delta * nb / tot;
        m2 += (double)p[2] + delta * delta * n * nb / tot;
        n = tot;
    }
    var = m2 / n;
    save_mean[c] = (float)mean;
    save_invstd[c] = (float)(1.0 / sqrt(var + (double)eps));
    gpudl__bn_update_running(&rmean[c], &rvar[c], (float)mean, (float)var, Mtot, momentum);
}

/* y = (x - mean) * invstd * gamma + beta; from_var: invstd = 1 / sqrt(v + eps) (eval mode) */
template <typename T>
__global__ void gpudl_bn_apply_kernel(T *y, const T *x, const float *mean, const float *v, int from_var, float eps,
                                      const float *gamma, const float *beta, int64_t n, int64_t C, int64_t inner) {
    GPUDL__GRID_STRIDE(i, n) {
        int64_t c = (i / inner) % C;
        float invstd = from_var ? 1.0f / sqrtf(v[c] + eps) : v[c];
        y[i] = gpudl__from_f32<T>((gpudl__to_f32(x[i]) - mean[c]) * invstd * gamma[c] + beta[c]);
    }
}

/* Backward, pass 1: each chunk's sums of dy and dy * xhat. */
template <typename T>
__global__ void gpudl_bn_bwd_partial_kernel(float *part, const T *dy, const T *x, const float *save_mean,
                                            const float *save_invstd, int64_t N, int64_t C, int64_t inner, int64_t per) {
    GPUDL__BN_CHUNK(x);
    float mean = save_mean[c], invstd = save_invstd[c], sdy = 0.0f, sdyx = 0.0f;
    for (int64_t k = threadIdx.x; k < M; k += blockDim.x) {
        int64_t at = GPUDL__BN_AT(k);
        float d = gpudl__to_f32(dy[at]);
        sdy += d;
        sdyx += d * (gpudl__to_f32(x[at]) - mean) * invstd;
    }
    sdy = gpudl__block_reduce(GPUDL_K_SUM, sdy);
    __syncthreads();   /* gpudl__block_reduce reuses its shared memory */
    sdyx = gpudl__block_reduce(GPUDL_K_SUM, sdyx);
    if (threadIdx.x == 0) {
        float *p = part + 2 * ((int64_t)blockIdx.y * C + c);
        p[0] = sdy; p[1] = sdyx;
    }
}

/* Pass 2: the chunk sums in order; dgamma, dbeta accumulate; the means
   that dx needs go to means[2c], means[2c + 1]. */
__global__ void gpudl_bn_bwd_final_kernel(float *means, float *dgamma, float *dbeta, const float *part, int64_t C, int G,
                                          int64_t Mtot) {
    int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    double sdy = 0, sdyx = 0;
    if (c >= C) return;
    for (int g = 0; g < G; g++) { sdy += part[2 * ((int64_t)g * C + c)]; sdyx += part[2 * ((int64_t)g * C + c) + 1]; }
    if (dgamma) dgamma[c] += (float)sdyx;
    if (dbeta) dbeta[c] += (float)sdy;
    means[2 * c] = (float)(sdy / (double)Mtot);
    means[2 * c + 1] = (float)(sdyx / (double)Mtot);
}

template <typename T>
__global__ void gpudl_bn_bwd_apply_kernel(T *dx, const T *dy, const T *x, const float *gamma, const float *save_mean,
                                          const float *save_invstd, const float *means, int64_t n, int64_t C, int64_t inner) {
    GPUDL__GRID_STRIDE(i, n) {
        int64_t c = (i / inner) % C;
        dx[i] = gpudl__from_f32<T>(gpudl__bn_backward_elem(gpudl__to_f32(dy[i]), gpudl__to_f32(x[i]), save_mean[c], save_invstd[c], gamma[c],
                                                    means[2 * c], means[2 * c + 1]));
    }
}
#undef GPUDL__BN_CHUNK
#undef GPUDL__BN_AT

extern "C" {

int64_t gpudl_k_bn_scratch(int64_t N, int64_t C, int64_t inner) {
    int64_t per, G = gpudl__chunks(N, inner, 256, &per);
    return 3 * G * C + 2 * C;
}

int gpudl_k_bn_fwd(void *stream, void *y, float *save_mean, float *save_invstd, const void *x, int dtype, const float *gamma,
                   const float *beta, float *running_mean, float *running_var, int64_t N, int64_t C, int64_t inner,
                   int training, float momentum, float eps, float *scratch) {
    int64_t per, G = gpudl__chunks(N, inner, 256, &per), n = N * C * inner;
    if (training) {
        GPUDL__DISPATCH(dtype, T, (gpudl_bn_stats_partial_kernel<T><<<dim3((unsigned)C, (unsigned)G), GPUDL__THREADS, 0,
            (cudaStream_t)stream>>>(scratch, (const T *)x, N, C, inner, per)));
        gpudl_bn_stats_final_kernel<<<(unsigned)((C + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
            save_mean, save_invstd, running_mean, running_var, scratch, C, (int)G, N * inner, momentum, eps);
    }
    GPUDL__DISPATCH(dtype, T, (gpudl_bn_apply_kernel<T><<<GPUDL__GRID(n)>>>((T *)y, (const T *)x,
        training ? save_mean : running_mean, training ? save_invstd : running_var, !training, eps, gamma, beta, n, C, inner)));
    return (int)cudaGetLastError();
}

int gpudl_k_bn_bwd(void *stream, void *dx, float *dgamma, float *dbeta, const void *dy, const void *x, int dtype,
                   const float *gamma, const float *save_mean, const float *save_invstd, int64_t N, int64_t C, int64_t inner,
                   float *scratch) {
    int64_t per, G = gpudl__chunks(N, inner, 256, &per), n = N * C * inner;
    float *means = scratch + 2 * G * C;
    GPUDL__DISPATCH(dtype, T, (gpudl_bn_bwd_partial_kernel<T><<<dim3((unsigned)C, (unsigned)G), GPUDL__THREADS, 0,
        (cudaStream_t)stream>>>(scratch, (const T *)dy, (const T *)x, save_mean, save_invstd, N, C, inner, per)));
    gpudl_bn_bwd_final_kernel<<<(unsigned)((C + 127) / 128), 128, 0, (cudaStream_t)stream>>>(means, dgamma, dbeta, scratch, C,
                                                                                             (int)G, N * inner);
    if (dx)
        GPUDL__DISPATCH(dtype, T, (gpudl_bn_bwd_apply_kernel<T><<<GPUDL__GRID(n)>>>((T *)dx, (const T *)dy, (const T *)x, gamma,
            save_mean, save_invstd, means, n, C, inner)));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>dropout --------------------------------------------------------------- */

template <typename T>
__global__ void gpudl_dropout_kernel(T *y, const T *x, int64_t n, float p, uint64_t seed, uint64_t offset) {
    GPUDL__GRID_STRIDE(i, n) y[i] = gpudl__from_f32<T>(gpudl__dropout_elem(gpudl__to_f32(x[i]), p, seed, offset + (uint64_t)i));
}

extern "C" {

int gpudl_k_dropout(void *stream, void *y, const void *x, int dtype, int64_t n, float p, uint64_t seed, uint64_t offset) {
    GPUDL__DISPATCH(dtype, T, (gpudl_dropout_kernel<T><<<GPUDL__GRID(n)>>>((T *)y, (const T *)x, n, p, seed, offset)));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>transformer ----------------------------------------------------------- */

/* >>model ----------------------------------------------------------------- */
/* From the arith section: gpudl__block_reduce; from the loss section: gpudl__label_at. */

__global__ void gpudl_count_correct_kernel(float *count, const int32_t *pred, const void *labels, int ldt, int64_t n) {
    float c = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) c += pred[i] == gpudl__label_at(labels, ldt, i) ? 1.0f : 0.0f;
    c = gpudl__block_reduce(GPUDL_K_SUM, c);
    if (threadIdx.x == 0) *count += c;
}

extern "C" {

int gpudl_k_count_correct(void *stream, float *count, const int32_t *pred, const void *labels, int label_dtype, int64_t n) {
    gpudl_count_correct_kernel<<<1, 1024, 0, (cudaStream_t)stream>>>(count, pred, labels, label_dtype, n);
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>optim ----------------------------------------------------------------- */
/* From the arith section: gpudl__block_reduce, GPUDL__REDUCE_BLOCKS. */

/* w16: NULL, or the 16-bit copy of the weights (dtype dt16), written in
   the same pass (mixed precision: no separate cast kernel per step). */
__global__ void gpudl_optim_kernel(gpudl_optim_hp hp, float *w, const float *g, float *m, float *v, int64_t n, const float *gscale,
                                   const int32_t *skip, uint16_t *w16, int dt16) {
    float sc = gscale ? *gscale : 1.0f;
    if (skip && *skip) return;   /* an overflowed step: weights, moments and the copy stay bit-identical */
    GPUDL__GRID_STRIDE(i, n) {
        float mi = m ? m[i] : 0.0f, vi = v ? v[i] : 0.0f, wi = w[i];
        gpudl_optim_update(&hp, &wi, g[i] * sc, &mi, &vi);
        w[i] = wi;
        if (m) m[i] = mi;
        if (v) v[i] = vi;
        if (w16) w16[i] = dt16 == GPUDL_F16 ? gpudl_f32_to_f16(wi) : gpudl_f32_to_bf16(wi);
    }
}

__global__ void gpudl_sumsq_partial_kernel(const float *g, int64_t n, float *partial) {
    float acc = 0.0f;
    GPUDL__GRID_STRIDE(i, n) acc += g[i] * g[i];
    acc = gpudl__block_reduce(GPUDL_K_SUM, acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void gpudl_clip_final_kernel(float *scale, const float *partial, int nparts, float max_norm) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) s += partial[i];
    s = gpudl__block_reduce(GPUDL_K_SUM, s);
    if (threadIdx.x == 0) {
        float norm = sqrtf(s);
        scale[0] = s;
        scale[1] = norm > max_norm ? max_norm / (norm + 1e-6f) : 1.0f;
    }
}

extern "C" {

int gpudl_k_optim(void *stream, gpudl_optim_hp hp, float *w, const float *g, float *m, float *v, int64_t n, const float *gscale,
                  const int32_t *skip, void *w16, int dt16) {
    gpudl_optim_kernel<<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(hp, w, g, m, v, n, gscale, skip,
                                                                                    (uint16_t *)w16, dt16);
    return (int)cudaGetLastError();
}

int gpudl_k_clip_scale(void *stream, float *scale, const float *g, int64_t n, float max_norm, float *scratch) {
    unsigned nb = gpudl__blocks(n);
    if (nb > GPUDL__REDUCE_BLOCKS) nb = GPUDL__REDUCE_BLOCKS;
    gpudl_sumsq_partial_kernel<<<nb, GPUDL__THREADS, 0, (cudaStream_t)stream>>>(g, n, scratch);
    gpudl_clip_final_kernel<<<1, 1024, 0, (cudaStream_t)stream>>>(scale, scratch, (int)nb, max_norm);
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>amp ------------------------------------------------------------------- */

__global__ void gpudl_round16_kernel(float *x, int64_t n, int bf16) {
    GPUDL__GRID_STRIDE(i, n) x[i] = bf16 ? gpudl_bf16_to_f32(gpudl_f32_to_bf16(x[i])) : gpudl_f16_to_f32(gpudl_f32_to_f16(x[i]));
}

/* One pass over the flat gradients: unscale, and flag the first non-finite
   value (atomicMin keeps the lowest index whatever the block order). */
__global__ void gpudl_unscale_kernel(float *g, int64_t n, gpudl_scaler_state *st, int fp16) {
    float inv = 1.0f / st->scale;
    int bad = 0x7fffffff;
    GPUDL__GRID_STRIDE(i, n) {
        int finite;
        g[i] = gpudl__unscale_grad(g[i], inv, fp16, &finite);
        if (!finite && i < bad) bad = (int)i;
    }
    if (bad != 0x7fffffff) {
        atomicMin(&st->first_bad, bad);
        st->found_inf = 1;
    }
}

__global__ void gpudl_scaler_update_kernel(gpudl_scaler_state *st, gpudl_scaler_desc d) {
    gpudl_scaler_state s = *st;
    gpudl_scaler_update(&s, &d);
    *st = s;
}

extern "C" {

int gpudl_k_round16(void *stream, float *x, int64_t n, int bf16) {
    gpudl_round16_kernel<<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(x, n, bf16);
    return (int)cudaGetLastError();
}

int gpudl_k_unscale(void *stream, float *g, int64_t n, gpudl_scaler_state *st, int fp16) {
    gpudl_unscale_kernel<<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(g, n, st, fp16);
    return (int)cudaGetLastError();
}

int gpudl_k_scaler_update(void *stream, gpudl_scaler_state *st, gpudl_scaler_desc d) {
    gpudl_scaler_update_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(st, d);
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>data ------------------------------------------------------------------ */

__global__ void gpudl_gather_kernel(float *xb, int32_t *yb, const float *images, const int32_t *labels, const int32_t *perm,
                                    int64_t start, int64_t count, int64_t sample) {
    GPUDL__GRID_STRIDE(i, count * sample) {
        int64_t r = i / sample, k = perm[start + r];
        xb[i] = images[k * sample + i % sample];
        if (i % sample == 0) yb[r] = labels[k];
    }
}

extern "C" {

int gpudl_k_gather(void *stream, float *xb, int32_t *yb, const float *images, const int32_t *labels, const int32_t *perm,
                   int64_t start, int64_t count, int64_t sample) {
    gpudl_gather_kernel<<<gpudl__blocks(count * sample), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(xb, yb, images, labels, perm,
                                                                                                  start, count, sample);
    return (int)cudaGetLastError();
}

} /* extern "C" */
