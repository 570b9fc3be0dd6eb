/* gpudl.h - v0.1.0 - deep learning on NVIDIA GPUs (and CPUs) in two files - MIT

   Do this:
       #define GPUDL_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the
   implementation. Every other file includes it plainly.

       #include ...
       #define GPUDL_IMPLEMENTATION
       #include "gpudl.h"

   The CUDA kernels live in the companion file gpudl_kernels.cu.

   BUILD
       GPU:  nvcc -O2 -o app app.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
       CPU:  cc -O2 -DGPUDL_NO_CUDA -o app app.c -lm
             (add -fopenmp for threads; -DGPUDL_CBLAS -lopenblas to route
              FP32 GEMM to a CBLAS)

   COMPILE OPTIONS (define before including the implementation)
       GPUDL_NO_CUDA        build the CPU backend only: no CUDA header or
                            library is needed, any C99 or C++ compiler works
       GPUDL_CBLAS          CPU FP32 GEMM through cblas_sgemm (link a CBLAS)
       GPUDL_NO_SIMD        CPU GEMM without the AVX2/AVX-512 micro-kernels
       GPUDL_STATIC         make every gpudl_ function static to this file
       GPUDL_MALLOC, GPUDL_REALLOC, GPUDL_FREE
                            host allocator (define all three or none)

   QUICK START
       gpudl_ctx *ctx;
       gpudl_tensor a, b, c;
       int64_t shape[2] = {512, 512};
       GPUDL_CHECK(gpudl_ctx_create(NULL, &ctx));          // GPU if usable, else CPU
       GPUDL_CHECK(gpudl_tensor_create(ctx, &a, GPUDL_F32, 2, shape));
       GPUDL_CHECK(gpudl_tensor_create(ctx, &b, GPUDL_F32, 2, shape));
       GPUDL_CHECK(gpudl_tensor_create(ctx, &c, GPUDL_F32, 2, shape));
       GPUDL_CHECK(gpudl_tensor_normal(ctx, &a, 0.0f, 1.0f));
       GPUDL_CHECK(gpudl_tensor_normal(ctx, &b, 0.0f, 1.0f));
       GPUDL_CHECK(gpudl_matmul(ctx, &c, &a, &b, 0, 0, 1.0f, 0.0f));  // c = a @ b
       gpudl_tensor_free(ctx, &a); ...; gpudl_ctx_destroy(ctx);

   MANUAL
       1. Status and errors. Every fallible function returns gpudl_status
          (GPUDL_OK == 0, errors are negative). The context keeps the last
          error as text: file:line, the failing call, and the library's own
          error name (cudaGetErrorName, cublasGetStatusName, ...). Read it
          with gpudl_ctx_last_error(). The library never calls exit() or
          abort(); GPUDL_CHECK is a convenience for examples and tests.
       2. Context. Owns the device choice, the CUDA stream, the cuBLAS and
          cuDNN handles, the GEMM workspace, the RNG state and the logger.
          No globals: two contexts are independent.
       3. Tensors. Plain structs, row-major and contiguous, up to 4 dims.
          A tensor lives on the host (GPUDL_DEVICE_CPU) or on the GPU
          (GPUDL_DEVICE_CUDA). An op runs where its operands live: host
          tensors on the CPU backend, device tensors on the CUDA backend;
          mixing them is an error that names both sides.
       4. Asynchrony. Device ops are queued on the context's stream and
          return at once. Anything that hands a number to the host
          (gpudl_tensor_copy to a host tensor, gpudl_tensor_item) waits.
       5. Precision. FP32 GEMMs follow the context's math mode (strict FP32
          by default, or TF32 on tensor cores); F16 and BF16 GEMMs always
          accumulate in FP32. The CPU backend computes F16/BF16 through
          FP32 and ignores TF32 (it is always at least as accurate).

   LICENSE
       MIT, see the end of this file.
*/
#ifndef GPUDL_H
#define GPUDL_H

/* The implementation needs POSIX clocks and files; ask for them when this is
   the first include of the translation unit (as it should be). */
#if defined(GPUDL_IMPLEMENTATION) && !defined(_WIN32) && !defined(__cplusplus) && !defined(_POSIX_C_SOURCE) \
    && !defined(_GNU_SOURCE) && !defined(_XOPEN_SOURCE) && !defined(_DEFAULT_SOURCE)
#  define _POSIX_C_SOURCE 200809L
#endif

#define GPUDL_VERSION_MAJOR 0
#define GPUDL_VERSION_MINOR 1
#define GPUDL_VERSION_PATCH 0
#define GPUDL_VERSION_STRING "0.1.0"

#ifndef GPUDL_API
#  if defined(GPUDL_STATIC) && defined(__GNUC__)
#    define GPUDL_API static __attribute__((unused))
#  elif defined(GPUDL_STATIC)
#    define GPUDL_API static
#  else
#    define GPUDL_API extern
#  endif
#endif

/* Per-element math is written once and compiled for both the host and the
   device: GPUDL_HD is __host__ __device__ under nvcc and nothing elsewhere. */
#if defined(__CUDACC__)
#  define GPUDL_HD __host__ __device__
#else
#  define GPUDL_HD
#endif

#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__ && !defined(__CUDA_ARCH__)
#  error "gpudl: do not build with -ffast-math / -ffinite-math-only: gpudl checks for NaN and Inf (loss scaling, tests)."
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* >>status ---------------------------------------------------------------- */

typedef enum gpudl_status {
    GPUDL_OK                  =   0,
    GPUDL_ERR_INVALID_ARG     =  -1,  /* NULL pointer, bad enum, bad value      */
    GPUDL_ERR_SHAPE           =  -2,  /* shapes do not fit together            */
    GPUDL_ERR_DTYPE           =  -3,  /* dtype not supported or mismatched     */
    GPUDL_ERR_DEVICE          =  -4,  /* tensor on the wrong device            */
    GPUDL_ERR_OOM             =  -5,  /* host or device allocation failed      */
    GPUDL_ERR_NO_DEVICE       =  -6,  /* CUDA asked for, no usable GPU/driver  */
    GPUDL_ERR_CUDA            =  -7,  /* a CUDA runtime call failed            */
    GPUDL_ERR_CUDA_FATAL      =  -8,  /* sticky CUDA error: restart the process*/
    GPUDL_ERR_CUBLAS          =  -9,  /* a cuBLAS / cuBLASLt call failed       */
    GPUDL_ERR_CUDNN           = -10,  /* a cuDNN call failed                   */
    GPUDL_ERR_IO              = -11,  /* open/read/write/rename failed         */
    GPUDL_ERR_FORMAT          = -12,  /* a file is malformed                   */
    GPUDL_ERR_NONFINITE       = -13,  /* NaN or Inf where a number was needed  */
    GPUDL_ERR_UNSUPPORTED     = -14   /* not built in, or not on this device   */
} gpudl_status;

/* A short, constant description of a status ("invalid argument", ...).
   Never NULL; unknown values give "unknown gpudl status". */
GPUDL_API const char *gpudl_status_string(gpudl_status s);

/* >>types ----------------------------------------------------------------- */

typedef enum gpudl_dtype {
    GPUDL_F32  = 0,
    GPUDL_F16  = 1,
    GPUDL_BF16 = 2,
    GPUDL_U8   = 3,
    GPUDL_I32  = 4,
    GPUDL_DTYPE_COUNT
} gpudl_dtype;

typedef enum gpudl_device {
    GPUDL_DEVICE_AUTO = 0,   /* contexts only: CUDA when usable, else CPU */
    GPUDL_DEVICE_CPU  = 1,
    GPUDL_DEVICE_CUDA = 2
} gpudl_device;

typedef enum gpudl_math_mode {
    GPUDL_MATH_DEFAULT = 0,  /* = GPUDL_MATH_FP32 */
    GPUDL_MATH_FP32    = 1,  /* strict IEEE FP32 GEMMs                      */
    GPUDL_MATH_TF32    = 2   /* FP32 GEMMs on tensor cores with TF32 inputs */
} gpudl_math_mode;

typedef enum gpudl_log_level {
    GPUDL_LOG_ERROR = 1,
    GPUDL_LOG_WARN  = 2,
    GPUDL_LOG_INFO  = 3,
    GPUDL_LOG_DEBUG = 4
} gpudl_log_level;

/* Logger callback. The library is silent unless you set one;
   gpudl_log_stderr is a ready-made one. */
typedef void (*gpudl_log_fn)(void *user, gpudl_log_level level, const char *msg);

GPUDL_API void gpudl_log_stderr(void *user, gpudl_log_level level, const char *msg);

typedef struct gpudl_ctx gpudl_ctx;   /* opaque */

#define GPUDL_MAX_DIMS 4

/* A tensor: row-major, contiguous, up to 4 dims. A zeroed struct is an
   empty tensor that gpudl_tensor_free accepts. Views (gpudl_tensor_reshape,
   gpudl_tensor_wrap) do not own their data; freeing a view frees nothing. */
typedef struct gpudl_tensor {
    void        *data;
    int          ndim;
    int64_t      shape[GPUDL_MAX_DIMS];
    gpudl_dtype  dtype;
    gpudl_device device;                /* GPUDL_DEVICE_CPU or _CUDA */
    int          owner;                 /* 1: gpudl_tensor_free releases data */
} gpudl_tensor;

/* >>context --------------------------------------------------------------- */

/* Context description: zero every field you do not care about.
   device         GPUDL_DEVICE_AUTO (0): CUDA when usable, else the CPU
                  (the reason is logged once at INFO level).
   cuda_device    CUDA ordinal; 0 = the first GPU.
   math_mode      0 = GPUDL_MATH_FP32 (strict).
   seed           RNG seed; 0 = 0x5EED.
   num_threads    CPU threads for OpenMP builds; 0 = OpenMP's default.
   workspace_bytes  cuBLAS workspace; 0 = 32 MiB.
   stream         a cudaStream_t to run on; NULL = the context makes its own.
   sync_debug     1 = synchronise after every launch, so an asynchronous
                  fault is reported by the op that caused it (slow).
   log, log_user  logger; NULL = silent. */
typedef struct gpudl_ctx_desc {
    gpudl_device    device;
    int             cuda_device;
    gpudl_math_mode math_mode;
    uint64_t        seed;
    int             num_threads;
    size_t          workspace_bytes;
    void           *stream;
    int             sync_debug;
    gpudl_log_fn    log;
    void           *log_user;
} gpudl_ctx_desc;

/* Creates a context. desc may be NULL (all defaults). On failure *out is
   NULL and the status says why; for an explicit GPUDL_DEVICE_CUDA request
   on a machine without a usable GPU the status is GPUDL_ERR_NO_DEVICE and
   the logged message tells "no driver", "driver too old" and "no device"
   apart. (Without a context, the message goes to desc->log.) */
GPUDL_API gpudl_status gpudl_ctx_create(const gpudl_ctx_desc *desc, gpudl_ctx **out);

/* Waits for queued work, then releases everything the context owns. NULL is fine. */
GPUDL_API void gpudl_ctx_destroy(gpudl_ctx *ctx);

/* The device ops run on by default: GPUDL_DEVICE_CPU or GPUDL_DEVICE_CUDA. */
GPUDL_API gpudl_device gpudl_ctx_device(const gpudl_ctx *ctx);

/* The last error recorded in this context ("" if none): file:line, the
   failing call and the library's error name. Valid until the next call. */
GPUDL_API const char *gpudl_ctx_last_error(const gpudl_ctx *ctx);

/* Waits until every op queued on the context has finished. */
GPUDL_API gpudl_status gpudl_ctx_sync(gpudl_ctx *ctx);

/* Sets the FP32 GEMM math mode (GPUDL_MATH_FP32 or GPUDL_MATH_TF32). */
GPUDL_API gpudl_status gpudl_ctx_set_math_mode(gpudl_ctx *ctx, gpudl_math_mode mode);
GPUDL_API gpudl_math_mode gpudl_ctx_math_mode(const gpudl_ctx *ctx);

/* Resets the context's RNG. Random fills draw from a counter-based
   generator (seed, offset): the same seed and call sequence give the same
   numbers on the CPU and on the GPU. */
GPUDL_API void gpudl_ctx_set_seed(gpudl_ctx *ctx, uint64_t seed);

/* The cudaStream_t the context runs on (NULL on the CPU). */
GPUDL_API void *gpudl_ctx_stream(const gpudl_ctx *ctx);

/* >>tensor ---------------------------------------------------------------- */

/* Bytes per element of a dtype (0 for an invalid dtype). */
GPUDL_API size_t gpudl_dtype_size(gpudl_dtype dtype);
/* "f32", "f16", "bf16", "u8", "i32" (or "?"). */
GPUDL_API const char *gpudl_dtype_name(gpudl_dtype dtype);

/* Number of elements and bytes of a tensor. */
GPUDL_API int64_t gpudl_tensor_numel(const gpudl_tensor *t);
GPUDL_API size_t  gpudl_tensor_bytes(const gpudl_tensor *t);

/* Allocates an uninitialised tensor on the context's device. ndim is 1..4,
   every dim >= 1. On failure *t is zeroed. */
GPUDL_API gpudl_status gpudl_tensor_create(gpudl_ctx *ctx, gpudl_tensor *t, gpudl_dtype dtype,
                                           int ndim, const int64_t *shape);
/* The same on an explicit device (GPUDL_DEVICE_CPU always works). */
GPUDL_API gpudl_status gpudl_tensor_create_on(gpudl_ctx *ctx, gpudl_tensor *t, gpudl_device device,
                                              gpudl_dtype dtype, int ndim, const int64_t *shape);
/* Frees an owning tensor and zeroes the struct. A view or a zeroed tensor
   is only zeroed, so a second free is harmless. */
GPUDL_API void gpudl_tensor_free(gpudl_ctx *ctx, gpudl_tensor *t);

/* Wraps memory you own (host or device) as a non-owning tensor. */
GPUDL_API gpudl_status gpudl_tensor_wrap(gpudl_tensor *t, void *data, gpudl_device device,
                                         gpudl_dtype dtype, int ndim, const int64_t *shape);
/* A view of src with another shape and the same number of elements; one
   dim may be -1 (inferred). view does not own the data. */
GPUDL_API gpudl_status gpudl_tensor_reshape(gpudl_tensor *view, const gpudl_tensor *src,
                                            int ndim, const int64_t *shape);

/* Sets every element to value (converted to the tensor's dtype). */
GPUDL_API gpudl_status gpudl_tensor_fill(gpudl_ctx *ctx, gpudl_tensor *t, float value);
/* Uniform in [lo, hi) / normal(mean, std), from the context's RNG.
   F32, F16 and BF16 tensors. */
GPUDL_API gpudl_status gpudl_tensor_uniform(gpudl_ctx *ctx, gpudl_tensor *t, float lo, float hi);
GPUDL_API gpudl_status gpudl_tensor_normal(gpudl_ctx *ctx, gpudl_tensor *t, float mean, float std);

/* Copies src into dst: same dtype and element count (shapes may differ),
   any devices (host-host, host-device, device-host, device-device).
   Returns after the data is usable on the host when dst is a host tensor. */
GPUDL_API gpudl_status gpudl_tensor_copy(gpudl_ctx *ctx, gpudl_tensor *dst, const gpudl_tensor *src);
/* Copies between a tensor and plain host memory of gpudl_tensor_bytes(t) bytes. */
GPUDL_API gpudl_status gpudl_tensor_upload(gpudl_ctx *ctx, gpudl_tensor *t, const void *host, size_t bytes);
GPUDL_API gpudl_status gpudl_tensor_download(gpudl_ctx *ctx, const gpudl_tensor *t, void *host, size_t bytes);
/* Converts between F32, F16 and BF16 (round to nearest even), same device,
   same element count. Same dtype is a copy. */
GPUDL_API gpudl_status gpudl_tensor_cast(gpudl_ctx *ctx, gpudl_tensor *dst, const gpudl_tensor *src);
/* Reads element i as a float (waits for the device). */
GPUDL_API gpudl_status gpudl_tensor_item(gpudl_ctx *ctx, const gpudl_tensor *t, int64_t i, float *value);
/* Writes "f32[2,3] cuda" into buf. Returns buf. */
GPUDL_API const char *gpudl_tensor_describe(const gpudl_tensor *t, char *buf, size_t size);

/* >>ops ------------------------------------------------------------------- */

/* C = alpha * op(A) @ op(B) + beta * C, op(X) = X or X^T (trans_x != 0).
   2-D:      A (M,K) [or (K,M) transposed], B (K,N) [or (N,K)], C (M,N).
   Batched:  3-D C (L,M,N); A and B are (L,..) or 2-D, a 2-D operand is
             shared by every batch entry.
   dtypes:   A, B both F32, C F32 (math mode applies), or A, B both F16 /
             both BF16 with C of the same dtype or F32; FP32 accumulation.
   beta == 0 means C is not read (NaN in C does not leak). */
GPUDL_API gpudl_status gpudl_matmul(gpudl_ctx *ctx, gpudl_tensor *C, const gpudl_tensor *A,
                                    const gpudl_tensor *B, int trans_a, int trans_b,
                                    float alpha, float beta);

/* Elementwise, same shapes and dtypes (F32, F16, BF16), out may alias an input.
   out = a + b;   out = a * b;   x = alpha * x;   y = alpha * x + y. */
GPUDL_API gpudl_status gpudl_add(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *a, const gpudl_tensor *b);
GPUDL_API gpudl_status gpudl_mul(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *a, const gpudl_tensor *b);
GPUDL_API gpudl_status gpudl_scale(gpudl_ctx *ctx, gpudl_tensor *x, float alpha);
GPUDL_API gpudl_status gpudl_axpy(gpudl_ctx *ctx, gpudl_tensor *y, float alpha, const gpudl_tensor *x);

/* Reductions over every element of x (F32, F16, BF16) into out, an F32
   tensor of one element on x's device (nothing waits; read it with
   gpudl_tensor_item). max propagates NaN. */
GPUDL_API gpudl_status gpudl_sum(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *x);
GPUDL_API gpudl_status gpudl_max(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *x);
/* out[r] = index of the largest x[r, :] (first on ties, NaN counts as largest).
   x (R,C) F32/F16/BF16 (higher dims are flattened into R), out (R) I32. */
GPUDL_API gpudl_status gpudl_argmax_rows(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *x);

/* >>timing ---------------------------------------------------------------- */

/* A timer: CUDA events on a CUDA context, a monotonic clock on the CPU. */
typedef struct gpudl_timer {
    gpudl_ctx *ctx;
    void      *ev[2];      /* cudaEvent_t start, stop (CUDA contexts) */
    double     t[2];       /* monotonic seconds (CPU contexts)         */
} gpudl_timer;

GPUDL_API gpudl_status gpudl_timer_create(gpudl_ctx *ctx, gpudl_timer *timer);
GPUDL_API void         gpudl_timer_destroy(gpudl_timer *timer);
GPUDL_API gpudl_status gpudl_timer_start(gpudl_timer *timer);
GPUDL_API gpudl_status gpudl_timer_stop(gpudl_timer *timer);
/* Milliseconds between start and stop; waits for the stop event. */
GPUDL_API gpudl_status gpudl_timer_elapsed_ms(gpudl_timer *timer, double *ms);
/* Monotonic wall clock in seconds (host). */
GPUDL_API double gpudl_now(void);

/* Benchmark description; zero = default.
   warmup       untimed calls first (0 = 3): module load, handle creation
                and clock ramp-up stay out of the numbers.
   reps         timed samples (0 = 20).
   min_sample_ms  each sample repeats the call until it lasts at least this
                long (0 = 1.0 ms), so launch-bound ops are timed fairly;
                the reported times are per call.
   flops, bytes per call, for GFLOP/s and GB/s (0 = not reported). */
typedef struct gpudl_bench_desc {
    int    warmup;
    int    reps;
    double min_sample_ms;
    double flops;
    double bytes;
} gpudl_bench_desc;

typedef struct gpudl_bench_result {
    double min_ms, median_ms, max_ms;   /* per call */
    int    reps, calls_per_sample;
    double gflops;                      /* flops / median, 0 if not given */
    double gbs;                         /* bytes / median, 0 if not given */
} gpudl_bench_result;

typedef gpudl_status (*gpudl_bench_fn)(gpudl_ctx *ctx, void *user);

/* Times fn on the context's device: warm-up, then reps samples. */
GPUDL_API gpudl_status gpudl_bench(gpudl_ctx *ctx, gpudl_bench_fn fn, void *user,
                                   const gpudl_bench_desc *desc, gpudl_bench_result *result);

/* Device information. On a CUDA context the GPU; on a CPU context the host.
   Peak figures are derived from clocks and unit counts (0 where unknown):
   treat them as leads, measure the real ceilings. */
typedef struct gpudl_device_info {
    gpudl_device device;
    char    name[256];
    int     sm_count;                 /* GPU multiprocessors / CPU threads */
    int     cc_major, cc_minor;       /* compute capability (GPU)          */
    size_t  mem_total, mem_free;      /* bytes (GPU)                       */
    int     clock_mhz, mem_clock_mhz, mem_bus_bits, l2_bytes;
    double  peak_fp32_tflops;         /* CUDA cores, FMA = 2 flops        */
    double  peak_tf32_tflops;         /* dense tensor cores               */
    double  peak_fp16_tflops;         /* dense tensor cores, FP32 accum.  */
    double  peak_mem_gbs;             /* DRAM bandwidth                   */
    int     cuda_runtime, cuda_driver, cublas_version, cudnn_version;
    char    archs[128];               /* architectures gpudl_kernels.cu was built for */
} gpudl_device_info;

GPUDL_API gpudl_status gpudl_device_info_get(gpudl_ctx *ctx, gpudl_device_info *info);

/* >>half ------------------------------------------------------------------ */
/* FP16 / BF16 <-> FP32, round to nearest even, Inf/NaN/subnormals kept.
   The same functions run on the host and inside the CUDA kernels. */

GPUDL_HD static inline uint32_t gpudl__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
GPUDL_HD static inline float gpudl__bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

GPUDL_HD static inline uint16_t gpudl_f32_to_f16(float f) {
    uint32_t x = gpudl__f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu, h, rem;
    if (ax >= 0x7f800000u)                     /* Inf, or NaN kept quiet */
        return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u | ((ax >> 13) & 0x3ffu) : 0x7c00u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);   /* >= 65520 rounds to Inf */
    if (ax < 0x38800000u) {                    /* below 2^-14: subnormal or zero */
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift, halfway;
        if (ax < 0x33000000u) return (uint16_t)sign;            /* below 2^-25 */
        shift = 126u - e; h = m >> shift; rem = m & ((1u << shift) - 1u); halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    ax -= 0x38000000u;                         /* rebias 127 -> 15 */
    h = ax >> 13; rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

GPUDL_HD static inline float gpudl_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return gpudl__bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return gpudl__bits_f32(sign);
        e = 113;                               /* normalise a subnormal */
        while (!(m & 0x400u)) { m <<= 1; e--; }
        return gpudl__bits_f32(sign | (e << 23) | ((m & 0x3ffu) << 13));
    }
    return gpudl__bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

GPUDL_HD static inline uint16_t gpudl_f32_to_bf16(float f) {
    uint32_t x = gpudl__f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

GPUDL_HD static inline float gpudl_bf16_to_f32(uint16_t b) { return gpudl__bits_f32((uint32_t)b << 16); }

/* max that propagates NaN: the rule of gpudl_max on both backends. */
GPUDL_HD static inline float gpudl_nanmax(float a, float b) { return (a != a || a > b) ? a : b; }

/* >>rng ------------------------------------------------------------------- */
/* Counter-based RNG: element i of a fill with (seed, offset) depends only on
   seed and offset + i, so the CPU and the GPU draw identical numbers. */

GPUDL_HD static inline uint64_t gpudl__mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 64 random bits for counter i of stream seed. */
GPUDL_HD static inline uint64_t gpudl_rng_bits(uint64_t seed, uint64_t i) {
    return gpudl__mix64(gpudl__mix64(seed) + (i + 1u) * 0x9e3779b97f4a7c15ull);
}

/* Uniform in [0, 1) with 24 random bits. */
GPUDL_HD static inline float gpudl_rng_uniform(uint64_t seed, uint64_t i) {
    return (float)(gpudl_rng_bits(seed, i) >> 40) * (1.0f / 16777216.0f);
}

/* Standard normal (Box-Muller on one 64-bit draw). */
GPUDL_HD static inline float gpudl_rng_normal(uint64_t seed, uint64_t i);

/* >>kernel-abi ------------------------------------------------------------ */
/* The launchers gpudl_kernels.cu exports. Each checks nothing about shapes
   (the header validates first), launches on the given stream and returns
   cudaGetLastError() as an int (0 = success). */
#ifndef GPUDL_NO_CUDA
typedef enum gpudl_k_binop { GPUDL_K_ADD = 0, GPUDL_K_MUL = 1 } gpudl_k_binop;
typedef enum gpudl_k_redop { GPUDL_K_SUM = 0, GPUDL_K_MAX = 1 } gpudl_k_redop;

int gpudl_k_probe(void *stream);
const char *gpudl_k_archs(void);
int gpudl_k_fill(void *stream, void *x, int dtype, int64_t n, float value);
int gpudl_k_random(void *stream, void *x, int dtype, int64_t n, uint64_t seed, uint64_t offset,
                   int normal, float a, float b);
int gpudl_k_cast(void *stream, void *dst, int dst_dtype, const void *src, int src_dtype, int64_t n);
int gpudl_k_binary(void *stream, int op, void *out, const void *a, const void *b, int dtype, int64_t n);
int gpudl_k_axpby(void *stream, void *y, float alpha, const void *x, float beta, int dtype, int64_t n);
/* scratch: at least gpudl_k_reduce_scratch() floats of device memory. */
int64_t gpudl_k_reduce_scratch(void);
int gpudl_k_reduce(void *stream, int op, float *out, const void *x, int dtype, int64_t n, float *scratch);
int gpudl_k_argmax_rows(void *stream, int32_t *out, const void *x, int dtype, int64_t rows, int64_t cols);
#endif

#ifdef __cplusplus
}
#endif

/* Definitions of the inline math that needs <math.h>. */
#include <math.h>
GPUDL_HD static inline float gpudl_rng_normal(uint64_t seed, uint64_t i) {
    uint64_t r = gpudl_rng_bits(seed, i);
    float u1 = ((float)(r >> 40) + 1.0f) * (1.0f / 16777216.0f);        /* (0, 1] */
    float u2 = (float)((r >> 16) & 0xffffffu) * (1.0f / 16777216.0f);   /* [0, 1) */
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795865f * u2);
}

/* For examples and tests only: the library itself never aborts. */
#include <stdio.h>
#include <stdlib.h>
#define GPUDL_CHECK(expr) do { gpudl_status gpudl_check_s_ = (expr); if (gpudl_check_s_ != GPUDL_OK) { \
    fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, gpudl_status_string(gpudl_check_s_)); \
    exit(1); } } while (0)

#endif /* GPUDL_H */

/* ========================================================================= */
/*                              IMPLEMENTATION                               */
/* ========================================================================= */
#ifdef GPUDL_IMPLEMENTATION
#ifndef GPUDL__IMPLEMENTED
#define GPUDL__IMPLEMENTED

/* >>config ---------------------------------------------------------------- */

#if defined(GPUDL_MALLOC) && defined(GPUDL_FREE) && defined(GPUDL_REALLOC)
/* user allocator */
#elif !defined(GPUDL_MALLOC) && !defined(GPUDL_FREE) && !defined(GPUDL_REALLOC)
#  define GPUDL_MALLOC(sz)     malloc(sz)
#  define GPUDL_REALLOC(p, sz) realloc(p, sz)
#  define GPUDL_FREE(p)        free(p)
#else
#  error "gpudl: define all of GPUDL_MALLOC, GPUDL_REALLOC and GPUDL_FREE, or none of them"
#endif

#ifdef GPUDL_STATIC
#  define GPUDL__DEF static
#else
#  define GPUDL__DEF
#endif

#include <stdarg.h>
#include <errno.h>
#include <time.h>
#if defined(_WIN32)
#  include <windows.h>
#endif
#ifdef _OPENMP
#  include <omp.h>
#  define GPUDL__OMP(x) _Pragma(#x)
#else
#  define GPUDL__OMP(x)
#endif
#ifdef GPUDL_CBLAS
#  include <cblas.h>
#endif

#ifndef GPUDL_NO_CUDA
#  include <cuda_runtime.h>
#  include <cublas_v2.h>
#  include <cublasLt.h>
#  include <cudnn.h>
#  if !defined(CUDART_VERSION) || CUDART_VERSION < 11000
#    error "gpudl needs CUDA >= 11.0 (cuda_runtime.h says older). Install a newer CUDA toolkit, or build the CPU backend with -DGPUDL_NO_CUDA."
#  endif
#  if !defined(CUDNN_MAJOR) || CUDNN_MAJOR < 8
#    error "gpudl needs cuDNN >= 8 (cudnn.h says older). Install cuDNN 8 or 9, or build the CPU backend with -DGPUDL_NO_CUDA."
#  endif
#endif

#if !defined(GPUDL_NO_SIMD) && defined(__GNUC__) && defined(__x86_64__) && !defined(__CUDACC__)
#  define GPUDL__X86_SIMD 1
#  include <immintrin.h>
#endif

#define GPUDL__MIN(a, b) ((a) < (b) ? (a) : (b))
#define GPUDL__MAX(a, b) ((a) > (b) ? (a) : (b))

/* >>errors ---------------------------------------------------------------- */

struct gpudl_ctx {
    gpudl_device    device;          /* CPU or CUDA */
    gpudl_math_mode math_mode;
    uint64_t        rng_seed, rng_offset;
    int             num_threads;
    int             sync_debug;
    gpudl_log_fn    log;
    void           *log_user;
    gpudl_status    fatal;           /* != OK: every later call returns it */
    char            last_error[1024];
#ifndef GPUDL_NO_CUDA
    int             cuda_device;
    cudaStream_t    stream;
    int             own_stream;
    cublasHandle_t  cublas;
    void           *workspace;       /* cuBLAS workspace (device) */
    size_t          workspace_bytes;
    float          *scratch;         /* reduction partials (device) */
#endif
};

GPUDL__DEF const char *gpudl_status_string(gpudl_status s) {
    switch (s) {
    case GPUDL_OK:              return "ok";
    case GPUDL_ERR_INVALID_ARG: return "invalid argument";
    case GPUDL_ERR_SHAPE:       return "shape mismatch";
    case GPUDL_ERR_DTYPE:       return "dtype not supported or mismatched";
    case GPUDL_ERR_DEVICE:      return "tensor on the wrong device";
    case GPUDL_ERR_OOM:         return "out of memory";
    case GPUDL_ERR_NO_DEVICE:   return "no usable CUDA device";
    case GPUDL_ERR_CUDA:        return "CUDA runtime error";
    case GPUDL_ERR_CUDA_FATAL:  return "fatal CUDA error (the CUDA context is corrupted; restart the process)";
    case GPUDL_ERR_CUBLAS:      return "cuBLAS error";
    case GPUDL_ERR_CUDNN:       return "cuDNN error";
    case GPUDL_ERR_IO:          return "I/O error";
    case GPUDL_ERR_FORMAT:      return "malformed file";
    case GPUDL_ERR_NONFINITE:   return "non-finite value";
    case GPUDL_ERR_UNSUPPORTED: return "unsupported";
    }
    return "unknown gpudl status";
}

GPUDL__DEF void gpudl_log_stderr(void *user, gpudl_log_level level, const char *msg) {
    static const char *names[] = {"", "error", "warning", "info", "debug"};
    (void)user;
    fprintf(stderr, "gpudl %s: %s\n", (level >= 1 && level <= 4) ? names[level] : "?", msg);
}

static void gpudl__logv(gpudl_log_fn log, void *user, gpudl_log_level level, const char *fmt, va_list ap) {
    char msg[1024];
    if (!log) return;
    vsnprintf(msg, sizeof msg, fmt, ap);
    log(user, level, msg);
}

static void gpudl__log(gpudl_ctx *ctx, gpudl_log_level level, const char *fmt, ...) {
    va_list ap;
    if (!ctx || !ctx->log) return;
    va_start(ap, fmt);
    gpudl__logv(ctx->log, ctx->log_user, level, fmt, ap);
    va_end(ap);
}

/* Records "file:line: message" as the context's last error, logs it, and
   returns status. Every error path of the library goes through here. */
static gpudl_status gpudl__fail(gpudl_ctx *ctx, gpudl_status status, const char *file, int line,
                                const char *fmt, ...) {
    va_list ap;
    const char *base;
    int n;
    if (!ctx) return status;
    base = strrchr(file, '/');
    base = base ? base + 1 : file;
    n = snprintf(ctx->last_error, sizeof ctx->last_error, "%s:%d: ", base, line);
    if (n < 0 || (size_t)n >= sizeof ctx->last_error) n = 0;
    va_start(ap, fmt);
    vsnprintf(ctx->last_error + n, sizeof ctx->last_error - (size_t)n, fmt, ap);
    va_end(ap);
    if (ctx->log) ctx->log(ctx->log_user, GPUDL_LOG_ERROR, ctx->last_error);
    return status;
}

#define GPUDL__ERR(ctx, status, ...) gpudl__fail((ctx), (status), __FILE__, __LINE__, __VA_ARGS__)
#define GPUDL__TRY(expr) do { gpudl_status gpudl__s_ = (expr); if (gpudl__s_ != GPUDL_OK) return gpudl__s_; } while (0)
/* Entry check of every public function that takes a context. */
#define GPUDL__ENTER(ctx) do { if (!(ctx)) return GPUDL_ERR_INVALID_ARG; \
    if ((ctx)->fatal != GPUDL_OK) return (ctx)->fatal; } while (0)

GPUDL__DEF const char *gpudl_ctx_last_error(const gpudl_ctx *ctx) {
    return ctx ? ctx->last_error : "no context (NULL)";
}

/* >>tensor-helpers -------------------------------------------------------- */

GPUDL__DEF size_t gpudl_dtype_size(gpudl_dtype dtype) {
    switch (dtype) {
    case GPUDL_F32: case GPUDL_I32: return 4;
    case GPUDL_F16: case GPUDL_BF16: return 2;
    case GPUDL_U8: return 1;
    default: return 0;
    }
}

GPUDL__DEF const char *gpudl_dtype_name(gpudl_dtype dtype) {
    static const char *names[] = {"f32", "f16", "bf16", "u8", "i32"};
    return ((unsigned)dtype < GPUDL_DTYPE_COUNT) ? names[dtype] : "?";
}

static const char *gpudl__device_name(gpudl_device d) {
    return d == GPUDL_DEVICE_CPU ? "cpu" : d == GPUDL_DEVICE_CUDA ? "cuda" : "auto";
}

GPUDL__DEF int64_t gpudl_tensor_numel(const gpudl_tensor *t) {
    int64_t n = 1;
    int i;
    if (!t || t->ndim < 1 || t->ndim > GPUDL_MAX_DIMS) return 0;
    for (i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

GPUDL__DEF size_t gpudl_tensor_bytes(const gpudl_tensor *t) {
    return t ? (size_t)gpudl_tensor_numel(t) * gpudl_dtype_size(t->dtype) : 0;
}

GPUDL__DEF const char *gpudl_tensor_describe(const gpudl_tensor *t, char *buf, size_t size) {
    size_t n = 0;
    int i;
    if (!buf || size == 0) return buf;
    buf[0] = 0;
    if (!t) { snprintf(buf, size, "(null tensor)"); return buf; }
    n += (size_t)snprintf(buf, size, "%s[", gpudl_dtype_name(t->dtype));
    for (i = 0; i < t->ndim && i < GPUDL_MAX_DIMS && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "", (long long)t->shape[i]);
    if (n < size) snprintf(buf + n, size - n, "] %s", gpudl__device_name(t->device));
    return buf;
}

/* Validates ndim/shape/dtype; stores the element count in *numel. */
static gpudl_status gpudl__check_shape(gpudl_ctx *ctx, gpudl_dtype dtype, int ndim, const int64_t *shape,
                                       int64_t *numel) {
    int64_t n = 1;
    int i;
    if ((unsigned)dtype >= GPUDL_DTYPE_COUNT)
        return GPUDL__ERR(ctx, GPUDL_ERR_DTYPE, "invalid dtype %d", (int)dtype);
    if (ndim < 1 || ndim > GPUDL_MAX_DIMS || !shape)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "ndim must be 1..%d with a shape array (got ndim %d%s)",
                          GPUDL_MAX_DIMS, ndim, shape ? "" : ", shape NULL");
    for (i = 0; i < ndim; i++) {
        if (shape[i] < 1)
            return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "dim %d is %lld; every dim must be >= 1", i, (long long)shape[i]);
        if (n > (INT64_MAX / 8) / shape[i])
            return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "shape too large: element count overflows at dim %d", i);
        n *= shape[i];
    }
    *numel = n;
    return GPUDL_OK;
}

/* A tensor argument is usable: non-NULL, data, valid dtype and shape. */
static gpudl_status gpudl__check_tensor(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name) {
    int64_t n;
    if (!t) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "tensor '%s' is NULL", name);
    if (!t->data) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "tensor '%s' has no data (not created, or freed)", name);
    if (t->device != GPUDL_DEVICE_CPU && t->device != GPUDL_DEVICE_CUDA)
        return GPUDL__ERR(ctx, GPUDL_ERR_DEVICE, "tensor '%s' has invalid device %d", name, (int)t->device);
    return gpudl__check_shape(ctx, t->dtype, t->ndim, t->shape, &n);
}

static int gpudl__is_float(gpudl_dtype d) { return d == GPUDL_F32 || d == GPUDL_F16 || d == GPUDL_BF16; }

/* Two tensors: same device, dtype and shape. */
static gpudl_status gpudl__check_same(gpudl_ctx *ctx, const gpudl_tensor *a, const char *an,
                                      const gpudl_tensor *b, const char *bn) {
    char sa[96], sb[96];
    int i, same = a->ndim == b->ndim;
    for (i = 0; same && i < a->ndim; i++) same = a->shape[i] == b->shape[i];
    if (a->device != b->device)
        return GPUDL__ERR(ctx, GPUDL_ERR_DEVICE, "%s is %s but %s is %s: operands must be on one device",
                          an, gpudl_tensor_describe(a, sa, sizeof sa), bn, gpudl_tensor_describe(b, sb, sizeof sb));
    if (a->dtype != b->dtype)
        return GPUDL__ERR(ctx, GPUDL_ERR_DTYPE, "%s is %s but %s is %s: dtypes must match",
                          an, gpudl_tensor_describe(a, sa, sizeof sa), bn, gpudl_tensor_describe(b, sb, sizeof sb));
    if (!same)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "%s is %s but %s is %s: shapes must match",
                          an, gpudl_tensor_describe(a, sa, sizeof sa), bn, gpudl_tensor_describe(b, sb, sizeof sb));
    return GPUDL_OK;
}

/* Element i of a float tensor as float, and back (host side). */
static float gpudl__load(const void *p, gpudl_dtype dt, int64_t i) {
    switch (dt) {
    case GPUDL_F32:  return ((const float *)p)[i];
    case GPUDL_F16:  return gpudl_f16_to_f32(((const uint16_t *)p)[i]);
    case GPUDL_BF16: return gpudl_bf16_to_f32(((const uint16_t *)p)[i]);
    case GPUDL_U8:   return (float)((const uint8_t *)p)[i];
    case GPUDL_I32:  return (float)((const int32_t *)p)[i];
    default:         return 0.0f;
    }
}

static void gpudl__store(void *p, gpudl_dtype dt, int64_t i, float v) {
    switch (dt) {
    case GPUDL_F32:  ((float *)p)[i] = v; break;
    case GPUDL_F16:  ((uint16_t *)p)[i] = gpudl_f32_to_f16(v); break;
    case GPUDL_BF16: ((uint16_t *)p)[i] = gpudl_f32_to_bf16(v); break;
    case GPUDL_U8:   ((uint8_t *)p)[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5f); break;
    case GPUDL_I32:  ((int32_t *)p)[i] = (int32_t)v; break;
    default: break;
    }
}

/* >>cuda-errors ----------------------------------------------------------- */
#ifndef GPUDL_NO_CUDA

/* Errors after which the CUDA context is unusable until the process exits. */
static int gpudl__cuda_sticky(cudaError_t e) {
    switch (e) {
    case cudaErrorIllegalAddress: case cudaErrorLaunchFailure: case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction: case cudaErrorMisalignedAddress: case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc: case cudaErrorAssert: case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout: case cudaErrorUnknown:
        return 1;
    default:
        return 0;
    }
}

static gpudl_status gpudl__cuda_fail(gpudl_ctx *ctx, cudaError_t e, const char *what, const char *file, int line) {
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();   /* not sticky: clear it so the context keeps working */
        return gpudl__fail(ctx, GPUDL_ERR_OOM, file, line, "%s failed: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
    }
    if (gpudl__cuda_sticky(e)) {
        if (ctx) ctx->fatal = GPUDL_ERR_CUDA_FATAL;
        return gpudl__fail(ctx, GPUDL_ERR_CUDA_FATAL, file, line,
                           "%s failed: %s (%s). This error is sticky: the CUDA context is corrupted and every "
                           "later CUDA call fails; save what you can from host memory and restart the process.",
                           what, cudaGetErrorName(e), cudaGetErrorString(e));
    }
    return gpudl__fail(ctx, GPUDL_ERR_CUDA, file, line, "%s failed: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

#define GPUDL__CUDA(ctx, expr) do { cudaError_t gpudl__e_ = (expr); \
    if (gpudl__e_ != cudaSuccess) return gpudl__cuda_fail((ctx), gpudl__e_, #expr, __FILE__, __LINE__); } while (0)

#define GPUDL__CUBLAS(ctx, expr) do { cublasStatus_t gpudl__b_ = (expr); \
    if (gpudl__b_ != CUBLAS_STATUS_SUCCESS) return GPUDL__ERR((ctx), \
        gpudl__b_ == CUBLAS_STATUS_ALLOC_FAILED ? GPUDL_ERR_OOM : GPUDL_ERR_CUBLAS, \
        "%s failed: %s (%s)", #expr, cublasGetStatusName(gpudl__b_), cublasGetStatusString(gpudl__b_)); } while (0)

/* After a kernel launch: the launcher returned cudaGetLastError(). With
   sync_debug the stream is synchronised so an asynchronous fault names its op. */
static gpudl_status gpudl__launched(gpudl_ctx *ctx, int err, const char *op, const char *file, int line) {
    if (err == 0 && ctx->sync_debug) err = (int)cudaStreamSynchronize(ctx->stream);
    if (err != 0) return gpudl__cuda_fail(ctx, (cudaError_t)err, op, file, line);
    return GPUDL_OK;
}
#define GPUDL__LAUNCH(ctx, call) do { gpudl_status gpudl__l_ = gpudl__launched((ctx), (call), #call, __FILE__, __LINE__); \
    if (gpudl__l_ != GPUDL_OK) return gpudl__l_; } while (0)

/* Why CUDA cannot be used: no driver, driver too old, or no device. */
static gpudl_status gpudl__cuda_why_not(gpudl_ctx *ctx, cudaError_t e, char *msg, size_t size) {
    int drv = 0, rt = 0;
    (void)cudaDriverGetVersion(&drv);
    (void)cudaRuntimeGetVersion(&rt);
    (void)ctx;
    if (drv == 0)
        snprintf(msg, size, "no NVIDIA driver found (%s: libcuda.so could not be loaded); install the NVIDIA driver "
                 "to use the GPU", cudaGetErrorName(e));
    else if (e == cudaErrorInsufficientDriver || drv < rt)
        snprintf(msg, size, "the NVIDIA driver is too old (%s): it supports CUDA %d.%d but this program was built "
                 "with CUDA runtime %d.%d; update the driver", cudaGetErrorName(e), drv / 1000, (drv % 1000) / 10,
                 rt / 1000, (rt % 1000) / 10);
    else if (e == cudaErrorNoDevice)
        snprintf(msg, size, "the NVIDIA driver (CUDA %d.%d) is installed but sees no CUDA device (%s); check "
                 "CUDA_VISIBLE_DEVICES and nvidia-smi", drv / 1000, (drv % 1000) / 10, cudaGetErrorName(e));
    else
        snprintf(msg, size, "CUDA is not usable: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
    return GPUDL_ERR_NO_DEVICE;
}

static gpudl_status gpudl__cuda_init(gpudl_ctx *ctx, const gpudl_ctx_desc *d) {
    int count = 0;
    char why[512];
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && count == 0) e = cudaErrorNoDevice;
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        gpudl__cuda_why_not(ctx, e, why, sizeof why);
        return GPUDL__ERR(ctx, GPUDL_ERR_NO_DEVICE, "%s", why);
    }
    if (d->cuda_device < 0 || d->cuda_device >= count)
        return GPUDL__ERR(ctx, GPUDL_ERR_NO_DEVICE, "cuda_device %d requested but %d CUDA device(s) are visible",
                          d->cuda_device, count);
    ctx->cuda_device = d->cuda_device;
    GPUDL__CUDA(ctx, cudaSetDevice(ctx->cuda_device));
    if (d->stream) {
        ctx->stream = (cudaStream_t)d->stream;
    } else {
        GPUDL__CUDA(ctx, cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
        ctx->own_stream = 1;
    }
    /* A probe launch: fails with cudaErrorNoKernelImageForDevice when
       gpudl_kernels.cu was not built for this GPU's architecture. */
    e = (cudaError_t)gpudl_k_probe(ctx->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess) {
        struct cudaDeviceProp p;
        (void)cudaGetLastError();
        memset(&p, 0, sizeof p);
        (void)cudaGetDeviceProperties(&p, ctx->cuda_device);
        if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction || e == cudaErrorUnsupportedPtxVersion)
            return GPUDL__ERR(ctx, GPUDL_ERR_NO_DEVICE,
                              "gpudl_kernels.cu has no code for %s (sm_%d%d): it was built for %s. Rebuild it with "
                              "nvcc -gencode arch=compute_%d%d,code=sm_%d%d (%s)", p.name, p.major, p.minor,
                              gpudl_k_archs(), p.major, p.minor, p.major, p.minor, cudaGetErrorName(e));
        return gpudl__cuda_fail(ctx, e, "probe kernel launch", __FILE__, __LINE__);
    }
    GPUDL__CUBLAS(ctx, cublasCreate(&ctx->cublas));
    GPUDL__CUBLAS(ctx, cublasSetStream(ctx->cublas, ctx->stream));
    ctx->workspace_bytes = d->workspace_bytes ? d->workspace_bytes : ((size_t)32 << 20);
    GPUDL__CUDA(ctx, cudaMalloc(&ctx->workspace, ctx->workspace_bytes));
    GPUDL__CUBLAS(ctx, cublasSetWorkspace(ctx->cublas, ctx->workspace, ctx->workspace_bytes));
    GPUDL__CUDA(ctx, cudaMalloc((void **)&ctx->scratch, (size_t)gpudl_k_reduce_scratch() * sizeof(float)));
    return GPUDL_OK;
}

static void gpudl__cuda_release(gpudl_ctx *ctx) {
    if (ctx->device != GPUDL_DEVICE_CUDA) return;
    if (ctx->stream && ctx->fatal == GPUDL_OK) (void)cudaStreamSynchronize(ctx->stream);
    if (ctx->cublas) cublasDestroy(ctx->cublas);
    if (ctx->workspace) cudaFree(ctx->workspace);
    if (ctx->scratch) cudaFree(ctx->scratch);
    if (ctx->own_stream && ctx->stream) cudaStreamDestroy(ctx->stream);
}
#endif /* !GPUDL_NO_CUDA */

/* >>context --------------------------------------------------------------- */

GPUDL__DEF gpudl_status gpudl_ctx_create(const gpudl_ctx_desc *desc, gpudl_ctx **out) {
    gpudl_ctx_desc d;
    gpudl_ctx *ctx;
    if (!out) return GPUDL_ERR_INVALID_ARG;
    *out = NULL;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (d.device != GPUDL_DEVICE_AUTO && d.device != GPUDL_DEVICE_CPU && d.device != GPUDL_DEVICE_CUDA) {
        if (d.log) d.log(d.log_user, GPUDL_LOG_ERROR, "gpudl_ctx_create: desc->device must be GPUDL_DEVICE_AUTO, _CPU or _CUDA");
        return GPUDL_ERR_INVALID_ARG;
    }
    if (d.math_mode != GPUDL_MATH_DEFAULT && d.math_mode != GPUDL_MATH_FP32 && d.math_mode != GPUDL_MATH_TF32) {
        if (d.log) d.log(d.log_user, GPUDL_LOG_ERROR, "gpudl_ctx_create: desc->math_mode must be 0, GPUDL_MATH_FP32 or GPUDL_MATH_TF32");
        return GPUDL_ERR_INVALID_ARG;
    }
    ctx = (gpudl_ctx *)GPUDL_MALLOC(sizeof *ctx);
    if (!ctx) return GPUDL_ERR_OOM;
    memset(ctx, 0, sizeof *ctx);
    ctx->math_mode = d.math_mode == GPUDL_MATH_TF32 ? GPUDL_MATH_TF32 : GPUDL_MATH_FP32;
    ctx->rng_seed = d.seed ? d.seed : 0x5EEDu;
    ctx->num_threads = d.num_threads > 0 ? d.num_threads : 0;
    ctx->sync_debug = d.sync_debug;
    ctx->log = d.log;
    ctx->log_user = d.log_user;
    ctx->device = GPUDL_DEVICE_CPU;
#ifdef GPUDL_NO_CUDA
    if (d.device == GPUDL_DEVICE_CUDA) {
        GPUDL__ERR(ctx, GPUDL_ERR_NO_DEVICE, "CUDA was requested but this program was built with GPUDL_NO_CUDA "
                   "(CPU only); build it with nvcc and gpudl_kernels.cu to use the GPU");
        GPUDL_FREE(ctx);
        return GPUDL_ERR_NO_DEVICE;
    }
    if (d.device == GPUDL_DEVICE_AUTO)
        gpudl__log(ctx, GPUDL_LOG_INFO, "using the CPU: this build has no CUDA backend (GPUDL_NO_CUDA)");
#else
    if (d.device != GPUDL_DEVICE_CPU) {
        gpudl_log_fn log = ctx->log;
        gpudl_status s;
        ctx->device = GPUDL_DEVICE_CUDA;
        if (d.device == GPUDL_DEVICE_AUTO) ctx->log = NULL;   /* a fallback is not an error */
        s = gpudl__cuda_init(ctx, &d);
        ctx->log = log;
        if (s != GPUDL_OK) {
            gpudl__cuda_release(ctx);
            if (d.device == GPUDL_DEVICE_CUDA) {   /* already logged by gpudl__fail */
                GPUDL_FREE(ctx);
                return s;
            }
            gpudl__log(ctx, GPUDL_LOG_INFO, "using the CPU: %s", strstr(ctx->last_error, ": ") ?
                       strstr(ctx->last_error, ": ") + 2 : ctx->last_error);
            {   /* keep only what a CPU context needs */
                gpudl_ctx keep = *ctx;
                memset(ctx, 0, sizeof *ctx);
                ctx->math_mode = keep.math_mode; ctx->rng_seed = keep.rng_seed; ctx->num_threads = keep.num_threads;
                ctx->sync_debug = keep.sync_debug; ctx->log = keep.log; ctx->log_user = keep.log_user;
                ctx->device = GPUDL_DEVICE_CPU;
            }
        }
    }
#endif
    *out = ctx;
    return GPUDL_OK;
}

GPUDL__DEF void gpudl_ctx_destroy(gpudl_ctx *ctx) {
    if (!ctx) return;
#ifndef GPUDL_NO_CUDA
    gpudl__cuda_release(ctx);
#endif
    GPUDL_FREE(ctx);
}

GPUDL__DEF gpudl_device gpudl_ctx_device(const gpudl_ctx *ctx) { return ctx ? ctx->device : GPUDL_DEVICE_CPU; }

GPUDL__DEF gpudl_status gpudl_ctx_sync(gpudl_ctx *ctx) {
    GPUDL__ENTER(ctx);
#ifndef GPUDL_NO_CUDA
    if (ctx->device == GPUDL_DEVICE_CUDA) GPUDL__CUDA(ctx, cudaStreamSynchronize(ctx->stream));
#endif
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_ctx_set_math_mode(gpudl_ctx *ctx, gpudl_math_mode mode) {
    GPUDL__ENTER(ctx);
    if (mode == GPUDL_MATH_DEFAULT) mode = GPUDL_MATH_FP32;
    if (mode != GPUDL_MATH_FP32 && mode != GPUDL_MATH_TF32)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "math mode %d: use GPUDL_MATH_FP32 or GPUDL_MATH_TF32", (int)mode);
    ctx->math_mode = mode;
    return GPUDL_OK;
}

GPUDL__DEF gpudl_math_mode gpudl_ctx_math_mode(const gpudl_ctx *ctx) { return ctx ? ctx->math_mode : GPUDL_MATH_FP32; }

GPUDL__DEF void gpudl_ctx_set_seed(gpudl_ctx *ctx, uint64_t seed) {
    if (!ctx) return;
    ctx->rng_seed = seed;
    ctx->rng_offset = 0;
}

GPUDL__DEF void *gpudl_ctx_stream(const gpudl_ctx *ctx) {
#ifndef GPUDL_NO_CUDA
    if (ctx && ctx->device == GPUDL_DEVICE_CUDA) return (void *)ctx->stream;
#endif
    (void)ctx;
    return NULL;
}

/* >>memory ---------------------------------------------------------------- */

static gpudl_status gpudl__alloc(gpudl_ctx *ctx, gpudl_device dev, size_t bytes, void **p) {
    *p = NULL;
    if (dev == GPUDL_DEVICE_CPU) {
        *p = GPUDL_MALLOC(bytes ? bytes : 1);
        if (!*p) return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "host allocation of %zu bytes failed", bytes);
        return GPUDL_OK;
    }
#ifndef GPUDL_NO_CUDA
    if (dev == GPUDL_DEVICE_CUDA && ctx->device == GPUDL_DEVICE_CUDA) {
        cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
        if (e != cudaSuccess) {
            size_t fr = 0, tot = 0;
            *p = NULL;
            if (e != cudaErrorMemoryAllocation) return gpudl__cuda_fail(ctx, e, "cudaMalloc", __FILE__, __LINE__);
            (void)cudaGetLastError();
            (void)cudaMemGetInfo(&fr, &tot);
            return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "cudaMalloc of %zu bytes failed: cudaErrorMemoryAllocation "
                              "(%zu of %zu MiB free on the device)", bytes, fr >> 20, tot >> 20);
        }
        return GPUDL_OK;
    }
#endif
    return GPUDL__ERR(ctx, GPUDL_ERR_DEVICE, "cannot allocate on %s: this context runs on %s",
                      gpudl__device_name(dev), gpudl__device_name(ctx->device));
}

static void gpudl__dealloc(gpudl_device dev, void *p) {
    if (!p) return;
    if (dev == GPUDL_DEVICE_CPU) { GPUDL_FREE(p); return; }
#ifndef GPUDL_NO_CUDA
    if (dev == GPUDL_DEVICE_CUDA) (void)cudaFree(p);
#endif
}

/* >>tensor ---------------------------------------------------------------- */

GPUDL__DEF gpudl_status gpudl_tensor_create_on(gpudl_ctx *ctx, gpudl_tensor *t, gpudl_device device,
                                               gpudl_dtype dtype, int ndim, const int64_t *shape) {
    int64_t n;
    int i;
    GPUDL__ENTER(ctx);
    if (!t) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "gpudl_tensor_create: tensor pointer is NULL");
    memset(t, 0, sizeof *t);
    if (device == GPUDL_DEVICE_AUTO) device = ctx->device;
    GPUDL__TRY(gpudl__check_shape(ctx, dtype, ndim, shape, &n));
    GPUDL__TRY(gpudl__alloc(ctx, device, (size_t)n * gpudl_dtype_size(dtype), &t->data));
    t->ndim = ndim;
    for (i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->dtype = dtype;
    t->device = device;
    t->owner = 1;
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_tensor_create(gpudl_ctx *ctx, gpudl_tensor *t, gpudl_dtype dtype,
                                            int ndim, const int64_t *shape) {
    GPUDL__ENTER(ctx);
    return gpudl_tensor_create_on(ctx, t, ctx->device, dtype, ndim, shape);
}

GPUDL__DEF void gpudl_tensor_free(gpudl_ctx *ctx, gpudl_tensor *t) {
    (void)ctx;
    if (!t) return;
    if (t->owner == 1 && t->data) gpudl__dealloc(t->device, t->data);
    memset(t, 0, sizeof *t);
}

GPUDL__DEF gpudl_status gpudl_tensor_wrap(gpudl_tensor *t, void *data, gpudl_device device,
                                          gpudl_dtype dtype, int ndim, const int64_t *shape) {
    int64_t n;
    int i;
    if (!t || !data || (device != GPUDL_DEVICE_CPU && device != GPUDL_DEVICE_CUDA)) return GPUDL_ERR_INVALID_ARG;
    GPUDL__TRY(gpudl__check_shape(NULL, dtype, ndim, shape, &n));
    memset(t, 0, sizeof *t);
    t->data = data;
    t->ndim = ndim;
    for (i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->dtype = dtype;
    t->device = device;
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_tensor_reshape(gpudl_tensor *view, const gpudl_tensor *src, int ndim,
                                             const int64_t *shape) {
    int64_t dims[GPUDL_MAX_DIMS], known = 1, n = gpudl_tensor_numel(src);
    int i, infer = -1;
    if (!view || !src || !src->data || !shape || ndim < 1 || ndim > GPUDL_MAX_DIMS) return GPUDL_ERR_INVALID_ARG;
    for (i = 0; i < ndim; i++) {
        dims[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0) return GPUDL_ERR_SHAPE;
            infer = i;
        } else if (shape[i] < 1) {
            return GPUDL_ERR_SHAPE;
        } else {
            known *= shape[i];
        }
    }
    if (infer >= 0) {
        if (n % known) return GPUDL_ERR_SHAPE;
        dims[infer] = n / known;
        known *= dims[infer];
    }
    if (known != n) return GPUDL_ERR_SHAPE;
    {
        gpudl_tensor v = *src;
        v.ndim = ndim;
        for (i = 0; i < GPUDL_MAX_DIMS; i++) v.shape[i] = i < ndim ? dims[i] : 0;
        v.owner = 0;
        *view = v;
    }
    return GPUDL_OK;
}

/* Checks a tensor argument and that the context can work on its device. */
static gpudl_status gpudl__check_on(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name) {
    GPUDL__TRY(gpudl__check_tensor(ctx, t, name));
    if (t->device == GPUDL_DEVICE_CUDA && ctx->device != GPUDL_DEVICE_CUDA)
        return GPUDL__ERR(ctx, GPUDL_ERR_DEVICE, "tensor '%s' is on cuda but this context runs on the cpu", name);
    return GPUDL_OK;
}

static gpudl_status gpudl__check_float(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name) {
    if (!gpudl__is_float(t->dtype))
        return GPUDL__ERR(ctx, GPUDL_ERR_DTYPE, "tensor '%s' is %s; this op takes f32, f16 or bf16",
                          name, gpudl_dtype_name(t->dtype));
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_tensor_fill(gpudl_ctx *ctx, gpudl_tensor *t, float value) {
    int64_t i, n;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, t, "t"));
    n = gpudl_tensor_numel(t);
#ifndef GPUDL_NO_CUDA
    if (t->device == GPUDL_DEVICE_CUDA) {
        GPUDL__LAUNCH(ctx, gpudl_k_fill(ctx->stream, t->data, (int)t->dtype, n, value));
        return GPUDL_OK;
    }
#endif
    GPUDL__OMP(omp parallel for if (n > 65536))
    for (i = 0; i < n; i++) gpudl__store(t->data, t->dtype, i, value);
    return GPUDL_OK;
}

static gpudl_status gpudl__random(gpudl_ctx *ctx, gpudl_tensor *t, int normal, float a, float b) {
    int64_t i, n;
    uint64_t seed, off;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, t, "t"));
    GPUDL__TRY(gpudl__check_float(ctx, t, "t"));
    if (!(a == a) || !(b == b) || (normal && b < 0.0f) || (!normal && b < a))
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, normal ? "normal: std must be >= 0 (got mean %g std %g)"
                          : "uniform: need lo <= hi (got %g, %g)", (double)a, (double)b);
    n = gpudl_tensor_numel(t);
    seed = ctx->rng_seed;
    off = ctx->rng_offset;
    ctx->rng_offset += (uint64_t)n;
#ifndef GPUDL_NO_CUDA
    if (t->device == GPUDL_DEVICE_CUDA) {
        GPUDL__LAUNCH(ctx, gpudl_k_random(ctx->stream, t->data, (int)t->dtype, n, seed, off, normal, a, b));
        return GPUDL_OK;
    }
#endif
    GPUDL__OMP(omp parallel for if (n > 65536))
    for (i = 0; i < n; i++) {
        float v = normal ? a + b * gpudl_rng_normal(seed, off + (uint64_t)i)
                         : a + (b - a) * gpudl_rng_uniform(seed, off + (uint64_t)i);
        gpudl__store(t->data, t->dtype, i, v);
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_tensor_uniform(gpudl_ctx *ctx, gpudl_tensor *t, float lo, float hi) {
    return gpudl__random(ctx, t, 0, lo, hi);
}

GPUDL__DEF gpudl_status gpudl_tensor_normal(gpudl_ctx *ctx, gpudl_tensor *t, float mean, float std) {
    return gpudl__random(ctx, t, 1, mean, std);
}

/* Raw byte copy between any two devices; waits when the host needs the data. */
static gpudl_status gpudl__memcpy(gpudl_ctx *ctx, void *dst, gpudl_device dd, const void *src, gpudl_device sd,
                                  size_t bytes) {
    if (bytes == 0 || dst == src) return GPUDL_OK;
    if (dd == GPUDL_DEVICE_CPU && sd == GPUDL_DEVICE_CPU) { memmove(dst, src, bytes); return GPUDL_OK; }
#ifndef GPUDL_NO_CUDA
    {
        enum cudaMemcpyKind kind = dd == GPUDL_DEVICE_CPU ? cudaMemcpyDeviceToHost
                                 : sd == GPUDL_DEVICE_CPU ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice;
        GPUDL__CUDA(ctx, cudaMemcpyAsync(dst, src, bytes, kind, ctx->stream));
        if (kind != cudaMemcpyDeviceToDevice) GPUDL__CUDA(ctx, cudaStreamSynchronize(ctx->stream));
        return GPUDL_OK;
    }
#else
    return GPUDL__ERR(ctx, GPUDL_ERR_DEVICE, "device copy in a CPU-only build");
#endif
}

GPUDL__DEF gpudl_status gpudl_tensor_copy(gpudl_ctx *ctx, gpudl_tensor *dst, const gpudl_tensor *src) {
    char sa[96], sb[96];
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, dst, "dst"));
    GPUDL__TRY(gpudl__check_on(ctx, src, "src"));
    if (dst->dtype != src->dtype || gpudl_tensor_numel(dst) != gpudl_tensor_numel(src))
        return GPUDL__ERR(ctx, dst->dtype != src->dtype ? GPUDL_ERR_DTYPE : GPUDL_ERR_SHAPE,
                          "copy: dst is %s but src is %s: need the same dtype and element count (use gpudl_tensor_cast "
                          "to convert)", gpudl_tensor_describe(dst, sa, sizeof sa), gpudl_tensor_describe(src, sb, sizeof sb));
    return gpudl__memcpy(ctx, dst->data, dst->device, src->data, src->device, gpudl_tensor_bytes(src));
}

GPUDL__DEF gpudl_status gpudl_tensor_upload(gpudl_ctx *ctx, gpudl_tensor *t, const void *host, size_t bytes) {
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, t, "t"));
    if (!host) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "upload: host pointer is NULL");
    if (bytes != gpudl_tensor_bytes(t))
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "upload: %zu bytes given, tensor holds %zu", bytes, gpudl_tensor_bytes(t));
    return gpudl__memcpy(ctx, t->data, t->device, host, GPUDL_DEVICE_CPU, bytes);
}

GPUDL__DEF gpudl_status gpudl_tensor_download(gpudl_ctx *ctx, const gpudl_tensor *t, void *host, size_t bytes) {
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, t, "t"));
    if (!host) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "download: host pointer is NULL");
    if (bytes != gpudl_tensor_bytes(t))
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "download: %zu bytes given, tensor holds %zu", bytes, gpudl_tensor_bytes(t));
    return gpudl__memcpy(ctx, host, GPUDL_DEVICE_CPU, t->data, t->device, bytes);
}

GPUDL__DEF gpudl_status gpudl_tensor_cast(gpudl_ctx *ctx, gpudl_tensor *dst, const gpudl_tensor *src) {
    char sa[96], sb[96];
    int64_t i, n;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, dst, "dst"));
    GPUDL__TRY(gpudl__check_on(ctx, src, "src"));
    GPUDL__TRY(gpudl__check_float(ctx, dst, "dst"));
    GPUDL__TRY(gpudl__check_float(ctx, src, "src"));
    n = gpudl_tensor_numel(src);
    if (dst->device != src->device || gpudl_tensor_numel(dst) != n)
        return GPUDL__ERR(ctx, dst->device != src->device ? GPUDL_ERR_DEVICE : GPUDL_ERR_SHAPE,
                          "cast: dst is %s but src is %s: need one device and the same element count",
                          gpudl_tensor_describe(dst, sa, sizeof sa), gpudl_tensor_describe(src, sb, sizeof sb));
    if (dst->dtype == src->dtype) return gpudl_tensor_copy(ctx, dst, src);
#ifndef GPUDL_NO_CUDA
    if (src->device == GPUDL_DEVICE_CUDA) {
        GPUDL__LAUNCH(ctx, gpudl_k_cast(ctx->stream, dst->data, (int)dst->dtype, src->data, (int)src->dtype, n));
        return GPUDL_OK;
    }
#endif
    GPUDL__OMP(omp parallel for if (n > 65536))
    for (i = 0; i < n; i++) gpudl__store(dst->data, dst->dtype, i, gpudl__load(src->data, src->dtype, i));
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_tensor_item(gpudl_ctx *ctx, const gpudl_tensor *t, int64_t i, float *value) {
    unsigned char buf[8];
    size_t es;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, t, "t"));
    if (!value) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "item: value pointer is NULL");
    if (i < 0 || i >= gpudl_tensor_numel(t))
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "item: index %lld outside [0, %lld)", (long long)i,
                          (long long)gpudl_tensor_numel(t));
    es = gpudl_dtype_size(t->dtype);
    GPUDL__TRY(gpudl__memcpy(ctx, buf, GPUDL_DEVICE_CPU, (const char *)t->data + (size_t)i * es, t->device, es));
    *value = gpudl__load(buf, t->dtype, 0);
    return GPUDL_OK;
}

/* >>cpu ------------------------------------------------------------------- */
/* SGEMM on the CPU: C (M,N) += alpha * op(A) (M,K) @ op(B) (K,N), the GotoBLAS
   way. B is packed into KC x NC panels of NR columns, A into MC x KC panels
   of MR rows; a micro-kernel keeps an MR x NR block of C in registers while
   it walks K. Element (i,k) of op(A) is A[i*ars + k*acs]; transposes are
   only other strides. Threads split (MC rows x NB columns) tasks. */

#define GPUDL__KC 256
#define GPUDL__MC 96      /* multiple of every MR below (4, 6, 8) */
#define GPUDL__NC 4096
#define GPUDL__NB 256     /* columns per task: multiple of every NR (8, 16, 32) */

typedef void (*gpudl__ukernel_fn)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                                  float alpha, int m, int n);

/* Portable micro-kernel, 4 x 8: compilers vectorise the inner loops. */
static void gpudl__uk_c(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, float alpha, int m, int n) {
    float acc[4][8];
    int64_t k;
    int i, j;
    memset(acc, 0, sizeof acc);
    for (k = 0; k < kc; k++, a += 4, b += 8)
        for (i = 0; i < 4; i++)
            for (j = 0; j < 8; j++) acc[i][j] += a[i] * b[j];
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) c[i * ldc + j] += alpha * acc[i][j];
}

#ifdef GPUDL__X86_SIMD
/* AVX2 + FMA, 6 x 16: 12 accumulators, 2 B vectors, 1 broadcast. */
#define GPUDL__AVX2_ROW(r) av = _mm256_broadcast_ss(a + r); \
    c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0); c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);
#define GPUDL__AVX2_OUT(r) if (r < m) { if (n == 16) { \
        _mm256_storeu_ps(c + r * ldc,     _mm256_fmadd_ps(al, c##r##0, _mm256_loadu_ps(c + r * ldc))); \
        _mm256_storeu_ps(c + r * ldc + 8, _mm256_fmadd_ps(al, c##r##1, _mm256_loadu_ps(c + r * ldc + 8))); \
    } else { _mm256_storeu_ps(t, c##r##0); _mm256_storeu_ps(t + 8, c##r##1); \
        for (j = 0; j < n; j++) c[r * ldc + j] += alpha * t[j]; } }

__attribute__((target("avx2,fma")))
static void gpudl__uk_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, float alpha, int m, int n) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, b0, b1, av, al;
    float t[16];
    int64_t k;
    int j;
    for (k = 0; k < kc; k++, a += 6, b += 16) {
        b0 = _mm256_loadu_ps(b); b1 = _mm256_loadu_ps(b + 8);
        GPUDL__AVX2_ROW(0) GPUDL__AVX2_ROW(1) GPUDL__AVX2_ROW(2)
        GPUDL__AVX2_ROW(3) GPUDL__AVX2_ROW(4) GPUDL__AVX2_ROW(5)
    }
    al = _mm256_set1_ps(alpha);
    GPUDL__AVX2_OUT(0) GPUDL__AVX2_OUT(1) GPUDL__AVX2_OUT(2)
    GPUDL__AVX2_OUT(3) GPUDL__AVX2_OUT(4) GPUDL__AVX2_OUT(5)
}

/* AVX-512, 8 x 32: 16 accumulators, 2 B vectors, broadcasts from memory. */
#define GPUDL__AVX512_ROW(r) av = _mm512_set1_ps(a[r]); \
    c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0); c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);
#define GPUDL__AVX512_OUT(r) if (r < m) { if (n == 32) { \
        _mm512_storeu_ps(c + r * ldc,      _mm512_fmadd_ps(al, c##r##0, _mm512_loadu_ps(c + r * ldc))); \
        _mm512_storeu_ps(c + r * ldc + 16, _mm512_fmadd_ps(al, c##r##1, _mm512_loadu_ps(c + r * ldc + 16))); \
    } else { _mm512_storeu_ps(t, c##r##0); _mm512_storeu_ps(t + 16, c##r##1); \
        for (j = 0; j < n; j++) c[r * ldc + j] += alpha * t[j]; } }

__attribute__((target("avx512f")))
static void gpudl__uk_avx512(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, float alpha, int m, int n) {
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    __m512 c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00, b0, b1, av, al;
    float t[32];
    int64_t k;
    int j;
    for (k = 0; k < kc; k++, a += 8, b += 32) {
        b0 = _mm512_loadu_ps(b); b1 = _mm512_loadu_ps(b + 16);
        GPUDL__AVX512_ROW(0) GPUDL__AVX512_ROW(1) GPUDL__AVX512_ROW(2) GPUDL__AVX512_ROW(3)
        GPUDL__AVX512_ROW(4) GPUDL__AVX512_ROW(5) GPUDL__AVX512_ROW(6) GPUDL__AVX512_ROW(7)
    }
    al = _mm512_set1_ps(alpha);
    GPUDL__AVX512_OUT(0) GPUDL__AVX512_OUT(1) GPUDL__AVX512_OUT(2) GPUDL__AVX512_OUT(3)
    GPUDL__AVX512_OUT(4) GPUDL__AVX512_OUT(5) GPUDL__AVX512_OUT(6) GPUDL__AVX512_OUT(7)
}
#endif /* GPUDL__X86_SIMD */

typedef struct gpudl__ukernel { int mr, nr; gpudl__ukernel_fn fn; const char *name; } gpudl__ukernel;

/* The best micro-kernel this CPU runs (GPUDL_GEMM_KERNEL=c|avx2|avx512 in
   the environment picks one, for tests and comparisons). */
static gpudl__ukernel gpudl__pick_ukernel(void) {
    gpudl__ukernel k = {4, 8, gpudl__uk_c, "c"};
#ifdef GPUDL__X86_SIMD
    const char *want = getenv("GPUDL_GEMM_KERNEL");
    __builtin_cpu_init();
    if ((!want || !strcmp(want, "avx512")) && __builtin_cpu_supports("avx512f")) {
        k.mr = 8; k.nr = 32; k.fn = gpudl__uk_avx512; k.name = "avx512";
    } else if ((!want || strcmp(want, "c")) && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        k.mr = 6; k.nr = 16; k.fn = gpudl__uk_avx2; k.name = "avx2";
    }
#endif
    return k;
}

/* Packs op(A)[0:mc, 0:kc] into panels of mr rows, zero-padded: panel p holds
   k-major runs of mr values. */
static void gpudl__pack_a(int64_t mc, int64_t kc, const float *A, int64_t rs, int64_t cs, int mr, float *buf) {
    int64_t ir, k;
    int i;
    for (ir = 0; ir < mc; ir += mr) {
        int mm = (int)GPUDL__MIN((int64_t)mr, mc - ir);
        const float *src = A + ir * rs;
        for (k = 0; k < kc; k++, buf += mr) {
            for (i = 0; i < mm; i++) buf[i] = src[i * rs + k * cs];
            for (; i < mr; i++) buf[i] = 0.0f;
        }
    }
}

/* Packs op(B)[0:kc, 0:nc] into panels of nr columns, zero-padded. */
static void gpudl__pack_b(int64_t kc, int64_t nc, const float *B, int64_t rs, int64_t cs, int nr, float *buf) {
    int64_t jr, k;
    int j;
    for (jr = 0; jr < nc; jr += nr) {
        int nn = (int)GPUDL__MIN((int64_t)nr, nc - jr);
        float *dst = buf + jr * kc;
        const float *src = B + jr * cs;
        for (k = 0; k < kc; k++, dst += nr) {
            if (cs == 1) { memcpy(dst, src + k * rs, (size_t)nn * sizeof(float)); j = nn; }
            else for (j = 0; j < nn; j++) dst[j] = src[k * rs + j * cs];
            for (; j < nr; j++) dst[j] = 0.0f;
        }
    }
}

static int gpudl__num_threads(const gpudl_ctx *ctx) {
#ifdef _OPENMP
    return ctx->num_threads > 0 ? ctx->num_threads : omp_get_max_threads();
#else
    (void)ctx;
    return 1;
#endif
}

/* C (M,N; row stride ldc) = alpha * op(A) op(B) + beta * C, all FP32, on
   nt threads (1: no OpenMP region at all, for callers that are already
   parallel). */
static gpudl_status gpudl__sgemm(gpudl_ctx *ctx, int nt, int64_t M, int64_t N, int64_t K, float alpha,
                                 const float *A, int64_t ars, int64_t acs, const float *B, int64_t brs, int64_t bcs,
                                 float beta, float *C, int64_t ldc) {
    gpudl__ukernel uk;
    float *bbuf, *abuf;
    int64_t i, j, p, tasks;
    (void)tasks;   /* only read by the OpenMP if() clause */
#ifdef GPUDL_CBLAS
    if ((acs == 1 || ars == 1) && (bcs == 1 || brs == 1)) {
        cblas_sgemm(CblasRowMajor, acs == 1 ? CblasNoTrans : CblasTrans, bcs == 1 ? CblasNoTrans : CblasTrans,
                    (int)M, (int)N, (int)K, alpha, A, (int)(acs == 1 ? ars : acs), B, (int)(bcs == 1 ? brs : bcs),
                    beta, C, (int)ldc);
        return GPUDL_OK;
    }
#endif
    if (M * N * K <= 32 * 32 * 32 || alpha == 0.0f) {   /* tiny: packing would cost more than it saves */
        for (i = 0; i < M; i++) {
            float *c = C + i * ldc;
            for (j = 0; j < N; j++) c[j] = beta == 0.0f ? 0.0f : beta * c[j];   /* beta 0: NaN in C does not leak */
            for (p = 0; p < K && alpha != 0.0f; p++) {
                float aip = alpha * A[i * ars + p * acs];
                for (j = 0; j < N; j++) c[j] += aip * B[p * brs + j * bcs];
            }
        }
        return GPUDL_OK;
    }
    uk = gpudl__pick_ukernel();
    bbuf = (float *)GPUDL_MALLOC(sizeof(float) * GPUDL__KC * (size_t)(GPUDL__MIN(N, GPUDL__NC) + uk.nr));
    abuf = (float *)GPUDL_MALLOC(sizeof(float) * GPUDL__KC * (GPUDL__MC + uk.mr) * (size_t)nt);
    if (!bbuf || !abuf) {
        gpudl_status s;
        GPUDL_FREE(bbuf); GPUDL_FREE(abuf);
        GPUDL__OMP(omp critical(gpudl__error))
        s = GPUDL__ERR(ctx, GPUDL_ERR_OOM, "sgemm: packing buffers (%d threads) could not be allocated", nt);
        return s;
    }
    tasks = ((M + GPUDL__MC - 1) / GPUDL__MC) * ((GPUDL__MIN(N, GPUDL__NC) + GPUDL__NB - 1) / GPUDL__NB);
    /* One parallel region per call: the threads share each packed B block
       (a barrier before it is refilled) and take (MC x NB) tasks of C. */
    GPUDL__OMP(omp parallel num_threads(nt) if (nt > 1 && tasks > 1))
    {
        int tid = 0;
        int64_t jc, pc, r, c;
        float *ab;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        ab = abuf + (size_t)tid * GPUDL__KC * (GPUDL__MC + uk.mr);
        GPUDL__OMP(omp for schedule(static))
        for (r = 0; r < M; r++) {   /* C = beta * C (beta 0 overwrites) */
            float *crow = C + r * ldc;
            if (beta == 0.0f) for (c = 0; c < N; c++) crow[c] = 0.0f;
            else if (beta != 1.0f) for (c = 0; c < N; c++) crow[c] *= beta;
        }
        for (jc = 0; jc < N; jc += GPUDL__NC) {
            int64_t nc = GPUDL__MIN((int64_t)GPUDL__NC, N - jc);
            int64_t npan = (nc + uk.nr - 1) / uk.nr, mblocks = (M + GPUDL__MC - 1) / GPUDL__MC;
            int64_t nblocks = (nc + GPUDL__NB - 1) / GPUDL__NB;
            for (pc = 0; pc < K; pc += GPUDL__KC) {
                int64_t kc = GPUDL__MIN((int64_t)GPUDL__KC, K - pc), packed = -1, q, task;
                const float *Bp = B + pc * brs + jc * bcs;
                GPUDL__OMP(omp for schedule(static))
                for (q = 0; q < npan; q++)
                    gpudl__pack_b(kc, GPUDL__MIN((int64_t)uk.nr, nc - q * uk.nr), Bp + q * uk.nr * bcs, brs, bcs,
                                  uk.nr, bbuf + q * uk.nr * kc);
                GPUDL__OMP(omp for schedule(dynamic))
                for (task = 0; task < mblocks * nblocks; task++) {
                    int64_t ic = (task / nblocks) * GPUDL__MC, jb = (task % nblocks) * GPUDL__NB;
                    int64_t mc = GPUDL__MIN((int64_t)GPUDL__MC, M - ic), jr, ir, jend = GPUDL__MIN(nc, jb + GPUDL__NB);
                    if (packed != ic) {
                        gpudl__pack_a(mc, kc, A + ic * ars + pc * acs, ars, acs, uk.mr, ab);
                        packed = ic;
                    }
                    for (jr = jb; jr < jend; jr += uk.nr)
                        for (ir = 0; ir < mc; ir += uk.mr)
                            uk.fn(kc, ab + ir * kc, bbuf + jr * kc, C + (ic + ir) * ldc + jc + jr, ldc, alpha,
                                  (int)GPUDL__MIN((int64_t)uk.mr, mc - ir), (int)GPUDL__MIN((int64_t)uk.nr, nc - jr));
                }
            }
        }
    }
    GPUDL_FREE(bbuf);
    GPUDL_FREE(abuf);
    return GPUDL_OK;
}

/* >>ops ------------------------------------------------------------------- */

/* Resolved matmul problem: L batches of (M,N) = op(A) (M,K) op(B) (K,N);
   per-batch element strides (0 = shared 2-D operand). */
typedef struct gpudl__mm {
    int64_t L, M, N, K, sa, sb, sc;
} gpudl__mm;

static gpudl_status gpudl__matmul_check(gpudl_ctx *ctx, const gpudl_tensor *C, const gpudl_tensor *A,
                                        const gpudl_tensor *B, int ta, int tb, gpudl__mm *mm) {
    char sa[96], sb[96], sc[96];
    int64_t am, ak, bk, bn, L;
    GPUDL__TRY(gpudl__check_on(ctx, C, "C"));
    GPUDL__TRY(gpudl__check_on(ctx, A, "A"));
    GPUDL__TRY(gpudl__check_on(ctx, B, "B"));
    gpudl_tensor_describe(A, sa, sizeof sa);
    gpudl_tensor_describe(B, sb, sizeof sb);
    gpudl_tensor_describe(C, sc, sizeof sc);
    if (A->device != B->device || A->device != C->device)
        return GPUDL__ERR(ctx, GPUDL_ERR_DEVICE, "matmul: A is %s, B is %s, C is %s: all must be on one device", sa, sb, sc);
    if (A->dtype != B->dtype || !gpudl__is_float(A->dtype) ||
        !(C->dtype == A->dtype || (A->dtype != GPUDL_F32 && C->dtype == GPUDL_F32)))
        return GPUDL__ERR(ctx, GPUDL_ERR_DTYPE, "matmul: A is %s, B is %s, C is %s: need A and B both f32, f16 or "
                          "bf16, and C of their dtype (or f32 for f16/bf16 inputs)", sa, sb, sc);
    if (A->ndim < 2 || A->ndim > 3 || B->ndim < 2 || B->ndim > 3 || C->ndim < 2 || C->ndim > 3 ||
        (C->ndim == 2 && (A->ndim == 3 || B->ndim == 3)))
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "matmul: A is %s, B is %s, C is %s: need 2-D operands, or a 3-D "
                          "(batched) C with 3-D or 2-D (shared) A and B", sa, sb, sc);
    L = C->ndim == 3 ? C->shape[0] : 1;
    am = A->shape[A->ndim - 2]; ak = A->shape[A->ndim - 1];
    if (ta) { int64_t t = am; am = ak; ak = t; }
    bk = B->shape[B->ndim - 2]; bn = B->shape[B->ndim - 1];
    if (tb) { int64_t t = bk; bk = bn; bn = t; }
    if ((A->ndim == 3 && A->shape[0] != L) || (B->ndim == 3 && B->shape[0] != L))
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "matmul: batch sizes differ: A is %s, B is %s, C is %s", sa, sb, sc);
    if (ak != bk)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "matmul: inner dimensions differ: op(A) is %lldx%lld (A %s%s), op(B) "
                          "is %lldx%lld (B %s%s)", (long long)am, (long long)ak, sa, ta ? ", transposed" : "",
                          (long long)bk, (long long)bn, sb, tb ? ", transposed" : "");
    if (C->shape[C->ndim - 2] != am || C->shape[C->ndim - 1] != bn)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "matmul: C is %s but op(A) @ op(B) is %lldx%lld (A %s, B %s)",
                          sc, (long long)am, (long long)bn, sa, sb);
    mm->L = L; mm->M = am; mm->N = bn; mm->K = ak;
    mm->sa = A->ndim == 3 ? am * ak : 0;
    mm->sb = B->ndim == 3 ? ak * bn : 0;
    mm->sc = am * bn;
    return GPUDL_OK;
}

/* Host copy of an F16/BF16/F32 array as F32 (NULL on failure). */
static float *gpudl__to_f32(const void *p, gpudl_dtype dt, int64_t n) {
    float *f = (float *)GPUDL_MALLOC(sizeof(float) * (size_t)(n ? n : 1));
    int64_t i;
    if (!f) return NULL;
    GPUDL__OMP(omp parallel for if (n > 65536))
    for (i = 0; i < n; i++) f[i] = gpudl__load(p, dt, i);
    return f;
}

static gpudl_status gpudl__cpu_matmul(gpudl_ctx *ctx, gpudl_tensor *C, const gpudl_tensor *A, const gpudl_tensor *B,
                                      int ta, int tb, float alpha, float beta, const gpudl__mm *mm) {
    const float *a = (const float *)A->data, *b = (const float *)B->data;
    float *c = (float *)C->data, *fa = NULL, *fb = NULL, *fc = NULL;
    int64_t l, nc = gpudl_tensor_numel(C);
    gpudl_status s = GPUDL_OK;
    if (A->dtype != GPUDL_F32) {   /* F16/BF16: compute through FP32 */
        a = fa = gpudl__to_f32(A->data, A->dtype, gpudl_tensor_numel(A));
        b = fb = gpudl__to_f32(B->data, B->dtype, gpudl_tensor_numel(B));
        if (C->dtype != GPUDL_F32) c = fc = gpudl__to_f32(C->data, C->dtype, nc);
        if (!fa || !fb || (C->dtype != GPUDL_F32 && !fc)) {
            s = GPUDL__ERR(ctx, GPUDL_ERR_OOM, "matmul: no host memory for the f32 copies of %s operands",
                           gpudl_dtype_name(A->dtype));
            goto done;
        }
    }
    {
        /* Small batched products: one batch entry per thread beats splitting
           each product (which leaves threads idle and pays a region per call). */
        int nt = gpudl__num_threads(ctx), per_entry = mm->L >= 2 * nt && nt > 1 && mm->M * mm->N * mm->K <= 512 * 512 * 512;
        int fails = 0;
        GPUDL__OMP(omp parallel for num_threads(nt) schedule(dynamic) reduction(+:fails) if (per_entry))
        for (l = 0; l < mm->L; l++)
            if (fails == 0 && gpudl__sgemm(ctx, per_entry ? 1 : nt, mm->M, mm->N, mm->K, alpha,
                                           a + l * mm->sa, ta ? 1 : mm->K, ta ? mm->M : 1,
                                           b + l * mm->sb, tb ? 1 : mm->N, tb ? mm->K : 1,
                                           beta, c + l * mm->sc, mm->N) != GPUDL_OK)
                fails++;
        if (fails) s = GPUDL_ERR_OOM;   /* the only way sgemm fails; the message is recorded */
    }
    if (s == GPUDL_OK && fc) {
        GPUDL__OMP(omp parallel for if (nc > 65536))
        for (l = 0; l < nc; l++) gpudl__store(C->data, C->dtype, l, fc[l]);
    }
done:
    GPUDL_FREE(fa); GPUDL_FREE(fb); GPUDL_FREE(fc);
    return s;
}

#ifndef GPUDL_NO_CUDA
static cudaDataType_t gpudl__cuda_type(gpudl_dtype dt) {
    return dt == GPUDL_F16 ? CUDA_R_16F : dt == GPUDL_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS
   gets B as its first operand and A as its second, with no copies. */
static gpudl_status gpudl__cuda_matmul(gpudl_ctx *ctx, gpudl_tensor *C, const gpudl_tensor *A, const gpudl_tensor *B,
                                       int ta, int tb, float alpha, float beta, const gpudl__mm *mm) {
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasComputeType_t ct = (A->dtype == GPUDL_F32 && ctx->math_mode == GPUDL_MATH_TF32)
                           ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    int lda = (int)(ta ? mm->M : mm->K), ldb = (int)(tb ? mm->K : mm->N), ldc = (int)mm->N;
    if (mm->M > INT32_MAX || mm->N > INT32_MAX || mm->K > INT32_MAX || mm->L > INT32_MAX)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "matmul: dims beyond 2^31-1 are not supported by cuBLAS");
    if (mm->L == 1)
        GPUDL__CUBLAS(ctx, cublasGemmEx(ctx->cublas, opb, opa, (int)mm->N, (int)mm->M, (int)mm->K, &alpha,
                                        B->data, gpudl__cuda_type(B->dtype), ldb, A->data, gpudl__cuda_type(A->dtype), lda,
                                        &beta, C->data, gpudl__cuda_type(C->dtype), ldc, ct, CUBLAS_GEMM_DEFAULT));
    else
        GPUDL__CUBLAS(ctx, cublasGemmStridedBatchedEx(ctx->cublas, opb, opa, (int)mm->N, (int)mm->M, (int)mm->K, &alpha,
                                        B->data, gpudl__cuda_type(B->dtype), ldb, (long long)mm->sb,
                                        A->data, gpudl__cuda_type(A->dtype), lda, (long long)mm->sa, &beta,
                                        C->data, gpudl__cuda_type(C->dtype), ldc, (long long)mm->sc, (int)mm->L,
                                        ct, CUBLAS_GEMM_DEFAULT));
    if (ctx->sync_debug) GPUDL__CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return GPUDL_OK;
}
#endif

GPUDL__DEF gpudl_status gpudl_matmul(gpudl_ctx *ctx, gpudl_tensor *C, const gpudl_tensor *A, const gpudl_tensor *B,
                                     int trans_a, int trans_b, float alpha, float beta) {
    gpudl__mm mm;
    memset(&mm, 0, sizeof mm);
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__matmul_check(ctx, C, A, B, trans_a, trans_b, &mm));
#ifndef GPUDL_NO_CUDA
    if (C->device == GPUDL_DEVICE_CUDA) return gpudl__cuda_matmul(ctx, C, A, B, trans_a, trans_b, alpha, beta, &mm);
#endif
    return gpudl__cpu_matmul(ctx, C, A, B, trans_a, trans_b, alpha, beta, &mm);
}

/* y = alpha * x + beta * y, or out = a op b: the elementwise family. */
static gpudl_status gpudl__binary(gpudl_ctx *ctx, int op, gpudl_tensor *out, const gpudl_tensor *a, const gpudl_tensor *b) {
    int64_t i, n;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, out, "out"));
    GPUDL__TRY(gpudl__check_on(ctx, a, "a"));
    GPUDL__TRY(gpudl__check_on(ctx, b, "b"));
    GPUDL__TRY(gpudl__check_float(ctx, out, "out"));
    GPUDL__TRY(gpudl__check_same(ctx, a, "a", b, "b"));
    GPUDL__TRY(gpudl__check_same(ctx, out, "out", a, "a"));
    n = gpudl_tensor_numel(out);
#ifndef GPUDL_NO_CUDA
    if (out->device == GPUDL_DEVICE_CUDA) {
        GPUDL__LAUNCH(ctx, gpudl_k_binary(ctx->stream, op, out->data, a->data, b->data, (int)out->dtype, n));
        return GPUDL_OK;
    }
#endif
    GPUDL__OMP(omp parallel for if (n > 65536))
    for (i = 0; i < n; i++) {
        float x = gpudl__load(a->data, a->dtype, i), y = gpudl__load(b->data, b->dtype, i);
        gpudl__store(out->data, out->dtype, i, op == 0 ? x + y : x * y);
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_add(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *a, const gpudl_tensor *b) {
    return gpudl__binary(ctx, 0, out, a, b);
}

GPUDL__DEF gpudl_status gpudl_mul(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *a, const gpudl_tensor *b) {
    return gpudl__binary(ctx, 1, out, a, b);
}

/* y = alpha * x + beta * y (x may be y). */
static gpudl_status gpudl__axpby(gpudl_ctx *ctx, gpudl_tensor *y, float alpha, const gpudl_tensor *x, float beta) {
    int64_t i, n;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, y, "y"));
    GPUDL__TRY(gpudl__check_on(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_float(ctx, y, "y"));
    GPUDL__TRY(gpudl__check_same(ctx, y, "y", x, "x"));
    n = gpudl_tensor_numel(y);
#ifndef GPUDL_NO_CUDA
    if (y->device == GPUDL_DEVICE_CUDA) {
        GPUDL__LAUNCH(ctx, gpudl_k_axpby(ctx->stream, y->data, alpha, x->data, beta, (int)y->dtype, n));
        return GPUDL_OK;
    }
#endif
    GPUDL__OMP(omp parallel for if (n > 65536))
    for (i = 0; i < n; i++)
        gpudl__store(y->data, y->dtype, i, alpha * gpudl__load(x->data, x->dtype, i)
                                           + (beta == 0.0f ? 0.0f : beta * gpudl__load(y->data, y->dtype, i)));
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_scale(gpudl_ctx *ctx, gpudl_tensor *x, float alpha) {
    return gpudl__axpby(ctx, x, alpha, x, 0.0f);
}

GPUDL__DEF gpudl_status gpudl_axpy(gpudl_ctx *ctx, gpudl_tensor *y, float alpha, const gpudl_tensor *x) {
    return gpudl__axpby(ctx, y, alpha, x, 1.0f);
}

static gpudl_status gpudl__reduce(gpudl_ctx *ctx, int op, gpudl_tensor *out, const gpudl_tensor *x) {
    char so[96];
    int64_t i, n;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, out, "out"));
    GPUDL__TRY(gpudl__check_on(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_float(ctx, x, "x"));
    if (out->dtype != GPUDL_F32 || gpudl_tensor_numel(out) != 1 || out->device != x->device)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "%s: out is %s; it must be an f32 tensor of one element on x's device (%s)",
                          op ? "max" : "sum", gpudl_tensor_describe(out, so, sizeof so), gpudl__device_name(x->device));
    n = gpudl_tensor_numel(x);
#ifndef GPUDL_NO_CUDA
    if (x->device == GPUDL_DEVICE_CUDA) {
        GPUDL__LAUNCH(ctx, gpudl_k_reduce(ctx->stream, op, (float *)out->data, x->data, (int)x->dtype, n, ctx->scratch));
        return GPUDL_OK;
    }
#endif
    if (op == 0) {
        double s = 0.0;
        GPUDL__OMP(omp parallel for reduction(+:s) if (n > 65536))
        for (i = 0; i < n; i++) s += gpudl__load(x->data, x->dtype, i);
        *(float *)out->data = (float)s;
    } else {
        float m = gpudl__load(x->data, x->dtype, 0);
        for (i = 1; i < n; i++) m = gpudl_nanmax(m, gpudl__load(x->data, x->dtype, i));
        *(float *)out->data = m;
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_sum(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *x) { return gpudl__reduce(ctx, 0, out, x); }
GPUDL__DEF gpudl_status gpudl_max(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *x) { return gpudl__reduce(ctx, 1, out, x); }

GPUDL__DEF gpudl_status gpudl_argmax_rows(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *x) {
    char so[96], sx[96];
    int64_t r, c, rows, cols;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, out, "out"));
    GPUDL__TRY(gpudl__check_on(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_float(ctx, x, "x"));
    cols = x->shape[x->ndim - 1];
    rows = gpudl_tensor_numel(x) / cols;
    if (out->dtype != GPUDL_I32 || gpudl_tensor_numel(out) != rows || out->device != x->device)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "argmax_rows: x is %s (%lld rows) but out is %s: need an i32 tensor "
                          "of %lld elements on x's device", gpudl_tensor_describe(x, sx, sizeof sx), (long long)rows,
                          gpudl_tensor_describe(out, so, sizeof so), (long long)rows);
#ifndef GPUDL_NO_CUDA
    if (x->device == GPUDL_DEVICE_CUDA) {
        GPUDL__LAUNCH(ctx, gpudl_k_argmax_rows(ctx->stream, (int32_t *)out->data, x->data, (int)x->dtype, rows, cols));
        return GPUDL_OK;
    }
#endif
    GPUDL__OMP(omp parallel for private(c) if (rows * cols > 65536))
    for (r = 0; r < rows; r++) {
        float best = gpudl__load(x->data, x->dtype, r * cols);
        int32_t bi = 0;
        for (c = 1; c < cols && best == best; c++) {
            float v = gpudl__load(x->data, x->dtype, r * cols + c);
            if (v > best || v != v) { best = v; bi = (int32_t)c; }
        }
        ((int32_t *)out->data)[r] = bi;
    }
    return GPUDL_OK;
}

/* >>timing ---------------------------------------------------------------- */

GPUDL__DEF double gpudl_now(void) {
#if defined(_WIN32)
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart / (double)f.QuadPart;
#elif defined(CLOCK_MONOTONIC)
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#elif defined(_OPENMP)
    return omp_get_wtime();
#elif defined(TIME_UTC)
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#else
    /* system headers came before gpudl.h without POSIX: 1 s resolution.
       Include gpudl.h first, or build with -D_POSIX_C_SOURCE=200809L. */
    return (double)time(NULL);
#endif
}

GPUDL__DEF gpudl_status gpudl_timer_create(gpudl_ctx *ctx, gpudl_timer *timer) {
    if (timer) memset(timer, 0, sizeof *timer);
    GPUDL__ENTER(ctx);
    if (!timer) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "timer pointer is NULL");
    timer->ctx = ctx;
#ifndef GPUDL_NO_CUDA
    if (ctx->device == GPUDL_DEVICE_CUDA) {
        GPUDL__CUDA(ctx, cudaEventCreate((cudaEvent_t *)&timer->ev[0]));
        GPUDL__CUDA(ctx, cudaEventCreate((cudaEvent_t *)&timer->ev[1]));
    }
#endif
    return GPUDL_OK;
}

GPUDL__DEF void gpudl_timer_destroy(gpudl_timer *timer) {
    if (!timer) return;
#ifndef GPUDL_NO_CUDA
    if (timer->ev[0]) cudaEventDestroy((cudaEvent_t)timer->ev[0]);
    if (timer->ev[1]) cudaEventDestroy((cudaEvent_t)timer->ev[1]);
#endif
    memset(timer, 0, sizeof *timer);
}

static gpudl_status gpudl__timer_mark(gpudl_timer *timer, int i) {
    if (!timer || !timer->ctx) return GPUDL_ERR_INVALID_ARG;
    GPUDL__ENTER(timer->ctx);
#ifndef GPUDL_NO_CUDA
    if (timer->ev[i]) {
        GPUDL__CUDA(timer->ctx, cudaEventRecord((cudaEvent_t)timer->ev[i], timer->ctx->stream));
        return GPUDL_OK;
    }
#endif
    timer->t[i] = gpudl_now();
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_timer_start(gpudl_timer *timer) { return gpudl__timer_mark(timer, 0); }
GPUDL__DEF gpudl_status gpudl_timer_stop(gpudl_timer *timer) { return gpudl__timer_mark(timer, 1); }

GPUDL__DEF gpudl_status gpudl_timer_elapsed_ms(gpudl_timer *timer, double *ms) {
    if (!timer || !timer->ctx || !ms) return GPUDL_ERR_INVALID_ARG;
    GPUDL__ENTER(timer->ctx);
#ifndef GPUDL_NO_CUDA
    if (timer->ev[0]) {
        float f = 0.0f;
        GPUDL__CUDA(timer->ctx, cudaEventSynchronize((cudaEvent_t)timer->ev[1]));
        GPUDL__CUDA(timer->ctx, cudaEventElapsedTime(&f, (cudaEvent_t)timer->ev[0], (cudaEvent_t)timer->ev[1]));
        *ms = f;
        return GPUDL_OK;
    }
#endif
    *ms = 1e3 * (timer->t[1] - timer->t[0]);
    return GPUDL_OK;
}

static int gpudl__cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

GPUDL__DEF gpudl_status gpudl_bench(gpudl_ctx *ctx, gpudl_bench_fn fn, void *user, const gpudl_bench_desc *desc,
                                    gpudl_bench_result *result) {
    gpudl_bench_desc d;
    gpudl_timer tm;
    double *ms, one = 0.0;
    int i, j, calls;
    gpudl_status s = GPUDL_OK;
    GPUDL__ENTER(ctx);
    if (!fn || !result) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "bench: fn and result must not be NULL");
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (d.warmup <= 0) d.warmup = 3;
    if (d.reps <= 0) d.reps = 20;
    if (d.min_sample_ms <= 0.0) d.min_sample_ms = 1.0;
    memset(result, 0, sizeof *result);
    GPUDL__TRY(gpudl_timer_create(ctx, &tm));
    ms = (double *)GPUDL_MALLOC(sizeof(double) * (size_t)d.reps);
    if (!ms) { gpudl_timer_destroy(&tm); return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "bench: no memory for %d samples", d.reps); }
    /* warm-up; the last warm-up call alone estimates the cost of one call */
    for (i = 0; i < d.warmup && s == GPUDL_OK; i++) {
        if (i == d.warmup - 1) s = gpudl_timer_start(&tm);
        if (s == GPUDL_OK) s = fn(ctx, user);
        if (s == GPUDL_OK && i == d.warmup - 1) s = gpudl_timer_stop(&tm);
        if (s == GPUDL_OK && i == d.warmup - 1) s = gpudl_timer_elapsed_ms(&tm, &one);
    }
    calls = one > 0.0 ? (int)(d.min_sample_ms / one) + 1 : 1000;
    if (calls < 1) calls = 1;
    if (calls > 100000) calls = 100000;
    for (i = 0; i < d.reps && s == GPUDL_OK; i++) {
        s = gpudl_timer_start(&tm);
        for (j = 0; j < calls && s == GPUDL_OK; j++) s = fn(ctx, user);
        if (s == GPUDL_OK) s = gpudl_timer_stop(&tm);
        if (s == GPUDL_OK) s = gpudl_timer_elapsed_ms(&tm, &ms[i]);
        ms[i] /= calls;
    }
    if (s == GPUDL_OK) {
        qsort(ms, (size_t)d.reps, sizeof *ms, gpudl__cmp_double);
        result->min_ms = ms[0];
        result->max_ms = ms[d.reps - 1];
        result->median_ms = (d.reps % 2) ? ms[d.reps / 2] : 0.5 * (ms[d.reps / 2 - 1] + ms[d.reps / 2]);
        result->reps = d.reps;
        result->calls_per_sample = calls;
        if (d.flops > 0 && result->median_ms > 0) result->gflops = d.flops / (result->median_ms * 1e6);
        if (d.bytes > 0 && result->median_ms > 0) result->gbs = d.bytes / (result->median_ms * 1e6);
    }
    GPUDL_FREE(ms);
    gpudl_timer_destroy(&tm);
    return s;
}

/* >>device-info ----------------------------------------------------------- */

#ifndef GPUDL_NO_CUDA
/* FP32 lanes and dense FP16 tensor-core FLOP per clock per SM, by architecture. */
static void gpudl__sm_rates(int major, int minor, int *fp32_lanes, int *fp16_tc_flops) {
    int cc = major * 10 + minor;
    *fp32_lanes = cc >= 86 ? 128 : cc == 80 ? 64 : cc >= 70 ? 64 : cc >= 60 ? (cc == 60 ? 64 : 128) : 128;
    *fp16_tc_flops = cc >= 100 ? 8192 : cc >= 90 ? 4096 : cc == 80 ? 2048 : cc >= 70 ? 1024 : 0;
}
#endif

GPUDL__DEF gpudl_status gpudl_device_info_get(gpudl_ctx *ctx, gpudl_device_info *info) {
    GPUDL__ENTER(ctx);
    if (!info) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "device_info: info pointer is NULL");
    memset(info, 0, sizeof *info);
    info->device = ctx->device;
#ifndef GPUDL_NO_CUDA
    info->cublas_version = CUBLAS_VERSION;
    info->cudnn_version = (int)cudnnGetVersion();
    (void)cudaRuntimeGetVersion(&info->cuda_runtime);
    (void)cudaDriverGetVersion(&info->cuda_driver);
    snprintf(info->archs, sizeof info->archs, "%s", gpudl_k_archs());
    if (ctx->device == GPUDL_DEVICE_CUDA) {
        struct cudaDeviceProp p;
        int dev = ctx->cuda_device, v = 0, lanes, tc;
        GPUDL__CUDA(ctx, cudaGetDeviceProperties(&p, dev));
        snprintf(info->name, sizeof info->name, "%s", p.name);
        info->sm_count = p.multiProcessorCount;
        info->cc_major = p.major;
        info->cc_minor = p.minor;
        info->l2_bytes = p.l2CacheSize;
        GPUDL__CUDA(ctx, cudaMemGetInfo(&info->mem_free, &info->mem_total));
        /* CUDA 13 dropped the clock fields from cudaDeviceProp */
        if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, dev) == cudaSuccess) info->clock_mhz = v / 1000;
        if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, dev) == cudaSuccess) info->mem_clock_mhz = v / 1000;
        if (cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, dev) == cudaSuccess) info->mem_bus_bits = v;
        (void)cudaGetLastError();
        gpudl__sm_rates(p.major, p.minor, &lanes, &tc);
        info->peak_fp32_tflops = 2.0 * lanes * info->sm_count * info->clock_mhz * 1e-6;
        info->peak_fp16_tflops = (double)tc * info->sm_count * info->clock_mhz * 1e-6;
        info->peak_tf32_tflops = info->peak_fp16_tflops / 2.0;
        /* double data rate: two transfers per memory clock */
        info->peak_mem_gbs = 2.0 * info->mem_clock_mhz * 1e6 * (info->mem_bus_bits / 8.0) * 1e-9;
        return GPUDL_OK;
    }
#endif
    snprintf(info->name, sizeof info->name, "CPU");
#if defined(__linux__)
    {
        FILE *f = fopen("/proc/cpuinfo", "r");
        char line[512];
        while (f && fgets(line, sizeof line, f)) {
            if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
                char *v = strchr(line, ':') + 2, *nl = strchr(v, '\n');
                if (nl) *nl = 0;
                snprintf(info->name, sizeof info->name, "%s", v);
                break;
            }
        }
        if (f) fclose(f);
    }
#endif
    info->sm_count = gpudl__num_threads(ctx);
    return GPUDL_OK;
}

#endif /* GPUDL__IMPLEMENTED */
#endif /* GPUDL_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 the gpudl authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
