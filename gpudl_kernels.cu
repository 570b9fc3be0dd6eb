/* gpudl_kernels.cu - v0.1.0 - the CUDA kernels of gpudl - MIT (see gpudl.h)

   Compile together with the translation unit that defines GPUDL_IMPLEMENTATION:
       nvcc -O2 -o app app.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
   (with GPUDL_STATIC in a .cu file, gpudl.h includes this file itself and
   nothing here is exported: nvcc -O2 -DGPUDL_STATIC -o app app.cu -l...)
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

/* Kernels are static when gpudl.h's implementation includes this file
   (GPUDL_STATIC under nvcc, see GPUDL__KFN there), extern otherwise. */
#ifdef GPUDL__KERNELS_PRIVATE
#  define GPUDL__KSTATIC static
#else
#  define GPUDL__KSTATIC
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

#include <cuda_fp16.h>
#include <cuda_bf16.h>

struct gpudl__f16s { uint16_t bits; };   /* FP16 storage */
struct gpudl__bf16s { uint16_t bits; };  /* BF16 storage */

/* The conversions run on the hardware's cvt instructions (cuda_fp16.h,
   cuda_bf16.h: round to nearest even, subnormals kept, no flush), which
   give the CPU's bits (gpudl_f32_to_f16 and friends in gpudl.h, the
   reference) for every number; a NaN alone goes through the shared
   function, since cvt makes every NaN the canonical one (0x7fff) where the
   CPU keeps the sign and payload. The test: every 16-bit pattern and
   random float bits, GPU against CPU, bit for bit (tests/test_tensor.c). */
__device__ __forceinline__ float gpudl__to_f32(float x) { return x; }
__device__ __forceinline__ float gpudl__to_f32(gpudl__f16s x) {
    return (x.bits & 0x7fffu) > 0x7c00u ? gpudl_f16_to_f32(x.bits) : __half2float(__ushort_as_half(x.bits));
}
__device__ __forceinline__ float gpudl__to_f32(gpudl__bf16s x) { return __uint_as_float((uint32_t)x.bits << 16); }

template <typename T> __device__ __forceinline__ T gpudl__from_f32(float v);
template <> __device__ __forceinline__ float gpudl__from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ gpudl__f16s gpudl__from_f32<gpudl__f16s>(float v) {
    gpudl__f16s h;
    h.bits = v != v ? gpudl_f32_to_f16(v) : __half_as_ushort(__float2half_rn(v));
    return h;
}
template <> __device__ __forceinline__ gpudl__bf16s gpudl__from_f32<gpudl__bf16s>(float v) {
    gpudl__bf16s h;
    h.bits = v != v ? gpudl_f32_to_bf16(v) : __bfloat16_as_ushort(__float2bfloat16_rn(v));
    return h;
}

/* Two values rounded to one 32-bit word (a in the low half): one
   cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32 for the pair. */
template <typename T> __device__ __forceinline__ uint32_t gpudl__pack2(float a, float b);
template <> __device__ __forceinline__ uint32_t gpudl__pack2<gpudl__f16s>(float a, float b) {
    uint32_t u;
    if (a != a || b != b) return (uint32_t)gpudl__from_f32<gpudl__f16s>(a).bits | (uint32_t)gpudl__from_f32<gpudl__f16s>(b).bits << 16;
    __half2 h = __floats2half2_rn(a, b);
    memcpy(&u, &h, 4);
    return u;
}
template <> __device__ __forceinline__ uint32_t gpudl__pack2<gpudl__bf16s>(float a, float b) {
    uint32_t u;
    if (a != a || b != b) return (uint32_t)gpudl__from_f32<gpudl__bf16s>(a).bits | (uint32_t)gpudl__from_f32<gpudl__bf16s>(b).bits << 16;
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    memcpy(&u, &h, 4);
    return u;
}

/* Runs the statement with T bound to the storage type of a float dtype. */
#define GPUDL__DISPATCH(dt, T, ...) do { switch (dt) { \
    case GPUDL_F32:  { typedef float T; __VA_ARGS__; } break; \
    case GPUDL_F16:  { typedef gpudl__f16s T; __VA_ARGS__; } break; \
    case GPUDL_BF16: { typedef gpudl__bf16s T; __VA_ARGS__; } break; \
    default: return (int)cudaErrorInvalidValue; } } while (0)

/* Vector loads and stores. An element-wise kernel moves V elements per
   step, 16 bytes of its narrowest type (float4, eight halves in a uint4;
   eight floats beside eight halves are two float4), on
   arrays whose pointers are all 16-byte aligned; then the n % V elements
   left, one by one. A pointer that is not aligned (a view at an odd
   offset) sends the whole call down the scalar path: a GPU faults on a
   misaligned vector access, and so does the strict emulator. */
template <int B> struct gpudl__raw;
struct __align__(16) gpudl__u4x2 { uint4 lo, hi; };   /* 32 bytes: two 16-byte accesses */
template <> struct gpudl__raw<32> { typedef gpudl__u4x2 type; };
template <> struct gpudl__raw<16> { typedef uint4 type; };
template <> struct gpudl__raw<8> { typedef uint2 type; };
template <> struct gpudl__raw<4> { typedef uint32_t type; };

__device__ __forceinline__ float gpudl__unpack(const uint32_t *w, int k, float *) { return __uint_as_float(w[k]); }
__device__ __forceinline__ float gpudl__unpack(const uint32_t *w, int k, gpudl__f16s *) {
    gpudl__f16s h; h.bits = (uint16_t)(w[k >> 1] >> ((k & 1) * 16)); return gpudl__to_f32(h);
}
__device__ __forceinline__ float gpudl__unpack(const uint32_t *w, int k, gpudl__bf16s *) {
    gpudl__bf16s h; h.bits = (uint16_t)(w[k >> 1] >> ((k & 1) * 16)); return gpudl__to_f32(h);
}

/* f[0..V) = p[0..V) as floats; p is aligned to V * sizeof(T). */
template <int V, typename T> __device__ __forceinline__ void gpudl__vload(float *f, const T *p) {
    typedef typename gpudl__raw<V * sizeof(T)>::type R;
    union { R r; uint32_t w[sizeof(R) / 4]; } u;
    u.r = *(const R *)p;
#pragma unroll
    for (int k = 0; k < V; k++) f[k] = gpudl__unpack(u.w, k, (T *)0);
}

template <typename T> __device__ __forceinline__ void gpudl__vpack(uint32_t *w, const float *f, int k);
template <> __device__ __forceinline__ void gpudl__vpack<float>(uint32_t *w, const float *f, int k) { w[k] = __float_as_uint(f[k]); }
template <> __device__ __forceinline__ void gpudl__vpack<gpudl__f16s>(uint32_t *w, const float *f, int k) {
    if (!(k & 1)) w[k >> 1] = gpudl__pack2<gpudl__f16s>(f[k], f[k + 1]);
}
template <> __device__ __forceinline__ void gpudl__vpack<gpudl__bf16s>(uint32_t *w, const float *f, int k) {
    if (!(k & 1)) w[k >> 1] = gpudl__pack2<gpudl__bf16s>(f[k], f[k + 1]);
}

/* p[0..V) = f[0..V), each rounded once to T. */
template <int V, typename T> __device__ __forceinline__ void gpudl__vstore(T *p, const float *f) {
    typedef typename gpudl__raw<V * sizeof(T)>::type R;
    union { R r; uint32_t w[sizeof(R) / 4]; } u;
#pragma unroll
    for (int k = 0; k < V; k++) gpudl__vpack<T>(u.w, f, k);
    *(R *)p = u.r;
}

__device__ __forceinline__ bool gpudl__aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* The multiprocessors of the GPU (gpudl_k_set_sm_count; 132, an H100's,
   until told): grid-stride kernels launch at most GPUDL__WAVES blocks of
   GPUDL__THREADS per SM (8 such blocks fill an SM's 2048 threads: two
   waves' worth, so a block that finishes early finds another queued) and
   loop over the rest, instead of one block per 256 elements. */
#define GPUDL__WAVES 16
static int gpudl__sm_count = 0;   /* 0: not reported yet */

/* Blocks for a grid-stride loop over n items (vectors or elements). */
static unsigned gpudl__vblocks(int64_t n) {
    int64_t b = (n + GPUDL__THREADS - 1) / GPUDL__THREADS, cap = (int64_t)GPUDL__WAVES * (gpudl__sm_count ? gpudl__sm_count : 132);
    return (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
}

/* The element-wise loop of a kernel: out[i] = f(i, a[i], b[i], c[i]) for i
   (f's operator() a template on the index type I, so its own index math
   stays 32-bit too)
   in [0, n), NIN of the inputs used (the others may be NULL), the math in
   float and one rounding on store. V elements per access on the aligned
   path; 32-bit indices when n < 2^31 (the common case: 64-bit division and
   multiplication cost several instructions each), 64-bit above. */
template <typename I, int V, int NIN, typename TO, typename TI, typename F>
__device__ __forceinline__ void gpudl__map_loop(const F &f, TO *out, const TI *a, const TI *b, const TI *c, I n, bool vec) {
    I start = (I)blockIdx.x * blockDim.x + threadIdx.x, stride = (I)gridDim.x * blockDim.x, i = start;
    if (vec) {
        I nv = n / V;
        for (I j = start; j < nv; j += stride) {
            float x0[V], x1[V], x2[V], r[V];
            if (NIN > 0) gpudl__vload<V>(x0, a + j * V);
            if (NIN > 1) gpudl__vload<V>(x1, b + j * V);
            if (NIN > 2) gpudl__vload<V>(x2, c + j * V);
#pragma unroll
            for (int k = 0; k < V; k++)
                r[k] = f((I)(j * V + k), NIN > 0 ? x0[k] : 0.0f, NIN > 1 ? x1[k] : 0.0f, NIN > 2 ? x2[k] : 0.0f);
            gpudl__vstore<V>(out + j * V, r);
        }
        i = nv * V + start;
    }
    for (; i < n; i += stride)
        out[i] = gpudl__from_f32<TO>(f(i, NIN > 0 ? gpudl__to_f32(a[i]) : 0.0f, NIN > 1 ? gpudl__to_f32(b[i]) : 0.0f,
                                       NIN > 2 ? gpudl__to_f32(c[i]) : 0.0f));
}

template <int NIN, typename TO, typename TI, typename F>
__device__ __forceinline__ void gpudl__map(const F &f, TO *out, const TI *a, const TI *b, const TI *c, int64_t n) {
    const int V = 16 / (sizeof(TO) < sizeof(TI) ? sizeof(TO) : sizeof(TI));
    bool vec = gpudl__aligned16(out) && gpudl__aligned16(a) && gpudl__aligned16(b) && gpudl__aligned16(c);
    if (n <= INT32_MAX) gpudl__map_loop<uint32_t, V, NIN>(f, out, a, b, c, (uint32_t)n, vec);
    else gpudl__map_loop<int64_t, V, NIN>(f, out, a, b, c, n, vec);
}

/* Blocks for gpudl__map over n elements, the narrower type's size given. */
static unsigned gpudl__map_blocks(int64_t n, size_t narrowest) {
    return gpudl__vblocks((n + (int64_t)(16 / narrowest) - 1) / (int64_t)(16 / narrowest));
}

/* The SM count for the grids above: the largest any context has reported
   (a grid size is a matter of speed, never of results, so one value
   serves every device). */
GPUDL__KFN_C void gpudl_k_set_sm_count(int device, int sms) {
    (void)device;
    if (sms > gpudl__sm_count) gpudl__sm_count = sms;
}

/* >>context --------------------------------------------------------------- */

GPUDL__KSTATIC __global__ void gpudl_probe_kernel(void) {}

#define GPUDL__STR2(...) #__VA_ARGS__
#define GPUDL__STR(...) GPUDL__STR2(__VA_ARGS__)

extern "C" {

GPUDL__KFN int gpudl_k_probe(void *stream) {
    gpudl_probe_kernel<<<1, 1, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}

/* "sm_80 sm_90" from nvcc's __CUDA_ARCH_LIST__ ("800,900"). */
GPUDL__KFN const char *gpudl_k_archs(void) {
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

/* Bytes per element: fill writes sizeof(T) (the floor: n * sizeof(T) of
   stores, now 16 per store); cast reads sizeof(S) and writes sizeof(D). */
struct gpudl__const_op {
    float v;
    template <typename I> __device__ float operator()(I, float, float, float) const { return v; }
};

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_fill_kernel(T *x, int64_t n, float value) {
    gpudl__const_op f = {gpudl__to_f32(gpudl__from_f32<T>(value))};   /* rounded once: the stores then repeat its bits */
    gpudl__map<0>(f, x, (const T *)0, (const T *)0, (const T *)0, n);
}

/* The fill of I32 / U8 tensors (a byte pattern repeated to 32 bits). */
GPUDL__KSTATIC __global__ void gpudl_fill_u32_kernel(uint32_t *x, int64_t n, uint32_t bits) {
    int64_t start = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (int64_t)gridDim.x * blockDim.x, i = start;
    if (gpudl__aligned16(x)) {
        uint4 v = make_uint4(bits, bits, bits, bits);
        for (int64_t j = start; j < n / 4; j += stride) ((uint4 *)x)[j] = v;
        i = n / 4 * 4 + start;
    }
    for (; i < n; i += stride) x[i] = bits;
}

struct gpudl__copy_op {
    template <typename I> __device__ float operator()(I, float a, float, float) const { return a; }
};

template <typename D, typename S>
GPUDL__KSTATIC __global__ void gpudl_cast_kernel(D *dst, const S *src, int64_t n) {
    gpudl__copy_op f;
    gpudl__map<1>(f, dst, src, (const S *)0, (const S *)0, n);
}

extern "C" {

GPUDL__KFN int gpudl_k_fill(void *stream, void *x, int dtype, int64_t n, float value) {
    GPUDL__DISPATCH(dtype, T, (gpudl_fill_kernel<T><<<gpudl__map_blocks(n, sizeof(T)), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        (T *)x, n, value)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_fill_u32(void *stream, uint32_t *x, int64_t n, uint32_t bits) {
    gpudl_fill_u32_kernel<<<gpudl__map_blocks(n, 4), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(x, n, bits);
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_cast(void *stream, void *dst, int dst_dtype, const void *src, int src_dtype, int64_t n) {
    GPUDL__DISPATCH(dst_dtype, D, GPUDL__DISPATCH(src_dtype, S, (gpudl_cast_kernel<D, S><<<gpudl__map_blocks(n,
        sizeof(D) < sizeof(S) ? sizeof(D) : sizeof(S)), GPUDL__THREADS, 0, (cudaStream_t)stream>>>((D *)dst, (const S *)src, n))));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>rng ------------------------------------------------------------------- */

/* Element i draws from (seed, offset + i) whatever the launch shape. */
struct gpudl__random_op {
    uint64_t seed, offset;
    int normal;
    float a, b;
    template <typename I> __device__ float operator()(I i, float, float, float) const { return gpudl_rng_fill_value(seed, offset + (uint64_t)i, normal, a, b); }
};

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_random_kernel(T *x, int64_t n, uint64_t seed, uint64_t offset, int normal, float a, float b) {
    gpudl__random_op f = {seed, offset, normal, a, b};
    gpudl__map<0>(f, x, (const T *)0, (const T *)0, (const T *)0, n);
}

extern "C" {

GPUDL__KFN int gpudl_k_random(void *stream, void *x, int dtype, int64_t n, uint64_t seed, uint64_t offset, int normal, float a, float b) {
    GPUDL__DISPATCH(dtype, T, (gpudl_random_kernel<T><<<gpudl__map_blocks(n, sizeof(T)), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        (T *)x, n, seed, offset, normal, a, b)));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>arith ----------------------------------------------------------------- */

/* Bytes per element: binary 3 * sizeof(T), axpby 2 or 3 * sizeof(T) (y is
   read only when beta != 0); the floor is those bytes at the memory's
   bandwidth, which 16-byte accesses approach and 2-byte ones do not. */
struct gpudl__binary_op {
    int op;
    template <typename I> __device__ float operator()(I, float x, float y, float) const { return op == GPUDL_K_ADD ? x + y : x * y; }
};

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_binary_kernel(int op, T *out, const T *a, const T *b, int64_t n) {
    gpudl__binary_op f = {op};
    gpudl__map<2>(f, out, a, b, (const T *)0, n);
}

struct gpudl__axpby_op {
    float alpha, beta;
    template <typename I> __device__ float operator()(I, float x, float y, float) const {
        float v = alpha * x;
        if (beta != 0.0f) v += beta * y;
        return v;
    }
};

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_axpby_kernel(T *y, float alpha, const T *x, float beta, int64_t n) {
    gpudl__axpby_op f = {alpha, beta};
    if (beta != 0.0f) gpudl__map<2>(f, y, x, (const T *)y, (const T *)0, n);
    else gpudl__map<1>(f, y, x, (const T *)0, (const T *)0, n);
}

/* The two-pass reductions. GPUDL__REDUCE_BLOCKS (the scratch floats) and
   gpudl__block_reduce serve the later sections' sums too. */
#define GPUDL__REDUCE_BLOCKS 1024

__device__ __forceinline__ float gpudl__red(int op, float a, float b) { return op == GPUDL_K_SUM ? a + b : gpudl__nanmax(a, b); }

/* Reduces v over the block; the result is valid in thread 0. */
static __device__ float gpudl__block_reduce(int op, float v) {
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

/* Pass 1: each block reduces a grid-stride share into partial[block]:
   16-byte loads on an aligned x (each thread sums its vectors' lanes,
   then the tail), 32-bit indices below 2^31. */
template <typename I, typename T>
__device__ __forceinline__ float gpudl__reduce_share(int op, const T *x, I n) {
    const int V = 16 / sizeof(T);
    float acc = op == GPUDL_K_SUM ? 0.0f : -INFINITY;
    I start = (I)blockIdx.x * blockDim.x + threadIdx.x, stride = (I)gridDim.x * blockDim.x, i = start;
    if (gpudl__aligned16(x)) {
        for (I j = start; j < n / V; j += stride) {
            float v[V];
            gpudl__vload<V>(v, x + j * V);
#pragma unroll
            for (int k = 0; k < V; k++) acc = gpudl__red(op, acc, v[k]);
        }
        i = n / V * V + start;
    }
    for (; i < n; i += stride) acc = gpudl__red(op, acc, gpudl__to_f32(x[i]));
    return acc;
}

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_reduce_partial_kernel(int op, const T *x, int64_t n, float *partial) {
    float acc = n <= INT32_MAX ? gpudl__reduce_share<uint32_t>(op, x, (uint32_t)n) : gpudl__reduce_share<int64_t>(op, x, n);
    acc = gpudl__block_reduce(op, acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

/* The same in one launch: each block writes its partial, and the last
   block to finish (the one whose ticket on done, taken after a fence that
   publishes its partial, is gridDim.x - 1) reduces the partials in block
   order and puts done back to 0. Which block comes last varies; the order
   of the final sum does not, so the bits are the same every run. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_reduce_once_kernel(int op, float *out, const T *x, int64_t n, float *partial, unsigned *done) {
    __shared__ bool last;
    float acc = n <= INT32_MAX ? gpudl__reduce_share<uint32_t>(op, x, (uint32_t)n) : gpudl__reduce_share<int64_t>(op, x, n);
    acc = gpudl__block_reduce(op, acc);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
        __threadfence();
        last = atomicAdd(done, 1u) == gridDim.x - 1;
    }
    __syncthreads();   /* also: the second gpudl__block_reduce reuses the first one's shared memory */
    if (!last) return;
    __threadfence();
    acc = op == GPUDL_K_SUM ? 0.0f : -INFINITY;
    for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x) acc = gpudl__red(op, acc, ((volatile const float *)partial)[i]);
    acc = gpudl__block_reduce(op, acc);
    if (threadIdx.x == 0) {
        *out = acc;
        *done = 0;
    }
}

/* Pass 2: one block reduces the partials (a fixed order: deterministic). */
GPUDL__KSTATIC __global__ void gpudl_reduce_final_kernel(int op, const float *partial, int nparts, float *out) {
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
GPUDL__KSTATIC __global__ void gpudl_argmax_rows_kernel(int32_t *out, const T *x, int64_t rows, int64_t cols) {
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

GPUDL__KFN int gpudl_k_binary(void *stream, int op, void *out, const void *a, const void *b, int dtype, int64_t n) {
    GPUDL__DISPATCH(dtype, T, (gpudl_binary_kernel<T><<<gpudl__map_blocks(n, sizeof(T)), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        op, (T *)out, (const T *)a, (const T *)b, n)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_axpby(void *stream, void *y, float alpha, const void *x, float beta, int dtype, int64_t n) {
    GPUDL__DISPATCH(dtype, T, (gpudl_axpby_kernel<T><<<gpudl__map_blocks(n, sizeof(T)), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        (T *)y, alpha, (const T *)x, beta, n)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int64_t gpudl_k_reduce_scratch(void) { return GPUDL__REDUCE_BLOCKS; }

/* The block count depends on n alone (not on the SM count), so a sum has
   the same bits on every GPU. */
GPUDL__KFN int gpudl_k_reduce(void *stream, int op, float *out, const void *x, int dtype, int64_t n, float *scratch) {
    unsigned nb = gpudl__blocks((n + 3) / 4);
    if (nb > GPUDL__REDUCE_BLOCKS) nb = GPUDL__REDUCE_BLOCKS;
    GPUDL__DISPATCH(dtype, T, (gpudl_reduce_partial_kernel<T><<<nb, GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        op, (const T *)x, n, scratch)));
    gpudl_reduce_final_kernel<<<1, 1024, 0, (cudaStream_t)stream>>>(op, scratch, (int)nb, out);
    return (int)cudaGetLastError();
}

/* gpudl_k_reduce in one launch (no one-block second pass): done is a
   device counter that is 0 before and after (the caller zeroes it once). */
GPUDL__KFN int gpudl_k_reduce_once(void *stream, int op, float *out, const void *x, int dtype, int64_t n, float *scratch, unsigned *done) {
    unsigned nb = gpudl__blocks((n + 3) / 4);
    if (nb > GPUDL__REDUCE_BLOCKS) nb = GPUDL__REDUCE_BLOCKS;
    GPUDL__DISPATCH(dtype, T, (gpudl_reduce_once_kernel<T><<<nb, GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        op, out, (const T *)x, n, scratch, done)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_argmax_rows(void *stream, int32_t *out, const void *x, int dtype, int64_t rows, int64_t cols) {
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

/* Bytes per element: forward 2 * sizeof(T), backward 4 * sizeof(T). */
struct gpudl__act_fwd_op {
    int act;
    float alpha;
    template <typename I> __device__ float operator()(I, float x, float, float) const { return gpudl__act_f(act, x, alpha); }
};

struct gpudl__act_bwd_op {
    int act;
    float alpha;
    template <typename I> __device__ float operator()(I, float dy, float x, float y) const { return gpudl__act_bwd_f(act, dy, x, y, alpha); }
};

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_act_fwd_kernel(int act, float alpha, T *y, const T *x, int64_t n) {
    gpudl__act_fwd_op f = {act, alpha};
    gpudl__map<1>(f, y, x, (const T *)0, (const T *)0, n);
}

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_act_bwd_kernel(int act, float alpha, T *dx, const T *dy, const T *x, const T *y, int64_t n) {
    gpudl__act_bwd_op f = {act, alpha};
    gpudl__map<3>(f, dx, dy, x, y, n);
}

extern "C" {

GPUDL__KFN int gpudl_k_act_fwd(void *stream, int act, float alpha, void *y, const void *x, int dtype, int64_t n) {
    GPUDL__DISPATCH(dtype, T, (gpudl_act_fwd_kernel<T><<<gpudl__map_blocks(n, sizeof(T)), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        act, alpha, (T *)y, (const T *)x, n)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_act_bwd(void *stream, int act, float alpha, void *dx, const void *dy, const void *x, const void *y, int dtype,
                    int64_t n) {
    GPUDL__DISPATCH(dtype, T, (gpudl_act_bwd_kernel<T><<<gpudl__map_blocks(n, sizeof(T)), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        act, alpha, (T *)dx, (const T *)dy, (const T *)x, (const T *)y, n)));
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
GPUDL__KSTATIC __global__ void gpudl_bias_add_kernel(T *y, const T *b, int64_t n, int64_t C, int64_t inner) {
    GPUDL__GRID_STRIDE(i, n) y[i] = gpudl__bias_elem(y[i], b, i, C, inner);
}

/* pre[i] += b[(i / inner) % C], rounded once to T; post[i] = act(that
   rounded value): the bias add and the activation after a GEMM or a
   convolution in one pass, with the same bits as the two kernels apart. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_bias_act_kernel(int act, float alpha, T *pre, T *post, const T *b, int64_t n, int64_t C, int64_t inner) {
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
GPUDL__KSTATIC __global__ void gpudl_col_sum_acc_kernel(float *out, const T *x, int64_t N, int64_t C, int overwrite) {
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
    if (tx == 0 && c < C) out[c] = overwrite ? s : out[c] + s;   /* overwrite: the step's first write */
}

/* out[c] += sum over (n, i) of x[n, c, i] (a conv bias gradient), in two
   passes so that small channel counts still fill the GPU: block (c, g)
   sums images [g * per, (g + 1) * per) of channel c into dst[g * C + c]
   (or, with one chunk, adds straight into out); then each channel's
   partials are added in order. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_channel_sum_partial_kernel(float *dst, int accumulate, const T *x, int64_t N, int64_t C, int64_t inner,
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
        if (accumulate) dst[c] = accumulate > 1 ? s : dst[c] + s;   /* 2: overwrite */
        else dst[(int64_t)blockIdx.y * C + c] = s;
    }
}

/* Both passes in one launch: the blocks' partials as above, and the last
   block to finish (its ticket on done, taken after a fence, is the grid's
   last) adds each channel's partials in chunk order (the same bits as the
   two kernels) and puts done back to 0. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_channel_sum_once_kernel(float *out, int overwrite, float *partial, const T *x, int64_t N, int64_t C,
                                              int64_t inner, int64_t per, unsigned *done) {
    __shared__ int last;
    int64_t c = blockIdx.x, n0 = (int64_t)blockIdx.y * per, n1 = n0 + per < N ? n0 + per : N, M = (n1 - n0) * inner;
    const T *base = x + (n0 * C + c) * inner;
    float s = 0.0f;
    for (int64_t k = threadIdx.x; k < M; k += blockDim.x) {
        int64_t n = k / inner;
        s += gpudl__to_f32(base[n * C * inner + (k - n * inner)]);
    }
    s = gpudl__block_reduce(GPUDL_K_SUM, s);
    if (threadIdx.x == 0) {
        partial[(int64_t)blockIdx.y * C + c] = s;
        __threadfence();
        last = atomicAdd(done, 1u) == gridDim.x * gridDim.y - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int64_t ch = threadIdx.x; ch < C; ch += blockDim.x) {
        float t = 0.0f;
        for (unsigned g = 0; g < gridDim.y; g++) t += ((volatile float *)partial)[g * C + ch];
        out[ch] = overwrite ? t : out[ch] + t;
    }
    if (threadIdx.x == 0) *done = 0;
}

GPUDL__KSTATIC __global__ void gpudl_channel_sum_final_kernel(float *out, const float *partial, int64_t C, int G, int overwrite) {
    int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0.0f;
    for (int g = 0; g < G; g++) s += partial[g * C + c];
    out[c] = overwrite ? s : out[c] + s;
}

extern "C" {

GPUDL__KFN int gpudl_k_bias_add(void *stream, void *y, const void *b, int dtype, int64_t n, int64_t C, int64_t inner) {
    GPUDL__DISPATCH(dtype, T, (gpudl_bias_add_kernel<T><<<GPUDL__GRID(n)>>>((T *)y, (const T *)b, n, C, inner)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_bias_act(void *stream, int act, float alpha, void *pre, void *post, const void *b, int dtype, int64_t n, int64_t C,
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

GPUDL__KFN int gpudl_k_channel_sum(void *stream, float *out, const void *x, int dtype, int64_t N, int64_t C, int64_t inner,
                        float *scratch, int overwrite, unsigned *done) {
    overwrite = overwrite != 0;
    if (inner == 1) {
        dim3 block(32, 32);
        GPUDL__DISPATCH(dtype, T, (gpudl_col_sum_acc_kernel<T><<<(unsigned)((C + 31) / 32), block, 0, (cudaStream_t)stream>>>(
            out, (const T *)x, N, C, overwrite)));
    } else {
        int64_t per, G = gpudl__chunks(N, inner, GPUDL__REDUCE_BLOCKS / C, &per);   /* C * G partials fit the scratch */
        if (G > 1 && done) {
            GPUDL__DISPATCH(dtype, T, (gpudl_channel_sum_once_kernel<T><<<dim3((unsigned)C, (unsigned)G), GPUDL__THREADS, 0,
                (cudaStream_t)stream>>>(out, overwrite, scratch, (const T *)x, N, C, inner, per, done)));
            return (int)cudaGetLastError();
        }
        GPUDL__DISPATCH(dtype, T, (gpudl_channel_sum_partial_kernel<T><<<dim3((unsigned)C, (unsigned)G), GPUDL__THREADS, 0,
            (cudaStream_t)stream>>>(G == 1 ? out : scratch, G == 1 ? 1 + overwrite : 0, (const T *)x, N, C, inner, per)));
        if (G > 1)
            gpudl_channel_sum_final_kernel<<<(unsigned)((C + GPUDL__THREADS - 1) / GPUDL__THREADS), GPUDL__THREADS, 0,
                                             (cudaStream_t)stream>>>(out, scratch, C, (int)G, overwrite);
    }
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_channel_sum_acc(void *stream, float *out, const void *x, int dtype, int64_t N, int64_t C, int64_t inner,
                            float *scratch) {
    return gpudl_k_channel_sum(stream, out, x, dtype, N, C, inner, scratch, 0, NULL);
}

} /* extern "C" */

/* >>loss ------------------------------------------------------------------ */
/* From the arith section: gpudl__block_reduce, GPUDL__REDUCE_BLOCKS. */

__device__ __forceinline__ int64_t gpudl__label_at(const void *labels, int dt, int64_t i) {
    return dt == GPUDL_U8 ? (int64_t)((const uint8_t *)labels)[i] : (int64_t)((const int32_t *)labels)[i];
}

/* One warp per row: stable softmax, the row's loss into rowloss[r]. A label
   outside [0, K): a NaN loss, the row and K into report (pinned host
   memory, read by the host after its next wait; any one bad row will do),
   and *bad = 1 (device memory: the next model update reads it and skips). */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_softmax_xent_rows_kernel(float *probs, float *rowloss, const T *logits, const void *labels, int ldt,
                                               int64_t N, int64_t K, int32_t *report, int32_t *bad_input) {
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
        if (bad && bad_input) *bad_input = 1;
    }
}

/* out = scale * sum of v[0..n) in a fixed order (one block). */
GPUDL__KSTATIC __global__ void gpudl_sum_scaled_kernel(float *out, const float *v, int64_t n, float scale) {
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
    s = gpudl__block_reduce(GPUDL_K_SUM, s);
    if (threadIdx.x == 0) *out = s * scale;
}

/* The gradient is scaled in float before its one rounding, so a loss scale
   lifts small FP16 gradients out of the subnormals instead of scaling zeros. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_softmax_xent_bwd_kernel(T *dl, const float *probs, const void *labels, int ldt, int64_t N, int64_t K,
                                              float scale, const float *dscale) {
    if (dscale) scale *= *dscale;
    GPUDL__GRID_STRIDE(i, N * K) {
        int64_t r = i / K, k = i % K;
        dl[i] = gpudl__from_f32<T>(scale * (probs[i] - (k == gpudl__label_at(labels, ldt, r) ? 1.0f : 0.0f)) / (float)N);
    }
}

/* Softmax cross-entropy's forward, mean and gradient in one launch (the
   model's loss): one warp per row computes the row's softmax (probs), its
   loss and its gradient, dl = scale * dscale * (p - onehot) / N, as the
   two kernels above do; each block sums its rows' losses into partial[],
   and the last block to finish (counted in *done, 0 between launches) sums
   the partials in block order into loss (deterministic) and resets *done. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_softmax_xent_fused_kernel(float *loss, float *probs, T *dl, const T *logits, const void *labels, int ldt,
                                                int64_t N, int64_t K, float scale, const float *dscale, int32_t *report,
                                                int32_t *bad_input, float *partial, unsigned *done) {
    __shared__ float rows[32];
    __shared__ int last;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    float mine = 0.0f;
    if (dscale) scale *= *dscale;
    for (int64_t r = (int64_t)blockIdx.x * nwarps + warp; r < N; r += (int64_t)gridDim.x * nwarps) {
        const T *z = logits + r * K;
        float mx = -INFINITY, s = 0.0f;
        int64_t lab = gpudl__label_at(labels, ldt, r);
        for (int64_t k = lane; k < K; k += 32) mx = gpudl__nanmax(mx, gpudl__to_f32(z[k]));
        for (int o = 16; o > 0; o >>= 1) mx = gpudl__nanmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        for (int64_t k = lane; k < K; k += 32) s += expf(gpudl__to_f32(z[k]) - mx);
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        for (int64_t k = lane; k < K; k += 32) {
            float p = expf(gpudl__to_f32(z[k]) - mx) / s;
            probs[r * K + k] = p;
            dl[r * K + k] = gpudl__from_f32<T>(scale * (p - (k == lab ? 1.0f : 0.0f)) / (float)N);
        }
        if (lane == 0) {
            int bad = lab < 0 || lab >= K;
            mine += bad ? NAN : mx + logf(s) - gpudl__to_f32(z[lab]);
            if (bad && report) {
                report[1] = (int32_t)K;
                report[0] = (int32_t)r;
            }
            if (bad && bad_input) *bad_input = 1;
        }
    }
    if (lane == 0) rows[warp] = mine;
    __syncthreads();
    if (threadIdx.x == 0) {
        float b = 0.0f;
        for (int w = 0; w < nwarps; w++) b += rows[w];
        partial[blockIdx.x] = b;
        __threadfence();
        last = atomicAdd(done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    float t = 0.0f;
    for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x) t += ((volatile float *)partial)[i];
    t = gpudl__block_reduce(GPUDL_K_SUM, t);
    if (threadIdx.x == 0) {
        *loss = t * (1.0f / (float)N);
        *done = 0;
    }
}

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_sq_diff_partial_kernel(const T *p, const float *t, int64_t n, float *partial) {
    float acc = 0.0f;
    GPUDL__GRID_STRIDE(i, n) { float d = gpudl__to_f32(p[i]) - t[i]; acc += d * d; }
    acc = gpudl__block_reduce(GPUDL_K_SUM, acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_mse_bwd_kernel(T *dp, const T *p, const float *t, int64_t n, float scale, const float *dscale) {
    if (dscale) scale *= *dscale;
    GPUDL__GRID_STRIDE(i, n) dp[i] = gpudl__from_f32<T>(scale * 2.0f * (gpudl__to_f32(p[i]) - t[i]) / (float)n);
}

extern "C" {

GPUDL__KFN int gpudl_k_softmax_xent_fwd(void *stream, float *loss, float *probs, const void *logits, int dtype, const void *labels,
                             int label_dtype, int64_t N, int64_t K, float *scratch, int32_t *report, int32_t *bad_input) {
    float *rowloss = scratch + GPUDL__REDUCE_BLOCKS;
    unsigned nb = (unsigned)((N + (GPUDL__THREADS / 32) - 1) / (GPUDL__THREADS / 32));
    GPUDL__DISPATCH(dtype, T, (gpudl_softmax_xent_rows_kernel<T><<<nb, GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        probs, rowloss, (const T *)logits, labels, label_dtype, N, K, report, bad_input)));
    gpudl_sum_scaled_kernel<<<1, 1024, 0, (cudaStream_t)stream>>>(loss, rowloss, N, 1.0f / (float)N);
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_softmax_xent_bwd(void *stream, void *dlogits, int dtype, const float *probs, const void *labels, int label_dtype,
                             int64_t N, int64_t K, float scale, const float *dscale) {
    GPUDL__DISPATCH(dtype, T, (gpudl_softmax_xent_bwd_kernel<T><<<GPUDL__GRID(N * K)>>>((T *)dlogits, probs, labels,
                                                                                        label_dtype, N, K, scale, dscale)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_softmax_xent_fused(void *stream, float *loss, unsigned *done, float *probs, void *dlogits, const void *logits,
                               int dtype, const void *labels, int label_dtype, int64_t N, int64_t K, float scale,
                               const float *dscale, float *scratch, int32_t *report, int32_t *bad_input) {
    int64_t want = (N + (GPUDL__THREADS / 32) - 1) / (GPUDL__THREADS / 32);
    unsigned nb = (unsigned)(want > GPUDL__REDUCE_BLOCKS ? GPUDL__REDUCE_BLOCKS : want);
    GPUDL__DISPATCH(dtype, T, (gpudl_softmax_xent_fused_kernel<T><<<nb, GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        loss, probs, (T *)dlogits, (const T *)logits, labels, label_dtype, N, K, scale, dscale, report, bad_input, scratch, done)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_mse_fwd(void *stream, float *loss, const void *pred, int dtype, const float *target, int64_t n, float *scratch) {
    unsigned nb = gpudl__blocks(n);
    if (nb > GPUDL__REDUCE_BLOCKS) nb = GPUDL__REDUCE_BLOCKS;
    GPUDL__DISPATCH(dtype, T, (gpudl_sq_diff_partial_kernel<T><<<nb, GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        (const T *)pred, target, n, scratch)));
    gpudl_sum_scaled_kernel<<<1, 1024, 0, (cudaStream_t)stream>>>(loss, scratch, nb, 1.0f / (float)n);
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_mse_bwd(void *stream, void *dpred, const void *pred, int dtype, const float *target, int64_t n, float scale,
                    const float *dscale) {
    GPUDL__DISPATCH(dtype, T, (gpudl_mse_bwd_kernel<T><<<GPUDL__GRID(n)>>>((T *)dpred, (const T *)pred, target, n, scale,
                                                                          dscale)));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>conv ------------------------------------------------------------------ */
/* cuDNN computes the convolutions; the bias add is the linear section's. */

/* out[i] += src[i]: conv2d backward adds cuDNN's 16-bit dw into the f32 weight gradient. */
/* out and src differ in type (gpudl__map's inputs share one), so the loop
   is spelled out: 16 bytes of src per step (8 halves against two float4 of
   out). Bytes per element: 8 + sizeof(T). */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_acc_f32_kernel(float *out, const T *src, int64_t n) {
    const int V = 16 / sizeof(T);
    int64_t start = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (int64_t)gridDim.x * blockDim.x, i = start;
    if (gpudl__aligned16(out) && gpudl__aligned16(src)) {
        for (int64_t j = start; j < n / V; j += stride) {
            float o[V], a[V];
            gpudl__vload<V>(o, out + j * V);
            gpudl__vload<V>(a, src + j * V);
#pragma unroll
            for (int k = 0; k < V; k++) o[k] += a[k];
            gpudl__vstore<V>(out + j * V, o);
        }
        i = n / V * V + start;
    }
    for (; i < n; i += stride) out[i] += gpudl__to_f32(src[i]);
}

GPUDL__KFN_C int gpudl_k_acc_f32(void *stream, float *out, const void *src, int dtype, int64_t n) {
    GPUDL__DISPATCH(dtype, T, (gpudl_acc_f32_kernel<T><<<gpudl__map_blocks(n, sizeof(T)), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        out, (const T *)src, n)));
    return (int)cudaGetLastError();
}

/* >>pool ------------------------------------------------------------------ */

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_pool_fwd_kernel(int kind, T *y, const void *x, int dt, int64_t NC, int64_t H, int64_t W, int64_t Ho,
                                      int64_t Wo, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    GPUDL__GRID_STRIDE(i, NC * Ho * Wo) {
        int64_t p = i / (Ho * Wo), oh = (i / Wo) % Ho, ow = i % Wo, arg;
        y[i] = gpudl__from_f32<T>(gpudl__pool_window(kind, x, dt, p * H * W, H, W, oh, ow, kh, kw, sh, sw, ph, pw, &arg));
    }
}

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_pool_bwd_kernel(int kind, T *dx, const void *dy, const void *x, int dt, int64_t NC, int64_t H, int64_t W,
                                      int64_t Ho, int64_t Wo, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    GPUDL__GRID_STRIDE(i, NC * H * W) {
        int64_t p = i / (H * W);
        dx[i] = gpudl__from_f32<T>(gpudl__pool_backward_elem(kind, x, dy, dt, p * H * W, p * Ho * Wo, H, W, Ho, Wo, (i / W) % H, i % W,
                                                      kh, kw, sh, sw, ph, pw));
    }
}

/* Backward when the windows do not overlap (stride >= window: LeNet's and
   most CNNs' 2 x 2 / 2 pooling), in one pass over the input: the plane is
   cut into cells of sh x sw anchored at (-ph, -pw), window (oh, ow) lies
   in cell (oh, ow), and one thread per cell finds its window's argmax
   once (gpudl__pool_window, the CPU's own rule for ties and NaN) and
   writes the whole cell: dy at the argmax, 0 elsewhere (avg: dy / (kh kw)
   inside the window). The gather above recomputed each window's argmax
   for every element of it (kh kw times; 4 reads of each x at 2 x 2 / 2);
   here each x is read once: bytes per input element x + dx + dy / (sh sw).
   The same bits as gpudl__pool_backward_elem: 0 + the one term. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_pool_bwd_cells_kernel(int kind, T *dx, const void *dy, const void *x, int dt, int64_t NC, int64_t H,
                                            int64_t W, int64_t Ho, int64_t Wo, int64_t Hc, int64_t Wc, int64_t kh, int64_t kw,
                                            int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    GPUDL__GRID_STRIDE(i, NC * Hc * Wc) {
        int64_t p = i / (Hc * Wc), oh = (i / Wc) % Hc, ow = i % Wc, arg = -1, h, w;
        bool win = oh < Ho && ow < Wo;
        float g = 0.0f;
        if (win) {
            g = gpudl__elem_get(dy, dt, p * Ho * Wo + oh * Wo + ow);
            if (kind == GPUDL_POOL_MAX) gpudl__pool_window(kind, x, dt, p * H * W, H, W, oh, ow, kh, kw, sh, sw, ph, pw, &arg);
            else g /= (float)(kh * kw);
        }
        for (h = oh * sh - ph; h < (oh + 1) * sh - ph; h++) {
            if (h < 0 || h >= H) continue;
            for (w = ow * sw - pw; w < (ow + 1) * sw - pw; w++) {
                float v = 0.0f;
                bool in = win && h - (oh * sh - ph) < kh && w - (ow * sw - pw) < kw;
                if (w < 0 || w >= W) continue;
                if (in && (kind == GPUDL_POOL_AVG || h * W + w == arg)) v += g;
                dx[p * H * W + h * W + w] = gpudl__from_f32<T>(v);
            }
        }
    }
}

extern "C" {

GPUDL__KFN int gpudl_k_pool_fwd(void *stream, int kind, void *y, const void *x, int dtype, int64_t NC, int64_t H, int64_t W, int64_t Ho,
                     int64_t Wo, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    GPUDL__DISPATCH(dtype, T, (gpudl_pool_fwd_kernel<T><<<GPUDL__GRID(NC * Ho * Wo)>>>(kind, (T *)y, x, dtype, NC, H, W, Ho, Wo,
                                                                                       kh, kw, sh, sw, ph, pw)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_pool_bwd(void *stream, int kind, void *dx, const void *dy, const void *x, int dtype, int64_t NC, int64_t H,
                     int64_t W, int64_t Ho, int64_t Wo, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    if (sh >= kh && sw >= kw) {
        int64_t Hc = (H - 1 + ph) / sh + 1, Wc = (W - 1 + pw) / sw + 1;   /* the cells that cover the plane */
        GPUDL__DISPATCH(dtype, T, (gpudl_pool_bwd_cells_kernel<T><<<gpudl__vblocks(NC * Hc * Wc), GPUDL__THREADS, 0,
            (cudaStream_t)stream>>>(kind, (T *)dx, dy, x, dtype, NC, H, W, Ho, Wo, Hc, Wc, kh, kw, sh, sw, ph, pw)));
        return (int)cudaGetLastError();
    }
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
GPUDL__KSTATIC __global__ void gpudl_bn_stats_partial_kernel(float *part, const T *x, int64_t N, int64_t C, int64_t inner, int64_t per) {
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
GPUDL__KSTATIC __global__ void gpudl_bn_stats_final_kernel(float *save_mean, float *save_invstd, float *rmean, float *rvar, const float *part,
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

/* y = (x - mean) * invstd * gamma + beta; from_var: invstd = 1 / sqrt(v + eps)
   (eval mode). Bytes per element: 2 * sizeof(T) (the per-channel floats
   stay in cache); 16-byte accesses and 32-bit channel arithmetic. */
struct gpudl__bn_apply_op {
    const float *mean, *v, *gamma, *beta;
    int from_var;
    float eps;
    int64_t C, inner;
    template <typename I> __device__ float operator()(I i, float x, float, float) const {
        I c = (i / (I)inner) % (I)C;
        float invstd = from_var ? 1.0f / sqrtf(v[c] + eps) : v[c];
        return (x - mean[c]) * invstd * gamma[c] + beta[c];
    }
};

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_bn_apply_kernel(T *y, const T *x, const float *mean, const float *v, int from_var, float eps,
                                      const float *gamma, const float *beta, int64_t n, int64_t C, int64_t inner) {
    gpudl__bn_apply_op f = {mean, v, gamma, beta, from_var, eps, C, inner};
    gpudl__map<1>(f, y, x, (const T *)0, (const T *)0, n);
}

/* Backward, pass 1: each chunk's sums of dy and dy * xhat. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_bn_bwd_partial_kernel(float *part, const T *dy, const T *x, const float *save_mean,
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
GPUDL__KSTATIC __global__ void gpudl_bn_bwd_final_kernel(float *means, float *dgamma, float *dbeta, const float *part, int64_t C, int G,
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

/* dx from dy, x and the channel's sums: 3 * sizeof(T) bytes per element,
   16-byte accesses, 32-bit channel arithmetic. */
struct gpudl__bn_bwd_apply_op {
    const float *gamma, *save_mean, *save_invstd, *means;
    int64_t C, inner;
    template <typename I> __device__ float operator()(I i, float dy, float x, float) const {
        I c = (i / (I)inner) % (I)C;
        return gpudl__bn_backward_elem(dy, x, save_mean[c], save_invstd[c], gamma[c], means[2 * c], means[2 * c + 1]);
    }
};

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_bn_bwd_apply_kernel(T *dx, const T *dy, const T *x, const float *gamma, const float *save_mean,
                                          const float *save_invstd, const float *means, int64_t n, int64_t C, int64_t inner) {
    gpudl__bn_bwd_apply_op f = {gamma, save_mean, save_invstd, means, C, inner};
    gpudl__map<2>(f, dx, dy, x, (const T *)0, n);
}
#undef GPUDL__BN_CHUNK
#undef GPUDL__BN_AT

extern "C" {

GPUDL__KFN int64_t gpudl_k_bn_scratch(int64_t N, int64_t C, int64_t inner) {
    int64_t per, G = gpudl__chunks(N, inner, 256, &per);
    return 3 * G * C + 2 * C;
}

GPUDL__KFN int gpudl_k_bn_fwd(void *stream, void *y, float *save_mean, float *save_invstd, const void *x, int dtype, const float *gamma,
                   const float *beta, float *running_mean, float *running_var, int64_t N, int64_t C, int64_t inner,
                   int training, float momentum, float eps, float *scratch) {
    int64_t per, G = gpudl__chunks(N, inner, 256, &per), n = N * C * inner;
    if (training) {
        GPUDL__DISPATCH(dtype, T, (gpudl_bn_stats_partial_kernel<T><<<dim3((unsigned)C, (unsigned)G), GPUDL__THREADS, 0,
            (cudaStream_t)stream>>>(scratch, (const T *)x, N, C, inner, per)));
        gpudl_bn_stats_final_kernel<<<(unsigned)((C + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
            save_mean, save_invstd, running_mean, running_var, scratch, C, (int)G, N * inner, momentum, eps);
    }
    GPUDL__DISPATCH(dtype, T, (gpudl_bn_apply_kernel<T><<<gpudl__map_blocks(n, sizeof(T)), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        (T *)y, (const T *)x,
        training ? save_mean : running_mean, training ? save_invstd : running_var, !training, eps, gamma, beta, n, C, inner)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_bn_bwd(void *stream, void *dx, float *dgamma, float *dbeta, const void *dy, const void *x, int dtype,
                   const float *gamma, const float *save_mean, const float *save_invstd, int64_t N, int64_t C, int64_t inner,
                   float *scratch) {
    int64_t per, G = gpudl__chunks(N, inner, 256, &per), n = N * C * inner;
    float *means = scratch + 2 * G * C;
    GPUDL__DISPATCH(dtype, T, (gpudl_bn_bwd_partial_kernel<T><<<dim3((unsigned)C, (unsigned)G), GPUDL__THREADS, 0,
        (cudaStream_t)stream>>>(scratch, (const T *)dy, (const T *)x, save_mean, save_invstd, N, C, inner, per)));
    gpudl_bn_bwd_final_kernel<<<(unsigned)((C + 127) / 128), 128, 0, (cudaStream_t)stream>>>(means, dgamma, dbeta, scratch, C,
                                                                                             (int)G, N * inner);
    if (dx)
        GPUDL__DISPATCH(dtype, T, (gpudl_bn_bwd_apply_kernel<T><<<gpudl__map_blocks(n, sizeof(T)), GPUDL__THREADS, 0,
            (cudaStream_t)stream>>>((T *)dx, (const T *)dy, (const T *)x, gamma,
            save_mean, save_invstd, means, n, C, inner)));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>dropout --------------------------------------------------------------- */

/* Bytes per element: 2 * sizeof(T); the mask is recomputed from (seed, offset + i). */
struct gpudl__dropout_op {
    float p;
    uint64_t seed, offset;
    template <typename I> __device__ float operator()(I i, float x, float, float) const { return gpudl__dropout_elem(x, p, seed, offset + (uint64_t)i); }
};

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_dropout_kernel(T *y, const T *x, int64_t n, float p, uint64_t seed, uint64_t offset) {
    gpudl__dropout_op f = {p, seed, offset};
    gpudl__map<1>(f, y, x, (const T *)0, (const T *)0, n);
}

extern "C" {

GPUDL__KFN int gpudl_k_dropout(void *stream, void *y, const void *x, int dtype, int64_t n, float p, uint64_t seed, uint64_t offset) {
    GPUDL__DISPATCH(dtype, T, (gpudl_dropout_kernel<T><<<gpudl__map_blocks(n, sizeof(T)), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(
        (T *)y, (const T *)x, n, p, seed, offset)));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>transformer ----------------------------------------------------------- */

/* One thread per element of y (N = B T positions, C channels). An id
   outside [0, V): a NaN row, the position and V into report (read by the
   host at its next wait, as the loss does for a bad label) and *bad = 1
   (the next model update skips). */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_embedding_fwd_kernel(T *y, const void *ids, int idt, const T *wte, const T *wpe, int64_t N, int64_t Tn,
                                           int64_t V, int64_t C, int32_t *report, int32_t *bad_input) {
    GPUDL__GRID_STRIDE(i, N * C) {
        int64_t n = i / C, c = i % C, id = gpudl__id_at(ids, idt, n);
        if (id < 0 || id >= V) {
            y[i] = gpudl__from_f32<T>(NAN);
            if (c == 0 && report) { report[1] = -(int32_t)V; report[0] = (int32_t)n; }   /* < 0: an id, not a label */
            if (c == 0 && bad_input) *bad_input = 1;
            continue;
        }
        y[i] = gpudl__from_f32<T>(gpudl__to_f32(wte[id * C + c]) + (wpe ? gpudl__to_f32(wpe[(n % Tn) * C + c]) : 0.0f));
    }
}

/* dwte[v, c] += the sum, in position order, of dy[n, c] over the positions
   n holding id v: a gather, one thread per (v, c), so nothing is added by
   two threads (no atomics) and the sum is the same every run. The threads
   of a warp share v and read the same id at each step (one broadcast load). */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_embedding_bwd_kernel(float *dwte, float *dwpe, const T *dy, const void *ids, int idt, int64_t B, int64_t Tn,
                                           int64_t V, int64_t C, int overwrite) {
    int64_t nte = dwte ? V * C : 0, npe = dwpe ? Tn * C : 0;
    GPUDL__GRID_STRIDE(i, nte + npe) {
        float acc = 0.0f;
        if (i < nte) {
            int64_t v = i / C, c = i % C;
            for (int64_t n = 0; n < B * Tn; n++)
                if (gpudl__id_at(ids, idt, n) == v) acc += gpudl__to_f32(dy[n * C + c]);
            dwte[i] = overwrite ? acc : dwte[i] + acc;
        } else {   /* dwpe[t, c] += sum over b of dy[b, t, c], in batch order (the same launch: one fewer per step) */
            int64_t k = i - nte;
            for (int64_t b = 0; b < B; b++) acc += gpudl__to_f32(dy[b * Tn * C + k]);
            dwpe[k] = overwrite ? acc : dwpe[k] + acc;
        }
    }
}

/* Rows of at most this many floats are kept in shared memory by the
   warp-per-row kernels below (8 warps of a 256-thread block: 48 KiB, the
   default limit); longer rows are read again from global memory. */
#define GPUDL__ROW_CACHE 1536

/* Layer norm: one warp per row. The row is read from global memory once
   (kept in shared memory; each lane reads back only what it wrote), the
   mean and then the centred variance are warp sums in FP32. With res (a
   transformer's residual, then its next layer norm): the row is x + res,
   rounded to T and written to sum (the residual stream) as it is read. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_layernorm_fwd_kernel(T *y, float *mean, float *rstd, const T *x, const T *res, T *sum, const float *gamma,
                                           const float *beta, int64_t R, int64_t C, float eps, int cached) {
    extern __shared__ float gpudl__rows[];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + warp;
    if (r >= R) return;
    const T *xr = x + r * C;
    float *row = cached ? gpudl__rows + (int64_t)warp * C : NULL, s = 0.0f, ss = 0.0f;
    for (int64_t c = lane; c < C; c += 32) {
        float v = gpudl__to_f32(xr[c]);
        if (res) {   /* the sum as T holds it: what the unfused add would have written */
            T t = gpudl__from_f32<T>(v + gpudl__to_f32(res[r * C + c]));
            sum[r * C + c] = t;
            v = gpudl__to_f32(t);
        }
        if (row) row[c] = v;
        s += v;
    }
    if (res) xr = sum + r * C;   /* read back (uncached rows): each lane its own writes */
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    float m = s / (float)C;
    for (int64_t c = lane; c < C; c += 32) {
        float d = (row ? row[c] : gpudl__to_f32(xr[c])) - m;
        ss += d * d;
    }
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    float rs = gpudl__ln_rstd(ss / (float)C, eps);
    for (int64_t c = lane; c < C; c += 32)
        y[r * C + c] = gpudl__from_f32<T>(gpudl__ln_fwd_elem(row ? row[c] : gpudl__to_f32(xr[c]), m, rs, gamma[c], beta[c]));
    if (lane == 0) { mean[r] = m; rstd[r] = rs; }
}

/* dx of a row: one warp per row, the two row means as warp sums. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_layernorm_bwd_dx_kernel(T *dx, const T *dy, const T *x, const T *dadd, const float *gamma, const float *mean,
                                              const float *rstd, int64_t R, int64_t C) {
    int lane = threadIdx.x & 31;
    int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= R) return;
    float m = mean[r], rs = rstd[r], sg = 0.0f, sgx = 0.0f;
    for (int64_t c = lane; c < C; c += 32) {
        float dyg = gpudl__to_f32(dy[r * C + c]) * gamma[c];
        sg += dyg;
        sgx += dyg * ((gpudl__to_f32(x[r * C + c]) - m) * rs);
    }
    for (int o = 16; o > 0; o >>= 1) {
        sg += __shfl_xor_sync(0xffffffffu, sg, o);
        sgx += __shfl_xor_sync(0xffffffffu, sgx, o);
    }
    sg /= (float)C; sgx /= (float)C;
    for (int64_t c = lane; c < C; c += 32) {   /* + dadd: the residual's other path (a transformer's pre-norm block) */
        float d = gpudl__ln_bwd_elem(gpudl__to_f32(dy[r * C + c]), gpudl__to_f32(x[r * C + c]), m, rs, gamma[c], sg, sgx);
        dx[r * C + c] = gpudl__from_f32<T>(dadd ? d + gpudl__to_f32(dadd[r * C + c]) : d);
    }
}

/* dgamma, dbeta: block (32 columns, 8 row lanes) per (column tile, row
   chunk); the 8 lanes' sums are added in a fixed order. G == 1: straight
   into dgamma/dbeta (+=); else partials (G, C) each into scratch. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_layernorm_bwd_params_kernel(float *dgamma, float *dbeta, float *scratch, const T *dy, const T *x,
                                                  const float *mean, const float *rstd, int64_t R, int64_t C, int64_t per,
                                                  int overwrite) {
    __shared__ float sg[8][33], sb[8][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t c = (int64_t)blockIdx.x * 32 + tx, r0 = (int64_t)blockIdx.y * per, r1 = r0 + per < R ? r0 + per : R;
    float ag = 0.0f, ab = 0.0f;
    if (c < C)
        for (int64_t r = r0 + ty; r < r1; r += 8) {
            float d = gpudl__to_f32(dy[r * C + c]);
            ag += d * ((gpudl__to_f32(x[r * C + c]) - mean[r]) * rstd[r]);
            ab += d;
        }
    sg[ty][tx] = ag; sb[ty][tx] = ab;
    __syncthreads();
    if (ty == 0 && c < C) {
        for (int k = 1; k < 8; k++) { ag += sg[k][tx]; ab += sb[k][tx]; }
        if (gridDim.y == 1) {
            if (dgamma) dgamma[c] = overwrite ? ag : dgamma[c] + ag;
            if (dbeta) dbeta[c] = overwrite ? ab : dbeta[c] + ab;
        } else {
            scratch[(int64_t)blockIdx.y * C + c] = ag;
            scratch[((int64_t)gridDim.y + blockIdx.y) * C + c] = ab;
        }
    }
}

GPUDL__KSTATIC __global__ void gpudl_layernorm_bwd_final_kernel(float *dgamma, float *dbeta, const float *scratch, int64_t C, int G, int overwrite) {
    GPUDL__GRID_STRIDE(c, C) {
        float ag = 0.0f, ab = 0.0f;
        for (int g = 0; g < G; g++) { ag += scratch[(int64_t)g * C + c]; ab += scratch[((int64_t)G + g) * C + c]; }
        if (dgamma) dgamma[c] = overwrite ? ag : dgamma[c] + ag;
        if (dbeta) dbeta[c] = overwrite ? ab : dbeta[c] + ab;
    }
}

/* Row chunks of the parameter sums: about 64 rows each, at most 256 chunks. */
static int64_t gpudl__ln_chunks(int64_t R, int64_t *per) {
    int64_t G = (R + 63) / 64;
    if (G > 256) G = 256;
    if (G < 1) G = 1;
    *per = (R + G - 1) / G;
    if (*per < 1) *per = 1;
    return (R + *per - 1) / *per > 1 ? (R + *per - 1) / *per : 1;   /* no empty chunk */
}

/* qkv (B,T,3,NH,HS) <-> q, k, v (B,NH,T,HS): one thread per element of qkv (coalesced there). */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_attn_split_kernel(T *q, T *k, T *v, T *qkv, int64_t B, int64_t Tn, int64_t NH, int64_t HS, int to_heads) {
    int64_t C = NH * HS;
    GPUDL__GRID_STRIDE(i, B * Tn * 3 * C) {
        int64_t c3 = i % (3 * C), n = i / (3 * C), b = n / Tn, t = n % Tn, which = c3 / C, c = c3 % C;
        int64_t j = ((b * NH + c / HS) * Tn + t) * HS + c % HS;
        T *h = which == 0 ? q : which == 1 ? k : v;
        if (to_heads) h[j] = qkv[i];
        else qkv[i] = h[j];
    }
}

/* (B,T,NH,HS) <-> (B,NH,T,HS): one thread per element of the (B,T,C) side. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_attn_merge_kernel(T *bt, T *heads, int64_t B, int64_t Tn, int64_t NH, int64_t HS, int to_heads) {
    int64_t C = NH * HS;
    GPUDL__GRID_STRIDE(i, B * Tn * C) {
        int64_t n = i / C, c = i % C, b = n / Tn, t = n % Tn;
        int64_t j = ((b * NH + c / HS) * Tn + t) * HS + c % HS;
        if (to_heads) heads[j] = bt[i];
        else bt[i] = heads[j];
    }
}

/* Causal softmax: one warp per row (l, t) of the F32 scores; the visible
   part j <= t is read once (kept in shared memory), the max and the sum
   are warp reductions in FP32, masked entries are written as exact zeros.
   att may be scores itself (F32): each lane rewrites only what it read. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_attn_softmax_kernel(T *att, const float *scores, int64_t L, int64_t Tn, int cached) {
    extern __shared__ float gpudl__rows[];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + warp;
    if (r >= L * Tn) return;
    int64_t t = r % Tn;
    const float *s = scores + r * Tn;
    float *row = cached ? gpudl__rows + (int64_t)warp * Tn : NULL, mx = -INFINITY, sum = 0.0f;
    for (int64_t j = lane; j <= t; j += 32) {
        float v = s[j];
        if (row) row[j] = v;
        mx = gpudl__nanmax(mx, v);
    }
    for (int o = 16; o > 0; o >>= 1) mx = gpudl__nanmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    for (int64_t j = lane; j <= t; j += 32) sum += expf((row ? row[j] : s[j]) - mx);
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    for (int64_t j = lane; j < Tn; j += 32)
        att[r * Tn + j] = gpudl__from_f32<T>(gpudl__attn_visible(t, j) ? expf((row ? row[j] : s[j]) - mx) / sum : 0.0f);
}

/* Softmax backward per row: ds_j = p_j (dp_j - sum_k p_k dp_k) for j <= t,
   0 beyond; one warp per row. ds may be dp itself (F32). */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_attn_softmax_bwd_kernel(T *ds, const float *dp, const T *att, int64_t L, int64_t Tn) {
    int lane = threadIdx.x & 31;
    int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= L * Tn) return;
    int64_t t = r % Tn;
    float dot = 0.0f;
    for (int64_t j = lane; j <= t; j += 32) dot += gpudl__to_f32(att[r * Tn + j]) * dp[r * Tn + j];
    for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    for (int64_t j = lane; j < Tn; j += 32)
        ds[r * Tn + j] = gpudl__from_f32<T>(gpudl__attn_visible(t, j)
                                            ? gpudl__softmax_bwd_elem(gpudl__to_f32(att[r * Tn + j]), dp[r * Tn + j], dot) : 0.0f);
}

/* Blocks of 8 warps for R rows, one warp each. */
static unsigned gpudl__warp_rows_blocks(int64_t R) { return (unsigned)((R + 7) / 8 > 0 ? (R + 7) / 8 : 1); }

extern "C" {

GPUDL__KFN int gpudl_k_embedding_fwd(void *stream, void *y, const void *ids, int ids_dtype, const void *wte, const void *wpe, int dtype,
                          int64_t N, int64_t T, int64_t V, int64_t C, int32_t *report, int32_t *bad_input) {
    GPUDL__DISPATCH(dtype, E, (gpudl_embedding_fwd_kernel<E><<<GPUDL__GRID(N * C)>>>((E *)y, ids, ids_dtype, (const E *)wte,
        (const E *)wpe, N, T, V, C, report, bad_input)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_embedding_bwd(void *stream, float *dwte, float *dwpe, const void *dy, int dtype, const void *ids, int ids_dtype,
                          int64_t B, int64_t T, int64_t V, int64_t C, int overwrite) {
    int64_t n = (dwte ? V * C : 0) + (dwpe ? T * C : 0);
    if (n > 0)
        GPUDL__DISPATCH(dtype, E, (gpudl_embedding_bwd_kernel<E><<<GPUDL__GRID(n)>>>(dwte, dwpe, (const E *)dy, ids, ids_dtype, B, T,
            V, C, overwrite)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_layernorm_fwd(void *stream, void *y, float *mean, float *rstd, const void *x, const void *res, void *sum, int dtype,
                          const float *gamma, const float *beta, int64_t R, int64_t C, float eps) {
    int cached = C <= GPUDL__ROW_CACHE;
    size_t sh = cached ? 8 * (size_t)C * sizeof(float) : 0;
    if (R == 0) return (int)cudaGetLastError();
    GPUDL__DISPATCH(dtype, E, (gpudl_layernorm_fwd_kernel<E><<<gpudl__warp_rows_blocks(R), 256, sh, (cudaStream_t)stream>>>(
        (E *)y, mean, rstd, (const E *)x, (const E *)res, (E *)sum, gamma, beta, R, C, eps, cached)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int64_t gpudl_k_layernorm_scratch(int64_t R, int64_t C) {
    int64_t per, G = gpudl__ln_chunks(R, &per);
    return 2 * G * C + 1;
}

GPUDL__KFN int gpudl_k_layernorm_bwd(void *stream, void *dx, float *dgamma, float *dbeta, const void *dy, const void *x, const void *dadd,
                          int dtype, const float *gamma, const float *mean, const float *rstd, int64_t R, int64_t C,
                          float *scratch, int overwrite) {
    int64_t per, G = gpudl__ln_chunks(R, &per);
    if (R == 0) return (int)cudaGetLastError();
    if (dgamma || dbeta) {   /* first: dx may be dy or x itself */
        GPUDL__DISPATCH(dtype, E, (gpudl_layernorm_bwd_params_kernel<E><<<dim3((unsigned)((C + 31) / 32), (unsigned)G), dim3(32, 8),
            0, (cudaStream_t)stream>>>(dgamma, dbeta, scratch, (const E *)dy, (const E *)x, mean, rstd, R, C, per, overwrite)));
        if (G > 1)
            gpudl_layernorm_bwd_final_kernel<<<GPUDL__GRID(C)>>>(dgamma, dbeta, scratch, C, (int)G, overwrite);
    }
    if (dx)   /* each lane reads a row's dy and x before it writes them */
        GPUDL__DISPATCH(dtype, E, (gpudl_layernorm_bwd_dx_kernel<E><<<gpudl__warp_rows_blocks(R), 256, 0, (cudaStream_t)stream>>>(
            (E *)dx, (const E *)dy, (const E *)x, (const E *)dadd, gamma, mean, rstd, R, C)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_attn_split(void *stream, void *q, void *k, void *v, void *qkv, int dtype, int64_t B, int64_t T, int64_t NH,
                       int64_t HS, int to_heads) {
    GPUDL__DISPATCH(dtype, E, (gpudl_attn_split_kernel<E><<<GPUDL__GRID(B * T * 3 * NH * HS)>>>((E *)q, (E *)k, (E *)v, (E *)qkv,
        B, T, NH, HS, to_heads)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_attn_merge(void *stream, void *bt, void *heads, int dtype, int64_t B, int64_t T, int64_t NH, int64_t HS,
                       int to_heads) {
    GPUDL__DISPATCH(dtype, E, (gpudl_attn_merge_kernel<E><<<GPUDL__GRID(B * T * NH * HS)>>>((E *)bt, (E *)heads, B, T, NH, HS,
        to_heads)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_attn_softmax(void *stream, void *att, const float *scores, int dtype, int64_t L, int64_t T) {
    int cached = T <= GPUDL__ROW_CACHE;
    size_t sh = cached ? 8 * (size_t)T * sizeof(float) : 0;
    if (L * T == 0) return (int)cudaGetLastError();
    GPUDL__DISPATCH(dtype, E, (gpudl_attn_softmax_kernel<E><<<gpudl__warp_rows_blocks(L * T), 256, sh, (cudaStream_t)stream>>>(
        (E *)att, scores, L, T, cached)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_attn_softmax_bwd(void *stream, void *ds, const float *dp, const void *att, int dtype, int64_t L, int64_t T) {
    if (L * T == 0) return (int)cudaGetLastError();
    GPUDL__DISPATCH(dtype, E, (gpudl_attn_softmax_bwd_kernel<E><<<gpudl__warp_rows_blocks(L * T), 256, 0, (cudaStream_t)stream>>>(
        (E *)ds, dp, (const E *)att, L, T)));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* Fused attention: a warp per row, each lane holding head dims lane,
   lane + 32, ... (up to GPUDL__FUSED_MAX_HS / 32 of them) in registers; a
   dot product of two head vectors is a warp sum. */
#define GPUDL__FUSED_KD (GPUDL__FUSED_MAX_HS / 32)

__device__ __forceinline__ float gpudl__warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Head vector row[0..HS) into the lane's registers (0 beyond HS). */
template <typename T>
__device__ __forceinline__ void gpudl__head_load(float *r, const T *row, int lane, int64_t HS) {
#pragma unroll
    for (int k = 0; k < GPUDL__FUSED_KD; k++) {
        int64_t d = lane + 32 * k;
        r[k] = d < HS ? gpudl__to_f32(row[d]) : 0.0f;
    }
}

template <typename T>
__device__ __forceinline__ float gpudl__head_dot(const float *r, const T *row, int lane, int64_t HS) {
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < GPUDL__FUSED_KD; k++) {
        int64_t d = lane + 32 * k;
        if (d < HS) s += r[k] * gpudl__to_f32(row[d]);
    }
    return gpudl__warp_sum(s);
}

/* Forward: one warp per query row (b, h, t), an online softmax over the
   keys j <= t (running max m, denominator l, rescaled accumulator): q, k
   and v are read straight from qkv, nothing of size T x T is written. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_attn_fused_fwd_kernel(T *y, float *lse, const T *qkv, int64_t B, int64_t Tn, int64_t NH, int64_t HS,
                                            float scale) {
    int lane = threadIdx.x & 31;
    int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= B * NH * Tn) return;
    int64_t C = NH * HS, b = r / (NH * Tn), h = (r / Tn) % NH, t = r % Tn;
    const T *base = qkv + b * Tn * 3 * C + h * HS;
    float q[GPUDL__FUSED_KD], acc[GPUDL__FUSED_KD], m = -INFINITY, l = 0.0f;
    gpudl__head_load(q, base + t * 3 * C, lane, HS);
#pragma unroll
    for (int k = 0; k < GPUDL__FUSED_KD; k++) acc[k] = 0.0f;
    for (int64_t j = 0; j <= t; j++) {
        const T *vr = base + j * 3 * C + 2 * C;
        float s = gpudl__head_dot(q, base + j * 3 * C + C, lane, HS) * scale;
        float mn = gpudl__nanmax(m, s), corr = expf(m - mn), e = expf(s - mn);
        l = l * corr + e;
#pragma unroll
        for (int k = 0; k < GPUDL__FUSED_KD; k++) {
            int64_t d = lane + 32 * k;
            if (d < HS) acc[k] = acc[k] * corr + e * gpudl__to_f32(vr[d]);
        }
        m = mn;
    }
#pragma unroll
    for (int k = 0; k < GPUDL__FUSED_KD; k++) {
        int64_t d = lane + 32 * k;
        if (d < HS) y[(b * Tn + t) * C + h * HS + d] = gpudl__from_f32<T>(acc[k] / l);
    }
    if (lane == 0) lse[r] = m + logf(l);
}

/* Backward, 1 of 3: D[r] = dy_t . y_t per (b, h, t), the softmax backward's row sum. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_attn_fused_d_kernel(float *D, const T *dy, const T *y, int64_t B, int64_t Tn, int64_t NH, int64_t HS) {
    int lane = threadIdx.x & 31;
    int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= B * NH * Tn) return;
    int64_t C = NH * HS, b = r / (NH * Tn), h = (r / Tn) % NH, t = r % Tn, o = (b * Tn + t) * C + h * HS;
    float s = 0.0f;
    for (int64_t d = lane; d < HS; d += 32) s += gpudl__to_f32(dy[o + d]) * gpudl__to_f32(y[o + d]);
    s = gpudl__warp_sum(s);
    if (lane == 0) D[r] = s;
}

/* Backward, 2 and 3 of 3: per query row (keys = 0) dq_t = scale sum_{j<=t}
   ds_tj k_j, or per key row (keys = 1) dk_j = scale sum_{t>=j} ds_tj q_t and
   dv_j = sum_{t>=j} p_tj dy_t, with p_tj = exp(q_t . k_j scale - lse_t) and
   ds_tj = p_tj (dy_t . v_j - D_t): each output row is one warp's, so no
   atomics and a fixed order. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_attn_fused_bwd_kernel(T *dqkv, const T *dy, const T *qkv, const float *lse, const float *D, int64_t B,
                                            int64_t Tn, int64_t NH, int64_t HS, float scale, int keys) {
    int lane = threadIdx.x & 31;
    int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= B * NH * Tn) return;
    int64_t C = NH * HS, b = r / (NH * Tn), h = (r / Tn) % NH, i = r % Tn, rb = r - i;
    const T *base = qkv + b * Tn * 3 * C + h * HS, *dyb = dy + b * Tn * C + h * HS;
    float a[GPUDL__FUSED_KD], c2[GPUDL__FUSED_KD], g1[GPUDL__FUSED_KD], g2[GPUDL__FUSED_KD];
    /* keys = 0: a = q_i, c2 = dy_i; keys = 1: a = k_i, c2 = v_i */
    gpudl__head_load(a, base + i * 3 * C + (keys ? C : 0), lane, HS);
    if (keys) gpudl__head_load(c2, base + i * 3 * C + 2 * C, lane, HS);
    else gpudl__head_load(c2, dyb + i * C, lane, HS);
#pragma unroll
    for (int k = 0; k < GPUDL__FUSED_KD; k++) g1[k] = g2[k] = 0.0f;
    for (int64_t n = keys ? i : 0; keys ? n < Tn : n <= i; n++) {
        int64_t t = keys ? n : i, j = keys ? i : n;
        const T *qr = base + t * 3 * C, *kr = base + j * 3 * C + C;
        float s = keys ? gpudl__head_dot(a, qr, lane, HS) : gpudl__head_dot(a, kr, lane, HS);
        float dp = keys ? gpudl__head_dot(c2, dyb + t * C, lane, HS) : gpudl__head_dot(c2, base + j * 3 * C + 2 * C, lane, HS);
        float p = expf(s * scale - lse[rb + t]), ds = gpudl__softmax_bwd_elem(p, dp, D[rb + t]) * scale;
#pragma unroll
        for (int k = 0; k < GPUDL__FUSED_KD; k++) {
            int64_t d = lane + 32 * k;
            if (d >= HS) continue;
            if (keys) {
                g1[k] += ds * gpudl__to_f32(qr[d]);
                g2[k] += p * gpudl__to_f32(dyb[t * C + d]);
            } else {
                g1[k] += ds * gpudl__to_f32(kr[d]);
            }
        }
    }
    T *out = dqkv + (b * Tn + i) * 3 * C + h * HS;
#pragma unroll
    for (int k = 0; k < GPUDL__FUSED_KD; k++) {
        int64_t d = lane + 32 * k;
        if (d >= HS) continue;
        if (keys) { out[C + d] = gpudl__from_f32<T>(g1[k]); out[2 * C + d] = gpudl__from_f32<T>(g2[k]); }
        else out[d] = gpudl__from_f32<T>(g1[k]);
    }
}

extern "C" {

GPUDL__KFN int gpudl_k_attn_fused_fwd(void *stream, void *y, float *lse, const void *qkv, int dtype, int64_t B, int64_t T, int64_t NH,
                           int64_t HS) {
    if (HS > GPUDL__FUSED_MAX_HS) return (int)cudaErrorInvalidValue;
    if (B * NH * T == 0) return (int)cudaGetLastError();
    GPUDL__DISPATCH(dtype, E, (gpudl_attn_fused_fwd_kernel<E><<<gpudl__warp_rows_blocks(B * NH * T), 256, 0, (cudaStream_t)stream>>>(
        (E *)y, lse, (const E *)qkv, B, T, NH, HS, 1.0f / sqrtf((float)HS))));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_attn_fused_bwd(void *stream, void *dqkv, const void *dy, const void *qkv, const void *y, const float *lse, int dtype,
                           int64_t B, int64_t T, int64_t NH, int64_t HS, float *scratch) {
    unsigned nb = gpudl__warp_rows_blocks(B * NH * T);
    float scale = 1.0f / sqrtf((float)HS);
    if (HS > GPUDL__FUSED_MAX_HS) return (int)cudaErrorInvalidValue;
    if (B * NH * T == 0) return (int)cudaGetLastError();
    GPUDL__DISPATCH(dtype, E, (gpudl_attn_fused_d_kernel<E><<<nb, 256, 0, (cudaStream_t)stream>>>(scratch, (const E *)dy,
        (const E *)y, B, T, NH, HS)));
    GPUDL__DISPATCH(dtype, E, (gpudl_attn_fused_bwd_kernel<E><<<nb, 256, 0, (cudaStream_t)stream>>>((E *)dqkv, (const E *)dy,
        (const E *)qkv, lse, scratch, B, T, NH, HS, scale, 0)));
    GPUDL__DISPATCH(dtype, E, (gpudl_attn_fused_bwd_kernel<E><<<nb, 256, 0, (cudaStream_t)stream>>>((E *)dqkv, (const E *)dy,
        (const E *)qkv, lse, scratch, B, T, NH, HS, scale, 1)));
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>model ----------------------------------------------------------------- */
/* From the arith section: gpudl__block_reduce; from the loss section: gpudl__label_at. */

GPUDL__KSTATIC __global__ void gpudl_count_correct_kernel(float *count, const int32_t *pred, const void *labels, int ldt, int64_t n) {
    float c = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) c += pred[i] == gpudl__label_at(labels, ldt, i) ? 1.0f : 0.0f;
    c = gpudl__block_reduce(GPUDL_K_SUM, c);
    if (threadIdx.x == 0) *count += c;
}

/* A ReLU, then max or average pooling with windows that do not overlap,
   backward in one pass (the model's): the pool's backward as
   gpudl_pool_bwd_cells_kernel computes it (the pool section), rounded to T
   as the pool's dx would be, times ReLU's derivative at the ReLU's output x
   (the pool's input), as the ReLU's backward would: one kernel, the pool's
   dx never stored. dx is the ReLU's input gradient. */
template <typename T>
GPUDL__KSTATIC __global__ void gpudl_pool_relu_bwd_kernel(int kind, T *dx, const void *dy, const void *x, int dt, int64_t NC, int64_t H,
                                           int64_t W, int64_t Ho, int64_t Wo, int64_t Hc, int64_t Wc, int64_t kh, int64_t kw,
                                           int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    GPUDL__GRID_STRIDE(i, NC * Hc * Wc) {
        int64_t p = i / (Hc * Wc), oh = (i / Wc) % Hc, ow = i % Wc, arg = -1, h, w;
        bool win = oh < Ho && ow < Wo;
        float g = 0.0f;
        if (win) {
            g = gpudl__elem_get(dy, dt, p * Ho * Wo + oh * Wo + ow);
            if (kind == GPUDL_POOL_MAX) gpudl__pool_window(kind, x, dt, p * H * W, H, W, oh, ow, kh, kw, sh, sw, ph, pw, &arg);
            else g /= (float)(kh * kw);
        }
        for (h = oh * sh - ph; h < (oh + 1) * sh - ph; h++) {
            if (h < 0 || h >= H) continue;
            for (w = ow * sw - pw; w < (ow + 1) * sw - pw; w++) {
                float v = 0.0f;
                bool in = win && h - (oh * sh - ph) < kh && w - (ow * sw - pw) < kw;
                if (w < 0 || w >= W) continue;
                if (in && (kind == GPUDL_POOL_AVG || h * W + w == arg)) v += g;
                v = gpudl__relu_bwd_f(gpudl__to_f32(gpudl__from_f32<T>(v)), gpudl__elem_get(x, dt, p * H * W + h * W + w));
                dx[p * H * W + h * W + w] = gpudl__from_f32<T>(v);
            }
        }
    }
}

extern "C" {

GPUDL__KFN int gpudl_k_pool_relu_bwd(void *stream, int kind, void *dx, const void *dy, const void *x, int dtype, int64_t NC, int64_t H,
                          int64_t W, int64_t Ho, int64_t Wo, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                          int64_t pw) {
    int64_t Hc = (H - 1 + ph) / sh + 1, Wc = (W - 1 + pw) / sw + 1;   /* the cells that cover the plane */
    if (sh < kh || sw < kw) return (int)cudaErrorInvalidValue;       /* overlapping windows: not here */
    GPUDL__DISPATCH(dtype, T, (gpudl_pool_relu_bwd_kernel<T><<<GPUDL__GRID(NC * Hc * Wc)>>>(kind, (T *)dx, dy, x, dtype, NC, H,
                                                                                           W, Ho, Wo, Hc, Wc, kh, kw, sh, sw,
                                                                                           ph, pw)));
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_count_correct(void *stream, float *count, const int32_t *pred, const void *labels, int label_dtype, int64_t n) {
    gpudl_count_correct_kernel<<<1, 1024, 0, (cudaStream_t)stream>>>(count, pred, labels, label_dtype, n);
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>optim ----------------------------------------------------------------- */
/* From the arith section: gpudl__block_reduce, GPUDL__REDUCE_BLOCKS. */

/* w16: NULL, or the 16-bit copy of the weights (dtype dt16), written in
   the same pass (mixed precision: no separate cast kernel per step). */
GPUDL__KSTATIC __global__ void gpudl_optim_kernel(gpudl_optim_hp hp, float *w, const float *g, float *m, float *v, int64_t n, const float *gscale,
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

/* The update of gpudl_model_step: the one launch of a step that changes
   state, so a step whose launches fail leaves the model as it was.
   st: NULL, or the scaler's state: the whole update is skipped when the
   check (gpudl_nonfinite_kernel) found a NaN/Inf; the gradients are
   unscaled as they are read (FP16: rounded to FP16 first, as storage
   would), never in place; and the last block to finish runs the scaler's
   update (d), counting finished blocks in st->pad_ (0 between steps): the
   blocks read found_inf and the scale before they count themselves done.
   guard: NULL, or the context's bad-input word: guard[0] set by a loss
   that met a label outside [0, K) or an embedding that met an id outside
   [0, V) since the last update (the batch is bad: this update is
   skipped, weights, moments, the 16-bit copy and the scaler's state stay
   as they were), guard[1] the last-block ticket when there is no st. The
   last block clears guard[0] and, for a skipped update, adds 1 to
   *skipped (pinned host memory: the host takes the step back from the
   model's count at its next wait). seen: NULL, or pinned host memory the
   last block also writes st's new state into (the host's view of the
   scaler, without a copy launched after the update). */
GPUDL__KSTATIC __global__ void gpudl_optim_step_kernel(gpudl_optim_hp hp, float *w, const float *g, float *m, float *v, int64_t n,
                                        const float *gscale, gpudl_scaler_state *st, int fp16, gpudl_scaler_desc d,
                                        uint16_t *w16, int dt16, int32_t *guard, int32_t *skipped, gpudl_scaler_state *seen) {
    float sc = gscale ? *gscale : 1.0f, inv = st ? 1.0f / st->scale : 1.0f;
    int bad = guard ? guard[0] : 0, skip = (st ? st->found_inf : 0) | bad;
    if (!skip) {
        GPUDL__GRID_STRIDE(i, n) {
            float mi = m ? m[i] : 0.0f, vi = v ? v[i] : 0.0f, wi = w[i], gi = g[i];
            if (st) { int finite; gi = gpudl__unscale_grad(gi, inv, fp16, &finite); }
            gpudl_optim_update(&hp, &wi, gi * sc, &mi, &vi);
            w[i] = wi;
            if (m) m[i] = mi;
            if (v) v[i] = vi;
            if (w16) w16[i] = dt16 == GPUDL_F16 ? gpudl_f32_to_f16(wi) : gpudl_f32_to_bf16(wi);
        }
    }
    if (!st && !guard) return;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        /* the last block: every other one has read st and guard */
        if (atomicAdd(st ? (unsigned *)&st->pad_ : (unsigned *)&guard[1], 1u) == gridDim.x - 1) {
            if (st) {
                gpudl_scaler_state s = *st;
                s.pad_ = 0;
                if (!bad) gpudl_scaler_update(&s, &d);
                else { s.found_inf = 0; s.first_bad = 0x7fffffff; }   /* a bad batch: the scaler as it was */
                *st = s;
                if (seen) { *seen = s; __threadfence_system(); }
            }
            if (guard) {
                guard[1] = 0;
                guard[0] = 0;
                if (bad && skipped) *skipped += 1;
            }
        }
    }
}

/* st: NULL, or the scaler's state: the sum of the unscaled gradients' squares (see gpudl_optim_step_kernel) */
GPUDL__KSTATIC __global__ void gpudl_sumsq_partial_kernel(const float *g, int64_t n, float *partial, const gpudl_scaler_state *st, int fp16) {
    float acc = 0.0f, inv = st ? 1.0f / st->scale : 1.0f;
    GPUDL__GRID_STRIDE(i, n) {
        float gi = g[i];
        if (st) { int finite; gi = gpudl__unscale_grad(gi, inv, fp16, &finite); }
        acc += gi * gi;
    }
    acc = gpudl__block_reduce(GPUDL_K_SUM, acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

GPUDL__KSTATIC __global__ void gpudl_clip_final_kernel(float *scale, const float *partial, int nparts, float max_norm) {
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

GPUDL__KFN int gpudl_k_optim(void *stream, gpudl_optim_hp hp, float *w, const float *g, float *m, float *v, int64_t n, const float *gscale,
                  const int32_t *skip, void *w16, int dt16) {
    gpudl_optim_kernel<<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(hp, w, g, m, v, n, gscale, skip,
                                                                                    (uint16_t *)w16, dt16);
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_optim_step(void *stream, gpudl_optim_hp hp, float *w, const float *g, float *m, float *v, int64_t n,
                       const float *gscale, gpudl_scaler_state *st, int fp16, gpudl_scaler_desc d, void *w16, int dt16,
                       int32_t *guard, int32_t *skipped, gpudl_scaler_state *seen) {
    gpudl_optim_step_kernel<<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(hp, w, g, m, v, n, gscale, st, fp16, d,
                                                                                         (uint16_t *)w16, dt16, guard, skipped,
                                                                                         seen);
    return (int)cudaGetLastError();
}

/* The update's kernel, for the graph node that gpudl_model_train_step gives each replay's hyper-parameters. */
GPUDL__KFN const void *gpudl_k_optim_step_fn(void) { return (const void *)gpudl_optim_step_kernel; }

GPUDL__KFN int gpudl_k_clip_scale(void *stream, float *scale, const float *g, int64_t n, float max_norm, float *scratch,
                       const gpudl_scaler_state *st, int fp16) {
    unsigned nb = gpudl__blocks(n);
    if (nb > GPUDL__REDUCE_BLOCKS) nb = GPUDL__REDUCE_BLOCKS;
    gpudl_sumsq_partial_kernel<<<nb, GPUDL__THREADS, 0, (cudaStream_t)stream>>>(g, n, scratch, st, fp16);
    gpudl_clip_final_kernel<<<1, 1024, 0, (cudaStream_t)stream>>>(scale, scratch, (int)nb, max_norm);
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>amp ------------------------------------------------------------------- */

GPUDL__KSTATIC __global__ void gpudl_round16_kernel(float *x, int64_t n, int bf16) {
    GPUDL__GRID_STRIDE(i, n) x[i] = bf16 ? gpudl_bf16_to_f32(gpudl_f32_to_bf16(x[i])) : gpudl_f16_to_f32(gpudl_f32_to_f16(x[i]));
}

/* One pass over the flat gradients: unscale, and flag the first non-finite
   value (atomicMin keeps the lowest index whatever the block order). */
GPUDL__KSTATIC __global__ void gpudl_unscale_kernel(float *g, int64_t n, gpudl_scaler_state *st, int fp16) {
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

/* The non-finite check of a step: reads the gradients, flags the first
   non-finite one (FP16: after rounding to FP16); changes nothing else. */
GPUDL__KSTATIC __global__ void gpudl_nonfinite_kernel(const float *g, int64_t n, gpudl_scaler_state *st, int fp16) {
    int bad = 0x7fffffff;
    GPUDL__GRID_STRIDE(i, n) {
        int finite;
        (void)gpudl__unscale_grad(g[i], 1.0f, fp16, &finite);
        if (!finite && i < bad) bad = (int)i;
    }
    if (bad != 0x7fffffff) {
        atomicMin(&st->first_bad, bad);
        st->found_inf = 1;
    }
}

/* A failed step's check is forgotten: no flag, no first index. */
GPUDL__KSTATIC __global__ void gpudl_scaler_clear_kernel(gpudl_scaler_state *st) {
    st->found_inf = 0;
    st->first_bad = 0x7fffffff;
    st->pad_ = 0;
}

GPUDL__KSTATIC __global__ void gpudl_scaler_update_kernel(gpudl_scaler_state *st, gpudl_scaler_desc d) {
    gpudl_scaler_state s = *st;
    gpudl_scaler_update(&s, &d);
    *st = s;
}

extern "C" {

GPUDL__KFN int gpudl_k_round16(void *stream, float *x, int64_t n, int bf16) {
    gpudl_round16_kernel<<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(x, n, bf16);
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_unscale(void *stream, float *g, int64_t n, gpudl_scaler_state *st, int fp16) {
    gpudl_unscale_kernel<<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(g, n, st, fp16);
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_nonfinite(void *stream, const float *g, int64_t n, gpudl_scaler_state *st, int fp16) {
    gpudl_nonfinite_kernel<<<gpudl__blocks(n), GPUDL__THREADS, 0, (cudaStream_t)stream>>>(g, n, st, fp16);
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_scaler_clear(void *stream, gpudl_scaler_state *st) {
    gpudl_scaler_clear_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(st);
    return (int)cudaGetLastError();
}

GPUDL__KFN int gpudl_k_scaler_update(void *stream, gpudl_scaler_state *st, gpudl_scaler_desc d) {
    gpudl_scaler_update_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(st, d);
    return (int)cudaGetLastError();
}

} /* extern "C" */

/* >>data ------------------------------------------------------------------ */

/* Rows perm[start .. start + count) of images (sample floats each) into
   xb as T (F32, or F16 / BF16 rounded once, as gpudl_k_cast rounds), their
   labels into yb. Samples of a multiple of V floats (MNIST's 784) with both
   arrays 16-byte aligned move V at a time: 16-byte stores (four floats, or
   eight 16-bit values read as two float4), in a fraction of the
   instructions. */
template <int V, typename T> struct gpudl__gather_move {
    static __device__ __forceinline__ void run(T *dst, const float *src) {
        float f[V];
        gpudl__vload<V, float>(f, src);
        gpudl__vstore<V, T>(dst, f);
    }
};
template <typename T> struct gpudl__gather_move<1, T> {
    static __device__ __forceinline__ void run(T *dst, const float *src) { *dst = gpudl__from_f32<T>(*src); }
};

template <typename T, typename I, int V>
__device__ __forceinline__ void gpudl__gather_rows(T *xb, int32_t *yb, const float *images, const int32_t *labels,
                                                   const int32_t *perm, I start, I count, I sample) {
    I sv = sample / V;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < count * sv; i += (I)gridDim.x * blockDim.x) {
        I r = i / sv, col = i - r * sv;
        int64_t k = perm[start + r];   /* the dataset may pass 2^31 floats: its offsets stay 64-bit */
        gpudl__gather_move<V, T>::run(xb + (int64_t)i * V, images + (k * (int64_t)sv + col) * V);
        if (col == 0) yb[r] = labels[k];
    }
}

template <typename T>
GPUDL__KSTATIC __global__ void gpudl_gather_kernel(T *xb, int32_t *yb, const float *images, const int32_t *labels, const int32_t *perm,
                                    int64_t start, int64_t count, int64_t sample) {
    const int V = sizeof(T) == 4 ? 4 : 8;   /* 16 bytes stored */
    bool vec = sample % V == 0 && gpudl__aligned16(xb) && gpudl__aligned16(images);
    if (count * sample <= INT32_MAX && start + count <= INT32_MAX) {
        if (vec) gpudl__gather_rows<T, uint32_t, V>(xb, yb, images, labels, perm, (uint32_t)start, (uint32_t)count, (uint32_t)sample);
        else gpudl__gather_rows<T, uint32_t, 1>(xb, yb, images, labels, perm, (uint32_t)start, (uint32_t)count, (uint32_t)sample);
    } else {
        if (vec) gpudl__gather_rows<T, int64_t, V>(xb, yb, images, labels, perm, start, count, sample);
        else gpudl__gather_rows<T, int64_t, 1>(xb, yb, images, labels, perm, start, count, sample);
    }
}

extern "C" {

GPUDL__KFN int gpudl_k_gather(void *stream, void *xb, int xb_dtype, int32_t *yb, const float *images, const int32_t *labels,
                   const int32_t *perm, int64_t start, int64_t count, int64_t sample) {
    GPUDL__DISPATCH(xb_dtype, T, {
        const int64_t V = sizeof(T) == 4 ? 4 : 8;
        gpudl_gather_kernel<T><<<gpudl__vblocks(sample % V ? count * sample : count * sample / V), GPUDL__THREADS, 0,
                                 (cudaStream_t)stream>>>((T *)xb, yb, images, labels, perm, start, count, sample);
    });
    return (int)cudaGetLastError();
}

} /* extern "C" */
