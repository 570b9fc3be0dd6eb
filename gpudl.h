/* gpudl.h - v0.1.0 - deep learning on NVIDIA GPUs (and CPUs) in two files - MIT

   Do this:
       #define GPUDL_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the
   implementation. Every other file includes it plainly.

       #include ...
       #define GPUDL_IMPLEMENTATION
       #include "gpudl.h"

   The CUDA kernels live in the companion file gpudl_kernels.cu. The
   implementation uses POSIX (clock_gettime, stat, fsync): include gpudl.h
   before any system header in that file (it then asks for POSIX itself),
   or build it with -D_POSIX_C_SOURCE=200809L.

   BUILD
       GPU:  nvcc -O2 -o app app.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
       CPU:  cc -O2 -DGPUDL_NO_CUDA -o app app.c -lm
             (add -fopenmp for threads; -DGPUDL_CBLAS -lopenblas to route
              FP32 GEMM to a CBLAS)

   COMPILE OPTIONS (define before including the implementation)
       GPUDL_NO_CUDA        build the CPU backend only: no CUDA header or
                            library is needed, any C99 or C++ compiler works
       GPUDL_CBLAS          CPU FP32 GEMM through cblas_sgemm (link a CBLAS)
       GPUDL_ZLIB           .gz data files through zlib (link -lz); without
                            it gpudl's own inflate reads them
       GPUDL_MPI, GPUDL_NCCL
                            data parallel over ranks (the dist section)
       GPUDL_NO_SIMD        CPU GEMM without the AVX2/AVX-512 micro-kernels,
                            attention without GNU C's vector types
       GPUDL_STATIC         make every gpudl_ function static to this file
                            (in a .cu file built by nvcc the kernels too:
                            gpudl_kernels.cu is then included, not linked)
       GPUDL_SHARED         a shared library exporting gpudl's API only
                            (with -fvisibility=hidden; dllexport on Windows)
       GPUDL_NO_STDIO       the header includes no <stdio.h>/<stdlib.h>
       GPUDL_NO_MACRO_GUARD do not save/restore the program's one-letter
                            macros around gpudl.h
       GPUDL_MALLOC, GPUDL_REALLOC, GPUDL_FREE
                            host allocator (define all three or none)
       GPUDL_CUDNN_WORKSPACE_LIMIT
                            the most device memory (bytes) a cuDNN
                            convolution algorithm may use as workspace;
                            default 256 MiB (faster algorithms that need
                            more are passed over)

   SETTINGS: in gpudl_ctx_desc (zero = default); gpudl.h reads no
   environment variable.

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
          with gpudl_ctx_last_error(); unless you set a logger it is also
          printed to stderr as it happens. The library never calls exit() or
          abort(); GPUDL_CHECK is a convenience for examples and tests.
       2. Context. Owns the device choice, the CUDA stream, the cuBLAS and
          cuDNN handles, the GEMM workspace, the RNG state and the logger.
          Two contexts are independent (each its stream, handles,
          workspace, RNG, logger, overrides) and may be created and used
          in two threads at once. Process-wide, as the cores are, and only
          in OpenMP builds on Linux: the CPU-sharing monitor (how many
          threads every loop runs without while other programs hold the
          cores: updated under a lock, read with atomics), and, only when a context asks (bind_threads = 1), the
          one binding of OpenMP's threads. OpenMP's thread pool is
          OpenMP's: it starts at the first parallel loop and stays, as for
          any OpenMP code. A context installs no signal handler, changes
          no locale, writes no environment variable, leaves the affinity
          of every thread alone, and changes the FP environment only in
          gpudl_cpu_flush_denormals (tests/test_guest.c checks it).
       3. Tensors. Plain structs, row-major and contiguous, up to 4 dims.
          A tensor lives on the host (GPUDL_DEVICE_CPU) or on the GPU
          (GPUDL_DEVICE_CUDA). An op runs where its operands live: host
          tensors on the CPU backend, device tensors on the CUDA backend;
          mixing them is an error that names both sides. A device tensor
          belongs to the context that created it (its stream, its GPU):
          another context's, or a copy of the struct kept after
          gpudl_tensor_free, is refused by name (the context's allocation
          registry); gpudl_tensor_copy alone takes another context's
          device tensor, to move data between contexts (gpudl_ctx_sync the
          other one first: its work runs on its own stream). A host tensor
          is plain memory any context may read; using a copy of a freed
          host tensor is undefined, as any pointer after free()
          (AddressSanitizer finds it; gpudl_tensor_free itself refuses a
          second free). A model belongs to the context that created it:
          another context is refused.
       4. Asynchrony. Device ops are queued on the context's stream and
          return at once. Anything that hands a number to the host
          (gpudl_tensor_copy to a host tensor, gpudl_tensor_item) waits.
       5. Precision. FP32 GEMMs follow the context's math mode (strict FP32
          by default, or TF32 on tensor cores); F16 and BF16 GEMMs always
          accumulate in FP32. The CPU backend computes F16/BF16 through
          FP32 and ignores TF32 (it is always at least as accurate).
       6. Layers. Each is a forward/backward pair (outputs first); backward
          overwrites input gradients and accumulates (+=) parameter
          gradients. All layer math per element (activations, optimizer
          updates, pooling windows, batch norm, dropout masks, FP16/BF16
          rounding, the loss scaler) is written once in GPUDL_HD functions
          that the CPU loops and the CUDA kernels both call. Three CPU fast
          paths restate it, each held to it by a test: the bulk FP16/BF16
          conversions (test half_bulk_conversions), the SSE 2x2 max pool
          (pool2d_2x2_special) and the bias in the GEMM's store (linear).
       7. Models. gpudl_model_create, add layers, gpudl_model_build (one
          allocation each for parameters, gradients and optimizer state,
          activations sized for max_batch), then per step: zero_grad,
          forward, loss, backward, step. Nothing in a step waits for the
          GPU unless you ask for a number (gpudl_model_loss_value). MLPs,
          CNNs and GPTs: a model of sequences starts with an embedding of
          token ids, and has layer norm, causal self-attention and residual
          pairs as layers (a GPT in about 20 lines: examples/gpt_text.c).
       8. Mixed precision. gpudl_model_set_precision: FP32 master weights,
          gradients and optimizer state; f16/bf16 weight copy, activations
          and activation gradients (layer ops take f32, f16 or bf16
          activations; weight gradients are always f32); for FP16 a dynamic
          loss scaler kept on the device (the amp section).
       9. Data and files. gpudl_idx_load / gpudl_mnist_load are strict,
          never leave a half-built tensor, and read .gz files in every build
          (Debian's dataset-fashion-mnist); gpudl_dataset keeps a data set on
          the device. Checkpoints are safetensors files, written atomically
          (temporary file, fsync, rename) and validated completely before a
          load touches the model.
      10. Threads. A context (and everything made with it) is used by one
          thread at a time; use one context per thread. CPU ops use OpenMP
          when built with -fopenmp (OMP_NUM_THREADS, or desc.num_threads);
          on Linux their loops use fewer threads while other programs keep
          the cores busy (desc.share_cpu), with the same results.
          gpudl_cpu_flush_denormals(ctx, 1) makes CPU training immune to
          the slowdown of subnormal floats (opt-in; the examples use it).
      11. Your own code. A layer gpudl lacks joins a model with
          gpudl_model_add_custom (forward/backward callbacks and parameter
          shapes; everything else works for it). A built-in op (the GEMM,
          activations, softmax cross-entropy, max pooling, convolution,
          SGD/Adam) is replaced per context and device with
          gpudl_ctx_set_ops, and every caller uses the replacement.
          gpudl_check_op and gpudl_check_layer check them against float64
          references and explain a failure; gpudl_time_op times an
          override against gpudl's own on a GPU (the override section;
          assignments/ builds teaching assignments on them).

   SECTIONS
       Each name below tags a section (a comment line: ">>", the name and
       dashes) in up to three places, in this order: D, the declarations
       (the API; then what the kernels share: the per-element GPUDL_HD math
       and the prototypes of the section's gpudl_k_* launchers, which launch
       on the stream they are given and return cudaGetLastError(); arguments
       are checked before); I, the implementation (CPU code, CUDA host
       code); K, gpudl_kernels.cu (each kernel next to its launcher). A grep
       for a tag (">>" and the name) in both files shows all of a section;
       tools/check_sections.py (run by make test) keeps them in step.
         config      includes, build switches, the context struct      I
         status      status codes and messages, CUDA/library errors  D I
         types       dtypes, devices, the tensor struct              D
         half        FP16/BF16 rounding, element loads and stores    D I K
         context     device choice, stream, handles, device info     D I K
         tensor      create, free, copy, cast, fill; memory          D I K
         rng         the counter-based RNG, random fills             D I K
         matmul      GEMM: CPU micro-kernels or CBLAS; cuBLAS        D I
         arith       add, mul, scale, axpy; sum, max, argmax         D I K
         activation  ReLU, LeakyReLU, GELU, tanh, sigmoid            D I K
         linear      linear layer, bias add, bias gradients          D I K
         loss        softmax cross-entropy, MSE                      D I K
         conv        2-D convolution                                 D I K
         pool        max and average pooling                         D I K
         batchnorm   batch normalisation                             D I K
         dropout     inverted dropout                                D I K
         transformer embeddings, layer norm, causal self-attention   D I K
         model       sequential models, the table of layer kinds     D I K
         optim       SGD, Adam, AdamW, schedules, clipping           D I K
         amp         mixed precision, the loss scaler                D I K
         data        IDX/MNIST loaders, datasets on the device       D I K
         io          safetensors checkpoints                         D I
         gradcheck   finite-difference gradient checks               D I
         timing      timers, gpudl_bench                             D I
         progress    the progress bar                                D I
         doctor      the self-check of a build on a machine          D I
         override    the user's ops in place of gpudl's; check, time D I
         dist        data parallel over ranks: MPI, NCCL             D I

   FEATURES    CPU (OpenMP threads)        GPU                       dtypes
       matmul      AVX2/AVX-512 GEMM, CBLAS    cuBLAS (+TF32 mode)       f32 f16 bf16
       arith       vectorised loops            own kernels               f32 f16 bf16
       activation  vectorised loops            own kernels               f32 f16 bf16
       linear      GEMM, bias in its store     cuBLASLt epilogues (bias, f32 f16 bf16
                                               ReLU+mask, DRELU, BGRADB);
                                               cuBLAS + kernels if none
       loss        loops (float64 sums)        own kernels               f32 f16 bf16
       conv        im2col + GEMM               cuDNN (conv+bias+ReLU     f32 f16 bf16
                                               fused where it can)
       pool        loops, SSE 2x2 path         own kernels               f32 f16 bf16
       batchnorm   loops (float64 sums)        own kernels               f32 f16 bf16
       dropout     vectorised loop             own kernel                f32 f16 bf16
       transformer loops over rows and heads   cuBLAS batched GEMMs +    f32 f16 bf16
                                               own kernels; fused path;
                                               residual adds in the layer
                                               norms (a GPT step: 12 + 24 L
                                               device operations)
       optim       one fused loop              one fused kernel          f32
       amp         loops                       own kernels               f16 bf16
       data        gather by index             gather kernel             u8 -> f32 f16 bf16
       The CPU computes f16/bf16 through f32 copies and rounds once; batch
       norm's parameters and statistics, losses and optimizer state are f32.

   LICENSE
       MIT, see the end of this file.
*/
#ifndef GPUDL_H
#define GPUDL_H

/* The macro guard: a program's one-letter macros (#define N 1024, before this
   include) must not reach the header's parameter and field names (M, N, K,
   H, W, ...), nor min and max (a C++ library header undefines those): each
   is saved, undefined while gpudl.h is read, and restored after it
   (push_macro: GCC, Clang, nvcc with either as its host compiler;
   GPUDL_NO_MACRO_GUARD turns it off). The fields keep their names: a
   program that defines H cannot write s.H, as with any struct. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(GPUDL_NO_MACRO_GUARD)
  _Pragma("push_macro(\"A\")") _Pragma("push_macro(\"B\")") _Pragma("push_macro(\"C\")") _Pragma("push_macro(\"D\")") _Pragma("push_macro(\"E\")") _Pragma("push_macro(\"F\")") _Pragma("push_macro(\"G\")") _Pragma("push_macro(\"H\")") _Pragma("push_macro(\"I\")")
  _Pragma("push_macro(\"J\")") _Pragma("push_macro(\"K\")") _Pragma("push_macro(\"L\")") _Pragma("push_macro(\"M\")") _Pragma("push_macro(\"N\")") _Pragma("push_macro(\"O\")") _Pragma("push_macro(\"P\")") _Pragma("push_macro(\"Q\")") _Pragma("push_macro(\"R\")")
  _Pragma("push_macro(\"S\")") _Pragma("push_macro(\"T\")") _Pragma("push_macro(\"U\")") _Pragma("push_macro(\"V\")") _Pragma("push_macro(\"W\")") _Pragma("push_macro(\"X\")") _Pragma("push_macro(\"Y\")") _Pragma("push_macro(\"Z\")") _Pragma("push_macro(\"min\")") _Pragma("push_macro(\"max\")")
#  undef A
#  undef B
#  undef C
#  undef D
#  undef E
#  undef F
#  undef G
#  undef H
#  undef I
#  undef J
#  undef K
#  undef L
#  undef M
#  undef N
#  undef O
#  undef P
#  undef Q
#  undef R
#  undef S
#  undef T
#  undef U
#  undef V
#  undef W
#  undef X
#  undef Y
#  undef Z
#  undef min
#  undef max
#endif

/* The implementation needs POSIX clocks and files; ask for them when this is
   the first include of the translation unit (as it should be). */
#if defined(GPUDL_IMPLEMENTATION) && !defined(_WIN32) && !defined(__cplusplus) && !defined(_POSIX_C_SOURCE) \
    && !defined(_GNU_SOURCE) && !defined(_XOPEN_SOURCE) && !defined(_DEFAULT_SOURCE)
#  define _POSIX_C_SOURCE 200809L
#  define _DEFAULT_SOURCE 1   /* and what glibc gives by default (syscall, for binding threads) */
#  define GPUDL__ASKED_POSIX 1   /* too late if a system header came first: see fileno below */
#endif

#define GPUDL_VERSION_MAJOR 0
#define GPUDL_VERSION_MINOR 1
#define GPUDL_VERSION_PATCH 0
#define GPUDL_VERSION_STRING "0.1.0"

/* Linkage of the API: extern; static with GPUDL_STATIC; with
   GPUDL_SHARED, gpudl built as (or into) a shared library that exports
   its API and nothing else: compile with -fvisibility=hidden and the API
   is visibility("default") (GCC, Clang), dllexport where the
   implementation is and dllimport elsewhere (Windows). A shared library of
   your own that must export none of gpudl: -fvisibility=hidden alone. */
#ifndef GPUDL_API
#  if defined(GPUDL_STATIC) && defined(__GNUC__)
#    define GPUDL_API static __attribute__((unused))
#  elif defined(GPUDL_STATIC)
#    define GPUDL_API static
#  elif defined(GPUDL_SHARED) && defined(_WIN32) && defined(GPUDL_IMPLEMENTATION)
#    define GPUDL_API extern __declspec(dllexport)
#  elif defined(GPUDL_SHARED) && defined(_WIN32)
#    define GPUDL_API extern __declspec(dllimport)
#  elif defined(GPUDL_SHARED) && (defined(__GNUC__) || defined(__clang__))
#    define GPUDL_API extern __attribute__((visibility("default")))
#  else
#    define GPUDL_API extern
#  endif
#endif

/* Linkage of the kernels and their launchers (gpudl_k_*, gpudl_kernels.cu):
   extern "C" launchers in their own translation unit, the two-file build.
   With GPUDL_STATIC in a .cu file that nvcc compiles and that holds the
   implementation, the implementation includes gpudl_kernels.cu itself and
   its kernels and launchers are static as well: two copies of gpudl in one
   program then share no symbol at all (do not compile gpudl_kernels.cu
   separately as well; it would only add an unused exported copy). */
#if defined(GPUDL_STATIC) && defined(GPUDL_IMPLEMENTATION) && defined(__CUDACC__) && !defined(GPUDL_NO_CUDA)
#  define GPUDL__KERNELS_PRIVATE 1
#  ifdef __GNUC__
#    define GPUDL__KFN static __attribute__((unused))
#  else
#    define GPUDL__KFN static
#  endif
#  define GPUDL__KFN_C GPUDL__KFN
#else
#  define GPUDL__KFN
#  define GPUDL__KFN_C extern "C"
#endif

/* Per-element math is written once and compiled for both the host and the
   device: GPUDL_HD is __host__ __device__ under nvcc and nothing elsewhere. */
#if defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__))
#  define GPUDL_HD __host__ __device__ __attribute__((unused))   /* a .cu that uses few of them: no -Wunused-function */
#elif defined(__CUDACC__)
#  define GPUDL_HD __host__ __device__
#else
#  define GPUDL_HD
#endif

#if !defined(__cplusplus) && !defined(_MSC_VER) && (!defined(__STDC_VERSION__) || __STDC_VERSION__ < 199901L)
#  error "gpudl: gpudl.h needs C99 or later (int64_t, inline, // comments), or C++: compile with -std=c99 (or gnu99, c11, c17)."
#endif

#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__ && !defined(__CUDA_ARCH__)
#  error "gpudl: do not build with -ffast-math / -ffinite-math-only: gpudl checks for NaN and Inf (loss scaling, tests)."
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

/* >>status ---------------------------------------------------------------- */
typedef enum gpudl_status {
    GPUDL_OK                  =   0,
    GPUDL_ERR_INVALID_ARG     =  -1,  /* NULL, bad value, wrong dtype or device */
    GPUDL_ERR_SHAPE           =  -2,  /* shapes do not fit together            */
    GPUDL_ERR_OOM             =  -3,  /* host or device allocation failed      */
    GPUDL_ERR_NO_DEVICE       =  -4,  /* CUDA asked for, no usable GPU/driver  */
    GPUDL_ERR_CUDA            =  -5,  /* a CUDA runtime call failed            */
    GPUDL_ERR_CUDA_FATAL      =  -6,  /* sticky CUDA error: restart the process*/
    GPUDL_ERR_CUBLAS          =  -7,  /* a cuBLAS / cuBLASLt call failed       */
    GPUDL_ERR_CUDNN           =  -8,  /* a cuDNN call failed                   */
    GPUDL_ERR_IO              =  -9,  /* open/read/write/rename failed         */
    GPUDL_ERR_FORMAT          = -10,  /* a file is malformed                   */
    GPUDL_ERR_NONFINITE       = -11,  /* NaN or Inf where a number was needed  */
    GPUDL_ERR_UNSUPPORTED     = -12,  /* not built in, or not on this device   */
    GPUDL_ERR_DIST            = -13   /* another rank failed, or did not answer */
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

/* Logger callback. Without one (desc->log NULL) errors and warnings go to
   stderr, so a failure's message reaches you wherever the status is checked;
   gpudl_log_stderr prints every level, gpudl_log_quiet nothing. */
typedef void (*gpudl_log_fn)(void *user, gpudl_log_level level, const char *msg);

GPUDL_API void gpudl_log_stderr(void *user, gpudl_log_level level, const char *msg);
GPUDL_API void gpudl_log_quiet(void *user, gpudl_log_level level, const char *msg);

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

/* Element i of an array of dtype dt, as float: the one element loader of
   both backends (the kernels' typed loads are gpudl__to_f32). */
GPUDL_HD static inline float gpudl__elem_get(const void *p, int dt, int64_t i) {
    if (dt == GPUDL_F16) return gpudl_f16_to_f32(((const uint16_t *)p)[i]);
    if (dt == GPUDL_BF16) return gpudl_bf16_to_f32(((const uint16_t *)p)[i]);
    if (dt == GPUDL_U8) return (float)((const uint8_t *)p)[i];
    if (dt == GPUDL_I32) return (float)((const int32_t *)p)[i];
    return ((const float *)p)[i];
}

/* >>context --------------------------------------------------------------- */
/* Context description: zero every field you do not care about.
   device         GPUDL_DEVICE_AUTO (0): CUDA when usable, else the CPU
                  (the reason is logged once at INFO level).
   cuda_device    CUDA ordinal; 0 = the first GPU.
   math_mode      0 = GPUDL_MATH_FP32 (strict).
   seed           RNG seed; 0 = 0x5EED.
   num_threads    CPU threads for OpenMP builds; 0 = OpenMP's default.
   share_cpu      0 = OpenMP builds on Linux run their parallel loops on
                  the cores other programs leave them: a thread fewer
                  while this process's threads wait for cores, one back
                  when a core sits idle (checked every 0.1-0.5 s). A loop's
                  threads wait for each other, and one that shares its
                  core with a busy program runs only in time slices (one
                  epoch of the demo CNN on 2 cores, one busy: 114 s on 2
                  threads, 68 s on 1). The work is split the same way
                  whoever runs it, so results do not change.
                  -1 = this context's GEMMs, convolutions and optimizer
                  steps always on num_threads (a benchmark of the
                  threads); elementwise loops follow the process's state.
   bind_threads   0 = never: a context leaves the affinity of the process's
                  threads as it found them (a library is a guest). 1 = a
                  program that owns its process asks: in a CPU-only build
                  (GPUDL_NO_CUDA) on Linux, when the environment does not
                  place OpenMP's threads (OMP_PROC_BIND, OMP_PLACES,
                  GOMP_CPU_AFFINITY, KMP_AFFINITY unset), the first context
                  that asks binds its N >= 2 threads, the calling one
                  included, to the first N cores the process may use, as
                  OMP_PROC_BIND=true would. Unbound, two threads could share a
                  core: a 256^3 GEMM call took 4-8 ms instead of 0.4 in 27 of 40
                  fresh processes, bound in none; the examples and the
                  benchmarks ask (so would OMP_PROC_BIND=true in the
                  environment). Threads the calling thread starts later
                  inherit its core (as under OMP_PROC_BIND): start them
                  first. -1 = never (as 0).
   workspace_bytes  cuBLAS workspace; 0 = 32 MiB.
   stream         a cudaStream_t to run on; NULL = the context makes its own.
   sync_debug     1 = synchronise after every launch, so an asynchronous
                  fault is reported by the op that caused it (slow).
   log, log_user  logger; NULL = errors and warnings to stderr.
   cublaslt       GPU linear layers put their bias (and a following ReLU and
                  its mask) in cuBLASLt's GEMM epilogue, and in backward the
                  bias gradient (BGRADB) and the ReLU's backward (DRELU):
                  0 = the default, on; 1 = on; -1 = off (cuBLAS and gpudl's
                  kernels). Where cuBLASLt offers no algorithm for a shape
                  the layer takes the plain path by itself. (That ReLU is
                  cuBLASLt's: whether it keeps a NaN is its business; on
                  the emulated device, as with fmaxf, a NaN gives 0 and a
                  0 gradient through DRELU's mask: see gpudl_act_forward.)
   cpu_gemm       the CPU GEMM micro-kernel: GPUDL_CPU_GEMM_AUTO (0) = the
                  best this CPU runs; _C, _AVX2, _AVX512 (x86-64), _NEON
                  (aarch64) force one (a kernel the CPU lacks falls back to
                  the best it has). */
typedef enum gpudl_cpu_gemm {
    GPUDL_CPU_GEMM_AUTO = 0, GPUDL_CPU_GEMM_C = 1, GPUDL_CPU_GEMM_AVX2 = 2, GPUDL_CPU_GEMM_AVX512 = 3,
    GPUDL_CPU_GEMM_NEON = 4   /* aarch64 */
} gpudl_cpu_gemm;

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
    int             cublaslt;
    gpudl_cpu_gemm  cpu_gemm;
    int             bind_threads;
    int             share_cpu;
} gpudl_ctx_desc;

/* Creates a context. desc may be NULL (all defaults). On failure *out is
   NULL and the status says why; for an explicit GPUDL_DEVICE_CUDA request
   on a machine without a usable GPU the status is GPUDL_ERR_NO_DEVICE and
   the logged message tells "no driver", "driver too old" and "no device"
   apart. (Without a context, the message goes to desc->log.)
   Returns GPUDL_OK, or
     GPUDL_ERR_INVALID_ARG  out is NULL, or a desc field is not one of its values
     GPUDL_ERR_NO_DEVICE    device GPUDL_DEVICE_CUDA, and no usable GPU, driver, or
                            code for this GPU's architecture (or a CPU-only build)
     GPUDL_ERR_OOM          no host memory, or no device memory for the workspace
     GPUDL_ERR_CUDA         a CUDA call failed while setting up the device
     GPUDL_ERR_CUDA_FATAL   the device is in a sticky error state (restart the process)
   With GPUDL_DEVICE_AUTO a GPU that cannot be used is not an error: the
   context runs on the CPU and an INFO message says why. */
GPUDL_API gpudl_status gpudl_ctx_create(const gpudl_ctx_desc *desc, gpudl_ctx **out);

/* Waits for queued work, then releases everything the context owns. NULL is
   fine. What the program left behind is reported (a warning): models not
   destroyed (they are destroyed now), datasets not freed, then its own
   tensors not freed, each with the call that would have freed it. */
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

/* CPU float arithmetic: on != 0 flushes subnormal (denormal) floats to zero
   in the calling thread and in the context's OpenMP threads (x86 MXCSR
   flush-to-zero + denormals-are-zero, as PyTorch's
   torch.set_flush_denormal(True)); 0 restores IEEE behaviour. FP32 training
   on a CPU slows down by 10-20% once gradients and moments decay into the
   subnormal range (below 1.2e-38), where every operation takes a microcode
   assist; flushed, only those values change. The setting belongs to the
   threads, not the context: call it again after creating threads of your
   own. GPUDL_ERR_UNSUPPORTED on CPUs without such a mode (non-x86 builds). */
GPUDL_API gpudl_status gpudl_cpu_flush_denormals(gpudl_ctx *ctx, int on);

/* Resets the context's RNG. Random fills draw from a counter-based
   generator (seed, offset): the same seed and call sequence give the same
   numbers on the CPU and on the GPU. */
GPUDL_API void gpudl_ctx_set_seed(gpudl_ctx *ctx, uint64_t seed);

/* The cudaStream_t the context runs on (NULL on the CPU). */
GPUDL_API void *gpudl_ctx_stream(const gpudl_ctx *ctx);

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

GPUDL__KFN int gpudl_k_probe(void *stream);
GPUDL__KFN const char *gpudl_k_archs(void);
/* the device's multiprocessors, for the kernels' grid sizes (at context creation) */
GPUDL__KFN void gpudl_k_set_sm_count(int device, int sms);

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
   is only zeroed, so a second free is harmless. Freeing memory this context
   did not allocate, or already freed through a copy of the struct, frees
   nothing and records GPUDL_ERR_INVALID_ARG (gpudl_ctx_last_error). */
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

GPUDL__KFN int gpudl_k_fill(void *stream, void *x, int dtype, int64_t n, float value);
/* x[i] = bits for 32-bit words (an I32 fill) */
GPUDL__KFN int gpudl_k_fill_u32(void *stream, uint32_t *x, int64_t n, uint32_t bits);
GPUDL__KFN int gpudl_k_cast(void *stream, void *dst, int dst_dtype, const void *src, int src_dtype, int64_t n);

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
GPUDL_HD static inline float gpudl_rng_normal(uint64_t seed, uint64_t i) {
    uint64_t r = gpudl_rng_bits(seed, i);
    float u1 = ((float)(r >> 40) + 1.0f) * (1.0f / 16777216.0f);        /* (0, 1] */
    float u2 = (float)((r >> 16) & 0xffffffu) * (1.0f / 16777216.0f);   /* [0, 1) */
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795865f * u2);
}

/* The value a random fill stores for counter i: a + (b - a) u for a uniform
   u in [0, 1), or a + b z for a standard normal z. The product of two floats
   is exact in double, so the sum is rounded once whether or not the compiler
   fuses the multiply-add (nvcc does by default, host compilers may): the GPU
   and the CPU store the same float. */
GPUDL_HD static inline float gpudl_rng_fill_value(uint64_t seed, uint64_t i, int normal, float a, float b) {
    if (normal) return (float)((double)a + (double)b * (double)gpudl_rng_normal(seed, i));
    {
        float scale = b - a;
        return (float)((double)a + (double)scale * (double)gpudl_rng_uniform(seed, i));
    }
}

GPUDL__KFN int gpudl_k_random(void *stream, void *x, int dtype, int64_t n, uint64_t seed, uint64_t offset,
                   int normal, float a, float b);

/* >>matmul ---------------------------------------------------------------- */
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

/* >>arith ----------------------------------------------------------------- */
/* max that propagates NaN: the rule of gpudl_max on both backends. */
GPUDL_HD static inline float gpudl__nanmax(float a, float b) { return (a != a || a > b) ? a : b; }

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

typedef enum gpudl_k_binop { GPUDL_K_ADD = 0, GPUDL_K_MUL = 1 } gpudl_k_binop;
typedef enum gpudl_k_redop { GPUDL_K_SUM = 0, GPUDL_K_MAX = 1 } gpudl_k_redop;

GPUDL__KFN int gpudl_k_binary(void *stream, int op, void *out, const void *a, const void *b, int dtype, int64_t n);
GPUDL__KFN int gpudl_k_axpby(void *stream, void *y, float alpha, const void *x, float beta, int dtype, int64_t n);
/* scratch: at least gpudl_k_reduce_scratch() floats of device memory. */
GPUDL__KFN int64_t gpudl_k_reduce_scratch(void);
GPUDL__KFN int gpudl_k_reduce(void *stream, int op, float *out, const void *x, int dtype, int64_t n, float *scratch);
GPUDL__KFN int gpudl_k_argmax_rows(void *stream, int32_t *out, const void *x, int dtype, int64_t rows, int64_t cols);

/* >>activation ------------------------------------------------------------ */
/* Shape letters: N batch, C channels (in), O channels/features (out),
   H W height width, K classes, F features (in).
   Every layer is a forward/backward pair, outputs first. Backward functions
   OVERWRITE input gradients (dx) and ACCUMULATE (+=) parameter gradients
   (dw, db), so a model zeroes its gradients once per step. Pass NULL for a
   gradient you do not need. Float tensors are F32, F16 or BF16, one dtype
   per call (16-bit data is computed in FP32 and rounded once on output);
   batch-norm statistics and losses stay F32. */

typedef enum gpudl_act {
    GPUDL_ACT_RELU = 1,
    GPUDL_ACT_LEAKY_RELU,   /* alpha = negative slope (0 = 0.01) */
    GPUDL_ACT_GELU,         /* exact: x * Phi(x) */
    GPUDL_ACT_TANH,
    GPUDL_ACT_SIGMOID
} gpudl_act;

/* y = act(x), any shape;  dx = dy * act'(x) (x: input, y: forward output).
   Edge values are PyTorch's (torch.nn.functional relu, leaky_relu, gelu
   with approximate='none', tanh, sigmoid, and autograd's backward), on the
   CPU and the GPU, tests/test_layers.c's activations_edges: NaN in, NaN
   out; subnormals kept, not flushed. ReLU is clamp_min(x, 0) (ReLU(-0) =
   -0) and its backward threshold_backward, 0 where x <= 0, else dy: dy
   passes at a NaN x, and a NaN or Inf dy gives 0 where x <= 0. LeakyReLU's
   backward at a NaN x is dy * slope. GELU(+Inf) = Inf, GELU(-Inf) = -Inf *
   0 = NaN, GELU(-1e30) = -0 (erf is exactly -1 from |x/sqrt 2| = 3.92,
   where float's erf is), and GELU'(+-Inf) = 1 + Inf * 0 = NaN. tanh' and
   sigmoid' come from y, so they are 0 at +-Inf (times an Inf dy: NaN).
   Differences: PyTorch's vectorised CPU GELU gives NaN at +Inf (its erf
   approximation; its one-element path gives Inf, as the formula and
   gpudl); GELU's erf is within 4e-7, not correctly rounded; and the fused
   ReLU of the GPU linear layer is cuBLASLt's (see cublaslt in
   gpudl_ctx_desc; NVIDIA documents no NaN rule): on the emulated device a
   NaN before it comes out 0, and its DRELU mask, one bit per element set
   where the GEMM's output is > 0, gives that element a 0 gradient (a
   self-consistent ReLU, not PyTorch's; cublaslt = -1 gives PyTorch's). */
GPUDL_API gpudl_status gpudl_act_forward(gpudl_ctx *ctx, gpudl_act act, float alpha, gpudl_tensor *y, const gpudl_tensor *x);
GPUDL_API gpudl_status gpudl_act_backward(gpudl_ctx *ctx, gpudl_act act, float alpha, gpudl_tensor *dx,
                                          const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *y);

/* Per-element activation math, shared by the CPU and the CUDA kernels: one
   function per activation and derivative (x the input, y the output), and a
   dispatcher by kind. */
/* a where cond, else b, from the bits: both sides are computed and every
   comparison made, so the CPU loops vectorise. A ?: around a multiply or
   around a second comparison stays a branch in gcc (either may trap, so
   without -fno-trapping-math it is not if-converted) and the loop stays
   scalar (ReLU backward of 1M floats: 2.1 ms; GELU forward of 4M floats
   with a nested ?: clamp in its erf: 21 ms). */
GPUDL_HD static inline float gpudl__pick(int cond, float a, float b) {
    uint32_t m = 0u - (uint32_t)cond;
    return gpudl__bits_f32((gpudl__f32_bits(a) & m) | (gpudl__f32_bits(b) & ~m));
}
/* ReLU as PyTorch's clamp_min(x, 0): 0 where x < 0, else x (NaN and -0 stay) */
GPUDL_HD static inline float gpudl__relu_f(float x) { return gpudl__pick(x < 0.0f, 0.0f, x); }
/* ReLU's backward as PyTorch's threshold_backward: 0 where x <= 0, else dy
   (NaN <= 0 is false: a NaN input passes dy; a NaN or Inf dy gives 0
   where x <= 0). x may be the forward's output: it is <= 0 exactly where
   the input is. */
GPUDL_HD static inline float gpudl__relu_bwd_f(float dy, float x) { return gpudl__pick(x <= 0.0f, 0.0f, dy); }
/* 1.0f where x > 0, else lo (LeakyReLU: x > 0 ? dy : dy * slope, as PyTorch) */
GPUDL_HD static inline float gpudl__pos_or(float x, float lo) { return gpudl__pick(x > 0.0f, 1.0f, lo); }
GPUDL_HD static inline float gpudl__leaky_f(float x, float a) { return x * gpudl__pos_or(x, a); }
GPUDL_HD static inline float gpudl__leaky_df(float x, float a) { return gpudl__pos_or(x, a); }
/* erf for GELU: x P(x^2) / Q(x^2) for |x| < 3.9192059, exactly +-1 from
   there on, Inf included (where erf rounds to +-1 in float: erfc(x) <
   2^-25); within 4e-7 of erf in float32 everywhere (a rational fit
   of degrees 6 and 5 in x^2, made for gpudl with numpy's least squares,
   reweighted towards the worst error; max error 1.5e-9 in double), held to
   [-1, 1]. So GELU(-1e30) is -0 and GELU(-Inf) is -Inf * 0 = NaN, as
   PyTorch's. Multiplies, adds, one divide and selects (gpudl__pick: with
   ?: instead, even one level, gcc keeps a branch and GELU forward of 4M
   floats, 2 threads, takes 21 ms, not 6.2), no call: the CPU's GELU loops
   vectorise (the C library's erff is a call per element), and CPU and GPU
   compute the same function. A NaN stays NaN (its comparisons are false). */
GPUDL_HD static inline float gpudl__erf_f(float x) {
    int big = fabsf(x) >= 3.9192059f;
    float c = gpudl__pick(big, 0.0f, x), t = c * c, p, q, r;   /* big: the fit at 0, unused (no Inf * 0) */
    p = ((((( -1.366861115e-08f * t + 4.780926803e-06f) * t + 3.827041707e-04f) * t + 3.839462171e-03f) * t +
          5.433257320e-02f) * t + 1.847077279e-01f) * t + 1.128379182e+00f;
    q = (((( 6.401290490e-05f * t + 1.309581150e-03f) * t + 1.545342636e-02f) * t + 1.138255121e-01f) * t +
         4.970265077e-01f) * t + 1.0f;
    r = c * p / q;   /* the fit passes 1 by up to 4e-7 below 3.92 */
    return gpudl__pick(big | (fabsf(r) > 1.0f), gpudl__bits_f32(0x3f800000u | (gpudl__f32_bits(x) & 0x80000000u)), r);
}
/* exp(x) within 1 ulp of the exact value (0.98 ulp at most, every float
   checked against double exp), subnormal results rounded once, exp(-Inf)
   0, exp(+Inf) and overflow Inf, NaN kept: Cody and Waite's reduction x =
   k ln2 + r (ln2 in two parts), Cephes' degree-7 polynomial for e^r, and
   2^k as two exact powers of two. Multiplies, adds and selects, no call:
   the CPU loops vectorise (the C library's expf is a call per element: the
   GELU backward of 1M floats took 3.1 ms on one core, now 1.9 with SSE2,
   0.5 with AVX-512), and CPU and GPU compute the same function. */
GPUDL_HD static inline float gpudl__exp_f(float x) {
    float c = gpudl__pick(x > 88.8f, 88.8f, gpudl__pick(x < -104.0f, -104.0f, x));   /* NaN passes, replaced below */
    float k = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;   /* round(x / ln2): 1.5 * 2^23 */
    float r = (c - k * 0.693359375f) - k * -2.12194440e-4f, p;
    int32_t n = (int32_t)k, n1 = n / 2;
    p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r +
          1.6666665459e-1f) * r + 5.0000001201e-1f) * (r * r) + r + 1.0f;
    p = p * gpudl__bits_f32((uint32_t)(n1 + 127) << 23) * gpudl__bits_f32((uint32_t)(n - n1 + 127) << 23);
    return gpudl__pick(x != x, x, p);
}
GPUDL_HD static inline float gpudl__gelu_f(float x) { return 0.5f * x * (1.0f + gpudl__erf_f(x * 0.70710678118654752f)); }
GPUDL_HD static inline float gpudl__gelu_df(float x) {
    return 0.5f * (1.0f + gpudl__erf_f(x * 0.70710678118654752f)) + x * 0.39894228040143268f * gpudl__exp_f(-0.5f * x * x);
}
GPUDL_HD static inline float gpudl__tanh_f(float x) { return tanhf(x); }
GPUDL_HD static inline float gpudl__tanh_df(float y) { return 1.0f - y * y; }
GPUDL_HD static inline float gpudl__sigmoid_f(float x) { return 1.0f / (1.0f + gpudl__exp_f(-x)); }
GPUDL_HD static inline float gpudl__sigmoid_df(float y) { return y * (1.0f - y); }

GPUDL_HD static inline float gpudl__act_f(int act, float x, float a) {
    switch (act) {
    case GPUDL_ACT_RELU:       return gpudl__relu_f(x);
    case GPUDL_ACT_LEAKY_RELU: return gpudl__leaky_f(x, a);
    case GPUDL_ACT_GELU:       return gpudl__gelu_f(x);
    case GPUDL_ACT_TANH:       return gpudl__tanh_f(x);
    case GPUDL_ACT_SIGMOID:    return gpudl__sigmoid_f(x);
    default:                   return x;
    }
}

/* dx = dy * act'(x) at input x with forward output y (ReLU: a select, see gpudl__relu_bwd_f). */
GPUDL_HD static inline float gpudl__act_bwd_f(int act, float dy, float x, float y, float a) {
    switch (act) {
    case GPUDL_ACT_RELU:       return gpudl__relu_bwd_f(dy, x);
    case GPUDL_ACT_LEAKY_RELU: return dy * gpudl__leaky_df(x, a);
    case GPUDL_ACT_GELU:       return dy * gpudl__gelu_df(x);
    case GPUDL_ACT_TANH:       return dy * gpudl__tanh_df(y);
    case GPUDL_ACT_SIGMOID:    return dy * gpudl__sigmoid_df(y);
    default:                   return dy;
    }
}

/* The layer launchers, from here to dropout: dtype is the activations'
   (x, y, dx, dy, logits, pred), f32, f16 or bf16; a linear or conv bias has it too. Weight gradients, batch-norm
   parameters and statistics, probs, targets and losses are f32. dscale:
   NULL, or a device float that multiplies scale (the loss scale). */
GPUDL__KFN int gpudl_k_act_fwd(void *stream, int act, float alpha, void *y, const void *x, int dtype, int64_t n);
GPUDL__KFN int gpudl_k_act_bwd(void *stream, int act, float alpha, void *dx, const void *dy, const void *x, const void *y, int dtype,
                    int64_t n);

/* >>linear ---------------------------------------------------------------- */
/* y (N,O) = x (N,F) @ w^T + b;  w (O,F) (PyTorch's layout), b (O) or NULL. */
GPUDL_API gpudl_status gpudl_linear_forward(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *x,
                                            const gpudl_tensor *w, const gpudl_tensor *b);
GPUDL_API gpudl_status gpudl_linear_backward(gpudl_ctx *ctx, gpudl_tensor *dx, gpudl_tensor *dw, gpudl_tensor *db,
                                             const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *w);

/* out (C) += sum of x (N, C) over rows: bias gradients. */
GPUDL_API gpudl_status gpudl_sum_rows_acc(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *x);

GPUDL__KFN int gpudl_k_bias_add(void *stream, void *y, const void *b, int dtype, int64_t n, int64_t C, int64_t inner);
/* pre += bias (per (i / inner) % C), post = act(pre), in one pass */
GPUDL__KFN int gpudl_k_bias_act(void *stream, int act, float alpha, void *pre, void *post, const void *b, int dtype, int64_t n, int64_t C,
                     int64_t inner);
/* scratch: gpudl_k_reduce_scratch() floats */
GPUDL__KFN int gpudl_k_channel_sum_acc(void *stream, float *out, const void *x, int dtype, int64_t N, int64_t C, int64_t inner,
                            float *scratch);
/* as gpudl_k_channel_sum_acc; overwrite: out = the sums (the step's first write of a gradient);
   done: NULL, or a device counter at 0 (left at 0): one launch instead of two */
GPUDL__KFN int gpudl_k_channel_sum(void *stream, float *out, const void *x, int dtype, int64_t N, int64_t C, int64_t inner,
                        float *scratch, int overwrite, unsigned *done);

/* >>loss ------------------------------------------------------------------ */
/* Softmax + cross-entropy, fused and stable (log-sum-exp).
   loss (1) = mean over rows of -log softmax(logits)[label];  probs (N,K) is
   saved for backward;  labels (N) I32 or U8, each in [0, K). A label out of
   range is GPUDL_ERR_INVALID_ARG: at once on the CPU; on the GPU, which does
   not wait for the data, the loss is NaN and the next call that waits for the
   GPU (gpudl_ctx_sync, a copy to the host, gpudl_tensor_item) says so.
   Such a batch never moves a weight, on the GPU either: the kernel also
   sets a flag on the device that the context's next model update
   (gpudl_model_step, gpudl_model_train_step's replay) reads; that update
   is skipped (weights, optimizer state, 16-bit copy and loss scaler as
   they were), the wait then says so, takes the step back from
   gpudl_model_step_count and makes backward and step refuse until the
   next forward, as the CPU's refused loss does. Steps queued between the
   bad one and the wait use a step count one higher (Adam's bias
   correction, the schedule) than they would after a refused batch.
   backward: dlogits = scale * (probs - onehot(labels)) / N. */
GPUDL_API gpudl_status gpudl_softmax_xent_forward(gpudl_ctx *ctx, gpudl_tensor *loss, gpudl_tensor *probs,
                                                  const gpudl_tensor *logits, const gpudl_tensor *labels);
GPUDL_API gpudl_status gpudl_softmax_xent_backward(gpudl_ctx *ctx, gpudl_tensor *dlogits, const gpudl_tensor *probs,
                                                   const gpudl_tensor *labels, float scale);
/* loss (1) = mean((pred - target)^2);  dpred = scale * 2 (pred - target) / numel. */
GPUDL_API gpudl_status gpudl_mse_forward(gpudl_ctx *ctx, gpudl_tensor *loss, const gpudl_tensor *pred, const gpudl_tensor *target);
GPUDL_API gpudl_status gpudl_mse_backward(gpudl_ctx *ctx, gpudl_tensor *dpred, const gpudl_tensor *pred,
                                          const gpudl_tensor *target, float scale);

/* scratch: gpudl_k_reduce_scratch() + N floats; report (2): a row with a
   label outside [0, K) and K are written there (nothing when all are fine),
   and 1 into *bad_input (device; may be NULL): the next update skips */
GPUDL__KFN int gpudl_k_softmax_xent_fwd(void *stream, float *loss, float *probs, const void *logits, int dtype, const void *labels,
                             int label_dtype, int64_t N, int64_t K, float *scratch, int32_t *report, int32_t *bad_input);
/* forward, mean and gradient in one launch: loss, probs and dlogits as the two above; done: a
   counter on the device, 0 before and after; scratch: gpudl_k_reduce_scratch() floats */
GPUDL__KFN int gpudl_k_softmax_xent_fused(void *stream, float *loss, unsigned *done, float *probs, void *dlogits, const void *logits,
                               int dtype, const void *labels, int label_dtype, int64_t N, int64_t K, float scale,
                               const float *dscale, float *scratch, int32_t *report, int32_t *bad_input);
GPUDL__KFN int gpudl_k_softmax_xent_bwd(void *stream, void *dlogits, int dtype, const float *probs, const void *labels, int label_dtype,
                             int64_t N, int64_t K, float scale, const float *dscale);
GPUDL__KFN int gpudl_k_mse_fwd(void *stream, float *loss, const void *pred, int dtype, const float *target, int64_t n, float *scratch);
GPUDL__KFN int gpudl_k_mse_bwd(void *stream, void *dpred, const void *pred, int dtype, const float *target, int64_t n, float scale,
                    const float *dscale);

/* >>conv ------------------------------------------------------------------ */
/* 2-D convolution geometry; zero = default (stride 1, padding 0, dilation 1). */
typedef struct gpudl_conv2d_desc {
    int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
} gpudl_conv2d_desc;

/* y (N,O,Ho,Wo) = conv(x (N,C,H,W), w (O,C,kh,kw)) + b (O) or NULL;
   Ho = (H + 2 pad_h - dil_h (kh - 1) - 1) / stride_h + 1, likewise Wo.
   cuDNN on the GPU (algorithms chosen once per shape, cached in the context);
   im2col + GEMM on the CPU. */
GPUDL_API gpudl_status gpudl_conv2d_forward(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *x, const gpudl_tensor *w,
                                            const gpudl_tensor *b, const gpudl_conv2d_desc *desc);
GPUDL_API gpudl_status gpudl_conv2d_backward(gpudl_ctx *ctx, gpudl_tensor *dx, gpudl_tensor *dw, gpudl_tensor *db,
                                             const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *w,
                                             const gpudl_conv2d_desc *desc);

/* out[i] += src[i]: cuDNN's 16-bit weight gradient into the f32 one */
GPUDL__KFN int gpudl_k_acc_f32(void *stream, float *out, const void *src, int dtype, int64_t n);

/* >>pool ------------------------------------------------------------------ */
typedef enum gpudl_pool { GPUDL_POOL_MAX = 1, GPUDL_POOL_AVG = 2 } gpudl_pool;
/* kernel kh x kw, stride (0 = kernel size), padding (padded cells are never
   the max and count as zeros in the average, like PyTorch's default). */
typedef struct gpudl_pool2d_desc {
    gpudl_pool kind;
    int64_t k_h, k_w, stride_h, stride_w, pad_h, pad_w;
} gpudl_pool2d_desc;

/* y (N,C,Ho,Wo) = pool(x (N,C,H,W)). Max-pool backward routes each gradient
   to the first maximum of its window (recomputed from x: nothing stored). */
GPUDL_API gpudl_status gpudl_pool2d_forward(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *x, const gpudl_pool2d_desc *desc);
GPUDL_API gpudl_status gpudl_pool2d_backward(gpudl_ctx *ctx, gpudl_tensor *dx, const gpudl_tensor *dy, const gpudl_tensor *x,
                                             const gpudl_pool2d_desc *desc);

/* Whether v replaces best as a running maximum: it is larger, or it is the
   first NaN (NaN wins; on ties the first stays). */
GPUDL_HD static inline int gpudl__max_replaces(float v, float best) { return v > best || (v != v && best == best); }

/* Pool window (oh, ow) over one (H, W) plane of x (dtype dt) starting at
   element base: the maximum (the first in row-major window order; NaN wins)
   or the average (padding counts as zero). *arg gets the plane index of the
   maximum, -1 if the window is all padding. */
GPUDL_HD static inline float gpudl__pool_window(int kind, const void *x, int dt, int64_t base, int64_t H, int64_t W, int64_t oh,
                                               int64_t ow, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                                               int64_t *arg) {
    int64_t h0 = oh * sh - ph, w0 = ow * sw - pw, i, j;
    float best = -INFINITY, sum = 0.0f;
    *arg = -1;
    for (i = 0; i < kh; i++) {
        int64_t h = h0 + i;
        if (h < 0 || h >= H) continue;
        for (j = 0; j < kw; j++) {
            int64_t w = w0 + j;
            float v;
            if (w < 0 || w >= W) continue;
            v = gpudl__elem_get(x, dt, base + h * W + w);
            sum += v;
            if (*arg < 0 || gpudl__max_replaces(v, best)) { best = v; *arg = h * W + w; }
        }
    }
    return kind == GPUDL_POOL_MAX ? best : sum / (float)(kh * kw);
}

/* d loss / d x[h, w] of a pool: the sum over the windows that contain
   (h, w) (a gather, so every input is written once: no atomics). x's plane
   starts at xbase, dy's at dybase; both have dtype dt. */
GPUDL_HD static inline float gpudl__pool_backward_elem(int kind, const void *x, const void *dy, int dt, int64_t xbase,
                                                      int64_t dybase, int64_t H, int64_t W, int64_t Ho, int64_t Wo, int64_t h,
                                                      int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                                                      int64_t pw) {
    int64_t lo_h = h + ph - kh + 1, lo_w = w + pw - kw + 1, oh, ow, arg;
    int64_t oh0 = lo_h <= 0 ? 0 : (lo_h + sh - 1) / sh, ow0 = lo_w <= 0 ? 0 : (lo_w + sw - 1) / sw;
    int64_t oh1 = (h + ph) / sh, ow1 = (w + pw) / sw;
    float g = 0.0f;
    if (oh1 > Ho - 1) oh1 = Ho - 1;
    if (ow1 > Wo - 1) ow1 = Wo - 1;
    for (oh = oh0; oh <= oh1; oh++)
        for (ow = ow0; ow <= ow1; ow++) {
            if (kind == GPUDL_POOL_AVG) { g += gpudl__elem_get(dy, dt, dybase + oh * Wo + ow) / (float)(kh * kw); continue; }
            gpudl__pool_window(kind, x, dt, xbase, H, W, oh, ow, kh, kw, sh, sw, ph, pw, &arg);
            if (arg == h * W + w) g += gpudl__elem_get(dy, dt, dybase + oh * Wo + ow);
        }
    return g;
}

GPUDL__KFN int gpudl_k_pool_fwd(void *stream, int kind, void *y, const void *x, int dtype, int64_t NC, int64_t H, int64_t W, int64_t Ho,
                     int64_t Wo, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw);
GPUDL__KFN int gpudl_k_pool_bwd(void *stream, int kind, void *dx, const void *dy, const void *x, int dtype, int64_t NC, int64_t H,
                     int64_t W, int64_t Ho, int64_t Wo, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw);

/* >>batchnorm ------------------------------------------------------------- */
/* Batch norm over (N,H,W) per channel of x (N,C,H,W) (or (N,C)).
   training: normalise with the batch statistics, save mean and 1/std (C)
   for backward, and update running_mean/var (unbiased variance) with
   momentum (PyTorch's convention: new = (1 - m) old + m batch).
   eval: normalise with the running statistics. */
GPUDL_API gpudl_status gpudl_batchnorm_forward(gpudl_ctx *ctx, gpudl_tensor *y, gpudl_tensor *save_mean,
                                               gpudl_tensor *save_invstd, const gpudl_tensor *x, const gpudl_tensor *gamma,
                                               const gpudl_tensor *beta, gpudl_tensor *running_mean,
                                               gpudl_tensor *running_var, int training, float momentum, float eps);
GPUDL_API gpudl_status gpudl_batchnorm_backward(gpudl_ctx *ctx, gpudl_tensor *dx, gpudl_tensor *dgamma, gpudl_tensor *dbeta,
                                                const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *gamma,
                                                const gpudl_tensor *save_mean, const gpudl_tensor *save_invstd);

/* Batch norm: running statistics (unbiased variance, PyTorch's momentum
   convention) and the input gradient of one element given the channel's
   mean(dy) and mean(dy * xhat). */
GPUDL_HD static inline void gpudl__bn_update_running(float *rm, float *rv, float mean, float var, int64_t M, float momentum) {
    float unbiased = M > 1 ? var * (float)M / (float)(M - 1) : var;
    *rm = (1.0f - momentum) * *rm + momentum * mean;
    *rv = (1.0f - momentum) * *rv + momentum * unbiased;
}

GPUDL_HD static inline float gpudl__bn_backward_elem(float dy, float x, float mean, float invstd, float gamma, float mean_dy,
                                                    float mean_dy_xhat) {
    float xhat = (x - mean) * invstd;
    return gamma * invstd * (dy - mean_dy - xhat * mean_dy_xhat);
}

/* batch norm: scratch holds gpudl_k_bn_scratch(N, C, inner) floats; dx may be NULL */
GPUDL__KFN int64_t gpudl_k_bn_scratch(int64_t N, int64_t C, int64_t inner);
GPUDL__KFN int gpudl_k_bn_fwd(void *stream, void *y, float *save_mean, float *save_invstd, const void *x, int dtype, const float *gamma,
                   const float *beta, float *running_mean, float *running_var, int64_t N, int64_t C, int64_t inner,
                   int training, float momentum, float eps, float *scratch);
GPUDL__KFN int gpudl_k_bn_bwd(void *stream, void *dx, float *dgamma, float *dbeta, const void *dy, const void *x, int dtype,
                   const float *gamma, const float *save_mean, const float *save_invstd, int64_t N, int64_t C, int64_t inner,
                   float *scratch);

/* >>dropout --------------------------------------------------------------- */
/* Inverted dropout: y = x * keep / (1 - p), keep drawn from (seed, offset)
   with the counter RNG, so backward regenerates the mask instead of storing
   it: pass the same seed and offset. */
GPUDL_API gpudl_status gpudl_dropout_forward(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *x, float p,
                                             uint64_t seed, uint64_t offset);
GPUDL_API gpudl_status gpudl_dropout_backward(gpudl_ctx *ctx, gpudl_tensor *dx, const gpudl_tensor *dy, float p,
                                              uint64_t seed, uint64_t offset);

/* Dropout keep decision for element i: the same on both backends. */
GPUDL_HD static inline int gpudl__dropout_keep(uint64_t seed, uint64_t i, float p) {
    return gpudl_rng_uniform(seed, i) >= p;
}

/* Inverted-dropout output for element i. */
GPUDL_HD static inline float gpudl__dropout_elem(float x, float p, uint64_t seed, uint64_t i) {
    if (p <= 0.0f) return x;
    if (p >= 1.0f) return 0.0f;
    return gpudl__dropout_keep(seed, i, p) ? x / (1.0f - p) : x * 0.0f;   /* a dropped NaN stays NaN, as in PyTorch */
}

GPUDL__KFN int gpudl_k_dropout(void *stream, void *y, const void *x, int dtype, int64_t n, float p, uint64_t seed, uint64_t offset);

/* >>transformer ----------------------------------------------------------- */
/* The ops of a GPT block (nanoGPT / llm.c layout). Shape letters: B batch,
   T sequence length (positions), C channels (model width), V vocabulary,
   NH heads, HS = C / NH head size. Parameter gradients ACCUMULATE (+=),
   input gradients OVERWRITE, as for the other layers; activations (x, y,
   qkv, att and their gradients) are F32, F16 or BF16, one dtype per call,
   computed in FP32 and rounded once on output. Statistics (mean, rstd),
   layer-norm parameters and every parameter gradient are F32; embedding
   tables have the activations' dtype (the model's 16-bit copies of its F32
   masters, as for linear weights). What this section does not need:
   residual connections are gpudl_add (y = x + f(x); out may alias) and, in
   backward, gpudl_axpy / gpudl_add on the gradients; cross-entropy over every
   position is gpudl_softmax_xent_* on logits viewed as (B*T, V) with labels
   (B, T) (gpudl_tensor_reshape), the mean over all B*T positions. */

/* y (B,T,C) = wte[ids[b,t]] + wpe[t] (wpe NULL: token embedding alone).
   ids (B,T) I32 or U8, each in [0, V); wte (V,C); wpe (Tmax,C) with
   T <= Tmax; wte, wpe and y of one dtype. An id out of range is
   GPUDL_ERR_INVALID_ARG: on the CPU before anything is written; the GPU,
   which does not wait for the ids, writes NaN into that position's row and
   the next call that waits for the GPU (gpudl_ctx_sync, a copy to the host,
   gpudl_tensor_item) returns the error; the next model update is skipped,
   as for a label out of range (gpudl_softmax_xent_forward).
   backward: dwte (V,C) F32 += sum of dy over the positions holding each id,
   dwpe (Tmax,C) F32 += sum of dy over the batch (rows >= T untouched);
   either may be NULL. Deterministic on both backends (the GPU gathers, one
   thread per (id, channel), in position order: no atomics; its cost grows as
   V * B * T, fine for character and small vocabularies). Ids out of range:
   GPUDL_ERR_INVALID_ARG before any write on the CPU; on the GPU they add
   nothing (the forward has reported them). */
GPUDL_API gpudl_status gpudl_embedding_forward(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *ids,
                                               const gpudl_tensor *wte, const gpudl_tensor *wpe);
GPUDL_API gpudl_status gpudl_embedding_backward(gpudl_ctx *ctx, gpudl_tensor *dwte, gpudl_tensor *dwpe, const gpudl_tensor *dy,
                                                const gpudl_tensor *ids);

/* Layer norm over the last dimension C of x (..., C) (rows R = numel / C):
   y = (x - mean) * rstd * gamma + beta, rstd = 1 / sqrt(var + eps) with the
   biased variance; eps 0 = 1e-5 (PyTorch's default). mean, rstd (R) F32 are
   saved for backward; gamma, beta (C) F32; y may be x. The GPU runs one
   fused kernel, a warp per row (statistics in FP32, the row kept in shared
   memory up to C = 1536).
   backward: dx (overwritten, may be NULL, may be dy or x), dgamma, dbeta (C)
   F32 (+=, may be NULL); deterministic (fixed-order partial sums). */
GPUDL_API gpudl_status gpudl_layernorm_forward(gpudl_ctx *ctx, gpudl_tensor *y, gpudl_tensor *mean, gpudl_tensor *rstd,
                                               const gpudl_tensor *x, const gpudl_tensor *gamma, const gpudl_tensor *beta,
                                               float eps);
GPUDL_API gpudl_status gpudl_layernorm_backward(gpudl_ctx *ctx, gpudl_tensor *dx, gpudl_tensor *dgamma, gpudl_tensor *dbeta,
                                                const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *gamma,
                                                const gpudl_tensor *mean, const gpudl_tensor *rstd);

/* Causal multi-head self-attention, between the QKV projection and the
   output projection (both linear layers that the caller runs):
   qkv (B,T,3C) holds q, k, v side by side per position (PyTorch's
   c_attn(x).split(C, dim=2)); head h uses channels [h HS, (h+1) HS) of each.
   att (B,NH,T,T) = softmax over j <= t of q_t . k_j / sqrt(HS), exactly 0 for
   j > t (saved for backward; the activations' dtype); y (B,T,C) = att @ v
   with the heads side by side. NH must divide C. The softmax is in FP32.
   GPU: cuBLAS strided-batched GEMMs (through gpudl_matmul) on the heads,
   permuted into a device workspace, and one fused softmax kernel that reads
   each row of scores once (a warp per row). CPU: loops over (b, h, t).
   backward: dqkv (B,T,3C) overwritten from dy (B,T,C), qkv and att; the
   softmax backward is one fused pass per row. dqkv must not overlap qkv or
   dy. On the GPU the first call at a new size grows the context's device
   workspace (an allocation that waits for the GPU): run a step before a
   CUDA Graph capture, as for convolutions. */
GPUDL_API gpudl_status gpudl_attention_forward(gpudl_ctx *ctx, gpudl_tensor *y, gpudl_tensor *att, const gpudl_tensor *qkv,
                                               int64_t n_head);
GPUDL_API gpudl_status gpudl_attention_backward(gpudl_ctx *ctx, gpudl_tensor *dqkv, const gpudl_tensor *dy,
                                                const gpudl_tensor *qkv, const gpudl_tensor *att, int64_t n_head);

/* The same attention, fused: the (B,NH,T,T) matrix is never stored, so
   memory grows as T, not T^2 (long sequences). forward saves lse (B,NH,T)
   F32, the log of each row's softmax denominator (scores scaled); backward
   recomputes the probabilities from qkv and lse and takes y, the forward's
   output (its rows' dy . y is the softmax backward's sum). HS <= 256.
   GPU: one warp per query row with an online softmax (forward), then one
   warp per query row for dq and one per key row for dk, dv (backward):
   three kernels, no atomics, no GEMM, deterministic. The kernels are plain
   CUDA (no tensor cores, no tiling): gpudl_attention_forward's GEMMs are
   faster wherever its T x T matrix fits; this path is the one that fits
   when that matrix does not, and the reference for a tiled kernel. */
GPUDL_API gpudl_status gpudl_attention_fused_forward(gpudl_ctx *ctx, gpudl_tensor *y, gpudl_tensor *lse, const gpudl_tensor *qkv,
                                                     int64_t n_head);
GPUDL_API gpudl_status gpudl_attention_fused_backward(gpudl_ctx *ctx, gpudl_tensor *dqkv, const gpudl_tensor *dy,
                                                      const gpudl_tensor *qkv, const gpudl_tensor *y, const gpudl_tensor *lse,
                                                      int64_t n_head);

/* Per-element math of the section, shared by the CPU and the kernels. */
/* The causal mask: query position t sees key position j. */
GPUDL_HD static inline int gpudl__attn_visible(int64_t t, int64_t j) { return j <= t; }
/* softmax backward of one element: d score_j = p_j (d p_j - sum_k p_k d p_k). */
GPUDL_HD static inline float gpudl__softmax_bwd_elem(float p, float dp, float dot) { return p * (dp - dot); }
GPUDL_HD static inline float gpudl__ln_rstd(float var, float eps) { return 1.0f / sqrtf(var + eps); }
GPUDL_HD static inline float gpudl__ln_fwd_elem(float x, float mean, float rstd, float g, float b) {
    return (x - mean) * rstd * g + b;
}
/* dx of one element given the row's means of dy g and of dy g xhat. */
GPUDL_HD static inline float gpudl__ln_bwd_elem(float dy, float x, float mean, float rstd, float g, float mean_dyg,
                                               float mean_dyg_xhat) {
    float xhat = (x - mean) * rstd;
    return rstd * (dy * g - mean_dyg - xhat * mean_dyg_xhat);
}
/* An id of an (I32 or U8) id tensor. */
GPUDL_HD static inline int64_t gpudl__id_at(const void *ids, int dt, int64_t i) {
    return dt == GPUDL_U8 ? (int64_t)((const uint8_t *)ids)[i] : (int64_t)((const int32_t *)ids)[i];
}

/* report, bad_input: as gpudl_k_softmax_xent_fwd's (a position with an id outside [0, V), and V) */
GPUDL__KFN int gpudl_k_embedding_fwd(void *stream, void *y, const void *ids, int ids_dtype, const void *wte, const void *wpe, int dtype,
                          int64_t N, int64_t T, int64_t V, int64_t C, int32_t *report, int32_t *bad_input);
GPUDL__KFN int gpudl_k_embedding_bwd(void *stream, float *dwte, float *dwpe, const void *dy, int dtype, const void *ids, int ids_dtype,
                          int64_t B, int64_t T, int64_t V, int64_t C, int overwrite);
/* res, sum (or NULL): normalise x + res, written to sum (rounded to dtype) on the way */
GPUDL__KFN int gpudl_k_layernorm_fwd(void *stream, void *y, float *mean, float *rstd, const void *x, const void *res, void *sum, int dtype,
                          const float *gamma, const float *beta, int64_t R, int64_t C, float eps);
/* scratch: gpudl_k_layernorm_scratch(R, C) floats; dx, dgamma, dbeta may be NULL; overwrite: dgamma, dbeta
   written (=), else added to (+=); the same for the embedding's dwte, dwpe (a model's first backward after zero_grad);
   dadd (or NULL): added to dx (a pre-norm residual's other path) */
GPUDL__KFN int64_t gpudl_k_layernorm_scratch(int64_t R, int64_t C);
GPUDL__KFN int gpudl_k_layernorm_bwd(void *stream, void *dx, float *dgamma, float *dbeta, const void *dy, const void *x, const void *dadd,
                          int dtype, const float *gamma, const float *mean, const float *rstd, int64_t R, int64_t C,
                          float *scratch, int overwrite);
/* (B,T,3,NH,HS) qkv <-> q, k, v (B,NH,T,HS) each; to_heads 0 is the reverse (dq, dk, dv into dqkv) */
GPUDL__KFN int gpudl_k_attn_split(void *stream, void *q, void *k, void *v, void *qkv, int dtype, int64_t B, int64_t T, int64_t NH,
                       int64_t HS, int to_heads);
/* (B,T,NH,HS) <-> (B,NH,T,HS): y (B,T,C) from the heads (to_heads 0), or dy into heads (to_heads 1) */
GPUDL__KFN int gpudl_k_attn_merge(void *stream, void *bt, void *heads, int dtype, int64_t B, int64_t T, int64_t NH, int64_t HS,
                       int to_heads);
/* att (L,T,T) = causal softmax of the F32 scores (L,T,T) (may be att itself when att is F32) */
GPUDL__KFN int gpudl_k_attn_softmax(void *stream, void *att, const float *scores, int dtype, int64_t L, int64_t T);
/* ds (L,T,T) = p (dp - sum p dp) per row, 0 where masked (ds may be dp itself when ds is F32) */
GPUDL__KFN int gpudl_k_attn_softmax_bwd(void *stream, void *ds, const float *dp, const void *att, int dtype, int64_t L, int64_t T);
/* fused attention (HS <= GPUDL__FUSED_MAX_HS); scratch: B NH T floats */
#define GPUDL__FUSED_MAX_HS 256
GPUDL__KFN int gpudl_k_attn_fused_fwd(void *stream, void *y, float *lse, const void *qkv, int dtype, int64_t B, int64_t T, int64_t NH,
                           int64_t HS);
GPUDL__KFN int gpudl_k_attn_fused_bwd(void *stream, void *dqkv, const void *dy, const void *qkv, const void *y, const float *lse, int dtype,
                           int64_t B, int64_t T, int64_t NH, int64_t HS, float *scratch);

/* >>model ----------------------------------------------------------------- */
typedef struct gpudl_model gpudl_model;   /* opaque */

typedef enum gpudl_init {
    GPUDL_INIT_DEFAULT = 0,   /* He (Kaiming) normal before ReLU-like layers, else Xavier */
    GPUDL_INIT_HE,            /* normal(0, sqrt(2 / fan_in)) */
    GPUDL_INIT_XAVIER,        /* uniform(+-sqrt(6 / (fan_in + fan_out))) */
    GPUDL_INIT_GPT2           /* normal(0, 0.02), and 0.02 / sqrt(number of residual ends) for a weight whose layer
                                 closes a residual (GPT-2's and nanoGPT's: c_proj, 0.02 / sqrt(2 n_layer)) */
} gpudl_init;

typedef enum gpudl_loss { GPUDL_LOSS_SOFTMAX_XENT = 0, GPUDL_LOSS_MSE = 1 } gpudl_loss;

/* A sequential model for inputs of one sample's shape (e.g. {1,28,28} or
   {784}). Add layers, then gpudl_model_build allocates everything:
   parameters, gradients and optimizer state are one allocation each, laid
   out by a size table; activations are sized for max_batch. */
GPUDL_API gpudl_status gpudl_model_create(gpudl_ctx *ctx, gpudl_model **out, int ndim, const int64_t *sample_shape);
/* Frees the model and everything it holds. Destroy models before their
   context (gpudl_ctx_destroy names and frees any left). A destroyed model
   passed again to a gpudl_model_* call gets GPUDL_ERR_INVALID_ARG saying it
   was destroyed, while the context keeps its shell (the last 8 destroyed);
   beyond that, as for any freed pointer, the behaviour is undefined. */
GPUDL_API void gpudl_model_destroy(gpudl_model *m);

/* An add that fails (a shape that does not fit, a bad argument) returns its
   error, and gpudl_model_build then fails with it: built whole or not at all. */
GPUDL_API gpudl_status gpudl_model_add_linear(gpudl_model *m, int64_t in_features, int64_t out_features);
GPUDL_API gpudl_status gpudl_model_add_conv2d(gpudl_model *m, int64_t in_channels, int64_t out_channels, int64_t kernel,
                                              const gpudl_conv2d_desc *desc /* NULL = stride 1, no padding */);
GPUDL_API gpudl_status gpudl_model_add_act(gpudl_model *m, gpudl_act act, float alpha);
GPUDL_API gpudl_status gpudl_model_add_relu(gpudl_model *m);
GPUDL_API gpudl_status gpudl_model_add_pool2d(gpudl_model *m, const gpudl_pool2d_desc *desc);
GPUDL_API gpudl_status gpudl_model_add_maxpool2d(gpudl_model *m, int64_t kernel, int64_t stride);
GPUDL_API gpudl_status gpudl_model_add_batchnorm2d(gpudl_model *m, int64_t channels);
GPUDL_API gpudl_status gpudl_model_add_dropout(gpudl_model *m, float p);
GPUDL_API gpudl_status gpudl_model_add_flatten(gpudl_model *m);

/* Transformers (the transformer section's ops as layers). A model of sequences
   takes token ids: create it with the sample shape {T} (T positions) and
   start it with an embedding; forward then takes x (N, T) I32 or U8 (ids,
   never cast), and layers see samples (T, C). A linear layer on (T, F)
   samples acts on each position (a GEMM over N T rows); activations,
   dropout and layer norm act elementwise or per position; softmax
   cross-entropy on (T, V) outputs takes targets (N, T) I32/U8 and averages
   over all N T positions (PyTorch's F.cross_entropy on the flattened
   logits). gpudl_model_predict and _count_correct take 1-D outputs only.
   embedding   token and position: y[n,t] = wte[id] + wpe[t]; parameters
               "wte.weight" (vocab, C) and "wpe.weight" (T, C), drawn from
               normal(0, 0.02) (GPT-2's init); the first layer only.
   layernorm   over the last dim (C): "weight" (ones), "bias" (zeros), F32
               under mixed precision; eps 1e-5.
   attention   causal multi-head self-attention with its projections, as
               nanoGPT's CausalSelfAttention: qkv = x c_attn^T + b (3C), the
               heads' softmax(q k^T / sqrt(HS)) v, then c_proj; parameters
               "c_attn.weight" (3C, C), "c_attn.bias", "c_proj.weight" (C, C),
               "c_proj.bias". heads divides C. Keeps qkv and the attention
               weights (N heads T T) for backward (gpudl_attention_forward),
               or runs the fused kernels (gpudl_attention_fused_forward: T,
               not T^2, memory; fewer launches): gpudl_model_desc.attention
               says which.
   residual_begin / residual_end   x + f(x) around the layers between them
               (nested pairs allowed): end adds begin's input to its own
               input (same shape); the gradient flows through both paths.
   gpudl_model_set_name names the last added layer for checkpoints: its
   tensors are saved as "<name>.<param>" instead of "<index>.<param>"
   (nanoGPT's names: "transformer.h.0.attn" gives
   "transformer.h.0.attn.c_attn.weight"; up to 95 characters; unique). */
GPUDL_API gpudl_status gpudl_model_add_embedding(gpudl_model *m, int64_t vocab, int64_t channels);
GPUDL_API gpudl_status gpudl_model_add_layernorm(gpudl_model *m, int64_t channels);
GPUDL_API gpudl_status gpudl_model_add_attention(gpudl_model *m, int64_t channels, int64_t heads);
GPUDL_API gpudl_status gpudl_model_add_residual_begin(gpudl_model *m);
GPUDL_API gpudl_status gpudl_model_add_residual_end(gpudl_model *m);
GPUDL_API gpudl_status gpudl_model_set_name(gpudl_model *m, const char *name);

/* A custom layer: a layer the kit does not have (a LayerNorm, a residual
   block, a student's GELU), as forward and backward callbacks, written in C
   or CUDA, with the shapes of its parameters. It lives in the model like
   any other: its parameters and gradients in the flat buffers, so the
   optimizers, checkpoints ("<layer>.<param name>"), gradcheck and the
   summary work for it unchanged.
   The callbacks get the layer's tensors in gpudl_layer_io, on the model's
   device (on the GPU, launch on io->stream). Activations (x, y, dy, dx) and
   parameters have the model's activation dtype: F32, or F16/BF16 under
   mixed precision (callbacks built from gpudl ops handle all three; set
   f32_only when yours reads float pointers, and the model then refuses
   FP16/BF16). Parameter gradients are F32. As for the built-in layers,
   backward OVERWRITES dx (NULL when nothing needs it) and ACCUMULATES the
   parameter gradients g[]. A callback returns GPUDL_OK or a status, which
   the model's call returns, naming the layer. */
#define GPUDL_LAYER_MAX_PARAMS 4

typedef struct gpudl_layer_io {
    gpudl_ctx   *ctx;
    void        *user;                        /* desc.user */
    void        *stream;                      /* the context's cudaStream_t; NULL on the CPU */
    int          training;                    /* gpudl_model_train's flag */
    int          nparams;
    gpudl_tensor x, y;                        /* (N, input sample), (N, output sample) */
    gpudl_tensor dy;                          /* backward: y's gradient */
    gpudl_tensor *dx;                         /* backward: x's gradient, to write; or NULL */
    gpudl_tensor p[GPUDL_LAYER_MAX_PARAMS];   /* the parameters */
    gpudl_tensor g[GPUDL_LAYER_MAX_PARAMS];   /* backward: their F32 gradients, to accumulate into */
} gpudl_layer_io;

typedef enum gpudl_param_init {
    GPUDL_PARAM_ZEROS = 0,
    GPUDL_PARAM_ONES,
    GPUDL_PARAM_FAN     /* a weight (fan_out, fan_in, ...): the model's init rule (He or Xavier) */
} gpudl_param_init;

typedef struct gpudl_layer_desc {
    const char *name;                           /* the summary's name ("gelu"); copied */
    gpudl_status (*forward)(gpudl_layer_io *io);
    gpudl_status (*backward)(gpudl_layer_io *io);
    void *user;
    int out_ndim;                               /* 0: the output is shaped like the input */
    int64_t out_shape[3];                       /* one sample */
    int nparams;                                /* 0 to GPUDL_LAYER_MAX_PARAMS */
    const char *param_names[GPUDL_LAYER_MAX_PARAMS];   /* "weight", "bias" (checkpoints); copied */
    int param_ndim[GPUDL_LAYER_MAX_PARAMS];            /* 1 to 4 */
    int64_t param_shape[GPUDL_LAYER_MAX_PARAMS][4];
    gpudl_param_init param_init[GPUDL_LAYER_MAX_PARAMS];
    int f32_only;                               /* the callbacks read and write float pointers */
} gpudl_layer_desc;

GPUDL_API gpudl_status gpudl_model_add_custom(gpudl_model *m, const gpudl_layer_desc *desc);

/* Model description for build; zero = default.
   max_batch   largest batch forward will see (0 = 128).
   loss        GPUDL_LOSS_SOFTMAX_XENT (default) or GPUDL_LOSS_MSE.
   init        weight initialisation (biases start at 0).
   seed        initialisation and dropout seed (0 = the context's seed).
   check_finite  0 = on: in FP32 and BF16 a step whose gradients hold a NaN
               or Inf is skipped (weights and optimizer state unchanged) and
               gpudl_model_step returns GPUDL_ERR_NONFINITE naming the tensor
               (on the GPU, one step later: nothing waits). It costs a pass
               over the gradients; -1 = off. FP16 always checks (loss scaling).
   graphs      0 = on: on the GPU, gpudl_model_train_step captures a step
               into a CUDA graph once its shapes and settings repeat, and
               replays it as one launch; -1 = off (every call issued).
   attention   the attention layers' path: 0 = chosen per layer (below),
               1 = cuBLAS GEMMs and a softmax kernel, keeping the weights
               (gpudl_attention_forward), 2 = the fused kernels
               (gpudl_attention_fused_forward; head size <= 256).
               Chosen: fused where the weights would outweigh the layer's
               other buffers (heads T > 16 C), and on the GPU also where
               the attention is small enough to be bound by launches
               (max_batch heads T^2 <= 393216: the fused kernels' one
               launch forward and three backward, against the GEMM path's
               five and seven; the reason is at gpudl__attn_path), unless
               the user's causal softmax is installed (gpudl_ops): then 1. */
typedef struct gpudl_model_desc {
    int64_t    max_batch;
    gpudl_loss loss;
    gpudl_init init;
    uint64_t   seed;
    int        check_finite;
    int        graphs;
    int        attention;
} gpudl_model_desc;

/* Lays out and allocates the parameters, gradients, batch-norm buffers and
   activations for max_batch, and initialises the parameters.
   Returns GPUDL_OK, or
     GPUDL_ERR_INVALID_ARG  m is NULL, already built, has no layers or no
                            parameters, or desc has a bad value
     the status of the first add_* that failed, with its message
     GPUDL_ERR_SHAPE        softmax cross-entropy after a layer whose output is not 1-D
     GPUDL_ERR_OOM          no host or device memory (the model stays unbuilt,
                            with nothing allocated: build again with a smaller max_batch)
     GPUDL_ERR_CUDA, GPUDL_ERR_CUDA_FATAL   the device failed */
GPUDL_API gpudl_status gpudl_model_build(gpudl_model *m, const gpudl_model_desc *desc);

/* Training mode (dropout on, batch norm on batch statistics) or eval. */
GPUDL_API void gpudl_model_train(gpudl_model *m, int training);

/* Runs the model on x (N, sample shape...) with N <= max_batch, x on the
   context's device. *out (optional) receives a view of the output (N, ...),
   valid until the next forward. */
GPUDL_API gpudl_status gpudl_model_forward(gpudl_model *m, const gpudl_tensor *x, gpudl_tensor *out);
/* The loss of the last forward against target (labels (N) I32/U8 for
   softmax-xent, a tensor shaped like the output for MSE) into a device
   scalar; read it with gpudl_model_loss_value (which waits). */
GPUDL_API gpudl_status gpudl_model_loss(gpudl_model *m, const gpudl_tensor *target);
GPUDL_API gpudl_status gpudl_model_loss_value(gpudl_model *m, float *loss);
/* Gradients of the loss into the flat gradient buffer: added to what it
   holds, or, the first backward after gpudl_model_zero_grad, written.
   A failed forward, loss or backward is remembered: backward refuses after
   a failed forward or loss, and gpudl_model_step after any of the three,
   each with GPUDL_ERR_INVALID_ARG and a message naming the call that
   failed and its reason, until the step is run again (a forward that
   succeeds; after a failed backward, zero_grad first). */
GPUDL_API gpudl_status gpudl_model_backward(gpudl_model *m);
/* Sets the gradients to zero, as far as any reader can tell: gpudl_model_params'
   grads view, gpudl_model_step and the next backward all see zeros. On the
   GPU, when every layer with parameters is linear, conv2d, embedding,
   layernorm or attention (and no user ops or data parallelism), no memset is issued: the next backward writes
   each gradient (GEMMs with beta 0) instead of adding to it, and the memset
   is issued only if something reads the gradients first through the API.
   A grads view taken before zero_grad and read directly (a copy of its
   data pointer) sees the old values until that backward: take the view
   after zero_grad, or read it after backward. */
GPUDL_API gpudl_status gpudl_model_zero_grad(gpudl_model *m);

/* The number of parameters (the summary's count; NULL: 0), and views of
   the flat parameter and gradient buffers, which are longer: each tensor
   starts on a 64-float boundary (the summary gives both numbers). */
GPUDL_API int64_t gpudl_model_num_params(const gpudl_model *m);
GPUDL_API gpudl_status gpudl_model_params(gpudl_model *m, gpudl_tensor *params, gpudl_tensor *grads);
/* Predicted classes (argmax of the output rows) of the last forward,
   written into preds: a tensor of the caller's (gpudl_tensor_create), I32,
   N elements (the forward's batch), on the host or the model's device;
   its data is the caller's before and after. _view instead points view at
   the model's own buffer (N) I32: no copy, and it changes at the next
   forward. */
GPUDL_API gpudl_status gpudl_model_predict(gpudl_model *m, gpudl_tensor *preds);
GPUDL_API gpudl_status gpudl_model_predict_view(gpudl_model *m, gpudl_tensor *view);
/* count (1, f32, on the model's device) += the number of rows of the last
   forward whose argmax equals the label (labels (N) I32/U8). Nothing waits:
   read count once at the end of an evaluation. */
GPUDL_API gpudl_status gpudl_model_count_correct(gpudl_model *m, const gpudl_tensor *labels, gpudl_tensor *count);
/* Writes a one-line-per-layer summary (shapes, parameters) into buf. */
GPUDL_API const char *gpudl_model_summary(const gpudl_model *m, char *buf, size_t size);

/* Memory a model allocates, in bytes, at a batch size (0 = its max_batch)
   and its current precision: what the implementation really holds. Under
   FP16/BF16 the activations take half the bytes (plus a 16-bit copy of the
   input) and the 16-bit weight copy is added; master weights, gradients
   and moments stay f32. Not counted: library workspaces (cuBLAS/cuDNN, and
   on the CPU the per-call f32 copies that emulate 16-bit ops). */
typedef struct gpudl_memory_report {
    size_t params, grads, optimizer;   /* FP32 master weights, gradients, moments */
    size_t copies16;                   /* the 16-bit weight copy (mixed precision) */
    size_t activations;                /* layer outputs and their gradients (and a 16-bit input copy) */
    size_t other;                      /* batch-norm statistics, loss buffers, scaler */
    size_t total;
} gpudl_memory_report;

GPUDL_API gpudl_status gpudl_model_memory(gpudl_model *m, int64_t batch, gpudl_memory_report *r);

/* Where a step's time goes: with profiling on, each layer's forward and
   backward, the loss, zero_grad and the optimizer step are timed (on the
   GPU the step then waits for the device around each layer: a measuring
   mode, slower than a normal step). on = 1 starts (and resets) it, 0 stops.
   The report: milliseconds per step and share of each part, one per line. */
GPUDL_API gpudl_status gpudl_model_profile(gpudl_model *m, int on);
GPUDL_API const char *gpudl_model_profile_report(const gpudl_model *m, char *buf, size_t size);

GPUDL__KFN int gpudl_k_count_correct(void *stream, float *count, const int32_t *pred, const void *labels, int label_dtype, int64_t n);
/* ReLU then pooling whose windows do not overlap (sh >= kh, sw >= kw), backward in one pass:
   dx = the pool's backward of dy, times ReLU's derivative at x (the ReLU's output, the pool's input) */
GPUDL__KFN int gpudl_k_pool_relu_bwd(void *stream, int kind, void *dx, const void *dy, const void *x, int dtype, int64_t NC, int64_t H,
                          int64_t W, int64_t Ho, int64_t Wo, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                          int64_t pw);

/* >>optim ----------------------------------------------------------------- */
typedef enum gpudl_optim_kind { GPUDL_OPTIM_SGD = 0, GPUDL_OPTIM_ADAM = 1, GPUDL_OPTIM_ADAMW = 2 } gpudl_optim_kind;
typedef enum gpudl_sched { GPUDL_SCHED_CONSTANT = 0, GPUDL_SCHED_STEP = 1, GPUDL_SCHED_COSINE = 2 } gpudl_sched;

/* Optimizer description; zero = default.
   lr            0 = 0.01 (SGD) or 0.001 (Adam/AdamW)
   momentum, nesterov, weight_decay (SGD: L2 added to the gradient;
                 Adam: L2 too; AdamW: decoupled, w -= lr wd w)
   beta1, beta2, eps   Adam (0 = 0.9, 0.999, 1e-8)
   clip_norm     > 0: scale gradients so their global L2 norm is at most this
   schedule      CONSTANT; STEP (lr * gamma^(step / step_size)); COSINE
                 (linear warm-up over warmup_steps, then cosine from lr to
                 min_lr at total_steps). */
typedef struct gpudl_optim_desc {
    gpudl_optim_kind kind;
    float   lr, momentum, weight_decay, beta1, beta2, eps, clip_norm;
    int     nesterov;
    gpudl_sched schedule;
    int64_t step_size, warmup_steps, total_steps;
    float   gamma, min_lr;
} gpudl_optim_desc;

GPUDL_API gpudl_status gpudl_model_set_optimizer(gpudl_model *m, const gpudl_optim_desc *desc);
/* One optimizer step over the flat buffers (one fused kernel), then the
   step counter advances. Nothing waits for the device.
   Returns GPUDL_OK, or
     GPUDL_ERR_INVALID_ARG  m is NULL or not built, or has no optimizer, or a
                            forward, loss or backward of this step failed
                            (nothing is updated; see gpudl_model_backward)
     GPUDL_ERR_NONFINITE    FP16: too many consecutive overflows at the minimum
                            loss scale (see gpudl_scaler_desc.max_skips); the
                            message names the first bad parameter
     GPUDL_ERR_CUDA, GPUDL_ERR_CUDA_FATAL   a launch failed, or an earlier
                            asynchronous error surfaced here */
GPUDL_API gpudl_status gpudl_model_step(gpudl_model *m);
/* One training step: zero_grad, forward on x, loss against target,
   backward and step, with their results and errors. On the GPU (desc.graphs
   0) the second of two consecutive steps with the same x and target
   buffers, batch, precision, mode and optimizer is captured into a CUDA
   graph, and the steps after it replay that graph: one launch and a few
   host calls (each replay sets the update's hyper-parameters: the learning
   rate of the schedule, Adam's bias correction). Anything else (another
   buffer or batch size, a new precision or optimizer, dropout, the user's
   ops, custom layers, data parallelism, profiling) runs the calls one by one, with the same results;
   on a stream that is already capturing (the user's own graph) the calls
   are issued into that capture. The graph reads x and target
   where they were at capture: fill the same buffers (gpudl_dataset_batch
   does) or pass new ones. */
GPUDL_API gpudl_status gpudl_model_train_step(gpudl_model *m, const gpudl_tensor *x, const gpudl_tensor *target);
GPUDL_API int64_t gpudl_model_step_count(const gpudl_model *m);
/* The learning rate the schedule gives at a step. */
GPUDL_API float gpudl_optim_lr(const gpudl_optim_desc *desc, int64_t step);

/* Per-element optimizer math, shared by the CPU and the CUDA kernel. */
typedef struct gpudl_optim_hp {
    int   kind, nesterov, first;     /* first: the first step (SGD momentum buffer starts at g) */
    float lr, momentum, weight_decay, beta1, beta2, eps;
    float bc1, bc2;                  /* Adam bias corrections 1 - beta^t */
} gpudl_optim_hp;

/* Which parts of a rule run, as bits: the CPU's loops pass them as
   constants (one loop per combination, each vectorised with nothing
   untaken in it); the GPU's kernel computes them per call. */
enum { GPUDL_OPTIM_F_WD = 1, GPUDL_OPTIM_F_MOMENTUM = 2, GPUDL_OPTIM_F_FIRST = 4, GPUDL_OPTIM_F_NESTEROV = 8,
       GPUDL_OPTIM_F_ADAM = 16, GPUDL_OPTIM_F_ADAMW = 32 };
GPUDL_HD static inline int gpudl_optim_flags(const gpudl_optim_hp *h) {
    int wd = h->weight_decay != 0.0f ? GPUDL_OPTIM_F_WD : 0;
    if (h->kind == GPUDL_OPTIM_ADAMW) return GPUDL_OPTIM_F_ADAMW;   /* decoupled decay, applied even at 0 */
    if (h->kind != GPUDL_OPTIM_SGD) return GPUDL_OPTIM_F_ADAM | wd;
    if (h->momentum == 0.0f) return wd;
    return wd | GPUDL_OPTIM_F_MOMENTUM | (h->first ? GPUDL_OPTIM_F_FIRST : 0) | (h->nesterov ? GPUDL_OPTIM_F_NESTEROV : 0);
}
/* w, m, v: this element's weight and state (m, v are read only where the
   flags use them); g: its gradient. */
GPUDL_HD static inline void gpudl_optim_apply(const gpudl_optim_hp *h, int flags, float *w, float g, float *m, float *v) {
    float x = *w;
    if (flags & GPUDL_OPTIM_F_ADAMW) x -= h->lr * h->weight_decay * x;
    else if (flags & GPUDL_OPTIM_F_WD) g += h->weight_decay * x;
    if (!(flags & (GPUDL_OPTIM_F_ADAM | GPUDL_OPTIM_F_ADAMW))) {
        if (flags & GPUDL_OPTIM_F_MOMENTUM) {
            float b = (flags & GPUDL_OPTIM_F_FIRST) ? g : h->momentum * *m + g;
            *m = b;
            g = (flags & GPUDL_OPTIM_F_NESTEROV) ? g + h->momentum * b : b;
        }
        *w = x - h->lr * g;
        return;
    }
    *m = h->beta1 * *m + (1.0f - h->beta1) * g;
    *v = h->beta2 * *v + (1.0f - h->beta2) * g * g;
    *w = x - h->lr * (*m / h->bc1) / (sqrtf(*v / h->bc2) + h->eps);
}
GPUDL_HD static inline void gpudl_optim_update(const gpudl_optim_hp *h, float *w, float g, float *m, float *v) {
    gpudl_optim_apply(h, gpudl_optim_flags(h), w, g, m, v);
}

/* skip: when not NULL and *skip != 0 the update is skipped (an overflowed step);
   w16: NULL or the f16/bf16 (dt16) copy of w, refreshed in the same pass */
GPUDL__KFN int gpudl_k_optim(void *stream, gpudl_optim_hp hp, float *w, const float *g, float *m, float *v, int64_t n, const float *gscale,
                  const int32_t *skip, void *w16, int dt16);

/* >>amp ------------------------------------------------------------------- */
/* Mixed precision and dynamic loss scaling (PyTorch GradScaler semantics,
   plus a floor, a cap below Inf and a clear error under persistent overflow).

   The scaler state lives with the model, on its device: the loss gradient is
   multiplied by the scale, one fused pass divides the flat gradient buffer by
   it and flags any NaN/Inf (noting the first), the optimizer skips the whole
   update when the flag is set, and a one-thread step updates the scale.
   Nothing waits for the device; the host learns about persistent overflow
   from an asynchronous copy of the state, at most one step late. */

typedef enum gpudl_precision {
    GPUDL_PRECISION_FP32 = 0,   /* strict FP32 (the default) */
    GPUDL_PRECISION_TF32 = 1,   /* FP32 storage, TF32 tensor-core GEMMs */
    GPUDL_PRECISION_FP16 = 2,   /* FP32 master weights, FP16 weights and activations: loss scaling on */
    GPUDL_PRECISION_BF16 = 3    /* FP32 master weights, BF16 weights and activations: no loss scaling needed */
} gpudl_precision;

/* Loss scaler; zero = default.
   init_scale 2^16, growth_factor 2, backoff_factor 0.5, growth_interval
   2000 finite steps, min_scale (the floor) 1, max_skips 100: after that
   many consecutive overflow-skipped steps at the floor, gpudl_model_step
   returns GPUDL_ERR_NONFINITE naming the first tensor that held a
   non-finite value. */
typedef struct gpudl_scaler_desc {
    float   init_scale, growth_factor, backoff_factor, min_scale;
    int64_t growth_interval, max_skips;
} gpudl_scaler_desc;

/* The scaler's state (one small block of device memory). */
typedef struct gpudl_scaler_state {
    float   scale;
    int32_t growth_count;    /* consecutive finite steps since the last change */
    int32_t skips_at_floor;  /* consecutive overflow-skipped steps at the floor */
    int32_t found_inf;       /* this step's gradients held a NaN or Inf (reset by the update) */
    int32_t first_bad;       /* this step's first non-finite flat gradient index, INT32_MAX if none */
    int32_t last_bad;        /* first_bad of the most recent skipped step */
    int32_t pad_;            /* on the GPU, the update's count of finished blocks: 0 between steps */
    int64_t skipped_total;   /* steps skipped since the scaler started */
} gpudl_scaler_state;

/* Sets the model's precision (and the scaler for FP16; desc may be NULL).
   Call after gpudl_model_build and before training. FP16/BF16 keep the
   master weights, gradients and optimizer state in f32 and store a 16-bit
   weight copy (refreshed once per step) and every layer output and output
   gradient in 16 bits; GEMMs and convolutions take 16-bit operands and
   accumulate in f32 (tensor cores on the GPU); the loss, softmax and batch
   norm statistics are f32. gpudl_model_forward's output then has the
   16-bit dtype. On the CPU the same storage is emulated exactly: each op
   computes in f32 and rounds its output once. */
GPUDL_API gpudl_status gpudl_model_set_precision(gpudl_model *m, gpudl_precision p, const gpudl_scaler_desc *scaler);
/* The scaler state as of the last completed step (waits for the device). */
GPUDL_API gpudl_status gpudl_model_scaler_state(gpudl_model *m, gpudl_scaler_state *state);

/* The scaler's state machine for one step: shared by the CPU and the GPU.
   d's fields must be resolved (no zeros). */
GPUDL_HD static inline void gpudl_scaler_update(gpudl_scaler_state *s, const gpudl_scaler_desc *d) {
    if (s->found_inf) {
        float ns = s->scale * d->backoff_factor;
        s->skips_at_floor = (s->scale <= d->min_scale) ? s->skips_at_floor + 1 : 0;
        s->scale = ns < d->min_scale ? d->min_scale : ns;
        s->growth_count = 0;
        s->skipped_total++;
        s->last_bad = s->first_bad;
    } else {
        s->skips_at_floor = 0;
        if (++s->growth_count >= d->growth_interval) {
            float ns = s->scale * d->growth_factor;
            if (ns <= 3.0e38f && ns == ns) s->scale = ns;   /* never grow to Inf */
            s->growth_count = 0;
        }
    }
    s->found_inf = 0;                                       /* ready for the next step */
    s->first_bad = 0x7fffffff;
}

/* Unscales gradient i (g / scale): returns the unscaled value and whether
   it is finite. With fp16 the scaled value is first rounded to FP16, as FP16
   gradient storage would (so values past 65504 overflow to Inf). */
GPUDL_HD static inline float gpudl__unscale_grad(float g, float inv_scale, int fp16, int *finite) {
    if (fp16) g = gpudl_f16_to_f32(gpudl_f32_to_f16(g));
    *finite = (g - g) == 0.0f;   /* false for NaN and +-Inf */
    return g * inv_scale;
}

GPUDL__KFN int gpudl_k_round16(void *stream, float *x, int64_t n, int bf16);
/* g = g / scale (after rounding to FP16 if fp16), flagging non-finite values in st */
GPUDL__KFN int gpudl_k_unscale(void *stream, float *g, int64_t n, gpudl_scaler_state *st, int fp16);
/* flags non-finite values of g (after rounding to FP16 if fp16) in st; reads g only */
GPUDL__KFN int gpudl_k_nonfinite(void *stream, const float *g, int64_t n, gpudl_scaler_state *st, int fp16);
/* st->found_inf = 0, first_bad = none (after a step that failed after its check) */
GPUDL__KFN int gpudl_k_scaler_clear(void *stream, gpudl_scaler_state *st);
GPUDL__KFN int gpudl_k_scaler_update(void *stream, gpudl_scaler_state *st, gpudl_scaler_desc d);
/* (the optim section's kernel ABI, here for the scaler's types) */
/* gpudl_model_step's update: as gpudl_k_optim, and with st (the scaler's state, or NULL) the
   update is skipped when st->found_inf, the gradients are unscaled as read (never in place),
   and the last block runs gpudl_scaler_update(st, d): the one launch of a step that changes state;
   guard: NULL, or the context's bad-input word (device, 2 int32): a set guard[0] (a label or an id out of range
   since the last update) skips the update and leaves st's scale and counts alone; the last block clears it and
   adds 1 to *skipped (pinned, may be NULL); seen: NULL, or pinned host memory the last block writes st's new
   state into (the host's view, without a copy) */
GPUDL__KFN int gpudl_k_optim_step(void *stream, gpudl_optim_hp hp, float *w, const float *g, float *m, float *v, int64_t n,
                       const float *gscale, gpudl_scaler_state *st, int fp16, gpudl_scaler_desc d, void *w16, int dt16,
                       int32_t *guard, int32_t *skipped, gpudl_scaler_state *seen);
/* gpudl_k_optim_step's kernel (its first argument is the gpudl_optim_hp) */
GPUDL__KFN const void *gpudl_k_optim_step_fn(void);
/* scale[0] = sum of g^2; scale[1] = max_norm / (norm + 1e-6) if norm > max_norm else 1;
   st: NULL, or the scaler's state: of the unscaled gradients */
GPUDL__KFN int gpudl_k_clip_scale(void *stream, float *scale, const float *g, int64_t n, float max_norm, float *scratch,
                       const gpudl_scaler_state *st, int fp16);

/* >>data ------------------------------------------------------------------ */
/* Reads an IDX file (MNIST / Fashion-MNIST) into a new host tensor with the
   file's shape: ubyte -> GPUDL_U8, int -> GPUDL_I32, float -> GPUDL_F32.
   Strict: the magic, the type, 1..4 dims, a dims product that fits, and a
   file exactly header + data long; anything else is an error naming the file
   and the fault, with nothing allocated. A .gz file is decompressed as it
   is read, by gpudl's own inflate (nothing to link), or by zlib when built
   with -DGPUDL_ZLIB -lz; its CRC-32 and length are checked. */
GPUDL_API gpudl_status gpudl_idx_load(gpudl_ctx *ctx, const char *path, gpudl_tensor *out);
/* The same from memory (size bytes at data); name only labels messages. */
GPUDL_API gpudl_status gpudl_idx_load_memory(gpudl_ctx *ctx, const char *name, const void *data, size_t size, gpudl_tensor *out);

/* Loads MNIST-layout files from dir: {train,t10k}-images-idx3-ubyte and
   -labels-idx1-ubyte, plain or .gz (Debian's dataset-fashion-mnist). images
   (N,28,28) U8 and labels (N) U8 are new host tensors; on error both are
   empty and nothing is allocated. */
GPUDL_API gpudl_status gpudl_mnist_load(gpudl_ctx *ctx, const char *dir, int train, gpudl_tensor *images, gpudl_tensor *labels);
/* Both sets of Fashion-MNIST (or any MNIST layout): from dir when it is not
   NULL, else from the first of ".", "data/fashion-mnist",
   "build/data/fashion-mnist", "/usr/share/datasets/fashion-mnist" (Debian's
   dataset-fashion-mnist) and "data/fashion-mnist-subset" that has them.
   Quiet while it looks; if nothing loads, one error: the most telling
   failure (files that are there but do not load), with its fix. *found
   (optional) gets the directory. */
GPUDL_API gpudl_status gpudl_fashion_mnist_load(gpudl_ctx *ctx, const char *dir, gpudl_tensor *train_x, gpudl_tensor *train_y,
                                                gpudl_tensor *test_x, gpudl_tensor *test_y, const char **found);

/* A dataset resident on the context's device: images as F32 (N, C, H, W)
   normalised as (pixel / 255 - mean) / std, labels as I32 (N). Batches are
   gathered on the device from a shuffled index (one upload per epoch, no
   per-batch host-to-device copies), as F32 unless gpudl_dataset_set_dtype
   asks for F16 or BF16. */
typedef struct gpudl_dataset {
    gpudl_tensor images, labels;   /* (N,C,H,W) f32, (N) i32 on the device */
    gpudl_tensor perm;             /* (N) i32 on the device: this epoch's order */
    gpudl_tensor xb, yb;           /* (batch,C,H,W) batch (see gpudl_dataset_set_dtype), (batch) i32 labels */
    int64_t n, batch;
    uint64_t seed;
    int shard_rank, shard_size;    /* gpudl_dataset_shard; 0, 0: the whole batch */
    int dtype_set;                 /* 1: gpudl_dataset_set_dtype chose xb's dtype */
} gpudl_dataset;

/* images: a host tensor (N,H,W) or (N,C,H,W): U8 pixels, normalised as
   (pixel / 255 - mean) / std, or F32, F16, BF16 values, normalised as
   (value - mean) / std (mean 0, std 1: as they are); labels: U8 or I32 (N). */
GPUDL_API gpudl_status gpudl_dataset_create(gpudl_ctx *ctx, gpudl_dataset *ds, const gpudl_tensor *images,
                                            const gpudl_tensor *labels, int64_t batch, float mean, float std);
GPUDL_API void gpudl_dataset_free(gpudl_ctx *ctx, gpudl_dataset *ds);
/* Orders the samples for an epoch: shuffled with (seed, epoch), or in order if shuffle is 0. */
GPUDL_API gpudl_status gpudl_dataset_shuffle(gpudl_ctx *ctx, gpudl_dataset *ds, int shuffle, uint64_t epoch);
/* Batch b of the epoch (the last one may be short): views of ds->xb/yb.
   Returns GPUDL_OK, or
     GPUDL_ERR_INVALID_ARG  ctx, ds, x or y is NULL, ds was not created, or b
                            is outside [0, gpudl_dataset_num_batches(ds))
     GPUDL_ERR_CUDA, GPUDL_ERR_CUDA_FATAL   the gather kernel failed to launch */
GPUDL_API int64_t gpudl_dataset_num_batches(const gpudl_dataset *ds);
GPUDL_API gpudl_status gpudl_dataset_batch(gpudl_ctx *ctx, gpudl_dataset *ds, int64_t b, gpudl_tensor *x, gpudl_tensor *y);
/* The dtype of the batches gpudl_dataset_batch gives: GPUDL_F32, or
   GPUDL_F16 / GPUDL_BF16, the normalised F32 values rounded once as
   gpudl_tensor_cast rounds them (the same bits), in the gather itself. A
   model whose activations are that dtype (GPUDL_PRECISION_FP16 or BF16)
   then takes the batch without casting it: one kernel fewer per step, and
   half the batch's bytes. Until this is called, the dtype follows the
   context's models at each gpudl_dataset_batch: F16 (BF16) while every
   model of the context has FP16 (BF16) activations, F32 otherwise (no
   model, FP32 or mixed precisions); so a 16-bit model is fed 16-bit
   batches, the bits its own cast would make, without this call. When the
   dtype changes the batch buffer is replaced: views of the old one are
   stale.
   Returns GPUDL_OK, or
     GPUDL_ERR_INVALID_ARG  ds is NULL or not created, or dtype is not a float dtype
     GPUDL_ERR_OOM, GPUDL_ERR_CUDA   the new buffer could not be allocated (the old one is kept) */
GPUDL_API gpudl_status gpudl_dataset_set_dtype(gpudl_ctx *ctx, gpudl_dataset *ds, gpudl_dtype dtype);

GPUDL__KFN int gpudl_k_gather(void *stream, void *xb, int xb_dtype, int32_t *yb, const float *images, const int32_t *labels,
                   const int32_t *perm, int64_t start, int64_t count, int64_t sample);

/* >>io -------------------------------------------------------------------- */
/* Saves parameters, batch-norm statistics, optimizer state, step count and
   RNG state as a safetensors file (PyTorch's safetensors.torch.load_file
   reads it; parameter names follow nn.Sequential: "0.weight", "0.bias",
   ...). Into the same layers as a PyTorch nn.Sequential:
       sd = {k: v for k, v in load_file(p).items() if not k.startswith("optimizer.")}
       net.load_state_dict(sd, strict=False)   # BatchNorm's num_batches_tracked is not stored
   Atomic: written to a temporary file, fsync'ed, then renamed.
   Returns GPUDL_OK, or
     GPUDL_ERR_INVALID_ARG  a NULL argument, or the model is not built
     GPUDL_ERR_IO           the file could not be written, flushed or renamed
                            (an existing file at path is left as it was)
     GPUDL_ERR_OOM          no host memory for the copy of the parameters
     GPUDL_ERR_CUDA, GPUDL_ERR_CUDA_FATAL   copying from the device failed */
GPUDL_API gpudl_status gpudl_model_save(gpudl_ctx *ctx, gpudl_model *m, const char *path);
/* The same safetensors bytes as gpudl_model_save's file, in memory: *data
   (allocated with GPUDL_MALLOC; free it with gpudl_memory_free) and *size.
   On failure *data is NULL and *size 0. Every rank of a data-parallel
   model answers (no file is shared). */
GPUDL_API gpudl_status gpudl_model_save_memory(gpudl_ctx *ctx, gpudl_model *m, void **data, size_t *size);
GPUDL_API void gpudl_memory_free(void *data);
/* Loads a file saved by gpudl_model_save into a built model of the same
   architecture. Everything is validated (header, offsets, sizes, names,
   shapes) into a staging buffer first: on any error the model is untouched.
   Returns GPUDL_OK, or
     GPUDL_ERR_INVALID_ARG  a NULL argument, or the model is not built
     GPUDL_ERR_IO           the file cannot be opened or read
     GPUDL_ERR_FORMAT       not a gpudl safetensors file, or one of another
                            architecture (the message names the tensor and both shapes)
     GPUDL_ERR_OOM          no host memory for the staging buffer
     GPUDL_ERR_CUDA, GPUDL_ERR_CUDA_FATAL   copying to the device failed */
GPUDL_API gpudl_status gpudl_model_load(gpudl_ctx *ctx, gpudl_model *m, const char *path);
/* The same from a file's bytes in memory; name only labels messages. */
GPUDL_API gpudl_status gpudl_model_load_memory(gpudl_ctx *ctx, gpudl_model *m, const char *name, const void *data, size_t size);

/* >>gradcheck ------------------------------------------------------------- */
typedef struct gpudl_gradcheck_result {
    int64_t checked, failed;
    double  max_abs_err, max_rel_err;
    char    worst[160];    /* where the largest relative error was */
} gpudl_gradcheck_result;

/* Compares the model's backward against central finite differences of its
   loss (computed in float64 from the float32 forward) for every parameter
   (up to max_per_tensor entries each, 0 = all) and the input x. The model
   and x must be on the CPU. An entry fails when
   |analytic - numeric| > atol + rtol * |numeric|. */
GPUDL_API gpudl_status gpudl_gradcheck(gpudl_model *m, const gpudl_tensor *x, const gpudl_tensor *target, double eps,
                                       double atol, double rtol, int64_t max_per_tensor, gpudl_gradcheck_result *res);

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

/* >>progress -------------------------------------------------------------- */
/* A progress bar for training loops: on a terminal it redraws one line
   (step, loss, items/s, ETA); otherwise it prints a plain line at every
   quarter and at the end. */
typedef struct gpudl_progress {
    char    label[64];
    int64_t total, items_per_step, last_printed;
    double  t0;
    int     tty;
} gpudl_progress;

GPUDL_API void gpudl_progress_begin(gpudl_progress *p, const char *label, int64_t total_steps, int64_t items_per_step);
/* done steps so far; loss < 0 = not shown. */
GPUDL_API void gpudl_progress_update(gpudl_progress *p, int64_t done, float loss);
GPUDL_API void gpudl_progress_end(gpudl_progress *p, float loss);

/* >>doctor ---------------------------------------------------------------- */
/* A self-check for a first run (make doctor prints it): this build (CUDA or
   CPU only, the architectures its kernels are for, the cuBLAS and cuDNN it
   was built against), the driver and runtime, the GPU and whether the
   kernels run on it, the cuBLAS and cuDNN found at run time, the CPU's GEMM
   kernel and threads, and where Fashion-MNIST is. One line each into buf;
   a problem is a line "problem: ..." followed by "  fix: ..." with the
   command that fixes it. Returns the number of problems (-1: no buf). */
GPUDL_API int gpudl_doctor(char *buf, size_t size);

/* >>override -------------------------------------------------------------- */
/* Op overrides: per context and per device, a built-in op's implementation
   replaced by the user's function (a student's kernel), which every call of
   the op then uses: gpudl_matmul, the layers, the models and the examples,
   unchanged. Set a field of gpudl_ops and install the struct with
   gpudl_ctx_set_ops; a NULL field is gpudl's own implementation again, and
   gpudl_ctx_set_ops(ctx, dev, NULL) restores them all. Two contexts never
   see each other's overrides.
   An override gets plain pointers and sizes: host memory for
   GPUDL_DEVICE_CPU, device memory and the context's cudaStream_t (stream)
   for GPUDL_DEVICE_CUDA; everything is row-major and contiguous. It is used
   for F32 data (16-bit calls keep gpudl's path) and returns GPUDL_OK, or
   GPUDL_ERR_UNSUPPORTED to hand this call to gpudl's implementation (a ReLU
   override asked for a tanh), or another status, which the op returns. */

/* The geometry of one max-pooling call: NC planes of H x W into Ho x Wo;
   window k_h x k_w, stride, zero padding (padded cells are never the max). */
typedef struct gpudl_pool_shape {
    int64_t NC, H, W, Ho, Wo, k_h, k_w, stride_h, stride_w, pad_h, pad_w;
} gpudl_pool_shape;

/* One convolution: x (N,C,H,W), w (O,C,k_h,k_w), y (N,O,Ho,Wo). */
typedef struct gpudl_conv_shape {
    int64_t N, C, H, W, O, k_h, k_w, Ho, Wo, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
} gpudl_conv_shape;

typedef struct gpudl_ops {
    void *user;   /* passed to every override */
    /* C (M,N) = alpha op(A) op(B) + beta C; A is (M,K), or (K,M) read
       transposed when trans_a; B is (K,N), or (N,K) when trans_b. beta == 0:
       C is not read (it may hold garbage). Under gpudl_matmul and the linear layer. */
    gpudl_status (*gemm)(void *user, void *stream, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                         float alpha, const float *A, const float *B, float beta, float *C);
    /* y[i] = act(x[i]); dx[i] = dy[i] * act'(x[i]) (y: the forward output), i < n. */
    gpudl_status (*act_forward)(void *user, void *stream, gpudl_act act, float alpha, float *y, const float *x, int64_t n);
    gpudl_status (*act_backward)(void *user, void *stream, gpudl_act act, float alpha, float *dx, const float *dy,
                                 const float *x, const float *y, int64_t n);
    /* probs (N,K) = softmax of each row of logits; loss[0] = mean over rows
       of -log probs[r, labels[r]]. Labels are in [0, K) (gpudl checks).
       backward: dlogits = scale * (probs - onehot(labels)) / N. */
    gpudl_status (*softmax_xent_forward)(void *user, void *stream, float *loss, float *probs, const float *logits,
                                         const int32_t *labels, int64_t N, int64_t K);
    gpudl_status (*softmax_xent_backward)(void *user, void *stream, float *dlogits, const float *probs,
                                          const int32_t *labels, int64_t N, int64_t K, float scale);
    /* y = max over each window; backward writes all of dx: each dy goes to
       the first maximum of its window (row-major order; NaN wins), summed
       where windows overlap, 0 elsewhere. */
    gpudl_status (*maxpool_forward)(void *user, void *stream, float *y, const float *x, const gpudl_pool_shape *s);
    gpudl_status (*maxpool_backward)(void *user, void *stream, float *dx, const float *dy, const float *x,
                                     const gpudl_pool_shape *s);
    /* y = conv(x, w) + b (b may be NULL): cross-correlation, as PyTorch. */
    gpudl_status (*conv2d_forward)(void *user, void *stream, float *y, const float *x, const float *w, const float *b,
                                   const gpudl_conv_shape *s);
    /* One optimizer step over n weights, g already unscaled and clipped.
       SGD: g' = g + wd w; v = momentum v + g' (v NULL without momentum);
            w -= lr (nesterov ? g' + momentum v : v), or lr g' without momentum.
       Adam: g' = g + wd w (or, decoupled (AdamW), w -= lr wd w first);
            m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2;
            w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps), t = step (1, 2, ...). */
    gpudl_status (*sgd_update)(void *user, void *stream, float *w, const float *g, float *v, int64_t n, float lr,
                               float momentum, float weight_decay, int nesterov);
    gpudl_status (*adam_update)(void *user, void *stream, float *w, const float *g, float *m, float *v, int64_t n,
                                float lr, float beta1, float beta2, float eps, float weight_decay, int decoupled, int64_t t);
    /* The causal softmax over attention scores (gpudl_attention_forward and
       _backward call it, once per call, for all B*NH heads): L = B*NH
       matrices of T x T, row t of matrix l at (l*T + t)*T. Row t sees
       positions j <= t only:
       forward: att[t,j] = exp(s[t,j] - m) / sum_{k<=t} exp(s[t,k] - m) for
       j <= t, m = max_{k<=t} s[t,k]; att[t,j] = 0 (exactly) for j > t.
       scores are already scaled (q.k / sqrt(HS)); the entries above the
       diagonal hold whatever the GEMM computed there: never read them.
       backward: ds[t,j] = att[t,j] (dp[t,j] - sum_{k<=t} att[t,k] dp[t,k])
       for j <= t, 0 (exactly) for j > t; dp and att above the diagonal are
       not to be read. Outputs never overlap inputs. T may exceed 1024. */
    gpudl_status (*attn_softmax_forward)(void *user, void *stream, float *att, const float *scores, int64_t L, int64_t T);
    gpudl_status (*attn_softmax_backward)(void *user, void *stream, float *ds, const float *dp, const float *att, int64_t L,
                                          int64_t T);
    /* The tensor cores' GEMM: C (M,N) = alpha op(A) op(B) + beta C with A
       and B in FP16 (IEEE binary16 bits: __half on the device) and C in
       f32; every product is exact in FP32 and the sums are FP32, as a
       tensor core's (WMMA: matrix_a/matrix_b __half, accumulator float).
       Shapes, transposes and beta as gemm. gpudl_matmul (and so the linear
       layers, attention and the models under GPUDL_PRECISION_FP16) calls it
       for f16 operands: with an f32 C directly (the weight gradients), with
       an f16 C (the activations) through an f32 copy of C that gpudl rounds
       to f16 once after the call. BF16 keeps gpudl's path. */
    gpudl_status (*gemm_f16)(void *user, void *stream, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                             float alpha, const uint16_t *A, const uint16_t *B, float beta, float *C);
} gpudl_ops;

/* Installs ops (copied; NULL: none) for the context's device dev
   (GPUDL_DEVICE_CPU or GPUDL_DEVICE_CUDA); gpudl_ctx_ops reads them back. */
GPUDL_API gpudl_status gpudl_ctx_set_ops(gpudl_ctx *ctx, gpudl_device dev, const gpudl_ops *ops);
GPUDL_API gpudl_status gpudl_ctx_ops(gpudl_ctx *ctx, gpudl_device dev, gpudl_ops *ops);

/* Checking an override against gpudl's reference. The ops a check knows: */
typedef enum gpudl_op {
    GPUDL_OP_GEMM = 1,
    GPUDL_OP_ACT_FORWARD, GPUDL_OP_ACT_BACKWARD,
    GPUDL_OP_XENT_FORWARD, GPUDL_OP_XENT_BACKWARD,
    GPUDL_OP_MAXPOOL_FORWARD, GPUDL_OP_MAXPOOL_BACKWARD,
    GPUDL_OP_CONV2D_FORWARD,
    GPUDL_OP_SGD_UPDATE, GPUDL_OP_ADAM_UPDATE,
    /* the causal softmax over attention scores; its own groups: causal mask
       (NaN, 1e4 or Inf above the diagonal; masked outputs exactly 0), large
       scores (+-1e4, in rows of T = 40 and of T = 1100, past 1024 too),
       long rows (T = 1100, 2049), finite diff (the backward against the
       installed forward) and odd head sizes (the whole
       gpudl_attention_forward/_backward with the override, float64 reference) */
    GPUDL_OP_ATTN_SOFTMAX_FORWARD, GPUDL_OP_ATTN_SOFTMAX_BACKWARD,
    /* the FP16 GEMM with FP32 sums (gemm_f16): the GEMM's groups on f16
       inputs, and "accumulation" (K = 2048 and 4096 of positive products,
       whose sums an FP16 accumulator loses: a sum past 2048 has a spacing
       of 2) and "values" with products near FP16's largest (65504), whose
       sums overflow FP16; tolerance 1e-3 of the sum of |products|, which
       an FP16 accumulator meets only for short sums */
    GPUDL_OP_GEMM_F16
} gpudl_op;

/* What a check found. A check runs the override on a battery of cases,
   each named by a group (what it probes) and a shape: sizes of 1, primes,
   non-multiples of the warp (32) and of 16/64-wide tiles, and a large one;
   values random, zero, negative, large (logits of 1000), subnormal, and
   NaN/Inf where gpudl's reference defines the result (IEEE's: a GEMM's
   0 * Inf is NaN). Each output element is compared with a float64
   reference (backward ops: also with central finite differences of the
   float64 forward) and fails when |got - expected| > tol * (1 + |expected|)
   (NaN must meet NaN). */
#define GPUDL_CHECK_MAX_CASES 64
typedef struct gpudl_check_case {
    char    group[24];        /* "shapes", "odd sizes", "large", "values", "nan/inf", "accumulate", ... */
    char    shape[64];        /* "M=33 N=17 K=65 A^T" */
    int     passed;
    double  max_abs_err, max_rel_err;
} gpudl_check_case;

typedef struct gpudl_check_report {
    gpudl_op op;
    int     passed;                      /* every case passed */
    int     ncases, nfailed;
    double  tol;                         /* the tolerance used */
    double  max_abs_err, max_rel_err;    /* over every case */
    gpudl_check_case cases[GPUDL_CHECK_MAX_CASES];
    /* the first failure: its case, element index and coordinates, value
       expected and got, and the inputs that produced it */
    int64_t override_calls;              /* calls the override handled, and calls it handed back to gpudl */
    int64_t override_declined;           /* (0 and 0: no override installed, gpudl's own was checked) */
    int     first_case;                  /* -1: none */
    int64_t index;
    double  expected, got;
    char    where[96];                   /* "C[3,16] (row 3, column 16)" */
    char    inputs[160];                 /* "x = -0.0 (a zero input)", "logits row 2 max 1000" */
    char    status_msg[160];             /* the override failed with a status: its message */
} gpudl_check_report;

/* Checks the override installed for op on ctx's device (none installed:
   gpudl's own implementation, which must pass). act picks the activation
   for the two activation ops (0 = ReLU). The battery's groups and shapes
   are fixed; its random inputs come from the context's seed
   (gpudl_ctx_desc.seed, gpudl_ctx_set_seed): the same seed, the same
   cases, bit for bit; another seed, other inputs, so a grader that draws
   a fresh seed per run cannot be answered from a recording. The default
   seed (0x5EED) gives the battery gpudl has always run. Every case holds
   for any seed: random inputs are built so that no coincidence decides a
   case (no exact zero where ReLU's slope is asked, no tie for a max-pool
   window's maximum, no kink within a finite difference's step); the ties
   and zeros that matter have cases of their own. Returns GPUDL_OK when
   the check ran (r->passed says how it went), or a status when it could
   not run. */
GPUDL_API gpudl_status gpudl_check_op(gpudl_ctx *ctx, gpudl_op op, gpudl_act act, gpudl_check_report *r);
/* A one-screen explanation of r for a student: the verdict, each case, and
   for a failure which shape, which index, expected, got, and a hint. */
GPUDL_API const char *gpudl_check_explain(const gpudl_check_report *r, char *buf, size_t size);

/* Checks a custom layer: builds a CPU model of that layer alone for
   samples of in_shape (batch 3), and compares its backward with finite
   differences (gpudl_gradcheck) for the input and every parameter, after
   a forward/backward that must give finite values. */
GPUDL_API gpudl_status gpudl_check_layer(gpudl_ctx *ctx, const gpudl_layer_desc *desc, int ndim, const int64_t *in_shape,
                                         gpudl_check_report *r);

/* Times the override against gpudl's own path (cuBLAS for the GEMM) on one
   large problem on the GPU: median milliseconds of each, the work's FLOPs
   and bytes (the floor: each input read once, each output written once),
   GFLOP/s and GB/s, and the fraction of the device's FP32 and memory
   bandwidth peaks: near the first, the kernel is compute-bound; near the
   second, bandwidth-bound; far from both, latency or a poor kernel. size
   sets the problem (0 = 2048, which fills a GPU): GEMM M = N = K = size;
   activations and updates n = 4 size^2; softmax-xent 2 size rows of 1000;
   max-pool 2x2 over 4 size^2 / 4096 planes of 64x64; conv N = size / 64
   (at least 1) images of 64 x 56 x 56, 64 3x3 filters. A CPU context
   returns GPUDL_ERR_UNSUPPORTED: timing a kernel needs a GPU. */
typedef struct gpudl_op_timing {
    gpudl_op op;
    char     problem[64];                /* "M=N=K=2048" */
    double   ms_override, ms_builtin;    /* medians */
    double   flops, bytes;               /* of one call: the floor */
    double   gflops_override, gflops_builtin, gbs_override, gbs_builtin;
    double   frac_peak_flops, frac_peak_bw;   /* the override's, of the device's peaks */
    char     device[64];
} gpudl_op_timing;

GPUDL_API gpudl_status gpudl_time_op(gpudl_ctx *ctx, gpudl_op op, int64_t size, gpudl_op_timing *t);
GPUDL_API const char *gpudl_op_timing_explain(const gpudl_op_timing *t, char *buf, size_t size);

/* >>dist ------------------------------------------------------------------ */
/* Data-parallel training: N processes (ranks), each with a replica of the
   model and its share of every batch. After each backward the gradients
   are averaged across the ranks: the flat gradient buffer, all-reduced in
   buckets (on the GPU on a stream of their own, overlapping the rest of
   backward). Behind build switches, so the two-file build needs neither:
     GPUDL_MPI    MPI: CPU ranks' gradients, and start-up (build with mpicc,
                  or pass mpicc --showme's flags to nvcc)
     GPUDL_NCCL   NCCL: GPU ranks' gradients (link -lnccl)
   Start-up: under mpirun or srun, MPI gives each rank its number; without
   MPI, torchrun-style variables RANK, WORLD_SIZE and LOCAL_RANK do (the
   launcher's protocol: the one place gpudl reads the environment), and the
   NCCL unique id goes through desc.id_file on a shared file system. Without
   either, a lone process gets a dist of one rank, which does nothing.
   What a model with a dist does:
     - gpudl_model_set_dist: checks that every rank built the same model
       (layers and shapes; a mismatch names both), then copies rank 0's
       parameters and buffers to all (identical initial weights);
     - backward averages the gradients (a mean, so loss scaling, clipping
       and gradient accumulation work unchanged); the FP16 scaler's skip
       decision is then the same on every rank: an Inf or NaN on any rank
       reaches every rank's averaged gradients;
     - dropout draws a different mask on each rank; batch norm keeps its
       statistics per rank (each normalises its own shard of the batch);
     - gpudl_model_save writes on rank 0 only (others return GPUDL_OK),
       and every rank loads;
     - a rank that dies or stops answering makes the others return
       GPUDL_ERR_DIST within timeout_ms (each step waits, on the host, for
       its gradients' all-reduce: the price of never hanging).
   gpudl_dataset_shard(ds, rank, size) gives rank r rows [r B, (r+1) B) of
   each global batch of size B (the dataset's batch), shuffled alike on all
   ranks, so N ranks with batch B/N train like one with batch B. */
typedef struct gpudl_dist gpudl_dist;   /* opaque */

typedef struct gpudl_dist_desc {
    int          timeout_ms;      /* 0 = 60000: a collective that takes longer fails with GPUDL_ERR_DIST */
    const char  *id_file;         /* NCCL without MPI: where rank 0 writes the unique id */
    int64_t      bucket_floats;   /* gradients all-reduced per bucket (0 = 1M floats, 4 MiB) */
    gpudl_log_fn log;             /* messages of gpudl_dist_create (NULL: stderr) */
    void        *log_user;
} gpudl_dist_desc;

/* Finds this process's rank, the number of ranks and the local rank (the
   GPU to use: pass it as gpudl_ctx_desc.cuda_device), starting MPI when
   built with it and not yet started. Returns GPUDL_OK, or
     GPUDL_ERR_INVALID_ARG  out is NULL, or the launcher's variables are malformed
     GPUDL_ERR_UNSUPPORTED  several ranks asked for, and no GPUDL_MPI / GPUDL_NCCL built in
     GPUDL_ERR_DIST         MPI failed to start */
GPUDL_API gpudl_status gpudl_dist_create(const gpudl_dist_desc *desc, gpudl_dist **out);
/* Whether a launcher started this process as one of several ranks, read
   from what it sets in the environment: mpirun / mpiexec of Open MPI
   (OMPI_COMM_WORLD_*), of MPICH and Intel MPI (PMI_*), Slurm's srun
   (SLURM_PROCID, SLURM_STEP_NUM_TASKS) and torchrun (RANK, WORLD_SIZE).
   Returns the number of ranks (1: none) and this process's rank in *rank
   (optional; -1 when the launcher does not say); starts nothing. A program that trains alone unless asked (--dist) can
   warn that N copies of it are about to train the same model apart. */
GPUDL_API int gpudl_dist_launched(int *rank);
/* Frees the communicators (and finalizes MPI if gpudl_dist_create started it). */
GPUDL_API void gpudl_dist_destroy(gpudl_dist *d);
GPUDL_API int gpudl_dist_rank(const gpudl_dist *d);
GPUDL_API int gpudl_dist_size(const gpudl_dist *d);
GPUDL_API int gpudl_dist_local_rank(const gpudl_dist *d);
/* In place across ranks, for an F32 tensor on ctx's device: the sum (or
   the mean) of every rank's t; t from root on every rank. Each rank gets
   the same bits. */
GPUDL_API gpudl_status gpudl_dist_allreduce(gpudl_dist *d, gpudl_ctx *ctx, gpudl_tensor *t, int average);
GPUDL_API gpudl_status gpudl_dist_broadcast(gpudl_dist *d, gpudl_ctx *ctx, gpudl_tensor *t, int root);
/* Makes m data-parallel over d (see above); d must outlive m. Call after
   gpudl_model_build and before training. */
GPUDL_API gpudl_status gpudl_model_set_dist(gpudl_model *m, gpudl_dist *d);
/* Rank's share of every batch (see above): the batch (B) must be a
   multiple of size; num_batches stays the global count. */
GPUDL_API gpudl_status gpudl_dataset_shard(gpudl_ctx *ctx, gpudl_dataset *ds, int rank, int size);

#ifdef __cplusplus
}
#endif

/* For examples and tests only: the library itself never aborts. It needs
   <stdio.h> and <stdlib.h>, which the header includes for it unless the
   program defines GPUDL_NO_STDIO (then it includes them where it uses it). */
#if !defined(GPUDL_NO_STDIO)
#  include <stdio.h>
#  include <stdlib.h>
#endif
#define GPUDL_CHECK(expr) do { gpudl_status gpudl_check_s_ = (expr); if (gpudl_check_s_ != GPUDL_OK) { \
    fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, gpudl_status_string(gpudl_check_s_)); \
    exit(1); } } while (0)

/* the program's one-letter macros again (the macro guard, at the top) */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(GPUDL_NO_MACRO_GUARD)
  _Pragma("pop_macro(\"A\")") _Pragma("pop_macro(\"B\")") _Pragma("pop_macro(\"C\")") _Pragma("pop_macro(\"D\")") _Pragma("pop_macro(\"E\")") _Pragma("pop_macro(\"F\")") _Pragma("pop_macro(\"G\")") _Pragma("pop_macro(\"H\")") _Pragma("pop_macro(\"I\")")
  _Pragma("pop_macro(\"J\")") _Pragma("pop_macro(\"K\")") _Pragma("pop_macro(\"L\")") _Pragma("pop_macro(\"M\")") _Pragma("pop_macro(\"N\")") _Pragma("pop_macro(\"O\")") _Pragma("pop_macro(\"P\")") _Pragma("pop_macro(\"Q\")") _Pragma("pop_macro(\"R\")")
  _Pragma("pop_macro(\"S\")") _Pragma("pop_macro(\"T\")") _Pragma("pop_macro(\"U\")") _Pragma("pop_macro(\"V\")") _Pragma("pop_macro(\"W\")") _Pragma("pop_macro(\"X\")") _Pragma("pop_macro(\"Y\")") _Pragma("pop_macro(\"Z\")") _Pragma("pop_macro(\"min\")") _Pragma("pop_macro(\"max\")")
#endif
#endif /* GPUDL_H */

/* ========================================================================= */
/*                              IMPLEMENTATION                               */
/* ========================================================================= */
#ifdef GPUDL_IMPLEMENTATION
/* the implementation too keeps the program's one-letter macros out (the macro guard, at the top) */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(GPUDL_NO_MACRO_GUARD)
  _Pragma("push_macro(\"A\")") _Pragma("push_macro(\"B\")") _Pragma("push_macro(\"C\")") _Pragma("push_macro(\"D\")") _Pragma("push_macro(\"E\")") _Pragma("push_macro(\"F\")") _Pragma("push_macro(\"G\")") _Pragma("push_macro(\"H\")") _Pragma("push_macro(\"I\")")
  _Pragma("push_macro(\"J\")") _Pragma("push_macro(\"K\")") _Pragma("push_macro(\"L\")") _Pragma("push_macro(\"M\")") _Pragma("push_macro(\"N\")") _Pragma("push_macro(\"O\")") _Pragma("push_macro(\"P\")") _Pragma("push_macro(\"Q\")") _Pragma("push_macro(\"R\")")
  _Pragma("push_macro(\"S\")") _Pragma("push_macro(\"T\")") _Pragma("push_macro(\"U\")") _Pragma("push_macro(\"V\")") _Pragma("push_macro(\"W\")") _Pragma("push_macro(\"X\")") _Pragma("push_macro(\"Y\")") _Pragma("push_macro(\"Z\")") _Pragma("push_macro(\"min\")") _Pragma("push_macro(\"max\")")
#  undef A
#  undef B
#  undef C
#  undef D
#  undef E
#  undef F
#  undef G
#  undef H
#  undef I
#  undef J
#  undef K
#  undef L
#  undef M
#  undef N
#  undef O
#  undef P
#  undef Q
#  undef R
#  undef S
#  undef T
#  undef U
#  undef V
#  undef W
#  undef X
#  undef Y
#  undef Z
#  undef min
#  undef max
#endif
#ifndef GPUDL__IMPLEMENTED
#define GPUDL__IMPLEMENTED

/* >>config ---------------------------------------------------------------- */
#ifndef GPUDL_CUDNN_WORKSPACE_LIMIT
#  define GPUDL_CUDNN_WORKSPACE_LIMIT (256u << 20)
#endif

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
#include <float.h>
#include <time.h>
#if defined(_WIN32)
#  ifndef WIN32_LEAN_AND_MEAN
#    define WIN32_LEAN_AND_MEAN   /* windows.h without the rest of the Win32 API */
#  endif
#  ifndef NOMINMAX
#    define NOMINMAX              /* and without its min / max macros */
#  endif
#  include <windows.h>
#  include <io.h>                 /* _get_osfhandle, _fileno, _isatty */
#endif
#if defined(_OPENMP) && defined(_MSC_VER) && !defined(__clang__)
#  error "gpudl: MSVC's /openmp is OpenMP 2.0, and gpudl's loops use OpenMP 4 (simd). Build without /openmp (one thread), or use clang-cl -fopenmp or MinGW-w64 gcc -fopenmp."
#endif
#ifdef _OPENMP
#  include <omp.h>
#  define GPUDL__OMP(x) _Pragma(#x)
#else
#  define GPUDL__OMP(x)
#endif
/* Elementwise loops: gcc 12 at -O2 vectorises only loops that need neither
   an alias check nor a scalar tail, which rules out nearly all of ours.
   "omp simd" (with OpenMP) or "GCC ivdep" says the iterations are
   independent, so they vectorise at -O2 too. */
#if defined(_OPENMP) && !defined(__clang__)
#  define GPUDL__SIMD _Pragma("omp simd")
#  define GPUDL__PAR_SIMD(cond) GPUDL__OMP(omp parallel for simd num_threads(gpudl__team()) if (cond))
#elif defined(_OPENMP)   /* clang vectorises these loops by itself, and an omp simd loop it cannot is a -Wpass-failed
                            warning in the program's -Werror build */
#  define GPUDL__SIMD
#  define GPUDL__PAR_SIMD(cond) GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (cond))
#elif defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#  define GPUDL__SIMD _Pragma("GCC ivdep")
#  define GPUDL__PAR_SIMD(cond) _Pragma("GCC ivdep")
#else
#  define GPUDL__SIMD
#  define GPUDL__PAR_SIMD(cond)
#endif
/* for (i = 0; i < n; i++) BODY, vectorisable at -O2 even without OpenMP: a
   main loop whose trip count is visibly a multiple of 16 (gcc's cheap cost
   model then needs no scalar tail inside it), then the tail. */
static int gpudl__team(void);   /* the threads of a parallel loop now (matmul section: sharing the CPU) */
#define GPUDL__EACH(i, n, cond, BODY) do { int64_t gpudl__m_ = (n) & ~(int64_t)15; \
    GPUDL__PAR_SIMD(cond) for (i = 0; i < gpudl__m_; i++) { BODY; } \
    for (i = gpudl__m_; i < (n); i++) { BODY; } } while (0)

#ifdef GPUDL_CBLAS
#  include <cblas.h>
#endif
#ifdef GPUDL_MPI
#  ifndef OMPI_SKIP_MPICXX
#    define OMPI_SKIP_MPICXX 1   /* the C API only: not Open MPI's / MPICH's deprecated C++ bindings */
#  endif
#  ifndef MPICH_SKIP_MPICXX
#    define MPICH_SKIP_MPICXX 1
#  endif
#  include <mpi.h>
#endif
#if defined(GPUDL_NCCL) && !defined(GPUDL_NO_CUDA)
#  include <nccl.h>
#  define GPUDL__HAVE_NCCL 1
#endif
#ifdef GPUDL_ZLIB
#  include <zlib.h>
#endif
#if !defined(_WIN32)
#  include <sys/stat.h>
#  include <fcntl.h>
#  include <unistd.h>
#  if defined(GPUDL__ASKED_POSIX) && !defined(__APPLE__)
int fileno(FILE *stream);   /* POSIX's, hidden when <stdio.h> came first under -std=c99: the same declaration */
#  endif
#endif
#if defined(__linux__) && defined(_OPENMP)
#  include <sys/syscall.h>   /* SYS_sched_setaffinity: gpudl_ctx_desc.bind_threads */
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
/* a helper inlined into each GPUDL__MULTI_ISA version (compiled for its instruction set) */
#if defined(__GNUC__)
#  define GPUDL__INLINE_ALWAYS __attribute__((always_inline)) inline
#else
#  define GPUDL__INLINE_ALWAYS inline
#endif
/* CPU loops for the instruction set this CPU has, chosen at run time, so the
   README's plain "cc -O2" build runs them with AVX2 or AVX-512 where the
   CPU has them (activations, the attention core, conversions, fill, add,
   mul, axpby, column sums), and the same binary still
   runs on a CPU without (issue 38). GPUDL__MULTI_ISA
   defines name##_base (the build's flags), name##_avx2 (AVX2, FMA, F16C)
   and name##_avx512 (AVX-512 F/VL/BW/DQ) from one body, and name, which
   calls the one gpudl__cpu_isa() picks. The body is in each function
   itself, not an inline function they call, so that the OpenMP regions in
   it (outlined before inlining) are compiled for its instruction set too.
   GPUDL_CPU_ISA=baseline (or avx2) in the environment forces a lower one. */
#if defined(GPUDL__X86_SIMD) && !defined(__clang__) && !defined(_WIN32)
#  define GPUDL__HAVE_MULTI_ISA 1
#  define GPUDL__ISA_AVX2 __attribute__((target("avx2,fma,f16c")))
#  define GPUDL__ISA_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c")))
#  define GPUDL__MULTI_ISA(name, params, args, ...) \
    static void name##_base params { __VA_ARGS__ } \
    GPUDL__ISA_AVX2 static void name##_avx2 params { __VA_ARGS__ } \
    GPUDL__ISA_AVX512 static void name##_avx512 params { __VA_ARGS__ } \
    static void name params { \
        int gpudl__isa_ = gpudl__cpu_isa(); \
        if (gpudl__isa_ >= 3) name##_avx512 args; else if (gpudl__isa_ == 2) name##_avx2 args; else name##_base args; \
    }
#else   /* one version: clang's OpenMP regions do not take the function's target, and MinGW's gcc
           does not align the stack for the AVX spills of auto-vectorised code (gcc bug 54412) */
#  define GPUDL__MULTI_ISA(name, params, args, ...) static void name params { __VA_ARGS__ }
#endif
#ifdef GPUDL__X86_SIMD
static int gpudl__cpu_isa(void);
#endif

#if (defined(__x86_64__) || defined(_M_X64)) && !defined(__TINYC__)
#  define GPUDL__MXCSR 1
#  include <xmmintrin.h>   /* _mm_getcsr / _mm_setcsr (gpudl_cpu_flush_denormals); tcc has no intrinsics */
#endif
#if !defined(GPUDL_NO_SIMD) && defined(__aarch64__) && defined(__ARM_NEON) && !defined(__CUDACC__)
#  define GPUDL__NEON 1
#  include <arm_neon.h>
#endif

#ifndef GPUDL_NO_CUDA
#  define GPUDL__ON_GPU(t) ((t)->device == GPUDL_DEVICE_CUDA)   /* t's memory is on the GPU */
#else
#  define GPUDL__ON_GPU(t) 0
#endif
#define GPUDL__MIN(a, b) ((a) < (b) ? (a) : (b))
#if defined(__GNUC__)
#  define GPUDL__MAYBE_UNUSED __attribute__((unused))   /* helpers that only some builds call */
#else
#  define GPUDL__MAYBE_UNUSED
#endif
#define GPUDL__MAX(a, b) ((a) > (b) ? (a) : (b))

struct gpudl_ctx {
    gpudl_device    device;          /* CPU or CUDA */
    gpudl_math_mode math_mode;
    uint64_t        rng_seed, rng_offset;
    int             num_threads;
    int             share_cpu;       /* desc.share_cpu: -1 = this context's ops always on num_threads */
    int             sync_debug;
    gpudl_cpu_gemm  cpu_gemm;        /* the CPU GEMM micro-kernel asked for (desc.cpu_gemm) */
    int             cpu_kc;          /* the CPU GEMM's block depth, from the L2 size (gpudl__pick_kc) */
    gpudl_log_fn    log;
    void           *log_user;
    gpudl_status    fatal;           /* != OK: every later call returns it */
    int             entered;         /* inside a model call that made the device current (gpudl__enter_model) */
    char            last_error[1024];
    void           *host_ws;         /* grow-only host workspace (im2col, ...) */
    size_t          host_ws_bytes;
    char           *wide_mem;        /* the FP32 copies of 16-bit operands on the CPU (gpudl__widen): a stack */
    size_t          wide_size, wide_top, wide_need;
    void          **live;            /* open-addressing set of the tensor allocations this context made */
    size_t          live_cap, live_n, live_used;
    gpudl_ops       ops[2];          /* the user's overrides: [0] CPU, [1] CUDA (gpudl_ctx_set_ops) */
    int             any_ops[2];      /* whether ops[i] has a function */
    int64_t         ovr_calls[2];    /* calls of an override: [0] it handled, [1] it handed back (gpudl_check_op reports them) */
    struct gpudl_model *models;      /* the models not yet destroyed, linked through their next field */
    struct gpudl_model *dead[8];     /* the last destroyed models' shells (tag GPUDL__MODEL_DEAD), so a call that
                                        passes one again gets a clear error; freed oldest first, and with the context */
    int             dead_next;
    int64_t         datasets;        /* datasets created and not yet freed */
#ifndef GPUDL_NO_CUDA
    int             cuda_device;
    cudaStream_t    stream;
    int             own_stream;
    cublasHandle_t  cublas;
    void           *workspace;       /* cuBLAS workspace (device) */
    size_t          workspace_bytes;
    float          *scratch;         /* reduction partials + per-row values (device) */
    unsigned       *tickets;         /* (16) device counters, 0 between launches: the one-launch reductions' "last
                                        block" tickets (kernels on the context's stream, one after another) */
    int32_t        *report;          /* (2) pinned, written by kernels: [0] a row whose label was out of range
                                        (INT32_MAX: none), [1] the class count; read after each wait */
    int32_t        *bad_input;       /* (2) device: [0] 1 when a loss met a label (an embedding an id) out of range
                                        since the last model update, which then skips and clears it; [1] the
                                        update's last-block ticket (gpudl_k_optim_step) */
    size_t          scratch_floats;
    cudnnHandle_t   cudnn;           /* created on first use */
    void           *dev_ws;          /* grow-only device workspace (cuDNN, ...) */
    size_t          dev_ws_bytes;
    struct gpudl__conv_algo *conv_cache;
    int             conv_cache_n, conv_cache_cap;
    cublasLtHandle_t lt;             /* cuBLASLt, for GEMMs with a bias / ReLU epilogue: created on first use */
    int             use_lt;          /* desc.cublaslt resolved: 1 = bias (+ReLU) in cuBLASLt's epilogue */
    struct gpudl__lt_plan *lt_plans;
    int             lt_n, lt_cap;
#endif
};

/* >>status ---------------------------------------------------------------- */
GPUDL__DEF const char *gpudl_status_string(gpudl_status s) {
    switch (s) {
    case GPUDL_OK:              return "ok";
    case GPUDL_ERR_INVALID_ARG: return "invalid argument (NULL, bad value, wrong dtype or device)";
    case GPUDL_ERR_SHAPE:       return "shape mismatch";
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
    case GPUDL_ERR_DIST:        return "distributed training failed (another rank died, timed out or disagrees)";
    }
    return "unknown gpudl status";
}

GPUDL__DEF void gpudl_log_quiet(void *user, gpudl_log_level level, const char *msg) { (void)user; (void)level; (void)msg; }

GPUDL__DEF void gpudl_log_stderr(void *user, gpudl_log_level level, const char *msg) {
    static const char *names[] = {"", "error", "warning", "info", "debug"};
    (void)user;
    fprintf(stderr, "gpudl %s: %s\n", (level >= 1 && level <= 4) ? names[level] : "?", msg);
}

static void gpudl__log_default(void *user, gpudl_log_level level, const char *msg) {
    if (level <= GPUDL_LOG_WARN) gpudl_log_stderr(user, level, msg);
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

/* The user's override of an op (gpudl_ctx_set_ops) for t's device when t
   holds F32 data; NULL: gpudl's own implementation. GPUDL__OVERRIDE calls
   it and returns what it returned, unless it handed the call back
   (GPUDL_ERR_UNSUPPORTED): then the caller goes on with its own code. */
#define GPUDL__OVR(ctx, t, fn) ((t)->dtype == GPUDL_F32 ? (ctx)->ops[GPUDL__ON_GPU(t)].fn : 0)   /* 0: NULL is a bool to clang */
#define GPUDL__OVERRIDE(ctx, t, fn, ...) do { if (GPUDL__OVR(ctx, t, fn)) { int gpudl__d_; \
    gpudl_status gpudl__o_ = gpudl__ovr_result((ctx), GPUDL__OVR(ctx, t, fn)((ctx)->ops[GPUDL__ON_GPU(t)].user, \
                             gpudl__stream_for((ctx), (t)), __VA_ARGS__), #fn, &gpudl__d_); \
    if (gpudl__d_) return gpudl__o_; } } while (0)

static void *gpudl__stream_for(gpudl_ctx *ctx, const gpudl_tensor *t) {
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(t)) return (void *)ctx->stream;
#endif
    (void)ctx; (void)t;
    return NULL;
}

static gpudl_status gpudl__ovr_result(gpudl_ctx *ctx, gpudl_status s, const char *op, int *done) {
    *done = s != GPUDL_ERR_UNSUPPORTED;
    ctx->ovr_calls[!*done]++;
    if (s == GPUDL_OK || !*done) return GPUDL_OK;
    return GPUDL__ERR(ctx, s, "the %s override (gpudl_ctx_set_ops) returned %d: %s", op, (int)s, gpudl_status_string(s));
}
/* Entry check of every public function that takes a context. */
#ifndef GPUDL_NO_CUDA
static gpudl_status gpudl__activate(gpudl_ctx *ctx);
#  define GPUDL__ACTIVATE(ctx) do { if ((ctx)->device == GPUDL_DEVICE_CUDA && !(ctx)->entered) { \
    gpudl_status gpudl__a_ = gpudl__activate(ctx); if (gpudl__a_ != GPUDL_OK) return gpudl__a_; } } while (0)
#else
#  define GPUDL__ACTIVATE(ctx) ((void)0)
#endif
/* Every public call starts here: a usable context, and on a GPU its device
   current in the calling thread. */
/* A call without a context (or model) has nowhere to keep its message:
   it goes to this thread's, which gpudl_ctx_last_error(NULL) returns. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#  define GPUDL__TLS thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#  define GPUDL__TLS _Thread_local
#elif defined(__GNUC__) || defined(__clang__)   /* (tcc has no thread-local storage: the #else) */
#  define GPUDL__TLS __thread
#elif defined(_MSC_VER)
#  define GPUDL__TLS __declspec(thread)
#else
#  define GPUDL__TLS   /* no thread-local storage known: one message for the process */
#endif
static GPUDL__TLS char gpudl__no_ctx_msg[192];
static gpudl_status gpudl__no_ctx(const char *fn, const char *what) {
    snprintf(gpudl__no_ctx_msg, sizeof gpudl__no_ctx_msg, "%s: the %s is NULL", fn, what);
    return GPUDL_ERR_INVALID_ARG;
}
#define GPUDL__ENTER(ctx) do { if (!(ctx)) { return gpudl__no_ctx(__func__, "context"); } \
    if ((ctx)->fatal != GPUDL_OK) { return (ctx)->fatal; } GPUDL__ACTIVATE(ctx); } while (0)

/* printf onto the end of buf (size bytes, *n used so far), never past it: the text reports. */
static void gpudl__appendf(char *buf, size_t size, size_t *n, const char *fmt, ...) {
    va_list ap;
    int k;
    if (*n >= size) return;
    va_start(ap, fmt);
    k = vsnprintf(buf + *n, size - *n, fmt, ap);
    va_end(ap);
    if (k > 0) *n += (size_t)k;
}

/* The last error without its "file:line: ". */
static const char *gpudl__message(const gpudl_ctx *ctx) {
    const char *p = strstr(ctx->last_error, ": ");
    return p ? p + 2 : ctx->last_error;
}

GPUDL__DEF const char *gpudl_ctx_last_error(const gpudl_ctx *ctx) {
    return ctx ? ctx->last_error : gpudl__no_ctx_msg[0] ? gpudl__no_ctx_msg : "no context (NULL)";
}

#ifndef GPUDL_NO_CUDA

/* Fault injection, for tests only: a test build may define GPUDL__FAULT(kind)
   before including the implementation; where it is nonzero the guarded call
   does not run and fails as the device would have refused it (kind 1: a
   kernel launch, cudaErrorLaunchOutOfResources; 2: a cuBLAS, cuBLASLt or
   cuDNN call, EXECUTION_FAILED; 3: a CUDA runtime call through GPUDL__CUDA,
   cudaErrorInvalidValue). tests/suite_train.c fails each site of a step. */
#ifndef GPUDL__FAULT
#define GPUDL__FAULT(kind) 0
#endif

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

/* cudaEventQuery, minus its side effect: the runtime records cudaErrorNotReady
   as the thread's last error, and the next launcher's cudaGetLastError()
   would report it as a failed launch. */
static cudaError_t gpudl__event_query(cudaEvent_t ev) {
    cudaError_t e = cudaEventQuery(ev);
    if (e == cudaErrorNotReady) (void)cudaGetLastError();
    return e;
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

#define GPUDL__CUDA(ctx, expr) do { cudaError_t gpudl__e_ = GPUDL__FAULT(3) ? cudaErrorInvalidValue : (expr); \
    if (gpudl__e_ != cudaSuccess) return gpudl__cuda_fail((ctx), gpudl__e_, #expr, __FILE__, __LINE__); } while (0)
/* A CUDA call's status, for a caller that goes on after a failure. */
#define gpudl__cuda_ok(ctx, expr, what) gpudl__cuda_status((ctx), GPUDL__FAULT(3) ? cudaErrorInvalidValue : (expr), (what), \
                                                           __FILE__, __LINE__)
static gpudl_status gpudl__cuda_status(gpudl_ctx *ctx, cudaError_t e, const char *what, const char *file, int line) {
    return e == cudaSuccess ? GPUDL_OK : gpudl__cuda_fail(ctx, e, what, file, line);
}

/* The current device is per host thread, and the program may have changed
   it since the context was made (another context, another library, another
   thread): make the context's device current before its work is issued. */
static gpudl_status gpudl__activate(gpudl_ctx *ctx) {
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == ctx->cuda_device) return GPUDL_OK;
    GPUDL__CUDA(ctx, cudaSetDevice(ctx->cuda_device));
    return GPUDL_OK;
}

/* A cuBLAS or cuDNN call failed (status st, the library's words in why).
   When a kernel faulted earlier, the CUDA context holds a sticky error and
   that is the real cause: say so, and the context is unusable from here on. */
static gpudl_status gpudl__lib_fail(gpudl_ctx *ctx, gpudl_status st, const char *what, const char *why, const char *file,
                                    int line) {
    cudaError_t e = cudaPeekAtLastError();
    if (gpudl__cuda_sticky(e)) return gpudl__cuda_fail(ctx, e, what, file, line);
    return gpudl__fail(ctx, st, file, line, "%s failed: %s", what, why);
}

static const char *gpudl__cublas_why(cublasStatus_t b, char *buf, size_t size) {
    snprintf(buf, size, "%s (%s)", cublasGetStatusName(b), cublasGetStatusString(b));
    return buf;
}

#define GPUDL__CUBLAS(ctx, expr) do { cublasStatus_t gpudl__b_ = GPUDL__FAULT(2) ? CUBLAS_STATUS_EXECUTION_FAILED : (expr); \
    char gpudl__w_[160]; \
    if (gpudl__b_ != CUBLAS_STATUS_SUCCESS) return gpudl__lib_fail((ctx), \
        gpudl__b_ == CUBLAS_STATUS_ALLOC_FAILED ? GPUDL_ERR_OOM : GPUDL_ERR_CUBLAS, #expr, \
        gpudl__cublas_why(gpudl__b_, gpudl__w_, sizeof gpudl__w_), __FILE__, __LINE__); } while (0)

/* After a kernel launch: the launcher returned cudaGetLastError(). With
   sync_debug the stream is synchronised so an asynchronous fault names its op. */
static gpudl_status gpudl__launched(gpudl_ctx *ctx, int err, const char *op, const char *file, int line) {
    if (err == 0 && ctx->sync_debug) err = (int)cudaStreamSynchronize(ctx->stream);
    if (err != 0) return gpudl__cuda_fail(ctx, (cudaError_t)err, op, file, line);
    return GPUDL_OK;
}
#define GPUDL__LAUNCH(ctx, call) do { gpudl_status gpudl__l_ = gpudl__launched((ctx), \
        GPUDL__FAULT(1) ? (int)cudaErrorLaunchOutOfResources : (call), #call, __FILE__, __LINE__); \
    if (gpudl__l_ != GPUDL_OK) return gpudl__l_; } while (0)

#endif

/* >>half ------------------------------------------------------------------ */
/* Stores v as element i of an array of dtype dt (host side; loads: gpudl__elem_get). */
static void gpudl__elem_set(void *p, gpudl_dtype dt, int64_t i, float v) {
    switch (dt) {
    case GPUDL_F32:  ((float *)p)[i] = v; break;
    case GPUDL_F16:  ((uint16_t *)p)[i] = gpudl_f32_to_f16(v); break;
    case GPUDL_BF16: ((uint16_t *)p)[i] = gpudl_f32_to_bf16(v); break;
    case GPUDL_U8:   ((uint8_t *)p)[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5f); break;   /* NaN: 0 */
    case GPUDL_I32:  ((int32_t *)p)[i] = !(v == v) ? 0 : v >= 2147483648.0f ? INT32_MAX : v <= -2147483648.0f ? INT32_MIN
                                         : (int32_t)v; break;   /* toward zero, saturating, NaN: 0 */
    default: break;
    }
}

/* Bulk FP16/BF16 <-> FP32 on the host, for the CPU backend's 16-bit
   storage. The same bits as gpudl_f32_to_f16 and friends (every FP32 and
   FP16 pattern was compared; the tests compare a dense sample), written as
   selects instead of branches so that the loops vectorise: 3.7 -> 0.4 ns
   per FP16 rounding. The FP16 subnormal case lets the FPU round (x + 0.5f
   is exact to the FP16 subnormal step, with or without flush-to-zero), so
   it needs float arithmetic done in float (FLT_EVAL_METHOD 0); elsewhere
   the scalar functions run. */
/* mask ? a : b with integer operations (a select with a float operation in
   one arm is a branch to gcc, which will not speculate a float op that may trap) */
static inline uint32_t gpudl__sel(uint32_t mask, uint32_t a, uint32_t b) { return (a & mask) | (b & ~mask); }
#define GPUDL__MASK(cond) ((uint32_t)-(int32_t)(cond))
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
static inline uint16_t gpudl__to_f16_sel(float f) {
    uint32_t x = gpudl__f32_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu, h;
    uint32_t nrm = (ax + 0xc8000fffu + ((ax >> 13) & 1u)) >> 13;              /* rebias 127 -> 15, round to even */
    uint32_t sub = gpudl__f32_bits(gpudl__bits_f32(ax) + 0.5f) - 0x3f000000u; /* below 2^-14: multiples of 2^-24 */
    h = gpudl__sel(GPUDL__MASK(ax < 0x38800000u), sub, nrm);
    h = gpudl__sel(GPUDL__MASK(ax >= 0x47800000u), 0x7c00u, h);              /* >= 65536 (65520 carries above) */
    h = gpudl__sel(GPUDL__MASK(ax > 0x7f800000u), 0x7e00u | ((ax >> 13) & 0x3ffu), h);   /* NaN, kept quiet */
    return (uint16_t)(sign | h);
}
static inline float gpudl__from_f16_sel(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu, o = em << 13, r;
    float sub = gpudl__bits_f32(o + 0x38800000u) - gpudl__bits_f32(0x38800000u);   /* subnormal: exact */
    r = gpudl__sel(GPUDL__MASK(em < 0x400u), gpudl__f32_bits(sub), o + 0x38000000u);   /* rebias 15 -> 127 */
    r = gpudl__sel(GPUDL__MASK(em >= 0x7c00u), o + 0x70000000u, r);                 /* Inf, NaN */
    return gpudl__bits_f32(sign | r);
}
#else
#  define gpudl__to_f16_sel gpudl_f32_to_f16
#  define gpudl__from_f16_sel gpudl_f16_to_f32
#endif
static inline uint16_t gpudl__to_bf16_sel(float f) {
    uint32_t x = gpudl__f32_bits(f);
    uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16, q = (x >> 16) | 0x40u;
    return (uint16_t)gpudl__sel(GPUDL__MASK((x & 0x7fffffffu) > 0x7f800000u), q, r);   /* NaN kept quiet */
}

/* d[i] = the FP16 (bf16 = 0) or BF16 value s[i] as FP32, for a short run
   and without an OpenMP region: what the GEMM's packing calls per panel,
   inside its own threads (issue 38: 16-bit operands are widened where they
   are packed, not copied whole first). With F16C (AVX2, AVX-512) the
   hardware converts, and a signalling NaN, which it makes quiet, gets its
   quiet bit cleared again: the bits of gpudl_f16_to_f32 for every FP16. */
static void gpudl__widen_run_base(float *d, const uint16_t *s, int64_t n, int bf16) {
    int64_t i;
    if (bf16) { GPUDL__SIMD for (i = 0; i < n; i++) d[i] = gpudl_bf16_to_f32(s[i]); }
    else { GPUDL__SIMD for (i = 0; i < n; i++) d[i] = gpudl__from_f16_sel(s[i]); }
}
/* d[i] = s[i] rounded to FP16 (to nearest even), n short: the hardware's
   conversion where the CPU has one. It gives the bits gpudl_f32_to_f16
   gives for every FP32 value, NaNs included (Intel's SDM, VCVTPS2PH: tiny
   results are FP16 subnormals whatever MXCSR.FTZ says; FP32 subnormals
   round to zero either way, so DAZ changes nothing). */
static void gpudl__narrow_run_base(uint16_t *d, const float *s, int64_t n) {
    int64_t i;
    GPUDL__SIMD for (i = 0; i < n; i++) d[i] = gpudl__to_f16_sel(s[i]);
}
#ifdef GPUDL__HAVE_MULTI_ISA
GPUDL__ISA_AVX2 static void gpudl__widen_run_avx2(float *d, const uint16_t *s, int64_t n, int bf16) {
    int64_t i = 0;
    if (bf16) {
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(d + i, _mm256_castsi256_ps(_mm256_slli_epi32(
                _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(s + i))), 16)));
        for (; i < n; i++) d[i] = gpudl_bf16_to_f32(s[i]);
    } else {
        for (; i + 8 <= n; i += 8) {
            __m128i h = _mm_loadu_si128((const __m128i *)(s + i));
            __m256i w = _mm256_cvtepu16_epi32(h);   /* signalling NaNs: exponent all ones, quiet bit 0, payload not 0 */
            __m256i snan = _mm256_andnot_si256(
                _mm256_cmpeq_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x1ff)), _mm256_setzero_si256()),
                _mm256_cmpeq_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x7e00)), _mm256_set1_epi32(0x7c00)));
            _mm256_storeu_ps(d + i, _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_and_si256(snan, _mm256_set1_epi32(0x400000))),
                                                     _mm256_cvtph_ps(h)));
        }
        for (; i < n; i++) d[i] = gpudl_f16_to_f32(s[i]);
    }
}
GPUDL__ISA_AVX512 static void gpudl__widen_run_avx512(float *d, const uint16_t *s, int64_t n, int bf16) {
    int64_t i;
    for (i = 0; i < n; i += 16) {
        __mmask16 k = (__mmask16)(n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1u);
        __m256i h = _mm256_maskz_loadu_epi16(k, s + i);
        __m512i w = _mm512_maskz_cvtepu16_epi32(k, h);   /* (the maskz forms: g++ 12's plain ones read an undefined vector) */
        __m512 v;
        if (bf16) v = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(k, w, 16));
        else {   /* signalling NaNs: exponent all ones, quiet bit 0, payload not 0 */
            __mmask16 snan = _mm512_cmpeq_epi32_mask(_mm512_and_si512(w, _mm512_set1_epi32(0x7e00)), _mm512_set1_epi32(0x7c00)) &
                             _mm512_test_epi32_mask(w, _mm512_set1_epi32(0x1ff));
            v = _mm512_maskz_cvtph_ps(k, h);
            v = _mm512_castsi512_ps(_mm512_mask_andnot_epi32(_mm512_castps_si512(v), snan, _mm512_set1_epi32(0x400000),
                                                             _mm512_castps_si512(v)));
        }
        _mm512_mask_storeu_ps(d + i, k, v);
    }
}
GPUDL__ISA_AVX2 static void gpudl__narrow_run_avx2(uint16_t *d, const float *s, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) d[i] = (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(s[i]), _MM_FROUND_TO_NEAREST_INT), 0);
}
GPUDL__ISA_AVX512 static void gpudl__narrow_run_avx512(uint16_t *d, const float *s, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i += 16) {
        __mmask16 k = (__mmask16)(n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1u);
        _mm256_mask_storeu_epi16(d + i, k, _mm512_maskz_cvtps_ph(k, _mm512_maskz_loadu_ps(k, s + i), _MM_FROUND_TO_NEAREST_INT));
    }
}
#endif
static void gpudl__widen_run(float *d, const uint16_t *s, int64_t n, int bf16) {
#ifdef GPUDL__HAVE_MULTI_ISA
    int isa = gpudl__cpu_isa();
    if (isa >= 3) { gpudl__widen_run_avx512(d, s, n, bf16); return; }
    if (isa == 2) { gpudl__widen_run_avx2(d, s, n, bf16); return; }
#endif
    gpudl__widen_run_base(d, s, n, bf16);
}
static void gpudl__narrow_run(uint16_t *d, const float *s, int64_t n) {
#ifdef GPUDL__HAVE_MULTI_ISA
    int isa = gpudl__cpu_isa();
    if (isa >= 3) { gpudl__narrow_run_avx512(d, s, n); return; }
    if (isa == 2) { gpudl__narrow_run_avx2(d, s, n); return; }
#endif
    gpudl__narrow_run_base(d, s, n);
}

/* dst[i] = src[i] for n elements of two float dtypes. */
/* (the branch-free conversions vectorise: GPUDL__MULTI_ISA runs them 8 or 16 wide where the CPU can) */
GPUDL__MULTI_ISA(gpudl__convert, (void *dst, gpudl_dtype dd, const void *src, gpudl_dtype sd, int64_t n), (dst, dd, src, sd, n),
    const float *fs = (const float *)src;
    const uint16_t *hs = (const uint16_t *)src;
    float *fd = (float *)dst;
    uint16_t *hd = (uint16_t *)dst;
    int64_t i;
    if (dd == sd) memmove(dst, src, (size_t)n * gpudl_dtype_size(dd));
    else if (sd == GPUDL_F32 && dd == GPUDL_F16) {   /* (the hardware's rounding where the CPU has one: gpudl__narrow_run) */
        GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (n > 65536))
        for (i = 0; i < n; i += 4096) gpudl__narrow_run(hd + i, fs + i, GPUDL__MIN((int64_t)4096, n - i));
    }
    else if (sd == GPUDL_F32 && dd == GPUDL_BF16) GPUDL__EACH(i, n, n > 65536, hd[i] = gpudl__to_bf16_sel(fs[i]));
    else if (sd == GPUDL_F16 && dd == GPUDL_F32) {   /* (the hardware's where the CPU has it: gpudl__widen_run) */
        GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (n > 65536))
        for (i = 0; i < n; i += 4096) gpudl__widen_run(fd + i, hs + i, GPUDL__MIN((int64_t)4096, n - i), 0);
    }
    else if (sd == GPUDL_BF16 && dd == GPUDL_F32) GPUDL__EACH(i, n, n > 65536, fd[i] = gpudl_bf16_to_f32(hs[i]));
    else {
        GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (n > 65536))
        for (i = 0; i < n; i++) gpudl__elem_set(dst, dd, i, gpudl__elem_get(src, (int)sd, i));
    })

/* >>context --------------------------------------------------------------- */
#ifndef GPUDL_NO_CUDA
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
                              "gpudl_kernels.cu has no code for %s (sm_%d%d): it was built for %s. %s "
                              "-gencode arch=compute_%d%d,code=sm_%d%d (%s)", p.name, p.major, p.minor, gpudl_k_archs(),
                              p.major * 10 + p.minor < 75 && CUDART_VERSION >= 13000 ? "CUDA 13 cannot build for it "
                              "(it dropped architectures before 7.5): build with CUDA 12 and" : "Rebuild it with nvcc",
                              p.major, p.minor, p.major, p.minor, cudaGetErrorName(e));
        return gpudl__cuda_fail(ctx, e, "probe kernel launch", __FILE__, __LINE__);
    }
    GPUDL__CUBLAS(ctx, cublasCreate(&ctx->cublas));
    GPUDL__CUBLAS(ctx, cublasSetStream(ctx->cublas, ctx->stream));
    ctx->workspace_bytes = d->workspace_bytes;
    GPUDL__CUDA(ctx, cudaMalloc(&ctx->workspace, ctx->workspace_bytes));
    GPUDL__CUBLAS(ctx, cublasSetWorkspace(ctx->cublas, ctx->workspace, ctx->workspace_bytes));
    {   /* the kernels size their grids by the SM count */
        int sms = 0;
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->cuda_device) == cudaSuccess && sms > 0)
            gpudl_k_set_sm_count(ctx->cuda_device, sms);
        else
            (void)cudaGetLastError();
    }
    ctx->scratch_floats = (size_t)gpudl_k_reduce_scratch();
    GPUDL__CUDA(ctx, cudaMalloc((void **)&ctx->scratch, ctx->scratch_floats * sizeof(float)));
    /* zeroed on the context's stream: a plain cudaMemset goes to the legacy stream, which a non-blocking
       stream does not wait for (Runtime API, cudaMemset: asynchronous for device memory; the emulated
       device runs it only when that stream is waited for, and the grader's training child read -1) */
    GPUDL__CUDA(ctx, cudaMalloc((void **)&ctx->tickets, 16 * sizeof(unsigned)));
    GPUDL__CUDA(ctx, cudaMemsetAsync(ctx->tickets, 0, 16 * sizeof(unsigned), ctx->stream));
    GPUDL__CUDA(ctx, cudaHostAlloc((void **)&ctx->report, 2 * sizeof(int32_t), cudaHostAllocMapped));
    GPUDL__CUDA(ctx, cudaMalloc((void **)&ctx->bad_input, 2 * sizeof(int32_t)));
    GPUDL__CUDA(ctx, cudaMemsetAsync(ctx->bad_input, 0, 2 * sizeof(int32_t), ctx->stream));
    ctx->report[0] = INT32_MAX;
    ctx->report[1] = 0;
    ctx->use_lt = d->cublaslt == 1;
    return GPUDL_OK;
}

static void gpudl__conv_cache_free(gpudl_ctx *ctx);
static void gpudl__lt_free(gpudl_ctx *ctx);

static void gpudl__cuda_release(gpudl_ctx *ctx) {
    if (ctx->device != GPUDL_DEVICE_CUDA) return;
    (void)cudaSetDevice(ctx->cuda_device);   /* the handles and the stream belong to it */
    if (ctx->stream && ctx->fatal == GPUDL_OK) (void)cudaStreamSynchronize(ctx->stream);
    if (ctx->cublas) cublasDestroy(ctx->cublas);
    if (ctx->workspace) cudaFree(ctx->workspace);
    if (ctx->scratch) cudaFree(ctx->scratch);
    if (ctx->tickets) cudaFree(ctx->tickets);
    if (ctx->report) cudaFreeHost(ctx->report);
    if (ctx->bad_input) cudaFree(ctx->bad_input);
    if (ctx->dev_ws) cudaFree(ctx->dev_ws);
    gpudl__conv_cache_free(ctx);
    gpudl__lt_free(ctx);
    if (ctx->cudnn) cudnnDestroy(ctx->cudnn);
    if (ctx->own_stream && ctx->stream) cudaStreamDestroy(ctx->stream);
}
#endif /* !GPUDL_NO_CUDA */

/* desc with every zero replaced by its default (the doc of gpudl_ctx_desc). */
static gpudl_ctx_desc gpudl__ctx_desc_defaults(const gpudl_ctx_desc *desc) {
    gpudl_ctx_desc d;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (d.math_mode == GPUDL_MATH_DEFAULT) d.math_mode = GPUDL_MATH_FP32;
    if (!d.seed) d.seed = 0x5EEDu;
    if (d.num_threads < 0) d.num_threads = 0;
    if (!d.workspace_bytes) d.workspace_bytes = (size_t)32 << 20;
    if (d.cublaslt != -1) d.cublaslt = 1;   /* on by default: the linear section says why */
    if (!d.log) d.log = gpudl__log_default;
    return d;
}

static int gpudl__pick_kc(void);
static int gpudl__num_threads_max(const gpudl_ctx *ctx);
static int gpudl__num_threads(const gpudl_ctx *ctx);
static void gpudl__bind_threads(int nthreads);

GPUDL__DEF gpudl_status gpudl_ctx_create(const gpudl_ctx_desc *desc, gpudl_ctx **out) {
    gpudl_ctx_desc d;
    gpudl_ctx *ctx;
    if (!out) return GPUDL_ERR_INVALID_ARG;
    *out = NULL;
    d = gpudl__ctx_desc_defaults(desc);
    if (d.device != GPUDL_DEVICE_AUTO && d.device != GPUDL_DEVICE_CPU && d.device != GPUDL_DEVICE_CUDA) {
        if (d.log) d.log(d.log_user, GPUDL_LOG_ERROR, "gpudl_ctx_create: desc->device must be GPUDL_DEVICE_AUTO, _CPU or _CUDA");
        return GPUDL_ERR_INVALID_ARG;
    }
    if (d.math_mode != GPUDL_MATH_FP32 && d.math_mode != GPUDL_MATH_TF32) {
        if (d.log) d.log(d.log_user, GPUDL_LOG_ERROR, "gpudl_ctx_create: desc->math_mode must be 0, GPUDL_MATH_FP32 or GPUDL_MATH_TF32");
        return GPUDL_ERR_INVALID_ARG;
    }
    if ((int)d.cpu_gemm < GPUDL_CPU_GEMM_AUTO || (int)d.cpu_gemm > GPUDL_CPU_GEMM_NEON) {
        if (d.log) d.log(d.log_user, GPUDL_LOG_ERROR, "gpudl_ctx_create: desc->cpu_gemm must be a gpudl_cpu_gemm value");
        return GPUDL_ERR_INVALID_ARG;
    }
    ctx = (gpudl_ctx *)GPUDL_MALLOC(sizeof *ctx);
    if (!ctx) return GPUDL_ERR_OOM;
    memset(ctx, 0, sizeof *ctx);
    ctx->math_mode = d.math_mode;
    ctx->rng_seed = d.seed;
    ctx->num_threads = d.num_threads;
    ctx->share_cpu = d.share_cpu;
    ctx->sync_debug = d.sync_debug;
    ctx->cpu_gemm = d.cpu_gemm;
    ctx->cpu_kc = gpudl__pick_kc();
    if (d.bind_threads == 1) gpudl__bind_threads(gpudl__num_threads_max(ctx));   /* only when asked: a guest changes no affinity */
    (void)gpudl__num_threads(ctx);   /* the first window of the CPU sharing (gpudl__share_poll) opens now */
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
            gpudl__log(ctx, GPUDL_LOG_INFO, "using the CPU: %s", gpudl__message(ctx));
            {   /* keep only what a CPU context needs */
                gpudl_ctx keep = *ctx;
                memset(ctx, 0, sizeof *ctx);
                ctx->math_mode = keep.math_mode; ctx->rng_seed = keep.rng_seed; ctx->num_threads = keep.num_threads; ctx->share_cpu = keep.share_cpu;
                ctx->sync_debug = keep.sync_debug; ctx->log = keep.log; ctx->log_user = keep.log_user;
                ctx->cpu_gemm = keep.cpu_gemm;
                ctx->device = GPUDL_DEVICE_CPU;
            }
        }
    }
#endif
    *out = ctx;
    return GPUDL_OK;
}

static void gpudl__leak_report(gpudl_ctx *ctx);

GPUDL__DEF void gpudl_ctx_destroy(gpudl_ctx *ctx) {
    size_t i;
    if (!ctx) return;
    if (ctx->live_n || ctx->models) gpudl__leak_report(ctx);
    while (ctx->models) gpudl_model_destroy(ctx->models);   /* reported above; what a model holds goes with it */
    for (i = 0; i < sizeof ctx->dead / sizeof ctx->dead[0]; i++) GPUDL_FREE(ctx->dead[i]);
    GPUDL_FREE(ctx->live);
#ifndef GPUDL_NO_CUDA
    gpudl__cuda_release(ctx);
#endif
    GPUDL_FREE(ctx->host_ws);
    GPUDL_FREE(ctx->wide_mem);
    GPUDL_FREE(ctx);
}

GPUDL__DEF gpudl_device gpudl_ctx_device(const gpudl_ctx *ctx) { return ctx ? ctx->device : GPUDL_DEVICE_CPU; }

#ifndef GPUDL_NO_CUDA
/* Waits for the context's stream, then reports what kernels found on the
   way (a label or an embedding id out of range: the CPU refuses it at once;
   the GPU, which does not stop to look, says so at the next wait). */
static int64_t gpudl__take_back_skipped(gpudl_ctx *ctx);   /* (model section) */
static void gpudl__bad_batch_seen(gpudl_ctx *ctx);
/* A label or an id out of range is found on the GPU without a wait: the
   loss (the embedding) writes NaN and sets ctx->bad_input, the next model
   update skips (gpudl_k_optim_step), and the wait after says so here. */
static gpudl_status gpudl__cuda_wait(gpudl_ctx *ctx) {
    int64_t skipped;
    GPUDL__CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    skipped = gpudl__take_back_skipped(ctx);
    if (ctx->report && ctx->report[0] != INT32_MAX) {
        int32_t row = ctx->report[0];
        const char *then = skipped ? "; the model update queued after it was skipped: weights, optimizer state, loss "
                                     "scaler and step count are as before it" : "";
        gpudl_status e;
        ctx->report[0] = INT32_MAX;
        if (ctx->report[1] < 0)   /* the embedding's kernel reports -V */
            e = GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "embedding: the id at position %d (b*T + t) was outside [0, %d) "
                           "(found on the GPU, which reports it at the next wait; that row of y is NaN)%s", (int)row,
                           (int)-ctx->report[1], then);
        else
            e = GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "softmax_xent: the label of row %d was outside [0, %d) (found on "
                           "the GPU, which reports it at the next wait; that loss is NaN)%s", (int)row, (int)ctx->report[1],
                           then);
        gpudl__bad_batch_seen(ctx);
        return e;
    }
    return GPUDL_OK;
}
#endif

GPUDL__DEF gpudl_status gpudl_ctx_sync(gpudl_ctx *ctx) {
    GPUDL__ENTER(ctx);
#ifndef GPUDL_NO_CUDA
    if (ctx->device == GPUDL_DEVICE_CUDA) return gpudl__cuda_wait(ctx);
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

static int gpudl__num_threads_max(const gpudl_ctx *ctx);

GPUDL__DEF gpudl_status gpudl_cpu_flush_denormals(gpudl_ctx *ctx, int on) {
    GPUDL__ENTER(ctx);
#if defined(GPUDL__MXCSR)
    {
        const unsigned bits = 0x8040u;   /* MXCSR: FTZ (bit 15) | DAZ (bit 6) */
        unsigned m;
        GPUDL__OMP(omp parallel num_threads(gpudl__num_threads_max(ctx)))
        {
            unsigned t = _mm_getcsr();
            _mm_setcsr(on ? (t | bits) : (t & ~bits));
        }
        /* and the calling thread after the region: LLVM's OpenMP gives it
           back the control word it had at the fork, and hands that to the
           workers at every fork (GNU's keeps each thread's own) */
        m = _mm_getcsr();
        _mm_setcsr(on ? (m | bits) : (m & ~bits));
    }
    return GPUDL_OK;
#elif defined(__aarch64__) && defined(__GNUC__)
    {   /* FPCR.FZ (bit 24): subnormal inputs and results are zero (ARMv8 has no separate DAZ) */
        uint64_t fpcr;
        GPUDL__OMP(omp parallel num_threads(gpudl__num_threads_max(ctx)))
        {
            uint64_t t;
            __asm__ __volatile__("mrs %0, fpcr" : "=r"(t));
            t = on ? (t | ((uint64_t)1 << 24)) : (t & ~((uint64_t)1 << 24));
            __asm__ __volatile__("msr fpcr, %0" : : "r"(t));
        }
        __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));   /* the calling thread after the region, as above */
        fpcr = on ? (fpcr | ((uint64_t)1 << 24)) : (fpcr & ~((uint64_t)1 << 24));
        __asm__ __volatile__("msr fpcr, %0" : : "r"(fpcr));
    }
    return GPUDL_OK;
#else
    (void)on;
    return GPUDL__ERR(ctx, GPUDL_ERR_UNSUPPORTED, "cpu_flush_denormals: no flush-to-zero mode known for this CPU");
#endif
}

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
    info->sm_count = gpudl__num_threads_max(ctx);
    return GPUDL_OK;
}

/* >>tensor ---------------------------------------------------------------- */
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
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "invalid dtype %d", (int)dtype);
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
static int gpudl__live_has(const gpudl_ctx *ctx, const void *p);
/* A usable tensor. A device tensor must also be one of this context's
   allocations (one look-up in its registry): a copy of the struct kept
   after gpudl_tensor_free, or another context's device memory (its work
   queued on another stream, maybe another GPU), is refused by name before
   any launch; gpudl_tensor_copy alone takes another context's device
   tensor (foreign = 1), the way to move data between contexts. Host
   tensors are plain memory any context may read. */
static gpudl_status gpudl__check_tensor_from(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name, int foreign) {
    int64_t n;
    if (!t) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "tensor '%s' is NULL", name);
    if (!t->data) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "tensor '%s' has no data (not created, or freed)", name);
    if (t->device != GPUDL_DEVICE_CPU && t->device != GPUDL_DEVICE_CUDA)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "tensor '%s' has invalid device %d", name, (int)t->device);
    if (!foreign && t->owner == 1 && t->device == GPUDL_DEVICE_CUDA && !gpudl__live_has(ctx, t->data))
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "device tensor '%s' (%p) is not one of context %p's allocations: "
                          "created by another context (use it with that one, or gpudl_tensor_copy it into this one "
                          "after gpudl_ctx_sync of the other), or freed already (a copy of the struct taken before "
                          "gpudl_tensor_free?)", name, t->data, (void *)ctx);
    return gpudl__check_shape(ctx, t->dtype, t->ndim, t->shape, &n);
}
static gpudl_status gpudl__check_tensor(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name) {
    return gpudl__check_tensor_from(ctx, t, name, 0);
}

static int gpudl__is_float(gpudl_dtype d) { return d == GPUDL_F32 || d == GPUDL_F16 || d == GPUDL_BF16; }

/* Two tensors: same device, dtype and shape. */
static gpudl_status gpudl__check_same(gpudl_ctx *ctx, const gpudl_tensor *a, const char *an,
                                      const gpudl_tensor *b, const char *bn) {
    char sa[96], sb[96];
    int i, same = a->ndim == b->ndim;
    for (i = 0; same && i < a->ndim; i++) same = a->shape[i] == b->shape[i];
    if (a->device != b->device)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "%s is %s but %s is %s: operands must be on one device",
                          an, gpudl_tensor_describe(a, sa, sizeof sa), bn, gpudl_tensor_describe(b, sb, sizeof sb));
    if (a->dtype != b->dtype)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "%s is %s but %s is %s: dtypes must match",
                          an, gpudl_tensor_describe(a, sa, sizeof sa), bn, gpudl_tensor_describe(b, sb, sizeof sb));
    if (!same)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "%s is %s but %s is %s: shapes must match",
                          an, gpudl_tensor_describe(a, sa, sizeof sa), bn, gpudl_tensor_describe(b, sb, sizeof sb));
    return GPUDL_OK;
}

/* The allocations the context made, so that freeing something it does not
   own (a second free through a copy of a tensor struct, a tensor of another
   context) is reported instead of corrupting the heap. */
#define GPUDL__TOMB ((void *)1)

static size_t gpudl__hash(const void *p) {
    uint64_t h = gpudl__mix64((uint64_t)(uintptr_t)p);
    return (size_t)h;
}

static int gpudl__live_grow(gpudl_ctx *ctx) {
    size_t cap = ctx->live_cap ? 2 * ctx->live_cap : 64, i;
    void **n = (void **)GPUDL_MALLOC(sizeof(void *) * cap);
    if (!n) return 0;
    memset(n, 0, sizeof(void *) * cap);
    for (i = 0; i < ctx->live_cap; i++) {
        void *p = ctx->live[i];
        if (p && p != GPUDL__TOMB) {
            size_t k = gpudl__hash(p) & (cap - 1);
            while (n[k]) k = (k + 1) & (cap - 1);
            n[k] = p;
        }
    }
    GPUDL_FREE(ctx->live);
    ctx->live = n;
    ctx->live_cap = cap;
    ctx->live_used = ctx->live_n;
    return 1;
}

static int gpudl__live_add(gpudl_ctx *ctx, void *p) {
    size_t k;
    if ((ctx->live_used + 1) * 2 > ctx->live_cap && !gpudl__live_grow(ctx)) return 0;
    k = gpudl__hash(p) & (ctx->live_cap - 1);
    while (ctx->live[k] && ctx->live[k] != GPUDL__TOMB) k = (k + 1) & (ctx->live_cap - 1);
    if (!ctx->live[k]) ctx->live_used++;
    ctx->live[k] = p;
    ctx->live_n++;
    return 1;
}

static int gpudl__live_remove(gpudl_ctx *ctx, void *p) {
    size_t k, probes;
    if (!ctx->live_cap) return 0;
    k = gpudl__hash(p) & (ctx->live_cap - 1);
    for (probes = 0; ctx->live[k] && probes < ctx->live_cap; probes++, k = (k + 1) & (ctx->live_cap - 1))
        if (ctx->live[k] == p) { ctx->live[k] = GPUDL__TOMB; ctx->live_n--; return 1; }
    return 0;
}

static int gpudl__live_has(const gpudl_ctx *ctx, const void *p) {
    size_t k, probes;
    if (!ctx->live_cap || !p) return 0;
    k = gpudl__hash(p) & (ctx->live_cap - 1);
    for (probes = 0; ctx->live[k] && probes < ctx->live_cap; probes++, k = (k + 1) & (ctx->live_cap - 1))
        if (ctx->live[k] == p) return 1;
    return 0;
}

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
    return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "cannot allocate on %s: this context runs on %s",
                      gpudl__device_name(dev), gpudl__device_name(ctx->device));
}

static void gpudl__dealloc(gpudl_device dev, void *p) {
    if (!p) return;
    if (dev == GPUDL_DEVICE_CPU) { GPUDL_FREE(p); return; }
#ifndef GPUDL_NO_CUDA
    if (dev == GPUDL_DEVICE_CUDA) (void)cudaFree(p);
#endif
}

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
    if (!gpudl__live_add(ctx, t->data)) {
        gpudl__dealloc(device, t->data);
        t->data = NULL;
        return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "tensor_create: no host memory for the allocation registry");
    }
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
    if (!t) return;
    if (t->owner == 1 && t->data) {
        if (!ctx) {
            memset(t, 0, sizeof *t);   /* without its context the memory cannot be checked: leak rather than risk it */
            return;
        }
        if (!gpudl__live_remove(ctx, t->data)) {
            char d[96];
            GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "tensor_free: %s at %p was not allocated by this context or was "
                       "already freed (a double free through a copy of the struct?); not freed again",
                       gpudl_tensor_describe(t, d, sizeof d), t->data);
        } else {
            gpudl__dealloc(t->device, t->data);
        }
    }
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
static gpudl_status gpudl__check_on_from(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name, int foreign) {
    GPUDL__TRY(gpudl__check_tensor_from(ctx, t, name, foreign));
    if (t->device == GPUDL_DEVICE_CUDA && ctx->device != GPUDL_DEVICE_CUDA)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "tensor '%s' is on cuda but this context runs on the cpu", name);
    return GPUDL_OK;
}
static gpudl_status gpudl__check_on(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name) {
    return gpudl__check_on_from(ctx, t, name, 0);
}

static gpudl_status gpudl__check_float(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name) {
    if (!gpudl__is_float(t->dtype))
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "tensor '%s' is %s; this op takes f32, f16 or bf16",
                          name, gpudl_dtype_name(t->dtype));
    return GPUDL_OK;
}

/* The F32 element-wise loops of fill, add/mul and axpby, for this CPU's
   instruction set (the other dtypes take the generic per-element path). */
GPUDL__MULTI_ISA(gpudl__fill_f32, (float *y, float v, int64_t n), (y, v, n),
    int64_t i;
    GPUDL__EACH(i, n, n > 65536, y[i] = v);)
GPUDL__MULTI_ISA(gpudl__binary_f32, (int op, float *o, const float *a, const float *b, int64_t n), (op, o, a, b, n),
    int64_t i;
    if (op == 0) GPUDL__EACH(i, n, n > 65536, o[i] = a[i] + b[i]);
    else GPUDL__EACH(i, n, n > 65536, o[i] = a[i] * b[i]);)
GPUDL__MULTI_ISA(gpudl__axpby_f32, (float *y, float alpha, const float *x, float beta, int64_t n), (y, alpha, x, beta, n),
    int64_t i;
    if (beta == 0.0f) GPUDL__EACH(i, n, n > 65536, y[i] = alpha * x[i] + 0.0f);   /* y's old value unread (a NaN there stays out) */
    else GPUDL__EACH(i, n, n > 65536, y[i] = alpha * x[i] + beta * y[i]);)

GPUDL__DEF gpudl_status gpudl_tensor_fill(gpudl_ctx *ctx, gpudl_tensor *t, float value) {
    int64_t i, n;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, t, "t"));
    n = gpudl_tensor_numel(t);
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(t)) {
        if (t->dtype == GPUDL_U8 || t->dtype == GPUDL_I32) {   /* the element converted as on the CPU, then copied out */
            uint8_t u8 = 0;
            int32_t i32 = 0;
            gpudl__elem_set(t->dtype == GPUDL_U8 ? (void *)&u8 : (void *)&i32, t->dtype, 0, value);
            if (t->dtype == GPUDL_U8) GPUDL__CUDA(ctx, cudaMemsetAsync(t->data, u8, (size_t)n, ctx->stream));
            else GPUDL__LAUNCH(ctx, gpudl_k_fill_u32(ctx->stream, (uint32_t *)t->data, n, (uint32_t)i32));
            return GPUDL_OK;
        }
        GPUDL__LAUNCH(ctx, gpudl_k_fill(ctx->stream, t->data, (int)t->dtype, n, value));
        return GPUDL_OK;
    }
#endif
    if (t->dtype == GPUDL_F32) {
        gpudl__fill_f32((float *)t->data, value, n);
        return GPUDL_OK;
    }
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (n > 65536))
    for (i = 0; i < n; i++) gpudl__elem_set(t->data, t->dtype, i, value);
    return GPUDL_OK;
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
        if (kind != cudaMemcpyDeviceToDevice) return gpudl__cuda_wait(ctx);
        return GPUDL_OK;
    }
#else
    return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "device copy in a CPU-only build");
#endif
}

GPUDL__DEF gpudl_status gpudl_tensor_copy(gpudl_ctx *ctx, gpudl_tensor *dst, const gpudl_tensor *src) {
    char sa[96], sb[96];
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on_from(ctx, dst, "dst", 1));   /* another context's device tensor too: after its sync */
    GPUDL__TRY(gpudl__check_on_from(ctx, src, "src", 1));
    if (dst->dtype != src->dtype || gpudl_tensor_numel(dst) != gpudl_tensor_numel(src))
        return GPUDL__ERR(ctx, dst->dtype != src->dtype ? GPUDL_ERR_INVALID_ARG : GPUDL_ERR_SHAPE,
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
    int64_t n;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_on(ctx, dst, "dst"));
    GPUDL__TRY(gpudl__check_on(ctx, src, "src"));
    GPUDL__TRY(gpudl__check_float(ctx, dst, "dst"));
    GPUDL__TRY(gpudl__check_float(ctx, src, "src"));
    n = gpudl_tensor_numel(src);
    if (dst->device != src->device || gpudl_tensor_numel(dst) != n)
        return GPUDL__ERR(ctx, dst->device != src->device ? GPUDL_ERR_INVALID_ARG : GPUDL_ERR_SHAPE,
                          "cast: dst is %s but src is %s: need one device and the same element count",
                          gpudl_tensor_describe(dst, sa, sizeof sa), gpudl_tensor_describe(src, sb, sizeof sb));
    if (dst->dtype == src->dtype) return gpudl_tensor_copy(ctx, dst, src);
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(src)) {
        GPUDL__LAUNCH(ctx, gpudl_k_cast(ctx->stream, dst->data, (int)dst->dtype, src->data, (int)src->dtype, n));
        return GPUDL_OK;
    }
#endif
    gpudl__convert(dst->data, dst->dtype, src->data, src->dtype, n);
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
    *value = gpudl__elem_get(buf, (int)t->dtype, 0);
    return GPUDL_OK;
}

static gpudl_status gpudl__check_f32(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name) {
    GPUDL__TRY(gpudl__check_on(ctx, t, name));
    if (t->dtype != GPUDL_F32)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "tensor '%s' is %s; this layer takes f32", name, gpudl_dtype_name(t->dtype));
    return GPUDL_OK;
}

/* Activations (x, y, their gradients, logits, predictions) may be f32, f16
   or bf16: t must be one of those (gpudl__check_act), or of dt, the dtype of
   the call's other activations (gpudl__check_dt). */
static gpudl_status gpudl__check_act(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name) {
    GPUDL__TRY(gpudl__check_on(ctx, t, name));
    if (!gpudl__is_float(t->dtype))
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "tensor '%s' is %s; this layer takes f32, f16 or bf16", name,
                          gpudl_dtype_name(t->dtype));
    return GPUDL_OK;
}

static gpudl_status gpudl__check_dt(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name, gpudl_dtype dt) {
    GPUDL__TRY(gpudl__check_on(ctx, t, name));
    if (t->dtype != dt)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "tensor '%s' is %s but this call's activations are %s: activations, "
                          "weights and biases share one dtype", name, gpudl_dtype_name(t->dtype), gpudl_dtype_name(dt));
    return GPUDL_OK;
}

/* 16-bit storage on the CPU: an op runs its f32 code on f32 copies of its
   16-bit operands and rounds each 16-bit output once, as a GPU kernel that
   computes in float and stores 16 bits does. The copies live for one call,
   on a stack the context keeps (ctx->wide_mem): a fresh allocation per
   call cost page faults on every step (28% of an FP16 MLP step). Calls
   nest (an op's copies are released before its caller's), so the stack
   is released in order; a copy it has no room for is allocated apart,
   and the stack grows to the largest need once nothing is on it. */
typedef struct gpudl__wide {
    gpudl_ctx *ctx;
    gpudl_status s;
    int n;
    size_t stacked;          /* bytes this call took from the stack */
    gpudl_tensor tmp[8];
    gpudl_tensor *dst[8];    /* the 16-bit output a tmp is rounded into, or NULL for an input */
    unsigned char apart[8];  /* tmp[i] allocated apart (freed here), not on the stack */
} gpudl__wide;

static gpudl__wide gpudl__wide_of(gpudl_ctx *ctx) {
    gpudl__wide W;
    memset(&W, 0, sizeof W);
    W.ctx = ctx;
    return W;
}

/* The f32 tensor the f32 code uses for t: t itself when it is f32 (or NULL). */
static gpudl_tensor *gpudl__widen(gpudl__wide *W, const gpudl_tensor *t, int is_out) {
    gpudl_ctx *ctx = W->ctx;
    gpudl_tensor *w;
    size_t bytes;
    if (!t || t->dtype == GPUDL_F32 || W->s != GPUDL_OK) return (gpudl_tensor *)t;
    w = &W->tmp[W->n];
    bytes = (sizeof(float) * (size_t)gpudl_tensor_numel(t) + 63) & ~(size_t)63;
    if (bytes && ctx->wide_top + bytes <= ctx->wide_size) {
        W->s = gpudl_tensor_wrap(w, ctx->wide_mem + ctx->wide_top, GPUDL_DEVICE_CPU, GPUDL_F32, t->ndim, t->shape);
        ctx->wide_top += bytes;
        W->stacked += bytes;
        W->apart[W->n] = 0;
    } else {
        ctx->wide_need = GPUDL__MAX(ctx->wide_need, ctx->wide_top + bytes);
        W->s = gpudl_tensor_create_on(ctx, w, GPUDL_DEVICE_CPU, GPUDL_F32, t->ndim, t->shape);
        W->apart[W->n] = 1;
    }
    if (W->s == GPUDL_OK && !is_out) gpudl__convert(w->data, GPUDL_F32, t->data, t->dtype, gpudl_tensor_numel(t));
    W->dst[W->n++] = is_out ? (gpudl_tensor *)t : NULL;
    return w;
}

/* Rounds the outputs into their 16-bit tensors (when s is OK) and frees the copies. */
static gpudl_status gpudl__wide_end(gpudl__wide *W, gpudl_status s) {
    gpudl_ctx *ctx = W->ctx;
    int i;
    for (i = 0; i < W->n; i++) {
        if (s == GPUDL_OK && W->dst[i]) gpudl__convert(W->dst[i]->data, W->dst[i]->dtype, W->tmp[i].data, GPUDL_F32,
                                                       gpudl_tensor_numel(W->dst[i]));
        if (W->apart[i]) gpudl_tensor_free(ctx, &W->tmp[i]);
    }
    ctx->wide_top -= W->stacked;
    if (ctx->wide_top == 0 && ctx->wide_need > ctx->wide_size) {   /* nothing on the stack: room for the largest need */
        GPUDL_FREE(ctx->wide_mem);
        ctx->wide_mem = (char *)GPUDL_MALLOC(ctx->wide_need);
        ctx->wide_size = ctx->wide_mem ? ctx->wide_need : 0;
    }
    return s;
}

/* "what: a is f32[2,3] cpu but b is f32[4] cpu (why)" */
static gpudl_status gpudl__mismatch(gpudl_ctx *ctx, gpudl_status st, const char *what, const char *an,
                                    const gpudl_tensor *a, const char *bn, const gpudl_tensor *b, const char *why) {
    char sa[96], sb[96];
    return GPUDL__ERR(ctx, st, "%s: %s is %s but %s is %s (%s)", what, an, gpudl_tensor_describe(a, sa, sizeof sa), bn,
                      b ? gpudl_tensor_describe(b, sb, sizeof sb) : "NULL", why);
}

/* Both on one device (a mixed call would touch memory the backend cannot reach). */
static gpudl_status gpudl__same_device(gpudl_ctx *ctx, const char *what, const char *an, const gpudl_tensor *a,
                                       const char *bn, const gpudl_tensor *b) {
    if (b && a->device != b->device) return gpudl__mismatch(ctx, GPUDL_ERR_INVALID_ARG, what, an, a, bn, b, "one device for all");
    return GPUDL_OK;
}

static int gpudl__same_shape(const gpudl_tensor *a, const gpudl_tensor *b) {
    int i;
    if (a->ndim != b->ndim) return 0;
    for (i = 0; i < a->ndim; i++) if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

/* A grow-only host workspace owned by the context (not thread-safe: one
   context is driven by one thread at a time). */
static gpudl_status gpudl__host_ws(gpudl_ctx *ctx, size_t bytes, void **p) {
    if (bytes > ctx->host_ws_bytes) {
        void *n = GPUDL_MALLOC(bytes);
        if (!n) return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "host workspace of %zu bytes could not be allocated", bytes);
        GPUDL_FREE(ctx->host_ws);
        ctx->host_ws = n;
        ctx->host_ws_bytes = bytes;
    }
    *p = ctx->host_ws;
    return GPUDL_OK;
}

#ifndef GPUDL_NO_CUDA
/* Device scratch of at least n floats: reduction partials first, then room
   for per-row values. Grows (rarely: at the first bigger batch), never shrinks. */
static gpudl_status gpudl__dev_scratch(gpudl_ctx *ctx, size_t n, float **p) {
    if (n > ctx->scratch_floats) {
        float *f = NULL;
        GPUDL__CUDA(ctx, cudaStreamSynchronize(ctx->stream));
        GPUDL__CUDA(ctx, cudaMalloc((void **)&f, n * sizeof(float)));
        cudaFree(ctx->scratch);
        ctx->scratch = f;
        ctx->scratch_floats = n;
    }
    *p = ctx->scratch;
    return GPUDL_OK;
}

static gpudl_status gpudl__dev_ws(gpudl_ctx *ctx, size_t bytes, void **p) {
    if (bytes > ctx->dev_ws_bytes) {
        void *w = NULL;
        GPUDL__CUDA(ctx, cudaStreamSynchronize(ctx->stream));
        if (ctx->dev_ws) cudaFree(ctx->dev_ws);
        ctx->dev_ws = NULL;
        ctx->dev_ws_bytes = 0;
        GPUDL__CUDA(ctx, cudaMalloc(&w, bytes));
        ctx->dev_ws = w;
        ctx->dev_ws_bytes = bytes;
    }
    *p = ctx->dev_ws;
    return GPUDL_OK;
}
#endif

/* >>rng ------------------------------------------------------------------- */
/* Random fill from an explicit (seed, offset): element i draws counter off + i. */
static gpudl_status gpudl__fill_random(gpudl_ctx *ctx, gpudl_tensor *t, uint64_t seed, uint64_t off, int normal, float a, float b) {
    int64_t i, n;
    GPUDL__TRY(gpudl__check_on(ctx, t, "t"));
    GPUDL__TRY(gpudl__check_float(ctx, t, "t"));
    if (!(a == a) || !(b == b) || (normal && b < 0.0f) || (!normal && b < a))
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, normal ? "normal: std must be >= 0 (got mean %g std %g)"
                          : "uniform: need lo <= hi (got %g, %g)", (double)a, (double)b);
    n = gpudl_tensor_numel(t);
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(t)) {
        GPUDL__LAUNCH(ctx, gpudl_k_random(ctx->stream, t->data, (int)t->dtype, n, seed, off, normal, a, b));
        return GPUDL_OK;
    }
#endif
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (n > 65536))
    for (i = 0; i < n; i++) {
        gpudl__elem_set(t->data, t->dtype, i, gpudl_rng_fill_value(seed, off + (uint64_t)i, normal, a, b));
    }
    return GPUDL_OK;
}

/* From the context's generator, which then moves past the drawn counters. */
static gpudl_status gpudl__random(gpudl_ctx *ctx, gpudl_tensor *t, int normal, float a, float b) {
    uint64_t off;
    GPUDL__ENTER(ctx);
    off = ctx->rng_offset;
    GPUDL__TRY(gpudl__fill_random(ctx, t, ctx->rng_seed, off, normal, a, b));
    ctx->rng_offset = off + (uint64_t)gpudl_tensor_numel(t);
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_tensor_uniform(gpudl_ctx *ctx, gpudl_tensor *t, float lo, float hi) {
    return gpudl__random(ctx, t, 0, lo, hi);
}

GPUDL__DEF gpudl_status gpudl_tensor_normal(gpudl_ctx *ctx, gpudl_tensor *t, float mean, float std) {
    return gpudl__random(ctx, t, 1, mean, std);
}

/* >>matmul ---------------------------------------------------------------- */
/* SGEMM on the CPU: C (M,N) += alpha * op(A) (M,K) @ op(B) (K,N), the GotoBLAS
   way. B is packed into KC x NC panels of NR columns, A into MC x KC panels
   of MR rows (KC: gpudl__pick_kc); a micro-kernel keeps an MR x NR block of
   C in registers while it walks K. Element (i,k) of op(A) is
   A[i*ars + k*acs]; transposes are only other strides. Threads take whole
   blocks of C (gpudl__sgemm_bias). */

#define GPUDL__MC 84      /* multiple of the MRs below (4, 6, 12, 14; the 8-row kernel: small M, a block's last rows) */
#define GPUDL__NC 1024    /* columns of B packed at once per thread (4 MiB at a KC of 1024) */

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

/* AVX-512, 14 x 32: 28 accumulators, 2 B vectors, broadcasts from memory
   (all 32 zmm registers). Against 8 x 32 it loads B once per 28 FMAs instead
   of 16 and stores C half as often: measured 1024^3 on one core 130-140 ->
   145-150 GFLOP/s, two threads 230 -> 255-260 (OpenBLAS: 155 and 310). */
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
    __m512 c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    __m512 c80 = c00, c81 = c00, c90 = c00, c91 = c00, c100 = c00, c101 = c00, c110 = c00, c111 = c00;
    __m512 c120 = c00, c121 = c00, c130 = c00, c131 = c00, b0, b1, av, al;
    float t[32];
    int64_t k;
    int j;
    for (k = 0; k < kc; k++, a += 14, b += 32) {
        b0 = _mm512_loadu_ps(b); b1 = _mm512_loadu_ps(b + 16);
        GPUDL__AVX512_ROW(0) GPUDL__AVX512_ROW(1) GPUDL__AVX512_ROW(2) GPUDL__AVX512_ROW(3) GPUDL__AVX512_ROW(4)
        GPUDL__AVX512_ROW(5) GPUDL__AVX512_ROW(6) GPUDL__AVX512_ROW(7) GPUDL__AVX512_ROW(8) GPUDL__AVX512_ROW(9)
        GPUDL__AVX512_ROW(10) GPUDL__AVX512_ROW(11) GPUDL__AVX512_ROW(12) GPUDL__AVX512_ROW(13)
    }
    al = _mm512_set1_ps(alpha);
    GPUDL__AVX512_OUT(0) GPUDL__AVX512_OUT(1) GPUDL__AVX512_OUT(2) GPUDL__AVX512_OUT(3) GPUDL__AVX512_OUT(4)
    GPUDL__AVX512_OUT(5) GPUDL__AVX512_OUT(6) GPUDL__AVX512_OUT(7) GPUDL__AVX512_OUT(8) GPUDL__AVX512_OUT(9)
    GPUDL__AVX512_OUT(10) GPUDL__AVX512_OUT(11) GPUDL__AVX512_OUT(12) GPUDL__AVX512_OUT(13)
}
/* AVX-512, 8 x 32 (16 accumulators): for products with few rows, where
   14-row panels would compute mostly padding (see gpudl__fit_ukernel). */
__attribute__((target("avx512f")))
static void gpudl__uk_avx512_8(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, float alpha, int m, int n) {
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

#ifdef GPUDL__NEON
/* NEON (aarch64), 12 x 8: 24 accumulators, 2 B vectors, 3 A vectors whose
   lanes feed the FMAs (vfmaq_laneq_f32): 29 of the 32 vector registers.
   Checked against the C kernel under QEMU; its speed is not measured (no
   ARM machine here). */
#define GPUDL__NEON_ROW(r, av, lane) \
    c##r##0 = vfmaq_laneq_f32(c##r##0, b0, av, lane); c##r##1 = vfmaq_laneq_f32(c##r##1, b1, av, lane);
#define GPUDL__NEON_OUT(r) if (r < m) { if (n == 8) { \
        vst1q_f32(c + r * ldc,     vfmaq_f32(vld1q_f32(c + r * ldc), c##r##0, al)); \
        vst1q_f32(c + r * ldc + 4, vfmaq_f32(vld1q_f32(c + r * ldc + 4), c##r##1, al)); \
    } else { vst1q_f32(t, c##r##0); vst1q_f32(t + 4, c##r##1); \
        for (j = 0; j < n; j++) c[r * ldc + j] += alpha * t[j]; } }

static void gpudl__uk_neon(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, float alpha, int m, int n) {
    float32x4_t c00 = vdupq_n_f32(0.0f), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    float32x4_t c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    float32x4_t c80 = c00, c81 = c00, c90 = c00, c91 = c00, c100 = c00, c101 = c00, c110 = c00, c111 = c00;
    float32x4_t a0, a1, a2, b0, b1, al;
    float t[8];
    int64_t k;
    int j;
    for (k = 0; k < kc; k++, a += 12, b += 8) {
        b0 = vld1q_f32(b); b1 = vld1q_f32(b + 4);
        a0 = vld1q_f32(a); a1 = vld1q_f32(a + 4); a2 = vld1q_f32(a + 8);
        GPUDL__NEON_ROW(0, a0, 0) GPUDL__NEON_ROW(1, a0, 1) GPUDL__NEON_ROW(2, a0, 2) GPUDL__NEON_ROW(3, a0, 3)
        GPUDL__NEON_ROW(4, a1, 0) GPUDL__NEON_ROW(5, a1, 1) GPUDL__NEON_ROW(6, a1, 2) GPUDL__NEON_ROW(7, a1, 3)
        GPUDL__NEON_ROW(8, a2, 0) GPUDL__NEON_ROW(9, a2, 1) GPUDL__NEON_ROW(10, a2, 2) GPUDL__NEON_ROW(11, a2, 3)
    }
    al = vdupq_n_f32(alpha);
    GPUDL__NEON_OUT(0) GPUDL__NEON_OUT(1) GPUDL__NEON_OUT(2) GPUDL__NEON_OUT(3) GPUDL__NEON_OUT(4) GPUDL__NEON_OUT(5)
    GPUDL__NEON_OUT(6) GPUDL__NEON_OUT(7) GPUDL__NEON_OUT(8) GPUDL__NEON_OUT(9) GPUDL__NEON_OUT(10) GPUDL__NEON_OUT(11)
}
#endif /* GPUDL__NEON */

/* fn2 (mr2 rows, the same nr), when not NULL: a narrower kernel for the
   last rows of a block (gpudl__split_rows). */
typedef struct gpudl__ukernel { int mr, nr, kc, mr2; gpudl__ukernel_fn fn, fn2; const char *name; } gpudl__ukernel;

/* KC, the depth of a packed block: as deep as half the L2 holds an MC x KC
   block of A, at most 1024, at least 256; 512 where the cache size is
   unknown. The micro-kernel still sums K in segments of at most 256
   (gpudl__sgemm_block), so the bits do not change: a block 1024 deep only
   saves sweeps over C. On this 1 MiB-L2 host: MLP step 3% faster at batch
   128, 1% at 1024, SGEMM 2048^3 188-195 -> 197-200 GFLOP/s. Summing 1024
   in registers was 3% faster still at batch 1024, but a 784-term product's
   worst error grew 1.5x, past the linear layer test's tolerance for 15 of
   40 random inputs. */
static int gpudl__pick_kc(void) {
    long l2 = 0, kc;
#if defined(_SC_LEVEL2_CACHE_SIZE) && !defined(_WIN32)
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    kc = l2 > 0 ? l2 / 2 / (GPUDL__MC * (long)sizeof(float)) / 64 * 64 : 512;
    return (int)GPUDL__MAX(256L, GPUDL__MIN(1024L, kc));
}

/* The instruction set of the CPU loops (GPUDL__MULTI_ISA) and of the GEMM's
   default micro-kernel: 3 AVX-512 (F, VL, BW, DQ), 2 AVX2 with FMA and
   F16C, 0 the build's own; GPUDL_CPU_ISA=baseline or avx2 in the
   environment lowers it (to test the paths a CPU without them takes, with
   the binary built once). Read once per process (process-wide, like the
   CPU itself). */
#ifdef GPUDL__X86_SIMD
static int gpudl__cpu_isa(void) {
    static int isa = -1;
    int v = __atomic_load_n(&isa, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("GPUDL_CPU_ISA");
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512dq") ? 3 :
            __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 2 : 0;   /* (every AVX2 CPU has F16C) */
        if (e && (!strcmp(e, "baseline") || !strcmp(e, "sse2"))) v = 0;
        else if (e && !strcmp(e, "avx2") && v > 2) v = 2;
        __atomic_store_n(&isa, v, __ATOMIC_RELAXED);
    }
    return v;
}
#endif

/* The best micro-kernel this CPU runs (as gpudl__cpu_isa allows), or the one
   desc.cpu_gemm asks for (for tests and comparisons) when the CPU has it. */
static gpudl__ukernel gpudl__pick_ukernel(gpudl_cpu_gemm want, int kc) {
    gpudl__ukernel k = {4, 8, 512, 0, gpudl__uk_c, NULL, "c"};
    k.kc = kc > 0 ? GPUDL__MAX(kc, 256) : 512;   /* at least one segment deep (gpudl__sgemm_block) */
#ifdef GPUDL__X86_SIMD
    __builtin_cpu_init();
    if (want == GPUDL_CPU_GEMM_AUTO && gpudl__cpu_isa() < 3) want = gpudl__cpu_isa() == 2 ? GPUDL_CPU_GEMM_AVX2 : GPUDL_CPU_GEMM_C;
    if ((want == GPUDL_CPU_GEMM_AUTO || want == GPUDL_CPU_GEMM_AVX512) && __builtin_cpu_supports("avx512f")) {
        k.mr = 14; k.nr = 32; k.fn = gpudl__uk_avx512; k.name = "avx512";
        k.mr2 = 8; k.fn2 = gpudl__uk_avx512_8;
    } else if (want != GPUDL_CPU_GEMM_C && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        k.mr = 6; k.nr = 16; k.fn = gpudl__uk_avx2; k.name = "avx2";
    }
#elif defined(GPUDL__NEON)
    if (want != GPUDL_CPU_GEMM_C) { k.mr = 12; k.nr = 8; k.fn = gpudl__uk_neon; k.name = "neon"; }   /* every aarch64 has NEON */
#else
    (void)want;
#endif
    return k;
}

/* For few rows the 14 x 32 kernel computes mostly padding (32 rows: 42
   computed); 8 x 32 is ~12% slower per FMA but pads less. It takes over
   when 14-row panels would pad over 15% more rows: the convolutions' per-
   image products (16 or 32 output channels) run 1.13-1.28x faster. */
static void gpudl__fit_ukernel(gpudl__ukernel *k, int64_t M) {
#ifdef GPUDL__X86_SIMD
    if (k->fn == gpudl__uk_avx512 && 1.15 * (double)((M + 7) / 8 * 8) < (double)((M + 13) / 14 * 14)) {
        k->mr = 8;
        k->fn = gpudl__uk_avx512_8;
        k->mr2 = 0;
        k->fn2 = NULL;
    }
#else
    (void)k; (void)M;
#endif
}

/* dst[k * ld + i] = src[i * rs + k] for i < m <= ld <= 16 and k < kc, zero
   for m <= i < ld: the transpose that packing a row-major A is, in 8 x 8
   blocks of AVX registers instead of element by element. It matters most
   where a product has few columns and packs its whole A for one panel of
   B (a classifier layer at batch 1024: 0.75 -> 0.69 ms). */
#ifdef GPUDL__X86_SIMD
__attribute__((target("avx")))
static int64_t gpudl__pack_t_avx(int m, int64_t kc, const float *src, int64_t rs, float *dst, int ld) {
    static const int32_t ones[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    int64_t k0;
    for (k0 = 0; k0 + 8 <= kc; k0 += 8) {
        int i0;
        for (i0 = 0; i0 < ld; i0 += 8) {   /* rows past m are the zero padding */
            __m256 r[8], t[8], u[8], o[8];
            __m256i mask = _mm256_loadu_si256((const __m256i *)(ones + 8 - GPUDL__MIN(8, ld - i0)));   /* lanes < ld - i0 */
            int j;
            for (j = 0; j < 8; j++) r[j] = i0 + j < m ? _mm256_loadu_ps(src + (i0 + j) * rs + k0) : _mm256_setzero_ps();
            for (j = 0; j < 8; j += 2) {
                t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
                t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
            }
            for (j = 0; j < 8; j += 4) {
                u[j] = _mm256_shuffle_ps(t[j], t[j + 2], 0x44);
                u[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], 0xEE);
                u[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0x44);
                u[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0xEE);
            }
            for (j = 0; j < 4; j++) {   /* o[j]: column k0 + j of the 8 rows */
                o[j] = _mm256_permute2f128_ps(u[j], u[j + 4], 0x20);
                o[j + 4] = _mm256_permute2f128_ps(u[j], u[j + 4], 0x31);
            }
            if (ld - i0 >= 8) for (j = 0; j < 8; j++) _mm256_storeu_ps(dst + (k0 + j) * ld + i0, o[j]);
            else for (j = 0; j < 8; j++) _mm256_maskstore_ps(dst + (k0 + j) * ld + i0, mask, o[j]);
        }
    }
    return k0;
}
#endif

/* Packs op(A)[0:mc, 0:kc] into panels of mr rows, zero-padded: panel p holds
   k-major runs of mr values. */
static void gpudl__pack_a(int64_t mc, int64_t kc, const float *A, int64_t rs, int64_t cs, int mr, float *buf) {
    int64_t ir, k;
    int i;
    for (ir = 0; ir < mc; ir += mr) {
        int mm = (int)GPUDL__MIN((int64_t)mr, mc - ir);
        const float *src = A + ir * rs;
        k = 0;
#ifdef GPUDL__X86_SIMD
        if (cs == 1 && mr <= 16 && __builtin_cpu_supports("avx")) {   /* A row-major: a transpose */
            k = gpudl__pack_t_avx(mm, kc, src, rs, buf, mr);
            buf += k * mr;
        }
#endif
        if (rs == 1)   /* op(A) = a column-major A (the weight gradients' A^T): runs of mm contiguous values */
            for (; k < kc; k++, buf += mr) {
                if (mm == 14) memcpy(buf, src + k * cs, sizeof(float) * 14);   /* the kernels' mr: fixed-size copies, inlined */
                else if (mm == 8) memcpy(buf, src + k * cs, sizeof(float) * 8);
                else if (mm == 6) memcpy(buf, src + k * cs, sizeof(float) * 6);
                else memcpy(buf, src + k * cs, sizeof(float) * (size_t)mm);
                for (i = mm; i < mr; i++) buf[i] = 0.0f;
            }
        for (; k < kc; k++, buf += mr) {
            for (i = 0; i < mm; i++) buf[i] = src[i * rs + k * cs];
            for (; i < mr; i++) buf[i] = 0.0f;
        }
    }
}

/* How many of a block's mc rows go to full mr-row panels, the rest to
   mr2-row panels (fn2): the cheapest cover, an mr2 panel's row costing
   1.12 of an mr one (the 8 x 32 kernel's rate against 14 x 32). A batch
   of 128 is 84 + 28 + 16 rows instead of 140: the batch-128 MLP's three
   large products ran 7-9% faster, its step about 4%. */
static int64_t gpudl__split_rows(int64_t mc, int mr, int mr2) {
    int64_t p, best = mc;
    double cbest = 1e300;
    for (p = 0; p <= (mc + mr - 1) / mr; p++) {
        int64_t left = GPUDL__MAX((int64_t)0, mc - p * mr);
        double cost = (double)(p * mr) + 1.12 * (double)((left + mr2 - 1) / mr2 * mr2);
        if (cost < cbest) { cbest = cost; best = GPUDL__MIN(mc, p * mr); }
    }
    return best;
}

/* Packs op(B)[0:kc, 0:nc] into panels of nr columns, zero-padded. */
GPUDL__MULTI_ISA(gpudl__pack_b, (int64_t kc, int64_t nc, const float *B, int64_t rs, int64_t cs, int nr, float *buf),
                 (kc, nc, B, rs, cs, nr, buf),   /* (its copies as wide as the CPU allows: 4-5% of a LeNet step in SSE) */
    int64_t jr, k;
    int j;
    for (jr = 0; jr < nc; jr += nr) {
        int nn = (int)GPUDL__MIN((int64_t)nr, nc - jr);
        float *dst = buf + jr * kc;
        const float *src = B + jr * cs;
        if (cs == 1) {   /* B row-major: each k is a contiguous run of nn values */
            for (k = 0; k < kc; k++, dst += nr) {   /* a loop, not memcpy: a libc call per 128 bytes was 4-9% of a step */
                const float *r = src + k * rs;
                GPUDL__SIMD for (j = 0; j < nn; j++) dst[j] = r[j];
                for (j = nn; j < nr; j++) dst[j] = 0.0f;
            }
        } else {         /* B transposed: eight stored rows at a time, each read in k order, */
            for (j = 0; j + 8 <= nn; j += 8) {   /* into 8-wide runs (a linear forward: +13% at batch 128) */
                const float *s0 = src + j * cs;
                for (k = 0; k < kc; k++) {
                    const float *sk = s0 + k * rs;
                    float *d = dst + k * nr + j;
                    d[0] = sk[0];      d[1] = sk[cs];     d[2] = sk[2 * cs]; d[3] = sk[3 * cs];
                    d[4] = sk[4 * cs]; d[5] = sk[5 * cs]; d[6] = sk[6 * cs]; d[7] = sk[7 * cs];
                }
            }
            for (; j < nn; j++)
                for (k = 0; k < kc; k++) dst[k * nr + j] = src[j * cs + k * rs];
            for (k = 0; k < kc; k++)
                for (j = nn; j < nr; j++) dst[k * nr + j] = 0.0f;
        }
    })

/* Sharing the CPU. OpenMP's threads wait for each other at the end of
   every parallel loop; when another program keeps a core busy, the thread
   that shares its core waits for time slices and every loop waits for it
   (issue 23, one epoch of the CNN on a 2-core machine with one core busy:
   114 s on 2 threads, 68 s on 1). So an OpenMP build on Linux looks, ten
   times a second, at how long its threads sat runnable but not running (each
   thread's run-queue wait, /proc/self/task/N/schedstat): a quarter of a
   thread or more, and its loops run on one thread fewer; and at how long
   its cores sat idle (/proc/stat, then twice a second): three quarters of
   a core or more, and they get one back, up to all. The first window opens
   with the first CPU context. Work is split the same whoever runs it
   (see gpudl__num_threads_max), so the results are the same bits whatever
   the load. The state is the process's, as the cores are: a number of
   threads every loop runs without (a context asking for 8 threads where
   OpenMP's default is 2 sheds the same one); gpudl_ctx_desc.share_cpu = -1
   keeps a context's GEMMs, convolutions and optimizer steps on all theirs. */
#if defined(_OPENMP) && defined(__linux__) && (defined(_DEFAULT_SOURCE) || defined(_GNU_SOURCE) || defined(__USE_MISC))
#  define GPUDL__SHARE 1   /* (syscall() needs what glibc declares by default; a strict -D_POSIX_C_SOURCE build goes without) */
#  include <dirent.h>
#  include <sched.h>   /* sched_yield: the monitor's lock */
#endif
#ifdef GPUDL__SHARE
static struct {
    int shed;              /* threads each loop runs without now; 0: none (read without the lock: atomics) */
    long long t_us;        /* when this window began (gpudl_now, microseconds); 0: not yet (atomic) */
    double idle, wait;     /* seconds then: the cores' idle time, this process's threads' run-queue wait */
    double idle_cores, waiting;   /* in the last window: cores idle, threads of ours kept waiting */
    double backoff;        /* seconds a window lasts while threads are shed: 0.5, doubled (to 8) when a thread
                              given back was taken again at once */
    double last_rise;      /* when a thread was last given back */
    unsigned long mask[16];       /* the cores this process may use, as it started (before gpudl__bind_threads) */
    int have_mask;
} gpudl__share;
#  define GPUDL__SHED() __atomic_load_n(&gpudl__share.shed, __ATOMIC_RELAXED)

/* The process's cores, kept before the threads are bound (a bound thread's
   own mask names one core). _locked: the caller holds the lock. */
static void gpudl__share_mask_locked(void) {
    if (gpudl__share.have_mask) return;
    memset(gpudl__share.mask, 0, sizeof gpudl__share.mask);
    gpudl__share.have_mask = syscall(SYS_sched_getaffinity, 0, sizeof gpudl__share.mask, gpudl__share.mask) > 0;
}
/* The monitor's lock: a spin lock on an atomic word (not an OpenMP
   critical section: ThreadSanitizer cannot see libgomp's lock, and reported
   two races when two threads created contexts at once; none here). */
static int gpudl__share_lock_word;
static void gpudl__share_lock(void) {
    while (__atomic_exchange_n(&gpudl__share_lock_word, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&gpudl__share_lock_word, __ATOMIC_RELAXED)) sched_yield();
}
static void gpudl__share_unlock(void) { __atomic_store_n(&gpudl__share_lock_word, 0, __ATOMIC_RELEASE); }
static void gpudl__share_mask(void) {
    gpudl__share_lock();
    gpudl__share_mask_locked();
    gpudl__share_unlock();
}

/* Seconds so far: idle on the cores this process may use, and waiting to
   run summed over this process's threads. 0: not known here. (Called
   with the lock held.) */
static int gpudl__share_read(double *idle, double *wait) {
    const unsigned long *mask = gpudl__share.mask;
    unsigned long long v[5], run, delay;
    char line[256], path[64];
    long hz = sysconf(_SC_CLK_TCK);
    double ticks = 0.0;
    struct dirent *e;
    DIR *dir;
    FILE *f;
    int cpu, n = 0, bits = 8 * (int)sizeof(unsigned long);
    gpudl__share_mask_locked();
    if (!gpudl__share.have_mask || hz <= 0 || (f = fopen("/proc/stat", "r")) == NULL) return 0;
    while (fgets(line, sizeof line, f) && !strncmp(line, "cpu", 3)) {   /* "cpuN user nice system idle iowait ..." */
        if (sscanf(line + 3, "%d %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2], &v[3], &v[4]) != 6 || cpu < 0 ||
            cpu >= bits * 16 || !(mask[cpu / bits] >> (cpu % bits) & 1ul))
            continue;   /* the total line, or a core this process may not use */
        ticks += (double)(v[3] + v[4]);
        n++;
    }
    fclose(f);
    if (!n || (dir = opendir("/proc/self/task")) == NULL) return 0;
    *idle = ticks / (double)hz;
    *wait = 0.0;
    while ((e = readdir(dir)) != NULL) {   /* "time on a core, time waiting for one (ns), slices" */
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (*end || tid <= 0) continue;   /* "." and ".." */
        snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", tid);
        if ((f = fopen(path, "r")) == NULL) continue;   /* a thread that just ended */
        if (fscanf(f, "%llu %llu", &run, &delay) == 2) *wait += 1e-9 * (double)delay;
        fclose(f);
    }
    closedir(dir);
    return 1;
}

/* The threads to shed now, shed so far, of mx (one at least runs), after a
   window in which `waiting` of this process's threads sat runnable but not
   running and `idle` cores had nothing to run: one more while ours wait
   for cores, one fewer when a core sat idle. */
static int gpudl__share_decide(int shed, int mx, double waiting, double idle) {
    if (waiting >= 0.25 && shed < mx - 1) return shed + 1;
    if (idle >= 0.75 && shed > 0) return shed - 1;
    return GPUDL__MAX(0, GPUDL__MIN(shed, mx - 1));
}

/* A window of a tenth of a second while no thread is shed (a busy core
   costs a 2-core machine's loops 2-10x their time: notice it soon), of
   half a second or more while some are (give a thread back only for a core
   that stays idle; twice as long each time one given back is taken again
   at once, up to 8 s, so that serial code of ours does not make the team
   flicker). A poll reads a few /proc files: some 50 us. */
static void gpudl__share_poll(void) {
    double now, idle, wait, window;
    int shed;
    if (omp_in_parallel()) return;
    now = gpudl_now();
    shed = GPUDL__SHED();
    window = shed ? GPUDL__MAX(gpudl__share.backoff, 0.5) : 0.1;
    if (now - 1e-6 * (double)__atomic_load_n(&gpudl__share.t_us, __ATOMIC_RELAXED) < window) return;
    gpudl__share_lock();
    if (now - 1e-6 * (double)gpudl__share.t_us >= window && gpudl__share_read(&idle, &wait)) {
        if (gpudl__share.t_us > 0) {
            int mx = omp_get_max_threads(), next;
            double dt = now - 1e-6 * (double)gpudl__share.t_us;
            gpudl__share.idle_cores = (idle - gpudl__share.idle) / dt;
            gpudl__share.waiting = GPUDL__MAX(0.0, wait - gpudl__share.wait) / dt;   /* threads that ended take their wait along */
            next = gpudl__share_decide(shed, mx, gpudl__share.waiting, gpudl__share.idle_cores);
            if (gpudl__share.backoff < 0.5 || now - gpudl__share.last_rise > 10.0) gpudl__share.backoff = 0.5;
            if (next > shed && now - gpudl__share.last_rise < 1.0) gpudl__share.backoff = GPUDL__MIN(8.0, 2.0 * gpudl__share.backoff);
            if (next < shed) gpudl__share.last_rise = now;
            __atomic_store_n(&gpudl__share.shed, next, __ATOMIC_RELAXED);
        }
        __atomic_store_n(&gpudl__share.t_us, (long long)(now * 1e6), __ATOMIC_RELAXED);
        gpudl__share.idle = idle;
        gpudl__share.wait = wait;
    }
    gpudl__share_unlock();
}
#endif

/* The threads of a parallel loop that is not a context's (elementwise
   work): OpenMP's default, fewer while other programs hold cores. */
GPUDL__MAYBE_UNUSED static int gpudl__team(void) {
#if defined(GPUDL__SHARE)
    gpudl__share_poll();
    return GPUDL__MAX(1, omp_get_max_threads() - GPUDL__SHED());
#elif defined(_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* The threads the context's work is split for (desc.num_threads, else
   OpenMP's default): fixed, so that results do not depend on the load. */
static int gpudl__num_threads_max(const gpudl_ctx *ctx) {
#ifdef _OPENMP
    return ctx->num_threads > 0 ? ctx->num_threads : omp_get_max_threads();
#else
    (void)ctx;
    return 1;
#endif
}

/* The threads to run the context's work on now: gpudl__num_threads_max,
   fewer while other programs hold cores (unless desc.share_cpu is -1). */
static int gpudl__num_threads(const gpudl_ctx *ctx) {
    int n = gpudl__num_threads_max(ctx);
#ifdef GPUDL__SHARE
    if (ctx->share_cpu >= 0) {
        gpudl__share_poll();
        n = GPUDL__MAX(1, n - GPUDL__SHED());
    }
#endif
    return n;
}

/* gpudl_ctx_desc.bind_threads: OpenMP's threads one per core, once per
   process, unless the environment places them or they are too few. */
#if defined(__linux__) && defined(_OPENMP) && defined(GPUDL_NO_CUDA) && \
    (defined(_DEFAULT_SOURCE) || defined(_GNU_SOURCE) || defined(__USE_MISC))
#  define GPUDL__CAN_BIND 1   /* CPU-only builds: a CUDA runtime's threads would inherit the first core */
#endif
static void gpudl__bind_threads(int nthreads) {
#ifdef GPUDL__CAN_BIND
    static int done;   /* once per process, also when two threads create contexts at once */
    unsigned long mask[16];
    int cpus[1024], ncpu = 0, i;
    long got;
    if (nthreads < 2 || omp_in_parallel() || getenv("OMP_PROC_BIND") || getenv("OMP_PLACES") ||
        getenv("GOMP_CPU_AFFINITY") || getenv("KMP_AFFINITY") || __atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
        return;
    memset(mask, 0, sizeof mask);
    got = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);   /* this process's cores (taskset, cgroups) */
    for (i = 0; got > 0 && i < (int)(8 * sizeof mask) && i < 8 * got; i++)
        if (mask[i / (8 * (int)sizeof(unsigned long))] >> (i % (8 * (int)sizeof(unsigned long))) & 1ul) cpus[ncpu++] = i;
    if (ncpu < nthreads) return;   /* more threads than cores: leave them to the scheduler */
#  ifdef GPUDL__SHARE
    gpudl__share_mask();   /* what the process may use, before its threads each get one core */
#  endif
    GPUDL__OMP(omp parallel num_threads(nthreads))
    {   /* the calling thread too (binding only the workers still left 19 of 40 processes slow) */
        unsigned long one[16];
        int c = cpus[omp_get_thread_num()];
        memset(one, 0, sizeof one);
        one[c / (8 * (int)sizeof(unsigned long))] = 1ul << (c % (8 * (int)sizeof(unsigned long)));
        (void)syscall(SYS_sched_setaffinity, 0, sizeof one, one);   /* 0: this thread */
    }
#else
    (void)nthreads;
#endif
}

/* This thread's number in the current team, and whether we are inside a
   parallel region already (then helpers must not open one: a nested team
   costs fresh threads on every call, see gpudl__cpu_matmul). */
static int gpudl__tid(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static int gpudl__team_size(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

#ifdef _OPENMP   /* only named inside OpenMP pragmas */
/* Inside any parallel construct, a team of one included (omp_in_parallel
   says no there): where a loop of ours may run on one thread or on several
   as the load goes (gpudl__num_threads), the code inside must not change
   with it (a CBLAS, a nested team). */
static int gpudl__in_parallel(void) { return omp_get_level() > 0; }
#endif

/* C (M,N; row stride ldc) = alpha * op(A) op(B) + beta * C, all FP32, on
   nt threads (1: no OpenMP region at all, for callers that are already
   parallel). */
static gpudl_status gpudl__sgemm_bias(gpudl_ctx *ctx, int nt, int64_t M, int64_t N, int64_t K, float alpha,
                                      const float *A, int64_t ars, int64_t acs, const float *B, int64_t brs, int64_t bcs,
                                      float beta, float *C, int64_t ldc, const float *bias);

static gpudl_status gpudl__sgemm(gpudl_ctx *ctx, int nt, int64_t M, int64_t N, int64_t K, float alpha,
                                 const float *A, int64_t ars, int64_t acs, const float *B, int64_t brs, int64_t bcs,
                                 float beta, float *C, int64_t ldc) {
    return gpudl__sgemm_bias(ctx, nt, M, N, K, alpha, A, ars, acs, B, brs, bcs, beta, C, ldc, NULL);
}

/* Where op(B) comes from when it is not one strided matrix: pack fills the
   packed panel of op(B)[k0:k0+kc, n0:n0+nn] (nr wide, zero-padded) itself
   (a convolution's columns, read where they lie, see gpudl__cw_pack). */
typedef struct gpudl__bsrc {
    void (*pack)(const void *u, int64_t k0, int64_t kc, int64_t n0, int nn, int nr, float *dst);
    const void *u;
} gpudl__bsrc;

/* One thread's whole share of a product: C (M,N) = alpha op(A) op(B) +
   beta C (+ bias), with its own packing buffers (abuf: KC x (MC + 16),
   bbuf: KC x (min(N, NC) + nr) floats) and no synchronisation. K is cut
   into equal segments of at most 256, so every element of C sums its k in
   the same order whatever the thread count: results do not depend on it. */
/* A 16-bit operand (FP16 or BF16, dt) is widened block by block where it
   is packed: its kc-deep slice (rows x cols of op(X), strides rs, cs in
   elements) into cbuf as FP32, contiguous along the stored runs, and
   *rs and *cs say cbuf's strides. The same values as widening the whole
   tensor first, so the same bits. */
static void gpudl__widen_block(const void *X, int dt, int64_t rows, int64_t cols, int64_t *rs, int64_t *cs, float *cbuf) {
    const uint16_t *x = (const uint16_t *)X;
    int64_t r, c, bf16 = dt == GPUDL_BF16;
    if (*cs == 1) {                       /* op(X) row-major: each row a run */
        for (r = 0; r < rows; r++) gpudl__widen_run(cbuf + r * cols, x + r * *rs, cols, (int)bf16);
        *rs = cols; *cs = 1;
    } else if (*rs == 1) {                /* op(X) column-major (a transposed operand): each column a run */
        for (c = 0; c < cols; c++) gpudl__widen_run(cbuf + c * rows, x + c * *cs, rows, (int)bf16);
        *rs = 1; *cs = rows;
    } else {
        for (r = 0; r < rows; r++)
            for (c = 0; c < cols; c++) {
                uint16_t h = x[r * *rs + c * *cs];
                cbuf[r * cols + c] = bf16 ? gpudl_bf16_to_f32(h) : gpudl_f16_to_f32(h);
            }
        *rs = cols; *cs = 1;
    }
}

/* The address of element i of an FP32, FP16 or BF16 array. */
static GPUDL__INLINE_ALWAYS const void *gpudl__at(const void *p, int dt, int64_t i) {
    return (const char *)p + i * (dt == GPUDL_F32 ? 4 : 2);
}

static void gpudl__sgemm_block(const gpudl__ukernel *uk, int64_t M, int64_t N, int64_t K, float alpha,
                               const void *A, int adt, int64_t ars, int64_t acs, const void *B, int bdt, int64_t brs,
                               int64_t bcs, float beta, float *C, int64_t ldc, const float *bias, float *abuf, float *bbuf,
                               float *cbuf, const gpudl__bsrc *bs) {
    /* K in equal segments of at most 256, each summed in registers and then
       added to C (the order, and so the bits, whatever kc); packed kc deep,
       a whole number of segments (gpudl__pick_kc) */
    int64_t r, c, jc, pc, ic, jr, ir, k0, kb = (K + 255) / 256, kseg = (K + kb - 1) / kb;
    int64_t kstep = kseg * GPUDL__MAX((int64_t)1, (int64_t)uk->kc / kseg);
    for (r = 0; r < M; r++) {   /* C = beta * C (beta 0 overwrites: NaN in C does not leak) + bias */
        float *crow = C + r * ldc;
        if (beta == 0.0f) {
            if (bias) memcpy(crow, bias, sizeof(float) * (size_t)N);
            else memset(crow, 0, sizeof(float) * (size_t)N);
        } else {
            if (beta != 1.0f) for (c = 0; c < N; c++) crow[c] *= beta;
            if (bias) for (c = 0; c < N; c++) crow[c] += bias[c];
        }
    }
    for (jc = 0; jc < N; jc += GPUDL__NC) {
        int64_t nc = GPUDL__MIN((int64_t)GPUDL__NC, N - jc);
        for (pc = 0; pc < K; pc += kstep) {
            int64_t kc = GPUDL__MIN(kstep, K - pc);
            for (jr = 0; jr < nc; jr += uk->nr) {
                int nn = (int)GPUDL__MIN((int64_t)uk->nr, nc - jr);
                if (bs) bs->pack(bs->u, pc, kc, jc + jr, nn, uk->nr, bbuf + jr * kc);
                else if (bdt != GPUDL_F32 && bcs == 1) {   /* 16-bit row-major B: each k's run widened into its panel row */
                    const uint16_t *b16 = (const uint16_t *)B + pc * brs + jc + jr;
                    float *dst = bbuf + jr * kc;
                    int64_t k;
                    for (k = 0; k < kc; k++, dst += uk->nr) {
                        int j;
                        gpudl__widen_run(dst, b16 + k * brs, nn, bdt == GPUDL_BF16);
                        for (j = nn; j < uk->nr; j++) dst[j] = 0.0f;
                    }
                } else if (bdt != GPUDL_F32) {   /* 16-bit B otherwise: this strip widened, then packed */
                    int64_t rs = brs, cs = bcs;
                    gpudl__widen_block(gpudl__at(B, bdt, pc * brs + (jc + jr) * bcs), bdt, kc, nn, &rs, &cs, cbuf);
                    gpudl__pack_b(kc, nn, cbuf, rs, cs, uk->nr, bbuf + jr * kc);
                } else gpudl__pack_b(kc, nn, (const float *)B + pc * brs + (jc + jr) * bcs, brs, bcs, uk->nr, bbuf + jr * kc);
            }
            for (ic = 0; ic < M; ic += GPUDL__MC) {
                int64_t mc = GPUDL__MIN((int64_t)GPUDL__MC, M - ic), m1 = uk->fn2 ? gpudl__split_rows(mc, uk->mr, uk->mr2) : mc;
                int64_t p1 = (m1 + uk->mr - 1) / uk->mr * uk->mr;   /* A's rows in mr panels, padded; then mr2 panels */
                const float *a = (const float *)A + ic * ars + pc * acs;
                int64_t rs = ars, cs = acs;
                if (adt != GPUDL_F32) {   /* 16-bit A: this block widened, then packed */
                    gpudl__widen_block(gpudl__at(A, adt, ic * ars + pc * acs), adt, mc, kc, &rs, &cs, cbuf);
                    a = cbuf;
                }
                gpudl__pack_a(m1, kc, a, rs, cs, uk->mr, abuf);
                if (m1 < mc) gpudl__pack_a(mc - m1, kc, a + m1 * rs, rs, cs, uk->mr2, abuf + p1 * kc);
                for (jr = 0; jr < nc; jr += uk->nr) {
                    int nn = (int)GPUDL__MIN((int64_t)uk->nr, nc - jr);
                    for (ir = 0; ir < m1; ir += uk->mr)
                        for (k0 = 0; k0 < kc; k0 += kseg)   /* C's tile stays in L1 across the segments */
                            uk->fn(GPUDL__MIN(kseg, kc - k0), abuf + ir * kc + k0 * uk->mr, bbuf + jr * kc + k0 * uk->nr,
                                   C + (ic + ir) * ldc + jc + jr, ldc, alpha, (int)GPUDL__MIN((int64_t)uk->mr, m1 - ir), nn);
                    for (ir = m1; ir < mc; ir += uk->mr2)
                        for (k0 = 0; k0 < kc; k0 += kseg)
                            uk->fn2(GPUDL__MIN(kseg, kc - k0), abuf + (p1 + ir - m1) * kc + k0 * uk->mr2,
                                    bbuf + jr * kc + k0 * uk->nr, C + (ic + ir) * ldc + jc + jr, ldc, alpha,
                                    (int)GPUDL__MIN((int64_t)uk->mr2, mc - ir), nn);
                }
            }
        }
    }
}

#ifdef GPUDL__X86_SIMD
/* Few columns (N <= 16), op(A) row-major and op(B) stored as N rows of K
   (a classifier layer's forward: x @ w^T with 10 outputs): each element
   of C is one dot product of two contiguous rows, four columns at a time
   in AVX-512 registers. The packed GEMM pads N to 32 columns and packs all
   of A for that one panel: MLP batch 1024, 1024 -> 10, 0.75 -> 0.28 ms. */
/* _mm512_reduce_add_ps, written out with its own grouping (the same bits:
   halves, then quarters, then pairs): gcc 12's reads an undefined vector in
   every extract, which g++ -O2 -Wall reports as maybe-uninitialized in the
   program's build. */
__attribute__((target("avx512f")))
static inline float gpudl__hsum512(__m512 v) {
    float t[16], u[8], w0, w1;
    int i;
    _mm512_storeu_ps(t, v);
    for (i = 0; i < 8; i++) u[i] = t[i] + t[i + 8];
    for (i = 0; i < 4; i++) u[i] = u[i] + u[i + 4];
    w0 = u[0] + u[2];
    w1 = u[1] + u[3];
    return w0 + w1;
}
/* 16 elements of an FP32, FP16 or BF16 row (lanes past k's mask zero) as FP32 */
__attribute__((target("avx512f,avx512vl,avx512bw,f16c")))
static GPUDL__INLINE_ALWAYS __m512 gpudl__ld16(const void *p, int dt, __mmask16 k) {
    __m256i h;
    if (dt == GPUDL_F32) return _mm512_maskz_loadu_ps(k, p);
    h = _mm256_maskz_loadu_epi16(k, p);
    return dt == GPUDL_F16 ? _mm512_maskz_cvtph_ps(k, h)   /* (maskz: g++ 12's plain forms read an undefined vector) */
                           : _mm512_castsi512_ps(_mm512_maskz_slli_epi32(k, _mm512_maskz_cvtepu16_epi32(k, h), 16));
}
/* (dt: A's and B's dtype; 16-bit rows are widened as they are loaded, the
   same sums in the same order as on FP32 copies) */
__attribute__((target("avx512f,avx512vl,avx512bw,f16c")))
static void gpudl__dots_rows(int64_t i0, int64_t i1, int64_t N, int64_t K, float alpha, const void *A, int dt, int64_t ars,
                             const void *B, int64_t bcs, float beta, float *C, int64_t ldc, const float *bias) {
    int64_t i;
    for (i = i0; i < i1; i++) {
        const void *a = gpudl__at(A, dt, i * ars);
        int64_t n0, n, k;
        for (n0 = 0; n0 < N; n0 += 4) {   /* four columns (the last group repeats a row it then drops) */
            const void *b0 = gpudl__at(B, dt, n0 * bcs), *b1 = gpudl__at(B, dt, GPUDL__MIN(n0 + 1, N - 1) * bcs);
            const void *b2 = gpudl__at(B, dt, GPUDL__MIN(n0 + 2, N - 1) * bcs);
            const void *b3 = gpudl__at(B, dt, GPUDL__MIN(n0 + 3, N - 1) * bcs);
            __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, av;
            float d[4];
            int nb = (int)GPUDL__MIN((int64_t)4, N - n0), q;
            for (k = 0; k < K; k += 16) {   /* the last 16 masked */
                __mmask16 mk = (__mmask16)(K - k >= 16 ? 0xffffu : (1u << (K - k)) - 1u);
                av = gpudl__ld16(gpudl__at(a, dt, k), dt, mk);
                c0 = _mm512_fmadd_ps(av, gpudl__ld16(gpudl__at(b0, dt, k), dt, mk), c0);
                c1 = _mm512_fmadd_ps(av, gpudl__ld16(gpudl__at(b1, dt, k), dt, mk), c1);
                c2 = _mm512_fmadd_ps(av, gpudl__ld16(gpudl__at(b2, dt, k), dt, mk), c2);
                c3 = _mm512_fmadd_ps(av, gpudl__ld16(gpudl__at(b3, dt, k), dt, mk), c3);
            }
            d[0] = gpudl__hsum512(c0); d[1] = gpudl__hsum512(c1);
            d[2] = gpudl__hsum512(c2); d[3] = gpudl__hsum512(c3);
            for (q = 0; q < nb; q++) {
                float *c = C + i * ldc + n0 + q;
                n = n0 + q;
                *c = (beta == 0.0f ? 0.0f : beta * *c) + (bias ? bias[n] : 0.0f) + alpha * d[q];   /* beta 0: NaN in C does not leak */
            }
        }
    }
}

/* the threads' shares of rows (outside the AVX-512 function: clang's
   OpenMP regions do not inherit its target) */
static void gpudl__sgemm_dots(int nt, int64_t M, int64_t N, int64_t K, float alpha, const void *A, int dt, int64_t ars,
                              const void *B, int64_t bcs, float beta, float *C, int64_t ldc, const float *bias) {
    int t;
    if (M * N * K <= 65536) nt = 1;
    GPUDL__OMP(omp parallel for schedule(static) num_threads(nt) if (nt > 1))
    for (t = 0; t < nt; t++)
        gpudl__dots_rows(M * t / nt, M * (t + 1) / nt, N, K, alpha, A, dt, ars, B, bcs, beta, C, ldc, bias);
}
#endif

/* The same as gpudl__sgemm, plus bias (N) added to every row when not NULL:
   it is folded into the pass that prepares C, so a linear layer's bias
   costs nothing.

   Threads: C is cut into a pm x pn grid of blocks, one per thread, each
   computed start to finish by gpudl__sgemm_block. There is no barrier
   inside the product and no packed panel shared between cores; the price
   is that each of the pn column groups packs its rows of A and each of the
   pm row groups packs its columns of B, so the grid minimises
   1.5 pn M + pm N: packing A costs more (a gather by rows of 14), and at
   equal cost row groups keep a thread's whole B block in its L2 (1024^3
   on 2 threads: split by columns 308 GFLOP/s, by rows 337). The earlier
   design shared each packed B block among all threads: two barriers per K
   block, which under OMP_WAIT_POLICY=passive are two sleeps and wake-ups. */
/* gpudl__sgemm_bias with op(A) of dtype adt and op(B) of dtype bdt, each
   FP32, FP16 or BF16 (16-bit ones widened to FP32 where they are packed;
   C, bias and the sums FP32): the CPU's 16-bit products (issue 38). */
static gpudl_status gpudl__gemm_x(gpudl_ctx *ctx, int nt, int64_t M, int64_t N, int64_t K, float alpha,
                                  const void *Av, int adt, int64_t ars, int64_t acs, const void *Bv, int bdt, int64_t brs,
                                  int64_t bcs, float beta, float *C, int64_t ldc, const float *bias);

static gpudl_status gpudl__sgemm_bias(gpudl_ctx *ctx, int nt, int64_t M, int64_t N, int64_t K, float alpha,
                                      const float *A, int64_t ars, int64_t acs, const float *B, int64_t brs, int64_t bcs,
                                      float beta, float *C, int64_t ldc, const float *bias) {
    return gpudl__gemm_x(ctx, nt, M, N, K, alpha, A, GPUDL_F32, ars, acs, B, GPUDL_F32, brs, bcs, beta, C, ldc, bias);
}

static gpudl_status gpudl__gemm_x(gpudl_ctx *ctx, int nt, int64_t M, int64_t N, int64_t K, float alpha,
                                  const void *Av, int adt, int64_t ars, int64_t acs, const void *Bv, int bdt, int64_t brs,
                                  int64_t bcs, float beta, float *C, int64_t ldc, const float *bias) {
    const float *A = (const float *)Av, *B = (const float *)Bv;   /* (when FP32) */
    int f32 = adt == GPUDL_F32 && bdt == GPUDL_F32;
    gpudl__ukernel uk;
    float *buf;
    size_t asz, bsz, csz;
    int64_t i, j, p, mu, nu;
    int pm = 1, pn = 1, q;
    double best = -1.0;
#ifdef GPUDL_CBLAS
    {   /* op(A) is row-major (M,K) when acs == 1, stored (K,M) when ars == 1; a
           dimension of 1 leaves its stride free, so the leading dimension comes
           from the other one. Not from inside our own threads: a CBLAS brings
           its own. */
        int an = acs == 1 && (M == 1 || ars >= K), at = !an && ars == 1 && (K == 1 || acs >= M);
        int bn = bcs == 1 && (K == 1 || brs >= N), bt = !bn && brs == 1 && (N == 1 || bcs >= K);
        int lda = an ? (int)(M == 1 ? GPUDL__MAX(K, 1) : ars) : (int)(K == 1 ? GPUDL__MAX(M, 1) : acs);
        int ldb = bn ? (int)(K == 1 ? GPUDL__MAX(N, 1) : brs) : (int)(N == 1 ? GPUDL__MAX(K, 1) : bcs);
#  ifdef _OPENMP
        int inside = gpudl__in_parallel();
#  else
        int inside = 0;
#  endif
        if (f32 && !bias && !inside && (an || at) && (bn || bt)) {
            cblas_sgemm(CblasRowMajor, an ? CblasNoTrans : CblasTrans, bn ? CblasNoTrans : CblasTrans, (int)M, (int)N,
                        (int)K, alpha, A, lda, B, ldb, beta, C, (int)ldc);
            return GPUDL_OK;
        }
    }
#endif
#ifdef GPUDL__X86_SIMD
    if (adt == bdt && N <= 16 && acs == 1 && brs == 1 && K >= 64 && alpha != 0.0f && gpudl__cpu_isa() >= 3 &&
        gpudl__pick_ukernel(ctx ? ctx->cpu_gemm : GPUDL_CPU_GEMM_AUTO, 0).fn == gpudl__uk_avx512) {
        gpudl__sgemm_dots(nt, M, N, K, alpha, Av, adt, ars, Bv, bcs, beta, C, ldc, bias);
        return GPUDL_OK;
    }
#endif
    if (M * N * K <= 32 * 32 * 32 || alpha == 0.0f) {   /* tiny: packing would cost more than it saves */
        for (i = 0; i < M; i++) {
            float *c = C + i * ldc;
            for (j = 0; j < N; j++) c[j] = (beta == 0.0f ? 0.0f : beta * c[j]) + (bias ? bias[j] : 0.0f);   /* beta 0: NaN in C does not leak */
            for (p = 0; p < K && alpha != 0.0f; p++) {
                float aip = alpha * (f32 ? A[i * ars + p * acs] : gpudl__elem_get(Av, adt, i * ars + p * acs));
                if (f32) for (j = 0; j < N; j++) c[j] += aip * B[p * brs + j * bcs];
                else for (j = 0; j < N; j++) c[j] += aip * gpudl__elem_get(Bv, bdt, p * brs + j * bcs);
            }
        }
        return GPUDL_OK;
    }
    uk = gpudl__pick_ukernel(ctx ? ctx->cpu_gemm : GPUDL_CPU_GEMM_AUTO, ctx ? ctx->cpu_kc : 0);
    gpudl__fit_ukernel(&uk, M);
    mu = (M + uk.mr - 1) / uk.mr;
    nu = (N + uk.nr - 1) / uk.nr;
    if (M * N * K < 96 * 96 * 96) nt = 1;   /* a region costs more than the work */
    for (; nt > 1 && best < 0.0; nt--)      /* the most threads that the tiles allow */
        for (q = 1; q <= nt; q++) {         /* q row groups x nt/q column groups, none empty */
            double cost;
            if (nt % q || q > mu || nt / q > nu) continue;
            cost = 1.5 * (double)(nt / q) * (double)M + (double)q * (double)N;
            if (best < 0.0 || cost < best) { best = cost; pm = q; pn = nt / q; }
        }
    asz = (size_t)uk.kc * (GPUDL__MC + 16);   /* MC rows in panels of mr (and mr2), padded */
    bsz = (size_t)uk.kc * (size_t)(GPUDL__MIN((nu + pn - 1) / pn * uk.nr, (int64_t)GPUDL__NC) + uk.nr);
    csz = f32 ? 0 : (size_t)GPUDL__MAX(uk.kc, 256) * (size_t)GPUDL__MAX(GPUDL__MC, uk.nr);   /* a 16-bit block, widened */
    buf = (float *)GPUDL_MALLOC(sizeof(float) * (asz + bsz + csz) * (size_t)(pm * pn));
    if (!buf) {
        gpudl_status s;
        GPUDL__OMP(omp critical(gpudl__error))
        s = GPUDL__ERR(ctx, GPUDL_ERR_OOM, "sgemm: packing buffers (%d threads) could not be allocated", pm * pn);
        return s;
    }
    if (pm * pn == 1) {   /* no region at all: callers may be inside their own */
        gpudl__sgemm_block(&uk, M, N, K, alpha, Av, adt, ars, acs, Bv, bdt, brs, bcs, beta, C, ldc, bias, buf, buf + asz,
                           buf + asz + bsz, NULL);
        GPUDL_FREE(buf);
        return GPUDL_OK;
    }
    /* One block per thread; a work-shared loop all the same, so that a
       smaller team (a thread limit, or a caller's own parallel region
       making this one nested) still computes every block. */
    GPUDL__OMP(omp parallel for num_threads(pm * pn) schedule(static, 1))
    for (q = 0; q < pm * pn; q++) {
        float *tb = buf + (size_t)gpudl__tid() * (asz + bsz + csz);
        int64_t m0, m1, n0, n1;
        m0 = mu * (q / pn) / pm * uk.mr; m1 = GPUDL__MIN(M, mu * (q / pn + 1) / pm * uk.mr);
        n0 = nu * (q % pn) / pn * uk.nr; n1 = GPUDL__MIN(N, nu * (q % pn + 1) / pn * uk.nr);
        if (m1 > m0 && n1 > n0)
            gpudl__sgemm_block(&uk, m1 - m0, n1 - n0, K, alpha, gpudl__at(Av, adt, m0 * ars), adt, ars, acs,
                               gpudl__at(Bv, bdt, n0 * bcs), bdt, brs, bcs, beta, C + m0 * ldc + n0, ldc,
                               bias ? bias + n0 : NULL, tb, tb + asz, tb + asz + bsz, NULL);
    }
    GPUDL_FREE(buf);
    return GPUDL_OK;
}

/* On this thread, op(B) from a producer: C (M,N) = alpha op(A) B + beta C.
   ws: gpudl__sgemm_ws(ctx, N) floats of packing buffers, the caller's. */
static size_t gpudl__sgemm_ws(const gpudl_ctx *ctx, int64_t N) {
    size_t kc = (size_t)gpudl__pick_ukernel(GPUDL_CPU_GEMM_C, ctx ? ctx->cpu_kc : 0).kc;
    return kc * (GPUDL__MC + 16) + kc * (size_t)(GPUDL__MIN(N, (int64_t)GPUDL__NC) + 32);
}
static void gpudl__sgemm_from(const gpudl_ctx *ctx, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t ars,
                              int64_t acs, const gpudl__bsrc *bs, float beta, float *C, int64_t ldc, float *ws) {
    gpudl__ukernel uk = gpudl__pick_ukernel(ctx ? ctx->cpu_gemm : GPUDL_CPU_GEMM_AUTO, ctx ? ctx->cpu_kc : 0);
    gpudl__fit_ukernel(&uk, M);
    gpudl__sgemm_block(&uk, M, N, K, alpha, A, GPUDL_F32, ars, acs, NULL, GPUDL_F32, 0, 0, beta, C, ldc, NULL, ws,
                       ws + (size_t)uk.kc * (GPUDL__MC + 16), NULL, bs);
}

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
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "matmul: A is %s, B is %s, C is %s: all must be on one device", sa, sb, sc);
    if (A->dtype != B->dtype || !gpudl__is_float(A->dtype) ||
        !(C->dtype == A->dtype || (A->dtype != GPUDL_F32 && C->dtype == GPUDL_F32)))
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "matmul: A is %s, B is %s, C is %s: need A and B both f32, f16 or "
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

static gpudl_status gpudl__cpu_matmul(gpudl_ctx *ctx, gpudl_tensor *C, const gpudl_tensor *A, const gpudl_tensor *B,
                                      int ta, int tb, float alpha, float beta, const gpudl__mm *mm) {
    int dt = (int)A->dtype, es = dt == GPUDL_F32 ? 2 : 1;   /* A and B: one dtype; es: their element size in 16-bit units */
    const uint16_t *a = (const uint16_t *)A->data, *b = (const uint16_t *)B->data;
    gpudl__wide W = gpudl__wide_of(ctx);   /* a 16-bit C: the FP32 sums in a copy, rounded into C once */
    gpudl_tensor *cw = gpudl__widen(&W, C, 1);
    float *c = (float *)cw->data;
    int64_t l;
    if (W.s != GPUDL_OK) return gpudl__wide_end(&W, W.s);
    if (C->dtype != GPUDL_F32 && beta != 0.0f) gpudl__convert(c, GPUDL_F32, C->data, C->dtype, gpudl_tensor_numel(C));
    {
        /* Small batched products: one batch entry per thread beats splitting
           each product (which leaves threads idle and pays a region per call). */
        int nt = gpudl__num_threads(ctx), ntmax = gpudl__num_threads_max(ctx);
        int per_entry = mm->L >= 2 * ntmax && ntmax > 1 && mm->M * mm->N * mm->K <= 512 * 512 * 512;   /* not by the load */
        int fails = 0;
        /* Two loops, not one with an if() clause: an sgemm region inside even
           an inactive (if-false) region is nested, and libgomp starts fresh
           threads for nested teams on every call while the pool's idle
           workers spin (measured: 116 thread creations in 23 MLP steps, and
           a backward pass 44 -> 30 ms once they were gone). FP16/BF16 A and
           B are widened to FP32 where they are packed (no copies). */
        if (per_entry) {
            GPUDL__OMP(omp parallel for num_threads(nt) schedule(dynamic) reduction(+:fails))
            for (l = 0; l < mm->L; l++)
                if (fails == 0 && gpudl__gemm_x(ctx, 1, mm->M, mm->N, mm->K, alpha, a + l * mm->sa * es, dt, ta ? 1 : mm->K,
                                                ta ? mm->M : 1, b + l * mm->sb * es, dt, tb ? 1 : mm->N, tb ? mm->K : 1,
                                                beta, c + l * mm->sc, mm->N, NULL) != GPUDL_OK)
                    fails++;
        } else {
            for (l = 0; l < mm->L && fails == 0; l++)
                if (gpudl__gemm_x(ctx, nt, mm->M, mm->N, mm->K, alpha, a + l * mm->sa * es, dt, ta ? 1 : mm->K, ta ? mm->M : 1,
                                  b + l * mm->sb * es, dt, tb ? 1 : mm->N, tb ? mm->K : 1, beta, c + l * mm->sc, mm->N,
                                  NULL) != GPUDL_OK)
                    fails++;
        }
        return gpudl__wide_end(&W, fails ? GPUDL_ERR_OOM : GPUDL_OK);   /* the only way sgemm fails; the message is recorded */
    }
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

/* The user's gemm_f16 (gpudl_ops), once per batch entry. Its C is f32: an
   f16 C goes through an f32 copy (read only when beta != 0), rounded into
   C once after the call. *done = 0: the override handed the call back
   (before writing anything), gpudl's GEMM does it. */
static gpudl_status gpudl__matmul_f16_user(gpudl_ctx *ctx, gpudl_tensor *C, const gpudl_tensor *A, const gpudl_tensor *B,
                                           int ta, int tb, float alpha, float beta, const gpudl__mm *mm, int *done) {
    const gpudl_ops *o = &ctx->ops[GPUDL__ON_GPU(C)];
    gpudl_tensor c32;
    gpudl_status s = GPUDL_OK;
    int64_t l, nc = gpudl_tensor_numel(C);
    float *c = (float *)C->data;
    *done = 1;
    memset(&c32, 0, sizeof c32);
    if (C->dtype != GPUDL_F32) {   /* the f32 copy: a workspace of the context */
        void *w = NULL;
#ifndef GPUDL_NO_CUDA
        if (GPUDL__ON_GPU(C)) GPUDL__TRY(gpudl__dev_ws(ctx, sizeof(float) * (size_t)nc, &w));
        else
#endif
            GPUDL__TRY(gpudl__host_ws(ctx, sizeof(float) * (size_t)nc, &w));
        GPUDL__TRY(gpudl_tensor_wrap(&c32, w, C->device, GPUDL_F32, C->ndim, C->shape));
        if (beta != 0.0f) GPUDL__TRY(gpudl_tensor_cast(ctx, &c32, C));
        c = (float *)w;
    }
    for (l = 0; l < mm->L && *done && s == GPUDL_OK; l++)
        s = gpudl__ovr_result(ctx, o->gemm_f16(o->user, gpudl__stream_for(ctx, C), ta, tb, mm->M, mm->N, mm->K, alpha,
                                               (const uint16_t *)A->data + l * mm->sa, (const uint16_t *)B->data + l * mm->sb,
                                               beta, c + l * mm->sc), "gemm_f16", done);
    if (!*done && l > 1) *done = 1;   /* an override declines all entries or none: a later decline is its answer */
    if (s == GPUDL_OK && *done && C->dtype != GPUDL_F32) s = gpudl_tensor_cast(ctx, C, &c32);
    return s;
}

GPUDL__DEF gpudl_status gpudl_matmul(gpudl_ctx *ctx, gpudl_tensor *C, const gpudl_tensor *A, const gpudl_tensor *B,
                                     int trans_a, int trans_b, float alpha, float beta) {
    gpudl__mm mm;
    memset(&mm, 0, sizeof mm);
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__matmul_check(ctx, C, A, B, trans_a, trans_b, &mm));
    if (A->dtype == GPUDL_F32 && GPUDL__OVR(ctx, C, gemm)) {   /* the user's GEMM, once per batch entry */
        const gpudl_ops *o = &ctx->ops[GPUDL__ON_GPU(C)];
        gpudl_status s = GPUDL_OK;
        int64_t l;
        int done = 1;
        for (l = 0; l < mm.L && done && s == GPUDL_OK; l++)
            s = gpudl__ovr_result(ctx, o->gemm(o->user, gpudl__stream_for(ctx, C), trans_a, trans_b, mm.M, mm.N, mm.K, alpha,
                                               (const float *)A->data + l * mm.sa, (const float *)B->data + l * mm.sb, beta,
                                               (float *)C->data + l * mm.sc), "gemm", &done);
        if (done || l > 1) return s;   /* handed back: gpudl's GEMM (an override declines all entries or none) */
    }
    if (A->dtype == GPUDL_F16 && ctx->ops[GPUDL__ON_GPU(C)].gemm_f16) {   /* the user's FP16 GEMM (FP32 sums) */
        int done = 0;
        GPUDL__TRY(gpudl__matmul_f16_user(ctx, C, A, B, trans_a, trans_b, alpha, beta, &mm, &done));
        if (done) return GPUDL_OK;
    }
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(C)) return gpudl__cuda_matmul(ctx, C, A, B, trans_a, trans_b, alpha, beta, &mm);
#endif
    return gpudl__cpu_matmul(ctx, C, A, B, trans_a, trans_b, alpha, beta, &mm);
}

/* >>arith ----------------------------------------------------------------- */
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
    if (GPUDL__ON_GPU(out)) {
        GPUDL__LAUNCH(ctx, gpudl_k_binary(ctx->stream, op, out->data, a->data, b->data, (int)out->dtype, n));
        return GPUDL_OK;
    }
#endif
    if (out->dtype == GPUDL_F32 && a->dtype == GPUDL_F32 && b->dtype == GPUDL_F32) {
        gpudl__binary_f32(op, (float *)out->data, (const float *)a->data, (const float *)b->data, n);
        return GPUDL_OK;
    }
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (n > 65536))
    for (i = 0; i < n; i++) {
        float x = gpudl__elem_get(a->data, (int)a->dtype, i), y = gpudl__elem_get(b->data, (int)b->dtype, i);
        gpudl__elem_set(out->data, out->dtype, i, op == 0 ? x + y : x * y);
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
    if (GPUDL__ON_GPU(y)) {
        GPUDL__LAUNCH(ctx, gpudl_k_axpby(ctx->stream, y->data, alpha, x->data, beta, (int)y->dtype, n));
        return GPUDL_OK;
    }
#endif
    if (y->dtype == GPUDL_F32 && x->dtype == GPUDL_F32) {
        gpudl__axpby_f32((float *)y->data, alpha, (const float *)x->data, beta, n);
        return GPUDL_OK;
    }
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (n > 65536))
    for (i = 0; i < n; i++)
        gpudl__elem_set(y->data, y->dtype, i, alpha * gpudl__elem_get(x->data, (int)x->dtype, i)
                                           + (beta == 0.0f ? 0.0f : beta * gpudl__elem_get(y->data, (int)y->dtype, i)));
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
    if (GPUDL__ON_GPU(x)) {
        GPUDL__LAUNCH(ctx, gpudl_k_reduce(ctx->stream, op, (float *)out->data, x->data, (int)x->dtype, n, ctx->scratch));
        return GPUDL_OK;
    }
#endif
    if (op == 0) {
        /* at most 256 chunks, each summed in order, then the chunks in
           order: the same bits on any number of threads */
        double part[256], s = 0.0;
        int64_t csz = GPUDL__MAX((int64_t)65536, (n + 255) / 256), nc = (n + csz - 1) / csz, c;
        GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (nc > 1))
        for (c = 0; c < nc; c++) {
            double t = 0.0;
            int64_t j, e = GPUDL__MIN(n, (c + 1) * csz);
            for (j = c * csz; j < e; j++) t += gpudl__elem_get(x->data, (int)x->dtype, j);
            part[c] = t;
        }
        for (c = 0; c < nc; c++) s += part[c];
        *(float *)out->data = (float)s;
    } else {
        float m = gpudl__elem_get(x->data, (int)x->dtype, 0);
        for (i = 1; i < n; i++) m = gpudl__nanmax(m, gpudl__elem_get(x->data, (int)x->dtype, i));
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
    if (GPUDL__ON_GPU(x)) {
        GPUDL__LAUNCH(ctx, gpudl_k_argmax_rows(ctx->stream, (int32_t *)out->data, x->data, (int)x->dtype, rows, cols));
        return GPUDL_OK;
    }
#endif
    GPUDL__OMP(omp parallel for private(c) num_threads(gpudl__team()) if (rows * cols > 65536))
    for (r = 0; r < rows; r++) {
        float best = gpudl__elem_get(x->data, (int)x->dtype, r * cols);
        int32_t bi = 0;
        for (c = 1; c < cols && best == best; c++) {
            float v = gpudl__elem_get(x->data, (int)x->dtype, r * cols + c);
            if (v > best || v != v) { best = v; bi = (int32_t)c; }
        }
        ((int32_t *)out->data)[r] = bi;
    }
    return GPUDL_OK;
}

/* >>activation ------------------------------------------------------------ */
/* The CPU's activation loops, one plain loop per kind that the compiler
   vectorises, for this CPU's instruction set (GPUDL__MULTI_ISA). */
GPUDL__MULTI_ISA(gpudl__act_fwd_cpu, (int act, float alpha, float *ys, const float *xs, int64_t n), (act, alpha, ys, xs, n),
    int64_t i;
    switch (act) {
    case GPUDL_ACT_RELU:       GPUDL__EACH(i, n, n > 65536, ys[i] = gpudl__relu_f(xs[i])); break;
    case GPUDL_ACT_LEAKY_RELU: GPUDL__EACH(i, n, n > 65536, ys[i] = gpudl__leaky_f(xs[i], alpha)); break;
    case GPUDL_ACT_GELU:       GPUDL__EACH(i, n, n > 65536, ys[i] = gpudl__gelu_f(xs[i])); break;
    case GPUDL_ACT_TANH:       GPUDL__EACH(i, n, n > 65536, ys[i] = gpudl__tanh_f(xs[i])); break;
    default:                   GPUDL__EACH(i, n, n > 65536, ys[i] = gpudl__sigmoid_f(xs[i])); break;
    })
GPUDL__MULTI_ISA(gpudl__act_bwd_cpu, (int act, float alpha, float *dxs, const float *dys, const float *xs, const float *yv,
                                      int64_t n), (act, alpha, dxs, dys, xs, yv, n),
    int64_t i;
    switch (act) {
    case GPUDL_ACT_RELU:       GPUDL__EACH(i, n, n > 65536, dxs[i] = gpudl__relu_bwd_f(dys[i], xs[i])); break;
    case GPUDL_ACT_LEAKY_RELU: GPUDL__EACH(i, n, n > 65536, dxs[i] = dys[i] * gpudl__leaky_df(xs[i], alpha)); break;
    case GPUDL_ACT_GELU:       GPUDL__EACH(i, n, n > 65536, dxs[i] = dys[i] * gpudl__gelu_df(xs[i])); break;
    case GPUDL_ACT_TANH:       GPUDL__EACH(i, n, n > 65536, dxs[i] = dys[i] * gpudl__tanh_df(yv[i])); break;
    default:                   GPUDL__EACH(i, n, n > 65536, dxs[i] = dys[i] * gpudl__sigmoid_df(yv[i])); break;
    })

GPUDL__DEF gpudl_status gpudl_act_forward(gpudl_ctx *ctx, gpudl_act act, float alpha, gpudl_tensor *y, const gpudl_tensor *x) {
    int64_t n;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_act(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_dt(ctx, y, "y", x->dtype));
    if (act < GPUDL_ACT_RELU || act > GPUDL_ACT_SIGMOID)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "activation %d is not a gpudl_act", (int)act);
    GPUDL__TRY(gpudl__same_device(ctx, "activation", "y", y, "x", x));
    if (gpudl_tensor_numel(y) != gpudl_tensor_numel(x))
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "activation", "y", y, "x", x, "need the same number of elements");
    if (act == GPUDL_ACT_LEAKY_RELU && alpha == 0.0f) alpha = 0.01f;
    n = gpudl_tensor_numel(x);
    GPUDL__OVERRIDE(ctx, x, act_forward, act, alpha, (float *)y->data, (const float *)x->data, n);
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(x)) {
        GPUDL__LAUNCH(ctx, gpudl_k_act_fwd(ctx->stream, (int)act, alpha, y->data, x->data, (int)x->dtype, n));
        return GPUDL_OK;
    }
#endif
    if (x->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *yw = gpudl__widen(&W, y, 1), *xw = gpudl__widen(&W, x, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_act_forward(ctx, act, alpha, yw, xw));
    }
    gpudl__act_fwd_cpu((int)act, alpha, (float *)y->data, (const float *)x->data, n);
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_act_backward(gpudl_ctx *ctx, gpudl_act act, float alpha, gpudl_tensor *dx,
                                           const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *y) {
    int64_t n;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_act(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_dt(ctx, dx, "dx", x->dtype));
    GPUDL__TRY(gpudl__check_dt(ctx, dy, "dy", x->dtype));
    GPUDL__TRY(gpudl__check_dt(ctx, y, "y", x->dtype));
    if (act < GPUDL_ACT_RELU || act > GPUDL_ACT_SIGMOID)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "activation %d is not a gpudl_act", (int)act);
    n = gpudl_tensor_numel(x);
    if (gpudl_tensor_numel(dx) != n || gpudl_tensor_numel(dy) != n || gpudl_tensor_numel(y) != n)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "activation backward", "dy", dy, "x", x, "dx, dy, x, y need one size");
    GPUDL__TRY(gpudl__same_device(ctx, "activation backward", "dx", dx, "x", x));
    GPUDL__TRY(gpudl__same_device(ctx, "activation backward", "dy", dy, "y", y));
    GPUDL__TRY(gpudl__same_device(ctx, "activation backward", "dy", dy, "x", x));
    if (act == GPUDL_ACT_LEAKY_RELU && alpha == 0.0f) alpha = 0.01f;
    GPUDL__OVERRIDE(ctx, x, act_backward, act, alpha, (float *)dx->data, (const float *)dy->data, (const float *)x->data,
                    (const float *)y->data, n);
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(x)) {
        GPUDL__LAUNCH(ctx, gpudl_k_act_bwd(ctx->stream, (int)act, alpha, dx->data, dy->data, x->data, y->data, (int)x->dtype, n));
        return GPUDL_OK;
    }
#endif
    if (x->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *dxw = gpudl__widen(&W, dx, 1), *dyw = gpudl__widen(&W, dy, 0),
                     *xw = gpudl__widen(&W, x, 0), *yw = gpudl__widen(&W, y, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_act_backward(ctx, act, alpha, dxw, dyw, xw, yw));
    }
    gpudl__act_bwd_cpu((int)act, alpha, (float *)dx->data, (const float *)dy->data, (const float *)x->data,
                       (const float *)y->data, n);
    return GPUDL_OK;
}

/* >>linear ---------------------------------------------------------------- */
/* A ReLU bit mask's leading dimension, in bits, for O features (cuBLASLt: a multiple of 128). */
static int64_t gpudl__relu_mask_ld(int64_t O) { return (O + 127) / 128 * 128; }

#ifndef GPUDL_NO_CUDA
/* cuBLASLt GEMMs with their epilogues, in column-major terms:
   D (m x n) = op(A) op(B) + beta D, then the epilogue. The linear layer's
   three GEMMs (row-major y (N,O) = x (N,F) w (O,F)^T + b, dx = dy w,
   dW = dy^T x) become
     forward  D = y^T (O x N) = w^T x^T: A = w (T), B = x (N); BIAS, RELU_BIAS,
              or RELU_AUX_BIAS (the ReLU's bit mask into aux for backward)
     dx       D = dx^T (F x N) = w dy^T: A = w (N), B = dy (N); DEFAULT, or
              DRELU (the mask of the ReLU below applied: its backward done)
     dW       D = dW^T (F x O) = x^T dy: A = x (N), B = dy (T); BGRADB (the
              bias gradient, sum over N of dy, written: beta 0 only).
   ON BY DEFAULT (issue 26), for these reasons: counted on the emulated
   device, the epilogues take 3 kernels off the MLP's forward, 3 bias
   gradient kernels and 2 ReLU backward kernels off its backward, each one a
   launch (2.5-4 us on an H100) and a full read and write of a (batch, 1024)
   activation; cuBLASLt's heuristic is told the operands' alignment and
   returns no algorithm (or NOT_SUPPORTED) when it cannot, and then the layer
   runs the plain path (cuBLAS GEMM + gpudl's kernels, the same math, tested
   with gpudl_ctx_desc.cublaslt = -1). A plan per shape: descriptors and the
   heuristic's algorithm, made once; ok = 0 when cuBLASLt offers none. */
typedef struct gpudl__lt_key {
    int64_t m, n, k, lda, ldb, ldd, aux_ld;
    int64_t ta, tb, atype, dtype, math, epilogue, align_a, align_b, align_d, align_bias;
} gpudl__lt_key;

/* The largest power of two, up to 256, that divides the address. */
static int64_t gpudl__align_of(const void *p) {
    uintptr_t u = (uintptr_t)p;
    int64_t a = 256;
    while (a > 1 && u % (uintptr_t)a) a /= 2;
    return a;
}

typedef struct gpudl__lt_plan {
    gpudl__lt_key key;
    int ok;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
} gpudl__lt_plan;

static void gpudl__lt_plan_free(gpudl__lt_plan *p) {
    if (p->desc) cublasLtMatmulDescDestroy(p->desc);
    if (p->a) cublasLtMatrixLayoutDestroy(p->a);
    if (p->b) cublasLtMatrixLayoutDestroy(p->b);
    if (p->d) cublasLtMatrixLayoutDestroy(p->d);
    memset(p, 0, sizeof *p);
}

static void gpudl__lt_free(gpudl_ctx *ctx) {
    int i;
    for (i = 0; i < ctx->lt_n; i++) gpudl__lt_plan_free(&ctx->lt_plans[i]);
    GPUDL_FREE(ctx->lt_plans);
    ctx->lt_plans = NULL;
    ctx->lt_n = ctx->lt_cap = 0;
    if (ctx->lt) cublasLtDestroy(ctx->lt);
    ctx->lt = NULL;
}

/* One GEMM of the list above: operands, epilogue pointers, beta. */
typedef struct gpudl__lt_gemm {
    int64_t m, n, k, lda, ldb, ldd, aux_ld;
    int ta, tb, epilogue;
    gpudl_dtype atype, dtype;            /* A's and B's type; D's (and the bias's) */
    const void *A, *B, *bias;            /* bias: the BIAS forms' input or BGRADB's output */
    void *D, *aux;
    float beta;
} gpudl__lt_gemm;

static gpudl_status gpudl__lt_plan_make(gpudl_ctx *ctx, gpudl__lt_plan *p) {
    const gpudl__lt_key *k = &p->key;
    cublasComputeType_t ct = (k->atype == GPUDL_F32 && k->math == GPUDL_MATH_TF32) ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                                  : CUBLAS_COMPUTE_32F;
    cublasOperation_t opa = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtEpilogue_t ep = (cublasLtEpilogue_t)k->epilogue;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    cublasStatus_t st;
    int got = 0;
    if (!ctx->lt) GPUDL__CUBLAS(ctx, cublasLtCreate(&ctx->lt));
    GPUDL__CUBLAS(ctx, cublasLtMatmulDescCreate(&p->desc, ct, CUDA_R_32F));
    GPUDL__CUBLAS(ctx, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    GPUDL__CUBLAS(ctx, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    GPUDL__CUBLAS(ctx, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
    if (k->aux_ld) GPUDL__CUBLAS(ctx, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &k->aux_ld,
                                                                     sizeof k->aux_ld));
    GPUDL__CUBLAS(ctx, cublasLtMatrixLayoutCreate(&p->a, gpudl__cuda_type((gpudl_dtype)k->atype), (uint64_t)(k->ta ? k->k : k->m),
                                                  (uint64_t)(k->ta ? k->m : k->k), k->lda));
    GPUDL__CUBLAS(ctx, cublasLtMatrixLayoutCreate(&p->b, gpudl__cuda_type((gpudl_dtype)k->atype), (uint64_t)(k->tb ? k->n : k->k),
                                                  (uint64_t)(k->tb ? k->k : k->n), k->ldb));
    GPUDL__CUBLAS(ctx, cublasLtMatrixLayoutCreate(&p->d, gpudl__cuda_type((gpudl_dtype)k->dtype), (uint64_t)k->m, (uint64_t)k->n,
                                                  k->ldd));
    GPUDL__CUBLAS(ctx, cublasLtMatmulPreferenceCreate(&pref));
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ctx->workspace_bytes,
                                              sizeof ctx->workspace_bytes);
    {
        uint32_t aa = (uint32_t)k->align_a, ab = (uint32_t)k->align_b, ad = (uint32_t)k->align_d;
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof ab);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ad, sizeof ad);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ad, sizeof ad);
    }
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(ctx->lt, p->desc, p->a, p->b, p->d, p->d, pref, 1, &res, &got);
    cublasLtMatmulPreferenceDestroy(pref);
    p->ok = st == CUBLAS_STATUS_SUCCESS && got > 0 && res.state == CUBLAS_STATUS_SUCCESS;   /* else the caller falls back */
    if (p->ok) p->algo = res.algo;
    return GPUDL_OK;
}

/* Runs g through cuBLASLt: *done = 0 when cuBLASLt is off or offers no
   algorithm for it (nothing was written; the caller takes the plain path). */
static gpudl_status gpudl__lt_run(gpudl_ctx *ctx, const gpudl__lt_gemm *g, int *done) {
    gpudl__lt_key k;
    gpudl__lt_plan *p = NULL;
    float one = 1.0f;
    int i;
    *done = 0;
    if (!ctx->use_lt) return GPUDL_OK;
    /* the epilogue's vectors (bias, aux) are read 16 bytes at a time (the
       heuristic has no preference for them): the plain path otherwise */
    if ((g->bias && (uintptr_t)g->bias % 16) || (g->aux && (uintptr_t)g->aux % 16)) return GPUDL_OK;
    memset(&k, 0, sizeof k);
    k.m = g->m; k.n = g->n; k.k = g->k; k.lda = g->lda; k.ldb = g->ldb; k.ldd = g->ldd; k.aux_ld = g->aux ? g->aux_ld : 0;
    k.ta = g->ta; k.tb = g->tb; k.atype = g->atype; k.dtype = g->dtype; k.math = ctx->math_mode; k.epilogue = g->epilogue;
    k.align_a = gpudl__align_of(g->A); k.align_b = gpudl__align_of(g->B); k.align_d = gpudl__align_of(g->D);
    k.align_bias = g->bias ? gpudl__align_of(g->bias) : 0;
    for (i = 0; i < ctx->lt_n && !p; i++)
        if (!memcmp(&ctx->lt_plans[i].key, &k, sizeof k)) p = &ctx->lt_plans[i];
    if (!p) {
        gpudl__lt_plan np;
        gpudl_status s;
        memset(&np, 0, sizeof np);
        np.key = k;
        s = gpudl__lt_plan_make(ctx, &np);
        if (s != GPUDL_OK) { gpudl__lt_plan_free(&np); return s; }
        if (ctx->lt_n == ctx->lt_cap) {
            int cap = ctx->lt_cap ? 2 * ctx->lt_cap : 16;
            gpudl__lt_plan *c = (gpudl__lt_plan *)GPUDL_REALLOC(ctx->lt_plans, sizeof *c * (size_t)cap);
            if (!c) { gpudl__lt_plan_free(&np); return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "cuBLASLt plan cache"); }
            ctx->lt_plans = c;
            ctx->lt_cap = cap;
        }
        ctx->lt_plans[ctx->lt_n] = np;
        p = &ctx->lt_plans[ctx->lt_n++];
    }
    if (!p->ok) return GPUDL_OK;
    if (g->bias) GPUDL__CUBLAS(ctx, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias,
                                                                   sizeof g->bias));
    if (g->aux) GPUDL__CUBLAS(ctx, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g->aux,
                                                                  sizeof g->aux));
    GPUDL__CUBLAS(ctx, cublasLtMatmul(ctx->lt, p->desc, &one, g->A, p->a, g->B, p->b, &g->beta, g->D, p->d, g->D, p->d, &p->algo,
                                      ctx->workspace, ctx->workspace_bytes, ctx->stream));
    if (ctx->sync_debug) GPUDL__CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    *done = 1;
    return GPUDL_OK;
}

/* y = x w^T + b, then ReLU when relu (and its mask into aux when aux is
   not NULL, (N, gpudl__relu_mask_ld(O) / 8) bytes): one cuBLASLt call.
   *done = 0 when cuBLASLt is off or has no algorithm (nothing written). */
static gpudl_status gpudl__lt_linear(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *x, const gpudl_tensor *w,
                                     const gpudl_tensor *b, int relu, void *aux, int *done) {
    gpudl__lt_gemm g;
    *done = 0;
    if (!ctx->use_lt) return GPUDL_OK;
    GPUDL__TRY(gpudl__same_device(ctx, "linear", "x", x, "w", w));
    GPUDL__TRY(gpudl__same_device(ctx, "linear", "y", y, "x", x));
    GPUDL__TRY(gpudl__same_device(ctx, "linear", "b", b, "x", x));
    memset(&g, 0, sizeof g);
    g.m = w->shape[0]; g.n = x->shape[0]; g.k = x->shape[1];
    g.A = w->data; g.ta = 1; g.lda = g.k;
    g.B = x->data; g.tb = 0; g.ldb = g.k;
    g.D = y->data; g.ldd = g.m;
    g.atype = g.dtype = x->dtype;
    g.bias = b->data;
    g.epilogue = !relu ? CUBLASLT_EPILOGUE_BIAS : aux ? CUBLASLT_EPILOGUE_RELU_AUX_BIAS : CUBLASLT_EPILOGUE_RELU_BIAS;
    g.aux = relu ? aux : NULL;
    g.aux_ld = gpudl__relu_mask_ld(g.m);
    return gpudl__lt_run(ctx, &g, done);
}
#endif

/* y (rows, C, inner) += b (C) on the CPU, b[c] to every element of channel
   c: the one bias add of the CPU backend (the GPU's is gpudl_k_bias_add;
   the CPU linear layer adds it in its GEMM, gpudl__sgemm_bias). */
static void gpudl__bias_rows(float *y, const float *b, int64_t rows, int64_t C, int64_t inner) {
    int64_t i;
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (rows * C * inner > 65536 && !gpudl__in_parallel()))
    for (i = 0; i < rows * C; i++) {   /* no division per element */
        float bv = b[i % C], *yp = y + i * inner;
        int64_t k;
        GPUDL__SIMD
        for (k = 0; k < inner; k++) yp[k] += bv;
    }
}

/* y[i] += b[(i / inner) % C] for every i: bias per feature (inner 1) or per channel (inner H*W). */
static gpudl_status gpudl__bias_add(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *b, int64_t C, int64_t inner) {
    int64_t n = gpudl_tensor_numel(y);
    (void)ctx;
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(y)) {
        GPUDL__LAUNCH(ctx, gpudl_k_bias_add(ctx->stream, y->data, b->data, (int)y->dtype, n, C, inner));
        return GPUDL_OK;
    }
#endif
    if (y->dtype != GPUDL_F32) {   /* 16-bit storage (the user's gemm_f16 under a linear layer): rounded once */
        int64_t i;
        for (i = 0; i < n; i++)
            gpudl__elem_set(y->data, y->dtype, i, gpudl__elem_get(y->data, (int)y->dtype, i) +
                                                  gpudl__elem_get(b->data, (int)b->dtype, (i / inner) % C));
        return GPUDL_OK;
    }
    gpudl__bias_rows((float *)y->data, (const float *)b->data, n / (C * inner), C, inner);
    return GPUDL_OK;
}

/* out[c] += sum over (n, i) of x[n, c, i], x viewed as (N, C, inner). */
/* Float64 sum of a run of n floats (squares = 1: of (x - mu)^2), in eight
   interleaved partial sums: one double accumulator is bound by the add
   latency (4 cycles per element; 2 ms per batch-norm layer of the demo
   CNN). The order is fixed, so the result is the same every run. */
static GPUDL__INLINE_ALWAYS double gpudl__sum_f64(const float *x, int64_t n, double mu, int squares) {
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i;
    int k;
    if (squares) {
        for (i = 0; i + 8 <= n; i += 8)
            for (k = 0; k < 8; k++) { double d = x[i + k] - mu; a[k] += d * d; }
        for (; i < n; i++) { double d = x[i] - mu; a[0] += d * d; }
    } else {
        for (i = 0; i + 8 <= n; i += 8)
            for (k = 0; k < 8; k++) a[k] += x[i + k];
        for (; i < n; i++) a[0] += x[i];
    }
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* o[c] += the sum of column c of x (N, C) row-major, in double: blocks of
   64 columns, rows walked in order, so reads are contiguous and each sum
   keeps a fixed order (whatever the threads), for this CPU's instruction set. */
GPUDL__MULTI_ISA(gpudl__colsum_acc, (float *o, const float *xs, int64_t N, int64_t C, int team), (o, xs, N, C, team),
    int64_t c;
    (void)team;
    GPUDL__OMP(omp parallel for num_threads(team) if (N * C > 65536))
    for (c = 0; c < C; c += 64) {
        double acc[64];
        int64_t n, k, w = GPUDL__MIN((int64_t)64, C - c);
        for (k = 0; k < w; k++) acc[k] = 0.0;
        for (n = 0; n < N; n++) {
            const float *row = xs + n * C + c;
            GPUDL__SIMD
            for (k = 0; k < w; k++) acc[k] += row[k];
        }
        for (k = 0; k < w; k++) o[c + k] += (float)acc[k];
    })
static gpudl_status gpudl__channel_sum_acc(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *x, int64_t N, int64_t C,
                                           int64_t inner) {
    const float *xs = (const float *)x->data;
    float *o = (float *)out->data;
    int64_t c;
    (void)ctx;
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(x)) {
        GPUDL__LAUNCH(ctx, gpudl_k_channel_sum(ctx->stream, o, x->data, (int)x->dtype, N, C, inner, ctx->scratch, 0, ctx->tickets));
        return GPUDL_OK;
    }
#endif
    if (x->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *xw = gpudl__widen(&W, x, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl__channel_sum_acc(ctx, out, xw, N, C, inner));
    }
    if (inner == 1) {
        gpudl__colsum_acc(o, xs, N, C, gpudl__team());
        return GPUDL_OK;
    }
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (N * C * inner > 65536))
    for (c = 0; c < C; c++) {
        double s = 0;
        int64_t n;
        for (n = 0; n < N; n++) s += gpudl__sum_f64(xs + (n * C + c) * inner, inner, 0.0, 0);
        o[c] += (float)s;
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_sum_rows_acc(gpudl_ctx *ctx, gpudl_tensor *out, const gpudl_tensor *x) {
    int64_t cols;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_f32(ctx, out, "out"));
    GPUDL__TRY(gpudl__check_act(ctx, x, "x"));
    GPUDL__TRY(gpudl__same_device(ctx, "sum_rows", "out", out, "x", x));
    cols = x->shape[x->ndim - 1];
    if (gpudl_tensor_numel(out) != cols)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "sum_rows", "out", out, "x", x, "out needs x's last dim");
    return gpudl__channel_sum_acc(ctx, out, x, gpudl_tensor_numel(x) / cols, cols, 1);
}

GPUDL__DEF gpudl_status gpudl_linear_forward(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *x,
                                             const gpudl_tensor *w, const gpudl_tensor *b) {
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_act(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_dt(ctx, y, "y", x->dtype));
    GPUDL__TRY(gpudl__check_dt(ctx, w, "w", x->dtype));
    if (x->ndim != 2 || w->ndim != 2 || y->ndim != 2 || x->shape[1] != w->shape[1] || y->shape[0] != x->shape[0] ||
        y->shape[1] != w->shape[0])
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "linear", "x", x, "w", w, "need x (N,F), w (O,F), y (N,O)");
    if (b) {
        GPUDL__TRY(gpudl__check_dt(ctx, b, "b", x->dtype));
        if (gpudl_tensor_numel(b) != w->shape[0])
            return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "linear", "b", b, "w", w, "b needs O elements");
        GPUDL__TRY(gpudl__same_device(ctx, "linear", "b", b, "w", w));
    }
    if (GPUDL__OVR(ctx, x, gemm) || (x->dtype == GPUDL_F16 && ctx->ops[GPUDL__ON_GPU(x)].gemm_f16)) {
        /* the user's GEMM (gpudl_matmul calls it), then the bias */
        GPUDL__TRY(gpudl__same_device(ctx, "linear", "y", y, "x", x));
        GPUDL__TRY(gpudl_matmul(ctx, y, x, w, 0, 1, 1.0f, 0.0f));
        return b ? gpudl__bias_add(ctx, y, b, w->shape[0], 1) : GPUDL_OK;
    }
    if (!GPUDL__ON_GPU(x)) {   /* CPU: the bias rides along in the GEMM */
        GPUDL__TRY(gpudl__same_device(ctx, "linear", "x", x, "w", w));
        GPUDL__TRY(gpudl__same_device(ctx, "linear", "y", y, "x", x));
        /* 16-bit: x and w widened where the GEMM packs them; y's sums and the bias in FP32 copies */
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *yw = gpudl__widen(&W, y, 1), *bw = gpudl__widen(&W, b, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl__gemm_x(ctx, gpudl__num_threads(ctx), x->shape[0], w->shape[0],
                                                             x->shape[1], 1.0f, x->data, (int)x->dtype, x->shape[1], 1,
                                                             w->data, (int)w->dtype, 1, w->shape[1], 0.0f,
                                                             (float *)yw->data, w->shape[0],
                                                             bw ? (const float *)bw->data : NULL));
    }
#ifndef GPUDL_NO_CUDA
    if (b) {   /* the bias in the GEMM's epilogue, when cuBLASLt is on */
        int done;
        GPUDL__TRY(gpudl__lt_linear(ctx, y, x, w, b, 0, NULL, &done));
        if (done) return GPUDL_OK;
    }
#endif
    GPUDL__TRY(gpudl_matmul(ctx, y, x, w, 0, 1, 1.0f, 0.0f));
    return b ? gpudl__bias_add(ctx, y, b, w->shape[0], 1) : GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_linear_backward(gpudl_ctx *ctx, gpudl_tensor *dx, gpudl_tensor *dw, gpudl_tensor *db,
                                              const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *w) {
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_act(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_dt(ctx, dy, "dy", x->dtype));
    GPUDL__TRY(gpudl__check_dt(ctx, w, "w", x->dtype));
    if (dx) GPUDL__TRY(gpudl__check_dt(ctx, dx, "dx", x->dtype));
    if (dw) GPUDL__TRY(gpudl__check_f32(ctx, dw, "dw"));   /* weight gradients are f32 whatever the activations */
    if (db) GPUDL__TRY(gpudl__check_f32(ctx, db, "db"));
    if (dy->ndim != 2 || x->ndim != 2 || w->ndim != 2 || dy->shape[0] != x->shape[0] || dy->shape[1] != w->shape[0] ||
        x->shape[1] != w->shape[1])
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "linear backward", "dy", dy, "x", x, "need dy (N,O), x (N,F), w (O,F)");
    if (dx) GPUDL__TRY(gpudl_matmul(ctx, dx, dy, w, 0, 0, 1.0f, 0.0f));     /* dx = dy @ w */
    if (dw) GPUDL__TRY(gpudl_matmul(ctx, dw, dy, x, 1, 0, 1.0f, 1.0f));     /* dw += dy^T @ x */
    if (db) GPUDL__TRY(gpudl_sum_rows_acc(ctx, db, dy));                     /* db += sum_n dy */
    return GPUDL_OK;
}

#ifndef GPUDL_NO_CUDA
/* The model's linear backward on the GPU (shapes checked by the model).
   overwrite: the step's first write of these gradients (after
   gpudl_model_zero_grad): dw and db are written, not added to (beta 0, and
   cuBLASLt's BGRADB computes db in dw's GEMM). mask: NULL, or the bit mask
   of the ReLU after the layer below (from that layer's RELU_AUX_BIAS
   forward): cuBLASLt's DRELU applies it in dx's GEMM, writing dx_masked
   (the layer below's output gradient) instead of dx, and *masked says it
   did (the ReLU's backward is then done); else dx as usual. */
static gpudl_status gpudl__linear_bwd_gpu(gpudl_ctx *ctx, gpudl_tensor *dx, gpudl_tensor *dw, gpudl_tensor *db,
                                          const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *w, int overwrite,
                                          void *mask, gpudl_tensor *dx_masked, int *masked) {
    int64_t N = x->shape[0], F = x->shape[1], O = w->shape[0];
    gpudl__lt_gemm g;
    int done = 0;
    *masked = 0;
    if (dx) {
        if (mask) {   /* dx^T (F x N) = w (F x O, column-major) dy^T (O x N), times the mask */
            memset(&g, 0, sizeof g);
            g.m = F; g.n = N; g.k = O;
            g.A = w->data; g.lda = F; g.B = dy->data; g.ldb = O; g.D = dx_masked->data; g.ldd = F;
            g.atype = g.dtype = x->dtype;
            g.epilogue = CUBLASLT_EPILOGUE_DRELU;
            g.aux = mask; g.aux_ld = gpudl__relu_mask_ld(F);
            GPUDL__TRY(gpudl__lt_run(ctx, &g, masked));
        }
        if (!*masked) GPUDL__TRY(gpudl_matmul(ctx, dx, dy, w, 0, 0, 1.0f, 0.0f));   /* dx = dy @ w */
    }
    if (dw && db && overwrite) {   /* dW^T (F x O) = x^T (F x N) dy (N x O), db = sum over N of dy */
        memset(&g, 0, sizeof g);
        g.m = F; g.n = O; g.k = N;
        g.A = x->data; g.lda = F; g.B = dy->data; g.tb = 1; g.ldb = O; g.D = dw->data; g.ldd = F;
        g.atype = x->dtype; g.dtype = GPUDL_F32;
        g.epilogue = CUBLASLT_EPILOGUE_BGRADB;
        g.bias = db->data;
        GPUDL__TRY(gpudl__lt_run(ctx, &g, &done));
        if (done) return GPUDL_OK;
    }
    if (dw) GPUDL__TRY(gpudl_matmul(ctx, dw, dy, x, 1, 0, 1.0f, overwrite ? 0.0f : 1.0f));   /* dw (+)= dy^T @ x */
    if (db) GPUDL__LAUNCH(ctx, gpudl_k_channel_sum(ctx->stream, (float *)db->data, dy->data, (int)dy->dtype, N, O, 1,
                                                   ctx->scratch, overwrite, ctx->tickets));
    return GPUDL_OK;
}
#endif

/* >>loss ------------------------------------------------------------------ */
static gpudl_status gpudl__check_labels(gpudl_ctx *ctx, const gpudl_tensor *labels, const gpudl_tensor *logits, int64_t N) {
    GPUDL__TRY(gpudl__check_on(ctx, labels, "labels"));
    if (labels->dtype != GPUDL_I32 && labels->dtype != GPUDL_U8)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "labels are %s; need i32 or u8", gpudl_dtype_name(labels->dtype));
    if (gpudl_tensor_numel(labels) != N)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "softmax_xent", "labels", labels, "logits", logits, "one label per row");
    return gpudl__same_device(ctx, "softmax_xent", "labels", labels, "logits", logits);
}

static int64_t gpudl__label(const gpudl_tensor *labels, int64_t i) {
    return labels->dtype == GPUDL_U8 ? (int64_t)((const uint8_t *)labels->data)[i] : (int64_t)((const int32_t *)labels->data)[i];
}

/* For an override of the loss: the labels as i32 on their device, checked
   against [0, K) first (on the GPU that waits for them: a teaching path).
   *out points into labels, or into a workspace valid until the next op. */
static gpudl_status gpudl__labels_i32(gpudl_ctx *ctx, const gpudl_tensor *labels, int64_t K, const int32_t **out) {
    int64_t i, N = gpudl_tensor_numel(labels), bad = -1;
    int32_t *h = NULL;
    gpudl_status s = GPUDL_OK;
    *out = (const int32_t *)labels->data;
    if (!GPUDL__ON_GPU(labels)) {
        if (labels->dtype == GPUDL_U8) GPUDL__TRY(gpudl__host_ws(ctx, sizeof(int32_t) * (size_t)N, (void **)&h));
        for (i = 0; i < N; i++) {
            int64_t v = gpudl__label(labels, i);
            if (h) h[i] = (int32_t)v;
            if (bad < 0 && (v < 0 || v >= K)) bad = i;
        }
        if (h) *out = h;
    }
#ifndef GPUDL_NO_CUDA
    else {
        float *dev = NULL;
        h = (int32_t *)GPUDL_MALLOC(sizeof(int32_t) * (size_t)(N ? N : 1));
        if (!h) return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "softmax_xent: no host memory for %lld labels", (long long)N);
        s = gpudl__memcpy(ctx, h, GPUDL_DEVICE_CPU, labels->data, labels->device, gpudl_tensor_bytes(labels));
        for (i = N - 1; s == GPUDL_OK && i >= 0; i--) {   /* widened in place, from the end */
            int64_t v = labels->dtype == GPUDL_U8 ? ((const uint8_t *)h)[i] : h[i];
            h[i] = (int32_t)v;
            if (v < 0 || v >= K) bad = i;
        }
        if (s == GPUDL_OK && bad < 0 && labels->dtype == GPUDL_U8) {
            s = gpudl__dev_scratch(ctx, (size_t)N, &dev);
            if (s == GPUDL_OK) s = gpudl__memcpy(ctx, dev, GPUDL_DEVICE_CUDA, h, GPUDL_DEVICE_CPU, sizeof(int32_t) * (size_t)N);
            *out = (const int32_t *)dev;
        }
        if (bad >= 0) bad = h[bad];   /* the label, for the message */
        GPUDL_FREE(h);
        if (bad >= 0) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "softmax_xent: label %lld is outside [0, %lld)",
                                        (long long)bad, (long long)K);
        return s;
    }
#endif
    if (bad >= 0) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "softmax_xent: label %lld (row %lld) is outside [0, %lld)",
                                    (long long)gpudl__label(labels, bad), (long long)bad, (long long)K);
    return s;
}

GPUDL__DEF gpudl_status gpudl_softmax_xent_forward(gpudl_ctx *ctx, gpudl_tensor *loss, gpudl_tensor *probs,
                                                   const gpudl_tensor *logits, const gpudl_tensor *labels) {
    int64_t N, K, r;
    double total = 0;
    double *rowloss = NULL;
    int bad = 0;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_f32(ctx, loss, "loss"));
    GPUDL__TRY(gpudl__check_f32(ctx, probs, "probs"));
    GPUDL__TRY(gpudl__check_act(ctx, logits, "logits"));
    if (logits->ndim != 2 || !gpudl__same_shape(probs, logits) || gpudl_tensor_numel(loss) != 1)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "softmax_xent", "logits", logits, "probs", probs,
                               "need logits and probs (N,K) and a one-element loss");
    N = logits->shape[0]; K = logits->shape[1];
    GPUDL__TRY(gpudl__check_labels(ctx, labels, logits, N));
    GPUDL__TRY(gpudl__same_device(ctx, "softmax_xent", "loss", loss, "logits", logits));
    GPUDL__TRY(gpudl__same_device(ctx, "softmax_xent", "probs", probs, "logits", logits));
    if (GPUDL__OVR(ctx, logits, softmax_xent_forward)) {
        const int32_t *lab;
        GPUDL__TRY(gpudl__labels_i32(ctx, labels, K, &lab));
        GPUDL__OVERRIDE(ctx, logits, softmax_xent_forward, (float *)loss->data, (float *)probs->data,
                        (const float *)logits->data, lab, N, K);
    }
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(logits)) {
        float *scratch = NULL;
        GPUDL__TRY(gpudl__dev_scratch(ctx, (size_t)gpudl_k_reduce_scratch() + (size_t)N, &scratch));
        GPUDL__LAUNCH(ctx, gpudl_k_softmax_xent_fwd(ctx->stream, (float *)loss->data, (float *)probs->data, logits->data,
                                                   (int)logits->dtype, labels->data, (int)labels->dtype, N, K, scratch,
                                                   ctx->report, ctx->bad_input));
        return GPUDL_OK;
    }
#endif
    if (logits->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *zw = gpudl__widen(&W, logits, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_softmax_xent_forward(ctx, loss, probs, zw, labels));
    }
    GPUDL__TRY(gpudl__host_ws(ctx, sizeof(double) * (size_t)N, (void **)&rowloss));
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (N * K > 16384) reduction(+:bad))
    for (r = 0; r < N; r++) {
        const float *z = (const float *)logits->data + r * K;
        float *p = (float *)probs->data + r * K, mx = z[0];
        double s = 0;
        int64_t k, lab = gpudl__label(labels, r);
        for (k = 1; k < K; k++) mx = gpudl__nanmax(mx, z[k]);
        for (k = 0; k < K; k++) s += exp((double)z[k] - mx);
        for (k = 0; k < K; k++) p[k] = (float)(exp((double)z[k] - mx) / s);
        if (lab < 0 || lab >= K) { bad++; rowloss[r] = 0; continue; }
        rowloss[r] = (double)mx + log(s) - (double)z[lab];
    }
    if (bad) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "softmax_xent: %d label(s) outside [0, %lld)", bad, (long long)K);
    for (r = 0; r < N; r++) total += rowloss[r];   /* in order: deterministic */
    *(float *)loss->data = (float)(total / (double)N);
    return GPUDL_OK;
}

/* dscale: NULL, or a float on the tensors' device that multiplies scale
   (the model's loss scale, read where it lives: no host synchronisation). */
static gpudl_status gpudl__xent_backward(gpudl_ctx *ctx, gpudl_tensor *dlogits, const gpudl_tensor *probs, const gpudl_tensor *labels,
                                         float scale, const float *dscale) {
    int64_t N, K, r;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_act(ctx, dlogits, "dlogits"));
    GPUDL__TRY(gpudl__check_f32(ctx, probs, "probs"));
    if (probs->ndim != 2 || !gpudl__same_shape(dlogits, probs))
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "softmax_xent backward", "dlogits", dlogits, "probs", probs, "need (N,K) both");
    N = probs->shape[0]; K = probs->shape[1];
    GPUDL__TRY(gpudl__check_labels(ctx, labels, probs, N));
    GPUDL__TRY(gpudl__same_device(ctx, "softmax_xent backward", "dlogits", dlogits, "probs", probs));
    if (!dscale && GPUDL__OVR(ctx, dlogits, softmax_xent_backward)) {   /* FP32: the scale is 1, on the host */
        const int32_t *lab;
        GPUDL__TRY(gpudl__labels_i32(ctx, labels, K, &lab));
        GPUDL__OVERRIDE(ctx, dlogits, softmax_xent_backward, (float *)dlogits->data, (const float *)probs->data, lab, N, K, scale);
    }
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(probs)) {
        GPUDL__LAUNCH(ctx, gpudl_k_softmax_xent_bwd(ctx->stream, dlogits->data, (int)dlogits->dtype, (const float *)probs->data,
                                                   labels->data, (int)labels->dtype, N, K, scale, dscale));
        return GPUDL_OK;
    }
#endif
    if (dscale) scale *= *dscale;
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (N * K > 65536))
    for (r = 0; r < N; r++) {
        int64_t k, lab = gpudl__label(labels, r);
        for (k = 0; k < K; k++)   /* scaled in float, rounded once */
            gpudl__elem_set(dlogits->data, dlogits->dtype, r * K + k,
                         scale * (((const float *)probs->data)[r * K + k] - (k == lab ? 1.0f : 0.0f)) / (float)N);
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_softmax_xent_backward(gpudl_ctx *ctx, gpudl_tensor *dlogits, const gpudl_tensor *probs,
                                                    const gpudl_tensor *labels, float scale) {
    return gpudl__xent_backward(ctx, dlogits, probs, labels, scale, NULL);
}

GPUDL__DEF gpudl_status gpudl_mse_forward(gpudl_ctx *ctx, gpudl_tensor *loss, const gpudl_tensor *pred, const gpudl_tensor *target) {
    int64_t i, n;
    double s = 0;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_f32(ctx, loss, "loss"));
    GPUDL__TRY(gpudl__check_act(ctx, pred, "pred"));
    GPUDL__TRY(gpudl__check_f32(ctx, target, "target"));
    n = gpudl_tensor_numel(pred);
    if (gpudl_tensor_numel(target) != n || gpudl_tensor_numel(loss) != 1)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "mse", "pred", pred, "target", target, "same element count, one-element loss");
    GPUDL__TRY(gpudl__same_device(ctx, "mse", "pred", pred, "target", target));
    GPUDL__TRY(gpudl__same_device(ctx, "mse", "loss", loss, "pred", pred));
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(pred)) {
        GPUDL__LAUNCH(ctx, gpudl_k_mse_fwd(ctx->stream, (float *)loss->data, pred->data, (int)pred->dtype,
                                           (const float *)target->data, n, ctx->scratch));
        return GPUDL_OK;
    }
#endif
    for (i = 0; i < n; i++) {
        double d = (double)gpudl__elem_get(pred->data, (int)pred->dtype, i) - ((const float *)target->data)[i];
        s += d * d;
    }
    *(float *)loss->data = (float)(s / (double)n);
    return GPUDL_OK;
}

static gpudl_status gpudl__mse_backward(gpudl_ctx *ctx, gpudl_tensor *dpred, const gpudl_tensor *pred, const gpudl_tensor *target,
                                        float scale, const float *dscale) {
    int64_t i, n;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_act(ctx, pred, "pred"));
    GPUDL__TRY(gpudl__check_dt(ctx, dpred, "dpred", pred->dtype));
    GPUDL__TRY(gpudl__check_f32(ctx, target, "target"));
    n = gpudl_tensor_numel(pred);
    if (gpudl_tensor_numel(target) != n || gpudl_tensor_numel(dpred) != n)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "mse backward", "pred", pred, "target", target, "same element count");
    GPUDL__TRY(gpudl__same_device(ctx, "mse backward", "pred", pred, "target", target));
    GPUDL__TRY(gpudl__same_device(ctx, "mse backward", "dpred", dpred, "pred", pred));
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(pred)) {
        GPUDL__LAUNCH(ctx, gpudl_k_mse_bwd(ctx->stream, dpred->data, pred->data, (int)pred->dtype, (const float *)target->data,
                                           n, scale, dscale));
        return GPUDL_OK;
    }
#endif
    if (dscale) scale *= *dscale;
    for (i = 0; i < n; i++)
        gpudl__elem_set(dpred->data, dpred->dtype, i,
                     scale * 2.0f * (gpudl__elem_get(pred->data, (int)pred->dtype, i) - ((const float *)target->data)[i]) / (float)n);
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_mse_backward(gpudl_ctx *ctx, gpudl_tensor *dpred, const gpudl_tensor *pred,
                                           const gpudl_tensor *target, float scale) {
    return gpudl__mse_backward(ctx, dpred, pred, target, scale, NULL);
}

/* >>conv ------------------------------------------------------------------ */
typedef struct gpudl__convg {   /* resolved convolution geometry */
    int64_t N, C, H, W, O, kh, kw, Ho, Wo, sh, sw, ph, pw, dh, dw;
    int64_t dtype, math;              /* the activations' dtype and the math mode: part of the algorithm cache key */
} gpudl__convg;

static gpudl_status gpudl__conv_check(gpudl_ctx *ctx, const gpudl_tensor *y, const gpudl_tensor *x, const gpudl_tensor *w,
                                      const gpudl_tensor *b, const gpudl_conv2d_desc *d, gpudl__convg *g) {
    gpudl_conv2d_desc z;
    memset(&z, 0, sizeof z);
    if (!d) d = &z;
    GPUDL__TRY(gpudl__check_act(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_dt(ctx, w, "w", x->dtype));
    GPUDL__TRY(gpudl__check_dt(ctx, y, "y", x->dtype));
    if (x->ndim != 4 || w->ndim != 4 || x->shape[1] != w->shape[1])
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "conv2d", "x", x, "w", w, "need x (N,C,H,W) and w (O,C,kh,kw)");
    if (d->stride_h < 0 || d->stride_w < 0 || d->pad_h < 0 || d->pad_w < 0 || d->dil_h < 0 || d->dil_w < 0)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "conv2d: negative stride, padding or dilation");
    g->N = x->shape[0]; g->C = x->shape[1]; g->H = x->shape[2]; g->W = x->shape[3];
    g->O = w->shape[0]; g->kh = w->shape[2]; g->kw = w->shape[3];
    g->sh = d->stride_h ? d->stride_h : 1; g->sw = d->stride_w ? d->stride_w : 1;
    g->ph = d->pad_h; g->pw = d->pad_w;
    g->dh = d->dil_h ? d->dil_h : 1; g->dw = d->dil_w ? d->dil_w : 1;
    g->dtype = x->dtype; g->math = ctx->math_mode;
    g->Ho = (g->H + 2 * g->ph - g->dh * (g->kh - 1) - 1) / g->sh + 1;
    g->Wo = (g->W + 2 * g->pw - g->dw * (g->kw - 1) - 1) / g->sw + 1;
    if (g->H + 2 * g->ph < g->dh * (g->kh - 1) + 1 || g->W + 2 * g->pw < g->dw * (g->kw - 1) + 1)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "conv2d", "x", x, "w", w, "the kernel is larger than the padded input");
    if (y->ndim != 4 || y->shape[0] != g->N || y->shape[1] != g->O || y->shape[2] != g->Ho || y->shape[3] != g->Wo) {
        char why[96];
        snprintf(why, sizeof why, "y must be (%lld,%lld,%lld,%lld)", (long long)g->N, (long long)g->O, (long long)g->Ho,
                 (long long)g->Wo);
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "conv2d", "y", y, "x", x, why);
    }
    GPUDL__TRY(gpudl__same_device(ctx, "conv2d", "x", x, "w", w));
    GPUDL__TRY(gpudl__same_device(ctx, "conv2d", "y", y, "x", x));
    if (b) {
        GPUDL__TRY(gpudl__check_dt(ctx, b, "b", x->dtype));
        if (gpudl_tensor_numel(b) != g->O) return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "conv2d", "b", b, "w", w, "b needs O elements");
        GPUDL__TRY(gpudl__same_device(ctx, "conv2d", "b", b, "w", w));
    }
    return GPUDL_OK;
}

/* The output columns ow whose input column ow*sw - pw + j*dw lies inside
   [0, W): [*lo, *hi). Hoisting the bounds test out of the copy loops lets
   im2col copy runs (a memcpy when the stride is 1). */
static void gpudl__valid_range(int64_t off, int64_t stride, int64_t W, int64_t Wo, int64_t *lo, int64_t *hi) {
    int64_t a = off >= 0 ? 0 : (-off + stride - 1) / stride;          /* first ow with ow*stride + off >= 0 */
    int64_t b = W - 1 - off < 0 ? 0 : (W - 1 - off) / stride + 1;     /* first ow with ow*stride + off >= W */
    *lo = GPUDL__MIN(a, Wo);
    *hi = GPUDL__MAX(*lo, GPUDL__MIN(b, Wo));
}

/* col (C*kh*kw, N*Ho*Wo) from x (N,C,H,W); zero outside the image. */
static void gpudl__im2col(const gpudl__convg *g, const float *x, float *col) {
    int64_t P = g->Ho * g->Wo, NP = g->N * P, rows = g->C * g->kh * g->kw, r;
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (rows * NP > 65536 && !gpudl__in_parallel()))
    for (r = 0; r < rows; r++) {
        int64_t c = r / (g->kh * g->kw), i = (r / g->kw) % g->kh, j = r % g->kw, n, oh, ow, lo, hi;
        int64_t woff = j * g->dw - g->pw;
        float *dst = col + r * NP;
        gpudl__valid_range(woff, g->sw, g->W, g->Wo, &lo, &hi);
        for (n = 0; n < g->N; n++) {
            const float *xp = x + (n * g->C + c) * g->H * g->W;
            for (oh = 0; oh < g->Ho; oh++, dst += g->Wo) {
                int64_t h = oh * g->sh - g->ph + i * g->dh;
                const float *src;
                if (h < 0 || h >= g->H) { memset(dst, 0, sizeof(float) * (size_t)g->Wo); continue; }
                src = xp + h * g->W + woff;
                for (ow = 0; ow < lo; ow++) dst[ow] = 0.0f;
                if (g->sw == 1) { GPUDL__SIMD for (ow = lo; ow < hi; ow++) dst[ow] = src[ow]; }   /* runs of Wo: no libc call */
                else for (ow = lo; ow < hi; ow++) dst[ow] = src[ow * g->sw];
                for (ow = hi; ow < g->Wo; ow++) dst[ow] = 0.0f;
            }
        }
    }
}

/* Stride-1 convolutions without im2col: "wide" columns. With one image
   zero-padded to xp (C, Hp, Wp) and the output computed Wp wide instead of
   Wo (columns ow >= Wo are garbage, dropped), row q = (c, i, j) of the
   im2col matrix is one contiguous run of xp, Ho*Wp long, starting at
   c*Hp*Wp + i*dh*Wp + j*dw: the GEMM's packing reads it where it lies.
   Against im2col (C*kh*kw*Ho*Wo floats written, read and packed per
   image) it costs Wp / Wo times the multiply-adds: LeNet-5's forward
   convolutions at batch 128 (32/28 and 14/10) went 0.76 -> 0.57 and
   1.02 -> 0.83 ms. The weight gradient stays on im2col: its wide form
   needs the columns transposed, and ran 10-20% slower. */
typedef struct gpudl__cwide {
    const gpudl__convg *g;
    const float *xp;       /* (C, Hp, Wp) and (kw-1)*dw zeros after: the last row's run reads past the image */
    int64_t Hp, Wp;
} gpudl__cwide;

static int gpudl__cw_fits(const gpudl__convg *g) {   /* stride 1, and at most 2x the work */
    int64_t Wp = g->W + 2 * g->pw;
    return g->sh == 1 && g->sw == 1 && Wp <= 2 * g->Wo;
}
static size_t gpudl__cw_floats(const gpudl__convg *g) {   /* xp with its tail */
    return (size_t)(g->C * (g->H + 2 * g->ph) * (g->W + 2 * g->pw) + (g->kw - 1) * g->dw + 16);
}
/* xp = x (one image) zero-padded */
static void gpudl__cw_pad(gpudl__cwide *s, const gpudl__convg *g, const float *x, float *xp) {
    int64_t c, h;
    s->g = g; s->xp = xp; s->Hp = g->H + 2 * g->ph; s->Wp = g->W + 2 * g->pw;
    memset(xp, 0, sizeof(float) * gpudl__cw_floats(g));
    for (c = 0; c < g->C; c++)
        for (h = 0; h < g->H; h++) {
            const float *src = x + (c * g->H + h) * g->W;
            float *dst = xp + (c * s->Hp + h + g->ph) * s->Wp + g->pw;
            int64_t w;
            GPUDL__SIMD for (w = 0; w < g->W; w++) dst[w] = src[w];
        }
}
static const float *gpudl__cw_row(const gpudl__cwide *s, int64_t q) {
    const gpudl__convg *g = s->g;
    int64_t c = q / (g->kh * g->kw), i = (q / g->kw) % g->kh, j = q % g->kw;
    return s->xp + c * s->Hp * s->Wp + i * g->dh * s->Wp + j * g->dw;
}
/* B = the wide columns (C*kh*kw, Ho*Wp): the forward's w @ B. */
static void gpudl__cw_pack(const void *u, int64_t k0, int64_t kc, int64_t n0, int nn, int nr, float *dst) {
    const gpudl__cwide *s = (const gpudl__cwide *)u;
    int64_t k;
    int j;
    for (k = k0; k < k0 + kc; k++, dst += nr) {
        const float *r = gpudl__cw_row(s, k) + n0;
        GPUDL__SIMD for (j = 0; j < nn; j++) dst[j] = r[j];
        for (j = nn; j < nr; j++) dst[j] = 0.0f;
    }
}
/* dx (N,C,H,W) = sum of col (C*kh*kw, N*Ho*Wo) entries back onto the image.
   One thread per (n, c) plane: no two threads write the same element. */
static void gpudl__col2im(const gpudl__convg *g, const float *col, float *dx) {
    int64_t P = g->Ho * g->Wo, NP = g->N * P, plane;
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (g->N * g->C * g->H * g->W > 16384 && !gpudl__in_parallel()))
    for (plane = 0; plane < g->N * g->C; plane++) {
        int64_t n = plane / g->C, c = plane % g->C, i, j, oh, ow, lo, hi;
        float *xp = dx + plane * g->H * g->W;
        memset(xp, 0, sizeof(float) * (size_t)(g->H * g->W));
        for (i = 0; i < g->kh; i++)
            for (j = 0; j < g->kw; j++) {
                const float *src = col + ((c * g->kh + i) * g->kw + j) * NP + n * P;
                int64_t woff = j * g->dw - g->pw;
                gpudl__valid_range(woff, g->sw, g->W, g->Wo, &lo, &hi);
                for (oh = 0; oh < g->Ho; oh++) {
                    int64_t h = oh * g->sh - g->ph + i * g->dh;
                    float *dst;
                    const float *s = src + oh * g->Wo;
                    if (h < 0 || h >= g->H) continue;
                    dst = xp + h * g->W + woff;
                    if (g->sw == 1) for (ow = lo; ow < hi; ow++) dst[ow] += s[ow];
                    else for (ow = lo; ow < hi; ow++) dst[ow * g->sw] += s[ow];
                }
            }
    }
}

#ifndef GPUDL_NO_CUDA
/* cuDNN: the descriptors and algorithms of each shape made once (the
   algorithms by heuristics, deterministic ones preferred) and kept in the
   context. */
#define GPUDL__CUDNN(ctx, expr) do { cudnnStatus_t gpudl__d_ = GPUDL__FAULT(2) ? CUDNN_STATUS_EXECUTION_FAILED : (expr); \
    if (gpudl__d_ != CUDNN_STATUS_SUCCESS) return gpudl__lib_fail((ctx), \
        gpudl__d_ == CUDNN_STATUS_ALLOC_FAILED ? GPUDL_ERR_OOM : GPUDL_ERR_CUDNN, #expr, \
        cudnnGetErrorString(gpudl__d_), __FILE__, __LINE__); } while (0)

/* Descriptors of one convolution shape. One convolution descriptor per
   direction (forward, backward data, backward filter): each carries the math
   type cuDNN's heuristic chose its algorithm with. */
enum { GPUDL__FWD = 0, GPUDL__BWD_DATA = 1, GPUDL__BWD_FILTER = 2 };
typedef struct gpudl__cudnn_conv {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv[3];
    cudnnTensorDescriptor_t bias;        /* (1, O, 1, 1) y's dtype, and a ReLU: made on first use by ... */
    cudnnActivationDescriptor_t relu;    /* ... cudnnConvolutionBiasActivationForward (the model's conv + ReLU) */
    int fused_refused;                   /* that call said NOT_SUPPORTED for this shape: the two-op path */
} gpudl__cudnn_conv;

typedef struct gpudl__conv_algo {
    gpudl__convg g;
    gpudl__cudnn_conv d;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    size_t ws_fwd, ws_bwd_data, ws_bwd_filter;
} gpudl__conv_algo;

static void gpudl__cudnn_conv_free(gpudl__cudnn_conv *d) {
    int i;
    if (d->x) cudnnDestroyTensorDescriptor(d->x);
    if (d->y) cudnnDestroyTensorDescriptor(d->y);
    if (d->w) cudnnDestroyFilterDescriptor(d->w);
    for (i = 0; i < 3; i++)
        if (d->conv[i]) cudnnDestroyConvolutionDescriptor(d->conv[i]);
    if (d->bias) cudnnDestroyTensorDescriptor(d->bias);
    if (d->relu) cudnnDestroyActivationDescriptor(d->relu);
    memset(d, 0, sizeof *d);
}

/* The math type asked for: 16-bit data with float accumulation (cuDNN's
   PSEUDO_HALF / PSEUDO_BFLOAT16 configurations) on tensor cores; FP32 strict
   (FMA only) unless the context allows TF32. */
static cudnnMathType_t gpudl__conv_math(const gpudl__convg *g) {
    return g->dtype != GPUDL_F32 ? CUDNN_TENSOR_OP_MATH : g->math == GPUDL_MATH_TF32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

static gpudl_status gpudl__cudnn_conv_make(gpudl_ctx *ctx, const gpudl__convg *g, gpudl__cudnn_conv *d) {
    cudnnDataType_t dt = g->dtype == GPUDL_F16 ? CUDNN_DATA_HALF : g->dtype == GPUDL_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    int i;
    memset(d, 0, sizeof *d);
    if (!ctx->cudnn) {
        GPUDL__CUDNN(ctx, cudnnCreate(&ctx->cudnn));
        GPUDL__CUDNN(ctx, cudnnSetStream(ctx->cudnn, ctx->stream));
    }
    GPUDL__CUDNN(ctx, cudnnCreateTensorDescriptor(&d->x));
    GPUDL__CUDNN(ctx, cudnnCreateTensorDescriptor(&d->y));
    GPUDL__CUDNN(ctx, cudnnCreateFilterDescriptor(&d->w));
    GPUDL__CUDNN(ctx, cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, dt, (int)g->N, (int)g->C, (int)g->H, (int)g->W));
    GPUDL__CUDNN(ctx, cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, dt, (int)g->N, (int)g->O, (int)g->Ho, (int)g->Wo));
    GPUDL__CUDNN(ctx, cudnnSetFilter4dDescriptor(d->w, dt, CUDNN_TENSOR_NCHW, (int)g->O, (int)g->C, (int)g->kh, (int)g->kw));
    for (i = 0; i < 3; i++) {
        GPUDL__CUDNN(ctx, cudnnCreateConvolutionDescriptor(&d->conv[i]));
        GPUDL__CUDNN(ctx, cudnnSetConvolution2dDescriptor(d->conv[i], (int)g->ph, (int)g->pw, (int)g->sh, (int)g->sw,
                                                          (int)g->dh, (int)g->dw, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        GPUDL__CUDNN(ctx, cudnnSetConvolutionMathType(d->conv[i], gpudl__conv_math(g)));
    }
    return GPUDL_OK;
}

static void gpudl__conv_cache_free(gpudl_ctx *ctx) {
    int i;
    for (i = 0; i < ctx->conv_cache_n; i++) gpudl__cudnn_conv_free(&ctx->conv_cache[i].d);
    GPUDL_FREE(ctx->conv_cache);
    ctx->conv_cache = NULL;
    ctx->conv_cache_n = ctx->conv_cache_cap = 0;
}

/* One of cuDNN's heuristic results, whichever direction. */
typedef struct gpudl__conv_cand { int algo; cudnnStatus_t status; size_t memory; cudnnDeterminism_t det; cudnnMathType_t math; } gpudl__conv_cand;

/* From cuDNN's results, best first: the first usable deterministic one, else
   the first usable one; -1 if none. Usable: it ran in the heuristic
   (SUCCESS), its workspace fits GPUDL_CUDNN_WORKSPACE_LIMIT, and its math
   type keeps the precision asked for (FP32 strict takes no tensor-op or
   conversion math; the heuristic's DEFAULT is then run as FMA). */
static int gpudl__conv_choose(gpudl__conv_cand *c, int n, cudnnMathType_t want) {
    int i, any = -1;
    for (i = 0; i < n; i++) {
        if (c[i].status != CUDNN_STATUS_SUCCESS || c[i].memory > (size_t)GPUDL_CUDNN_WORKSPACE_LIMIT) continue;
        if (want == CUDNN_FMA_MATH) {
            if (c[i].math == CUDNN_TENSOR_OP_MATH || c[i].math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
            c[i].math = CUDNN_FMA_MATH;
        }
        if (any < 0) any = i;
        if (c[i].det == CUDNN_DETERMINISTIC) return i;
    }
    return any;
}

/* The algorithms for a new shape, with its descriptors in a->d: cuDNN's
   heuristics (every result, not a fixed few), the choice above, and each
   direction's descriptor set to the math type its algorithm was chosen with
   (cuDNN picks kernels by algorithm and math type together). */
static gpudl_status gpudl__conv_pick(gpudl_ctx *ctx, gpudl__conv_algo *a) {
    enum { MAXC = 16 };
    cudnnConvolutionFwdAlgoPerf_t fp[MAXC];
    cudnnConvolutionBwdDataAlgoPerf_t dp[MAXC];
    cudnnConvolutionBwdFilterAlgoPerf_t wp[MAXC];
    gpudl__conv_cand c[3][MAXC];
    const char *dir_name[3] = {"forward", "backward data", "backward filter"};
    const gpudl__cudnn_conv *d = &a->d;
    cudnnMathType_t want = gpudl__conv_math(&a->g);
    int i, k, n[3], max[3], pick[3];
    GPUDL__TRY(gpudl__cudnn_conv_make(ctx, &a->g, &a->d));
    GPUDL__CUDNN(ctx, cudnnGetConvolutionForwardAlgorithmMaxCount(ctx->cudnn, &max[0]));
    GPUDL__CUDNN(ctx, cudnnGetConvolutionBackwardDataAlgorithmMaxCount(ctx->cudnn, &max[1]));
    GPUDL__CUDNN(ctx, cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(ctx->cudnn, &max[2]));
    for (k = 0; k < 3; k++) max[k] = GPUDL__MIN(max[k], MAXC);
    GPUDL__CUDNN(ctx, cudnnGetConvolutionForwardAlgorithm_v7(ctx->cudnn, d->x, d->w, d->conv[0], d->y, max[0], &n[0], fp));
    GPUDL__CUDNN(ctx, cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx->cudnn, d->w, d->y, d->conv[1], d->x, max[1], &n[1], dp));
    GPUDL__CUDNN(ctx, cudnnGetConvolutionBackwardFilterAlgorithm_v7(ctx->cudnn, d->x, d->y, d->conv[2], d->w, max[2], &n[2], wp));
    for (i = 0; i < n[0]; i++) { gpudl__conv_cand t = {(int)fp[i].algo, fp[i].status, fp[i].memory, fp[i].determinism, fp[i].mathType}; c[0][i] = t; }
    for (i = 0; i < n[1]; i++) { gpudl__conv_cand t = {(int)dp[i].algo, dp[i].status, dp[i].memory, dp[i].determinism, dp[i].mathType}; c[1][i] = t; }
    for (i = 0; i < n[2]; i++) { gpudl__conv_cand t = {(int)wp[i].algo, wp[i].status, wp[i].memory, wp[i].determinism, wp[i].mathType}; c[2][i] = t; }
    for (k = 0; k < 3; k++) {
        pick[k] = gpudl__conv_choose(c[k], n[k], want);
        if (pick[k] < 0)
            return GPUDL__ERR(ctx, GPUDL_ERR_CUDNN,
                              "cuDNN has no usable %s algorithm for a %lldx%lldx%lldx%lld convolution with %lld %lldx%lld "
                              "filters (%s, %d candidates; workspace limit %lld bytes)", dir_name[k], (long long)a->g.N,
                              (long long)a->g.C, (long long)a->g.H, (long long)a->g.W, (long long)a->g.O, (long long)a->g.kh,
                              (long long)a->g.kw, gpudl_dtype_name((gpudl_dtype)a->g.dtype), n[k],
                              (long long)GPUDL_CUDNN_WORKSPACE_LIMIT);
        GPUDL__CUDNN(ctx, cudnnSetConvolutionMathType(d->conv[k], c[k][pick[k]].math));
    }
    a->fwd = (cudnnConvolutionFwdAlgo_t)c[0][pick[0]].algo;
    a->bwd_data = (cudnnConvolutionBwdDataAlgo_t)c[1][pick[1]].algo;
    a->bwd_filter = (cudnnConvolutionBwdFilterAlgo_t)c[2][pick[2]].algo;
    /* the exact workspace sizes for the chosen algorithms and math types */
    GPUDL__CUDNN(ctx, cudnnGetConvolutionForwardWorkspaceSize(ctx->cudnn, d->x, d->w, d->conv[0], d->y, a->fwd, &a->ws_fwd));
    GPUDL__CUDNN(ctx, cudnnGetConvolutionBackwardDataWorkspaceSize(ctx->cudnn, d->w, d->y, d->conv[1], d->x, a->bwd_data,
                                                                   &a->ws_bwd_data));
    GPUDL__CUDNN(ctx, cudnnGetConvolutionBackwardFilterWorkspaceSize(ctx->cudnn, d->x, d->y, d->conv[2], d->w, a->bwd_filter,
                                                                     &a->ws_bwd_filter));
    return GPUDL_OK;
}

/* The cache entry of a shape: made on first use. *out stays valid until the next call. */
static gpudl_status gpudl__conv_algos(gpudl_ctx *ctx, const gpudl__convg *g, gpudl__conv_algo **out) {
    gpudl__conv_algo a;
    gpudl_status s;
    int i;
    for (i = 0; i < ctx->conv_cache_n; i++)
        if (!memcmp(&ctx->conv_cache[i].g, g, sizeof *g)) { *out = &ctx->conv_cache[i]; return GPUDL_OK; }
    memset(&a, 0, sizeof a);
    a.g = *g;
    s = gpudl__conv_pick(ctx, &a);
    if (s != GPUDL_OK) { gpudl__cudnn_conv_free(&a.d); return s; }
    if (ctx->conv_cache_n == ctx->conv_cache_cap) {
        int cap = ctx->conv_cache_cap ? 2 * ctx->conv_cache_cap : 16;
        gpudl__conv_algo *c = (gpudl__conv_algo *)GPUDL_REALLOC(ctx->conv_cache, sizeof *c * (size_t)cap);
        if (!c) { gpudl__cudnn_conv_free(&a.d); return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "conv algorithm cache"); }
        ctx->conv_cache = c;
        ctx->conv_cache_cap = cap;
    }
    ctx->conv_cache[ctx->conv_cache_n] = a;
    *out = &ctx->conv_cache[ctx->conv_cache_n++];
    return GPUDL_OK;
}
#endif

#ifndef GPUDL_NO_CUDA
/* y = ReLU(conv(x, w) + b) in one cuDNN call (the model's conv + ReLU on
   the GPU: the pre-activation is not stored; ReLU's backward reads y).
   *done = 0 when cuDNN does not support it for this shape (nothing was
   written: the caller takes the convolution, then gpudl's bias+ReLU kernel). */
static gpudl_status gpudl__conv_bias_relu(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *x, const gpudl_tensor *w,
                                          const gpudl_tensor *b, const gpudl_conv2d_desc *desc, int *done) {
    gpudl__convg g;
    gpudl__conv_algo *a;
    void *ws = NULL;
    float one = 1.0f, zero = 0.0f;
    cudnnStatus_t cs;
    *done = 0;
    GPUDL__TRY(gpudl__conv_check(ctx, y, x, w, b, desc, &g));
    if (GPUDL__OVR(ctx, x, conv2d_forward)) return GPUDL_OK;
    GPUDL__TRY(gpudl__conv_algos(ctx, &g, &a));
    if (a->d.fused_refused) return GPUDL_OK;
    if (!a->d.bias) {
        GPUDL__CUDNN(ctx, cudnnCreateTensorDescriptor(&a->d.bias));
        GPUDL__CUDNN(ctx, cudnnSetTensor4dDescriptor(a->d.bias, CUDNN_TENSOR_NCHW,
                                                     y->dtype == GPUDL_F16 ? CUDNN_DATA_HALF : y->dtype == GPUDL_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT,
                                                     1, (int)g.O, 1, 1));
        GPUDL__CUDNN(ctx, cudnnCreateActivationDescriptor(&a->d.relu));
        GPUDL__CUDNN(ctx, cudnnSetActivationDescriptor(a->d.relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
    }
    if (a->ws_fwd) GPUDL__TRY(gpudl__dev_ws(ctx, a->ws_fwd, &ws));
    cs = GPUDL__FAULT(2) ? CUDNN_STATUS_EXECUTION_FAILED :
         cudnnConvolutionBiasActivationForward(ctx->cudnn, &one, a->d.x, x->data, a->d.w, w->data, a->d.conv[GPUDL__FWD], a->fwd,
                                               ws, a->ws_fwd, &zero, a->d.y, y->data, a->d.bias, b->data, a->d.relu, a->d.y,
                                               y->data);
    if (cs == CUDNN_STATUS_NOT_SUPPORTED) { a->d.fused_refused = 1; return GPUDL_OK; }
    if (cs != CUDNN_STATUS_SUCCESS)
        return gpudl__lib_fail(ctx, GPUDL_ERR_CUDNN, "cudnnConvolutionBiasActivationForward", cudnnGetErrorString(cs), __FILE__,
                               __LINE__);
    if (ctx->sync_debug) GPUDL__CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    *done = 1;
    return GPUDL_OK;
}
#endif

GPUDL__DEF gpudl_status gpudl_conv2d_forward(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *x, const gpudl_tensor *w,
                                             const gpudl_tensor *b, const gpudl_conv2d_desc *desc) {
    gpudl__convg g;
    int64_t P, NP, CKK, n, o;
    float *col = NULL, *yt = NULL;
    int nt;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__conv_check(ctx, y, x, w, b, desc, &g));
    P = g.Ho * g.Wo; NP = g.N * P; CKK = g.C * g.kh * g.kw;
    if (GPUDL__OVR(ctx, x, conv2d_forward)) {
        gpudl_conv_shape cs;
        cs.N = g.N; cs.C = g.C; cs.H = g.H; cs.W = g.W; cs.O = g.O; cs.k_h = g.kh; cs.k_w = g.kw; cs.Ho = g.Ho; cs.Wo = g.Wo;
        cs.stride_h = g.sh; cs.stride_w = g.sw; cs.pad_h = g.ph; cs.pad_w = g.pw; cs.dil_h = g.dh; cs.dil_w = g.dw;
        GPUDL__OVERRIDE(ctx, x, conv2d_forward, (float *)y->data, (const float *)x->data, (const float *)w->data,
                        b ? (const float *)b->data : NULL, &cs);
    }
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(x)) {
        gpudl__conv_algo *a;
        void *ws = NULL;
        float one = 1.0f, zero = 0.0f;
        cudnnStatus_t cs;
        GPUDL__TRY(gpudl__conv_algos(ctx, &g, &a));
        if (a->ws_fwd) GPUDL__TRY(gpudl__dev_ws(ctx, a->ws_fwd, &ws));
        cs = cudnnConvolutionForward(ctx->cudnn, &one, a->d.x, x->data, a->d.w, w->data, a->d.conv[GPUDL__FWD], a->fwd, ws, a->ws_fwd,
                                     &zero, a->d.y, y->data);
        if (cs != CUDNN_STATUS_SUCCESS)
            return gpudl__lib_fail(ctx, GPUDL_ERR_CUDNN, "cudnnConvolutionForward", cudnnGetErrorString(cs), __FILE__, __LINE__);
        return b ? gpudl__bias_add(ctx, y, b, g.O, P) : GPUDL_OK;
    }
#endif
    if (x->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *yw = gpudl__widen(&W, y, 1),
                     *xw = gpudl__widen(&W, x, 0), *ww = gpudl__widen(&W, w, 0), *bw = gpudl__widen(&W, b, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_conv2d_forward(ctx, yw, xw, ww, bw, desc));
    }
    nt = gpudl__num_threads(ctx);
    if (g.N >= gpudl__num_threads_max(ctx)) {   /* the path chosen by the thread setting, not the load */
        /* One image at a time per thread: its columns (CKK x P floats) stay
           in cache from im2col to the GEMM, which writes y's (O, P) plane
           in place. The whole-batch path below streams CKK x N*P floats
           through memory three times and transposes the result; for the
           demo CNN's second convolution that is 40 MB per step. */
        gpudl__convg g1 = g;
        int fails = 0;
        g1.N = 1;
        if (gpudl__cw_fits(&g)) {   /* stride 1: wide columns, read in place (gpudl__cwide) */
            int64_t PW = g.Ho * (g.W + 2 * g.pw);
            size_t per = gpudl__cw_floats(&g) + (size_t)(g.O * PW) + gpudl__sgemm_ws(ctx, PW);
            GPUDL__TRY(gpudl__host_ws(ctx, sizeof(float) * per * (size_t)nt, (void **)&col));
            GPUDL__OMP(omp parallel for num_threads(nt) schedule(static) if (nt > 1))
            for (n = 0; n < g.N; n++) {
                float *xp = col + (size_t)gpudl__tid() * per, *yw = xp + gpudl__cw_floats(&g), *yn = (float *)y->data + n * g.O * P;
                gpudl__cwide cw;
                gpudl__bsrc bs;
                int64_t oh, ow;
                gpudl__cw_pad(&cw, &g, (const float *)x->data + n * g.C * g.H * g.W, xp);
                bs.pack = gpudl__cw_pack; bs.u = &cw;
                gpudl__sgemm_from(ctx, g.O, PW, CKK, 1.0f, (const float *)w->data, CKK, 1, &bs, 0.0f, yw, PW, yw + g.O * PW);
                for (o = 0; o < g.O; o++)   /* the Wo valid columns of each row, and the bias */
                    for (oh = 0; oh < g.Ho; oh++) {
                        const float *src = yw + o * PW + oh * cw.Wp;
                        float *dst = yn + (o * g.Ho + oh) * g.Wo;
                        float bv = b ? ((const float *)b->data)[o] : 0.0f;
                        if (b) { GPUDL__SIMD for (ow = 0; ow < g.Wo; ow++) dst[ow] = src[ow] + bv; }
                        else { GPUDL__SIMD for (ow = 0; ow < g.Wo; ow++) dst[ow] = src[ow]; }   /* no + 0: -0 stays -0 */
                    }
            }
            return GPUDL_OK;
        }
        GPUDL__TRY(gpudl__host_ws(ctx, sizeof(float) * (size_t)(CKK * P) * (size_t)nt, (void **)&col));
        GPUDL__OMP(omp parallel for num_threads(nt) schedule(static) reduction(+:fails) if (nt > 1))
        for (n = 0; n < g.N; n++) {
            float *ct = col + (size_t)gpudl__tid() * (size_t)(CKK * P), *yn = (float *)y->data + n * g.O * P;
            gpudl__im2col(&g1, (const float *)x->data + n * g.C * g.H * g.W, ct);
            if (fails || gpudl__sgemm(ctx, 1, g.O, P, CKK, 1.0f, (const float *)w->data, CKK, 1, ct, P, 1, 0.0f, yn, P)) {
                fails++;
                continue;
            }
            if (b) gpudl__bias_rows(yn, (const float *)b->data, 1, g.O, P);
        }
        return fails ? GPUDL_ERR_OOM : GPUDL_OK;   /* the only way sgemm fails; the message is recorded */
    }
    GPUDL__TRY(gpudl__host_ws(ctx, sizeof(float) * (size_t)(CKK * NP + g.O * NP), (void **)&col));
    yt = col + CKK * NP;
    gpudl__im2col(&g, (const float *)x->data, col);
    GPUDL__TRY(gpudl__sgemm(ctx, gpudl__num_threads(ctx), g.O, NP, CKK, 1.0f, (const float *)w->data, CKK, 1, col, NP, 1,
                            0.0f, yt, NP));   /* yt (O, N*P) = w (O, CKK) @ col */
    GPUDL__OMP(omp parallel for private(o) num_threads(gpudl__team()) if (g.N * g.O * P > 65536))
    for (n = 0; n < g.N; n++)   /* (O, N, P) -> (N, O, P) */
        for (o = 0; o < g.O; o++) memcpy((float *)y->data + (n * g.O + o) * P, yt + o * NP + n * P, sizeof(float) * (size_t)P);
    if (b) gpudl__bias_rows((float *)y->data, (const float *)b->data, g.N, g.O, P);
    return GPUDL_OK;
}

/* overwrite (the GPU only: the model's first write of a step's gradients):
   dw and db are written, not added to. */
static gpudl_status gpudl__conv2d_backward(gpudl_ctx *ctx, gpudl_tensor *dx, gpudl_tensor *dw, gpudl_tensor *db,
                                           const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *w,
                                           const gpudl_conv2d_desc *desc, int overwrite) {
    gpudl__convg g;
    int64_t P, NP, CKK, n, o;
    float *col = NULL, *dyt = NULL;
    int nt, ntmax;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__conv_check(ctx, dy, x, w, NULL, desc, &g));
    if (dx) GPUDL__TRY(gpudl__check_dt(ctx, dx, "dx", x->dtype));
    if (dw) GPUDL__TRY(gpudl__check_f32(ctx, dw, "dw"));   /* weight gradients are f32 whatever the activations */
    if (db) GPUDL__TRY(gpudl__check_f32(ctx, db, "db"));
    if (dx && (!gpudl__same_shape(dx, x) || dx->device != x->device))
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "conv2d backward", "dx", dx, "x", x, "dx must be shaped like x");
    if (dw && (!gpudl__same_shape(dw, w) || dw->device != w->device))
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "conv2d backward", "dw", dw, "w", w, "dw must be shaped like w");
    if (db && (gpudl_tensor_numel(db) != g.O || db->device != w->device))
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "conv2d backward", "db", db, "w", w, "db needs O elements");
    P = g.Ho * g.Wo; NP = g.N * P; CKK = g.C * g.kh * g.kw;
#ifndef GPUDL_NO_CUDA
    if (db && overwrite && GPUDL__ON_GPU(dy))
        GPUDL__LAUNCH(ctx, gpudl_k_channel_sum(ctx->stream, (float *)db->data, dy->data, (int)dy->dtype, g.N, g.O, P,
                                               ctx->scratch, 1, ctx->tickets));
    else
#endif
    if (db) GPUDL__TRY(gpudl__channel_sum_acc(ctx, db, dy, g.N, g.O, P));
    if (!dx && !dw) return GPUDL_OK;
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(x)) {
        gpudl__conv_algo *a;
        gpudl_status s;
        void *ws = NULL;
        float one = 1.0f, zero = 0.0f;
        cudnnStatus_t cs = CUDNN_STATUS_SUCCESS;
        size_t wsb = 0, dw16b = x->dtype != GPUDL_F32 && dw ? (size_t)gpudl_tensor_numel(w) * 2 : 0;
        void *dw16 = NULL;
        const gpudl__cudnn_conv *d;
        GPUDL__TRY(gpudl__conv_algos(ctx, &g, &a));
        d = &a->d;
        wsb = (GPUDL__MAX(a->ws_bwd_data, a->ws_bwd_filter) + 255) / 256 * 256;
        s = gpudl__dev_ws(ctx, GPUDL__MAX(wsb + dw16b, (size_t)1), &ws);
        /* cuDNN wants dw in x's dtype: 16-bit activations get a 16-bit dw
           after the workspace, added into the f32 gradient */
        if (s == GPUDL_OK && dw && dw16b) {
            dw16 = (char *)ws + wsb;
            cs = cudnnConvolutionBackwardFilter(ctx->cudnn, &one, d->x, x->data, d->y, dy->data, d->conv[GPUDL__BWD_FILTER], a->bwd_filter, ws,
                                                a->ws_bwd_filter, &zero, d->w, dw16);
            if (cs == CUDNN_STATUS_SUCCESS && overwrite)
                s = gpudl__launched(ctx, GPUDL__FAULT(1) ? (int)cudaErrorLaunchOutOfResources :
                                    gpudl_k_cast(ctx->stream, dw->data, GPUDL_F32, dw16, (int)x->dtype, gpudl_tensor_numel(w)),
                                    "gpudl_k_cast", __FILE__, __LINE__);
            else if (cs == CUDNN_STATUS_SUCCESS)
                s = gpudl__launched(ctx, GPUDL__FAULT(1) ? (int)cudaErrorLaunchOutOfResources :
                                    gpudl_k_acc_f32(ctx->stream, (float *)dw->data, dw16, (int)x->dtype, gpudl_tensor_numel(w)),
                                    "gpudl_k_acc_f32", __FILE__, __LINE__);
        } else if (s == GPUDL_OK && dw)
            cs = cudnnConvolutionBackwardFilter(ctx->cudnn, &one, d->x, x->data, d->y, dy->data, d->conv[GPUDL__BWD_FILTER], a->bwd_filter, ws,
                                                a->ws_bwd_filter, overwrite ? &zero : &one, d->w, dw->data);   /* beta 1: accumulate */
        if (s == GPUDL_OK && cs == CUDNN_STATUS_SUCCESS && dx)
            cs = cudnnConvolutionBackwardData(ctx->cudnn, &one, d->w, w->data, d->y, dy->data, d->conv[GPUDL__BWD_DATA], a->bwd_data, ws,
                                              a->ws_bwd_data, &zero, d->x, dx->data);
        if (s == GPUDL_OK && cs != CUDNN_STATUS_SUCCESS)
            s = gpudl__lib_fail(ctx, GPUDL_ERR_CUDNN, dx ? "cudnnConvolutionBackwardData/Filter" : "cudnnConvolutionBackwardFilter",
                                cudnnGetErrorString(cs), __FILE__, __LINE__);
        return s;
    }
#endif
    if (x->dtype != GPUDL_F32) {   /* db is done above */
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *dxw = gpudl__widen(&W, dx, 1), *dyw = gpudl__widen(&W, dy, 0),
                     *xw = gpudl__widen(&W, x, 0), *ww = gpudl__widen(&W, w, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl__conv2d_backward(ctx, dxw, dw, NULL, dyw, xw, ww, desc, overwrite));
    }
    nt = gpudl__num_threads(ctx);
    ntmax = gpudl__num_threads_max(ctx);
    if (g.N >= ntmax) {
        /* One image at a time per thread, as in the forward. The images go
           in ntmax groups, in order, and each group's dw gathers into a
           partial of its own, added to dw in group order at the end: the
           groups follow the thread setting, not how many threads run now
           (fewer on a busy machine), so the bits are the same either way. */
        gpudl__convg g1 = g;
        int fails = 0, s;
        size_t per = (size_t)(CKK * P), pws = dw ? (size_t)(g.O * CKK) : 0;
        float *pw0;
        g1.N = 1;
        GPUDL__TRY(gpudl__host_ws(ctx, sizeof(float) * (per * (size_t)nt + pws * (size_t)ntmax), (void **)&col));
        pw0 = col + per * (size_t)nt;
        if (dw) memset(pw0, 0, sizeof(float) * pws * (size_t)ntmax);
        GPUDL__OMP(omp parallel for num_threads(nt) schedule(static) reduction(+:fails) if (nt > 1))
        for (s = 0; s < ntmax; s++) {
            float *ct = col + (size_t)gpudl__tid() * per, *pw = pw0 + (size_t)s * pws;
            int64_t i;
            for (i = g.N * s / ntmax; i < g.N * (s + 1) / ntmax && !fails; i++) {
                const float *dyn = (const float *)dy->data + i * g.O * P;
                if (dw) {   /* pw (O, CKK) += dy_i (O, P) @ col_i^T */
                    gpudl__im2col(&g1, (const float *)x->data + i * g.C * g.H * g.W, ct);
                    if (gpudl__sgemm(ctx, 1, g.O, CKK, P, 1.0f, dyn, P, 1, ct, 1, P, 1.0f, pw, CKK)) { fails++; continue; }
                }
                if (dx) {   /* dcol_i (CKK, P) = w^T @ dy_i, folded back onto dx_i */
                    if (gpudl__sgemm(ctx, 1, CKK, P, g.O, 1.0f, (const float *)w->data, 1, CKK, dyn, P, 1, 0.0f, ct, P)) {
                        fails++;
                        continue;
                    }
                    gpudl__col2im(&g1, ct, (float *)dx->data + i * g.C * g.H * g.W);
                }
            }
        }
        if (fails) return GPUDL_ERR_OOM;   /* the only way sgemm fails; the message is recorded */
        if (dw)
            for (s = 0; s < ntmax; s++) {
                const float *pw = pw0 + (size_t)s * pws;
                float *d = (float *)dw->data;
                GPUDL__EACH(n, g.O * CKK, 0, d[n] += pw[n]);
            }
        return GPUDL_OK;
    }
    GPUDL__TRY(gpudl__host_ws(ctx, sizeof(float) * (size_t)(CKK * NP + g.O * NP), (void **)&col));
    dyt = col + CKK * NP;
    GPUDL__OMP(omp parallel for private(o) num_threads(gpudl__team()) if (g.N * g.O * P > 65536))
    for (n = 0; n < g.N; n++)       /* dyt (O, N*P) from dy (N, O, P) */
        for (o = 0; o < g.O; o++)
            memcpy(dyt + o * NP + n * P, (const float *)dy->data + (n * g.O + o) * P, sizeof(float) * (size_t)P);
    if (dw) {
        gpudl__im2col(&g, (const float *)x->data, col);
        /* dw (O, CKK) += dyt (O, NP) @ col^T */
        GPUDL__TRY(gpudl__sgemm(ctx, gpudl__num_threads(ctx), g.O, CKK, NP, 1.0f, dyt, NP, 1, col, 1, NP, 1.0f,
                                (float *)dw->data, CKK));
    }
    if (dx) {
        /* dcol (CKK, NP) = w^T @ dyt, then folded back onto dx */
        GPUDL__TRY(gpudl__sgemm(ctx, gpudl__num_threads(ctx), CKK, NP, g.O, 1.0f, (const float *)w->data, 1, CKK, dyt, NP, 1,
                                0.0f, col, NP));
        gpudl__col2im(&g, col, (float *)dx->data);
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_conv2d_backward(gpudl_ctx *ctx, gpudl_tensor *dx, gpudl_tensor *dw, gpudl_tensor *db,
                                              const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *w,
                                              const gpudl_conv2d_desc *desc) {
    return gpudl__conv2d_backward(ctx, dx, dw, db, dy, x, w, desc, 0);
}

/* >>pool ------------------------------------------------------------------ */
typedef struct gpudl__poolg { int kind; int64_t NC, H, W, Ho, Wo, kh, kw, sh, sw, ph, pw; } gpudl__poolg;

static gpudl_status gpudl__pool_check(gpudl_ctx *ctx, const gpudl_tensor *y, const gpudl_tensor *x, const gpudl_pool2d_desc *d,
                                      gpudl__poolg *g) {
    GPUDL__TRY(gpudl__check_act(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_dt(ctx, y, "y", x->dtype));
    if (!d || (d->kind != GPUDL_POOL_MAX && d->kind != GPUDL_POOL_AVG) || d->k_h < 1 || d->k_w < 1 || d->stride_h < 0 ||
        d->stride_w < 0 || d->pad_h < 0 || d->pad_w < 0 || 2 * d->pad_h > d->k_h || 2 * d->pad_w > d->k_w)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "pool2d: need a desc with kind MAX or AVG, kernel >= 1, stride >= 0 "
                          "and padding at most half the kernel");
    if (x->ndim != 4) return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "pool2d", "x", x, "y", y, "x must be (N,C,H,W)");
    g->kind = (int)d->kind;
    g->NC = x->shape[0] * x->shape[1]; g->H = x->shape[2]; g->W = x->shape[3];
    g->kh = d->k_h; g->kw = d->k_w; g->ph = d->pad_h; g->pw = d->pad_w;
    g->sh = d->stride_h ? d->stride_h : d->k_h; g->sw = d->stride_w ? d->stride_w : d->k_w;
    if (g->H + 2 * g->ph < g->kh || g->W + 2 * g->pw < g->kw)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "pool2d", "x", x, "y", y, "the window is larger than the padded input");
    g->Ho = (g->H + 2 * g->ph - g->kh) / g->sh + 1;
    g->Wo = (g->W + 2 * g->pw - g->kw) / g->sw + 1;
    if (y->ndim != 4 || y->shape[0] != x->shape[0] || y->shape[1] != x->shape[1] || y->shape[2] != g->Ho || y->shape[3] != g->Wo)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "pool2d", "y", y, "x", x, "y must be (N, C, Ho, Wo) for this window");
    return gpudl__same_device(ctx, "pool2d", "y", y, "x", x);
}

/* The common 2x2, stride 2, no padding pool on whole planes (H = 2 Ho,
   W = 2 Wo), on the CPU: the same values as gpudl__pool_window (first
   maximum on ties, NaN wins, the same summation order) without its
   per-element bounds tests. 2 ms -> 0.5 ms per call on the demo CNN's
   first pool (128 x 16 planes of 28 x 28). */
/* The geometry as an override of max pooling sees it. */
static gpudl_pool_shape gpudl__pool_shape(const gpudl__poolg *g) {
    gpudl_pool_shape p;
    p.NC = g->NC; p.H = g->H; p.W = g->W; p.Ho = g->Ho; p.Wo = g->Wo; p.k_h = g->kh; p.k_w = g->kw;
    p.stride_h = g->sh; p.stride_w = g->sw; p.pad_h = g->ph; p.pad_w = g->pw;
    return p;
}

static int gpudl__pool_is_2x2(const gpudl__poolg *g) {
    return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0 && g->H == 2 * g->Ho &&
           g->W == 2 * g->Wo;
}

/* Index (0..3) of the window's maximum in gpudl__pool_window's sense. */
static inline int gpudl__max4_arg(const float *v) {
    int a = 0, k;
    for (k = 1; k < 4; k++)
        if (gpudl__max_replaces(v[k], v[a])) a = k;
    return a;
}

#ifdef GPUDL__X86_SIMD
/* SSE2 (every x86-64), four windows at a time: the windows' 4 values as
   even/odd lanes of two rows, and the sequential first-maximum / NaN-wins
   choice as masks. sel[k] is all ones in the lanes whose maximum is v[k]. */
static inline void gpudl__max4_sse(const float *r0, const float *r1, __m128 *m, __m128 sel[4]) {
    __m128 a = _mm_loadu_ps(r0), b = _mm_loadu_ps(r0 + 4), c = _mm_loadu_ps(r1), d = _mm_loadu_ps(r1 + 4), v[4];
    int k, j;
    v[0] = _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); v[1] = _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    v[2] = _mm_shuffle_ps(c, d, _MM_SHUFFLE(2, 0, 2, 0)); v[3] = _mm_shuffle_ps(c, d, _MM_SHUFFLE(3, 1, 3, 1));
    *m = v[0];
    sel[0] = _mm_castsi128_ps(_mm_set1_epi32(-1));
    for (k = 1; k < 4; k++) {
        __m128 t = _mm_or_ps(_mm_cmpgt_ps(v[k], *m), _mm_and_ps(_mm_cmpunord_ps(v[k], v[k]), _mm_cmpord_ps(*m, *m)));
        *m = _mm_or_ps(_mm_and_ps(t, v[k]), _mm_andnot_ps(t, *m));
        for (j = 0; j < k; j++) sel[j] = _mm_andnot_ps(t, sel[j]);
        sel[k] = t;
    }
}
#endif

static void gpudl__pool2x2_plane(int kind, const float *xp, float *yp, const gpudl__poolg *g) {
    int64_t oh, ow;
    for (oh = 0; oh < g->Ho; oh++) {
        const float *r0 = xp + 2 * oh * g->W, *r1 = r0 + g->W;
        float *yr = yp + oh * g->Wo;
        ow = 0;
#ifdef GPUDL__X86_SIMD
        if (kind == GPUDL_POOL_MAX)
            for (; ow + 4 <= g->Wo; ow += 4) {
                __m128 m, sel[4];
                gpudl__max4_sse(r0 + 2 * ow, r1 + 2 * ow, &m, sel);
                _mm_storeu_ps(yr + ow, m);
            }
#endif
        for (; ow < g->Wo; ow++) {
            float v[4];
            v[0] = r0[2 * ow]; v[1] = r0[2 * ow + 1]; v[2] = r1[2 * ow]; v[3] = r1[2 * ow + 1];
            yr[ow] = kind == GPUDL_POOL_MAX ? v[gpudl__max4_arg(v)] : ((((0.0f + v[0]) + v[1]) + v[2]) + v[3]) / 4.0f;
        }
    }
}

static void gpudl__pool2x2_plane_bwd(int kind, const float *xp, const float *dyp, float *dxp, const gpudl__poolg *g) {
    int64_t oh, ow;
    for (oh = 0; oh < g->Ho; oh++) {
        const float *r0 = xp + 2 * oh * g->W, *r1 = r0 + g->W, *dyr = dyp + oh * g->Wo;
        float *d0 = dxp + 2 * oh * g->W, *d1 = d0 + g->W;
        ow = 0;
#ifdef GPUDL__X86_SIMD
        if (kind == GPUDL_POOL_MAX)
            for (; ow + 4 <= g->Wo; ow += 4) {
                __m128 m, sel[4], d = _mm_add_ps(_mm_setzero_ps(), _mm_loadu_ps(dyr + ow)), o[4];
                int k;
                gpudl__max4_sse(r0 + 2 * ow, r1 + 2 * ow, &m, sel);
                for (k = 0; k < 4; k++) o[k] = _mm_and_ps(sel[k], d);
                _mm_storeu_ps(d0 + 2 * ow, _mm_unpacklo_ps(o[0], o[1])); _mm_storeu_ps(d0 + 2 * ow + 4, _mm_unpackhi_ps(o[0], o[1]));
                _mm_storeu_ps(d1 + 2 * ow, _mm_unpacklo_ps(o[2], o[3])); _mm_storeu_ps(d1 + 2 * ow + 4, _mm_unpackhi_ps(o[2], o[3]));
            }
#endif
        for (; ow < g->Wo; ow++) {
            float v[4], o[4] = {0.0f, 0.0f, 0.0f, 0.0f}, d = dyr[ow];
            if (kind == GPUDL_POOL_MAX) {
                v[0] = r0[2 * ow]; v[1] = r0[2 * ow + 1]; v[2] = r1[2 * ow]; v[3] = r1[2 * ow + 1];
                o[gpudl__max4_arg(v)] = 0.0f + d;   /* 0 + d, as the general path's += (-0 becomes +0) */
            } else {
                o[0] = o[1] = o[2] = o[3] = 0.0f + d / 4.0f;
            }
            d0[2 * ow] = o[0]; d0[2 * ow + 1] = o[1]; d1[2 * ow] = o[2]; d1[2 * ow + 1] = o[3];
        }
    }
}

GPUDL__DEF gpudl_status gpudl_pool2d_forward(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *x, const gpudl_pool2d_desc *desc) {
    gpudl__poolg g;
    int64_t i;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__pool_check(ctx, y, x, desc, &g));
    if (g.kind == GPUDL_POOL_MAX && GPUDL__OVR(ctx, x, maxpool_forward)) {
        gpudl_pool_shape ps = gpudl__pool_shape(&g);
        GPUDL__OVERRIDE(ctx, x, maxpool_forward, (float *)y->data, (const float *)x->data, &ps);
    }
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(x)) {
        GPUDL__LAUNCH(ctx, gpudl_k_pool_fwd(ctx->stream, g.kind, y->data, x->data, (int)x->dtype, g.NC, g.H, g.W, g.Ho, g.Wo,
                                            g.kh, g.kw, g.sh, g.sw, g.ph, g.pw));
        return GPUDL_OK;
    }
#endif
    if (x->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *yw = gpudl__widen(&W, y, 1), *xw = gpudl__widen(&W, x, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_pool2d_forward(ctx, yw, xw, desc));
    }
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (g.NC * g.Ho * g.Wo > 16384))
    for (i = 0; i < g.NC; i++) {
        const float *xp = (const float *)x->data + i * g.H * g.W;
        float *yp = (float *)y->data + i * g.Ho * g.Wo;
        int64_t oh, ow, arg;
        if (gpudl__pool_is_2x2(&g)) { gpudl__pool2x2_plane(g.kind, xp, yp, &g); continue; }
        for (oh = 0; oh < g.Ho; oh++)
            for (ow = 0; ow < g.Wo; ow++)
                yp[oh * g.Wo + ow] = gpudl__pool_window(g.kind, xp, GPUDL_F32, 0, g.H, g.W, oh, ow, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, &arg);
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_pool2d_backward(gpudl_ctx *ctx, gpudl_tensor *dx, const gpudl_tensor *dy, const gpudl_tensor *x,
                                              const gpudl_pool2d_desc *desc) {
    gpudl__poolg g;
    int64_t i;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__pool_check(ctx, dy, x, desc, &g));
    GPUDL__TRY(gpudl__check_dt(ctx, dx, "dx", x->dtype));
    if (!gpudl__same_shape(dx, x)) return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "pool2d backward", "dx", dx, "x", x, "same shape");
    GPUDL__TRY(gpudl__same_device(ctx, "pool2d backward", "dx", dx, "x", x));
    if (g.kind == GPUDL_POOL_MAX && GPUDL__OVR(ctx, x, maxpool_backward)) {
        gpudl_pool_shape ps = gpudl__pool_shape(&g);
        GPUDL__OVERRIDE(ctx, x, maxpool_backward, (float *)dx->data, (const float *)dy->data, (const float *)x->data, &ps);
    }
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(x)) {
        GPUDL__LAUNCH(ctx, gpudl_k_pool_bwd(ctx->stream, g.kind, dx->data, dy->data, x->data, (int)x->dtype, g.NC, g.H, g.W,
                                            g.Ho, g.Wo, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw));
        return GPUDL_OK;
    }
#endif
    if (x->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *dxw = gpudl__widen(&W, dx, 1), *dyw = gpudl__widen(&W, dy, 0), *xw = gpudl__widen(&W, x, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_pool2d_backward(ctx, dxw, dyw, xw, desc));
    }
    /* The GPU gathers (gpudl__pool_backward_elem, one thread per input); on
       the CPU a thread owns whole planes, so scattering each output's
       gradient onto its window is race-free and does a quarter of the work. */
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (g.NC * g.H * g.W > 16384))
    for (i = 0; i < g.NC; i++) {
        const float *xp = (const float *)x->data + i * g.H * g.W, *dyp = (const float *)dy->data + i * g.Ho * g.Wo;
        float *dxp = (float *)dx->data + i * g.H * g.W;
        int64_t oh, ow, arg, a, b;
        if (gpudl__pool_is_2x2(&g)) { gpudl__pool2x2_plane_bwd(g.kind, xp, dyp, dxp, &g); continue; }
        memset(dxp, 0, sizeof(float) * (size_t)(g.H * g.W));
        for (oh = 0; oh < g.Ho; oh++)
            for (ow = 0; ow < g.Wo; ow++) {
                float d = dyp[oh * g.Wo + ow];
                if (g.kind == GPUDL_POOL_MAX) {
                    gpudl__pool_window(g.kind, xp, GPUDL_F32, 0, g.H, g.W, oh, ow, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, &arg);
                    if (arg >= 0) dxp[arg] += d;
                    continue;
                }
                for (a = 0; a < g.kh; a++)
                    for (b = 0; b < g.kw; b++) {
                        int64_t h = oh * g.sh - g.ph + a, w = ow * g.sw - g.pw + b;
                        if (h >= 0 && h < g.H && w >= 0 && w < g.W) dxp[h * g.W + w] += d / (float)(g.kh * g.kw);
                    }
            }
    }
    return GPUDL_OK;
}

/* >>batchnorm ------------------------------------------------------------- */
static gpudl_status gpudl__check_vec(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name, int64_t C, const gpudl_tensor *x) {
    GPUDL__TRY(gpudl__check_f32(ctx, t, name));
    if (gpudl_tensor_numel(t) != C) return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "batchnorm", name, t, "x", x, "one value per channel");
    return gpudl__same_device(ctx, "batchnorm", name, t, "x", x);
}

/* sum dy and sum dy * (x - mean) * invstd over a run, in eight partials as gpudl__sum_f64. */
static void gpudl__bn_sums_bwd(const float *dy, const float *x, int64_t n, float mean, float invstd, double *sdy, double *sdyx) {
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i;
    int k;
    for (i = 0; i + 8 <= n; i += 8)
        for (k = 0; k < 8; k++) { a[k] += dy[i + k]; b[k] += dy[i + k] * (x[i + k] - mean) * invstd; }
    for (; i < n; i++) { a[0] += dy[i]; b[0] += dy[i] * (x[i] - mean) * invstd; }
    *sdy += ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    *sdyx += ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]));
}

GPUDL__DEF gpudl_status gpudl_batchnorm_forward(gpudl_ctx *ctx, gpudl_tensor *y, gpudl_tensor *save_mean, gpudl_tensor *save_invstd,
                                                const gpudl_tensor *x, const gpudl_tensor *gamma, const gpudl_tensor *beta,
                                                gpudl_tensor *running_mean, gpudl_tensor *running_var, int training,
                                                float momentum, float eps) {
    int64_t N, C, inner, c;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_act(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_dt(ctx, y, "y", x->dtype));
    if (x->ndim < 2 || !gpudl__same_shape(x, y))
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "batchnorm", "y", y, "x", x, "need x (N,C,...) and y of its shape");
    N = x->shape[0]; C = x->shape[1]; inner = gpudl_tensor_numel(x) / (N * C);
    GPUDL__TRY(gpudl__same_device(ctx, "batchnorm", "y", y, "x", x));
    GPUDL__TRY(gpudl__check_vec(ctx, gamma, "gamma", C, x));
    GPUDL__TRY(gpudl__check_vec(ctx, beta, "beta", C, x));
    GPUDL__TRY(gpudl__check_vec(ctx, running_mean, "running_mean", C, x));
    GPUDL__TRY(gpudl__check_vec(ctx, running_var, "running_var", C, x));
    GPUDL__TRY(gpudl__check_vec(ctx, save_mean, "save_mean", C, x));
    GPUDL__TRY(gpudl__check_vec(ctx, save_invstd, "save_invstd", C, x));
    if (training && N * inner < 2)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "batchnorm: training needs more than one value per channel (N*H*W = %lld)",
                          (long long)(N * inner));
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(x)) {
        float *scratch;
        GPUDL__TRY(gpudl__dev_scratch(ctx, (size_t)gpudl_k_bn_scratch(N, C, inner), &scratch));
        GPUDL__LAUNCH(ctx, gpudl_k_bn_fwd(ctx->stream, y->data, (float *)save_mean->data, (float *)save_invstd->data, x->data,
                                          (int)x->dtype, (const float *)gamma->data, (const float *)beta->data,
                                          (float *)running_mean->data, (float *)running_var->data, N, C, inner, training,
                                          momentum, eps, scratch));
        return GPUDL_OK;
    }
#endif
    if (x->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *yw = gpudl__widen(&W, y, 1), *xw = gpudl__widen(&W, x, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_batchnorm_forward(ctx, yw, save_mean, save_invstd, xw, gamma, beta,
                                                                      running_mean, running_var, training, momentum, eps));
    }
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (N * C * inner > 16384))
    for (c = 0; c < C; c++) {
        const float *xs = (const float *)x->data;
        float *ys = (float *)y->data, mean, invstd, ga = ((const float *)gamma->data)[c], be = ((const float *)beta->data)[c];
        int64_t n, i, M = N * inner;
        if (training) {
            double s = 0, ss = 0, mu, var;
            for (n = 0; n < N; n++) s += gpudl__sum_f64(xs + (n * C + c) * inner, inner, 0.0, 0);
            mu = s / (double)M;
            for (n = 0; n < N; n++) ss += gpudl__sum_f64(xs + (n * C + c) * inner, inner, mu, 1);
            var = ss / (double)M;
            mean = (float)mu;
            invstd = (float)(1.0 / sqrt(var + eps));
            ((float *)save_mean->data)[c] = mean;
            ((float *)save_invstd->data)[c] = invstd;
            gpudl__bn_update_running(&((float *)running_mean->data)[c], &((float *)running_var->data)[c], (float)mu, (float)var,
                                    M, momentum);
        } else {
            mean = ((const float *)running_mean->data)[c];
            invstd = 1.0f / sqrtf(((const float *)running_var->data)[c] + eps);
        }
        for (n = 0; n < N; n++) {
            const float *xr = xs + (n * C + c) * inner;
            float *yr = ys + (n * C + c) * inner;
            GPUDL__SIMD
            for (i = 0; i < inner; i++) yr[i] = (xr[i] - mean) * invstd * ga + be;
        }
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_batchnorm_backward(gpudl_ctx *ctx, gpudl_tensor *dx, gpudl_tensor *dgamma, gpudl_tensor *dbeta,
                                                 const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *gamma,
                                                 const gpudl_tensor *save_mean, const gpudl_tensor *save_invstd) {
    int64_t N, C, inner, c;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_act(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_dt(ctx, dy, "dy", x->dtype));
    if (x->ndim < 2 || !gpudl__same_shape(x, dy) || (dx && !gpudl__same_shape(x, dx)))
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "batchnorm backward", "dy", dy, "x", x, "dy and dx shaped like x");
    N = x->shape[0]; C = x->shape[1]; inner = gpudl_tensor_numel(x) / (N * C);
    GPUDL__TRY(gpudl__same_device(ctx, "batchnorm backward", "dy", dy, "x", x));
    if (dx) { GPUDL__TRY(gpudl__check_dt(ctx, dx, "dx", x->dtype)); GPUDL__TRY(gpudl__same_device(ctx, "batchnorm backward", "dx", dx, "x", x)); }
    GPUDL__TRY(gpudl__check_vec(ctx, gamma, "gamma", C, x));
    GPUDL__TRY(gpudl__check_vec(ctx, save_mean, "save_mean", C, x));
    GPUDL__TRY(gpudl__check_vec(ctx, save_invstd, "save_invstd", C, x));
    if (dgamma) GPUDL__TRY(gpudl__check_vec(ctx, dgamma, "dgamma", C, x));
    if (dbeta) GPUDL__TRY(gpudl__check_vec(ctx, dbeta, "dbeta", C, x));
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(x)) {
        float *scratch;
        GPUDL__TRY(gpudl__dev_scratch(ctx, (size_t)gpudl_k_bn_scratch(N, C, inner), &scratch));
        GPUDL__LAUNCH(ctx, gpudl_k_bn_bwd(ctx->stream, dx ? dx->data : NULL, dgamma ? (float *)dgamma->data : NULL,
                                          dbeta ? (float *)dbeta->data : NULL, dy->data, x->data, (int)x->dtype,
                                          (const float *)gamma->data, (const float *)save_mean->data,
                                          (const float *)save_invstd->data, N, C, inner, scratch));
        return GPUDL_OK;
    }
#endif
    if (x->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *dxw = gpudl__widen(&W, dx, 1), *dyw = gpudl__widen(&W, dy, 0), *xw = gpudl__widen(&W, x, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_batchnorm_backward(ctx, dxw, dgamma, dbeta, dyw, xw, gamma, save_mean,
                                                                       save_invstd));
    }
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (N * C * inner > 16384))
    for (c = 0; c < C; c++) {
        const float *xs = (const float *)x->data, *dys = (const float *)dy->data;
        float mean = ((const float *)save_mean->data)[c], invstd = ((const float *)save_invstd->data)[c];
        float ga = ((const float *)gamma->data)[c];
        double sdy = 0, sdyx = 0;
        int64_t n, i, M = N * inner;
        for (n = 0; n < N; n++)
            gpudl__bn_sums_bwd(dys + (n * C + c) * inner, xs + (n * C + c) * inner, inner, mean, invstd, &sdy, &sdyx);
        if (dgamma) ((float *)dgamma->data)[c] += (float)sdyx;
        if (dbeta) ((float *)dbeta->data)[c] += (float)sdy;
        if (dx) {
            float mdy = (float)(sdy / (double)M), mdyx = (float)(sdyx / (double)M);
            for (n = 0; n < N; n++) {
                const float *dyr = dys + (n * C + c) * inner, *xr = xs + (n * C + c) * inner;
                float *dxr = (float *)dx->data + (n * C + c) * inner;
                GPUDL__SIMD
                for (i = 0; i < inner; i++) dxr[i] = gpudl__bn_backward_elem(dyr[i], xr[i], mean, invstd, ga, mdy, mdyx);
            }
        }
    }
    return GPUDL_OK;
}

/* >>dropout --------------------------------------------------------------- */
static gpudl_status gpudl__dropout(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *x, float p, uint64_t seed, uint64_t offset) {
    int64_t i, n;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_act(ctx, x, "in"));
    GPUDL__TRY(gpudl__check_dt(ctx, y, "out", x->dtype));
    if (!(p >= 0.0f && p <= 1.0f)) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dropout: p = %g is not in [0, 1]", (double)p);
    n = gpudl_tensor_numel(x);
    if (gpudl_tensor_numel(y) != n) return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "dropout", "out", y, "in", x, "same element count");
    GPUDL__TRY(gpudl__same_device(ctx, "dropout", "out", y, "in", x));
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(x)) {
        GPUDL__LAUNCH(ctx, gpudl_k_dropout(ctx->stream, y->data, x->data, (int)x->dtype, n, p, seed, offset));
        return GPUDL_OK;
    }
#endif
    if (x->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *yw = gpudl__widen(&W, y, 1), *xw = gpudl__widen(&W, x, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl__dropout(ctx, yw, xw, p, seed, offset));
    }
    {
        const float *xs = (const float *)x->data;
        float *ys = (float *)y->data;
        GPUDL__EACH(i, n, n > 65536, ys[i] = gpudl__dropout_elem(xs[i], p, seed, offset + (uint64_t)i));
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_dropout_forward(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *x, float p, uint64_t seed,
                                              uint64_t offset) {
    return gpudl__dropout(ctx, y, x, p, seed, offset);
}

GPUDL__DEF gpudl_status gpudl_dropout_backward(gpudl_ctx *ctx, gpudl_tensor *dx, const gpudl_tensor *dy, float p, uint64_t seed,
                                               uint64_t offset) {
    return gpudl__dropout(ctx, dx, dy, p, seed, offset);   /* the same mask and scale */
}

/* >>transformer ----------------------------------------------------------- */
/* sum of a[i] b[i] in eight interleaved partial sums: a single float
   accumulator is a chain of dependent adds (no vectorising without
   -ffast-math); eight chains run at the multiply-add rate. */
static float gpudl__dot_f32(const float *a, const float *b, int64_t n) {
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i;
    int k;
    for (i = 0; i + 8 <= n; i += 8)
        for (k = 0; k < 8; k++) s[k] += a[i + k] * b[i + k];
    for (; i < n; i++) s[0] += a[i] * b[i];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static gpudl_status gpudl__check_ids(gpudl_ctx *ctx, const gpudl_tensor *ids, const char *what) {
    char sa[96];
    GPUDL__TRY(gpudl__check_on(ctx, ids, "ids"));
    if (ids->dtype != GPUDL_I32 && ids->dtype != GPUDL_U8)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "%s: ids are %s; need i32 or u8", what, gpudl_dtype_name(ids->dtype));
    if (ids->ndim != 2)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "%s: ids are %s; need (B,T)", what, gpudl_tensor_describe(ids, sa, sizeof sa));
    return GPUDL_OK;
}

/* The first id of ids outside [0, V) as an error (CPU tensors; before any write). */
static gpudl_status gpudl__ids_in_range(gpudl_ctx *ctx, const gpudl_tensor *ids, int64_t V, const char *what) {
    int64_t i, n = gpudl_tensor_numel(ids), T = ids->shape[1];
    for (i = 0; i < n; i++) {
        int64_t id = gpudl__id_at(ids->data, (int)ids->dtype, i);
        if (id < 0 || id >= V)
            return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "%s: id %lld at (b %lld, t %lld) is outside [0, %lld) (the table's rows)",
                              what, (long long)id, (long long)(i / T), (long long)(i % T), (long long)V);
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_embedding_forward(gpudl_ctx *ctx, gpudl_tensor *y, const gpudl_tensor *ids, const gpudl_tensor *wte,
                                                const gpudl_tensor *wpe) {
    int64_t B, T, V, C, N, n;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_ids(ctx, ids, "embedding"));
    GPUDL__TRY(gpudl__check_act(ctx, wte, "wte"));
    GPUDL__TRY(gpudl__check_dt(ctx, y, "y", wte->dtype));
    if (wpe) GPUDL__TRY(gpudl__check_dt(ctx, wpe, "wpe", wte->dtype));
    B = ids->shape[0]; T = ids->shape[1]; N = B * T;
    if (wte->ndim != 2 || y->ndim != 3 || y->shape[0] != B || y->shape[1] != T || y->shape[2] != wte->shape[1])
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "embedding", "y", y, "wte", wte, "need wte (V,C) and y (B,T,C) for ids (B,T)");
    V = wte->shape[0]; C = wte->shape[1];
    if (wpe && (wpe->ndim != 2 || wpe->shape[1] != C || wpe->shape[0] < T))
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "embedding", "wpe", wpe, "y", y, "need wpe (Tmax,C) with T <= Tmax");
    GPUDL__TRY(gpudl__same_device(ctx, "embedding", "ids", ids, "y", y));
    GPUDL__TRY(gpudl__same_device(ctx, "embedding", "wte", wte, "y", y));
    if (wpe) GPUDL__TRY(gpudl__same_device(ctx, "embedding", "wpe", wpe, "y", y));
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(y)) {
        GPUDL__LAUNCH(ctx, gpudl_k_embedding_fwd(ctx->stream, y->data, ids->data, (int)ids->dtype, wte->data, wpe ? wpe->data : NULL,
                                                 (int)y->dtype, N, T, V, C, ctx->report, ctx->bad_input));
        return GPUDL_OK;
    }
#endif
    GPUDL__TRY(gpudl__ids_in_range(ctx, ids, V, "embedding"));
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (N * C > 65536))
    for (n = 0; n < N; n++) {
        int64_t c, id = gpudl__id_at(ids->data, (int)ids->dtype, n), t = n % T;
        for (c = 0; c < C; c++)   /* summed in float, rounded once */
            gpudl__elem_set(y->data, y->dtype, n * C + c, gpudl__elem_get(wte->data, (int)wte->dtype, id * C + c) +
                            (wpe ? gpudl__elem_get(wpe->data, (int)wpe->dtype, t * C + c) : 0.0f));
    }
    return GPUDL_OK;
}

/* overwrite (GPU only, a model's backward after zero_grad): the gradients written, not added to */
static gpudl_status gpudl__embedding_bwd(gpudl_ctx *ctx, gpudl_tensor *dwte, gpudl_tensor *dwpe, const gpudl_tensor *dy,
                                         const gpudl_tensor *ids, int overwrite) {
    int64_t B, T, V = 0, C, N, n, c;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_ids(ctx, ids, "embedding backward"));
    GPUDL__TRY(gpudl__check_act(ctx, dy, "dy"));
    B = ids->shape[0]; T = ids->shape[1]; N = B * T;
    if (dy->ndim != 3 || dy->shape[0] != B || dy->shape[1] != T)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "embedding backward", "dy", dy, "ids", ids, "need dy (B,T,C) for ids (B,T)");
    C = dy->shape[2];
    GPUDL__TRY(gpudl__same_device(ctx, "embedding backward", "ids", ids, "dy", dy));
    if (dwte) {
        GPUDL__TRY(gpudl__check_f32(ctx, dwte, "dwte"));
        if (dwte->ndim != 2 || dwte->shape[1] != C)
            return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "embedding backward", "dwte", dwte, "dy", dy, "need dwte (V,C)");
        GPUDL__TRY(gpudl__same_device(ctx, "embedding backward", "dwte", dwte, "dy", dy));
        V = dwte->shape[0];
    }
    if (dwpe) {
        GPUDL__TRY(gpudl__check_f32(ctx, dwpe, "dwpe"));
        if (dwpe->ndim != 2 || dwpe->shape[1] != C || dwpe->shape[0] < T)
            return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "embedding backward", "dwpe", dwpe, "dy", dy, "need dwpe (Tmax,C), T <= Tmax");
        GPUDL__TRY(gpudl__same_device(ctx, "embedding backward", "dwpe", dwpe, "dy", dy));
    }
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(dy)) {
        GPUDL__LAUNCH(ctx, gpudl_k_embedding_bwd(ctx->stream, dwte ? (float *)dwte->data : NULL, dwpe ? (float *)dwpe->data : NULL,
                                                 dy->data, (int)dy->dtype, ids->data, (int)ids->dtype, B, T, V, C, overwrite));
        return GPUDL_OK;
    }
#endif
    (void)overwrite;
    if (dwte) {
        float *dw = (float *)dwte->data;
        GPUDL__TRY(gpudl__ids_in_range(ctx, ids, V, "embedding backward"));
        for (n = 0; n < N; n++) {   /* in position order: deterministic */
            int64_t id = gpudl__id_at(ids->data, (int)ids->dtype, n);
            for (c = 0; c < C; c++) dw[id * C + c] += gpudl__elem_get(dy->data, (int)dy->dtype, n * C + c);
        }
    }
    if (dwpe) {
        float *dp = (float *)dwpe->data;
        for (n = 0; n < N; n++)
            for (c = 0; c < C; c++) dp[(n % T) * C + c] += gpudl__elem_get(dy->data, (int)dy->dtype, n * C + c);
    }
    return GPUDL_OK;
}
GPUDL__DEF gpudl_status gpudl_embedding_backward(gpudl_ctx *ctx, gpudl_tensor *dwte, gpudl_tensor *dwpe, const gpudl_tensor *dy,
                                                 const gpudl_tensor *ids) {
    return gpudl__embedding_bwd(ctx, dwte, dwpe, dy, ids, 0);
}

/* gamma, beta, dgamma, dbeta (C) and mean, rstd (R): F32 on x's device. */
static gpudl_status gpudl__ln_vec(gpudl_ctx *ctx, const gpudl_tensor *t, const char *name, int64_t n, const gpudl_tensor *x,
                                  const char *per) {
    GPUDL__TRY(gpudl__check_f32(ctx, t, name));
    if (gpudl_tensor_numel(t) != n) return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "layernorm", name, t, "x", x, per);
    return gpudl__same_device(ctx, "layernorm", name, t, "x", x);
}

/* res, sum (the model's residual end before a layer norm; or NULL):
   sum = x + res, then y = layernorm(sum); one kernel on the GPU. */
/* The CPU's layer norm, for this CPU's instruction set: per row, the mean
   and the variance as double sums in 8 fixed interleaved parts
   (gpudl__sum_f64), then y. */
GPUDL__MULTI_ISA(gpudl__ln_fwd_cpu, (float *y, float *mean, float *rstd, const float *x, const float *g, const float *b,
                                     int64_t R, int64_t C, float eps, int team), (y, mean, rstd, x, g, b, R, C, eps, team),
    int64_t r;
    (void)team;
    GPUDL__OMP(omp parallel for num_threads(team) if (R * C > 16384))
    for (r = 0; r < R; r++) {
        const float *xr = x + r * C;
        float *yr = y + r * C, m, rs;
        double mu = gpudl__sum_f64(xr, C, 0.0, 0) / (double)C;
        int64_t c;
        m = (float)mu;
        rs = gpudl__ln_rstd((float)(gpudl__sum_f64(xr, C, mu, 1) / (double)C), eps);
        mean[r] = m;
        rstd[r] = rs;
        GPUDL__SIMD
        for (c = 0; c < C; c++) yr[c] = gpudl__ln_fwd_elem(xr[c], m, rs, g[c], b[c]);
    })
/* Its backward: dgamma, dbeta as column sums in row order (double, blocks
   of 64 columns over the threads: the same sums whatever the threads), then
   dx per row, its two row sums in 8 fixed interleaved double parts (one
   dependent chain of C adds was the loop's speed). */
GPUDL__MULTI_ISA(gpudl__ln_bwd_cpu, (float *dx, float *dgamma, float *dbeta, const float *dy, const float *x, const float *g,
                                     const float *mean, const float *rstd, int64_t R, int64_t C, int team),
                 (dx, dgamma, dbeta, dy, x, g, mean, rstd, R, C, team),
    int64_t c0, r;
    (void)team;
    if (dgamma || dbeta) {   /* first: dx may be dy or x */
        GPUDL__OMP(omp parallel for num_threads(team) if (R * C > 16384))
        for (c0 = 0; c0 < C; c0 += 64) {
            double ag[64], ab[64];
            int64_t w = GPUDL__MIN((int64_t)64, C - c0), k, rr;
            for (k = 0; k < w; k++) ag[k] = ab[k] = 0.0;
            for (rr = 0; rr < R; rr++) {
                const float *xr = x + rr * C + c0, *dyr = dy + rr * C + c0;
                float m = mean[rr], rs = rstd[rr];
                GPUDL__SIMD
                for (k = 0; k < w; k++) { ag[k] += (double)dyr[k] * ((xr[k] - m) * rs); ab[k] += dyr[k]; }
            }
            for (k = 0; k < w; k++) {
                if (dgamma) dgamma[c0 + k] += (float)ag[k];
                if (dbeta) dbeta[c0 + k] += (float)ab[k];
            }
        }
    }
    if (dx) {
        GPUDL__OMP(omp parallel for num_threads(team) if (R * C > 16384))
        for (r = 0; r < R; r++) {
            const float *xr = x + r * C, *dyr = dy + r * C;
            float m = mean[r], rs = rstd[r], *dxr = dx + r * C;
            double sg[8] = {0, 0, 0, 0, 0, 0, 0, 0}, sgx[8] = {0, 0, 0, 0, 0, 0, 0, 0}, tg, tgx;
            int64_t k;
            int j;
            for (k = 0; k + 8 <= C; k += 8)
                for (j = 0; j < 8; j++) {
                    double dyg = (double)dyr[k + j] * g[k + j];
                    sg[j] += dyg;
                    sgx[j] += dyg * ((xr[k + j] - m) * rs);
                }
            for (; k < C; k++) {
                double dyg = (double)dyr[k] * g[k];
                sg[0] += dyg;
                sgx[0] += dyg * ((xr[k] - m) * rs);
            }
            tg = ((sg[0] + sg[1]) + (sg[2] + sg[3])) + ((sg[4] + sg[5]) + (sg[6] + sg[7]));
            tgx = ((sgx[0] + sgx[1]) + (sgx[2] + sgx[3])) + ((sgx[4] + sgx[5]) + (sgx[6] + sgx[7]));
            for (k = 0; k < C; k++)
                dxr[k] = gpudl__ln_bwd_elem(dyr[k], xr[k], m, rs, g[k], (float)(tg / (double)C), (float)(tgx / (double)C));
        }
    })
static gpudl_status gpudl__layernorm_fwd(gpudl_ctx *ctx, gpudl_tensor *y, gpudl_tensor *mean, gpudl_tensor *rstd,
                                         const gpudl_tensor *x, const gpudl_tensor *res, gpudl_tensor *sum,
                                         const gpudl_tensor *gamma, const gpudl_tensor *beta, float eps) {
    int64_t R, C;
    GPUDL__ENTER(ctx);
    if (res) {   /* shaped like x, in its dtype, on its device (the model's own buffers) */
        if (!sum || !gpudl__same_shape(x, res) || !gpudl__same_shape(x, sum) || res->dtype != x->dtype ||
            sum->dtype != x->dtype || res->device != x->device || sum->device != x->device)
            return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "layernorm (residual)", "res", res, "x", x, "res, sum shaped like x");
#ifndef GPUDL_NO_CUDA
        if (!GPUDL__ON_GPU(x))
#endif
        {
            GPUDL__TRY(gpudl_add(ctx, sum, x, res));
            x = sum;
            res = NULL;
        }
    }
    GPUDL__TRY(gpudl__check_act(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_dt(ctx, y, "y", x->dtype));
    if (x->ndim < 1 || !gpudl__same_shape(x, y) || x->shape[x->ndim - 1] < 1)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "layernorm", "y", y, "x", x, "need x (..., C) and y of its shape");
    if (!(eps >= 0.0f)) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "layernorm: eps = %g; need eps >= 0 (0 = 1e-5)", (double)eps);
    if (eps == 0.0f) eps = 1e-5f;
    C = x->shape[x->ndim - 1]; R = gpudl_tensor_numel(x) / C;
    GPUDL__TRY(gpudl__same_device(ctx, "layernorm", "y", y, "x", x));
    GPUDL__TRY(gpudl__ln_vec(ctx, gamma, "gamma", C, x, "one value per channel (the last dim of x)"));
    GPUDL__TRY(gpudl__ln_vec(ctx, beta, "beta", C, x, "one value per channel (the last dim of x)"));
    GPUDL__TRY(gpudl__ln_vec(ctx, mean, "mean", R, x, "one value per row of x"));
    GPUDL__TRY(gpudl__ln_vec(ctx, rstd, "rstd", R, x, "one value per row of x"));
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(x)) {
        GPUDL__LAUNCH(ctx, gpudl_k_layernorm_fwd(ctx->stream, y->data, (float *)mean->data, (float *)rstd->data, x->data,
                                                 res ? res->data : NULL, res ? sum->data : NULL, (int)x->dtype,
                                                 (const float *)gamma->data, (const float *)beta->data, R, C, eps));
        return GPUDL_OK;
    }
#endif
    if (x->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *yw = gpudl__widen(&W, y, 1), *xw = gpudl__widen(&W, x, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_layernorm_forward(ctx, yw, mean, rstd, xw, gamma, beta, eps));
    }
    gpudl__ln_fwd_cpu((float *)y->data, (float *)mean->data, (float *)rstd->data, (const float *)x->data,
                      (const float *)gamma->data, (const float *)beta->data, R, C, eps, gpudl__team());
    return GPUDL_OK;
}
GPUDL__DEF gpudl_status gpudl_layernorm_forward(gpudl_ctx *ctx, gpudl_tensor *y, gpudl_tensor *mean, gpudl_tensor *rstd,
                                                const gpudl_tensor *x, const gpudl_tensor *gamma, const gpudl_tensor *beta,
                                                float eps) {
    return gpudl__layernorm_fwd(ctx, y, mean, rstd, x, NULL, NULL, gamma, beta, eps);
}

/* dadd (or NULL): added to dx, shaped like it (a pre-norm residual's other path) */
static gpudl_status gpudl__layernorm_bwd(gpudl_ctx *ctx, gpudl_tensor *dx, gpudl_tensor *dgamma, gpudl_tensor *dbeta,
                                         const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *gamma,
                                         const gpudl_tensor *mean, const gpudl_tensor *rstd, const gpudl_tensor *dadd,
                                         int overwrite) {
    int64_t R, C;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_act(ctx, x, "x"));
    GPUDL__TRY(gpudl__check_dt(ctx, dy, "dy", x->dtype));
    if (x->ndim < 1 || !gpudl__same_shape(x, dy) || x->shape[x->ndim - 1] < 1)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "layernorm backward", "dy", dy, "x", x, "dy and dx shaped like x");
    if (dx && !gpudl__same_shape(x, dx))
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "layernorm backward", "dx", dx, "x", x, "dy and dx shaped like x");
    C = x->shape[x->ndim - 1]; R = gpudl_tensor_numel(x) / C;
    GPUDL__TRY(gpudl__same_device(ctx, "layernorm backward", "dy", dy, "x", x));
    if (dx) {
        GPUDL__TRY(gpudl__check_dt(ctx, dx, "dx", x->dtype));
        GPUDL__TRY(gpudl__same_device(ctx, "layernorm backward", "dx", dx, "x", x));
    }
    GPUDL__TRY(gpudl__ln_vec(ctx, gamma, "gamma", C, x, "one value per channel (the last dim of x)"));
    GPUDL__TRY(gpudl__ln_vec(ctx, mean, "mean", R, x, "one value per row of x"));
    GPUDL__TRY(gpudl__ln_vec(ctx, rstd, "rstd", R, x, "one value per row of x"));
    if (dgamma) GPUDL__TRY(gpudl__ln_vec(ctx, dgamma, "dgamma", C, x, "one value per channel (the last dim of x)"));
    if (dbeta) GPUDL__TRY(gpudl__ln_vec(ctx, dbeta, "dbeta", C, x, "one value per channel (the last dim of x)"));
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(x)) {
        float *scratch;
        GPUDL__TRY(gpudl__dev_scratch(ctx, (size_t)gpudl_k_layernorm_scratch(R, C), &scratch));
        GPUDL__LAUNCH(ctx, gpudl_k_layernorm_bwd(ctx->stream, dx ? dx->data : NULL, dgamma ? (float *)dgamma->data : NULL,
                                                 dbeta ? (float *)dbeta->data : NULL, dy->data, x->data,
                                                 dadd && dx ? dadd->data : NULL, (int)x->dtype, (const float *)gamma->data,
                                                 (const float *)mean->data, (const float *)rstd->data, R, C, scratch, overwrite));
        return GPUDL_OK;
    }
#endif
    (void)overwrite;
    if (dadd && dx) {   /* the CPU: dx, then the other path added (x and dy are read before dx is written) */
        GPUDL__TRY(gpudl__layernorm_bwd(ctx, dx, dgamma, dbeta, dy, x, gamma, mean, rstd, NULL, overwrite));
        return gpudl__axpby(ctx, dx, 1.0f, dadd, 1.0f);
    }
    if (x->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *dxw = gpudl__widen(&W, dx, 1), *dyw = gpudl__widen(&W, dy, 0), *xw = gpudl__widen(&W, x, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_layernorm_backward(ctx, dxw, dgamma, dbeta, dyw, xw, gamma, mean, rstd));
    }
    gpudl__ln_bwd_cpu(dx ? (float *)dx->data : NULL, dgamma ? (float *)dgamma->data : NULL, dbeta ? (float *)dbeta->data : NULL,
                      (const float *)dy->data, (const float *)x->data, (const float *)gamma->data, (const float *)mean->data,
                      (const float *)rstd->data, R, C, gpudl__team());
    return GPUDL_OK;
}
GPUDL__DEF gpudl_status gpudl_layernorm_backward(gpudl_ctx *ctx, gpudl_tensor *dx, gpudl_tensor *dgamma, gpudl_tensor *dbeta,
                                                 const gpudl_tensor *dy, const gpudl_tensor *x, const gpudl_tensor *gamma,
                                                 const gpudl_tensor *mean, const gpudl_tensor *rstd) {
    return gpudl__layernorm_bwd(ctx, dx, dgamma, dbeta, dy, x, gamma, mean, rstd, NULL, 0);
}

/* qkv (B,T,3C) and its partner (B,T,C) (y or dy), att (B,NH,T,T): shapes, dtypes, devices. */
static gpudl_status gpudl__attn_check(gpudl_ctx *ctx, const char *what, const gpudl_tensor *bt, const char *btn,
                                      const gpudl_tensor *att, const gpudl_tensor *qkv, int64_t NH) {
    int64_t B, T, C;
    GPUDL__TRY(gpudl__check_act(ctx, qkv, "qkv"));
    GPUDL__TRY(gpudl__check_dt(ctx, bt, btn, qkv->dtype));
    GPUDL__TRY(gpudl__check_dt(ctx, att, "att", qkv->dtype));
    if (qkv->ndim != 3 || qkv->shape[2] % 3 != 0 || qkv->shape[2] < 3)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, what, "qkv", qkv, btn, bt, "need qkv (B,T,3C)");
    B = qkv->shape[0]; T = qkv->shape[1]; C = qkv->shape[2] / 3;
    if (NH < 1 || C % NH != 0)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "%s: n_head = %lld does not divide C = %lld (qkv's last dim / 3)", what,
                          (long long)NH, (long long)C);
    if (bt->ndim != 3 || bt->shape[0] != B || bt->shape[1] != T || bt->shape[2] != C)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, what, btn, bt, "qkv", qkv, "need (B,T,C) beside qkv (B,T,3C)");
    if (att->ndim != 4 || att->shape[0] != B || att->shape[1] != NH || att->shape[2] != T || att->shape[3] != T)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, what, "att", att, "qkv", qkv, "need att (B,NH,T,T)");
    GPUDL__TRY(gpudl__same_device(ctx, what, btn, bt, "qkv", qkv));
    return gpudl__same_device(ctx, what, "att", att, "qkv", qkv);
}

#ifndef GPUDL_NO_CUDA
/* A non-owning 3-D device tensor over workspace memory. */
static gpudl_tensor gpudl__ws_view(void *data, gpudl_dtype dt, int64_t L, int64_t M, int64_t N) {
    gpudl_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data; t.dtype = dt; t.device = GPUDL_DEVICE_CUDA; t.ndim = 3;
    t.shape[0] = L; t.shape[1] = M; t.shape[2] = N;
    return t;
}
/* bytes rounded up to 256, so every part of a workspace is aligned as cudaMalloc's memory is */
static size_t gpudl__ws_part(size_t bytes) { return (bytes + 255) & ~(size_t)255; }
#endif

/* The causal softmax over F32 scores (L,T,T), rows, on the GPU (on_gpu) or
   the host: the user's override (gpudl_ops.attn_softmax_forward, which
   then sees att and scores apart), else gpudl's kernel or loop. The
   attention calls it, and so does gpudl_check_op (its finite differences
   take the student's forward). att may be scores for gpudl's own. */
static void *gpudl__attn_stream(gpudl_ctx *ctx, int on_gpu) {
#ifndef GPUDL_NO_CUDA
    if (on_gpu) return (void *)ctx->stream;
#endif
    (void)ctx; (void)on_gpu;
    return NULL;
}
static gpudl_status gpudl__attn_softmax(gpudl_ctx *ctx, int on_gpu, float *att, const float *scores, int64_t L, int64_t T) {
    const gpudl_ops *o = &ctx->ops[on_gpu != 0];
    int64_t r;
    if (o->attn_softmax_forward) {
        int done;
        gpudl_status s = gpudl__ovr_result(ctx, o->attn_softmax_forward(o->user, gpudl__attn_stream(ctx, on_gpu),
                                                                        att, scores, L, T), "attn_softmax_forward", &done);
        if (done) return s;
    }
#ifndef GPUDL_NO_CUDA
    if (on_gpu) {
        GPUDL__LAUNCH(ctx, gpudl_k_attn_softmax(ctx->stream, att, scores, (int)GPUDL_F32, L, T));
        return GPUDL_OK;
    }
#endif
    for (r = 0; r < L * T; r++) {   /* r = l T + t: one row */
        const float *sr = scores + r * T;
        float *a = att + r * T, mx = -INFINITY;
        int64_t t = r % T, j;
        double sum = 0;
        for (j = 0; j <= t; j++) mx = gpudl__nanmax(mx, sr[j]);
        GPUDL__SIMD
        for (j = 0; j <= t; j++) a[j] = gpudl__exp_f(sr[j] - mx);   /* the keys up to t: gpudl__attn_visible */
        for (j = t + 1; j < T; j++) a[j] = 0.0f;
        for (j = 0; j <= t; j++) sum += a[j];
        for (j = 0; j <= t; j++) a[j] = (float)(a[j] / sum);
    }
    return GPUDL_OK;
}

/* ds (L,T,T) = att (dp - sum att dp) per row, 0 where masked: the user's
   override (gpudl_ops.attn_softmax_backward) or gpudl's own (ds may be dp). */
static gpudl_status gpudl__attn_softmax_bwd(gpudl_ctx *ctx, int on_gpu, float *ds, const float *dp, const float *att, int64_t L,
                                            int64_t T) {
    const gpudl_ops *o = &ctx->ops[on_gpu != 0];
    int64_t r;
    if (o->attn_softmax_backward) {
        int done;
        gpudl_status s = gpudl__ovr_result(ctx, o->attn_softmax_backward(o->user, gpudl__attn_stream(ctx, on_gpu),
                                                                         ds, dp, att, L, T), "attn_softmax_backward", &done);
        if (done) return s;
    }
#ifndef GPUDL_NO_CUDA
    if (on_gpu) {
        GPUDL__LAUNCH(ctx, gpudl_k_attn_softmax_bwd(ctx->stream, ds, dp, att, (int)GPUDL_F32, L, T));
        return GPUDL_OK;
    }
#endif
    for (r = 0; r < L * T; r++) {
        const float *p = att + r * T, *d = dp + r * T;
        float *out = ds + r * T;
        int64_t t = r % T, j;
        double dot = 0;
        for (j = 0; j <= t; j++) dot += (double)p[j] * d[j];
        for (j = 0; j < T; j++) out[j] = gpudl__attn_visible(t, j) ? gpudl__softmax_bwd_elem(p[j], d[j], (float)dot) : 0.0f;
    }
    return GPUDL_OK;
}

/* The CPU's attention core (F32, gpudl's own softmax): its products are
   small GEMMs per (batch, head) (T x T x HS: 64 x 64 x 32 in the GPT
   example), too small to pack for gpudl's sgemm. gpudl__attn_mm does one:
   out (R x N) = sum over k in [k0, k1) of a(r, k) m(k, n), a(r, k) at
   a[r ars + k acs], m(k, n) at m[k ldm + n], 4 rows and 16 columns at a time
   in local sums that the compiler keeps in vector registers, for this CPU's
   instruction set (it is inlined into the GPUDL__MULTI_ISA functions).
   A sum in memory (out[n] += a m[n], k by k) waits for its own store each
   step: that was the old loops' speed, 5 ms for the example's forward core. */
static GPUDL__INLINE_ALWAYS int gpudl__attn_mm_uses(int tri, int64_t kd, int64_t r, int64_t k) {
    return tri > 0 ? k <= kd + r : tri < 0 ? k >= kd + r : 1;
}
#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(GPUDL_NO_SIMD)
/* gpudl__attn_mm's inner block: 4 rows (R of them stored) by w <= 16 columns */
static GPUDL__INLINE_ALWAYS void gpudl__attn_mm16(float *out, int64_t ldo, const float *const *ar, int64_t acs, const float *m,
                                                 int64_t ldm, int64_t R, int64_t w, int64_t k0, int64_t kf0, int64_t kf1,
                                                 int64_t k1, int tri, int64_t kd) {
    typedef float v16 __attribute__((vector_size(64)));
    v16 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, mk = {0};
    int64_t k;
    int r;
#  define GPUDL__ATTN_MK(k) memcpy(&mk, m + (k) * ldm, sizeof(float) * (size_t)w)   /* w < 16: the rest stays 0 */
    for (k = k0; k < kf0; k++) {
        GPUDL__ATTN_MK(k);
        if (gpudl__attn_mm_uses(tri, kd, 0, k)) s0 += ar[0][k * acs] * mk;
        if (gpudl__attn_mm_uses(tri, kd, 1, k)) s1 += ar[1][k * acs] * mk;
        if (gpudl__attn_mm_uses(tri, kd, 2, k)) s2 += ar[2][k * acs] * mk;
        if (gpudl__attn_mm_uses(tri, kd, 3, k)) s3 += ar[3][k * acs] * mk;
    }
    for (k = kf0; k < kf1; k++) {
        GPUDL__ATTN_MK(k);
        s0 += ar[0][k * acs] * mk;
        s1 += ar[1][k * acs] * mk;
        s2 += ar[2][k * acs] * mk;
        s3 += ar[3][k * acs] * mk;
    }
    for (k = kf1 > kf0 ? kf1 : kf0; k < k1; k++) {
        GPUDL__ATTN_MK(k);
        if (gpudl__attn_mm_uses(tri, kd, 0, k)) s0 += ar[0][k * acs] * mk;
        if (gpudl__attn_mm_uses(tri, kd, 1, k)) s1 += ar[1][k * acs] * mk;
        if (gpudl__attn_mm_uses(tri, kd, 2, k)) s2 += ar[2][k * acs] * mk;
        if (gpudl__attn_mm_uses(tri, kd, 3, k)) s3 += ar[3][k * acs] * mk;
    }
#  undef GPUDL__ATTN_MK
    for (r = 0; r < 4 && r < R; r++) {
        v16 v = r == 0 ? s0 : r == 1 ? s1 : r == 2 ? s2 : s3;
        memcpy(out + r * ldo, &v, sizeof(float) * (size_t)w);
    }
}
#endif
static GPUDL__INLINE_ALWAYS void gpudl__attn_mm(float *out, int64_t ldo, const float *a, int64_t ars, int64_t acs,
                                               const float *m, int64_t ldm, int64_t R, int64_t N, int64_t k0, int64_t k1,
                                               int tri, int64_t kd) {
    /* tri: row r sums only k <= kd + r (1: a causal row), k >= kd + r (-1: a causal column), or every k (0);
       a masked term is skipped, not multiplied by 0, so a NaN or Inf there does not leak across the mask */
    int64_t r0, n0;
    int r;
    for (r0 = 0; r0 < R; r0 += 4) {
        const float *ar[4];
        int64_t kf0 = k0, kf1 = k1;   /* [kf0, kf1): every row of the four sums */
        if (tri > 0 && kd - r0 + 1 < kf1) kf1 = kd - r0 + 1 > k0 ? kd - r0 + 1 : k0;
        if (tri < 0 && kd - r0 + 3 > kf0) kf0 = kd - r0 + 3 < k1 ? kd - r0 + 3 : k1;
        for (r = 0; r < 4; r++) ar[r] = a + (r0 + r < R ? r0 + r : r0) * ars;   /* rows past R repeat row r0, unstored */
#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(GPUDL_NO_SIMD)
        for (n0 = 0; n0 + 16 <= N; n0 += 16)   /* GNU C's vectors: the four sums stay in registers (a float[4][16] did not) */
            gpudl__attn_mm16(out + r0 * ldo + n0, ldo, ar, acs, m + n0, ldm, R - r0, 16, k0, kf0, kf1, k1, tri, kd - r0);
        if (n0 < N)   /* the last N % 16 columns, zero-padded */
            gpudl__attn_mm16(out + r0 * ldo + n0, ldo, ar, acs, m + n0, ldm, R - r0, N - n0, k0, kf0, kf1, k1, tri, kd - r0);
#else
        for (n0 = 0; n0 < N; n0++)
            for (r = 0; r < 4 && r0 + r < R; r++) {
                float s = 0.0f;
                int64_t k;
                for (k = k0; k < k1; k++)
                    if (gpudl__attn_mm_uses(tri, kd, r0 + r, k)) s += ar[r][k * acs] * m[k * ldm + n0];
                out[(r0 + r) * ldo + n0] = s;
            }
        (void)kf0; (void)kf1;
#endif
    }
}
/* The forward, one (batch, head) per task: its keys transposed into kts
   (HS x T), the scores of 4 queries at a time (the keys up to the last of
   them; the rest of each row is 0), the softmax per row, then y = att v.
   Per head: T^2 HS multiply-adds for the causal half of both products. */
GPUDL__MULTI_ISA(gpudl__attn_fwd_cpu, (const float *qkv, float *att, float *y, float *kts, int64_t B, int64_t T, int64_t C,
                                       int64_t NH, float scale, int team), (qkv, att, y, kts, B, T, C, NH, scale, team),
    int64_t bh, HS = C / NH;
    (void)team;   /* (a build without OpenMP) */
    GPUDL__OMP(omp parallel for num_threads(team) if (B * NH * T * T * HS > 32768))
    for (bh = 0; bh < B * NH; bh++) {
        int64_t b = bh / NH, h = bh % NH, t, t0, j, d;
        const float *base = qkv + b * T * 3 * C;
        float *kt = kts + bh * HS * T, *ab = att + bh * T * T;
        for (j = 0; j < T; j++)
            for (d = 0; d < HS; d++) kt[d * T + j] = base[j * 3 * C + C + h * HS + d];
        for (t0 = 0; t0 < T; t0 += 4) {   /* scores = q k^T, keys 0 .. t0 + 3 */
            int64_t R = T - t0 < 4 ? T - t0 : 4, N = (t0 + R + 15) / 16 * 16 < T ? (t0 + R + 15) / 16 * 16 : T;
            gpudl__attn_mm(ab + t0 * T, T, base + t0 * 3 * C + h * HS, 3 * C, 1, kt, T, R, N, 0, HS, 0, 0);
        }
        for (t = 0; t < T; t++) {
            float *a = ab + t * T, mx = -INFINITY;
            double s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, sum;
            int k;
            for (j = 0; j <= t; j++) { a[j] *= scale; mx = gpudl__nanmax(mx, a[j]); }
            for (j = t + 1; j < T; j++) a[j] = 0.0f;   /* the keys up to t: gpudl__attn_visible */
            GPUDL__SIMD
            for (j = 0; j <= t; j++) a[j] = gpudl__exp_f(a[j] - mx);   /* the exponentials once, summed in double */
            for (j = 0; j + 8 <= t + 1; j += 8)
                for (k = 0; k < 8; k++) s[k] += a[j + k];
            for (; j <= t; j++) s[0] += a[j];
            sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
            GPUDL__SIMD
            for (j = 0; j <= t; j++) a[j] = (float)(a[j] / sum);
        }
        for (t0 = 0; t0 < T; t0 += 4) {   /* y = att v over the keys up to t0 + 3 (att is 0 past each row's t) */
            int64_t R = T - t0 < 4 ? T - t0 : 4;
            gpudl__attn_mm(y + (b * T + t0) * C + h * HS, C, ab + t0 * T, T, 1, base + 2 * C + h * HS, 3 * C, R, HS, 0, t0 + R, 1, t0);
        }
    })
/* Its backward, one (batch, head) per task, with the same small GEMMs: the
   head's values transposed into ws (HS x T), d att = dy v^T (4 rows at a
   time, the keys up to the last row), ds = att (d att - sum att d att)
   scaled, in place of d att (ws: T x T after the values); then dq = ds k,
   dk = ds^T q (the queries from j on), dv = att^T dy, each written once
   into the head's own columns of dqkv. */
GPUDL__MULTI_ISA(gpudl__attn_bwd_cpu, (float *dqkv, const float *dy, const float *qkv, const float *att, float *ws, int64_t B,
                                       int64_t T, int64_t C, int64_t NH, float scale, int team),
                 (dqkv, dy, qkv, att, ws, B, T, C, NH, scale, team),
    int64_t bh, HS = C / NH;
    (void)team;   /* (a build without OpenMP) */
    GPUDL__OMP(omp parallel for num_threads(team) if (B * NH * T * T * HS > 32768))
    for (bh = 0; bh < B * NH; bh++) {
        int64_t b = bh / NH, h = bh % NH, t, t0, j, d;
        const float *base = qkv + b * T * 3 * C, *dyb = dy + b * T * C + h * HS, *ab = att + bh * T * T;
        float *dbase = dqkv + b * T * 3 * C + h * HS, *vt = ws + bh * (HS + T) * T, *ds = vt + HS * T;
        for (j = 0; j < T; j++)
            for (d = 0; d < HS; d++) vt[d * T + j] = base[j * 3 * C + 2 * C + h * HS + d];
        for (t0 = 0; t0 < T; t0 += 4) {
            int64_t R = T - t0 < 4 ? T - t0 : 4;
            int64_t N = (t0 + R + 15) / 16 * 16 < T ? (t0 + R + 15) / 16 * 16 : T;   /* past t: set to 0 below */
            gpudl__attn_mm(ds + t0 * T, T, dyb + t0 * C, C, 1, vt, T, R, N, 0, HS, 0, 0);
        }
        for (t = 0; t < T; t++) {
            const float *p = ab + t * T;
            float *dp = ds + t * T, dot;
            double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int k;
            for (j = 0; j + 8 <= t + 1; j += 8)
                for (k = 0; k < 8; k++) s[k] += (double)p[j + k] * dp[j + k];
            for (; j <= t; j++) s[0] += (double)p[j] * dp[j];
            dot = (float)(((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])));
            for (j = 0; j <= t; j++) dp[j] = gpudl__softmax_bwd_elem(p[j], dp[j], dot) * scale;
            for (j = t + 1; j < T; j++) dp[j] = 0.0f;
        }
        for (t0 = 0; t0 < T; t0 += 4) {
            int64_t R = T - t0 < 4 ? T - t0 : 4;
            /* dq (rows t0..) = ds k over the keys up to t0 + 3 */
            gpudl__attn_mm(dbase + t0 * 3 * C, 3 * C, ds + t0 * T, T, 1, base + C + h * HS, 3 * C, R, HS, 0, t0 + R, 1, t0);
            /* dk, dv (keys t0..) = ds^T q, att^T dy over the queries from t0 on */
            gpudl__attn_mm(dbase + t0 * 3 * C + C, 3 * C, ds + t0, 1, T, base + h * HS, 3 * C, R, HS, t0, T, -1, t0);
            gpudl__attn_mm(dbase + t0 * 3 * C + 2 * C, 3 * C, ab + t0, 1, T, dyb, C, R, HS, t0, T, -1, t0);
        }
    })

GPUDL__DEF gpudl_status gpudl_attention_forward(gpudl_ctx *ctx, gpudl_tensor *y, gpudl_tensor *att, const gpudl_tensor *qkv,
                                                int64_t n_head) {
    int64_t B, T, C, NH = n_head, HS, i;
    float scale;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__attn_check(ctx, "attention", y, "y", att, qkv, NH));
    B = qkv->shape[0]; T = qkv->shape[1]; C = qkv->shape[2] / 3; HS = C / NH;
    scale = 1.0f / sqrtf((float)HS);
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(qkv)) {
        gpudl_dtype dt = qkv->dtype;
        int ovr = dt == GPUDL_F32 && ctx->ops[1].attn_softmax_forward, inplace = dt == GPUDL_F32 && !ovr;
        size_t es = gpudl_dtype_size(dt), part = gpudl__ws_part((size_t)(B * T * C) * es);
        size_t sbytes = inplace ? 0 : gpudl__ws_part(sizeof(float) * (size_t)(B * NH * T * T));
        char *ws;
        gpudl_tensor Q, K, Vt, Yh, S, A;
        float *scores;
        if (B * T * C == 0) return GPUDL_OK;
        GPUDL__TRY(gpudl__dev_ws(ctx, 4 * part + sbytes, (void **)&ws));
        /* F32: the softmax runs in place, unless the user's override does it (scores apart) */
        scores = inplace ? (float *)att->data : (float *)(ws + 4 * part);
        Q = gpudl__ws_view(ws, dt, B * NH, T, HS);
        K = gpudl__ws_view(ws + part, dt, B * NH, T, HS);
        Vt = gpudl__ws_view(ws + 2 * part, dt, B * NH, T, HS);
        Yh = gpudl__ws_view(ws + 3 * part, dt, B * NH, T, HS);
        S = gpudl__ws_view(scores, GPUDL_F32, B * NH, T, T);
        A = gpudl__ws_view(att->data, dt, B * NH, T, T);
        GPUDL__LAUNCH(ctx, gpudl_k_attn_split(ctx->stream, Q.data, K.data, Vt.data, qkv->data, (int)dt, B, T, NH, HS, 1));
        GPUDL__TRY(gpudl_matmul(ctx, &S, &Q, &K, 0, 1, scale, 0.0f));          /* scores = q k^T / sqrt(HS) */
        if (ovr) GPUDL__TRY(gpudl__attn_softmax(ctx, 1, (float *)att->data, scores, B * NH, T));
        else GPUDL__LAUNCH(ctx, gpudl_k_attn_softmax(ctx->stream, att->data, scores, (int)dt, B * NH, T));
        GPUDL__TRY(gpudl_matmul(ctx, &Yh, &A, &Vt, 0, 0, 1.0f, 0.0f));         /* y = att v, per head */
        GPUDL__LAUNCH(ctx, gpudl_k_attn_merge(ctx->stream, y->data, Yh.data, (int)dt, B, T, NH, HS, 0));
        return GPUDL_OK;
    }
#endif
    if (qkv->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *yw = gpudl__widen(&W, y, 1), *aw = gpudl__widen(&W, att, 1), *qw = gpudl__widen(&W, qkv, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_attention_forward(ctx, yw, aw, qw, n_head));
    }
    if (ctx->ops[0].attn_softmax_forward) {   /* the user's softmax: the scores (all T x T, as the GPU's GEMM), then y */
        float *scores = NULL;
        GPUDL__TRY(gpudl__host_ws(ctx, sizeof(float) * (size_t)(B * NH * T * T), (void **)&scores));
        GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (B * NH * T * T * HS > 32768))
        for (i = 0; i < B * NH * T; i++) {
            int64_t b = i / (NH * T), h = (i / T) % NH, t = i % T, j;
            const float *base = (const float *)qkv->data + b * T * 3 * C, *q = base + t * 3 * C + h * HS;
            for (j = 0; j < T; j++) scores[i * T + j] = gpudl__dot_f32(q, base + j * 3 * C + C + h * HS, HS) * scale;
        }
        GPUDL__TRY(gpudl__attn_softmax(ctx, 0, (float *)att->data, scores, B * NH, T));
        GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (B * NH * T * T * HS > 32768))
        for (i = 0; i < B * NH * T; i++) {   /* y = att v over every j: a leak past the mask shows */
            int64_t b = i / (NH * T), h = (i / T) % NH, t = i % T, j, d;
            const float *base = (const float *)qkv->data + b * T * 3 * C, *a = (const float *)att->data + i * T;
            float *yo = (float *)y->data + (b * T + t) * C + h * HS;
            for (d = 0; d < HS; d++) yo[d] = 0.0f;
            for (j = 0; j < T; j++)
                for (d = 0; d < HS; d++) yo[d] += a[j] * base[j * 3 * C + 2 * C + h * HS + d];
        }
        return GPUDL_OK;
    }
    {
        float *kts = NULL;   /* each (batch, head)'s keys transposed: B NH HS T floats */
        GPUDL__TRY(gpudl__host_ws(ctx, sizeof(float) * (size_t)(B * NH * HS * T), (void **)&kts));
        gpudl__attn_fwd_cpu((const float *)qkv->data, (float *)att->data, (float *)y->data, kts, B, T, C, NH, scale, gpudl__team());
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_attention_backward(gpudl_ctx *ctx, gpudl_tensor *dqkv, const gpudl_tensor *dy, const gpudl_tensor *qkv,
                                                 const gpudl_tensor *att, int64_t n_head) {
    int64_t B, T, C, NH = n_head, HS, bh;
    float scale, *dps = NULL;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__attn_check(ctx, "attention backward", dy, "dy", att, qkv, NH));
    GPUDL__TRY(gpudl__check_dt(ctx, dqkv, "dqkv", qkv->dtype));
    if (!gpudl__same_shape(dqkv, qkv))
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "attention backward", "dqkv", dqkv, "qkv", qkv, "dqkv shaped like qkv");
    GPUDL__TRY(gpudl__same_device(ctx, "attention backward", "dqkv", dqkv, "qkv", qkv));
    B = qkv->shape[0]; T = qkv->shape[1]; C = qkv->shape[2] / 3; HS = C / NH;
    scale = 1.0f / sqrtf((float)HS);
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(qkv)) {
        gpudl_dtype dt = qkv->dtype;
        int ovr = dt == GPUDL_F32 && ctx->ops[1].attn_softmax_backward, inplace = dt == GPUDL_F32 && !ovr;
        size_t es = gpudl_dtype_size(dt), part = gpudl__ws_part((size_t)(B * T * C) * es);
        size_t dpbytes = gpudl__ws_part(sizeof(float) * (size_t)(B * NH * T * T));
        size_t dsbytes = inplace ? 0 : gpudl__ws_part(es * (size_t)(B * NH * T * T));
        char *ws;
        gpudl_tensor Q, K, Vt, DYh, DQ, DK, DV, DP, DS, A;
        int64_t L = B * NH;
        if (B * T * C == 0) return GPUDL_OK;
        GPUDL__TRY(gpudl__dev_ws(ctx, 7 * part + dpbytes + dsbytes, (void **)&ws));
        Q = gpudl__ws_view(ws, dt, L, T, HS);
        K = gpudl__ws_view(ws + part, dt, L, T, HS);
        Vt = gpudl__ws_view(ws + 2 * part, dt, L, T, HS);
        DYh = gpudl__ws_view(ws + 3 * part, dt, L, T, HS);
        DQ = gpudl__ws_view(ws + 4 * part, dt, L, T, HS);
        DK = gpudl__ws_view(ws + 5 * part, dt, L, T, HS);
        DV = gpudl__ws_view(ws + 6 * part, dt, L, T, HS);
        DP = gpudl__ws_view(ws + 7 * part, GPUDL_F32, L, T, T);
        DS = gpudl__ws_view(inplace ? DP.data : (void *)(ws + 7 * part + dpbytes), dt, L, T, T);   /* F32: in place (no override) */
        A = gpudl__ws_view(att->data, dt, L, T, T);
        GPUDL__LAUNCH(ctx, gpudl_k_attn_split(ctx->stream, Q.data, K.data, Vt.data, qkv->data, (int)dt, B, T, NH, HS, 1));
        GPUDL__LAUNCH(ctx, gpudl_k_attn_merge(ctx->stream, dy->data, DYh.data, (int)dt, B, T, NH, HS, 1));
        GPUDL__TRY(gpudl_matmul(ctx, &DP, &DYh, &Vt, 0, 1, 1.0f, 0.0f));   /* d att = dy v^T */
        GPUDL__TRY(gpudl_matmul(ctx, &DV, &A, &DYh, 1, 0, 1.0f, 0.0f));    /* dv = att^T dy */
        if (ovr) GPUDL__TRY(gpudl__attn_softmax_bwd(ctx, 1, (float *)DS.data, (const float *)DP.data, (const float *)att->data, L, T));
        else GPUDL__LAUNCH(ctx, gpudl_k_attn_softmax_bwd(ctx->stream, DS.data, (const float *)DP.data, att->data, (int)dt, L, T));
        GPUDL__TRY(gpudl_matmul(ctx, &DQ, &DS, &K, 0, 0, scale, 0.0f));    /* dq = ds k / sqrt(HS) */
        GPUDL__TRY(gpudl_matmul(ctx, &DK, &DS, &Q, 1, 0, scale, 0.0f));    /* dk = ds^T q / sqrt(HS) */
        GPUDL__LAUNCH(ctx, gpudl_k_attn_split(ctx->stream, DQ.data, DK.data, DV.data, dqkv->data, (int)dt, B, T, NH, HS, 0));
        return GPUDL_OK;
    }
#endif
    if (qkv->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *dw = gpudl__widen(&W, dqkv, 1), *dyw = gpudl__widen(&W, dy, 0), *qw = gpudl__widen(&W, qkv, 0);
        gpudl_tensor *aw = gpudl__widen(&W, att, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_attention_backward(ctx, dw, dyw, qw, aw, n_head));
    }
    if (ctx->ops[0].attn_softmax_backward) {   /* the user's softmax backward: dp (all T x T), ds, then dq, dk, dv */
        float *ds;
        GPUDL__TRY(gpudl__host_ws(ctx, sizeof(float) * 2 * (size_t)(B * NH * T * T), (void **)&dps));
        ds = dps + B * NH * T * T;
        GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (B * NH * T * T * HS > 32768))
        for (bh = 0; bh < B * NH * T; bh++) {   /* here bh is a row (b NH + h) T + t */
            int64_t b = bh / (NH * T), h = (bh / T) % NH, t = bh % T, j;
            const float *base = (const float *)qkv->data + b * T * 3 * C, *dyt = (const float *)dy->data + (b * T + t) * C + h * HS;
            for (j = 0; j < T; j++) dps[bh * T + j] = gpudl__dot_f32(dyt, base + j * 3 * C + 2 * C + h * HS, HS);
        }
        GPUDL__TRY(gpudl__attn_softmax_bwd(ctx, 0, ds, dps, (const float *)att->data, B * NH, T));
        GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (B * NH * T * T * HS > 32768))
        for (bh = 0; bh < B * NH; bh++) {   /* one (batch, head): its own columns of dqkv, over every (t, j) */
            int64_t b = bh / NH, h = bh % NH, t, j, d;
            const float *base = (const float *)qkv->data + b * T * 3 * C, *dyb = (const float *)dy->data + b * T * C + h * HS;
            float *dbase = (float *)dqkv->data + b * T * 3 * C;
            for (t = 0; t < T; t++)
                for (d = 0; d < HS; d++) {
                    float *z = dbase + t * 3 * C + h * HS + d;
                    z[0] = z[C] = z[2 * C] = 0.0f;
                }
            for (t = 0; t < T; t++) {
                const float *p = (const float *)att->data + (bh * T + t) * T, *dst = ds + (bh * T + t) * T;
                const float *q = base + t * 3 * C + h * HS, *dyt = dyb + t * C;
                float *dq = dbase + t * 3 * C + h * HS;
                for (j = 0; j < T; j++) {
                    const float *k = base + j * 3 * C + C + h * HS;
                    float *dk = dbase + j * 3 * C + C + h * HS, *dv = dk + C, g = dst[j] * scale;
                    for (d = 0; d < HS; d++) { dq[d] += g * k[d]; dk[d] += g * q[d]; dv[d] += p[j] * dyt[d]; }
                }
            }
        }
        return GPUDL_OK;
    }
    GPUDL__TRY(gpudl__host_ws(ctx, sizeof(float) * (size_t)(B * NH * (HS + T) * T), (void **)&dps));
    gpudl__attn_bwd_cpu((float *)dqkv->data, (const float *)dy->data, (const float *)qkv->data, (const float *)att->data, dps, B, T, C,
                        NH, scale, gpudl__team());
    return GPUDL_OK;
}

/* Fused attention: qkv (B,T,3C), its partner (B,T,C), lse (B,NH,T) F32. */
static gpudl_status gpudl__attn_fused_check(gpudl_ctx *ctx, const char *what, const gpudl_tensor *bt, const char *btn,
                                            const gpudl_tensor *lse, const gpudl_tensor *qkv, int64_t NH) {
    int64_t B, T, C;
    GPUDL__TRY(gpudl__check_act(ctx, qkv, "qkv"));
    GPUDL__TRY(gpudl__check_dt(ctx, bt, btn, qkv->dtype));
    GPUDL__TRY(gpudl__check_f32(ctx, lse, "lse"));
    if (qkv->ndim != 3 || qkv->shape[2] % 3 != 0 || qkv->shape[2] < 3)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, what, "qkv", qkv, btn, bt, "need qkv (B,T,3C)");
    B = qkv->shape[0]; T = qkv->shape[1]; C = qkv->shape[2] / 3;
    if (NH < 1 || C % NH != 0)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "%s: n_head = %lld does not divide C = %lld (qkv's last dim / 3)", what,
                          (long long)NH, (long long)C);
    if (C / NH > GPUDL__FUSED_MAX_HS)
        return GPUDL__ERR(ctx, GPUDL_ERR_UNSUPPORTED, "%s: head size %lld > %d (use gpudl_attention_forward)", what,
                          (long long)(C / NH), GPUDL__FUSED_MAX_HS);
    if (bt->ndim != 3 || bt->shape[0] != B || bt->shape[1] != T || bt->shape[2] != C)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, what, btn, bt, "qkv", qkv, "need (B,T,C) beside qkv (B,T,3C)");
    if (lse->ndim != 3 || lse->shape[0] != B || lse->shape[1] != NH || lse->shape[2] != T)
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, what, "lse", lse, "qkv", qkv, "need lse (B,NH,T)");
    GPUDL__TRY(gpudl__same_device(ctx, what, btn, bt, "qkv", qkv));
    return gpudl__same_device(ctx, what, "lse", lse, "qkv", qkv);
}

GPUDL__DEF gpudl_status gpudl_attention_fused_forward(gpudl_ctx *ctx, gpudl_tensor *y, gpudl_tensor *lse, const gpudl_tensor *qkv,
                                                      int64_t n_head) {
    int64_t B, T, C, NH = n_head, HS, i;
    double scale;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__attn_fused_check(ctx, "fused attention", y, "y", lse, qkv, NH));
    B = qkv->shape[0]; T = qkv->shape[1]; C = qkv->shape[2] / 3; HS = C / NH;
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(qkv)) {
        if (B * T * C == 0) return GPUDL_OK;
        GPUDL__LAUNCH(ctx, gpudl_k_attn_fused_fwd(ctx->stream, y->data, (float *)lse->data, qkv->data, (int)qkv->dtype, B, T, NH, HS));
        return GPUDL_OK;
    }
#endif
    if (qkv->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *yw = gpudl__widen(&W, y, 1), *qw = gpudl__widen(&W, qkv, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_attention_fused_forward(ctx, yw, lse, qw, n_head));
    }
    scale = 1.0 / sqrt((double)HS);
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (B * NH * T * T * HS > 32768))
    for (i = 0; i < B * NH * T; i++) {   /* one query row, streamed over its keys (an online softmax, in double) */
        int64_t b = i / (NH * T), h = (i / T) % NH, t = i % T, j, d;
        const float *base = (const float *)qkv->data + b * T * 3 * C, *q = base + t * 3 * C + h * HS;
        float *yo = (float *)y->data + (b * T + t) * C + h * HS;
        double m = -INFINITY, l = 0, acc[GPUDL__FUSED_MAX_HS];
        for (d = 0; d < HS; d++) acc[d] = 0;
        for (j = 0; j <= t; j++) {
            const float *k = base + j * 3 * C + C + h * HS, *v = base + j * 3 * C + 2 * C + h * HS;
            double s = 0, mn, corr, e;
            for (d = 0; d < HS; d++) s += (double)q[d] * k[d];
            s *= scale;
            mn = s > m ? s : m;
            corr = exp(m - mn); e = exp(s - mn);
            l = l * corr + e;
            for (d = 0; d < HS; d++) acc[d] = acc[d] * corr + e * v[d];
            m = mn;
        }
        for (d = 0; d < HS; d++) yo[d] = (float)(acc[d] / l);
        ((float *)lse->data)[i] = (float)(m + log(l));
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_attention_fused_backward(gpudl_ctx *ctx, gpudl_tensor *dqkv, const gpudl_tensor *dy,
                                                       const gpudl_tensor *qkv, const gpudl_tensor *y, const gpudl_tensor *lse,
                                                       int64_t n_head) {
    int64_t B, T, C, NH = n_head, HS, bh;
    float scale;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__attn_fused_check(ctx, "fused attention backward", dy, "dy", lse, qkv, NH));
    GPUDL__TRY(gpudl__check_dt(ctx, y, "y", qkv->dtype));
    GPUDL__TRY(gpudl__check_dt(ctx, dqkv, "dqkv", qkv->dtype));
    if (!gpudl__same_shape(dqkv, qkv) || !gpudl__same_shape(y, dy))
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "fused attention backward", "dqkv", dqkv, "y", y,
                               "dqkv shaped like qkv, y like dy");
    GPUDL__TRY(gpudl__same_device(ctx, "fused attention backward", "dqkv", dqkv, "qkv", qkv));
    GPUDL__TRY(gpudl__same_device(ctx, "fused attention backward", "y", y, "qkv", qkv));
    B = qkv->shape[0]; T = qkv->shape[1]; C = qkv->shape[2] / 3; HS = C / NH;
    scale = 1.0f / sqrtf((float)HS);
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(qkv)) {
        float *scratch;
        if (B * T * C == 0) return GPUDL_OK;
        GPUDL__TRY(gpudl__dev_scratch(ctx, (size_t)(B * NH * T), &scratch));
        GPUDL__LAUNCH(ctx, gpudl_k_attn_fused_bwd(ctx->stream, dqkv->data, dy->data, qkv->data, y->data, (const float *)lse->data,
                                                  (int)qkv->dtype, B, T, NH, HS, scratch));
        return GPUDL_OK;
    }
#endif
    if (qkv->dtype != GPUDL_F32) {
        gpudl__wide W = gpudl__wide_of(ctx);
        gpudl_tensor *dw = gpudl__widen(&W, dqkv, 1), *dyw = gpudl__widen(&W, dy, 0), *qw = gpudl__widen(&W, qkv, 0);
        gpudl_tensor *yw = gpudl__widen(&W, y, 0);
        return gpudl__wide_end(&W, W.s ? W.s : gpudl_attention_fused_backward(ctx, dw, dyw, qw, yw, lse, n_head));
    }
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (B * NH * T * T * HS > 32768))
    for (bh = 0; bh < B * NH; bh++) {   /* one (batch, head): its own columns of dqkv */
        int64_t b = bh / NH, h = bh % NH, t, j, d;
        const float *base = (const float *)qkv->data + b * T * 3 * C, *dyb = (const float *)dy->data + b * T * C + h * HS;
        const float *yb = (const float *)y->data + b * T * C + h * HS, *ls = (const float *)lse->data + bh * T;
        float *dbase = (float *)dqkv->data + b * T * 3 * C;
        for (t = 0; t < T; t++)
            for (d = 0; d < HS; d++) {
                float *z = dbase + t * 3 * C + h * HS + d;
                z[0] = z[C] = z[2 * C] = 0.0f;
            }
        for (t = 0; t < T; t++) {
            const float *dyt = dyb + t * C, *q = base + t * 3 * C + h * HS;
            float *dq = dbase + t * 3 * C + h * HS, D = 0.0f;
            D = gpudl__dot_f32(dyt, yb + t * C, HS);   /* sum_j p_j dp_j = dy_t . y_t */
            for (j = 0; j <= t; j++) {
                const float *k = base + j * 3 * C + C + h * HS, *v = base + j * 3 * C + 2 * C + h * HS;
                float *dk = dbase + j * 3 * C + C + h * HS, *dv = dbase + j * 3 * C + 2 * C + h * HS;
                float s = gpudl__dot_f32(q, k, HS), dp = gpudl__dot_f32(dyt, v, HS), p, ds;
                p = gpudl__exp_f(s * scale - ls[t]);
                ds = gpudl__softmax_bwd_elem(p, dp, D) * scale;
                GPUDL__SIMD
                for (d = 0; d < HS; d++) { dq[d] += ds * k[d]; dk[d] += ds * q[d]; dv[d] += p * dyt[d]; }
            }
        }
    }
    return GPUDL_OK;
}

/* >>model ----------------------------------------------------------------- */
/* A layer is an entry of a table of kinds, in the manner of miniaudio's
   node vtable: the kind says what the layer is called, what its parameter
   and buffer tensors are named (a checkpoint stores layer i's as
   "i.<name>"), how they start, and how the layer runs forward and backward.
   The model's loops (build, init, forward, backward, checkpoints, gradcheck,
   the summary, the memory report) know nothing else about a kind. Adding one
   is a table entry, its forward and backward, and an add function that
   checks its arguments and fills in the shapes. */

#define GPUDL__MAX_PARAMS GPUDL_LAYER_MAX_PARAMS   /* parameter tensors of one layer: weight, bias (custom layers: 4) */
#define GPUDL__MAX_BUFS 2     /* state that is saved but not trained: bn's running statistics */

typedef struct gpudl__layer gpudl__layer;

/* One layer's work on the current batch, as its kind's functions see it. */
typedef struct gpudl__pass {
    gpudl_model *m;
    gpudl__layer *l;
    int i;                               /* l's index in the model */
    gpudl_tensor x, y, dy;               /* (N, in sample), (N, out sample), y's gradient */
    gpudl_tensor *dx;                    /* (N, in sample); NULL when no one needs it */
    gpudl_tensor p[GPUDL__MAX_PARAMS];   /* the parameters the layer computes with */
    gpudl_tensor g[GPUDL__MAX_PARAMS];   /* their gradients (backward only) */
    gpudl_tensor buf[GPUDL__MAX_BUFS];
    int overwrite;                       /* backward: g[] hold stale values, write them (see gpudl_model_zero_grad) */
    void *mask;                          /* linear backward: the ReLU mask of the layer two below, or NULL ... */
    gpudl_tensor dx_masked;              /* ... and where dx goes with the mask applied (that layer's dout) */
    int masked;                          /* set by the backward that applied it: the ReLU's backward is done */
} gpudl__pass;

enum {
    GPUDL__KIND_VIEW = 1,         /* the output is the input's memory, reshaped */
    GPUDL__KIND_F32_PARAMS = 2,   /* the parameters stay f32 under mixed precision */
    GPUDL__KIND_SEE_THROUGH = 4,  /* the init looks past it for the activation that follows a layer */
    GPUDL__KIND_CUSTOM = 8,       /* the user's (gpudl_model_add_custom): names and callbacks in u.custom */
    GPUDL__KIND_IDS = 16,         /* takes token ids (I32/U8, never cast): the first layer only */
    GPUDL__KIND_PASS_DY = 32,     /* backward's dx is dy: the layer below shares this one's gradient buffer */
    GPUDL__KIND_OVERWRITES = 64   /* GPU backward honours gpudl__pass.overwrite (writes g[]): zero_grad needs no memset */
};

typedef struct gpudl__kind {
    const char *name;                           /* "linear": the summary */
    const char *params[GPUDL__MAX_PARAMS + 1];  /* checkpoint names, NULL-terminated */
    const char *bufs[GPUDL__MAX_BUFS + 1];
    int flags;                                  /* GPUDL__KIND_* */
    gpudl_status (*init)(gpudl__pass *p);       /* NULL: parameters and buffers start at zero */
    gpudl_status (*forward)(gpudl__pass *p);    /* NULL: nothing to do (a view) */
    gpudl_status (*backward)(gpudl__pass *p);
} gpudl__kind;

typedef struct gpudl__shape { int ndim; int64_t d[4]; } gpudl__shape;

struct gpudl__layer {
    const gpudl__kind *kind;
    int in_ndim, out_ndim;
    int64_t in_shape[3], out_shape[3];   /* one sample */
    int np, nbuf;                        /* parameter and buffer tensors: as many as the kind names */
    gpudl__shape pshape[GPUDL__MAX_PARAMS], bufshape[GPUDL__MAX_BUFS], savedshape;
    int64_t nparam_elems;                /* the parameters' elements, all tensors */
    int64_t poff[GPUDL__MAX_PARAMS];     /* element offsets in the flat parameter (and gradient) buffer */
    int64_t bufoff[GPUDL__MAX_BUFS];     /* element offsets in the flat buffer of buffers */
    gpudl_tensor out, dout;              /* (max_batch, out_shape): the output and its gradient */
    gpudl_tensor saved;                  /* (savedshape) what forward keeps for backward; bn: (2, C) batch mean, 1/std;
                                            GPU linear before a ReLU: (max_batch, mask ld / 32) the ReLU's bit mask */
    int mask_ok;                         /* linear: the last forward wrote saved's mask (cuBLASLt RELU_AUX_BIAS) */
    int64_t saved_per_sample;            /* F32 floats per sample that forward keeps (savedshape (max_batch, this)) */
    int64_t work_per_sample;             /* activations' dtype, per sample: a kind's own intermediates (attention's
                                            qkv, heads' output, their gradients, weights), allocated with the outputs */
    gpudl_tensor work;                   /* (max_batch, work_per_sample), or empty */
    char name[96];                       /* gpudl_model_set_name: the checkpoint's prefix, or "" ("<index>") */
    union {                              /* what each kind knows of itself */
        gpudl_conv2d_desc conv;
        struct { gpudl_act fn; float alpha; } act;
        gpudl_pool2d_desc pool;
        struct { int64_t channels; } bn;
        struct { float p; uint64_t offset; } dropout;   /* offset: counter of the last forward's mask */
        struct { int64_t heads; int fused; } attn;
        struct { int other; } res;                      /* begin: its end's index; end: its begin's */
        struct {                                         /* the user's desc, its strings copied */
            gpudl_layer_desc d;
            char name[24], pnames[GPUDL__MAX_PARAMS][24];
        } custom;
    } u;
};

/* What a captured training step depends on besides the device memory it
   reads (gpudl_model_train_step): the same key, the same graph. */
typedef struct gpudl__graph_key {
    const void *x, *y, *params16, *opt_m, *opt_v, *scaler, *act0;
    int64_t batch;
    int xdt, ydt, precision, training, use_lt, math, check, pad_;
    int64_t nlayers;
} gpudl__graph_key;

#define GPUDL__MODEL_LIVE 0x6c646d67u   /* a model's tag while it lives ... */
#define GPUDL__MODEL_DEAD 0xdeadd1edu   /* ... and after gpudl_model_destroy */

struct gpudl_model {
    uint32_t tag;                        /* GPUDL__MODEL_LIVE or _DEAD */
    gpudl_ctx *ctx;
    struct gpudl_model *next;            /* the context's list of live models */
    int built, training, have_loss, want_dinput;
    /* A failed call of a step poisons what follows it: pass_failed (forward
       or loss: the outputs or the loss gradient are stale) until the next
       forward succeeds, grads_failed (backward: some gradients hold part of
       a pass) until zero_grad. Backward and step refuse while either is set,
       and say which call failed and why. */
    const char *pass_failed, *grads_failed;
    int grads_zero;                      /* GPU: zero_grad was called and the gradients are not zeroed yet: the next
                                            backward writes them (beta 0) instead of adding (gpudl_model_zero_grad) */
    char failed_msg[320];
    int in_ndim, cur_ndim;
    int64_t in_shape[3], cur_shape[3];   /* input sample shape; output shape of the last added layer */
    gpudl__layer *layers;                /* (nlayers), room for layers_cap */
    int nlayers, layers_cap;
    gpudl_status refused;                /* the first add_* that failed (then build fails), or GPUDL_OK */
    int refused_at;
    char refused_msg[256];
    gpudl_model_desc desc;
    int64_t nparams, nbuffers, batch, step;
    int32_t *skipped_host;               /* GPU: pinned, the updates skipped for a bad batch (gpudl_k_optim_step adds 1) */
    int32_t skipped_seen;                /* ... of which the host has taken back from step */
    gpudl_tensor params, grads;          /* (nparams) flat, laid out by the layers' poff */
    gpudl_tensor buffers;                /* (nbuffers) flat, laid out by the layers' bufoff; or empty */
    gpudl_tensor opt_m, opt_v;           /* (nparams) optimizer state: momentum or first moment, second moment; or empty */
    gpudl_tensor probs, loss, clip;      /* (max_batch, K), (1), (3): sum of squares, scale; the fused loss's block
                                            counter (u32 bits, 0 between launches) */
    gpudl_tensor preds, dinput, input;   /* (max_batch) i32, (max_batch, sample), view of the last x */
    gpudl_optim_desc opt;
    int has_opt;
    gpudl_dist *dist;                    /* data parallel (gpudl_model_set_dist), or NULL */
    double *prof;                        /* gpudl_model_profile: seconds per layer forward (nlayers), backward
                                            (nlayers), then loss, step, zero_grad; NULL: off */
    int64_t prof_steps;
    uint64_t seed, rng_offset;           /* dropout stream */
    gpudl_precision precision;           /* FP16/BF16: the mixed-precision recipe below */
    gpudl_dtype act_dtype;               /* the activations' dtype: f32, or f16/bf16 under mixed precision */
    gpudl_tensor input16;                /* (max_batch, sample) act_dtype: the input cast, under mixed precision */
    gpudl_scaler_desc sdesc;             /* resolved (no zero fields); FP32/BF16: a scale fixed at 1 */
    int64_t skips_reported;              /* FP32/BF16: skipped (non-finite) steps already reported */
    gpudl_tensor params16;               /* (nparams) act_dtype: the weights in 16 bits, refreshed once per step */
    gpudl_tensor scaler;                 /* (sizeof gpudl_scaler_state) u8: the state, on the model's device */
    gpudl_scaler_state *scaler_seen;     /* the state as the host sees it: a pinned copy from an earlier step
                                            on the GPU, the state itself on the CPU */
#ifndef GPUDL_NO_CUDA
    cudaEvent_t scaler_ev;               /* recorded after the copy into scaler_seen */
    int scaler_ev_pending;
    int check_stale;                     /* a step failed after its non-finite check ran: clear the flag first */
    cudaGraphExec_t graph;               /* gpudl_model_train_step's captured step, or NULL */
    cudaGraph_t graph_src;               /* what it was made from: it holds the update node's arguments */
    cudaGraphNode_t graph_update;        /* the update's kernel node: each replay sets its hyper-parameters */
    struct cudaKernelNodeParams graph_kp;   /* its launch shape, as captured */
    gpudl__graph_key graph_key;          /* what the last train step was (graph: what it was captured for) */
    int graph_seen, graph_refused;       /* steps in a row with that key; capture failed for it: run the calls */
    int in_graph;                        /* capturing: gpudl_model_step leaves its host calls to the caller */
    gpudl_tensor graph_input;            /* m->input and m->batch after the captured calls */
    int64_t graph_batch;
#endif
};

/* A layer's name and its parameter j's (NULL past the last): the kind's,
   or for a custom layer the user's. */
static const char *gpudl__lname(const gpudl__layer *l) {
    return (l->kind->flags & GPUDL__KIND_CUSTOM) ? l->u.custom.name : l->kind->name;
}
static const char *gpudl__pname(const gpudl__layer *l, int j) {
    if (!(l->kind->flags & GPUDL__KIND_CUSTOM)) return l->kind->params[j];
    return j < l->u.custom.d.nparams ? l->u.custom.pnames[j] : NULL;
}

/* A view of t's data at element offset off with shape {lead, dims...} (lead < 0: none). */
static gpudl_tensor gpudl__view(const gpudl_tensor *t, int64_t off, int64_t lead, int ndim, const int64_t *dims) {
    gpudl_tensor v;
    int i, k = 0;
    memset(&v, 0, sizeof v);
    v.data = (char *)t->data + (size_t)off * gpudl_dtype_size(t->dtype);
    v.dtype = t->dtype;
    v.device = t->device;
    if (lead >= 0) v.shape[k++] = lead;
    for (i = 0; i < ndim; i++) v.shape[k++] = dims[i];
    v.ndim = k;
    return v;
}

static int64_t gpudl__prod(int ndim, const int64_t *s) {
    int64_t p = 1;
    int i;
    for (i = 0; i < ndim; i++) p *= s[i];
    return p;
}

static void gpudl__amp_release(gpudl_model *m);
static gpudl_status gpudl__check_make(gpudl_model *m);

/* How many of the context's live allocations model m holds (the leak report). */
static size_t gpudl__model_held(gpudl_ctx *ctx, const gpudl_model *m) {
    const gpudl_tensor *own[] = {&m->params, &m->grads, &m->buffers, &m->opt_m, &m->opt_v, &m->probs, &m->loss, &m->clip,
                                 &m->preds, &m->dinput, &m->input16, &m->params16, &m->scaler};
    size_t n = 0, j;
    int i;
    for (j = 0; j < sizeof own / sizeof own[0]; j++) n += own[j]->owner == 1 && gpudl__live_has(ctx, own[j]->data);
    for (i = 0; i < m->nlayers; i++) {
        const gpudl__layer *l = &m->layers[i];
        n += l->out.owner == 1 && gpudl__live_has(ctx, l->out.data);
        n += l->dout.owner == 1 && gpudl__live_has(ctx, l->dout.data);
        n += l->saved.owner == 1 && gpudl__live_has(ctx, l->saved.data);
        n += l->work.owner == 1 && gpudl__live_has(ctx, l->work.data);
    }
    return n;
}

/* At gpudl_ctx_destroy: what was left, by who should have freed it: models,
   datasets, then the user's own tensors. */
static void gpudl__leak_report(gpudl_ctx *ctx) {
    char msg[512] = "";
    size_t models = 0, in_models = 0, n = 0, in_sets = (size_t)ctx->datasets * 5;
    const struct gpudl_model *m;
    for (m = ctx->models; m; m = m->next) { models++; in_models += gpudl__model_held(ctx, m); }
    in_sets = GPUDL__MIN(in_sets, ctx->live_n - in_models);
    if (models)
        n += (size_t)snprintf(msg + n, sizeof msg - n, "%zu model%s never destroyed (gpudl_model_destroy), holding %zu "
                              "tensor%s; ", models, models == 1 ? " was" : "s were", in_models, in_models == 1 ? "" : "s");
    if (ctx->datasets && n < sizeof msg)
        n += (size_t)snprintf(msg + n, sizeof msg - n, "%lld dataset%s never freed (gpudl_dataset_free), holding %zu "
                              "tensor%s; ", (long long)ctx->datasets, ctx->datasets == 1 ? " was" : "s were", in_sets,
                              in_sets == 1 ? "" : "s");
    if (ctx->live_n > in_models + in_sets && n < sizeof msg)
        n += (size_t)snprintf(msg + n, sizeof msg - n, "%s%zu tensor%s never freed (gpudl_tensor_free); ",
                              models || ctx->datasets ? "and " : "", ctx->live_n - in_models - in_sets,
                              ctx->live_n - in_models - in_sets == 1 ? " was" : "s were");
    if (n >= 2 && n < sizeof msg) msg[n - 2] = 0;
    gpudl__log(ctx, GPUDL_LOG_WARN, "ctx_destroy: %s", msg);
}

/* Whether layer i's output gradient is the next layer's: a residual end
   passes its dy on unchanged, so the layer before it reads that memory
   (no copy; the end's begin reads it too, after the inner path). */
static int gpudl__dout_shared(const gpudl_model *m, int i) {
    return i + 1 < m->nlayers && (m->layers[i + 1].kind->flags & GPUDL__KIND_PASS_DY) &&
           !(m->layers[i].kind->flags & GPUDL__KIND_VIEW);
}

/* Frees the layers' outputs and output gradients (a flatten's are views). */
static void gpudl__acts_free(gpudl_model *m) {
    int i;
    for (i = 0; i < m->nlayers; i++) {
        gpudl__layer *l = &m->layers[i];
        int view = l->kind->flags & GPUDL__KIND_VIEW;
        if (!view) gpudl_tensor_free(m->ctx, &l->out);
        if (!view || i == 0) gpudl_tensor_free(m->ctx, &l->dout);
        gpudl_tensor_free(m->ctx, &l->work);
        memset(&l->out, 0, sizeof l->out);
        memset(&l->dout, 0, sizeof l->dout);
    }
    gpudl_tensor_free(m->ctx, &m->input16);
}

/* (Re)allocates every layer's output and output gradient, (max_batch,
   out_shape) of dtype dt, and the input copy when dt is 16-bit. All or
   nothing: on failure the old buffers stay as they were. */
static gpudl_status gpudl__acts_alloc(gpudl_model *m, gpudl_dtype dt) {
    gpudl_ctx *ctx = m->ctx;
    /* nb: [2 i] layer i's output, [2 i + 1] its gradient, [2 n] the input's copy, [2 n + 1 + i] layer i's work */
    gpudl_tensor *nb = (gpudl_tensor *)GPUDL_MALLOC(sizeof(gpudl_tensor) * (size_t)(3 * m->nlayers + 1));
    gpudl_status s = GPUDL_OK;
    int64_t shape[4];
    int i;
    if (!nb) return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "model: no host memory for %d layer buffers", 3 * m->nlayers);
    memset(nb, 0, sizeof(gpudl_tensor) * (size_t)(3 * m->nlayers + 1));
    shape[0] = m->desc.max_batch;
    for (i = 0; i < m->nlayers && s == GPUDL_OK; i++) {
        gpudl__layer *l = &m->layers[i];
        memcpy(shape + 1, l->out_shape, sizeof l->out_shape);
        if (l->kind->flags & GPUDL__KIND_VIEW) {   /* a first view owns its gradient; the rest are views */
            if (i == 0) s = gpudl_tensor_create(ctx, &nb[1], dt, 1 + l->out_ndim, shape);
            continue;
        }
        s = gpudl_tensor_create(ctx, &nb[2 * i], dt, 1 + l->out_ndim, shape);
        if (s == GPUDL_OK && !gpudl__dout_shared(m, i)) s = gpudl_tensor_create(ctx, &nb[2 * i + 1], dt, 1 + l->out_ndim, shape);
    }
    if (s == GPUDL_OK && dt != GPUDL_F32 && !(m->layers[0].kind->flags & GPUDL__KIND_IDS)) {
        memcpy(shape + 1, m->in_shape, sizeof m->in_shape);
        s = gpudl_tensor_create(ctx, &nb[2 * m->nlayers], dt, 1 + m->in_ndim, shape);
    }
    for (i = 0; i < m->nlayers && s == GPUDL_OK; i++)
        if (m->layers[i].work_per_sample) {
            shape[1] = m->layers[i].work_per_sample;
            s = gpudl_tensor_create(ctx, &nb[2 * m->nlayers + 1 + i], dt, 2, shape);
        }
    if (s != GPUDL_OK) {
        for (i = 0; i < 3 * m->nlayers + 1; i++) gpudl_tensor_free(ctx, &nb[i]);
        GPUDL_FREE(nb);
        return s;
    }
    gpudl__acts_free(m);
    for (i = 0; i < m->nlayers; i++) {
        gpudl__layer *l = &m->layers[i];
        if (l->kind->flags & GPUDL__KIND_VIEW) {
            /* the same memory as the layer before (or the input, whose data
               pointer each forward sets), reshaped */
            int d;
            if (i > 0) { l->out = m->layers[i - 1].out; l->dout = m->layers[i - 1].dout; l->dout.owner = 0; }
            else { l->dout = nb[1]; memset(&l->out, 0, sizeof l->out); l->out.dtype = dt; l->out.device = ctx->device; }
            l->out.ndim = l->dout.ndim = 1 + l->out_ndim;
            for (d = 0; d < l->out_ndim; d++) l->out.shape[1 + d] = l->dout.shape[1 + d] = l->out_shape[d];
            l->out.owner = 0;
            continue;
        }
        l->out = nb[2 * i];
        l->dout = nb[2 * i + 1];
    }
    for (i = m->nlayers - 1; i >= 0; i--)   /* from the top: nested ends share one buffer */
        if (gpudl__dout_shared(m, i)) { m->layers[i].dout = m->layers[i + 1].dout; m->layers[i].dout.owner = 0; }
    for (i = 0; i < m->nlayers; i++) m->layers[i].work = nb[2 * m->nlayers + 1 + i];
    m->input16 = nb[2 * m->nlayers];
    m->act_dtype = dt;
    GPUDL_FREE(nb);
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_model_create(gpudl_ctx *ctx, gpudl_model **out, int ndim, const int64_t *sample_shape) {
    gpudl_model *m;
    int64_t n;
    int i;
    if (out) *out = NULL;   /* on every failure, the context's too */
    GPUDL__ENTER(ctx);
    if (!out) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_create: out is NULL");
    *out = NULL;
    if (ndim < 1 || ndim > 3 || !sample_shape)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "model_create: a sample has 1 to 3 dims ({F} or {C,H,W}), got %d", ndim);
    GPUDL__TRY(gpudl__check_shape(ctx, GPUDL_F32, ndim, sample_shape, &n));
    m = (gpudl_model *)GPUDL_MALLOC(sizeof *m);
    if (!m) return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "model_create: no host memory");
    memset((void *)m, 0, sizeof *m);   /* void *: in C++ the struct holds CUDA's dim3 (not trivial) */
    m->tag = GPUDL__MODEL_LIVE;
    m->ctx = ctx;
    m->next = ctx->models;
    ctx->models = m;
    m->in_ndim = m->cur_ndim = ndim;
    for (i = 0; i < ndim; i++) m->in_shape[i] = m->cur_shape[i] = sample_shape[i];
    m->training = 1;
    *out = m;
    return GPUDL_OK;
}

/* Whether m is a live model; a destroyed one, whose shell the context still
   keeps, gets an error that says so. Anything else is undefined: a model
   destroyed long ago (the context keeps the last 8) or never made. */
static gpudl_status gpudl__model_live(const gpudl_model *m, const char *what) {
    if (!m) return gpudl__no_ctx(what, "model");
    if (m->tag == GPUDL__MODEL_LIVE) return GPUDL_OK;
    if (m->tag == GPUDL__MODEL_DEAD && m->ctx)
        return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "%s: this model was destroyed (gpudl_model_destroy); create and "
                          "build a new one", what);
    return GPUDL_ERR_INVALID_ARG;
}

static void gpudl__skipped_free(gpudl_model *m);
GPUDL__DEF void gpudl_model_destroy(gpudl_model *m) {
    int i;
    gpudl_ctx *ctx;
    gpudl_model **p;
    if (!m || gpudl__model_live(m, "model_destroy") != GPUDL_OK) return;   /* a second destroy is refused */
    ctx = m->ctx;
    for (p = &ctx->models; *p && *p != m; p = &(*p)->next) {}
    if (*p) *p = m->next;
    gpudl__skipped_free(m);
    gpudl__amp_release(m);   /* first: it asks the parameters where the model lives (issue 26) */
    gpudl__acts_free(m);
    for (i = 0; i < m->nlayers; i++) gpudl_tensor_free(ctx, &m->layers[i].saved);
    gpudl_tensor_free(ctx, &m->params); gpudl_tensor_free(ctx, &m->grads); gpudl_tensor_free(ctx, &m->buffers);
    gpudl_tensor_free(ctx, &m->opt_m); gpudl_tensor_free(ctx, &m->opt_v);
    gpudl_tensor_free(ctx, &m->probs); gpudl_tensor_free(ctx, &m->loss); gpudl_tensor_free(ctx, &m->clip);
    gpudl_tensor_free(ctx, &m->preds); gpudl_tensor_free(ctx, &m->dinput);
    GPUDL_FREE(m->prof);
    GPUDL_FREE(m->layers);
    memset((void *)m, 0, sizeof *m);   /* a shell: its tag says it is dead, its context who to tell */
    m->tag = GPUDL__MODEL_DEAD;
    m->ctx = ctx;
    GPUDL_FREE(ctx->dead[ctx->dead_next]);
    ctx->dead[ctx->dead_next] = m;
    ctx->dead_next = (ctx->dead_next + 1) % (int)(sizeof ctx->dead / sizeof ctx->dead[0]);
}

/* A refused layer makes gpudl_model_build fail: a model is built whole or
   not at all (the layers after a refused one would see the wrong shapes). */
static gpudl_status gpudl__refuse(gpudl_model *m, gpudl_status s) {
    if (m->refused == GPUDL_OK) {   /* keep the message, without its file:line */
        const char *msg = gpudl__message(m->ctx);
        size_t n = GPUDL__MIN(strlen(msg), sizeof m->refused_msg - 1);
        m->refused = s;
        m->refused_at = m->nlayers;
        memcpy(m->refused_msg, msg, n);
        m->refused_msg[n] = 0;
    }
    return s;
}
#define GPUDL__ADD_ERR(m, status, ...) gpudl__refuse((m), GPUDL__ERR((m)->ctx, (status), __VA_ARGS__))

/* Appends a layer after checking the model is still open. */
static gpudl_status gpudl__add(gpudl_model *m, gpudl__layer *l) {
    int j;
    GPUDL__TRY(gpudl__model_live(m, "model_add"));
    GPUDL__ENTER(m->ctx);
    if (m->built) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model: layers cannot be added after gpudl_model_build");
    if (m->nlayers == m->layers_cap) {
        int cap = m->layers_cap ? 2 * m->layers_cap : 8;
        gpudl__layer *n = (gpudl__layer *)GPUDL_REALLOC(m->layers, sizeof *n * (size_t)cap);
        if (!n) return GPUDL__ADD_ERR(m, GPUDL_ERR_OOM, "model: no host memory for layer %d", m->nlayers);
        m->layers = n;
        m->layers_cap = cap;
    }
    l->in_ndim = m->cur_ndim;
    memcpy(l->in_shape, m->cur_shape, sizeof l->in_shape);
    if (!l->out_ndim) { l->out_ndim = m->cur_ndim; memcpy(l->out_shape, m->cur_shape, sizeof l->out_shape); }
    for (l->np = 0; gpudl__pname(l, l->np); l->np++) l->poff[l->np] = -1;
    for (l->nbuf = 0; l->kind->bufs[l->nbuf]; l->nbuf++) l->bufoff[l->nbuf] = -1;
    for (j = 0; j < l->np; j++) l->nparam_elems += gpudl__prod(l->pshape[j].ndim, l->pshape[j].d);
    m->layers[m->nlayers++] = *l;
    m->cur_ndim = l->out_ndim;
    memcpy(m->cur_shape, l->out_shape, sizeof m->cur_shape);
    return GPUDL_OK;
}

static const char *gpudl__shape_str(int ndim, const int64_t *s, char *buf, size_t size) {
    size_t n = 0;
    int i;
    buf[0] = 0;
    for (i = 0; i < ndim && n < size; i++) n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "x" : "", (long long)s[i]);
    return buf;
}

static gpudl__shape gpudl__shape4(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    gpudl__shape s;
    s.ndim = ndim; s.d[0] = d0; s.d[1] = d1; s.d[2] = d2; s.d[3] = d3;
    return s;
}

/* Parameter j of layer l in a flat buffer (m->params, m->params16 or m->grads). */
static gpudl_tensor gpudl__param(const gpudl__layer *l, int j, const gpudl_tensor *flat) {
    return gpudl__view(flat, l->poff[j], -1, l->pshape[j].ndim, l->pshape[j].d);
}

/* The parameters (from flat) and buffers of layer i; no activations yet. */
static void gpudl__pass_begin(gpudl_model *m, int i, const gpudl_tensor *flat, gpudl__pass *p) {
    gpudl__layer *l = &m->layers[i];
    int j;
    memset(p, 0, sizeof *p);
    p->m = m;
    p->l = l;
    p->i = i;
    for (j = 0; j < l->np; j++) p->p[j] = gpudl__param(l, j, flat);
    for (j = 0; j < l->nbuf; j++) p->buf[j] = gpudl__view(&m->buffers, l->bufoff[j], -1, l->bufshape[j].ndim, l->bufshape[j].d);
}

/* Layer i's input and output (or the output's gradient) for the current batch. */
static gpudl_tensor gpudl__layer_input(const gpudl_model *m, int i) {
    const gpudl__layer *l = &m->layers[i];
    return gpudl__view(i == 0 ? &m->input : &m->layers[i - 1].out, 0, m->batch, l->in_ndim, l->in_shape);
}
static gpudl_tensor gpudl__layer_output(const gpudl_model *m, int i, int grad) {
    const gpudl__layer *l = &m->layers[i];
    return gpudl__view(grad ? &l->dout : &l->out, 0, m->batch, l->out_ndim, l->out_shape);
}

/* Profiling (gpudl_model_profile): the clock, after the device has caught up. */
enum { GPUDL__PROF_LOSS = 0, GPUDL__PROF_STEP = 1, GPUDL__PROF_ZERO = 2 };
static double gpudl__prof_now(gpudl_model *m) {
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(&m->params)) (void)cudaStreamSynchronize(m->ctx->stream);
#endif
    (void)m;
    return gpudl_now();
}
static void gpudl__prof_add(gpudl_model *m, int slot, double t0) {
    if (m->prof) m->prof[slot] += gpudl__prof_now(m) - t0;
}

static gpudl_status gpudl__copy_same(gpudl_ctx *ctx, gpudl_tensor *dst, const gpudl_tensor *src) {
    return gpudl__memcpy(ctx, dst->data, dst->device, src->data, src->device, gpudl_tensor_bytes(src));
}

/* ---- the kinds: each one's forward and backward, then its table entry ---- */

static gpudl_status gpudl__act_fwd(gpudl__pass *p) {
    return gpudl_act_forward(p->m->ctx, p->l->u.act.fn, p->l->u.act.alpha, &p->y, &p->x);
}
/* ReLU's backward from its output (y <= 0 exactly where x <= 0, NaN where
   x is): the input is not written when cuBLASLt fused the ReLU into the
   GEMM before it */
static gpudl_status gpudl__act_bwd(gpudl__pass *p) {
    const gpudl__layer *l = p->l;
    if (!p->dx) return GPUDL_OK;
    return gpudl_act_backward(p->m->ctx, l->u.act.fn, l->u.act.alpha, p->dx, &p->dy,
                              l->u.act.fn == GPUDL_ACT_RELU ? &p->y : &p->x, &p->y);
}
static const gpudl__kind gpudl__kind_act = {"act", {NULL}, {NULL}, 0, NULL, gpudl__act_fwd, gpudl__act_bwd};

static gpudl_status gpudl__pool_fwd(gpudl__pass *p) { return gpudl_pool2d_forward(p->m->ctx, &p->y, &p->x, &p->l->u.pool); }
static gpudl_status gpudl__pool_bwd(gpudl__pass *p) {
    return p->dx ? gpudl_pool2d_backward(p->m->ctx, p->dx, &p->dy, &p->x, &p->l->u.pool) : GPUDL_OK;
}
static const gpudl__kind gpudl__kind_pool2d = {"pool2d", {NULL}, {NULL}, GPUDL__KIND_SEE_THROUGH, NULL, gpudl__pool_fwd,
                                               gpudl__pool_bwd};

/* The batch statistics forward keeps for backward: mean and 1/std, (C) each. */
static void gpudl__bn_saved(const gpudl__layer *l, gpudl_tensor *mean, gpudl_tensor *inv_std) {
    *mean = gpudl__view(&l->saved, 0, -1, 1, &l->u.bn.channels);
    *inv_std = gpudl__view(&l->saved, l->u.bn.channels, -1, 1, &l->u.bn.channels);
}
static gpudl_status gpudl__bn_init(gpudl__pass *p) {   /* gamma 1, beta 0, running mean 0, running var 1 */
    GPUDL__TRY(gpudl_tensor_fill(p->m->ctx, &p->p[0], 1.0f));
    return gpudl_tensor_fill(p->m->ctx, &p->buf[1], 1.0f);
}
static gpudl_status gpudl__bn_fwd(gpudl__pass *p) {
    gpudl_tensor mean, inv_std;
    gpudl__bn_saved(p->l, &mean, &inv_std);
    return gpudl_batchnorm_forward(p->m->ctx, &p->y, &mean, &inv_std, &p->x, &p->p[0], &p->p[1], &p->buf[0], &p->buf[1],
                                   p->m->training, 0.1f, 1e-5f);
}
static gpudl_status gpudl__bn_bwd(gpudl__pass *p) {
    gpudl_tensor mean, inv_std;
    if (!p->m->training)
        return GPUDL__ERR(p->m->ctx, GPUDL_ERR_UNSUPPORTED, "model_backward: layer %d is batch norm in eval mode; "
                          "train with gpudl_model_train(m, 1)", p->i);
    gpudl__bn_saved(p->l, &mean, &inv_std);
    return gpudl_batchnorm_backward(p->m->ctx, p->dx, &p->g[0], &p->g[1], &p->dy, &p->x, &p->p[0], &mean, &inv_std);
}
static const gpudl__kind gpudl__kind_batchnorm = {"batchnorm", {"weight", "bias", NULL}, {"running_mean", "running_var", NULL},
                                                  GPUDL__KIND_F32_PARAMS | GPUDL__KIND_SEE_THROUGH, gpudl__bn_init,
                                                  gpudl__bn_fwd, gpudl__bn_bwd};

#define GPUDL__DROPOUT_STREAM 0xd20b0d20b0d2ull   /* xor'ed into the model's seed for the dropout masks */
/* The dropout masks' seed: another stream on each rank of a data-parallel model. */
static uint64_t gpudl__dropout_seed(const gpudl_model *m) {
    int rank = gpudl_dist_rank(m->dist);
    return m->seed ^ GPUDL__DROPOUT_STREAM ^ (rank ? gpudl__mix64((uint64_t)rank) : 0);
}
static gpudl_status gpudl__dropout_fwd(gpudl__pass *p) {
    gpudl_model *m = p->m;
    gpudl__layer *l = p->l;
    if (!m->training || l->u.dropout.p == 0.0f) return gpudl__copy_same(m->ctx, &p->y, &p->x);
    l->u.dropout.offset = m->rng_offset;
    m->rng_offset += (uint64_t)gpudl_tensor_numel(&p->x);
    return gpudl_dropout_forward(m->ctx, &p->y, &p->x, l->u.dropout.p, gpudl__dropout_seed(m), l->u.dropout.offset);
}
static gpudl_status gpudl__dropout_bwd(gpudl__pass *p) {
    gpudl_model *m = p->m;
    const gpudl__layer *l = p->l;
    if (!p->dx) return GPUDL_OK;
    if (!m->training || l->u.dropout.p == 0.0f) return gpudl__copy_same(m->ctx, p->dx, &p->dy);
    return gpudl_dropout_backward(m->ctx, p->dx, &p->dy, l->u.dropout.p, gpudl__dropout_seed(m), l->u.dropout.offset);
}
static const gpudl__kind gpudl__kind_dropout = {"dropout", {NULL}, {NULL}, GPUDL__KIND_SEE_THROUGH, NULL, gpudl__dropout_fwd,
                                                gpudl__dropout_bwd};

/* A view: forward points its output at the input, backward has nothing to do. */
static const gpudl__kind gpudl__kind_flatten = {"flatten", {NULL}, {NULL}, GPUDL__KIND_VIEW | GPUDL__KIND_SEE_THROUGH, NULL,
                                                NULL, NULL};

/* Whether the first activation after layer i, looking through the kinds
   that leave it alone, is ReLU-like (the default init is then He's). */
static int gpudl__relu_like(const gpudl_model *m, int i) {
    for (i = i + 1; i < m->nlayers; i++) {
        const gpudl__layer *l = &m->layers[i];
        if (l->kind->flags & GPUDL__KIND_SEE_THROUGH) continue;
        return l->kind == &gpudl__kind_act && (l->u.act.fn == GPUDL_ACT_RELU || l->u.act.fn == GPUDL_ACT_LEAKY_RELU ||
                                               l->u.act.fn == GPUDL_ACT_GELU);
    }
    return 0;
}

#define GPUDL__GPT_STD 0.02f   /* GPT-2's init of embeddings and attention weights: normal(0, 0.02) */
/* GPUDL_INIT_GPT2's std for parameter j of layer i: the projections that
   close a residual (layer i's output goes straight into a residual end;
   attention's c_proj, its parameter 2) are scaled by 1 / sqrt(the number
   of residual ends), as GPT-2 scales its c_proj by 1 / sqrt(2 n_layer). */
static float gpudl__gpt2_std(const gpudl_model *m, int i, int j) {
    int k, ends = 0, closes = i + 1 < m->nlayers && (m->layers[i + 1].kind->flags & GPUDL__KIND_PASS_DY);
    if (m->layers[i].kind->flags & GPUDL__KIND_IDS) return GPUDL__GPT_STD;
    if (m->layers[i].np > 2 && j < 2) closes = 0;   /* attention's c_attn: inside the residual, not closing it */
    for (k = 0; k < m->nlayers; k++) ends += (m->layers[k].kind->flags & GPUDL__KIND_PASS_DY) != 0;
    return closes && ends ? GPUDL__GPT_STD / sqrtf((float)ends) : GPUDL__GPT_STD;
}
static gpudl_status gpudl__normal_init(gpudl__pass *p, int j) {
    float std = p->m->desc.init == GPUDL_INIT_GPT2 ? gpudl__gpt2_std(p->m, p->i, j) : GPUDL__GPT_STD;
    return gpudl__fill_random(p->m->ctx, &p->p[j], p->m->seed, (uint64_t)p->l->poff[j], 1, 0.0f, std);
}

/* Weights (out, in, ...) drawn from fan-in and fan-out: He's normal before
   a ReLU-like activation (or when asked for), Glorot's uniform otherwise;
   the bias stays 0. Each weight's draw depends on its offset only. */
static gpudl_status gpudl__fan_fill(gpudl__pass *p, int j) {   /* parameter j; a 1-D one is its own fan in and out */
    gpudl_model *m = p->m;
    const gpudl__shape *w = &p->l->pshape[j];
    double field = (double)gpudl__prod(w->ndim - 2, w->d + 2), fan_out = (double)w->d[0] * field;
    double fan_in = w->ndim > 1 ? (double)w->d[1] * field : fan_out;
    uint64_t off = (uint64_t)p->l->poff[j];
    float a;
    if (m->desc.init == GPUDL_INIT_GPT2) return gpudl__normal_init(p, j);
    if (m->desc.init == GPUDL_INIT_HE || (m->desc.init == GPUDL_INIT_DEFAULT && gpudl__relu_like(m, p->i)))
        return gpudl__fill_random(m->ctx, &p->p[j], m->seed, off, 1, 0.0f, (float)sqrt(2.0 / fan_in));
    a = (float)sqrt(6.0 / (fan_in + fan_out));
    return gpudl__fill_random(m->ctx, &p->p[j], m->seed, off, 0, -a, a);
}
static gpudl_status gpudl__fan_init(gpudl__pass *p) { return gpudl__fan_fill(p, 0); }

static gpudl_status gpudl__linear_fwd(gpudl__pass *p) { return gpudl_linear_forward(p->m->ctx, &p->y, &p->x, &p->p[0], &p->p[1]); }
static gpudl_status gpudl__linear_bwd(gpudl__pass *p) {
#ifndef GPUDL_NO_CUDA
    if (p->overwrite || p->mask)   /* the model asks only on the GPU, without the user's ops */
        return gpudl__linear_bwd_gpu(p->m->ctx, p->dx, &p->g[0], &p->g[1], &p->dy, &p->x, &p->p[0], p->overwrite, p->mask,
                                     &p->dx_masked, &p->masked);
#endif
    return gpudl_linear_backward(p->m->ctx, p->dx, &p->g[0], &p->g[1], &p->dy, &p->x, &p->p[0]);
}
static const gpudl__kind gpudl__kind_linear = {"linear", {"weight", "bias", NULL}, {NULL}, GPUDL__KIND_OVERWRITES, gpudl__fan_init, gpudl__linear_fwd,
                                               gpudl__linear_bwd};

static gpudl_status gpudl__conv_fwd(gpudl__pass *p) {
    return gpudl_conv2d_forward(p->m->ctx, &p->y, &p->x, &p->p[0], &p->p[1], &p->l->u.conv);
}
static gpudl_status gpudl__conv_bwd(gpudl__pass *p) {
    return gpudl__conv2d_backward(p->m->ctx, p->dx, &p->g[0], &p->g[1], &p->dy, &p->x, &p->p[0], &p->l->u.conv, p->overwrite);
}
static const gpudl__kind gpudl__kind_conv2d = {"conv2d", {"weight", "bias", NULL}, {NULL}, GPUDL__KIND_OVERWRITES, gpudl__fan_init, gpudl__conv_fwd,
                                               gpudl__conv_bwd};

/* ---- the transformer's kinds (the transformer section's ops as layers) ---- */

/* (N, ..., F) as (N ..., F): a linear layer on (T, F) samples acts on each position. */
static gpudl_tensor gpudl__rows2(const gpudl_tensor *t) {
    gpudl_tensor v = *t;
    if (t->ndim > 2) {
        int64_t f = t->shape[t->ndim - 1];
        v.shape[0] = gpudl_tensor_numel(t) / f;
        v.shape[1] = f;
        v.ndim = 2;
    }
    return v;
}
/* A pass's activations as rows (for a linear layer on (T, F) samples). */
static void gpudl__pass_rows(gpudl__pass *p) {
    p->x = gpudl__rows2(&p->x);
    p->y = gpudl__rows2(&p->y);
    p->dy = gpudl__rows2(&p->dy);
    if (p->dx) *p->dx = gpudl__rows2(p->dx);
    p->dx_masked = gpudl__rows2(&p->dx_masked);
}

static gpudl_status gpudl__emb_init(gpudl__pass *p) {
    GPUDL__TRY(gpudl__normal_init(p, 0));
    return gpudl__normal_init(p, 1);
}
static gpudl_status gpudl__emb_fwd(gpudl__pass *p) { return gpudl_embedding_forward(p->m->ctx, &p->y, &p->x, &p->p[0], &p->p[1]); }
static gpudl_status gpudl__emb_bwd(gpudl__pass *p) {   /* ids have no gradient */
    return gpudl__embedding_bwd(p->m->ctx, &p->g[0], &p->g[1], &p->dy, &p->x, p->overwrite);
}
static const gpudl__kind gpudl__kind_embedding = {"embedding", {"wte.weight", "wpe.weight", NULL}, {NULL},
                                                  GPUDL__KIND_IDS | GPUDL__KIND_OVERWRITES,
                                                  gpudl__emb_init, gpudl__emb_fwd, gpudl__emb_bwd};

/* Layer norm and the residual pair know of each other (a pre-norm block's
   fusions, below): their kinds first, their functions after. */
static gpudl_status gpudl__ln_init(gpudl__pass *p);
static gpudl_status gpudl__ln_fwd(gpudl__pass *p);
static gpudl_status gpudl__ln_bwd(gpudl__pass *p);
static gpudl_status gpudl__res_begin_bwd(gpudl__pass *p);
static gpudl_status gpudl__res_end_fwd(gpudl__pass *p);
static gpudl_status gpudl__res_end_bwd(gpudl__pass *p);
static const gpudl__kind gpudl__kind_layernorm = {"layernorm", {"weight", "bias", NULL}, {NULL},
                                                  GPUDL__KIND_F32_PARAMS | GPUDL__KIND_OVERWRITES,
                                                  gpudl__ln_init, gpudl__ln_fwd, gpudl__ln_bwd};
static const gpudl__kind gpudl__kind_res_begin = {"residual", {NULL}, {NULL}, GPUDL__KIND_VIEW | GPUDL__KIND_SEE_THROUGH, NULL,
                                                  NULL, gpudl__res_begin_bwd};
static const gpudl__kind gpudl__kind_res_end = {"res_end", {NULL}, {NULL}, GPUDL__KIND_PASS_DY, NULL, gpudl__res_end_fwd,
                                                gpudl__res_end_bwd};

/* Layer norm's saved statistics for the current batch: mean, then rstd (max_batch R apart). */
static void gpudl__ln_saved(const gpudl_model *m, const gpudl__layer *l, gpudl_tensor *mean, gpudl_tensor *rstd) {
    int64_t r = l->saved_per_sample / 2, n = m->batch * r;
    *mean = gpudl__view(&l->saved, 0, -1, 1, &n);
    *rstd = gpudl__view(&l->saved, m->desc.max_batch * r, -1, 1, &n);
}
static gpudl_status gpudl__ln_init(gpudl__pass *p) { return gpudl_tensor_fill(p->m->ctx, &p->p[0], 1.0f); }
/* A pre-norm transformer's residuals meet its layer norms: a residual's end
   just before a layer norm (or before the next block's begin and its layer
   norm) is done by the layer norm's kernel (sum = x + r written on the way:
   one pass over the residual stream, not two), and a layer norm just after
   a residual's begin adds the other path's gradient into its dx (begin then
   has nothing to add). gpudl__ln_after_end: that end's index, or -1. */
static int gpudl__ln_after_end(const gpudl_model *m, int i) {
    if (i < 1 || i >= m->nlayers || m->layers[i].kind != &gpudl__kind_layernorm) return -1;
    if (m->layers[i - 1].kind == &gpudl__kind_res_end) return i - 1;
    if (i >= 2 && m->layers[i - 1].kind == &gpudl__kind_res_begin && m->layers[i - 2].kind == &gpudl__kind_res_end) return i - 2;
    return -1;
}
static int gpudl__end_in_ln(const gpudl_model *m, int e) {   /* residual end e's add is a layer norm's */
    return gpudl__ln_after_end(m, e + 1) == e || gpudl__ln_after_end(m, e + 2) == e;
}
static int gpudl__ln_after_begin(const gpudl_model *m, int i) {
    return i >= 1 && m->layers[i].kind == &gpudl__kind_layernorm && m->layers[i - 1].kind == &gpudl__kind_res_begin;
}
static gpudl_status gpudl__ln_fwd(gpudl__pass *p) {
    gpudl_model *m = p->m;
    gpudl_tensor mean, rstd;
    gpudl__ln_saved(m, p->l, &mean, &rstd);
    int e = gpudl__ln_after_end(m, p->i);
    if (e >= 0) {   /* the end's work: its output (this x) = its input + its begin's input */
        gpudl_tensor ex = gpudl__layer_input(m, e), r = gpudl__layer_output(m, m->layers[e].u.res.other, 0);
        return gpudl__layernorm_fwd(m->ctx, &p->y, &mean, &rstd, &ex, &r, &p->x, &p->p[0], &p->p[1], 1e-5f);
    }
    return gpudl_layernorm_forward(m->ctx, &p->y, &mean, &rstd, &p->x, &p->p[0], &p->p[1], 1e-5f);
}
static gpudl_status gpudl__ln_bwd(gpudl__pass *p) {
    gpudl_model *m = p->m;
    gpudl_tensor mean, rstd, dend;
    int add = gpudl__ln_after_begin(m, p->i) && p->dx;
    gpudl__ln_saved(m, p->l, &mean, &rstd);
    if (add) dend = gpudl__layer_output(m, m->layers[p->i - 1].u.res.other, 1);   /* the end's dy: the skip path */
    return gpudl__layernorm_bwd(m->ctx, p->dx, &p->g[0], &p->g[1], &p->dy, &p->x, &p->p[0], &mean, &rstd, add ? &dend : NULL,
                                p->overwrite);
}

/* Attention's intermediates for the current batch, in its work buffer
   (regions sized for max_batch): qkv (N,T,3C), the heads' output ya
   (N,T,C), their gradients, and the weights (N,NH,T,T) (unfused) or, in
   saved (F32), lse (N,NH,T) (fused). */
typedef struct gpudl__attn_bufs { gpudl_tensor qkv, ya, dqkv, dya, att; } gpudl__attn_bufs;
static void gpudl__attn_bufs_of(const gpudl_model *m, const gpudl__layer *l, gpudl__attn_bufs *b) {
    int64_t T = l->in_shape[0], C = l->in_shape[1], NH = l->u.attn.heads, B = m->desc.max_batch, N = m->batch;
    int64_t s3[2], s1[2], sa[3];
    s3[0] = T; s3[1] = 3 * C;
    s1[0] = T; s1[1] = C;
    sa[0] = NH; sa[1] = T; sa[2] = T;
    b->qkv = gpudl__view(&l->work, 0, N, 2, s3);
    b->ya = gpudl__view(&l->work, B * T * 3 * C, N, 2, s1);
    b->dqkv = gpudl__view(&l->work, B * T * 4 * C, N, 2, s3);
    b->dya = gpudl__view(&l->work, B * T * 7 * C, N, 2, s1);
    if (l->u.attn.fused) b->att = gpudl__view(&l->saved, 0, N, 2, sa);   /* lse (N,NH,T) F32 */
    else b->att = gpudl__view(&l->work, B * T * 8 * C, N, 3, sa);
}
static gpudl_status gpudl__attn_init(gpudl__pass *p) {   /* weights normal(0, 0.02), biases 0 */
    GPUDL__TRY(gpudl__normal_init(p, 0));
    return gpudl__normal_init(p, 2);
}
static gpudl_status gpudl__attn_fwd(gpudl__pass *p) {
    gpudl_ctx *ctx = p->m->ctx;
    gpudl__attn_bufs b;
    gpudl_tensor x2, q2, ya2, y2;
    gpudl__attn_bufs_of(p->m, p->l, &b);
    x2 = gpudl__rows2(&p->x); q2 = gpudl__rows2(&b.qkv); ya2 = gpudl__rows2(&b.ya); y2 = gpudl__rows2(&p->y);
    GPUDL__TRY(gpudl_linear_forward(ctx, &q2, &x2, &p->p[0], &p->p[1]));
    if (p->l->u.attn.fused) GPUDL__TRY(gpudl_attention_fused_forward(ctx, &b.ya, &b.att, &b.qkv, p->l->u.attn.heads));
    else GPUDL__TRY(gpudl_attention_forward(ctx, &b.ya, &b.att, &b.qkv, p->l->u.attn.heads));
    return gpudl_linear_forward(ctx, &y2, &ya2, &p->p[2], &p->p[3]);
}
/* A linear layer's backward inside a kind: on the GPU after zero_grad
   (overwrite) the gradients are written, with cuBLASLt's BGRADB summing
   the bias gradient in the weight's GEMM (one launch fewer). */
static gpudl_status gpudl__linear_bwd_in(gpudl__pass *p, gpudl_tensor *dx, int w, const gpudl_tensor *dy, const gpudl_tensor *x) {
#ifndef GPUDL_NO_CUDA
    int masked;
    if (p->overwrite)
        return gpudl__linear_bwd_gpu(p->m->ctx, dx, &p->g[w], &p->g[w + 1], dy, x, &p->p[w], 1, NULL, NULL, &masked);
#endif
    return gpudl_linear_backward(p->m->ctx, dx, &p->g[w], &p->g[w + 1], dy, x, &p->p[w]);
}
static gpudl_status gpudl__attn_bwd(gpudl__pass *p) {
    gpudl_ctx *ctx = p->m->ctx;
    gpudl__attn_bufs b;
    gpudl_tensor x2, dq2, ya2, dya2, dy2, dx2;
    gpudl__attn_bufs_of(p->m, p->l, &b);
    x2 = gpudl__rows2(&p->x); dq2 = gpudl__rows2(&b.dqkv); ya2 = gpudl__rows2(&b.ya); dya2 = gpudl__rows2(&b.dya);
    dy2 = gpudl__rows2(&p->dy);
    GPUDL__TRY(gpudl__linear_bwd_in(p, &dya2, 2, &dy2, &ya2));
    if (p->l->u.attn.fused)
        GPUDL__TRY(gpudl_attention_fused_backward(ctx, &b.dqkv, &b.dya, &b.qkv, &b.ya, &b.att, p->l->u.attn.heads));
    else GPUDL__TRY(gpudl_attention_backward(ctx, &b.dqkv, &b.dya, &b.qkv, &b.att, p->l->u.attn.heads));
    if (p->dx) dx2 = gpudl__rows2(p->dx);
    return gpudl__linear_bwd_in(p, p->dx ? &dx2 : NULL, 0, &dq2, &x2);
}
static const gpudl__kind gpudl__kind_attention = {"attention", {"c_attn.weight", "c_attn.bias", "c_proj.weight", "c_proj.bias",
                                                  NULL}, {NULL}, GPUDL__KIND_OVERWRITES, gpudl__attn_init, gpudl__attn_fwd,
                                                  gpudl__attn_bwd};

/* A residual pair: begin is a view of its input (nothing to do forward);
   end adds begin's input to its own. Backward, end passes dy on down the
   inner path (a copy) and begin adds end's dy to what the inner path gave
   back: the two paths' gradients summed where they meet. */
static gpudl_status gpudl__res_begin_bwd(gpudl__pass *p) {
    gpudl_tensor dend = gpudl__layer_output(p->m, p->l->u.res.other, 1);
    if (gpudl__ln_after_begin(p->m, p->i + 1)) return GPUDL_OK;   /* the layer norm above added it */
    return gpudl__axpby(p->m->ctx, &p->dy, 1.0f, &dend, 1.0f);
}
static gpudl_status gpudl__res_end_fwd(gpudl__pass *p) {
    gpudl_tensor r = gpudl__layer_output(p->m, p->l->u.res.other, 0);   /* begin's output: its input's memory */
    if (gpudl__end_in_ln(p->m, p->i)) return GPUDL_OK;   /* the layer norm after it does this add */
    return gpudl_add(p->m->ctx, &p->y, &p->x, &r);
}
static gpudl_status gpudl__res_end_bwd(gpudl__pass *p) {   /* dx is dy's memory (gpudl__dout_shared) but after a view */
    return p->dx && p->dx->data != p->dy.data ? gpudl__copy_same(p->m->ctx, p->dx, &p->dy) : GPUDL_OK;
}

/* ---- adding layers: check the arguments, fill in the shapes ---- */

GPUDL__DEF gpudl_status gpudl_model_add_linear(gpudl_model *m, int64_t in_features, int64_t out_features) {
    gpudl__layer l;
    char sh[64];
    GPUDL__TRY(gpudl__model_live(m, "model_add_linear"));
    if (in_features < 1 || out_features < 1)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_INVALID_ARG, "add_linear: features must be >= 1 (got %lld -> %lld)",
                          (long long)in_features, (long long)out_features);
    if (m->cur_ndim > 2 || m->cur_shape[m->cur_ndim - 1] != in_features)   /* (F), or (T, F): per position */
        return GPUDL__ADD_ERR(m, GPUDL_ERR_SHAPE, "add_linear(%lld -> %lld): the previous layer gives %s per sample%s",
                          (long long)in_features, (long long)out_features, gpudl__shape_str(m->cur_ndim, m->cur_shape, sh, sizeof sh),
                          m->cur_ndim > 2 ? " (add a flatten first)" : "");
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_linear;
    l.out_ndim = m->cur_ndim;
    l.out_shape[0] = m->cur_ndim == 2 ? m->cur_shape[0] : out_features;
    l.out_shape[l.out_ndim - 1] = out_features;
    l.pshape[0] = gpudl__shape4(2, out_features, in_features, 0, 0);
    l.pshape[1] = gpudl__shape4(1, out_features, 0, 0, 0);
    return gpudl__add(m, &l);
}

GPUDL__DEF gpudl_status gpudl_model_add_conv2d(gpudl_model *m, int64_t in_channels, int64_t out_channels, int64_t kernel,
                                               const gpudl_conv2d_desc *desc) {
    gpudl__layer l;
    gpudl__convg g;
    char sh[64];
    GPUDL__TRY(gpudl__model_live(m, "model_add_conv2d"));
    if (m->cur_ndim != 3 || m->cur_shape[0] != in_channels || in_channels < 1 || out_channels < 1 || kernel < 1)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_SHAPE, "add_conv2d(%lld -> %lld channels, kernel %lld): the previous layer gives %s "
                          "per sample; need C x H x W with C = in_channels", (long long)in_channels, (long long)out_channels,
                          (long long)kernel, gpudl__shape_str(m->cur_ndim, m->cur_shape, sh, sizeof sh));
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_conv2d;
    if (desc) l.u.conv = *desc;
    g.sh = l.u.conv.stride_h ? l.u.conv.stride_h : 1; g.sw = l.u.conv.stride_w ? l.u.conv.stride_w : 1;
    g.dh = l.u.conv.dil_h ? l.u.conv.dil_h : 1; g.dw = l.u.conv.dil_w ? l.u.conv.dil_w : 1;
    g.ph = l.u.conv.pad_h; g.pw = l.u.conv.pad_w;
    if (g.ph < 0 || g.pw < 0 || g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 ||
        m->cur_shape[1] + 2 * g.ph < g.dh * (kernel - 1) + 1 || m->cur_shape[2] + 2 * g.pw < g.dw * (kernel - 1) + 1)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_SHAPE, "add_conv2d: kernel %lld does not fit a %s input with this padding",
                          (long long)kernel, gpudl__shape_str(m->cur_ndim, m->cur_shape, sh, sizeof sh));
    l.out_ndim = 3;
    l.out_shape[0] = out_channels;
    l.out_shape[1] = (m->cur_shape[1] + 2 * g.ph - g.dh * (kernel - 1) - 1) / g.sh + 1;
    l.out_shape[2] = (m->cur_shape[2] + 2 * g.pw - g.dw * (kernel - 1) - 1) / g.sw + 1;
    l.pshape[0] = gpudl__shape4(4, out_channels, in_channels, kernel, kernel);
    l.pshape[1] = gpudl__shape4(1, out_channels, 0, 0, 0);
    return gpudl__add(m, &l);
}

GPUDL__DEF gpudl_status gpudl_model_add_act(gpudl_model *m, gpudl_act act, float alpha) {
    gpudl__layer l;
    GPUDL__TRY(gpudl__model_live(m, "model_add_act"));
    if (act < GPUDL_ACT_RELU || act > GPUDL_ACT_SIGMOID)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_INVALID_ARG, "add_act: %d is not a gpudl_act", (int)act);
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_act;
    l.u.act.fn = act;
    l.u.act.alpha = (act == GPUDL_ACT_LEAKY_RELU && alpha == 0.0f) ? 0.01f : alpha;
    return gpudl__add(m, &l);
}

GPUDL__DEF gpudl_status gpudl_model_add_relu(gpudl_model *m) { return gpudl_model_add_act(m, GPUDL_ACT_RELU, 0.0f); }

GPUDL__DEF gpudl_status gpudl_model_add_pool2d(gpudl_model *m, const gpudl_pool2d_desc *desc) {
    gpudl__layer l;
    int64_t sh, sw;
    char s[64];
    GPUDL__TRY(gpudl__model_live(m, "model_add_pool2d"));
    if (!desc || (desc->kind != GPUDL_POOL_MAX && desc->kind != GPUDL_POOL_AVG) || desc->k_h < 1 || desc->k_w < 1 ||
        desc->stride_h < 0 || desc->stride_w < 0 || desc->pad_h < 0 || desc->pad_w < 0 || 2 * desc->pad_h > desc->k_h ||
        2 * desc->pad_w > desc->k_w)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_INVALID_ARG, "add_pool2d: need kind MAX or AVG, a kernel >= 1 and padding at "
                          "most half the kernel");
    if (m->cur_ndim != 3 || m->cur_shape[1] + 2 * desc->pad_h < desc->k_h || m->cur_shape[2] + 2 * desc->pad_w < desc->k_w)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_SHAPE, "add_pool2d: a %lldx%lld window does not fit a %s input",
                          (long long)desc->k_h, (long long)desc->k_w, gpudl__shape_str(m->cur_ndim, m->cur_shape, s, sizeof s));
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_pool2d;
    l.u.pool = *desc;
    sh = desc->stride_h ? desc->stride_h : desc->k_h;
    sw = desc->stride_w ? desc->stride_w : desc->k_w;
    l.out_ndim = 3;
    l.out_shape[0] = m->cur_shape[0];
    l.out_shape[1] = (m->cur_shape[1] + 2 * desc->pad_h - desc->k_h) / sh + 1;
    l.out_shape[2] = (m->cur_shape[2] + 2 * desc->pad_w - desc->k_w) / sw + 1;
    return gpudl__add(m, &l);
}

GPUDL__DEF gpudl_status gpudl_model_add_maxpool2d(gpudl_model *m, int64_t kernel, int64_t stride) {
    gpudl_pool2d_desc d;
    memset(&d, 0, sizeof d);
    d.kind = GPUDL_POOL_MAX;
    d.k_h = d.k_w = kernel;
    d.stride_h = d.stride_w = stride;
    return gpudl_model_add_pool2d(m, &d);
}

GPUDL__DEF gpudl_status gpudl_model_add_batchnorm2d(gpudl_model *m, int64_t channels) {
    gpudl__layer l;
    char s[64];
    GPUDL__TRY(gpudl__model_live(m, "model_add_batchnorm2d"));
    if ((m->cur_ndim != 3 && m->cur_ndim != 1) || m->cur_shape[0] != channels)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_SHAPE, "add_batchnorm2d(%lld): the previous layer gives %s per sample; need "
                          "C x H x W (or C) with C = channels", (long long)channels,
                          gpudl__shape_str(m->cur_ndim, m->cur_shape, s, sizeof s));
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_batchnorm;
    l.u.bn.channels = channels;
    l.pshape[0] = l.pshape[1] = l.bufshape[0] = l.bufshape[1] = gpudl__shape4(1, channels, 0, 0, 0);
    l.savedshape = gpudl__shape4(2, 2, channels, 0, 0);
    return gpudl__add(m, &l);
}

GPUDL__DEF gpudl_status gpudl_model_add_dropout(gpudl_model *m, float p) {
    gpudl__layer l;
    GPUDL__TRY(gpudl__model_live(m, "model_add_dropout"));
    if (!(p >= 0.0f && p < 1.0f)) return GPUDL__ADD_ERR(m, GPUDL_ERR_INVALID_ARG, "add_dropout: p = %g is not in [0, 1)", (double)p);
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_dropout;
    l.u.dropout.p = p;
    return gpudl__add(m, &l);
}

GPUDL__DEF gpudl_status gpudl_model_add_flatten(gpudl_model *m) {
    gpudl__layer l;
    GPUDL__TRY(gpudl__model_live(m, "model_add_flatten"));
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_flatten;
    l.out_ndim = 1;
    l.out_shape[0] = gpudl__prod(m->cur_ndim, m->cur_shape);
    return gpudl__add(m, &l);
}

GPUDL__DEF gpudl_status gpudl_model_add_embedding(gpudl_model *m, int64_t vocab, int64_t channels) {
    gpudl__layer l;
    char sh[64];
    GPUDL__TRY(gpudl__model_live(m, "model_add_embedding"));
    if (vocab < 1 || channels < 1)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_INVALID_ARG, "add_embedding: vocab and channels must be >= 1 (got %lld, %lld)",
                              (long long)vocab, (long long)channels);
    if (m->nlayers != 0 || m->in_ndim != 1)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_SHAPE, "add_embedding: the first layer of a model of sequences, created with the "
                              "sample shape {T} (%s)", m->nlayers ? "layers were added before it" :
                              gpudl__shape_str(m->in_ndim, m->in_shape, sh, sizeof sh));
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_embedding;
    l.out_ndim = 2; l.out_shape[0] = m->in_shape[0]; l.out_shape[1] = channels;
    l.pshape[0] = gpudl__shape4(2, vocab, channels, 0, 0);
    l.pshape[1] = gpudl__shape4(2, m->in_shape[0], channels, 0, 0);
    return gpudl__add(m, &l);
}

/* The checks of a layer that takes (..., C) per sample. */
static gpudl_status gpudl__add_channels(gpudl_model *m, const char *what, int64_t channels, int need2d) {
    char sh[64];
    if (channels < 1)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_INVALID_ARG, "%s: channels must be >= 1 (got %lld)", what, (long long)channels);
    if (m->cur_shape[m->cur_ndim - 1] != channels || (need2d && m->cur_ndim != 2))
        return GPUDL__ADD_ERR(m, GPUDL_ERR_SHAPE, "%s(%lld): the previous layer gives %s per sample; need %s", what,
                              (long long)channels, gpudl__shape_str(m->cur_ndim, m->cur_shape, sh, sizeof sh),
                              need2d ? "(T, channels)" : "(..., channels)");
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_model_add_layernorm(gpudl_model *m, int64_t channels) {
    gpudl__layer l;
    GPUDL__TRY(gpudl__model_live(m, "model_add_layernorm"));
    GPUDL__TRY(gpudl__add_channels(m, "add_layernorm", channels, 0));
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_layernorm;
    l.pshape[0] = gpudl__shape4(1, channels, 0, 0, 0);
    l.pshape[1] = gpudl__shape4(1, channels, 0, 0, 0);
    l.saved_per_sample = 2 * (gpudl__prod(m->cur_ndim, m->cur_shape) / channels);   /* mean and rstd per row */
    return gpudl__add(m, &l);
}

GPUDL__DEF gpudl_status gpudl_model_add_attention(gpudl_model *m, int64_t channels, int64_t heads) {
    gpudl__layer l;
    int64_t C = channels;
    GPUDL__TRY(gpudl__model_live(m, "model_add_attention"));
    GPUDL__TRY(gpudl__add_channels(m, "add_attention", channels, 1));
    if (heads < 1 || C % heads)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_INVALID_ARG, "add_attention: heads (%lld) must divide channels (%lld)",
                              (long long)heads, (long long)C);
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_attention;
    l.u.attn.heads = heads;
    l.pshape[0] = gpudl__shape4(2, 3 * C, C, 0, 0);
    l.pshape[1] = gpudl__shape4(1, 3 * C, 0, 0, 0);
    l.pshape[2] = gpudl__shape4(2, C, C, 0, 0);
    l.pshape[3] = gpudl__shape4(1, C, 0, 0, 0);
    return gpudl__add(m, &l);   /* its path and buffers: at build (gpudl__attn_path) */
}

/* An attention layer's path, at build (gpudl_model_desc.attention), and
   the buffers it needs. Auto: the fused kernels where the weights (heads
   T T per sample) would outweigh the layer's other buffers (8 T C per
   sample: qkv, the heads' output, their gradients), and on the GPU where
   the step is bound by launches. The model of that: the fused forward
   spends about 50 instructions per (query, key) pair in one warp (a dot
   product reduced across the warp, two exponentials, HS / 32 updates),
   so max_batch heads T^2 / 2 pairs run at about 0.8e12 warp-instructions
   a second on an H100 (132 SMs, 4 schedulers, ~1.5 GHz); the GEMM path
   issues four launches more forward and four more backward, about 3 us
   each in a graph. Equal at max_batch heads T^2 = 3.8e5: below it, fused;
   above it, the GEMMs on tensor cores win (the example, batch 32, 4 heads,
   context 64: 5.2e5, GEMMs, near the line; its --short: 2.6e4, fused). No GPU has timed this yet: tools/gpu_session.sh measures both
   (its gpt step: gpt_text --bench --attention 1 and 2). The CPU takes the
   GEMM path (its sgemm) unless the weights do not fit; so does a context
   with the user's causal softmax (gpudl_ops.attn_softmax_*, installed
   before the build: the fused kernels do not call it). */
static int gpudl__attn_path(const gpudl_model *m, gpudl__layer *l) {
    int64_t T = l->in_shape[0], C = l->in_shape[1], NH = l->u.attn.heads, HS = C / NH;
    const gpudl_ops *o = &m->ctx->ops[m->ctx->device == GPUDL_DEVICE_CUDA];
    int fused;
    if (m->desc.attention == 2 && HS > GPUDL__FUSED_MAX_HS) return -1;
    if (m->desc.attention) fused = m->desc.attention == 2;
    else if (o->attn_softmax_forward || o->attn_softmax_backward) fused = 0;   /* the user's softmax runs in the GEMM path */
    else fused = HS <= GPUDL__FUSED_MAX_HS && (NH * T > 16 * C || (m->ctx->device == GPUDL_DEVICE_CUDA &&
                                                                    m->desc.max_batch * NH * T * T <= 393216));
    l->u.attn.fused = fused;
    l->work_per_sample = 8 * T * C + (fused ? 0 : NH * T * T);
    l->saved_per_sample = fused ? NH * T : 0;
    return 0;
}

/* Open residual pairs: begins whose end is still to come (u.res.other -1). */
static int gpudl__open_residual(const gpudl_model *m) {
    int i, depth = 0;
    for (i = m->nlayers - 1; i >= 0; i--) {
        const gpudl__layer *l = &m->layers[i];
        if (l->kind == &gpudl__kind_res_end) depth++;
        else if (l->kind == &gpudl__kind_res_begin && depth-- == 0) return i;
    }
    return -1;
}

GPUDL__DEF gpudl_status gpudl_model_add_residual_begin(gpudl_model *m) {
    gpudl__layer l;
    GPUDL__TRY(gpudl__model_live(m, "model_add_residual_begin"));
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_res_begin;
    l.u.res.other = -1;
    return gpudl__add(m, &l);
}

GPUDL__DEF gpudl_status gpudl_model_add_residual_end(gpudl_model *m) {
    gpudl__layer l;
    int b;
    char s1[64], s2[64];
    GPUDL__TRY(gpudl__model_live(m, "model_add_residual_end"));
    b = gpudl__open_residual(m);
    if (b < 0) return GPUDL__ADD_ERR(m, GPUDL_ERR_INVALID_ARG, "add_residual_end: no residual_begin to close");
    if (b == m->nlayers - 1)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_INVALID_ARG, "add_residual_end: nothing between it and its residual_begin (layer %d)", b);
    if (m->cur_ndim != m->layers[b].out_ndim ||
        memcmp(m->cur_shape, m->layers[b].out_shape, sizeof(int64_t) * (size_t)m->cur_ndim))
        return GPUDL__ADD_ERR(m, GPUDL_ERR_SHAPE, "add_residual_end: the path gives %s per sample, its residual_begin (layer "
                              "%d) took %s: x + f(x) needs one shape", gpudl__shape_str(m->cur_ndim, m->cur_shape, s1, sizeof s1),
                              b, gpudl__shape_str(m->layers[b].out_ndim, m->layers[b].out_shape, s2, sizeof s2));
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_res_end;
    l.u.res.other = b;
    GPUDL__TRY(gpudl__add(m, &l));
    m->layers[b].u.res.other = m->nlayers - 1;
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_model_set_name(gpudl_model *m, const char *name) {
    gpudl__layer *l;
    size_t n;
    int i;
    GPUDL__TRY(gpudl__model_live(m, "model_set_name"));
    GPUDL__ENTER(m->ctx);
    if (m->built) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_set_name: the model is built; name layers as you add them");
    if (m->nlayers == 0) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_set_name: no layer yet (it names the last added)");
    l = &m->layers[m->nlayers - 1];
    n = name ? strlen(name) : 0;
    if (n == 0 || n >= sizeof l->name)
        return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_set_name: a name of 1 to %d characters (got %s%zu)",
                          (int)sizeof l->name - 1, name ? "" : "NULL, ", n);
    for (i = 0; i + 1 < m->nlayers; i++)
        if (!strcmp(m->layers[i].name, name))
            return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_set_name: layer %d is already named '%s' (a checkpoint "
                              "needs one name per tensor)", i, name);
    memcpy(l->name, name, n + 1);
    return GPUDL_OK;
}

/* A custom layer (gpudl_model_add_custom): its kind calls the user's
   callbacks with the pass's tensors. */
static void gpudl__custom_io(gpudl__pass *p, gpudl_layer_io *io) {
    int j;
    memset(io, 0, sizeof *io);
    io->ctx = p->m->ctx;
    io->user = p->l->u.custom.d.user;
    io->stream = gpudl__stream_for(p->m->ctx, &p->x);
    io->training = p->m->training;
    io->nparams = p->l->np;
    io->x = p->x; io->y = p->y; io->dy = p->dy; io->dx = p->dx;
    for (j = 0; j < p->l->np; j++) { io->p[j] = p->p[j]; io->g[j] = p->g[j]; }
}
static gpudl_status gpudl__custom_call(gpudl__pass *p, int backward) {
    const gpudl__layer *l = p->l;
    gpudl_status (*fn)(gpudl_layer_io *) = backward ? l->u.custom.d.backward : l->u.custom.d.forward;
    gpudl_layer_io io;
    gpudl_status s;
    if (!fn) return GPUDL__ERR(p->m->ctx, GPUDL_ERR_UNSUPPORTED, "layer %d ('%s') has no %s callback", p->i, l->u.custom.name,
                               backward ? "backward" : "forward");
    gpudl__custom_io(p, &io);
    s = fn(&io);
    if (s == GPUDL_OK) return GPUDL_OK;
    return GPUDL__ERR(p->m->ctx, s, "layer %d ('%s'): its %s callback returned %d: %s", p->i, l->u.custom.name,
                      backward ? "backward" : "forward", (int)s, gpudl_status_string(s));
}
static gpudl_status gpudl__custom_init(gpudl__pass *p) {
    int j;
    for (j = 0; j < p->l->np; j++) {
        gpudl_param_init how = p->l->u.custom.d.param_init[j];
        if (how == GPUDL_PARAM_ONES) GPUDL__TRY(gpudl_tensor_fill(p->m->ctx, &p->p[j], 1.0f));
        else if (how == GPUDL_PARAM_FAN) GPUDL__TRY(gpudl__fan_fill(p, j));
    }
    return GPUDL_OK;
}
static gpudl_status gpudl__custom_fwd(gpudl__pass *p) { return gpudl__custom_call(p, 0); }
static gpudl_status gpudl__custom_bwd(gpudl__pass *p) { return gpudl__custom_call(p, 1); }
static const gpudl__kind gpudl__kind_custom = {"custom", {NULL}, {NULL}, GPUDL__KIND_CUSTOM, gpudl__custom_init, gpudl__custom_fwd,
                                               gpudl__custom_bwd};

GPUDL__DEF gpudl_status gpudl_model_add_custom(gpudl_model *m, const gpudl_layer_desc *desc) {
    gpudl__layer l;
    int j, k;
    GPUDL__TRY(gpudl__model_live(m, "model_add_custom"));
    if (!desc || !desc->forward || desc->nparams < 0 || desc->nparams > GPUDL_LAYER_MAX_PARAMS || desc->out_ndim < 0 ||
        desc->out_ndim > 3)
        return GPUDL__ADD_ERR(m, GPUDL_ERR_INVALID_ARG, "add_custom: need a desc with a forward callback, 0 to %d parameters "
                              "and an output of 0 (as the input) to 3 dims", GPUDL_LAYER_MAX_PARAMS);
    memset(&l, 0, sizeof l);
    l.kind = &gpudl__kind_custom;
    l.u.custom.d = *desc;
    snprintf(l.u.custom.name, sizeof l.u.custom.name, "%s", desc->name && desc->name[0] ? desc->name : "custom");
    for (j = 0; j < desc->nparams; j++) {
        int nd = desc->param_ndim[j];
        const char *pn = desc->param_names[j];
        if (nd < 1 || nd > 4 || (int)desc->param_init[j] < GPUDL_PARAM_ZEROS || desc->param_init[j] > GPUDL_PARAM_FAN)
            return GPUDL__ADD_ERR(m, GPUDL_ERR_INVALID_ARG, "add_custom('%s'): parameter %d needs 1 to 4 dims and a "
                                  "gpudl_param_init", l.u.custom.name, j);
        for (k = 0; k < nd; k++)
            if (desc->param_shape[j][k] < 1)
                return GPUDL__ADD_ERR(m, GPUDL_ERR_SHAPE, "add_custom('%s'): parameter %d has a dim of %lld", l.u.custom.name, j,
                                      (long long)desc->param_shape[j][k]);
        l.pshape[j] = gpudl__shape4(nd, desc->param_shape[j][0], nd > 1 ? desc->param_shape[j][1] : 0,
                                    nd > 2 ? desc->param_shape[j][2] : 0, nd > 3 ? desc->param_shape[j][3] : 0);
        if (pn && pn[0]) snprintf(l.u.custom.pnames[j], sizeof l.u.custom.pnames[j], "%s", pn);
        else snprintf(l.u.custom.pnames[j], sizeof l.u.custom.pnames[j], "param%d", j);
        for (k = 0; k < j; k++)
            if (!strcmp(l.u.custom.pnames[k], l.u.custom.pnames[j]))
                return GPUDL__ADD_ERR(m, GPUDL_ERR_INVALID_ARG, "add_custom('%s'): two parameters are named '%s' (a "
                                      "checkpoint needs one name each)", l.u.custom.name, l.u.custom.pnames[j]);
    }
    if (desc->out_ndim) {
        l.out_ndim = desc->out_ndim;
        for (k = 0; k < desc->out_ndim; k++) {
            if (desc->out_shape[k] < 1)
                return GPUDL__ADD_ERR(m, GPUDL_ERR_SHAPE, "add_custom('%s'): output dim %d is %lld", l.u.custom.name, k,
                                      (long long)desc->out_shape[k]);
            l.out_shape[k] = desc->out_shape[k];
        }
    }
    return gpudl__add(m, &l);
}

/* ---- build, forward, backward: the same loops for every kind ---- */

/* The real parameter count (the flat buffer also holds alignment padding). */
static int64_t gpudl__count_params(const gpudl_model *m) {
    int64_t n = 0;
    int i;
    for (i = 0; i < m->nlayers; i++) n += m->layers[i].nparam_elems;
    return n;
}

/* Parameter offsets are rounded up to 64 floats (256 bytes) for the GEMM libraries. */
static int64_t gpudl__align64(int64_t n) { return (n + 63) & ~(int64_t)63; }

static gpudl_status gpudl__model_init(gpudl_model *m) {
    int i;
    GPUDL__TRY(gpudl_tensor_fill(m->ctx, &m->params, 0.0f));
    GPUDL__TRY(gpudl_tensor_fill(m->ctx, &m->grads, 0.0f));
    if (m->nbuffers) GPUDL__TRY(gpudl_tensor_fill(m->ctx, &m->buffers, 0.0f));
    for (i = 0; i < m->nlayers; i++) {
        gpudl__pass p;
        if (!m->layers[i].kind->init) continue;
        gpudl__pass_begin(m, i, &m->params, &p);
        GPUDL__TRY(m->layers[i].kind->init(&p));
    }
    return GPUDL_OK;
}

/* The GPU's count of updates skipped for a bad batch (gpudl_model_step
   allocates it), and what the host has taken back of it. */
static void gpudl__skipped_free(gpudl_model *m) {
#ifndef GPUDL_NO_CUDA
    if (m->skipped_host) {
        (void)cudaStreamSynchronize(m->ctx->stream);   /* no update still adds to it */
        cudaFreeHost(m->skipped_host);
    }
#endif
    m->skipped_host = NULL;
    m->skipped_seen = 0;
}


/* Frees what gpudl_model_build allocates; the model is unbuilt after it. */
static void gpudl__build_undo(gpudl_model *m) {
    gpudl_ctx *ctx = m->ctx;
    int i;
    gpudl__skipped_free(m);
    gpudl__amp_release(m);   /* first: it asks the parameters where the model lives (issue 26) */
    gpudl__acts_free(m);
    for (i = 0; i < m->nlayers; i++) gpudl_tensor_free(ctx, &m->layers[i].saved);
    gpudl_tensor_free(ctx, &m->params); gpudl_tensor_free(ctx, &m->grads); gpudl_tensor_free(ctx, &m->buffers);
    gpudl_tensor_free(ctx, &m->probs); gpudl_tensor_free(ctx, &m->loss); gpudl_tensor_free(ctx, &m->clip);
    gpudl_tensor_free(ctx, &m->preds);
}

GPUDL__DEF gpudl_status gpudl_model_build(gpudl_model *m, const gpudl_model_desc *desc) {
    gpudl_ctx *ctx;
    int64_t off = 0, boff = 0, B, one = 1, two[2];
    int i, j;
    gpudl_status s = GPUDL_OK;
    char sh[64];
    GPUDL__TRY(gpudl__model_live(m, "model_build"));
    ctx = m->ctx;
    GPUDL__ENTER(ctx);
    if (m->built) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_build: the model is already built");
    if (m->refused != GPUDL_OK)
        return GPUDL__ERR(ctx, m->refused, "model_build: layer %d was refused, so the model is not what it says (%s); "
                          "create the model again without that mistake", m->refused_at, m->refused_msg);
    if (m->nlayers == 0) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_build: the model has no layers");
    memset(&m->desc, 0, sizeof m->desc);
    if (desc) m->desc = *desc;
    if (m->desc.max_batch < 0 || (m->desc.loss != GPUDL_LOSS_SOFTMAX_XENT && m->desc.loss != GPUDL_LOSS_MSE) ||
        m->desc.init < GPUDL_INIT_DEFAULT || m->desc.init > GPUDL_INIT_GPT2 || m->desc.attention < 0 || m->desc.attention > 2)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_build: bad desc (max_batch >= 0, loss, init, attention 0-2)");
    if (m->desc.max_batch == 0) m->desc.max_batch = 128;
    for (i = 0; i < m->nlayers; i++)
        if (m->layers[i].kind == &gpudl__kind_attention && gpudl__attn_path(m, &m->layers[i]) < 0)
            return GPUDL__ERR(ctx, GPUDL_ERR_UNSUPPORTED, "model_build: layer %d: the fused attention (desc.attention 2) takes "
                              "head sizes up to %d", i, GPUDL__FUSED_MAX_HS);
    if (m->desc.loss == GPUDL_LOSS_SOFTMAX_XENT && m->cur_ndim != 1 && m->cur_ndim != 2)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "model_build: softmax cross-entropy needs K scores per sample (or (T, K): "
                          "per position), the last layer gives %s (add flatten and linear)",
                          gpudl__shape_str(m->cur_ndim, m->cur_shape, sh, sizeof sh));
    for (i = 0; i < m->nlayers; i++)
        if (m->layers[i].kind == &gpudl__kind_res_begin && m->layers[i].u.res.other < 0)
            return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_build: the residual_begin at layer %d has no residual_end", i);
    B = m->desc.max_batch;
    m->seed = m->desc.seed ? m->desc.seed : ctx->rng_seed;
    for (i = 0; i < m->nlayers; i++) {   /* the layout: each parameter 64-float aligned, the buffers packed */
        gpudl__layer *l = &m->layers[i];
        for (j = 0; j < l->np; j++) { l->poff[j] = off; off = gpudl__align64(off + gpudl__prod(l->pshape[j].ndim, l->pshape[j].d)); }
        for (j = 0; j < l->nbuf; j++) { l->bufoff[j] = boff; boff += gpudl__prod(l->bufshape[j].ndim, l->bufshape[j].d); }
    }
    m->nparams = off;
    m->nbuffers = boff;
    if (off == 0) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_build: the model has no parameters");
    s = gpudl_tensor_create(ctx, &m->params, GPUDL_F32, 1, &m->nparams);
    if (s == GPUDL_OK) s = gpudl_tensor_create(ctx, &m->grads, GPUDL_F32, 1, &m->nparams);
    if (s == GPUDL_OK && boff) s = gpudl_tensor_create(ctx, &m->buffers, GPUDL_F32, 1, &m->nbuffers);
    if (s == GPUDL_OK) s = gpudl__acts_alloc(m, GPUDL_F32);
    for (i = 0; i + 1 < m->nlayers; i++)   /* the GPU's ReLU masks (cuBLASLt's RELU_AUX_BIAS, then DRELU) */
        if (ctx->device == GPUDL_DEVICE_CUDA && m->layers[i].kind == &gpudl__kind_linear &&
            m->layers[i + 1].kind == &gpudl__kind_act && m->layers[i + 1].u.act.fn == GPUDL_ACT_RELU)
            m->layers[i].savedshape = gpudl__shape4(2, B * gpudl__prod(m->layers[i].out_ndim - 1, m->layers[i].out_shape),
                                                    gpudl__relu_mask_ld(m->layers[i].out_shape[m->layers[i].out_ndim - 1]) / 32, 0, 0);
    for (i = 0; i < m->nlayers; i++)
        if (m->layers[i].saved_per_sample) m->layers[i].savedshape = gpudl__shape4(2, B, m->layers[i].saved_per_sample, 0, 0);
    for (i = 0; i < m->nlayers && s == GPUDL_OK; i++)
        if (m->layers[i].savedshape.ndim) s = gpudl_tensor_create(ctx, &m->layers[i].saved, GPUDL_F32, m->layers[i].savedshape.ndim, m->layers[i].savedshape.d);
    if (s == GPUDL_OK && m->desc.loss == GPUDL_LOSS_SOFTMAX_XENT) {
        two[0] = B * (m->cur_ndim == 2 ? m->cur_shape[0] : 1); two[1] = m->cur_shape[m->cur_ndim - 1];
        s = gpudl_tensor_create(ctx, &m->probs, GPUDL_F32, 2, two);
    }
    if (s == GPUDL_OK) s = gpudl_tensor_create(ctx, &m->loss, GPUDL_F32, 1, &one);
    if (s == GPUDL_OK) { two[0] = 3; s = gpudl_tensor_create(ctx, &m->clip, GPUDL_F32, 1, two); }
    if (s == GPUDL_OK) s = gpudl_tensor_fill(ctx, &m->clip, 0.0f);
    if (s == GPUDL_OK) s = gpudl_tensor_create(ctx, &m->preds, GPUDL_I32, 1, &B);
    if (s == GPUDL_OK) s = gpudl__model_init(m);
    if (s == GPUDL_OK) s = gpudl__check_make(m);
    if (s != GPUDL_OK) { gpudl__build_undo(m); return s; }   /* the model stays as it was: unbuilt, nothing allocated */
    m->built = 1;
    return GPUDL_OK;
}

GPUDL__DEF void gpudl_model_train(gpudl_model *m, int training) {
    if (gpudl__model_live(m, "model_train") == GPUDL_OK) m->training = training ? 1 : 0;
}

static gpudl_status gpudl__check_built(gpudl_model *m, const char *what) {
    GPUDL__TRY(gpudl__model_live(m, what));
    GPUDL__ENTER(m->ctx);
    if (!m->built) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "%s: the model is not built (call gpudl_model_build first)", what);
    return GPUDL_OK;
}

/* The parameters layer l computes with: the 16-bit copy under mixed
   precision (the FP32 master weights stay with the optimizer), except for
   kinds whose parameters stay f32 (batch norm's, like its statistics). */
static const gpudl_tensor *gpudl__wsrc(const gpudl_model *m, const gpudl__layer *l) {
    return m->params16.data && !(l->kind->flags & GPUDL__KIND_F32_PARAMS) ? &m->params16 : &m->params;
}

/* Rounds a buffer to what 16-bit storage would hold (mixed precision only). */
static gpudl_status gpudl__round16(gpudl_model *m, gpudl_tensor *t) {
    int64_t i, n = gpudl_tensor_numel(t);
    float *x = (float *)t->data;
    int bf16 = m->precision == GPUDL_PRECISION_BF16;
    if (m->precision != GPUDL_PRECISION_FP16 && !bf16) return GPUDL_OK;
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(t)) {
        GPUDL__LAUNCH(m->ctx, gpudl_k_round16(m->ctx->stream, x, n, bf16));
        return GPUDL_OK;
    }
#endif
    if (bf16) GPUDL__EACH(i, n, n > 65536, x[i] = gpudl_bf16_to_f32(gpudl__to_bf16_sel(x[i])));
    else GPUDL__EACH(i, n, n > 65536, x[i] = gpudl__from_f16_sel(gpudl__to_f16_sel(x[i])));
    return GPUDL_OK;
}

#ifndef GPUDL_NO_CUDA
/* On the GPU a linear or conv layer followed by an activation adds its bias
   and applies the activation in one kernel after the GEMM (one launch and
   one pass over the output fewer; the same bits). Both outputs are written:
   LeakyReLU's and GELU's backward read the input. *done: the layer and the
   activation after it are done. */
static gpudl_status gpudl__forward_fused(gpudl__pass *p, int *done) {
    gpudl_model *m = p->m;
    gpudl_ctx *ctx = m->ctx;
    const gpudl__layer *l = p->l, *a = p->i + 1 < m->nlayers ? &m->layers[p->i + 1] : NULL;
    int linear = l->kind == &gpudl__kind_linear;
    gpudl_tensor post;
    *done = 0;
    m->layers[p->i].mask_ok = 0;
    if ((!linear && l->kind != &gpudl__kind_conv2d) || !a || a->kind != &gpudl__kind_act) return GPUDL_OK;
    if (ctx->any_ops[1]) return GPUDL_OK;   /* the user's ops run one by one, as called */
    post = gpudl__layer_output(m, p->i + 1, 0);
    if (linear) post = gpudl__rows2(&post);
    if (linear && a->u.act.fn == GPUDL_ACT_RELU) {
        /* with cuBLASLt: bias and ReLU in the GEMM, only the ReLU's output
           written (its backward reads that output, see gpudl__act_bwd), and
           the ReLU's bit mask for the DRELU epilogue of the backward */
        GPUDL__TRY(gpudl__lt_linear(ctx, &post, &p->x, &p->p[0], &p->p[1], 1, l->saved.data, done));
        if (*done) { m->layers[p->i].mask_ok = l->saved.data != NULL; return GPUDL_OK; }
    }
    if (!linear && a->u.act.fn == GPUDL_ACT_RELU && ctx->use_lt) {
        /* cuDNN's convolution, bias and ReLU in one call (with the cuBLASLt
           setting: the fused library paths on or off together) */
        GPUDL__TRY(gpudl__conv_bias_relu(ctx, &post, &p->x, &p->p[0], &p->p[1], &l->u.conv, done));
        if (*done) return GPUDL_OK;
    }
    if (linear) GPUDL__TRY(gpudl_linear_forward(ctx, &p->y, &p->x, &p->p[0], NULL));
    else GPUDL__TRY(gpudl_conv2d_forward(ctx, &p->y, &p->x, &p->p[0], NULL, &l->u.conv));
    GPUDL__LAUNCH(ctx, gpudl_k_bias_act(ctx->stream, (int)a->u.act.fn, a->u.act.alpha, p->y.data, post.data, p->p[1].data,
                                        (int)p->y.dtype, gpudl_tensor_numel(&p->y),
                                        linear ? l->out_shape[l->out_ndim - 1] : l->out_shape[0],
                                        linear ? 1 : gpudl__prod(l->out_ndim - 1, l->out_shape + 1)));
    *done = 1;
    return GPUDL_OK;
}
#endif

static gpudl_status gpudl__model_forward(gpudl_model *m, const gpudl_tensor *x, gpudl_tensor *out) {
    gpudl_ctx *ctx = m->ctx;
    int i, k;
    char sx[96], sh[64];
    int ids = (m->layers[0].kind->flags & GPUDL__KIND_IDS) != 0;   /* a model of sequences takes token ids */
    GPUDL__TRY(gpudl__check_on(ctx, x, "x"));
    if (ids && x->dtype != GPUDL_I32 && x->dtype != GPUDL_U8)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_forward: x is %s; the model starts with an embedding and takes "
                          "token ids (I32 or U8)", gpudl_tensor_describe(x, sx, sizeof sx));
    if (!ids && x->dtype != GPUDL_F32 && x->dtype != m->act_dtype)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_forward: x is %s; the model takes f32%s%s",
                          gpudl_tensor_describe(x, sx, sizeof sx), m->act_dtype != GPUDL_F32 ? " or its activations' " : "",
                          m->act_dtype != GPUDL_F32 ? gpudl_dtype_name(m->act_dtype) : "");
    if (x->device != m->params.device)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_forward: x is %s but the model lives on %s",
                          gpudl_tensor_describe(x, sx, sizeof sx), gpudl__device_name(m->params.device));
    k = x->ndim == 1 + m->in_ndim && x->shape[0] >= 1 && x->shape[0] <= m->desc.max_batch;
    for (i = 0; k && i < m->in_ndim; i++) k = x->shape[1 + i] == m->in_shape[i];
    if (!k)
        return GPUDL__ERR(ctx, GPUDL_ERR_SHAPE, "model_forward: x is %s; the model takes (N, %s) with 1 <= N <= %lld",
                          gpudl_tensor_describe(x, sx, sizeof sx), gpudl__shape_str(m->in_ndim, m->in_shape, sh, sizeof sh),
                          (long long)m->desc.max_batch);
    m->input = *x;
    m->batch = x->shape[0];
    m->have_loss = 0;
    if (!ids && x->dtype != m->act_dtype) {   /* 16-bit activations start with the input (one given in their dtype is used as it is) */
        m->input = gpudl__view(&m->input16, 0, m->batch, m->in_ndim, m->in_shape);
        GPUDL__TRY(gpudl_tensor_cast(ctx, &m->input, x));
    }
    for (i = 0; i < m->nlayers; i++) {
        gpudl__layer *l = &m->layers[i];
        gpudl__pass p;
        double t0;
        if (l->kind->flags & GPUDL__KIND_VIEW) {   /* the input's memory */
            l->out.data = i == 0 ? m->input.data : m->layers[i - 1].out.data;
            continue;
        }
        t0 = m->prof ? gpudl__prof_now(m) : 0.0;
        gpudl__pass_begin(m, i, gpudl__wsrc(m, l), &p);
        p.x = gpudl__layer_input(m, i);
        p.y = gpudl__layer_output(m, i, 0);
        if (l->kind == &gpudl__kind_linear && l->in_ndim == 2) gpudl__pass_rows(&p);   /* per position */
#ifndef GPUDL_NO_CUDA
        if (GPUDL__ON_GPU(&p.x)) {
            int done;
            GPUDL__TRY(gpudl__forward_fused(&p, &done));
            if (done) { gpudl__prof_add(m, i, t0); i++; continue; }   /* the activation's share is in this layer's */
        }
#endif
        if (l->kind->forward) GPUDL__TRY(l->kind->forward(&p));
        gpudl__prof_add(m, i, t0);
    }
    if (out) *out = gpudl__layer_output(m, m->nlayers - 1, 0);
    return GPUDL_OK;
}

static gpudl_scaler_state *gpudl__scaler(gpudl_model *m);

static gpudl_status gpudl__model_loss(gpudl_model *m, const gpudl_tensor *target) {
    gpudl_tensor out, dout;
    const float *dscale;
    double t0;
    t0 = m->prof ? gpudl__prof_now(m) : 0.0;
    if (m->batch == 0) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_loss: call gpudl_model_forward first");
    if (!target) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_loss: target is NULL");
    out = gpudl__layer_output(m, m->nlayers - 1, 0);
    dout = gpudl__layer_output(m, m->nlayers - 1, 1);
    /* the loss in f32; under FP16 its gradient is multiplied by the loss
       scale where the scale lives (no host sync), before the one rounding */
    dscale = m->precision == GPUDL_PRECISION_FP16 ? &gpudl__scaler(m)->scale : NULL;
    if (m->desc.loss == GPUDL_LOSS_SOFTMAX_XENT) {
        int64_t rows = m->batch, K = m->cur_shape[m->cur_ndim - 1];
        gpudl_tensor probs, tv = *target;
        if (m->cur_ndim == 2) {   /* (N, T, K) scores: N T rows, targets (N, T) */
            char sx[96];
            rows *= m->cur_shape[0];
            if (target->ndim != 2 || target->shape[0] != m->batch || target->shape[1] != m->cur_shape[0])
                return GPUDL__ERR(m->ctx, GPUDL_ERR_SHAPE, "model_loss: target is %s; scores per position (%lld, %lld) take "
                                  "labels (N, T) = (%lld, %lld)", gpudl_tensor_describe(target, sx, sizeof sx),
                                  (long long)m->cur_shape[0], (long long)K, (long long)m->batch, (long long)m->cur_shape[0]);
            tv.ndim = 1;
            tv.shape[0] = rows;
            out = gpudl__rows2(&out);
            dout = gpudl__rows2(&dout);
            target = &tv;
        }
        probs = gpudl__view(&m->probs, 0, rows, 1, &K);
#ifndef GPUDL_NO_CUDA
        if (GPUDL__ON_GPU(&out) && !GPUDL__OVR(m->ctx, &out, softmax_xent_forward) &&
            !GPUDL__OVR(m->ctx, &out, softmax_xent_backward)) {   /* one launch: forward, mean, gradient */
            float *scratch = NULL;
            GPUDL__TRY(gpudl__check_labels(m->ctx, target, &out, rows));
            GPUDL__TRY(gpudl__same_device(m->ctx, "model_loss", "target", target, "output", &out));
            GPUDL__TRY(gpudl__dev_scratch(m->ctx, (size_t)gpudl_k_reduce_scratch(), &scratch));
            GPUDL__LAUNCH(m->ctx, gpudl_k_softmax_xent_fused(m->ctx->stream, (float *)m->loss.data,
                                                             (unsigned *)((float *)m->clip.data + 2), (float *)probs.data,
                                                             dout.data, out.data, (int)out.dtype, target->data,
                                                             (int)target->dtype, rows, K, 1.0f, dscale, scratch,
                                                             m->ctx->report, m->ctx->bad_input));
            m->have_loss = 1;
            gpudl__prof_add(m, 2 * m->nlayers + GPUDL__PROF_LOSS, t0);
            return GPUDL_OK;
        }
#endif
        GPUDL__TRY(gpudl_softmax_xent_forward(m->ctx, &m->loss, &probs, &out, target));
        GPUDL__TRY(gpudl__xent_backward(m->ctx, &dout, &probs, target, 1.0f, dscale));
    } else {
        GPUDL__TRY(gpudl_mse_forward(m->ctx, &m->loss, &out, target));
        GPUDL__TRY(gpudl__mse_backward(m->ctx, &dout, &out, target, 1.0f, dscale));
    }
    m->have_loss = 1;
    gpudl__prof_add(m, 2 * m->nlayers + GPUDL__PROF_LOSS, t0);
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_model_loss_value(gpudl_model *m, float *loss) {
    GPUDL__TRY(gpudl__check_built(m, "model_loss_value"));
    if (!m->have_loss) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_loss_value: call gpudl_model_loss first");
    return gpudl_tensor_item(m->ctx, &m->loss, 0, loss);
}

static gpudl_status gpudl__dist_grads(gpudl_model *m, int i, int last, int64_t *hi);
static gpudl_status gpudl__dist_step(gpudl_model *m);

#ifndef GPUDL_NO_CUDA
/* A ReLU, then pooling whose windows do not overlap (LeNet's 2 x 2 / 2),
   backward in one kernel on the GPU: the ReLU's input gradient straight
   from the pool's output gradient (*done: the ReLU's backward is done too). */
static gpudl_status gpudl__pool_relu_bwd(gpudl_model *m, int i, gpudl__pass *p, int *done) {
    const gpudl__layer *l = &m->layers[i], *a = &m->layers[i - 1];
    gpudl__poolg g;
    gpudl_tensor dx;
    int first_param;
    *done = 0;
    for (first_param = 0; first_param < m->nlayers && m->layers[first_param].np == 0; first_param++) {}
    if (a->kind != &gpudl__kind_act || a->u.act.fn != GPUDL_ACT_RELU || m->ctx->any_ops[1] || !GPUDL__ON_GPU(&p->x) ||
        !(i - 1 > first_param || m->want_dinput))   /* the ReLU's input gradient is wanted */
        return GPUDL_OK;
    GPUDL__TRY(gpudl__pool_check(m->ctx, &p->y, &p->x, &l->u.pool, &g));
    if (g.sh < g.kh || g.sw < g.kw) return GPUDL_OK;
    dx = gpudl__view(&m->layers[i - 2].dout, 0, m->batch, a->in_ndim, a->in_shape);
    GPUDL__LAUNCH(m->ctx, gpudl_k_pool_relu_bwd(m->ctx->stream, g.kind, dx.data, p->dy.data, p->x.data, (int)p->x.dtype, g.NC,
                                                g.H, g.W, g.Ho, g.Wo, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw));
    *done = 1;
    return GPUDL_OK;
}
#endif

static gpudl_status gpudl__model_backward(gpudl_model *m) {
    int i, j, first_param;
    int64_t unreduced;
    if (!m->have_loss) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_backward: call gpudl_model_loss after forward first");
    /* Input gradients are needed only above the first layer with parameters
       (a flatten before the first linear layer needs none: its GEMM would be
       wasted), unless the caller asked for the input's gradient. */
    int relu_done = 0;   /* the layer below's ReLU backward was done in this one's GEMM (DRELU) */
    for (first_param = 0; first_param < m->nlayers && m->layers[first_param].np == 0; first_param++) {}
    unreduced = m->nparams;
    for (i = m->nlayers - 1; i >= 0; i--) {
        gpudl__layer *l = &m->layers[i];
        gpudl__pass p;
        gpudl_tensor dx;
        double t0 = m->prof ? gpudl__prof_now(m) : 0.0;
        if (relu_done) {   /* this ReLU's input gradient is written already */
            relu_done = 0;
            gpudl__prof_add(m, m->nlayers + i, t0);
            continue;
        }
        gpudl__pass_begin(m, i, gpudl__wsrc(m, l), &p);
        p.overwrite = m->grads_zero;
        for (j = 0; j < l->np; j++) p.g[j] = gpudl__param(l, j, &m->grads);
        p.x = gpudl__layer_input(m, i);
        p.y = gpudl__layer_output(m, i, 0);
        p.dy = gpudl__layer_output(m, i, 1);
        if (i > 0 && (i > first_param || m->want_dinput)) {
            dx = gpudl__view(&m->layers[i - 1].dout, 0, m->batch, l->in_ndim, l->in_shape);
            p.dx = &dx;
        } else if (m->want_dinput && m->act_dtype == GPUDL_F32) {
            dx = gpudl__view(&m->dinput, 0, m->batch, l->in_ndim, l->in_shape);
            p.dx = &dx;
        }
        if (p.dx && i >= 2 && l->kind == &gpudl__kind_linear && m->layers[i - 2].mask_ok && !m->ctx->any_ops[1]) {
            /* linear, ReLU, linear: the ReLU's mask from the forward's GEMM, applied in this dx's GEMM */
            p.mask = m->layers[i - 2].saved.data;
            p.dx_masked = gpudl__view(&m->layers[i - 2].dout, 0, m->batch, l->in_ndim, l->in_shape);
        }
        if (l->kind == &gpudl__kind_linear && l->in_ndim == 2) gpudl__pass_rows(&p);   /* per position */
        if (l->kind->flags & GPUDL__KIND_VIEW) {   /* dx is dy's memory, except for a first layer's */
            if (l->kind->backward) GPUDL__TRY(l->kind->backward(&p));   /* a residual's begin: end's dy added */
            if (i == 0 && p.dx) GPUDL__TRY(gpudl__copy_same(m->ctx, p.dx, &p.dy));
        } else if (l->kind->backward) {
#ifndef GPUDL_NO_CUDA
            if (l->kind == &gpudl__kind_pool2d && p.dx && i >= 2) GPUDL__TRY(gpudl__pool_relu_bwd(m, i, &p, &relu_done));
            if (relu_done) { gpudl__prof_add(m, m->nlayers + i, t0); continue; }
#endif
            GPUDL__TRY(l->kind->backward(&p));
            relu_done = p.masked;
        }
        /* data parallel: the gradients all-reduced as they become ready */
        if (gpudl_dist_size(m->dist) > 1 && i >= first_param) GPUDL__TRY(gpudl__dist_grads(m, i, i == first_param, &unreduced));
        gpudl__prof_add(m, m->nlayers + i, t0);
    }
    m->grads_zero = 0;   /* every gradient written */
    return GPUDL_OK;
}

/* The calls of a step, each remembering its failure (see pass_failed). */
static const char gpudl__call_forward[] = "gpudl_model_forward", gpudl__call_loss[] = "gpudl_model_loss",
                  gpudl__call_backward[] = "gpudl_model_backward";

static gpudl_status gpudl__remember(gpudl_model *m, const char **slot, const char *call, gpudl_status s) {
    if (s == GPUDL_OK) return s;
    *slot = call;
    m->have_loss = 0;
    {   /* its message, cut to fit */
        const char *msg = gpudl__message(m->ctx);
        size_t n = GPUDL__MIN(strlen(msg), sizeof m->failed_msg - 1);
        memcpy(m->failed_msg, msg, n);
        m->failed_msg[n] = 0;
    }
    return s;
}

#ifndef GPUDL_NO_CUDA
/* At a wait (every kernel done): each model's updates that the device
   skipped for a bad batch since the last wait come off its step count,
   as if never called (the CPU refuses such a batch before the step).
   Returns how many. */
static int64_t gpudl__take_back_skipped(gpudl_ctx *ctx) {
    gpudl_model *m;
    int64_t n = 0;
    for (m = ctx->models; m; m = m->next)
        if (m->skipped_host && *m->skipped_host != m->skipped_seen) {
            int32_t d = *m->skipped_host - m->skipped_seen;
            m->skipped_seen = *m->skipped_host;
            m->step -= d;
            n += d;
        }
    return n;
}

/* The bad batch reported (gpudl__cuda_wait): no update is left to read the
   device's flag, so it is cleared (a later batch's update must not skip),
   and a model with that loss refuses backward and step until its next
   forward, as on the CPU, where the loss call itself fails. */
static void gpudl__bad_batch_seen(gpudl_ctx *ctx) {
    gpudl_model *m;
    if (cudaMemsetAsync(ctx->bad_input, 0, sizeof(int32_t), ctx->stream) != cudaSuccess) (void)cudaGetLastError();
    for (m = ctx->models; m; m = m->next)
        if (m->have_loss) (void)gpudl__remember(m, &m->pass_failed, gpudl__call_loss, GPUDL_ERR_INVALID_ARG);
}
#endif

/* what: the refusing call; failed: the call that failed earlier. */
static gpudl_status gpudl__refuse_after(gpudl_model *m, const char *what, const char *failed) {
    const char *fix = failed == gpudl__call_backward
        ? "the gradients hold part of a pass: call gpudl_model_zero_grad, then forward, loss and backward again"
        : failed == gpudl__call_loss ? "call gpudl_model_loss again with valid targets, then backward"
                                     : "call gpudl_model_forward again, then loss and backward";
    return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "%s: refused, because %s failed (%s); nothing was changed. %c%s", what,
                      failed, m->failed_msg, fix[0] - 'a' + 'A', fix + 1);
}

/* Inside a model call, the context's device is current (checked at the
   call's entry), so the ops it calls skip cudaGetDevice (2-4 host calls
   fewer per layer); not with the user's ops or custom layers, which may
   change the current device. */
static int gpudl__enter_model(gpudl_model *m) {
    int i, was = m->ctx->entered;
    if (m->ctx->any_ops[1]) return was;
    for (i = 0; i < m->nlayers; i++)
        if (m->layers[i].kind->flags & GPUDL__KIND_CUSTOM) return was;
    m->ctx->entered = 1;
    return was;
}

GPUDL__DEF gpudl_status gpudl_model_forward(gpudl_model *m, const gpudl_tensor *x, gpudl_tensor *out) {
    gpudl_status s;
    int was;
    GPUDL__TRY(gpudl__check_built(m, "model_forward"));
    was = gpudl__enter_model(m);
    s = gpudl__model_forward(m, x, out);
    m->ctx->entered = was;
    if (s == GPUDL_OK) m->pass_failed = NULL;   /* a new pass: the failed one is forgotten */
    return gpudl__remember(m, &m->pass_failed, gpudl__call_forward, s);
}

GPUDL__DEF gpudl_status gpudl_model_loss(gpudl_model *m, const gpudl_tensor *target) {
    gpudl_status s;
    int was;
    GPUDL__TRY(gpudl__check_built(m, "model_loss"));
    if (m->pass_failed == gpudl__call_forward) return gpudl__refuse_after(m, "model_loss", m->pass_failed);
    was = gpudl__enter_model(m);
    s = gpudl__model_loss(m, target);
    m->ctx->entered = was;
    if (s == GPUDL_OK) m->pass_failed = NULL;
    return gpudl__remember(m, &m->pass_failed, gpudl__call_loss, s);
}

GPUDL__DEF gpudl_status gpudl_model_backward(gpudl_model *m) {
    gpudl_status s;
    int was;
    GPUDL__TRY(gpudl__check_built(m, "model_backward"));
    if (m->grads_failed) return gpudl__refuse_after(m, "model_backward", m->grads_failed);
    if (m->pass_failed) return gpudl__refuse_after(m, "model_backward", m->pass_failed);
    was = gpudl__enter_model(m);
    s = gpudl__model_backward(m);
    m->ctx->entered = was;
    return gpudl__remember(m, &m->grads_failed, gpudl__call_backward, s);
}

/* Whether a backward can write every gradient instead of adding to it
   (gpudl_model_zero_grad without a memset): on the GPU, without the user's
   ops, when every layer with parameters writes its gradients on request
   (GPUDL__KIND_OVERWRITES: linear, conv2d and the transformer's kinds;
   batch norm's and custom layers' backwards add). */
#ifndef GPUDL_NO_CUDA
static int gpudl__grads_overwritable(const gpudl_model *m) {
    int i;
    if (!GPUDL__ON_GPU(&m->grads) || m->ctx->any_ops[1] || gpudl_dist_size(m->dist) > 1) return 0;
    for (i = 0; i < m->nlayers; i++)
        if (m->layers[i].np && !(m->layers[i].kind->flags & GPUDL__KIND_OVERWRITES)) return 0;
    return 1;
}
#endif

/* The gradients as zero_grad promised, for whoever reads them before a
   backward wrote them: the memset zero_grad put off. */
static gpudl_status gpudl__grads_settle(gpudl_model *m) {
    if (!m->grads_zero) return GPUDL_OK;
#ifndef GPUDL_NO_CUDA
    GPUDL__CUDA(m->ctx, cudaMemsetAsync(m->grads.data, 0, gpudl_tensor_bytes(&m->grads), m->ctx->stream));
#endif
    m->grads_zero = 0;
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_model_zero_grad(gpudl_model *m) {
    double t0;
    GPUDL__TRY(gpudl__check_built(m, "model_zero_grad"));
    t0 = m->prof ? gpudl__prof_now(m) : 0.0;
    m->grads_failed = NULL;   /* whatever a failed backward left is about to go */
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(&m->grads)) {
        if (gpudl__grads_overwritable(m)) {   /* no memset: the next backward writes every gradient */
            m->grads_zero = 1;
            gpudl__prof_add(m, 2 * m->nlayers + GPUDL__PROF_ZERO, t0);
            return GPUDL_OK;
        }
        m->grads_zero = 0;
        GPUDL__CUDA(m->ctx, cudaMemsetAsync(m->grads.data, 0, gpudl_tensor_bytes(&m->grads), m->ctx->stream));
        gpudl__prof_add(m, 2 * m->nlayers + GPUDL__PROF_ZERO, t0);
        return GPUDL_OK;
    }
#endif
    {   /* the flat buffer, one share per thread: one core's memset ran at 4 GB/s (1.7 ms at MLP batch 1024) */
        int64_t i, nb = gpudl_tensor_numel(&m->grads), parts = nb > 65536 ? gpudl__num_threads(m->ctx) : 1;
        float *g = (float *)m->grads.data;
        GPUDL__OMP(omp parallel for num_threads((int)parts) if (parts > 1))
        for (i = 0; i < parts; i++)
            memset(g + nb * i / parts, 0, sizeof(float) * (size_t)(nb * (i + 1) / parts - nb * i / parts));
    }
    gpudl__prof_add(m, 2 * m->nlayers + GPUDL__PROF_ZERO, t0);
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_model_profile(gpudl_model *m, int on) {
    GPUDL__TRY(gpudl__check_built(m, "model_profile"));
    GPUDL_FREE(m->prof);
    m->prof = NULL;
    m->prof_steps = 0;
    if (!on) return GPUDL_OK;
    m->prof = (double *)GPUDL_MALLOC(sizeof(double) * (size_t)(2 * m->nlayers + 3));
    if (!m->prof) return GPUDL__ERR(m->ctx, GPUDL_ERR_OOM, "model_profile: no host memory");
    memset(m->prof, 0, sizeof(double) * (size_t)(2 * m->nlayers + 3));
    return GPUDL_OK;
}

GPUDL__DEF const char *gpudl_model_profile_report(const gpudl_model *m, char *buf, size_t size) {
    size_t n = 0;
    double total = 0, per;
    int i, k;
    char a[64], b[64];
    static const char *extra[3] = {"loss (forward + gradient)", "optimizer step", "zero_grad"};
    if (!buf || !size) return buf;
    buf[0] = 0;
    if (m && gpudl__model_live(m, "model_profile_report") != GPUDL_OK) return buf;
    if (!m || !m->prof || m->prof_steps == 0) {
        snprintf(buf, size, "no profile (gpudl_model_profile(m, 1), then a step)\n");
        return buf;
    }
    for (i = 0; i < 2 * m->nlayers + 3; i++) total += m->prof[i];
    per = 1e3 / (double)m->prof_steps;
    gpudl__appendf(buf, size, &n, "profile of %lld steps: %.3f ms per step\n", (long long)m->prof_steps, total * per);
    gpudl__appendf(buf, size, &n, "%3s %-9s %12s -> %-12s %10s %10s %7s\n", "", "layer", "in", "out", "fwd ms", "bwd ms", "share");
    for (i = 0; i < m->nlayers; i++) {
        const gpudl__layer *l = &m->layers[i];
        double f = m->prof[i], g = m->prof[m->nlayers + i];
        gpudl__appendf(buf, size, &n, "%3d %-9s %12s -> %-12s %10.3f %10.3f %6.1f%%\n", i, gpudl__lname(l),
                   gpudl__shape_str(l->in_ndim, l->in_shape, a, sizeof a), gpudl__shape_str(l->out_ndim, l->out_shape, b, sizeof b),
                   f * per, g * per, total > 0 ? 100.0 * (f + g) / total : 0.0);
    }
    for (k = 0; k < 3; k++)
        gpudl__appendf(buf, size, &n, "    %-40s %10.3f %17.1f%%\n", extra[k], m->prof[2 * m->nlayers + k] * per,
                   total > 0 ? 100.0 * m->prof[2 * m->nlayers + k] / total : 0.0);
    return buf;
}

GPUDL__DEF int64_t gpudl_model_num_params(const gpudl_model *m) {
    return gpudl__model_live(m, "model_num_params") == GPUDL_OK ? gpudl__count_params(m) : 0;
}

GPUDL__DEF gpudl_status gpudl_model_params(gpudl_model *m, gpudl_tensor *params, gpudl_tensor *grads) {
    GPUDL__TRY(gpudl__check_built(m, "model_params"));
    if (params) { *params = m->params; params->owner = 0; }
    if (grads) { GPUDL__TRY(gpudl__grads_settle(m)); *grads = m->grads; grads->owner = 0; }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_model_predict_view(gpudl_model *m, gpudl_tensor *view) {
    gpudl_tensor out, p;
    GPUDL__TRY(gpudl__check_built(m, "model_predict"));
    if (m->batch == 0 || m->cur_ndim != 1) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_predict: needs a forward of a classifier first");
    out = gpudl__layer_output(m, m->nlayers - 1, 0);
    p = gpudl__view(&m->preds, 0, -1, 1, &m->batch);
    GPUDL__TRY(gpudl_argmax_rows(m->ctx, &p, &out));
    if (view) *view = p;
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_model_predict(gpudl_model *m, gpudl_tensor *preds) {
    gpudl_tensor p;
    GPUDL__TRY(gpudl__check_built(m, "model_predict"));
    if (!preds) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_predict: preds is NULL (gpudl_model_predict_view "
                                  "gives a view of the model's own buffer)");
    if (!preds->data || preds->dtype != GPUDL_I32 || gpudl_tensor_numel(preds) != m->batch ||
        (preds->device != GPUDL_DEVICE_CPU && preds->device != m->ctx->device))
        return GPUDL__ERR(m->ctx, GPUDL_ERR_SHAPE, "model_predict: preds must be a tensor of yours, I32 with %lld elements "
                          "(the forward's batch) on the host or the model's device; got %s with %lld elements%s",
                          (long long)m->batch, gpudl_dtype_name(preds->dtype), (long long)gpudl_tensor_numel(preds),
                          preds->data ? "" : " and no data (create it first, or use gpudl_model_predict_view)");
    GPUDL__TRY(gpudl_model_predict_view(m, &p));
    return gpudl_tensor_copy(m->ctx, preds, &p);
}

GPUDL__DEF gpudl_status gpudl_model_count_correct(gpudl_model *m, const gpudl_tensor *labels, gpudl_tensor *count) {
    gpudl_tensor p;
    int64_t i;
    GPUDL__TRY(gpudl_model_predict_view(m, &p));
    GPUDL__TRY(gpudl__check_labels(m->ctx, labels, &p, m->batch));
    GPUDL__TRY(gpudl__check_f32(m->ctx, count, "count"));
    if (gpudl_tensor_numel(count) != 1 || count->device != p.device)
        return GPUDL__ERR(m->ctx, GPUDL_ERR_SHAPE, "model_count_correct: count must be one f32 on the model's device");
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(&p)) {
        GPUDL__LAUNCH(m->ctx, gpudl_k_count_correct(m->ctx->stream, (float *)count->data, (const int32_t *)p.data, labels->data,
                                                    (int)labels->dtype, m->batch));
        return GPUDL_OK;
    }
#endif
    for (i = 0; i < m->batch; i++)
        if (((const int32_t *)p.data)[i] == gpudl__label(labels, i)) *(float *)count->data += 1.0f;
    return GPUDL_OK;
}

GPUDL__DEF const char *gpudl_model_summary(const gpudl_model *m, char *buf, size_t size) {
    size_t n = 0;
    int i;
    char a[64], b[64];
    if (!buf || !size) return buf;
    buf[0] = 0;
    if (gpudl__model_live(m, "model_summary") != GPUDL_OK) return buf;
    n += (size_t)snprintf(buf, size, "input %s\n", gpudl__shape_str(m->in_ndim, m->in_shape, a, sizeof a));
    for (i = 0; i < m->nlayers && n < size; i++) {
        const gpudl__layer *l = &m->layers[i];
        n += (size_t)snprintf(buf + n, size - n, "%3d %-9s %12s -> %-12s %9lld params%s%s\n", i, gpudl__lname(l),
                              gpudl__shape_str(l->in_ndim, l->in_shape, a, sizeof a),
                              gpudl__shape_str(l->out_ndim, l->out_shape, b, sizeof b), (long long)l->nparam_elems,
                              l->name[0] ? "  " : "", l->name);
    }
    if (n < size) snprintf(buf + n, size - n, "parameters: %lld (flat buffer %lld floats)\n",
                           (long long)gpudl__count_params(m), (long long)m->nparams);
    return buf;
}

GPUDL__DEF gpudl_status gpudl_model_memory(gpudl_model *m, int64_t batch, gpudl_memory_report *r) {
    int i;
    GPUDL__TRY(gpudl__check_built(m, "model_memory"));
    if (!r || batch < 0) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_memory: r is NULL or batch < 0");
    if (batch == 0) batch = m->desc.max_batch;
    memset(r, 0, sizeof *r);
    r->params = gpudl_tensor_bytes(&m->params);
    r->grads = gpudl_tensor_bytes(&m->grads);
    r->optimizer = (m->opt_m.data ? gpudl_tensor_bytes(&m->opt_m) : 0) + (m->opt_v.data ? gpudl_tensor_bytes(&m->opt_v) : 0);
    r->copies16 = m->params16.data ? gpudl_tensor_bytes(&m->params16) : 0;
    for (i = 0; i < m->nlayers; i++) {
        const gpudl__layer *l = &m->layers[i];
        size_t per = (size_t)gpudl__prod(l->out_ndim, l->out_shape) * gpudl_dtype_size(m->act_dtype) * (size_t)batch;
        if (!(l->kind->flags & GPUDL__KIND_VIEW)) r->activations += (gpudl__dout_shared(m, i) ? 1 : 2) * per;   /* output, gradient */
        else if (i == 0) r->activations += per;                                /* a first view owns its gradient */
        if (l->saved.data) r->other += gpudl_tensor_bytes(&l->saved);
        r->activations += (size_t)l->work_per_sample * gpudl_dtype_size(m->act_dtype) * (size_t)batch;   /* attention's */
    }
    if (m->input16.data)   /* the input's 16-bit copy */
        r->activations += (size_t)gpudl__prod(m->in_ndim, m->in_shape) * gpudl_dtype_size(m->act_dtype) * (size_t)batch;
    r->other += (m->buffers.data ? gpudl_tensor_bytes(&m->buffers) : 0) + gpudl_tensor_bytes(&m->loss) + gpudl_tensor_bytes(&m->clip) +
                (m->scaler.data ? gpudl_tensor_bytes(&m->scaler) : 0) + (m->dinput.data ? gpudl_tensor_bytes(&m->dinput) : 0) +
                (size_t)batch * (sizeof(int32_t) + (m->probs.data ? (size_t)m->cur_shape[0] * sizeof(float) : 0));
    r->total = r->params + r->grads + r->optimizer + r->copies16 + r->activations + r->other;
    return GPUDL_OK;
}

/* >>optim ----------------------------------------------------------------- */
static gpudl_status gpudl__amp_check(gpudl_model *m);   /* the loss scaler's side of a step (amp section) */
static gpudl_status gpudl__refresh_params16(gpudl_model *m);

GPUDL__DEF float gpudl_optim_lr(const gpudl_optim_desc *d, int64_t step) {
    float lr;
    if (!d) return 0.0f;
    lr = d->lr > 0.0f ? d->lr : (d->kind == GPUDL_OPTIM_SGD ? 0.01f : 0.001f);
    if (d->schedule == GPUDL_SCHED_STEP && d->step_size > 0)
        return lr * (float)pow(d->gamma > 0.0f ? d->gamma : 0.1, (double)(step / d->step_size));
    if (d->schedule == GPUDL_SCHED_COSINE) {
        double t;
        if (d->warmup_steps > 0 && step < d->warmup_steps) return lr * (float)(step + 1) / (float)d->warmup_steps;
        if (d->total_steps <= d->warmup_steps) return lr;
        t = (double)(step - d->warmup_steps) / (double)(d->total_steps - d->warmup_steps);
        if (t > 1.0) t = 1.0;
        return (float)(d->min_lr + 0.5 * (lr - d->min_lr) * (1.0 + cos(3.14159265358979323846 * t)));
    }
    return lr;
}

GPUDL__DEF gpudl_status gpudl_model_set_optimizer(gpudl_model *m, const gpudl_optim_desc *desc) {
    gpudl_optim_desc d;
    int need_m, need_v;
    GPUDL__TRY(gpudl__check_built(m, "model_set_optimizer"));
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (d.kind < GPUDL_OPTIM_SGD || d.kind > GPUDL_OPTIM_ADAMW || d.lr < 0 || d.momentum < 0 || d.weight_decay < 0 ||
        d.beta1 < 0 || d.beta1 >= 1 || d.beta2 < 0 || d.beta2 >= 1 || d.eps < 0 || d.clip_norm < 0 ||
        d.schedule < GPUDL_SCHED_CONSTANT || d.schedule > GPUDL_SCHED_COSINE || (d.nesterov && d.momentum <= 0))
        return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "set_optimizer: invalid desc (kind, non-negative rates, betas in "
                          "[0,1), schedule; Nesterov needs momentum)");
    if (d.lr == 0.0f) d.lr = d.kind == GPUDL_OPTIM_SGD ? 0.01f : 0.001f;
    if (d.beta1 == 0.0f) d.beta1 = 0.9f;
    if (d.beta2 == 0.0f) d.beta2 = 0.999f;
    if (d.eps == 0.0f) d.eps = 1e-8f;
    need_m = d.kind != GPUDL_OPTIM_SGD || d.momentum > 0;
    need_v = d.kind != GPUDL_OPTIM_SGD;
    gpudl_tensor_free(m->ctx, &m->opt_m);
    gpudl_tensor_free(m->ctx, &m->opt_v);
    if (need_m) {
        GPUDL__TRY(gpudl_tensor_create(m->ctx, &m->opt_m, GPUDL_F32, 1, &m->nparams));
        GPUDL__TRY(gpudl_tensor_fill(m->ctx, &m->opt_m, 0.0f));
    }
    if (need_v) {
        GPUDL__TRY(gpudl_tensor_create(m->ctx, &m->opt_v, GPUDL_F32, 1, &m->nparams));
        GPUDL__TRY(gpudl_tensor_fill(m->ctx, &m->opt_v, 0.0f));
    }
    m->opt = d;
    m->has_opt = 1;
    m->step = 0;
    return GPUDL_OK;
}

GPUDL__DEF int64_t gpudl_model_step_count(const gpudl_model *m) {
    return gpudl__model_live(m, "model_step_count") == GPUDL_OK ? m->step : 0;
}

static gpudl_optim_hp gpudl__hparams(const gpudl_model *m) {
    gpudl_optim_hp h;
    const gpudl_optim_desc *d = &m->opt;
    memset(&h, 0, sizeof h);
    h.kind = (int)d->kind;
    h.nesterov = d->nesterov;
    h.first = m->step == 0;
    h.lr = gpudl_optim_lr(d, m->step);
    h.momentum = d->momentum;
    h.weight_decay = d->weight_decay;
    h.beta1 = d->beta1;
    h.beta2 = d->beta2;
    h.eps = d->eps;
    h.bc1 = 1.0f - (float)pow(d->beta1, (double)(m->step + 1));
    h.bc2 = 1.0f - (float)pow(d->beta2, (double)(m->step + 1));
    return h;
}

/* The user's update (gpudl_ctx_set_ops) over the whole flat buffer, the
   gradients already unscaled and multiplied by the clip scale. *done = 0:
   there is none, or it handed the step back. */
static gpudl_status gpudl__step_user(gpudl_model *m, const gpudl_optim_hp *h, float clip, int *done) {
    gpudl_ctx *ctx = m->ctx;
    const gpudl_ops *o = &ctx->ops[GPUDL__ON_GPU(&m->params)];
    int sgd = m->opt.kind == GPUDL_OPTIM_SGD;
    float *w = (float *)m->params.data, *g = (float *)m->grads.data, *m1 = (float *)m->opt_m.data, *m2 = (float *)m->opt_v.data;
    void *stream = gpudl__stream_for(ctx, &m->params);
    gpudl_status s;
    *done = 0;
    if (sgd ? !o->sgd_update : !o->adam_update) return GPUDL_OK;
    if (clip != 1.0f) GPUDL__TRY(gpudl_scale(ctx, &m->grads, clip));
    if (sgd) s = o->sgd_update(o->user, stream, w, g, m1, m->nparams, h->lr, h->momentum, h->weight_decay, h->nesterov);
    else s = o->adam_update(o->user, stream, w, g, m1, m2, m->nparams, h->lr, h->beta1, h->beta2, h->eps, h->weight_decay,
                            m->opt.kind == GPUDL_OPTIM_ADAMW, m->step + 1);
    GPUDL__TRY(gpudl__ovr_result(ctx, s, sgd ? "sgd_update" : "adam_update", done));
    return *done ? gpudl__refresh_params16(m) : GPUDL_OK;
}

/* The update on the CPU: each thread's share in a loop whose flags are
   constants, so it vectorises with only the rule's own math in it.
   One loop with the options tested per element ran scalar (compilers keep
   floating-point math out of paths they cannot prove taken): 3.7 ms
   for 1.86 M parameters with momentum, against 0.2-0.4 ms (bench/RESULTS.md). */
static inline void gpudl__update_run(const gpudl_optim_hp *hp, int flags, float *w, const float *g, float scale, float *m1,
                                     float *m2, int64_t n) {
    const gpudl_optim_hp h = *hp;   /* a local: the stores to w, m, v cannot touch it */
    int64_t i;
    GPUDL__SIMD
    for (i = 0; i < n; i++) gpudl_optim_apply(&h, flags, &w[i], g[i] * scale, m1 + i, m2 + i);
}

#ifdef GPUDL__X86_SIMD
/* Adam and AdamW 8 elements at a time: gpudl_optim_apply's operations in
   its order (no FMA: the same roundings). Compilers keep that loop scalar,
   because sqrtf may set errno: 3.9 ms for 1.86 M parameters, against
   0.6-0.8 ms here. Returns how many elements it did. */
__attribute__((target("avx")))
static int64_t gpudl__adam_avx(const gpudl_optim_hp *h, int flags, float *w, const float *g, float scale, float *m, float *v,
                               int64_t n) {
    const __m256 lr = _mm256_set1_ps(h->lr), lrwd = _mm256_set1_ps(h->lr * h->weight_decay), wd = _mm256_set1_ps(h->weight_decay);
    const __m256 b1 = _mm256_set1_ps(h->beta1), c1 = _mm256_set1_ps(1.0f - h->beta1), bc1 = _mm256_set1_ps(h->bc1);
    const __m256 b2 = _mm256_set1_ps(h->beta2), c2 = _mm256_set1_ps(1.0f - h->beta2), bc2 = _mm256_set1_ps(h->bc2);
    const __m256 eps = _mm256_set1_ps(h->eps), sc = _mm256_set1_ps(scale);
    int64_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(w + i), gi = _mm256_mul_ps(_mm256_loadu_ps(g + i), sc), mi, vi;
        if (flags & GPUDL_OPTIM_F_ADAMW) x = _mm256_sub_ps(x, _mm256_mul_ps(lrwd, x));
        else if (flags & GPUDL_OPTIM_F_WD) gi = _mm256_add_ps(gi, _mm256_mul_ps(wd, x));
        mi = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(c1, gi));
        vi = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + i)), _mm256_mul_ps(_mm256_mul_ps(c2, gi), gi));
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        x = _mm256_sub_ps(x, _mm256_div_ps(_mm256_mul_ps(lr, _mm256_div_ps(mi, bc1)),
                                           _mm256_add_ps(_mm256_sqrt_ps(_mm256_div_ps(vi, bc2)), eps)));
        _mm256_storeu_ps(w + i, x);
    }
    return i;
}
#endif

static void gpudl__cpu_update(gpudl_ctx *ctx, const gpudl_optim_hp *h, float *w, const float *g, float scale, float *m1,
                              float *m2, int64_t n) {
    int flags = gpudl_optim_flags(h), nt = n > 65536 ? gpudl__num_threads(ctx) : 1;
    if (!m1) m1 = w;   /* state the rule does not use: never read or written */
    if (!m2) m2 = w;
    (void)nt;   /* without OpenMP */
    GPUDL__OMP(omp parallel num_threads(nt) if (nt > 1))
    {
        int64_t t = gpudl__tid(), nth = gpudl__team_size(), i0 = n * t / nth / 16 * 16;
        int64_t i1 = t == nth - 1 ? n : n * (t + 1) / nth / 16 * 16, k = i1 - i0;
        float *w0 = w + i0, *m0 = m1 + i0, *v0 = m2 + i0;
        const float *g0 = g + i0;
#ifdef GPUDL__X86_SIMD
        if ((flags & (GPUDL_OPTIM_F_ADAM | GPUDL_OPTIM_F_ADAMW)) && __builtin_cpu_supports("avx")) {
            int64_t d = gpudl__adam_avx(h, flags, w0, g0, scale, m0, v0, k);
            w0 += d; g0 += d; m0 += d; v0 += d; k -= d;
        }
#endif
#define GPUDL__RUN(F) case F: gpudl__update_run(h, F, w0, g0, scale, m0, v0, k); break;
        switch (flags) {
            GPUDL__RUN(0) GPUDL__RUN(1) GPUDL__RUN(2) GPUDL__RUN(3) GPUDL__RUN(10) GPUDL__RUN(11)   /* SGD */
            GPUDL__RUN(16) GPUDL__RUN(17) GPUDL__RUN(32)                                            /* Adam, AdamW */
            default: gpudl__update_run(h, flags, w0, g0, scale, m0, v0, k);   /* the first step with momentum */
        }
#undef GPUDL__RUN
    }
}

/* The FP16 gradients' pass of a step: how many gradients FP16 storage
   makes non-finite (*nbad: those of magnitude 65520 or more, which round
   to infinity, and NaNs), then each one rounded to FP16 and unscaled, in
   runs the hardware converts where it can (in the baseline build's SSE
   the two passes were 4.6 ms of a 16 ms MLP step). */
GPUDL__MULTI_ISA(gpudl__f16_nonfinite, (const float *g, int64_t n, int64_t *nbad), (g, n, nbad),
    int64_t i, bad = 0;
    GPUDL__OMP(omp parallel for simd reduction(+:bad) num_threads(gpudl__team()) if (n > 65536))
    for (i = 0; i < n; i++) bad += !(fabsf(g[i]) < 65520.0f);
    *nbad = bad;)
static void gpudl__f16_unscale(float *g, int64_t n, float inv) {
    int64_t c;
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (n > 65536))
    for (c = 0; c < n; c += 2048) {
        uint16_t h[2048];
        int64_t i, len = GPUDL__MIN((int64_t)2048, n - c);
        gpudl__narrow_run(h, g + c, len);
        gpudl__widen_run(g + c, h, len, 0);
        for (i = 0; i < len; i++) g[c + i] *= inv;
    }
}

GPUDL__DEF gpudl_status gpudl_model_step(gpudl_model *m) {
    gpudl_optim_hp h;
    int64_t i, n;
    float scale = 1.0f, *w, *g, *m1, *m2;
    int fp16, check, skip = 0, user_done = 0;
    GPUDL__TRY(gpudl__check_built(m, "model_step"));
    if (m->grads_failed) return gpudl__refuse_after(m, "model_step", m->grads_failed);
    if (m->pass_failed) return gpudl__refuse_after(m, "model_step", m->pass_failed);
    if (!m->has_opt) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_step: no optimizer (call gpudl_model_set_optimizer)");
    if (m->prof) {   /* timed as a whole: the same step, its clock around it */
        double t0 = gpudl__prof_now(m);
        gpudl_status s;
        double *keep = m->prof;
        m->prof = NULL;
        s = gpudl_model_step(m);
        m->prof = keep;
        gpudl__prof_add(m, 2 * m->nlayers + GPUDL__PROF_STEP, t0);
        m->prof_steps++;
        return s;
    }
    GPUDL__TRY(gpudl__grads_settle(m));   /* zero_grad, then a step without backward: zero gradients */
#ifndef GPUDL_NO_CUDA
    if (!m->in_graph)   /* a captured step: gpudl_model_train_step checks before the launch */
#endif
    GPUDL__TRY(gpudl__amp_check(m));
    GPUDL__TRY(gpudl__dist_step(m));
    h = gpudl__hparams(m);
    n = m->nparams;
    fp16 = m->precision == GPUDL_PRECISION_FP16;
    check = m->scaler.data != NULL;   /* FP16, or the non-finite check of FP32/BF16 (scale 1) */
    /* mixed precision: FP16 gradients are unscaled (and checked) in one
       pass, BF16 ones only rounded; both update the FP32 master weights */
    if (m->precision == GPUDL_PRECISION_BF16) GPUDL__TRY(gpudl__round16(m, &m->grads));
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(&m->params)) {
        /* Atomic (issue 26): the launches before the update change nothing
           a retry would see twice (the check reads the gradients, the clip
           scale has its own buffer), the update is one launch that also
           runs the scaler's step, and the step counts once it is queued. A
           refused launch or a failed library call leaves the weights, the
           optimizer and scaler state and the count as they were: retry. */
        const float *gscale = NULL;
        gpudl_scaler_state *st = gpudl__scaler(m), *seen;
        gpudl_status s;
        if (!m->skipped_host && !m->in_graph) {   /* where the update counts the steps it skips for a bad batch */
            int32_t *p = NULL;
            GPUDL__CUDA(m->ctx, cudaHostAlloc((void **)&p, sizeof *p, cudaHostAllocMapped));
            *p = 0;
            m->skipped_host = p;
            m->skipped_seen = 0;
        }
        if (check && m->check_stale) {   /* a failed step's flag is not this step's */
            GPUDL__LAUNCH(m->ctx, gpudl_k_scaler_clear(m->ctx->stream, st));
            m->check_stale = 0;
        }
        if (check) {
            GPUDL__LAUNCH(m->ctx, gpudl_k_nonfinite(m->ctx->stream, (const float *)m->grads.data, n, st, fp16));
            m->check_stale = 1;
        }
        if (m->opt.clip_norm > 0.0f) {
            GPUDL__LAUNCH(m->ctx, gpudl_k_clip_scale(m->ctx->stream, (float *)m->clip.data, (const float *)m->grads.data, n,
                                                     m->opt.clip_norm, m->ctx->scratch, check ? st : NULL, fp16));
            gscale = (const float *)m->clip.data + 1;
        }
        if (m->ctx->any_ops[1]) {   /* the user's update decides on the host: it waits for the check and the clip scale */
            int32_t found = 0, bad = 0;
            float cs[2] = {0.0f, 1.0f};
            s = gpudl__memcpy(m->ctx, &bad, GPUDL_DEVICE_CPU, m->ctx->bad_input, GPUDL_DEVICE_CUDA, sizeof bad);
            if (bad) {   /* a bad batch (its error came with the wait above): no update, no step */
                GPUDL__CUDA(m->ctx, cudaMemsetAsync(m->ctx->bad_input, 0, sizeof bad, m->ctx->stream));
                if (check) { GPUDL__LAUNCH(m->ctx, gpudl_k_scaler_clear(m->ctx->stream, st)); m->check_stale = 0; }
                return s != GPUDL_OK ? s : GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_step: a label or token id of "
                                                      "this batch was out of range: the step was skipped");
            }
            GPUDL__TRY(s);
            if (check) GPUDL__TRY(gpudl__memcpy(m->ctx, &found, GPUDL_DEVICE_CPU, &st->found_inf, GPUDL_DEVICE_CUDA, sizeof found));
            if (gscale) GPUDL__TRY(gpudl__memcpy(m->ctx, cs, GPUDL_DEVICE_CPU, m->clip.data, GPUDL_DEVICE_CUDA, sizeof cs));
            if (!found && fp16 && (m->opt.kind == GPUDL_OPTIM_SGD ? m->ctx->ops[1].sgd_update != NULL : m->ctx->ops[1].adam_update != NULL)) {
                /* the user's update gets unscaled gradients: unscaled in place (this path is not atomic) */
                GPUDL__LAUNCH(m->ctx, gpudl_k_unscale(m->ctx->stream, (float *)m->grads.data, n, st, fp16));
                GPUDL__TRY(gpudl__step_user(m, &h, cs[1], &user_done));
                if (!user_done)   /* handed back: gpudl's update of the unscaled gradients */
                    GPUDL__LAUNCH(m->ctx, gpudl_k_optim(m->ctx->stream, h, (float *)m->params.data,
                                                        (const float *)m->grads.data, (float *)m->opt_m.data,
                                                        (float *)m->opt_v.data, n, gscale, &st->found_inf, m->params16.data,
                                                        (int)m->params16.dtype));
                user_done = 1;
            } else if (!found) {
                GPUDL__TRY(gpudl__step_user(m, &h, cs[1], &user_done));
            }
            if (user_done && check) GPUDL__LAUNCH(m->ctx, gpudl_k_scaler_update(m->ctx->stream, st, m->sdesc));
        }
        /* the scaler's state for the host, read later without waiting: written by the update's last block
           into pinned memory (no copy launched), or copied after the user's update */
        seen = check && !m->scaler_ev_pending && !m->in_graph ? m->scaler_seen : NULL;
        if (!user_done)
            GPUDL__LAUNCH(m->ctx, gpudl_k_optim_step(m->ctx->stream, h, (float *)m->params.data, (const float *)m->grads.data,
                                                     (float *)m->opt_m.data, (float *)m->opt_v.data, n, gscale,
                                                     check ? st : NULL, fp16, m->sdesc, m->params16.data,
                                                     (int)m->params16.dtype,   /* and the 16-bit copy */
                                                     m->ctx->bad_input, m->skipped_host,   /* a bad batch: skipped */
                                                     seen));
        /* the update is queued: the step has happened, whatever follows */
        m->step++;
        m->check_stale = 0;
        if (seen) {
            s = user_done ? gpudl__cuda_ok(m->ctx, cudaMemcpyAsync(seen, st, sizeof *st, cudaMemcpyDeviceToHost, m->ctx->stream),
                                           "cudaMemcpyAsync (loss scaler state)") : GPUDL_OK;
            if (s == GPUDL_OK)
                s = gpudl__cuda_ok(m->ctx, cudaEventRecord(m->scaler_ev, m->ctx->stream), "cudaEventRecord (loss scaler)");
            if (s != GPUDL_OK)
                return GPUDL__ERR(m->ctx, s, "model_step: the step was applied (do not retry it), but the loss scaler's "
                                  "state could not be copied back: %s", gpudl__message(m->ctx));
            m->scaler_ev_pending = 1;
        }
        return GPUDL_OK;
    }
#endif
    w = (float *)m->params.data; g = (float *)m->grads.data;
    m1 = (float *)m->opt_m.data; m2 = (float *)m->opt_v.data;
    if (fp16) {
        gpudl_scaler_state *st = gpudl__scaler(m);
        float inv = 1.0f / st->scale;
        int64_t nbad = 0;
        /* a vectorised pass counts the gradients that FP16 storage makes
           non-finite; then either a vectorised unscale, or (an overflowed
           step) the exact loop that also finds the first bad index */
        gpudl__f16_nonfinite(g, n, &nbad);
        if (nbad == 0) {
            gpudl__f16_unscale(g, n, inv);
        } else {
            for (i = 0; i < n; i++) {
                int finite;
                g[i] = gpudl__unscale_grad(g[i], inv, 1, &finite);
                if (!finite && !st->found_inf) { st->found_inf = 1; st->first_bad = (int32_t)GPUDL__MIN(i, (int64_t)0x7fffffff); }
            }
        }
        skip = st->found_inf;
    } else if (check) {   /* FP32/BF16: a NaN or Inf skips the step (and is reported below) */
        gpudl_scaler_state *st = gpudl__scaler(m);
        int64_t nbad = 0;
        GPUDL__OMP(omp parallel for simd reduction(+:nbad) num_threads(gpudl__team()) if (n > 65536))
        for (i = 0; i < n; i++) nbad += (g[i] - g[i]) != 0.0f;
        for (i = 0; nbad && i < n; i++)
            if ((g[i] - g[i]) != 0.0f) { st->found_inf = 1; st->first_bad = (int32_t)GPUDL__MIN(i, (int64_t)0x7fffffff); break; }
        skip = st->found_inf;
    }
    if (!skip && m->opt.clip_norm > 0.0f) {
        /* the global norm, summed in a fixed order (deterministic) */
        double ss = 0;
        for (i = 0; i < n; i++) ss += (double)g[i] * g[i];
        ((float *)m->clip.data)[0] = (float)ss;
        if (sqrt(ss) > m->opt.clip_norm) scale = (float)(m->opt.clip_norm / (sqrt(ss) + 1e-6));
        ((float *)m->clip.data)[1] = scale;
    }
    if (!skip && m->ctx->any_ops[0]) GPUDL__TRY(gpudl__step_user(m, &h, scale, &user_done));
    if (!skip && !user_done) gpudl__cpu_update(m->ctx, &h, w, g, scale, m1, m2, n);   /* skipped: weights and moments bit-identical */
    if (check) gpudl_scaler_update(gpudl__scaler(m), &m->sdesc);
    GPUDL__TRY(gpudl__refresh_params16(m));
    m->step++;
    return check ? gpudl__amp_check(m) : GPUDL_OK;
}

#ifndef GPUDL_NO_CUDA
/* Whether this step may be a graph, and its key. */
static int gpudl__graph_key_of(gpudl_model *m, const gpudl_tensor *x, const gpudl_tensor *y, gpudl__graph_key *k) {
    gpudl_ctx *ctx = m->ctx;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    int i;
    memset(k, 0, sizeof *k);
    if (m->desc.graphs < 0 || !GPUDL__ON_GPU(&m->params) || !x || !y || x->device != m->params.device || m->prof ||
        ctx->any_ops[1] || gpudl_dist_size(m->dist) > 1 || !m->has_opt || m->check_stale || ctx->sync_debug)
        return 0;
    for (i = 0; i < m->nlayers; i++) {
        const gpudl__layer *l = &m->layers[i];
        if ((l->kind->flags & GPUDL__KIND_CUSTOM) || (l->kind == &gpudl__kind_dropout && m->training && l->u.dropout.p > 0))
            return 0;   /* the user's code, or a mask that changes every step */
    }
    if (cudaStreamIsCapturing(ctx->stream, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) {
        (void)cudaGetLastError();
        return 0;   /* the stream is the user's and already capturing (or cannot be): the calls go into it */
    }
    k->x = x->data; k->y = y->data; k->params16 = m->params16.data; k->opt_m = m->opt_m.data; k->opt_v = m->opt_v.data;
    k->scaler = m->scaler.data; k->act0 = m->layers[m->nlayers - 1].out.data;
    k->batch = x->ndim ? x->shape[0] : 0;
    k->xdt = (int)x->dtype; k->ydt = (int)y->dtype; k->precision = (int)m->precision; k->training = m->training;
    k->use_lt = ctx->use_lt; k->math = (int)ctx->math_mode; k->check = m->scaler.data != NULL;
    k->nlayers = m->nlayers;
    return 1;
}
#endif

/* The calls of a step, one by one. */
static gpudl_status gpudl__train_calls(gpudl_model *m, const gpudl_tensor *x, const gpudl_tensor *y) {
    GPUDL__TRY(gpudl_model_zero_grad(m));
    GPUDL__TRY(gpudl_model_forward(m, x, NULL));
    GPUDL__TRY(gpudl_model_loss(m, y));
    GPUDL__TRY(gpudl_model_backward(m));
    return gpudl_model_step(m);
}

GPUDL__DEF gpudl_status gpudl_model_train_step(gpudl_model *m, const gpudl_tensor *x, const gpudl_tensor *target) {
#ifndef GPUDL_NO_CUDA
    gpudl_ctx *ctx;
    gpudl__graph_key k;
    gpudl_status s;
    cudaGraph_t g = NULL;
    cudaError_t e;
    gpudl_model keep;
    int armed;
#endif
    GPUDL__TRY(gpudl__check_built(m, "model_train_step"));
#ifndef GPUDL_NO_CUDA
    ctx = m->ctx;
    if (!gpudl__graph_key_of(m, x, target, &k)) { m->graph_seen = 0; return gpudl__train_calls(m, x, target); }
    if (memcmp(&k, &m->graph_key, sizeof k)) {   /* another step: its graph, if any, is stale */
        m->graph_key = k;
        m->graph_seen = 1;
        m->graph_refused = 0;
        if (m->graph) { cudaGraphExecDestroy(m->graph); m->graph = NULL; }
        if (m->graph_src) { cudaGraphDestroy(m->graph_src); m->graph_src = NULL; }
        return gpudl__train_calls(m, x, target);
    }
    if (m->graph_refused || (!m->graph && m->graph_seen < 1)) return gpudl__train_calls(m, x, target);
    s = gpudl__amp_check(m);   /* what gpudl_model_step checks first, before anything is queued */
    if (s != GPUDL_OK) {       /* the calls then report it from the step, as one by one */
        gpudl_status r = gpudl_model_zero_grad(m);
        if (r == GPUDL_OK) r = gpudl_model_forward(m, x, NULL);
        if (r == GPUDL_OK) r = gpudl_model_loss(m, target);
        if (r == GPUDL_OK) r = gpudl_model_backward(m);
        return r != GPUDL_OK ? r : s;
    }
    if (!m->graph) {   /* the second step in a row with this key: capture it */
        keep = *m;
        m->in_graph = 1;
        e = cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal);
        s = e == cudaSuccess ? gpudl__train_calls(m, x, target) : GPUDL_OK;
        if (e == cudaSuccess) e = cudaStreamEndCapture(ctx->stream, &g);
        if (e == cudaSuccess && s == GPUDL_OK) {   /* the update's node: its first argument is the hyper-parameters */
            cudaGraphNode_t nodes[256];
            size_t nn = sizeof nodes / sizeof nodes[0], j;
            m->graph_update = NULL;
            e = cudaGraphGetNodes(g, nodes, &nn);
            for (j = 0; e == cudaSuccess && j < nn && j < sizeof nodes / sizeof nodes[0]; j++) {
                enum cudaGraphNodeType t;
                struct cudaKernelNodeParams kp;
                if (cudaGraphNodeGetType(nodes[j], &t) != cudaSuccess || t != cudaGraphNodeTypeKernel) continue;
                if (cudaGraphKernelNodeGetParams(nodes[j], &kp) == cudaSuccess && kp.func == gpudl_k_optim_step_fn()) {
                    m->graph_update = nodes[j];
                    m->graph_kp = kp;
                }
            }
            if (e == cudaSuccess && !m->graph_update) e = cudaErrorNotSupported;   /* (the user's update ran instead) */
        }
        if (e == cudaSuccess && s == GPUDL_OK) e = cudaGraphInstantiate(&m->graph, g, 0);
        m->in_graph = 0;
        if (e != cudaSuccess || s != GPUDL_OK) {   /* refused (a call that cannot be captured): nothing ran */
            (void)cudaGetLastError();
            if (m->graph) cudaGraphExecDestroy(m->graph);
            if (g) cudaGraphDestroy(g);
            *m = keep;   /* the host's side as before the calls */
            m->graph = NULL;
            m->graph_src = NULL;
            m->graph_refused = 1;
            ctx->last_error[0] = 0;
            return gpudl__train_calls(m, x, target);
        }
        m->graph_src = g;
        m->graph_input = m->input;
        m->graph_batch = m->batch;
        m->step = keep.step;   /* the captured calls ran on the host only: the launch below is the step */
    }
    armed = m->scaler.data && !m->scaler_ev_pending;   /* the update writes the scaler's state for the host */
    {   /* this step's hyper-parameters (learning rate, Adam's bias correction) into the update's node: its
           arguments as gpudl_model_step passes them (gpudl_k_optim_step), the grid as captured */
        struct cudaKernelNodeParams kp;
        gpudl_optim_hp h = gpudl__hparams(m);
        float *w = (float *)m->params.data, *m1 = (float *)m->opt_m.data, *m2 = (float *)m->opt_v.data;
        const float *gr = (const float *)m->grads.data, *gscale = m->opt.clip_norm > 0.0f ? (const float *)m->clip.data + 1 : NULL;
        int64_t n = m->nparams;
        gpudl_scaler_state *st = m->scaler.data ? gpudl__scaler(m) : NULL;
        int fp16 = m->precision == GPUDL_PRECISION_FP16, dt16 = (int)m->params16.dtype;
        gpudl_scaler_desc d = m->sdesc;
        uint16_t *w16 = (uint16_t *)m->params16.data;
        int32_t *guard = ctx->bad_input, *skipped = m->skipped_host;
        gpudl_scaler_state *seen = armed ? m->scaler_seen : NULL;   /* (as gpudl_model_step) */
        void *args[15];
        args[0] = &h; args[1] = &w; args[2] = &gr; args[3] = &m1; args[4] = &m2; args[5] = &n; args[6] = &gscale;
        args[7] = &st; args[8] = &fp16; args[9] = &d; args[10] = &w16; args[11] = &dt16; args[12] = &guard; args[13] = &skipped;
        args[14] = &seen;
        kp = m->graph_kp;
        kp.kernelParams = args;
        kp.extra = NULL;
        GPUDL__CUDA(ctx, cudaGraphExecKernelNodeSetParams(m->graph, m->graph_update, &kp));
    }
    GPUDL__CUDA(ctx, cudaGraphLaunch(m->graph, ctx->stream));
    /* the host's side of the calls the graph ran */
    m->input = m->graph_input;
    m->batch = m->graph_batch;
    m->have_loss = 1;
    m->pass_failed = m->grads_failed = NULL;
    m->grads_zero = 0;
    m->check_stale = 0;
    m->step++;
    if (armed) {   /* as gpudl_model_step: the state written by the update, read when this event has landed */
        GPUDL__CUDA(ctx, cudaEventRecord(m->scaler_ev, ctx->stream));
        m->scaler_ev_pending = 1;
    }
    return GPUDL_OK;
#else
    return gpudl__train_calls(m, x, target);
#endif
}

/* >>amp ------------------------------------------------------------------- */
static gpudl_scaler_state *gpudl__scaler(gpudl_model *m) { return (gpudl_scaler_state *)m->scaler.data; }

static void gpudl__amp_release(gpudl_model *m) {
    gpudl_tensor_free(m->ctx, &m->params16);
    gpudl_tensor_free(m->ctx, &m->scaler);
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(&m->params)) {
        if (m->scaler_seen) cudaFreeHost(m->scaler_seen);
        if (m->scaler_ev) cudaEventDestroy(m->scaler_ev);
        if (m->graph) cudaGraphExecDestroy(m->graph);   /* it reads the buffers released here */
        if (m->graph_src) cudaGraphDestroy(m->graph_src);
        m->graph = NULL;
        m->graph_src = NULL;
        m->graph_seen = m->graph_refused = 0;
        m->scaler_seen = NULL;
        m->scaler_ev = NULL;
        m->scaler_ev_pending = 0;
    }
#endif
    m->scaler_seen = NULL;        /* on the CPU it pointed at the state itself */
}

/* params16 = the weights in 16 bits (once per step). */
static gpudl_status gpudl__refresh_params16(gpudl_model *m) {
    if (!m->params16.data) return GPUDL_OK;
    return gpudl_tensor_cast(m->ctx, &m->params16, &m->params);
}

/* The scaler's state at scale, on the model's device, and the host's view of it. */
static gpudl_status gpudl__scaler_make(gpudl_model *m, float scale) {
    gpudl_scaler_state st;
    int64_t bytes = (int64_t)sizeof st;
    gpudl_status s;
    memset(&st, 0, sizeof st);
    st.scale = scale;
    st.first_bad = st.last_bad = 0x7fffffff;
    m->skips_reported = 0;
    s = gpudl_tensor_create(m->ctx, &m->scaler, GPUDL_U8, 1, &bytes);
    if (s == GPUDL_OK) s = gpudl_tensor_upload(m->ctx, &m->scaler, &st, sizeof st);
#ifndef GPUDL_NO_CUDA
    if (s == GPUDL_OK && GPUDL__ON_GPU(&m->params)) {
        cudaError_t e = GPUDL__FAULT(3) ? cudaErrorMemoryAllocation   /* mapped: the update's last block writes it */
                                        : cudaHostAlloc((void **)&m->scaler_seen, sizeof st, cudaHostAllocMapped);
        if (e == cudaSuccess)
            e = GPUDL__FAULT(3) ? cudaErrorInvalidValue : cudaEventCreateWithFlags(&m->scaler_ev, cudaEventDisableTiming);
        if (e != cudaSuccess) return gpudl__cuda_fail(m->ctx, e, "pinned scaler state", __FILE__, __LINE__);
        *m->scaler_seen = st;
        return GPUDL_OK;
    }
#endif
    if (s == GPUDL_OK) m->scaler_seen = gpudl__scaler(m);   /* host memory already: nothing to copy back */
    return s;
}

/* FP32 and BF16 keep the scaler's state for the non-finite check, at a scale that stays 1. */
static gpudl_status gpudl__check_make(gpudl_model *m) {
    m->sdesc.init_scale = m->sdesc.growth_factor = m->sdesc.backoff_factor = m->sdesc.min_scale = 1.0f;
    m->sdesc.growth_interval = 0x7fffffff;
    return m->desc.check_finite >= 0 ? gpudl__scaler_make(m, 1.0f) : GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_model_set_precision(gpudl_model *m, gpudl_precision p, const gpudl_scaler_desc *scaler) {
    gpudl_dtype dt;
    gpudl_scaler_desc d;
    gpudl_status s = GPUDL_OK;
    GPUDL__TRY(gpudl__check_built(m, "model_set_precision"));
    if (p < GPUDL_PRECISION_FP32 || p > GPUDL_PRECISION_BF16)
        return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "set_precision: %d is not a gpudl_precision", (int)p);
    memset(&d, 0, sizeof d);
    if (scaler) d = *scaler;
    if (d.init_scale < 0 || d.growth_factor < 0 || d.backoff_factor < 0 || d.backoff_factor >= 1 || d.min_scale < 0 ||
        d.growth_interval < 0 || d.max_skips < 0 || (d.growth_factor > 0 && d.growth_factor <= 1))
        return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "set_precision: scaler desc needs growth_factor > 1, "
                          "0 < backoff_factor < 1 and no negative values");
    if (d.init_scale == 0) d.init_scale = 65536.0f;
    if (d.growth_factor == 0) d.growth_factor = 2.0f;
    if (d.backoff_factor == 0) d.backoff_factor = 0.5f;
    if (d.min_scale == 0) d.min_scale = 1.0f;
    if (d.growth_interval == 0) d.growth_interval = 2000;
    if (d.max_skips == 0) d.max_skips = 100;
    dt = p == GPUDL_PRECISION_FP16 ? GPUDL_F16 : p == GPUDL_PRECISION_BF16 ? GPUDL_BF16 : GPUDL_F32;
    if (dt != GPUDL_F32) {
        int i;
        for (i = 0; i < m->nlayers; i++)
            if ((m->layers[i].kind->flags & GPUDL__KIND_CUSTOM) && m->layers[i].u.custom.d.f32_only)
                return GPUDL__ERR(m->ctx, GPUDL_ERR_UNSUPPORTED, "set_precision: layer %d ('%s') is a custom layer for f32 data "
                                  "only (its desc says f32_only); FP16/BF16 need callbacks that handle %s tensors", i,
                                  m->layers[i].u.custom.name, gpudl_dtype_name(dt));
    }
    if (dt != m->act_dtype) GPUDL__TRY(gpudl__acts_alloc(m, dt));   /* all or nothing: on failure the model is unchanged */
    gpudl__amp_release(m);
    m->precision = p;
    m->sdesc = d;
    if (p == GPUDL_PRECISION_TF32) m->ctx->math_mode = GPUDL_MATH_TF32;
    if (dt != GPUDL_F32) s = gpudl_tensor_create(m->ctx, &m->params16, dt, 1, &m->nparams);
    if (s == GPUDL_OK) s = p == GPUDL_PRECISION_FP16 ? gpudl__scaler_make(m, d.init_scale) : gpudl__check_make(m);
    if (s == GPUDL_OK) s = gpudl__refresh_params16(m);
    if (s != GPUDL_OK) {   /* back to FP32; a model that cannot even get its f32 buffers back refuses every call */
        gpudl__amp_release(m);
        m->precision = GPUDL_PRECISION_FP32;
        if (gpudl__acts_alloc(m, GPUDL_F32) != GPUDL_OK) { gpudl__acts_free(m); m->built = 0; }
    }
    return s;
}

GPUDL__DEF gpudl_status gpudl_model_scaler_state(gpudl_model *m, gpudl_scaler_state *state) {
    GPUDL__TRY(gpudl__check_built(m, "model_scaler_state"));
    if (!state) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_scaler_state: state is NULL");
    if (!m->scaler.data) return GPUDL__ERR(m->ctx, GPUDL_ERR_INVALID_ARG, "model_scaler_state: the model has no loss scaler "
                                           "(gpudl_model_set_precision with FP16 or BF16)");
    return gpudl_tensor_download(m->ctx, &m->scaler, state, sizeof *state);
}

/* "3.weight" for a flat parameter index. */
static void gpudl__param_name(const gpudl_model *m, int64_t idx, char *buf, size_t size) {
    int i;
    snprintf(buf, size, "parameter element %lld", (long long)idx);
    for (i = 0; i < m->nlayers; i++) {
        const gpudl__layer *l = &m->layers[i];
        int j;
        for (j = 0; j < l->np; j++)
            if (idx >= l->poff[j] && idx < l->poff[j] + gpudl__prod(l->pshape[j].ndim, l->pshape[j].d))
            {
                if (l->name[0]) snprintf(buf, size, "'%s.%s' (element %lld)", l->name, gpudl__pname(l, j), (long long)(idx - l->poff[j]));
                else snprintf(buf, size, "'%d.%s' (element %lld)", i, gpudl__pname(l, j), (long long)(idx - l->poff[j]));
            }
    }
}

/* Persistent overflow: from the state seen so far, without waiting. */
static gpudl_status gpudl__amp_check(gpudl_model *m) {
    gpudl_scaler_state *st;
    char name[160];
    if (!m->scaler_seen) return GPUDL_OK;
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(&m->params)) {
        cudaError_t e;
        if (!m->scaler_ev_pending) return GPUDL_OK;
        e = gpudl__event_query(m->scaler_ev);
        if (e == cudaErrorNotReady) return GPUDL_OK;   /* not landed yet: look next step */
        if (e != cudaSuccess) return gpudl__cuda_fail(m->ctx, e, "cudaEventQuery (loss scaler)", __FILE__, __LINE__);
        m->scaler_ev_pending = 0;
    }
#endif
    st = m->scaler_seen;
    if (m->precision != GPUDL_PRECISION_FP16) {   /* FP32/BF16: no overflow is transient, report the first */
        if (st->skipped_total <= m->skips_reported) return GPUDL_OK;
        m->skips_reported = st->skipped_total;
        gpudl__param_name(m, st->last_bad, name, sizeof name);
        return GPUDL__ERR(m->ctx, GPUDL_ERR_NONFINITE, "model_step: a gradient is NaN or Inf, first in %s; the step was "
                          "skipped, so the weights and the optimizer state hold no NaN/Inf. Usually the input or the "
                          "target holds a NaN or Inf, or the loss diverged (lower the learning rate)", name);
    }
    if (st->skips_at_floor < m->sdesc.max_skips) return GPUDL_OK;
    gpudl__param_name(m, st->last_bad, name, sizeof name);
    return GPUDL__ERR(m->ctx, GPUDL_ERR_NONFINITE, "model_step: %d consecutive steps overflowed at the minimum loss scale "
                      "(%g), the last with a non-finite gradient first in %s; those steps were skipped, so the weights "
                      "hold no NaN/Inf. The values are not just too large for FP16: check the input and the target "
                      "for NaN/Inf, and lower the learning rate", st->skips_at_floor, (double)m->sdesc.min_scale, name);
}

/* >>data ------------------------------------------------------------------ */
/* Reads a whole regular file into a new host buffer. IO errors name the
   path and strerror. *size is the byte count; the buffer has one extra
   zero byte. */
static gpudl_status gpudl__read_file(gpudl_ctx *ctx, const char *path, const char *what, unsigned char **data, size_t *size) {
    FILE *f;
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0;
    *data = NULL;
    *size = 0;
#if !defined(_WIN32)
    {
        struct stat st;
        if (stat(path, &st) != 0)
            return GPUDL__ERR(ctx, GPUDL_ERR_IO, "%s: cannot open '%s': %s", what, path, strerror(errno));
        if (S_ISDIR(st.st_mode)) return GPUDL__ERR(ctx, GPUDL_ERR_IO, "%s: '%s' is a directory, not a file", what, path);
        cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
    }
#else
    {   /* fopen() opens nothing for a directory there either, but says only "Permission denied" */
        DWORD attr = GetFileAttributesA(path);
        if (attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY))
            return GPUDL__ERR(ctx, GPUDL_ERR_IO, "%s: '%s' is a directory, not a file", what, path);
    }
#endif
    f = fopen(path, "rb");
    if (!f) return GPUDL__ERR(ctx, GPUDL_ERR_IO, "%s: cannot open '%s': %s", what, path, strerror(errno));
    if (cap == 0) cap = 4096;
    buf = (unsigned char *)GPUDL_MALLOC(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n == cap) {
            unsigned char *b2 = (unsigned char *)GPUDL_REALLOC(buf, cap * 2);
            if (!b2) { GPUDL_FREE(buf); buf = NULL; break; }
            buf = b2;
            cap *= 2;
        }
    }
    if (!buf) { fclose(f); return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "%s: no memory to read '%s'", what, path); }
    if (ferror(f)) {
        int e = errno;
        fclose(f);
        GPUDL_FREE(buf);
        return GPUDL__ERR(ctx, GPUDL_ERR_IO, "%s: reading '%s' failed: %s", what, path, strerror(e));
    }
    fclose(f);
    if (n == cap) {   /* room for the terminating zero */
        unsigned char *b2 = (unsigned char *)GPUDL_REALLOC(buf, cap + 1);
        if (!b2) { GPUDL_FREE(buf); return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "%s: no memory to read '%s'", what, path); }
        buf = b2;
    }
    buf[n] = 0;
    *data = buf;
    *size = n;
    return GPUDL_OK;
}

/* gzip without zlib: the drop-in builds read the .gz files Debian's
   dataset-fashion-mnist installs. A gzip file is one or more members
   (RFC 1952: header, DEFLATE data, CRC-32, length mod 2^32), the data
   DEFLATE blocks (RFC 1951: stored, fixed or dynamic Huffman codes over
   literals, lengths and distances). Strict, as zlib is: an over-subscribed
   or incomplete code (but for a lone one-bit code), a distance before the
   member's start, an unknown symbol, a bad CRC or length, trailing bytes:
   each an error that says which. */
typedef struct gpudl__huff {
    uint16_t fast[1 << 9];   /* the next 9 bits (LSB first) -> symbol << 4 | length; 0: a longer code */
    uint16_t count[16];      /* codes of each length */
    uint16_t symbol[288];    /* symbols in canonical order */
} gpudl__huff;

typedef struct gpudl__inflater {
    const unsigned char *in;
    size_t in_n, in_pos;
    uint64_t bits;           /* unread bits, the next one lowest */
    int nbits;
    unsigned char *out;      /* (out_cap) the output so far */
    size_t out_n, out_cap, member;   /* member: where this member's output starts */
    const char *err;         /* the first fault, or NULL */
} gpudl__inflater;

static void gpudl__inf_fill(gpudl__inflater *z) {
    while (z->nbits <= 56 && z->in_pos < z->in_n) {
        z->bits |= (uint64_t)z->in[z->in_pos++] << z->nbits;
        z->nbits += 8;
    }
}

/* n (<= 32) bits, or 0 and z->err past the end of the input */
static uint32_t gpudl__inf_bits(gpudl__inflater *z, int n) {
    uint32_t v;
    if (z->nbits < n) gpudl__inf_fill(z);
    if (z->nbits < n) { if (!z->err) z->err = "truncated"; return 0; }
    v = (uint32_t)(z->bits & (((uint64_t)1 << n) - 1));
    z->bits >>= n;
    z->nbits -= n;
    return v;
}

/* A canonical code from its lengths (0: unused). 0, or the fault. */
static const char *gpudl__huff_build(gpudl__huff *h, const unsigned char *len, int n, int lone_ok) {
    uint16_t offs[16], next[16];
    int i, l, left = 1, codes = 0, code = 0;
    memset(h, 0, sizeof *h);
    for (i = 0; i < n; i++) h->count[len[i]]++;
    h->count[0] = 0;
    for (l = 1; l < 16; l++) {
        left = 2 * left - h->count[l];
        codes += h->count[l];
        if (left < 0) return "an over-subscribed Huffman code";
    }
    /* incomplete: only an all-empty code (a block of literals needs no
       distances) or a lone code of length 1, as zlib allows */
    if (left > 0 && codes > 0 && !(lone_ok && codes == 1 && h->count[1] == 1)) return "an incomplete Huffman code";
    offs[1] = 0;
    for (l = 1; l < 15; l++) offs[l + 1] = (uint16_t)(offs[l] + h->count[l]);
    for (i = 0; i < n; i++) if (len[i]) h->symbol[offs[len[i]]++] = (uint16_t)i;
    for (l = 1; l < 16; l++) { code = (code + (l > 1 ? h->count[l - 1] : 0)) << (l > 1 ? 1 : 0); next[l] = (uint16_t)code; }
    for (i = 0; i < n; i++) {
        int r = 0, c, b;
        l = len[i];
        if (!l || l > 9) continue;
        c = next[l]++;
        for (b = 0; b < l; b++) r |= ((c >> b) & 1) << (l - 1 - b);   /* codes are sent from their top bit */
        for (; r < (1 << 9); r += 1 << l) h->fast[r] = (uint16_t)(i << 4 | l);
    }
    return NULL;
}

/* The next symbol of code h, or -1 (z->err set). */
static int gpudl__huff_decode(gpudl__inflater *z, const gpudl__huff *h) {
    int l, code = 0, first = 0, index = 0, e;
    if (z->nbits < 15) gpudl__inf_fill(z);
    e = h->fast[z->bits & ((1 << 9) - 1)];
    if (e && (e & 15) <= z->nbits) { z->bits >>= e & 15; z->nbits -= e & 15; return e >> 4; }
    for (l = 1; l < 16; l++) {   /* a longer code (or the input's end), one bit at a time */
        if (l > z->nbits) { if (!z->err) z->err = "truncated"; return -1; }
        code |= (int)((z->bits >> (l - 1)) & 1);
        if (code - h->count[l] < first) { z->bits >>= l; z->nbits -= l; return h->symbol[index + code - first]; }
        index += h->count[l];
        first = (first + h->count[l]) << 1;
        code <<= 1;
    }
    if (!z->err) z->err = "a bit pattern that is no Huffman code of the block";
    return -1;
}

static int gpudl__inf_room(gpudl__inflater *z, size_t more) {
    size_t cap = z->out_cap;
    unsigned char *o;
    if (z->out_n + more <= cap) return 1;
    if (more > SIZE_MAX - z->out_n) { if (!z->err) z->err = "out of memory"; return 0; }
    while (cap < z->out_n + more) cap = cap && cap <= SIZE_MAX / 2 ? 2 * cap : cap ? z->out_n + more : 65536;
    o = (unsigned char *)GPUDL_REALLOC(z->out, cap);
    if (!o) { if (!z->err) z->err = "out of memory"; return 0; }
    z->out = o;
    z->out_cap = cap;
    return 1;
}

/* One block's compressed data, up to and with its end-of-block symbol. */
static void gpudl__inf_codes(gpudl__inflater *z, const gpudl__huff *lit, const gpudl__huff *dist) {
    static const uint16_t lbase[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
                                       131, 163, 195, 227, 258};
    static const unsigned char lext[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static const uint16_t dbase[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
                                       2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
    static const unsigned char dext[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12,
                                           13, 13};
    for (;;) {
        int sym = gpudl__huff_decode(z, lit);
        size_t len, d, k;
        unsigned char *o;
        const unsigned char *from;
        if (sym < 0) return;
        if (sym < 256) {
            if (z->out_n == z->out_cap && !gpudl__inf_room(z, 1)) return;
            z->out[z->out_n++] = (unsigned char)sym;
            continue;
        }
        if (sym == 256) return;
        if (sym > 285) { z->err = "a length symbol out of range (286 or 287)"; return; }
        len = lbase[sym - 257] + gpudl__inf_bits(z, lext[sym - 257]);
        sym = gpudl__huff_decode(z, dist);
        if (sym < 0) return;
        if (sym > 29) { z->err = "a distance symbol out of range (30 or 31)"; return; }
        d = dbase[sym] + gpudl__inf_bits(z, dext[sym]);
        if (z->err) return;
        if (d > z->out_n - z->member) { z->err = "a distance too far back"; return; }
        if (!gpudl__inf_room(z, len)) return;
        o = z->out + z->out_n;
        from = o - d;
        for (k = 0; k < len; k++) o[k] = from[k];   /* byte by byte: a copy may overlap itself */
        z->out_n += len;
    }
}

/* One DEFLATE stream (RFC 1951), its blocks to the last. */
static void gpudl__inflate(gpudl__inflater *z) {
    static const unsigned char order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    gpudl__huff *h = (gpudl__huff *)GPUDL_MALLOC(2 * sizeof *h);   /* literal/length and distance codes */
    unsigned char len[320];
    int last = 0, i;
    if (!h) { z->err = "out of memory"; return; }
    while (!last && !z->err) {
        int type;
        last = (int)gpudl__inf_bits(z, 1);
        type = (int)gpudl__inf_bits(z, 2);
        if (z->err) break;
        if (type == 0) {   /* stored: to a byte boundary, LEN, NLEN, LEN bytes */
            size_t n;
            z->bits >>= z->nbits & 7;
            z->nbits -= z->nbits & 7;
            z->in_pos -= (size_t)z->nbits / 8;   /* the whole bytes still buffered go back to the input */
            z->bits = 0;
            z->nbits = 0;
            if (z->in_n - z->in_pos < 4) { z->err = "truncated"; break; }
            n = (size_t)z->in[z->in_pos] | (size_t)z->in[z->in_pos + 1] << 8;
            if ((n ^ ((size_t)z->in[z->in_pos + 2] | (size_t)z->in[z->in_pos + 3] << 8)) != 0xffff) {
                z->err = "a stored block whose length and its complement disagree";
                break;
            }
            z->in_pos += 4;
            if (z->in_n - z->in_pos < n) { z->err = "truncated"; break; }
            if (!gpudl__inf_room(z, n)) break;
            memcpy(z->out + z->out_n, z->in + z->in_pos, n);
            z->out_n += n;
            z->in_pos += n;
        } else if (type == 1) {   /* the fixed codes */
            const char *e;
            for (i = 0; i < 288; i++) len[i] = (unsigned char)(i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8);
            for (i = 0; i < 32; i++) len[288 + i] = 5;
            if ((e = gpudl__huff_build(&h[0], len, 288, 0)) != NULL || (e = gpudl__huff_build(&h[1], len + 288, 32, 0)) != NULL) {
                z->err = e;
                break;
            }
            gpudl__inf_codes(z, &h[0], &h[1]);
        } else if (type == 2) {   /* dynamic: the code lengths, coded themselves */
            int nlit = (int)gpudl__inf_bits(z, 5) + 257, ndist = (int)gpudl__inf_bits(z, 5) + 1, ncl = (int)gpudl__inf_bits(z, 4) + 4;
            const char *e;
            if (z->err) break;
            if (nlit > 286 || ndist > 30) { z->err = "too many length or distance codes"; break; }
            memset(len, 0, 19);
            for (i = 0; i < ncl; i++) len[order[i]] = (unsigned char)gpudl__inf_bits(z, 3);
            if (z->err) break;
            if ((e = gpudl__huff_build(&h[0], len, 19, 0)) != NULL) { z->err = e; break; }
            for (i = 0; i < nlit + ndist;) {
                int sym = gpudl__huff_decode(z, &h[0]), rep, v = 0;
                if (sym < 0) break;
                if (sym < 16) { len[i++] = (unsigned char)sym; continue; }
                if (sym == 16) {
                    if (i == 0) { z->err = "a repeat of the previous code length at the start"; break; }
                    v = len[i - 1];
                    rep = 3 + (int)gpudl__inf_bits(z, 2);
                } else if (sym == 17) rep = 3 + (int)gpudl__inf_bits(z, 3);
                else rep = 11 + (int)gpudl__inf_bits(z, 7);
                if (i + rep > nlit + ndist) { z->err = "code lengths past the end of the table"; break; }
                while (rep--) len[i++] = (unsigned char)v;
            }
            if (z->err) break;
            if (len[256] == 0) { z->err = "a block without an end-of-block code"; break; }
            if ((e = gpudl__huff_build(&h[0], len, nlit, 1)) != NULL || (e = gpudl__huff_build(&h[1], len + nlit, ndist, 1)) != NULL) {
                z->err = e;
                break;
            }
            gpudl__inf_codes(z, &h[0], &h[1]);
        } else {
            z->err = "a block of the reserved type 3";
        }
    }
    GPUDL_FREE(h);
}

static uint32_t gpudl__crc32(uint32_t crc, const unsigned char *p, size_t n) {
    uint32_t t[256];
    uint32_t i, k;
    for (i = 0; i < 256; i++) {
        uint32_t c = i;
        for (k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        t[i] = c;
    }
    crc = ~crc;
    while (n--) crc = t[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static uint32_t gpudl__le32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* A gzip file's members, one after another, into a new buffer. 0, or the fault (*out NULL). */
GPUDL__MAYBE_UNUSED static const char *gpudl__gunzip_builtin(const unsigned char *in, size_t n, unsigned char **out, size_t *out_size) {
    gpudl__inflater z;
    memset(&z, 0, sizeof z);
    *out = NULL;
    *out_size = 0;
    z.in = in;
    z.in_n = n;
    if (n >= 18) {   /* the last member's length, a good first guess of the whole (capped: it may lie; if it
                        cannot be had, the output grows as it comes) */
        size_t guess = gpudl__le32(in + n - 4);
        guess = GPUDL__MIN(guess, n < (SIZE_MAX >> 11) ? n << 10 : guess) + 1;
        if ((z.out = (unsigned char *)GPUDL_MALLOC(guess)) != NULL) z.out_cap = guess;
    }
    do {
        size_t p = z.in_pos, start = z.out_n;
        int flg;
        if (p > 0 && (z.in_n - p < 2 || in[p] != 0x1f || in[p + 1] != 0x8b)) {
            z.err = "bytes after the gzip data that are not another gzip member";
            break;
        }
        if (z.in_n - p < 10) { z.err = "truncated inside a gzip header"; break; }
        if (in[p] != 0x1f || in[p + 1] != 0x8b) { z.err = "no gzip magic"; break; }
        if (in[p + 2] != 8) { z.err = "a compression method other than deflate"; break; }
        flg = in[p + 3];
        if (flg & 0xe0) { z.err = "reserved gzip header flags set"; break; }
        p += 10;
        if (flg & 4) {   /* FEXTRA */
            size_t xlen;
            if (z.in_n - p < 2) { z.err = "truncated inside a gzip header"; break; }
            xlen = (size_t)in[p] | (size_t)in[p + 1] << 8;
            if (z.in_n - p - 2 < xlen) { z.err = "truncated inside a gzip header"; break; }
            p += 2 + xlen;
        }
        if (flg & 8) { while (p < z.in_n && in[p]) p++; p++; }    /* FNAME, zero-terminated */
        if (flg & 16) { while (p < z.in_n && in[p]) p++; p++; }   /* FCOMMENT */
        if (flg & 2) {   /* FHCRC: the header's CRC-32, low 16 bits */
            if (p + 2 > z.in_n) { z.err = "truncated inside a gzip header"; break; }
            if ((gpudl__crc32(0, in + z.in_pos, p - z.in_pos) & 0xffff) != ((uint32_t)in[p] | (uint32_t)in[p + 1] << 8)) {
                z.err = "a gzip header whose CRC does not match";
                break;
            }
            p += 2;
        }
        if (p > z.in_n) { z.err = "truncated inside a gzip header"; break; }
        z.in_pos = p;
        z.member = start;
        gpudl__inflate(&z);
        if (z.err) break;
        z.in_pos -= (size_t)z.nbits / 8;   /* to the byte after the last block */
        z.bits = 0;
        z.nbits = 0;
        if (z.in_n - z.in_pos < 8) { z.err = "truncated before the gzip trailer"; break; }
        if (gpudl__crc32(0, z.out + start, z.out_n - start) != gpudl__le32(in + z.in_pos)) { z.err = "a CRC-32 that does not match the data"; break; }
        if ((uint32_t)(z.out_n - start) != gpudl__le32(in + z.in_pos + 4)) { z.err = "a length that does not match the data"; break; }
        z.in_pos += 8;
    } while (z.in_pos < z.in_n);
    if (z.err) { GPUDL_FREE(z.out); return z.err; }
    *out = z.out;
    *out_size = z.out_n;
    return NULL;
}

#ifdef GPUDL_ZLIB
/* Decompresses a gzip buffer into a new one (*out, *out_size). */
static gpudl_status gpudl__gunzip(gpudl_ctx *ctx, const char *path, const unsigned char *in, size_t in_size,
                                  unsigned char **out_buf, size_t *out_size) {
    z_stream z;
    size_t cap = in_size * 4 + 1024, n = 0;
    unsigned char *out = (unsigned char *)GPUDL_MALLOC(cap);
    int r = Z_OK;
    *out_buf = NULL;
    if (!out) return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "idx_load: no memory to decompress '%s'", path);
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK) { GPUDL_FREE(out); return GPUDL__ERR(ctx, GPUDL_ERR_FORMAT, "idx_load: zlib init failed"); }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)in_size;
    while (r != Z_STREAM_END) {
        if (n == cap) {
            unsigned char *o2 = (unsigned char *)GPUDL_REALLOC(out, cap * 2);
            if (!o2) { inflateEnd(&z); GPUDL_FREE(out); return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "idx_load: no memory to decompress '%s'", path); }
            out = o2;
            cap *= 2;
        }
        z.next_out = out + n;
        z.avail_out = (uInt)(cap - n);
        r = inflate(&z, Z_NO_FLUSH);
        n = cap - z.avail_out;
        if ((r != Z_OK && r != Z_STREAM_END) || (r == Z_OK && z.avail_in == 0 && z.avail_out != 0)) {
            gpudl_status st = GPUDL__ERR(ctx, GPUDL_ERR_FORMAT, "idx_load: '%s' is not a valid gzip stream (%s)", path,
                                         r == Z_OK || r == Z_BUF_ERROR ? "truncated" : z.msg ? z.msg : "inflate failed");
            inflateEnd(&z);
            GPUDL_FREE(out);
            return st;
        }
    }
    inflateEnd(&z);
    *out_buf = out;
    *out_size = n;
    return GPUDL_OK;
}
#endif

static uint32_t gpudl__be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

GPUDL__DEF gpudl_status gpudl_idx_load(gpudl_ctx *ctx, const char *path, gpudl_tensor *out) {
    unsigned char *buf = NULL;
    size_t size = 0;
    gpudl_status s;
    GPUDL__ENTER(ctx);
    if (!out) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "idx_load: out is NULL");
    memset(out, 0, sizeof *out);
    if (!path) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "idx_load: path is NULL");
    GPUDL__TRY(gpudl__read_file(ctx, path, "idx_load", &buf, &size));
    s = gpudl_idx_load_memory(ctx, path, buf, size, out);
    GPUDL_FREE(buf);
    return s;
}

GPUDL__DEF gpudl_status gpudl_idx_load_memory(gpudl_ctx *ctx, const char *name, const void *data, size_t size, gpudl_tensor *out) {
    const unsigned char *buf = (const unsigned char *)data;
    unsigned char *inflated = NULL;
    size_t hdr, esize;
    int64_t shape[4], n = 1, i;
    int ndim, type;
    gpudl_dtype dt;
    gpudl_status s;
    GPUDL__ENTER(ctx);
    if (!out) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "idx_load: out is NULL");
    memset(out, 0, sizeof *out);
    if (!name) name = "(memory)";
    if (!data && size) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "idx_load: '%s': data is NULL", name);
    if (size >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
#ifdef GPUDL_ZLIB
        GPUDL__TRY(gpudl__gunzip(ctx, name, buf, size, &inflated, &size));
#else
        const char *why = gpudl__gunzip_builtin(buf, size, &inflated, &size);
        if (why)
            return GPUDL__ERR(ctx, strcmp(why, "out of memory") ? GPUDL_ERR_FORMAT : GPUDL_ERR_OOM,
                              "idx_load: '%s' is not a valid gzip file: %s", name, why);
#endif
        buf = inflated;
    }
#define GPUDL__IDX_FAIL(st, ...) do { gpudl_status st_ = GPUDL__ERR(ctx, st, __VA_ARGS__); GPUDL_FREE(inflated); return st_; } while (0)
    if (size < 4) GPUDL__IDX_FAIL(GPUDL_ERR_FORMAT, "idx_load: '%s' is truncated: %zu bytes, less than the 4-byte magic", name, size);
    if (buf[0] != 0 || buf[1] != 0)
        GPUDL__IDX_FAIL(GPUDL_ERR_FORMAT, "idx_load: '%s' has a bad magic number (%02x %02x %02x %02x): not an IDX file", name,
                        buf[0], buf[1], buf[2], buf[3]);
    type = buf[2];
    ndim = buf[3];
    switch (type) {
    case 0x08: dt = GPUDL_U8; break;
    case 0x0C: dt = GPUDL_I32; break;
    case 0x0D: dt = GPUDL_F32; break;
    case 0x09: case 0x0B: case 0x0E:
        GPUDL__IDX_FAIL(GPUDL_ERR_UNSUPPORTED, "idx_load: '%s' holds IDX type 0x%02x (%s), which gpudl does not load "
                        "(ubyte, int and float are supported)", name, type, type == 0x09 ? "signed byte" : type == 0x0B ? "short" : "double");
    default:
        GPUDL__IDX_FAIL(GPUDL_ERR_FORMAT, "idx_load: '%s' has an unknown IDX type 0x%02x", name, type);
    }
    if (ndim < 1 || ndim > 4)
        GPUDL__IDX_FAIL(GPUDL_ERR_FORMAT, "idx_load: '%s' has %d dimensions; gpudl loads 1 to 4", name, ndim);
    hdr = 4 + 4 * (size_t)ndim;
    if (size < hdr) GPUDL__IDX_FAIL(GPUDL_ERR_FORMAT, "idx_load: '%s' is truncated inside its header (%zu of %zu bytes)", name, size, hdr);
    esize = gpudl_dtype_size(dt);
    for (i = 0; i < ndim; i++) {
        shape[i] = (int64_t)gpudl__be32(buf + 4 + 4 * i);
        if (shape[i] == 0) GPUDL__IDX_FAIL(GPUDL_ERR_FORMAT, "idx_load: '%s' has dimension %d of size 0", name, (int)i);
        if (n > (INT64_MAX / (int64_t)esize) / shape[i])
            GPUDL__IDX_FAIL(GPUDL_ERR_FORMAT, "idx_load: '%s': the dimensions' product overflows", name);
        n *= shape[i];
    }
    if ((uint64_t)(size - hdr) < (uint64_t)n * esize)
        GPUDL__IDX_FAIL(GPUDL_ERR_FORMAT, "idx_load: '%s' is truncated: the header promises %lld bytes of data, the file has %zu",
                        name, (long long)(n * (int64_t)esize), size - hdr);
    if ((uint64_t)(size - hdr) > (uint64_t)n * esize)
        GPUDL__IDX_FAIL(GPUDL_ERR_FORMAT, "idx_load: '%s' has %zu trailing bytes after its %lld bytes of data", name,
                        (size - hdr) - (size_t)(n * (int64_t)esize), (long long)(n * (int64_t)esize));
#undef GPUDL__IDX_FAIL
    s = gpudl_tensor_create_on(ctx, out, GPUDL_DEVICE_CPU, dt, ndim, shape);
    if (s == GPUDL_OK) {
        if (dt == GPUDL_U8) memcpy(out->data, buf + hdr, (size_t)n);
        else for (i = 0; i < n; i++) ((uint32_t *)out->data)[i] = gpudl__be32(buf + hdr + 4 * i);   /* big-endian words */
    }
    GPUDL_FREE(inflated);
    return s;
}

/* dir/name as it is there, into path: 0 plain, 1 with .gz, -1 neither
   (path: the plain name). */
static int gpudl__idx_path(char *path, size_t size, const char *dir, const char *name) {
    FILE *f;
    int gz;
    for (gz = 0; gz < 2; gz++) {
        snprintf(path, size, "%s/%s%s", dir, name, gz ? ".gz" : "");
        if ((f = fopen(path, "rb")) != NULL) { fclose(f); return gz; }
    }
    snprintf(path, size, "%s/%s", dir, name);
    return -1;
}

GPUDL__DEF gpudl_status gpudl_mnist_load(gpudl_ctx *ctx, const char *dir, int train, gpudl_tensor *images, gpudl_tensor *labels) {
    char p[1024], name[64];
    const char *pre = train ? "train" : "t10k";
    int k;
    gpudl_status s = GPUDL_OK;
    GPUDL__ENTER(ctx);
    if (!images || !labels || !dir) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "mnist_load: NULL argument");
    memset(images, 0, sizeof *images);
    memset(labels, 0, sizeof *labels);
    for (k = 0; k < 2 && s == GPUDL_OK; k++) {
        gpudl_tensor *t = k ? labels : images;
        snprintf(name, sizeof name, "%s-%s", pre, k ? "labels-idx1-ubyte" : "images-idx3-ubyte");
        if (gpudl__idx_path(p, sizeof p, dir, name) < 0)
            return GPUDL__ERR(ctx, GPUDL_ERR_IO, "mnist_load: neither %s nor %s.gz exists", p, p);
        s = gpudl_idx_load(ctx, p, t);
    }
    if (s == GPUDL_OK && (images->ndim != 3 || labels->ndim != 1 || images->dtype != GPUDL_U8 || labels->dtype != GPUDL_U8))
        s = GPUDL__ERR(ctx, GPUDL_ERR_FORMAT, "mnist_load: %s/%s-* are not N images of HxW bytes with N byte labels", dir, pre);
    else if (s == GPUDL_OK && images->shape[0] != labels->shape[0])
        s = GPUDL__ERR(ctx, GPUDL_ERR_FORMAT, "mnist_load: %s/%s-*: %lld images but %lld labels", dir, pre,
                       (long long)images->shape[0], (long long)labels->shape[0]);
    if (s != GPUDL_OK) { gpudl_tensor_free(ctx, images); gpudl_tensor_free(ctx, labels); }
    return s;
}

/* Where gpudl_fashion_mnist_load (and gpudl_doctor) look. */
static const char *const gpudl__fashion_dirs[5] = {".", "data/fashion-mnist", "build/data/fashion-mnist",
                                                   "/usr/share/datasets/fashion-mnist", "data/fashion-mnist-subset"};

GPUDL__DEF gpudl_status gpudl_fashion_mnist_load(gpudl_ctx *ctx, const char *dir, gpudl_tensor *train_x, gpudl_tensor *train_y,
                                                 gpudl_tensor *test_x, gpudl_tensor *test_y, const char **found) {
    const char *const *dirs = gpudl__fashion_dirs;
    gpudl_log_fn log;
    gpudl_status s = GPUDL_ERR_IO, best = GPUDL_OK;
    char why[1024] = "";
    int i;
    GPUDL__ENTER(ctx);
    if (!train_x || !train_y || !test_x || !test_y) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "fashion_mnist_load: NULL tensor");
    log = ctx->log;
    ctx->log = NULL;   /* quiet while looking */
    for (i = 0; i < (dir ? 1 : 5); i++) {
        const char *d = dir ? dir : dirs[i];
        s = gpudl_mnist_load(ctx, d, 1, train_x, train_y);
        if (s == GPUDL_OK && (s = gpudl_mnist_load(ctx, d, 0, test_x, test_y)) != GPUDL_OK) {
            gpudl_tensor_free(ctx, train_x);
            gpudl_tensor_free(ctx, train_y);
        }
        if (s == GPUDL_OK) { if (found) *found = d; break; }
        if (best == GPUDL_OK || (best == GPUDL_ERR_IO && s != GPUDL_ERR_IO)) {   /* a file that is there beats a missing one */
            best = s;
            snprintf(why, sizeof why, "%s", gpudl__message(ctx));
        }
    }
    ctx->log = log;
    if (s == GPUDL_OK) return GPUDL_OK;
    if (!dir && best == GPUDL_ERR_IO)
        return GPUDL__ERR(ctx, GPUDL_ERR_IO, "fashion_mnist_load: no Fashion-MNIST in ., data/fashion-mnist, "
                          "build/data/fashion-mnist, /usr/share/datasets/fashion-mnist or data/fashion-mnist-subset. On "
                          "Debian: apt-get install dataset-fashion-mnist; or put train-images-idx3-ubyte, "
                          "train-labels-idx1-ubyte, t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (or their .gz) in "
                          "a directory and name it");
    return GPUDL__ERR(ctx, best, "fashion_mnist_load: %s", why);
}

GPUDL__DEF void gpudl_dataset_free(gpudl_ctx *ctx, gpudl_dataset *ds) {
    if (!ds) return;
    if (ctx && (gpudl__live_has(ctx, ds->images.data) || gpudl__live_has(ctx, ds->labels.data) || gpudl__live_has(ctx, ds->perm.data) ||
                gpudl__live_has(ctx, ds->xb.data) || gpudl__live_has(ctx, ds->yb.data)))
        ctx->datasets--;   /* not for a copy already freed */
    gpudl_tensor_free(ctx, &ds->images); gpudl_tensor_free(ctx, &ds->labels); gpudl_tensor_free(ctx, &ds->perm);
    gpudl_tensor_free(ctx, &ds->xb); gpudl_tensor_free(ctx, &ds->yb);
    memset(ds, 0, sizeof *ds);
}

GPUDL__DEF gpudl_status gpudl_dataset_create(gpudl_ctx *ctx, gpudl_dataset *ds, const gpudl_tensor *images,
                                             const gpudl_tensor *labels, int64_t batch, float mean, float std) {
    int64_t N, sample, i, shape[4], one[1];
    float *hx = NULL;
    int32_t *hy = NULL;
    gpudl_status s = GPUDL_OK;
    GPUDL__ENTER(ctx);
    if (!ds) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dataset_create: ds is NULL");
    memset(ds, 0, sizeof *ds);
    GPUDL__TRY(gpudl__check_tensor(ctx, images, "images"));
    GPUDL__TRY(gpudl__check_tensor(ctx, labels, "labels"));
    if (images->device != GPUDL_DEVICE_CPU || labels->device != GPUDL_DEVICE_CPU ||
        (images->dtype != GPUDL_U8 && !gpudl__is_float(images->dtype)) ||
        (labels->dtype != GPUDL_U8 && labels->dtype != GPUDL_I32) || (images->ndim != 3 && images->ndim != 4) ||
        labels->shape[0] != images->shape[0] || gpudl_tensor_numel(labels) != images->shape[0])
        return gpudl__mismatch(ctx, GPUDL_ERR_SHAPE, "dataset_create", "images", images, "labels", labels,
                               "need host images (N,H,W) or (N,C,H,W), u8, f32, f16 or bf16, and N host u8/i32 labels");
    if (batch < 1 || !(std > 0.0f)) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dataset_create: need batch >= 1 and std > 0");
    N = images->shape[0];
    sample = gpudl_tensor_numel(images) / N;
    shape[0] = N;
    shape[1] = images->ndim == 4 ? images->shape[1] : 1;
    shape[2] = images->shape[images->ndim - 2];
    shape[3] = images->shape[images->ndim - 1];
    hx = (float *)GPUDL_MALLOC(sizeof(float) * (size_t)(N * sample));
    hy = (int32_t *)GPUDL_MALLOC(sizeof(int32_t) * (size_t)N);
    if (!hx || !hy) { s = GPUDL__ERR(ctx, GPUDL_ERR_OOM, "dataset_create: no host memory for %lld samples", (long long)N); goto done; }
    GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (N * sample > 65536))
    for (i = 0; i < N * sample; i++)
        hx[i] = ((images->dtype == GPUDL_U8 ? ((const uint8_t *)images->data)[i] / 255.0f
                                             : gpudl__elem_get(images->data, (int)images->dtype, i)) - mean) / std;
    for (i = 0; i < N; i++) hy[i] = (int32_t)gpudl__label(labels, i);
    one[0] = N;
    s = gpudl_tensor_create(ctx, &ds->images, GPUDL_F32, 4, shape);
    if (s == GPUDL_OK) ctx->datasets++;   /* gpudl_dataset_free counts it back */
    if (s == GPUDL_OK) s = gpudl_tensor_upload(ctx, &ds->images, hx, sizeof(float) * (size_t)(N * sample));
    if (s == GPUDL_OK) s = gpudl_tensor_create(ctx, &ds->labels, GPUDL_I32, 1, one);
    if (s == GPUDL_OK) s = gpudl_tensor_upload(ctx, &ds->labels, hy, sizeof(int32_t) * (size_t)N);
    if (s == GPUDL_OK) s = gpudl_tensor_create(ctx, &ds->perm, GPUDL_I32, 1, one);
    shape[0] = batch < N ? batch : N;
    one[0] = shape[0];
    if (s == GPUDL_OK) s = gpudl_tensor_create(ctx, &ds->xb, GPUDL_F32, 4, shape);
    if (s == GPUDL_OK) s = gpudl_tensor_create(ctx, &ds->yb, GPUDL_I32, 1, one);
    ds->n = N;
    ds->batch = shape[0];
    ds->seed = ctx->rng_seed;
    if (s == GPUDL_OK) s = gpudl_dataset_shuffle(ctx, ds, 0, 0);
done:
    GPUDL_FREE(hx);
    GPUDL_FREE(hy);
    if (s != GPUDL_OK) gpudl_dataset_free(ctx, ds);
    return s;
}

GPUDL__DEF gpudl_status gpudl_dataset_shuffle(gpudl_ctx *ctx, gpudl_dataset *ds, int shuffle, uint64_t epoch) {
    int32_t *p;
    int64_t i;
    gpudl_status s;
    GPUDL__ENTER(ctx);
    if (!ds || !ds->perm.data) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dataset_shuffle: the dataset is not created");
    p = (int32_t *)GPUDL_MALLOC(sizeof(int32_t) * (size_t)ds->n);
    if (!p) return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "dataset_shuffle: no host memory");
    for (i = 0; i < ds->n; i++) p[i] = (int32_t)i;
    if (shuffle) {   /* Fisher-Yates from the counter RNG: (seed, epoch) fixes the order */
        uint64_t key = gpudl__mix64(ds->seed ^ gpudl__mix64(epoch + 0x5eed));
        for (i = ds->n - 1; i > 0; i--) {
            int64_t j = (int64_t)(gpudl_rng_bits(key, (uint64_t)i) % (uint64_t)(i + 1));
            int32_t t = p[i]; p[i] = p[j]; p[j] = t;
        }
    }
    s = gpudl_tensor_upload(ctx, &ds->perm, p, sizeof(int32_t) * (size_t)ds->n);   /* once per epoch */
    GPUDL_FREE(p);
    return s;
}

/* The batches' dtype when gpudl_dataset_set_dtype was not called: the
   activations' dtype if every model of the context has the same 16-bit
   ones, else F32. */
static gpudl_dtype gpudl__batch_dtype(gpudl_ctx *ctx) {
    gpudl_model *m;
    gpudl_dtype d = GPUDL_F32;
    for (m = ctx->models; m; m = m->next) {
        gpudl_dtype a = m->precision == GPUDL_PRECISION_FP16 ? GPUDL_F16 : m->precision == GPUDL_PRECISION_BF16 ? GPUDL_BF16
                                                                                                                : GPUDL_F32;
        if (a == GPUDL_F32 || (m != ctx->models && a != d)) return GPUDL_F32;
        d = a;
    }
    return d;
}

/* A new batch buffer of dtype (allocated first: on failure the old one stays). */
static gpudl_status gpudl__dataset_retype(gpudl_ctx *ctx, gpudl_dataset *ds, gpudl_dtype dtype) {
    gpudl_tensor nb;
    if (ds->xb.dtype == dtype) return GPUDL_OK;
    GPUDL__TRY(gpudl_tensor_create(ctx, &nb, dtype, ds->xb.ndim, ds->xb.shape));
    gpudl_tensor_free(ctx, &ds->xb);
    ds->xb = nb;
    return GPUDL_OK;
}

GPUDL__DEF int64_t gpudl_dataset_num_batches(const gpudl_dataset *ds) {
    if (ds && ds->batch && ds->shard_size > 1) return ds->n / ds->batch;   /* sharded: whole batches only, equal shares */
    return ds && ds->batch ? (ds->n + ds->batch - 1) / ds->batch : 0;
}

GPUDL__DEF gpudl_status gpudl_dataset_batch(gpudl_ctx *ctx, gpudl_dataset *ds, int64_t b, gpudl_tensor *x, gpudl_tensor *y) {
    int64_t start, count, sample, i;
    GPUDL__ENTER(ctx);
    if (!ds || !ds->xb.data || !x || !y) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dataset_batch: NULL or uncreated dataset");
    if (b < 0 || b >= gpudl_dataset_num_batches(ds))
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dataset_batch: batch %lld outside [0, %lld)", (long long)b,
                          (long long)gpudl_dataset_num_batches(ds));
    start = b * ds->batch;
    count = GPUDL__MIN(ds->batch, ds->n - start);
    if (ds->shard_size > 1) {   /* this rank's rows of the global batch */
        count = ds->batch / ds->shard_size;
        start += (int64_t)ds->shard_rank * count;
    }
    sample = gpudl_tensor_numel(&ds->images) / ds->n;
    if (!ds->dtype_set) {   /* the dtype the context's models take (gpudl_dataset_set_dtype) */
        gpudl_dtype want = gpudl__batch_dtype(ctx);
        if (want != ds->xb.dtype) GPUDL__TRY(gpudl__dataset_retype(ctx, ds, want));
    }
#ifndef GPUDL_NO_CUDA
    if (GPUDL__ON_GPU(&ds->images)) {
        GPUDL__LAUNCH(ctx, gpudl_k_gather(ctx->stream, ds->xb.data, (int)ds->xb.dtype, (int32_t *)ds->yb.data,
                                          (const float *)ds->images.data, (const int32_t *)ds->labels.data,
                                          (const int32_t *)ds->perm.data, start, count, sample));
    } else
#endif
    {
        size_t es = gpudl_dtype_size(ds->xb.dtype);
        GPUDL__OMP(omp parallel for num_threads(gpudl__team()) if (count * sample > 65536))
        for (i = 0; i < count; i++) {
            int64_t k = ((const int32_t *)ds->perm.data)[start + i];
            const float *src = (const float *)ds->images.data + k * sample;
            char *dst = (char *)ds->xb.data + (size_t)(i * sample) * es;
            if (ds->xb.dtype == GPUDL_F32) memcpy(dst, src, sizeof(float) * (size_t)sample);
            else gpudl__convert(dst, ds->xb.dtype, src, GPUDL_F32, sample);   /* gpudl_tensor_cast's rounding */
            ((int32_t *)ds->yb.data)[i] = ((const int32_t *)ds->labels.data)[k];
        }
    }
    *x = gpudl__view(&ds->xb, 0, count, 3, ds->images.shape + 1);
    *y = gpudl__view(&ds->yb, 0, count, 0, NULL);
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_dataset_set_dtype(gpudl_ctx *ctx, gpudl_dataset *ds, gpudl_dtype dtype) {
    GPUDL__ENTER(ctx);
    if (!ds || !ds->xb.data) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dataset_set_dtype: NULL or uncreated dataset");
    if (dtype != GPUDL_F32 && dtype != GPUDL_F16 && dtype != GPUDL_BF16)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dataset_set_dtype: %s batches; need f32, f16 or bf16",
                          gpudl_dtype_name(dtype));
    GPUDL__TRY(gpudl__dataset_retype(ctx, ds, dtype));
    ds->dtype_set = 1;
    return GPUDL_OK;
}

/* >>io -------------------------------------------------------------------- */
/* safetensors: 8-byte little-endian header length, a JSON header
   {"__metadata__": {string: string}, name: {"dtype", "shape", "data_offsets"}},
   then the tensors' bytes. */

#define GPUDL__CKPT_MAX_DIMS 8
#define GPUDL__CKPT_MAX_HEADER (64u << 20)

typedef struct gpudl__ck_entry {
    char name[128], dtype[8];
    int ndim;
    int64_t shape[GPUDL__CKPT_MAX_DIMS];
    uint64_t begin, end;
} gpudl__ck_entry;

typedef struct gpudl__ck_meta { char key[64], value[64]; } gpudl__ck_meta;

/* What the model has to save or load: name, where it lives, and its shape. */
typedef struct gpudl__ck_item {
    char name[128];
    const gpudl_tensor *flat;   /* m->params, m->buffers, m->opt_m or m->opt_v */
    int64_t off;
    int ndim;
    int64_t shape[4];
} gpudl__ck_item;

static int gpudl__ck_items(const gpudl_model *m, gpudl__ck_item *items, int max) {
    int i, n = 0, k;
    for (i = 0; i < m->nlayers; i++) {
        const gpudl__layer *l = &m->layers[i];
        for (k = 0; k < l->np + l->nbuf && n < max; k++, n++) {   /* "i.<name>": the parameters, then the buffers */
            int buf = k >= l->np, j = buf ? k - l->np : k;
            const gpudl__shape *sh = buf ? &l->bufshape[j] : &l->pshape[j];
            gpudl__ck_item *it = &items[n];
            if (l->name[0]) snprintf(it->name, sizeof it->name, "%s.%s", l->name, buf ? l->kind->bufs[j] : gpudl__pname(l, j));
            else snprintf(it->name, sizeof it->name, "%d.%s", i, buf ? l->kind->bufs[j] : gpudl__pname(l, j));
            it->flat = buf ? &m->buffers : &m->params;
            it->off = buf ? l->bufoff[j] : l->poff[j];
            it->ndim = sh->ndim;
            memcpy(it->shape, sh->d, sizeof it->shape);
        }
    }
    /* optimizer state: the flat buffers as they are */
    for (k = 0; k < 2 && n < max; k++) {
        const gpudl_tensor *t = k == 0 ? &m->opt_m : &m->opt_v;
        if (!t->data) continue;
        snprintf(items[n].name, sizeof items[n].name, "optimizer.%s", k == 0 ? "m" : "v");
        items[n].flat = t;
        items[n].off = 0;
        items[n].ndim = 1;
        items[n].shape[0] = m->nparams;
        n++;
    }
    return n;
}

/* ---- a strict JSON reader for the header ---- */
typedef struct gpudl__js { const char *p, *end; const char *err; } gpudl__js;

static void gpudl__js_ws(gpudl__js *j) { while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++; }
static int gpudl__js_eat(gpudl__js *j, char c) {
    gpudl__js_ws(j);
    if (j->p < j->end && *j->p == c) { j->p++; return 1; }
    if (!j->err) j->err = c == '"' ? "expected a string" : c == ':' ? "expected ':'" : c == '{' ? "expected '{'" : c == '[' ? "expected '['" : "unexpected character";
    return 0;
}
static int gpudl__js_peek(gpudl__js *j, char c) { gpudl__js_ws(j); return j->p < j->end && *j->p == c; }

static int gpudl__js_str(gpudl__js *j, char *out, size_t cap) {
    size_t n = 0;
    if (!gpudl__js_eat(j, '"')) return 0;
    while (j->p < j->end && *j->p != '"') {
        char c = *j->p++;
        if ((unsigned char)c < 0x20) { j->err = "control character in a string"; return 0; }
        if (c == '\\') {
            if (j->p >= j->end) break;
            c = *j->p++;
            switch (c) {
            case '"': case '\\': case '/': break;
            case 'b': c = '\b'; break; case 'f': c = '\f'; break; case 'n': c = '\n'; break;
            case 'r': c = '\r'; break; case 't': c = '\t'; break;
            default: j->err = "unsupported escape in a string"; return 0;
            }
        }
        if (n + 1 >= cap) { j->err = "string too long"; return 0; }
        out[n++] = c;
    }
    if (j->p >= j->end) { j->err = "unterminated string"; return 0; }
    j->p++;
    out[n] = 0;
    return 1;
}

static int gpudl__js_uint(gpudl__js *j, uint64_t *v) {
    uint64_t x = 0;
    int digits = 0;
    gpudl__js_ws(j);
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        unsigned d = (unsigned)(*j->p++ - '0');
        if (x > (UINT64_MAX - d) / 10) { j->err = "integer overflows"; return 0; }
        x = x * 10 + d;
        digits++;
    }
    if (!digits) { j->err = "expected a non-negative integer"; return 0; }
    *v = x;
    return 1;
}

/* [u, u, ...] into v (at most max) */
static int gpudl__js_uarr(gpudl__js *j, uint64_t *v, int max, int *n) {
    *n = 0;
    if (!gpudl__js_eat(j, '[')) return 0;
    if (gpudl__js_peek(j, ']')) { j->p++; return 1; }
    for (;;) {
        if (*n >= max) { j->err = "array too long"; return 0; }
        if (!gpudl__js_uint(j, &v[(*n)++])) return 0;
        if (gpudl__js_peek(j, ',')) { j->p++; continue; }
        return gpudl__js_eat(j, ']');
    }
}

/* Parses the header into entries and metadata. Returns an error message or NULL. */
static const char *gpudl__ck_parse(const char *text, size_t len, gpudl__ck_entry *e, int max_e, int *ne,
                                   gpudl__ck_meta *meta, int max_m, int *nm) {
    gpudl__js j;
    j.p = text; j.end = text + len; j.err = NULL;
    *ne = *nm = 0;
    if (!gpudl__js_eat(&j, '{')) return j.err;
    if (gpudl__js_peek(&j, '}')) j.p++;
    else for (;;) {
        char key[128];
        if (!gpudl__js_str(&j, key, sizeof key) || !gpudl__js_eat(&j, ':') || !gpudl__js_eat(&j, '{')) return j.err;
        if (!strcmp(key, "__metadata__")) {
            if (gpudl__js_peek(&j, '}')) j.p++;
            else for (;;) {
                if (*nm >= max_m) return "too many metadata entries";
                if (!gpudl__js_str(&j, meta[*nm].key, sizeof meta[*nm].key) || !gpudl__js_eat(&j, ':') ||
                    !gpudl__js_str(&j, meta[*nm].value, sizeof meta[*nm].value)) return j.err;
                (*nm)++;
                if (gpudl__js_peek(&j, ',')) { j.p++; continue; }
                if (!gpudl__js_eat(&j, '}')) return j.err;
                break;
            }
        } else {
            gpudl__ck_entry *t;
            int have = 0, i;
            if (*ne >= max_e) return "too many tensors";
            for (i = 0; i < *ne; i++) if (!strcmp(e[i].name, key)) return "a tensor name appears twice";
            t = &e[(*ne)++];
            memset(t, 0, sizeof *t);
            snprintf(t->name, sizeof t->name, "%s", key);
            for (;;) {
                char field[32];
                if (!gpudl__js_str(&j, field, sizeof field) || !gpudl__js_eat(&j, ':')) return j.err;
                if (!strcmp(field, "dtype") && !(have & 1)) {
                    if (!gpudl__js_str(&j, t->dtype, sizeof t->dtype)) return j.err;
                    have |= 1;
                } else if (!strcmp(field, "shape") && !(have & 2)) {
                    uint64_t v[GPUDL__CKPT_MAX_DIMS];
                    if (!gpudl__js_uarr(&j, v, GPUDL__CKPT_MAX_DIMS, &t->ndim)) return j.err;
                    for (i = 0; i < t->ndim; i++) {
                        if (v[i] > (uint64_t)INT64_MAX / 8) return "a dimension is too large";
                        t->shape[i] = (int64_t)v[i];
                    }
                    have |= 2;
                } else if (!strcmp(field, "data_offsets") && !(have & 4)) {
                    uint64_t v[2];
                    int n2;
                    if (!gpudl__js_uarr(&j, v, 2, &n2)) return j.err;
                    if (n2 != 2) return "data_offsets needs two numbers";
                    t->begin = v[0]; t->end = v[1];
                    have |= 4;
                } else {
                    return "unknown or repeated field in a tensor entry";
                }
                if (gpudl__js_peek(&j, ',')) { j.p++; continue; }
                if (!gpudl__js_eat(&j, '}')) return j.err;
                break;
            }
            if (have != 7) return "a tensor entry lacks dtype, shape or data_offsets";
        }
        if (gpudl__js_peek(&j, ',')) { j.p++; continue; }
        if (!gpudl__js_eat(&j, '}')) return j.err;
        break;
    }
    gpudl__js_ws(&j);
    if (j.p != j.end) return "bytes after the header's closing brace";
    return NULL;
}

static const char *gpudl__ck_meta_get(const gpudl__ck_meta *m, int n, const char *key) {
    int i;
    for (i = 0; i < n; i++) if (!strcmp(m[i].key, key)) return m[i].value;
    return NULL;
}

static int gpudl__parse_u64(const char *s, uint64_t *v) {
    gpudl__js j;
    if (!s) return 0;
    j.p = s; j.end = s + strlen(s); j.err = NULL;
    return gpudl__js_uint(&j, v) && j.p == j.end;
}

static const char *gpudl__optim_name(const gpudl_model *m) {
    if (!m->has_opt) return "none";
    return m->opt.kind == GPUDL_OPTIM_SGD ? "sgd" : m->opt.kind == GPUDL_OPTIM_ADAM ? "adam" : "adamw";
}

/* Host copies of the model's flat buffers (one download each). */
typedef struct gpudl__ck_host { float *flat[4]; } gpudl__ck_host;

static const gpudl_tensor *gpudl__ck_flat(const gpudl_model *m, int k) {
    return k == 0 ? &m->params : k == 1 ? &m->buffers : k == 2 ? &m->opt_m : &m->opt_v;
}

static void gpudl__ck_host_free(gpudl__ck_host *h) {
    int k;
    for (k = 0; k < 4; k++) { GPUDL_FREE(h->flat[k]); h->flat[k] = NULL; }   /* safe to call twice */
}

static gpudl_status gpudl__ck_host_alloc(gpudl_ctx *ctx, const gpudl_model *m, gpudl__ck_host *h, int download) {
    int k;
    memset(h, 0, sizeof *h);
    for (k = 0; k < 4; k++) {
        const gpudl_tensor *t = gpudl__ck_flat(m, k);
        if (!t->data) continue;
        h->flat[k] = (float *)GPUDL_MALLOC(gpudl_tensor_bytes(t));
        if (!h->flat[k]) { gpudl__ck_host_free(h); return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "checkpoint: no host staging memory"); }
        if (download) {
            gpudl_status s = gpudl_tensor_download(ctx, t, h->flat[k], gpudl_tensor_bytes(t));
            if (s != GPUDL_OK) { gpudl__ck_host_free(h); return s; }
        } else {
            memset(h->flat[k], 0, gpudl_tensor_bytes(t));
        }
    }
    return GPUDL_OK;
}

static float *gpudl__ck_item_host(const gpudl_model *m, const gpudl__ck_host *h, const gpudl__ck_item *it) {
    int k;
    for (k = 0; k < 4; k++) if (it->flat == gpudl__ck_flat(m, k)) return h->flat[k] + it->off;
    return NULL;
}

#define GPUDL__CK_MAX_ITEMS 512

/* A model used with a context that did not create it: refused, both named. */
static gpudl_status gpudl__same_ctx(gpudl_ctx *ctx, const gpudl_model *m, const char *what) {
    if (m->ctx == ctx) return GPUDL_OK;
    return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "%s: the model belongs to context %p, not to this one (%p): pass the "
                      "model's own context", what, (const void *)m->ctx, (const void *)ctx);
}

static gpudl_status gpudl__model_save_to(gpudl_ctx *ctx, gpudl_model *m, const char *path, void **mem, size_t *mem_size);
GPUDL__DEF gpudl_status gpudl_model_save(gpudl_ctx *ctx, gpudl_model *m, const char *path) {
    return gpudl__model_save_to(ctx, m, path, NULL, NULL);
}
GPUDL__DEF gpudl_status gpudl_model_save_memory(gpudl_ctx *ctx, gpudl_model *m, void **data, size_t *size) {
    if (data) *data = NULL;
    if (size) *size = 0;
    GPUDL__ENTER(ctx);
    if (!data || !size) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_save_memory: data or size is NULL");
    return gpudl__model_save_to(ctx, m, NULL, data, size);
}
GPUDL__DEF void gpudl_memory_free(void *data) { GPUDL_FREE(data); }

/* path: the file, replaced atomically; or, with mem, the bytes into memory. */
static gpudl_status gpudl__model_save_to(gpudl_ctx *ctx, gpudl_model *m, const char *path, void **mem, size_t *mem_size) {
    gpudl__ck_item *items = NULL;
    gpudl__ck_host h;
    gpudl_scaler_state sst;
    char *hdr = NULL, *tmp = NULL;
    size_t cap = 4096, len = 0, pad;
    uint64_t off = 0, hlen;
    unsigned char len8[8];
    int n, i, k;
    FILE *f = NULL;
    gpudl_status s = GPUDL_OK;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_built(m, "model_save"));
    GPUDL__TRY(gpudl__same_ctx(ctx, m, "model_save"));
    if (!mem && (!path || !path[0])) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_save: path is NULL or empty");
    if (!mem && gpudl_dist_rank(m->dist) != 0) return GPUDL_OK;   /* data parallel: rank 0 writes for all (the replicas agree) */
    items = (gpudl__ck_item *)GPUDL_MALLOC(sizeof *items * GPUDL__CK_MAX_ITEMS);
    tmp = (char *)GPUDL_MALLOC(mem ? 32 : strlen(path) + 32);
    if (!items || !tmp) { GPUDL_FREE(items); GPUDL_FREE(tmp); return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "model_save: no host memory"); }
    n = gpudl__ck_items(m, items, GPUDL__CK_MAX_ITEMS);
    s = gpudl__ck_host_alloc(ctx, m, &h, 1);
    if (s != GPUDL_OK) { GPUDL_FREE(items); GPUDL_FREE(tmp); return s; }
    memset(&sst, 0, sizeof sst);
    if (m->scaler.data && m->precision != GPUDL_PRECISION_FP32 && (s = gpudl_model_scaler_state(m, &sst)) != GPUDL_OK) { gpudl__ck_host_free(&h); GPUDL_FREE(items); GPUDL_FREE(tmp); return s; }
    /* the header */
    for (;;) {
        int w;
        hdr = (char *)GPUDL_MALLOC(cap);
        if (!hdr) { s = GPUDL__ERR(ctx, GPUDL_ERR_OOM, "model_save: no host memory for the header"); goto done; }
        off = 0;
        w = snprintf(hdr, cap, "{\"__metadata__\":{\"format\":\"gpudl\",\"gpudl_version\":\"%s\",\"step\":\"%lld\","
                     "\"optimizer\":\"%s\",\"model_seed\":\"%llu\",\"model_rng_offset\":\"%llu\",\"ctx_seed\":\"%llu\","
                     "\"ctx_rng_offset\":\"%llu\",\"precision\":\"%d\",\"scaler_scale_bits\":\"%lu\","
                     "\"scaler_growth_count\":\"%d\"}", GPUDL_VERSION_STRING, (long long)m->step, gpudl__optim_name(m),
                     (unsigned long long)m->seed, (unsigned long long)m->rng_offset, (unsigned long long)ctx->rng_seed,
                     (unsigned long long)ctx->rng_offset, (int)m->precision, (unsigned long)gpudl__f32_bits(sst.scale),
                     (int)sst.growth_count);
        len = (size_t)w;
        for (i = 0; i < n && len < cap; i++) {
            uint64_t bytes = (uint64_t)gpudl__prod(items[i].ndim, items[i].shape) * 4u;
            len += (size_t)snprintf(hdr + len, cap - len, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[", items[i].name);
            for (k = 0; k < items[i].ndim && len < cap; k++)
                len += (size_t)snprintf(hdr + len, cap - len, "%s%lld", k ? "," : "", (long long)items[i].shape[k]);
            if (len < cap)
                len += (size_t)snprintf(hdr + len, cap - len, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                                        (unsigned long long)(off + bytes));
            off += bytes;
        }
        if (len + 2 + 8 < cap) break;
        GPUDL_FREE(hdr);
        hdr = NULL;
        cap *= 4;
    }
    hdr[len++] = '}';
    pad = (8 - (8 + len) % 8) % 8;   /* the data starts 8-byte aligned */
    while (pad--) hdr[len++] = ' ';
    hlen = len;
    for (k = 0; k < 8; k++) len8[k] = (unsigned char)(hlen >> (8 * k));
    if (mem) {   /* the same bytes, into memory */
        size_t total = 8 + len;
        unsigned char *out;
        for (i = 0; i < n; i++) total += (size_t)gpudl__prod(items[i].ndim, items[i].shape) * 4u;
        if (!(out = (unsigned char *)GPUDL_MALLOC(total ? total : 1))) {
            s = GPUDL__ERR(ctx, GPUDL_ERR_OOM, "model_save_memory: no host memory for %zu bytes", total);
            goto done;
        }
        memcpy(out, len8, 8);
        memcpy(out + 8, hdr, len);
        total = 8 + len;
        for (i = 0; i < n; i++) {
            size_t bytes = (size_t)gpudl__prod(items[i].ndim, items[i].shape) * 4u;
            memcpy(out + total, gpudl__ck_item_host(m, &h, &items[i]), bytes);
            total += bytes;
        }
        *mem = out;
        *mem_size = total;
        goto done;
    }
    /* write a temporary file (named for this process), flush it to disk,
       then rename it over the target in one step */
    snprintf(tmp, strlen(path) + 32, "%s.tmp%ld", path, (long)
#if defined(_WIN32)
             GetCurrentProcessId()
#else
             getpid()
#endif
    );
    f = fopen(tmp, "wb");
    if (!f) { s = GPUDL__ERR(ctx, GPUDL_ERR_IO, "model_save: cannot create '%s': %s", tmp, strerror(errno)); goto done; }
    if (fwrite(len8, 1, 8, f) != 8 || fwrite(hdr, 1, len, f) != len) goto write_error;
    for (i = 0; i < n; i++) {
        size_t bytes = (size_t)gpudl__prod(items[i].ndim, items[i].shape) * 4u;
        if (fwrite(gpudl__ck_item_host(m, &h, &items[i]), 1, bytes, f) != bytes) goto write_error;
    }
    if (fflush(f) != 0) goto write_error;
#if defined(_WIN32)
    if (!FlushFileBuffers((HANDLE)_get_osfhandle(_fileno(f)))) { errno = EIO; goto write_error; }
#else
    if (fsync(fileno(f)) != 0) goto write_error;
#endif
    if (fclose(f) != 0) { f = NULL; goto write_error; }
    f = NULL;
#if defined(_WIN32)
    /* the C runtime's rename() does not replace an existing file there */
    if (!MoveFileExA(tmp, path, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
        char why[256];
        DWORD e = GetLastError();
        if (!FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e, 0, why, sizeof why, NULL))
            snprintf(why, sizeof why, "Windows error %lu", (unsigned long)e);
        why[strcspn(why, "\r\n")] = 0;
        s = GPUDL__ERR(ctx, GPUDL_ERR_IO, "model_save: cannot replace '%s' with '%s': %s (the previous file is untouched)",
                       path, tmp, why);
        remove(tmp);
        goto done;
    }
#else
    if (rename(tmp, path) != 0) {
        s = GPUDL__ERR(ctx, GPUDL_ERR_IO, "model_save: cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        remove(tmp);
        goto done;
    }
#endif
#if !defined(_WIN32)
    {   /* make the rename itself durable: fsync the directory (best effort) */
        char dir[4096], *slash;
        if (strlen(path) < sizeof dir) {
            int fd;
            strcpy(dir, path);
            slash = strrchr(dir, '/');
            if (slash) { if (slash == dir) slash[1] = 0; else *slash = 0; } else strcpy(dir, ".");
            fd = open(dir, O_RDONLY);
            if (fd >= 0) { (void)fsync(fd); close(fd); }
        }
    }
#endif
    goto done;
write_error:
    s = GPUDL__ERR(ctx, GPUDL_ERR_IO, "model_save: writing '%s' failed: %s (the previous '%s' is untouched)", tmp,
                   strerror(errno), path);
    if (f) fclose(f);
    remove(tmp);
done:
    gpudl__ck_host_free(&h);
    GPUDL_FREE(hdr);
    GPUDL_FREE(items);
    GPUDL_FREE(tmp);
    return s;
}

static int gpudl__cmp_entry(const void *a, const void *b) {
    const gpudl__ck_entry *x = (const gpudl__ck_entry *)a, *y = (const gpudl__ck_entry *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end < y->end ? -1 : x->end > y->end);
}

GPUDL__DEF gpudl_status gpudl_model_load(gpudl_ctx *ctx, gpudl_model *m, const char *path) {
    unsigned char *buf = NULL;
    size_t size = 0;
    gpudl_status s;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_built(m, "model_load"));
    GPUDL__TRY(gpudl__same_ctx(ctx, m, "model_load"));
    if (!path) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_load: path is NULL");
    GPUDL__TRY(gpudl__read_file(ctx, path, "model_load", &buf, &size));
    s = gpudl_model_load_memory(ctx, m, path, buf, size);
    GPUDL_FREE(buf);
    return s;
}

GPUDL__DEF gpudl_status gpudl_model_load_memory(gpudl_ctx *ctx, gpudl_model *m, const char *path, const void *data, size_t size) {
    const unsigned char *buf = (const unsigned char *)data;
    uint64_t hlen = 0, data_size, step = 0, mseed = 0, moff = 0, cseed = 0, coff = 0, sbits = 0, sgrowth = 0;
    int have_scaler = 0;
    gpudl__ck_entry *e = NULL, *sorted = NULL;
    gpudl__ck_meta meta[32];
    gpudl__ck_item *items = NULL;
    gpudl__ck_host h;
    int ne = 0, nm = 0, n, i, k, found;
    const char *why, *v;
    gpudl_status s = GPUDL_OK;
    GPUDL__ENTER(ctx);
    GPUDL__TRY(gpudl__check_built(m, "model_load"));
    GPUDL__TRY(gpudl__same_ctx(ctx, m, "model_load"));
    if (!path) path = "(memory)";
    if (!data && size) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "model_load: '%s': data is NULL", path);
    memset(&h, 0, sizeof h);
#define GPUDL__CK_FAIL(...) do { s = GPUDL__ERR(ctx, GPUDL_ERR_FORMAT, __VA_ARGS__); goto done; } while (0)
    e = (gpudl__ck_entry *)GPUDL_MALLOC(sizeof *e * GPUDL__CK_MAX_ITEMS);
    sorted = (gpudl__ck_entry *)GPUDL_MALLOC(sizeof *e * GPUDL__CK_MAX_ITEMS);
    items = (gpudl__ck_item *)GPUDL_MALLOC(sizeof *items * GPUDL__CK_MAX_ITEMS);
    if (!e || !sorted || !items) { s = GPUDL__ERR(ctx, GPUDL_ERR_OOM, "model_load: no host memory"); goto done; }
    if (size < 8) GPUDL__CK_FAIL("model_load: '%s' is %zu bytes, too short for a safetensors header length", path, size);
    for (k = 0; k < 8; k++) hlen |= (uint64_t)buf[k] << (8 * k);
    if ((hlen < 2 || hlen > GPUDL__CKPT_MAX_HEADER || hlen > size - 8) && (size < 9 || buf[8] != '{'))
        GPUDL__CK_FAIL("model_load: '%s' is not a safetensors file (it does not start with a header length and a JSON "
                       "header; gpudl_model_save writes them)", path);
    if (hlen > size - 8) GPUDL__CK_FAIL("model_load: '%s': header length %llu exceeds the file (%zu bytes)", path,
                                        (unsigned long long)hlen, size);
    if (hlen < 2 || hlen > GPUDL__CKPT_MAX_HEADER) GPUDL__CK_FAIL("model_load: '%s': implausible header length %llu", path, (unsigned long long)hlen);
    data_size = size - 8 - hlen;
    why = gpudl__ck_parse((const char *)buf + 8, (size_t)hlen, e, GPUDL__CK_MAX_ITEMS, &ne, meta, 32, &nm);
    if (why) GPUDL__CK_FAIL("model_load: '%s': malformed JSON header: %s", path, why);
    /* offsets: in bounds, sizes match shapes, contiguous from 0 to the end, no overlap */
    for (i = 0; i < ne; i++) {
        uint64_t esz = !strcmp(e[i].dtype, "F32") || !strcmp(e[i].dtype, "I32") ? 4 : !strcmp(e[i].dtype, "F16") ||
                       !strcmp(e[i].dtype, "BF16") ? 2 : !strcmp(e[i].dtype, "U8") ? 1 : !strcmp(e[i].dtype, "F64") ||
                       !strcmp(e[i].dtype, "I64") ? 8 : 0;
        uint64_t numel = 1;
        if (!esz) GPUDL__CK_FAIL("model_load: '%s': tensor '%s' has unknown dtype '%s'", path, e[i].name, e[i].dtype);
        if (e[i].end < e[i].begin || e[i].end > data_size)
            GPUDL__CK_FAIL("model_load: '%s': tensor '%s' has data_offsets [%llu, %llu] outside the %llu data bytes", path,
                           e[i].name, (unsigned long long)e[i].begin, (unsigned long long)e[i].end, (unsigned long long)data_size);
        for (k = 0; k < e[i].ndim; k++) {
            if (e[i].shape[k] != 0 && numel > UINT64_MAX / 8 / (uint64_t)e[i].shape[k])
                GPUDL__CK_FAIL("model_load: '%s': tensor '%s': shape overflows", path, e[i].name);
            numel *= (uint64_t)e[i].shape[k];
        }
        if (e[i].end - e[i].begin != numel * esz)
            GPUDL__CK_FAIL("model_load: '%s': tensor '%s' has %llu bytes but its shape and dtype need %llu", path, e[i].name,
                           (unsigned long long)(e[i].end - e[i].begin), (unsigned long long)(numel * esz));
    }
    memcpy(sorted, e, sizeof *e * (size_t)ne);
    qsort(sorted, (size_t)ne, sizeof *sorted, gpudl__cmp_entry);
    for (i = 0, k = 0; i < ne; i++) {
        uint64_t expect = i ? sorted[i - 1].end : 0;
        if (sorted[i].begin != expect)
            GPUDL__CK_FAIL("model_load: '%s': tensor '%s' starts at byte %llu, expected %llu (%s)", path, sorted[i].name,
                           (unsigned long long)sorted[i].begin, (unsigned long long)expect,
                           sorted[i].begin < expect ? "overlaps the previous tensor" : "a gap before it");
    }
    if ((ne ? sorted[ne - 1].end : 0) != data_size)
        GPUDL__CK_FAIL("model_load: '%s': the tensors cover %llu bytes but %llu data bytes follow the header", path,
                       (unsigned long long)(ne ? sorted[ne - 1].end : 0), (unsigned long long)data_size);
    /* the model's side: names, shapes, dtypes */
    v = gpudl__ck_meta_get(meta, nm, "format");
    if (!v || strcmp(v, "gpudl")) GPUDL__CK_FAIL("model_load: '%s' was not written by gpudl_model_save (no \"format\": \"gpudl\")", path);
    if (!gpudl__parse_u64(gpudl__ck_meta_get(meta, nm, "step"), &step) ||
        !gpudl__parse_u64(gpudl__ck_meta_get(meta, nm, "model_seed"), &mseed) ||
        !gpudl__parse_u64(gpudl__ck_meta_get(meta, nm, "model_rng_offset"), &moff) ||
        !gpudl__parse_u64(gpudl__ck_meta_get(meta, nm, "ctx_seed"), &cseed) ||
        !gpudl__parse_u64(gpudl__ck_meta_get(meta, nm, "ctx_rng_offset"), &coff))
        GPUDL__CK_FAIL("model_load: '%s': metadata step / seeds / offsets missing or not integers", path);
    {   /* the loss scaler's state (files from before mixed precision have none) */
        const char *sb = gpudl__ck_meta_get(meta, nm, "scaler_scale_bits"), *sg = gpudl__ck_meta_get(meta, nm, "scaler_growth_count");
        if ((sb && !gpudl__parse_u64(sb, &sbits)) || (sg && !gpudl__parse_u64(sg, &sgrowth)) || sbits > 0xffffffffu ||
            sgrowth > 0x7fffffff)
            GPUDL__CK_FAIL("model_load: '%s': scaler metadata are not integers in range", path);
        have_scaler = sb != NULL && sbits != 0;
        if (have_scaler && !(gpudl__bits_f32((uint32_t)sbits) > 0.0f && gpudl__bits_f32((uint32_t)sbits) <= 3.0e38f))
            GPUDL__CK_FAIL("model_load: '%s': the saved loss scale is not a positive finite number", path);
    }
    v = gpudl__ck_meta_get(meta, nm, "optimizer");
    if (!v || (m->has_opt && strcmp(v, gpudl__optim_name(m))))
        GPUDL__CK_FAIL("model_load: '%s' holds optimizer state '%s' but the model uses '%s'", path, v ? v : "(none)",
                       gpudl__optim_name(m));
    n = gpudl__ck_items(m, items, GPUDL__CK_MAX_ITEMS);
    s = gpudl__ck_host_alloc(ctx, m, &h, 0);
    if (s != GPUDL_OK) goto done;
    for (i = 0; i < n; i++) {
        char want[64], got[64];
        for (k = 0, found = -1; k < ne; k++) if (!strcmp(e[k].name, items[i].name)) found = k;
        if (found < 0) GPUDL__CK_FAIL("model_load: '%s' has no tensor '%s', which the model needs", path, items[i].name);
        if (strcmp(e[found].dtype, "F32")) GPUDL__CK_FAIL("model_load: '%s': tensor '%s' is %s, need F32", path, items[i].name, e[found].dtype);
        if (e[found].ndim != items[i].ndim || memcmp(e[found].shape, items[i].shape, sizeof(int64_t) * (size_t)items[i].ndim))
            GPUDL__CK_FAIL("model_load: '%s': tensor '%s' has shape %s but the model's is %s", path, items[i].name,
                           gpudl__shape_str(e[found].ndim, e[found].shape, got, sizeof got),
                           gpudl__shape_str(items[i].ndim, items[i].shape, want, sizeof want));
        memcpy(gpudl__ck_item_host(m, &h, &items[i]), buf + 8 + hlen + e[found].begin, (size_t)(e[found].end - e[found].begin));
    }
    for (k = 0; k < ne; k++) {
        for (i = 0, found = 0; i < n; i++) if (!strcmp(e[k].name, items[i].name)) found = 1;
        if (!found && strncmp(e[k].name, "optimizer.", 10))
            GPUDL__CK_FAIL("model_load: '%s' has a tensor '%s' that this model does not have (another architecture?)", path, e[k].name);
    }
#undef GPUDL__CK_FAIL
    /* everything checked: now, and only now, the model changes */
    for (k = 0; k < 4 && s == GPUDL_OK; k++) {
        gpudl_tensor *t = (gpudl_tensor *)gpudl__ck_flat(m, k);
        if (t->data) s = gpudl_tensor_upload(ctx, t, h.flat[k], gpudl_tensor_bytes(t));
    }
    if (s == GPUDL_OK && have_scaler && m->scaler.data && m->precision == GPUDL_PRECISION_FP16) {
        gpudl_scaler_state st;
        s = gpudl_model_scaler_state(m, &st);
        st.scale = gpudl__bits_f32((uint32_t)sbits);
        st.growth_count = (int32_t)sgrowth;
        if (s == GPUDL_OK) s = gpudl_tensor_upload(ctx, &m->scaler, &st, sizeof st);
        if (s == GPUDL_OK) *m->scaler_seen = st;
    }
    if (s == GPUDL_OK) s = gpudl__refresh_params16(m);
    if (s == GPUDL_OK) {
        m->step = (int64_t)step;
        m->seed = mseed;
        m->rng_offset = moff;
        ctx->rng_seed = cseed;
        ctx->rng_offset = coff;
    }
done:
    gpudl__ck_host_free(&h);
    GPUDL_FREE(e);
    GPUDL_FREE(sorted);
    GPUDL_FREE(items);
    return s;
}

/* >>gradcheck ------------------------------------------------------------- */
/* The loss of the current forward output, in float64. */
static double gpudl__loss64(gpudl_model *m, const gpudl_tensor *target) {
    gpudl_tensor out = gpudl__layer_output(m, m->nlayers - 1, 0);
    int64_t N = m->batch, K = gpudl_tensor_numel(&out) / N, r, k;
    if (m->desc.loss != GPUDL_LOSS_MSE && m->cur_ndim == 2) { N *= m->cur_shape[0]; K = m->cur_shape[1]; }   /* per position */
    const float *z = (const float *)out.data;
    double total = 0;
    if (m->desc.loss == GPUDL_LOSS_MSE) {
        for (r = 0; r < N * K; r++) { double d = (double)z[r] - ((const float *)target->data)[r]; total += d * d; }
        return total / (double)(N * K);
    }
    for (r = 0; r < N; r++) {
        double mx = z[r * K], s = 0;
        for (k = 1; k < K; k++) if (z[r * K + k] > mx) mx = z[r * K + k];
        for (k = 0; k < K; k++) s += exp((double)z[r * K + k] - mx);
        total += mx + log(s) - z[r * K + gpudl__label(target, r)];
    }
    return total / (double)N;
}

GPUDL__DEF gpudl_status gpudl_gradcheck(gpudl_model *m, const gpudl_tensor *x, const gpudl_tensor *target, double eps,
                                        double atol, double rtol, int64_t max_per_tensor, gpudl_gradcheck_result *res) {
    gpudl_ctx *ctx;
    gpudl_tensor xc;
    float *g_an = NULL, *dx_an = NULL, *bufs = NULL, *vals;
    uint64_t off0;
    int64_t i, j, nx;
    int li, part, ids;
    gpudl_status s = GPUDL_OK;
    GPUDL__TRY(gpudl__check_built(m, "gradcheck"));
    ctx = m->ctx;
    if (!res) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "gradcheck: res is NULL");
    memset(res, 0, sizeof *res);
    if (m->params.device != GPUDL_DEVICE_CPU)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "gradcheck: runs on the CPU; build the model on a CPU context");
    if (m->act_dtype != GPUDL_F32)
        return GPUDL__ERR(ctx, GPUDL_ERR_UNSUPPORTED, "gradcheck: checks FP32 math; 16-bit rounding would drown the "
                          "finite differences (gpudl_model_set_precision(m, GPUDL_PRECISION_FP32, NULL) first)");
    if (eps <= 0) eps = 1e-3;
    if (atol <= 0) atol = 1e-5;
    if (rtol <= 0) rtol = 1e-2;
    memset(&xc, 0, sizeof xc);
    ids = (m->layers[0].kind->flags & GPUDL__KIND_IDS) != 0;   /* token ids: no gradient, only the parameters are checked */
    if (!ids) GPUDL__TRY(gpudl__check_f32(ctx, x, "x"));
    GPUDL__TRY(gpudl_tensor_create_on(ctx, &xc, GPUDL_DEVICE_CPU, x->dtype, x->ndim, x->shape));
    GPUDL__TRY(gpudl_tensor_copy(ctx, &xc, x));
    nx = ids ? 0 : gpudl_tensor_numel(x);
    if (!m->dinput.data) {
        int64_t shape[4];
        shape[0] = m->desc.max_batch;
        memcpy(shape + 1, m->in_shape, sizeof m->in_shape);
        s = gpudl_tensor_create(ctx, &m->dinput, GPUDL_F32, 1 + m->in_ndim, shape);
    }
    g_an = (float *)GPUDL_MALLOC(sizeof(float) * (size_t)m->nparams);
    dx_an = (float *)GPUDL_MALLOC(sizeof(float) * (size_t)(nx + 1));
    bufs = (float *)GPUDL_MALLOC(sizeof(float) * (size_t)(m->nbuffers + 1));
    if (s == GPUDL_OK && (!g_an || !dx_an || !bufs)) s = GPUDL__ERR(ctx, GPUDL_ERR_OOM, "gradcheck: no host memory");
    if (s != GPUDL_OK) goto done;
    if (m->nbuffers) memcpy(bufs, m->buffers.data, sizeof(float) * (size_t)m->nbuffers);
    off0 = m->rng_offset;   /* every forward below draws the same dropout masks */
    m->want_dinput = 1;
    s = gpudl_model_zero_grad(m);
    if (s == GPUDL_OK) s = gpudl_model_forward(m, &xc, NULL);
    if (s == GPUDL_OK) s = gpudl_model_loss(m, target);
    if (s == GPUDL_OK) s = gpudl_model_backward(m);
    if (s != GPUDL_OK) goto done;
    memcpy(g_an, m->grads.data, sizeof(float) * (size_t)m->nparams);
    memcpy(dx_an, m->dinput.data, sizeof(float) * (size_t)nx);
    /* central differences: each parameter tensor, then the input */
    for (li = 0; li <= m->nlayers && s == GPUDL_OK; li++) {
        for (part = 0; part < GPUDL__MAX_PARAMS && s == GPUDL_OK; part++) {
            int64_t base, cnt, stride;
            const float *an;
            if (li < m->nlayers) {
                gpudl__layer *l = &m->layers[li];
                if (part >= l->np) continue;
                base = l->poff[part];
                cnt = gpudl__prod(l->pshape[part].ndim, l->pshape[part].d);
                vals = (float *)m->params.data + base;
                an = g_an + base;
            } else {
                if (part) continue;
                cnt = nx;
                vals = (float *)xc.data;
                an = dx_an;
            }
            stride = (max_per_tensor > 0 && cnt > max_per_tensor) ? (cnt + max_per_tensor - 1) / max_per_tensor : 1;
            for (j = 0; j < cnt && s == GPUDL_OK; j += stride) {
                float orig = vals[j], up = (float)(orig + eps), dn = (float)(orig - eps);
                double lp, lm, num, err, rel;
                m->rng_offset = off0;
                vals[j] = up;
                s = gpudl_model_forward(m, &xc, NULL);
                lp = gpudl__loss64(m, target);
                m->rng_offset = off0;
                vals[j] = dn;
                if (s == GPUDL_OK) s = gpudl_model_forward(m, &xc, NULL);
                lm = gpudl__loss64(m, target);
                vals[j] = orig;
                num = (lp - lm) / ((double)up - (double)dn);
                err = fabs((double)an[j] - num);
                rel = err / (fabs(num) + atol);
                res->checked++;
                if (err > atol + rtol * fabs(num)) res->failed++;
                if (err > res->max_abs_err) res->max_abs_err = err;
                if (rel > res->max_rel_err) {
                    res->max_rel_err = rel;
                    if (li < m->nlayers) snprintf(res->worst, sizeof res->worst, "layer %d %s[%lld]: analytic %.6g numeric %.6g",
                                            li, gpudl__pname(&m->layers[li], part), (long long)j, (double)an[j], num);
                    else snprintf(res->worst, sizeof res->worst, "input[%lld]: analytic %.6g numeric %.6g", (long long)j,
                                  (double)an[j], num);
                }
            }
        }
    }
done:
    if (m->nbuffers && bufs) memcpy(m->buffers.data, bufs, sizeof(float) * (size_t)m->nbuffers);
    m->want_dinput = 0;
    GPUDL_FREE(g_an); GPUDL_FREE(dx_an); GPUDL_FREE(bufs);
    gpudl_tensor_free(ctx, &xc);
    (void)i;
    return s;
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

/* >>progress -------------------------------------------------------------- */
GPUDL__DEF void gpudl_progress_begin(gpudl_progress *p, const char *label, int64_t total_steps, int64_t items_per_step) {
    if (!p) return;
    memset(p, 0, sizeof *p);
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    p->total = total_steps > 0 ? total_steps : 1;
    p->items_per_step = items_per_step;
    p->t0 = gpudl_now();
    p->last_printed = -1;
#if defined(_WIN32)
    p->tty = _isatty(_fileno(stdout));
#else
    p->tty = isatty(fileno(stdout));
#endif
}

static void gpudl__progress_line(gpudl_progress *p, int64_t done, float loss, int final) {
    double dt = gpudl_now() - p->t0, rate = dt > 0 ? (double)(done * p->items_per_step) / dt : 0.0;
    double eta = done > 0 ? dt * (double)(p->total - done) / (double)done : 0.0;
    char bar[32];
    int i, fill = (int)(24 * done / p->total);
    for (i = 0; i < 24; i++) bar[i] = i < fill ? '#' : '.';
    bar[24] = 0;
    if (p->tty) printf("\r%s [%s] %lld/%lld", p->label, bar, (long long)done, (long long)p->total);
    else printf("%s step %lld/%lld", p->label, (long long)done, (long long)p->total);
    if (loss >= 0.0f) printf("  loss %.4f", (double)loss);
    printf("  %.0f img/s", rate);
    if (final) printf("  %.1f s%s", dt, p->tty ? "        \n" : "\n");
    else printf("  ETA %.0f s%s", eta, p->tty ? "   " : "\n");
    fflush(stdout);
}

GPUDL__DEF void gpudl_progress_update(gpudl_progress *p, int64_t done, float loss) {
    if (!p) return;
    if (p->tty || (done * 4 / p->total) != (p->last_printed * 4 / p->total)) {
        if (!p->tty && done == p->total) return;   /* the end line comes from gpudl_progress_end */
        gpudl__progress_line(p, done, loss, 0);
        p->last_printed = done;
    }
}

GPUDL__DEF void gpudl_progress_end(gpudl_progress *p, float loss) {
    if (p) gpudl__progress_line(p, p->total, loss, 1);
}

/* >>doctor ---------------------------------------------------------------- */
typedef struct gpudl__said { char *buf; size_t size, n; int problems; } gpudl__said;

static void gpudl__say(gpudl__said *s, int problem, const char *fix, const char *fmt, ...) {
    va_list ap;
    if (s->n >= s->size) return;
    if (problem) { s->problems++; s->n += (size_t)snprintf(s->buf + s->n, s->size - s->n, "problem: "); }
    if (s->n >= s->size) return;
    va_start(ap, fmt);
    s->n += (size_t)vsnprintf(s->buf + s->n, s->size - s->n, fmt, ap);
    va_end(ap);
    if (fix && s->n < s->size) s->n += (size_t)snprintf(s->buf + s->n, s->size - s->n, "\n  fix: %s", fix);
    if (s->n < s->size) s->n += (size_t)snprintf(s->buf + s->n, s->size - s->n, "\n");
}

/* The logger of the doctor's contexts: keeps the last error, without its file:line. */
static void gpudl__keep_msg(void *user, gpudl_log_level level, const char *msg) {
    const char *p = strstr(msg, ": ");
    if (level != GPUDL_LOG_ERROR) return;
    snprintf((char *)user, 512, "%s", p && strstr(msg, ".h:") && strstr(msg, ".h:") < p ? p + 2 : msg);
}

GPUDL__DEF int gpudl_doctor(char *buf, size_t size) {
    gpudl__said s;
    gpudl_ctx *ctx = NULL;
    gpudl_ctx_desc d;
    gpudl_device_info info;
    char msg[512] = "", fix[512];
    int i;
    if (!buf || !size) return -1;
    memset(&s, 0, sizeof s);
    s.buf = buf; s.size = size;
    buf[0] = 0;
    memset(&d, 0, sizeof d);
    d.log = gpudl__keep_msg;
    d.log_user = msg;
#ifdef GPUDL_NO_CUDA
    gpudl__say(&s, 0, NULL, "gpudl %s, built for the CPU only (GPUDL_NO_CUDA)", GPUDL_VERSION_STRING);
#else
    gpudl__say(&s, 0, NULL, "gpudl %s, built with CUDA %d.%d, cuBLAS %d.%d, cuDNN %d.%d; kernels for %s", GPUDL_VERSION_STRING,
               CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUDNN_MAJOR,
               CUDNN_MINOR, gpudl_k_archs());
    d.device = GPUDL_DEVICE_CUDA;
    if (gpudl_ctx_create(&d, &ctx) != GPUDL_OK) {
        struct cudaDeviceProp p;
        int drv = 0;
        (void)cudaDriverGetVersion(&drv);
        memset(&p, 0, sizeof p);
        if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) (void)cudaGetLastError();
        if (strstr(msg, "no NVIDIA driver"))
            snprintf(fix, sizeof fix, "install the NVIDIA driver (Debian: apt-get install nvidia-driver; nvidia-smi then "
                     "lists the GPU); until then everything runs on the CPU");
        else if (strstr(msg, "too old"))
            snprintf(fix, sizeof fix, "install an NVIDIA driver for CUDA %d.%d or newer (nvidia-smi shows what the "
                     "driver supports)", CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
        else if (strstr(msg, "no code for") && p.major * 10 + p.minor < 75 && CUDART_VERSION >= 13000)
            snprintf(fix, sizeof fix, "CUDA 13 has no compiler for sm_%d%d: build with CUDA 12 and -arch=sm_%d%d, or build "
                     "for the CPU (cc -O2 -DGPUDL_NO_CUDA app.c -lm)", p.major, p.minor, p.major, p.minor);
        else if (strstr(msg, "no code for"))
            snprintf(fix, sizeof fix, "rebuild with nvcc -gencode arch=compute_%d%d,code=sm_%d%d (or -arch=native)",
                     p.major, p.minor, p.major, p.minor);
        else if (strstr(msg, "sees no CUDA device"))
            snprintf(fix, sizeof fix, "check nvidia-smi, and CUDA_VISIBLE_DEVICES (unset it, or name the GPU)");
        else
            snprintf(fix, sizeof fix, "run nvidia-smi; see the message above");
        gpudl__say(&s, 1, fix, "no usable GPU: %s", msg[0] ? msg : "gpudl_ctx_create failed");
    } else if (gpudl_device_info_get(ctx, &info) == GPUDL_OK) {
        int major = 0;
        gpudl__say(&s, 0, NULL, "driver for CUDA %d.%d, runtime %d.%d", info.cuda_driver / 1000, (info.cuda_driver % 1000) / 10,
                   info.cuda_runtime / 1000, (info.cuda_runtime % 1000) / 10);
        gpudl__say(&s, 0, NULL, "GPU: %s, compute capability %d.%d, %d SMs, %.1f GiB; the kernels run on it", info.name,
                   info.cc_major, info.cc_minor, info.sm_count, (double)info.mem_total / (1 << 30));
        if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS && major != CUBLAS_VER_MAJOR)
            gpudl__say(&s, 1, "put the cuBLAS this program was built with first on the library path (LD_LIBRARY_PATH), "
                       "or rebuild against the one installed", "cuBLAS %d found at run time, built against %d", major,
                       CUBLAS_VER_MAJOR);
        if (info.cudnn_version / 10000 != CUDNN_MAJOR && info.cudnn_version / 1000 != CUDNN_MAJOR)
            gpudl__say(&s, 1, "install cuDNN of the same major version, or rebuild against the one installed",
                       "cuDNN %d found at run time, built against %d.%d", info.cudnn_version, CUDNN_MAJOR, CUDNN_MINOR);
        else gpudl__say(&s, 0, NULL, "cuDNN %d.%d at run time", (int)(info.cudnn_version / 10000),
                        (int)(info.cudnn_version / 100 % 100));
    }
    gpudl_ctx_destroy(ctx);
    ctx = NULL;
#endif
    d.device = GPUDL_DEVICE_CPU;
    if (gpudl_ctx_create(&d, &ctx) == GPUDL_OK && gpudl_device_info_get(ctx, &info) == GPUDL_OK) {
        gpudl__say(&s, 0, NULL, "CPU: %s; GEMM kernel %s, K blocks of %d, %d thread%s", info.name,
                   gpudl__pick_ukernel(GPUDL_CPU_GEMM_AUTO, 0).name, gpudl__pick_kc(), info.sm_count, info.sm_count == 1 ? "" : "s");
#ifndef _OPENMP
        gpudl__say(&s, 1, "build with -fopenmp (nvcc: -Xcompiler -fopenmp -lgomp)", "built without OpenMP: the CPU path "
                   "runs on one thread");
#endif
    }
    gpudl_ctx_destroy(ctx);
    for (i = 0; i < 5; i++) {   /* the data: where gpudl_fashion_mnist_load looks */
        char p[600], q[600];
        int gz = gpudl__idx_path(p, sizeof p, gpudl__fashion_dirs[i], "t10k-labels-idx1-ubyte");
        int train = gpudl__idx_path(q, sizeof q, gpudl__fashion_dirs[i], "train-images-idx3-ubyte") >= 0;   /* the biggest of the four */
        if (gz < 0) continue;
        d.log = gpudl_log_quiet;   /* the smallest of the four files, read as training would read it */
        if (gpudl_ctx_create(&d, &ctx) == GPUDL_OK) {
            gpudl_tensor t;
            if (!train) {
                snprintf(fix, sizeof fix, "put all four files in %s (Debian: apt-get install --reinstall dataset-fashion-mnist)",
                         gpudl__fashion_dirs[i]);
                gpudl__say(&s, 1, fix, "Fashion-MNIST in %s lacks train-images-idx3-ubyte(.gz)", gpudl__fashion_dirs[i]);
            } else if (gpudl_idx_load(ctx, p, &t) == GPUDL_OK) {
                gpudl__say(&s, 0, NULL, "data: Fashion-MNIST in %s, %lld test images (%s)%s", gpudl__fashion_dirs[i],
                           (long long)t.shape[0], t.shape[0] >= 10000 ? "the full set" : "a subset",
#ifdef GPUDL_ZLIB
                           gz ? ", .gz read through zlib" : "");
#else
                           gz ? ", .gz read by gpudl's own inflate" : "");
#endif
                gpudl_tensor_free(ctx, &t);
            } else {
                snprintf(fix, sizeof fix, "replace the files in %s (Debian: apt-get install --reinstall dataset-fashion-mnist)",
                         gpudl__fashion_dirs[i]);
                gpudl__say(&s, 1, fix, "Fashion-MNIST in %s does not load: %s", gpudl__fashion_dirs[i], gpudl_ctx_last_error(ctx));
            }
            gpudl_ctx_destroy(ctx);
            ctx = NULL;
        }
        break;
    }
    if (i == 5)
        gpudl__say(&s, 1, "apt-get install dataset-fashion-mnist (Debian), or pass the directory that holds the four "
                   "files (--data DIR)", "no Fashion-MNIST in ., data/fashion-mnist, build/data/fashion-mnist, "
                   "/usr/share/datasets/fashion-mnist or data/fashion-mnist-subset");
    gpudl__say(&s, 0, NULL, "%d problem%s", s.problems, s.problems == 1 ? "" : "s");
    return s.problems;
}

/* >>override -------------------------------------------------------------- */
static int gpudl__ops_slot(gpudl_ctx *ctx, gpudl_device dev, const char *fn, int *slot) {
    if (dev != GPUDL_DEVICE_CPU && dev != GPUDL_DEVICE_CUDA) {
        GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "%s: device %d is not GPUDL_DEVICE_CPU or GPUDL_DEVICE_CUDA", fn, (int)dev);
        return 0;
    }
    *slot = dev == GPUDL_DEVICE_CUDA;
    return 1;
}

GPUDL__DEF gpudl_status gpudl_ctx_set_ops(gpudl_ctx *ctx, gpudl_device dev, const gpudl_ops *ops) {
    int slot;
    GPUDL__ENTER(ctx);
    if (!gpudl__ops_slot(ctx, dev, "ctx_set_ops", &slot)) return GPUDL_ERR_INVALID_ARG;
    memset(&ctx->ops[slot], 0, sizeof ctx->ops[slot]);
    if (ops) ctx->ops[slot] = *ops;
    {   /* whether any function is set: the model then runs op by op (no fusion) */
        const gpudl_ops *o = &ctx->ops[slot];
        ctx->any_ops[slot] = o->gemm || o->act_forward || o->act_backward || o->softmax_xent_forward ||
                             o->softmax_xent_backward || o->maxpool_forward || o->maxpool_backward || o->conv2d_forward ||
                             o->sgd_update || o->adam_update || o->attn_softmax_forward || o->attn_softmax_backward ||
                             o->gemm_f16;
    }
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_ctx_ops(gpudl_ctx *ctx, gpudl_device dev, gpudl_ops *ops) {
    int slot;
    GPUDL__ENTER(ctx);
    if (!ops) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "ctx_ops: ops is NULL");
    if (!gpudl__ops_slot(ctx, dev, "ctx_ops", &slot)) return GPUDL_ERR_INVALID_ARG;
    *ops = ctx->ops[slot];
    return GPUDL_OK;
}

/* ---- checking an override: cases, a float64 reference, the comparison ---- */

/* One check run: its report, the inputs of the case at hand (host copies)
   for the failure's description, and the buffers on the device. */
typedef struct gpudl__chk {
    gpudl_ctx *ctx;
    gpudl_check_report *r;
    gpudl_act act;
    uint64_t seed;
    const char *group;
    char shape[64];
    gpudl_tensor t[6];   /* the case's tensors, freed after each case */
    int nt;
    int f16;             /* the GEMM's cases on f16 inputs (GPUDL_OP_GEMM_F16) */
} gpudl__chk;

static const char *gpudl__fill_name(int fill);

/* Says where element i of a case's output is, and what produced it. */
typedef void (*gpudl__chk_where)(const void *kase, int64_t i, char *where, size_t wsize, char *inputs, size_t isize);

static void gpudl__chk_fill(gpudl__chk *c, float *x, int64_t n, float lo, float hi) {
    int64_t i;
    for (i = 0; i < n; i++) x[i] = lo + (hi - lo) * gpudl_rng_uniform(c->seed, (uint64_t)i);
    c->seed = gpudl_rng_bits(c->seed, 1);
}

/* A tensor of the case on the context's device holding host data (or, with
   host NULL, NaN: an output the op must write). */
static gpudl_status gpudl__chk_tensor(gpudl__chk *c, gpudl_dtype dt, int ndim, const int64_t *shape, const void *host,
                                      gpudl_tensor **out) {
    gpudl_tensor *t = &c->t[c->nt];
    GPUDL__TRY(gpudl_tensor_create(c->ctx, t, dt, ndim, shape));
    c->nt++;
    *out = t;
    if (host) return gpudl_tensor_upload(c->ctx, t, host, gpudl_tensor_bytes(t));
    return gpudl_tensor_fill(c->ctx, t, dt == GPUDL_F32 ? NAN : 0.0f);
}
static gpudl_status gpudl__chk_t1(gpudl__chk *c, int64_t n, const float *host, gpudl_tensor **out) {
    return gpudl__chk_tensor(c, GPUDL_F32, 1, &n, host, out);
}
static void gpudl__chk_release(gpudl__chk *c) {
    while (c->nt > 0) gpudl_tensor_free(c->ctx, &c->t[--c->nt]);
}

/* A case added to an op's battery after its first version draws its
   inputs from a stream of its own (tag: which), so the cases after it keep
   theirs: gpudl__chk_fork before it, gpudl__chk_join after. */
static uint64_t gpudl__chk_fork(gpudl__chk *c, uint64_t tag) {
    uint64_t keep = c->seed;
    c->seed = gpudl_rng_bits(keep, 0xadd00000ull + tag);
    return keep;
}
static gpudl_status gpudl__chk_join(gpudl__chk *c, uint64_t keep, gpudl_status s) {
    c->seed = keep;
    return s;
}

/* Opens a case: its group and shape. */
static gpudl_check_case *gpudl__chk_case(gpudl__chk *c, const char *group, const char *fmt, ...) {
    gpudl_check_case *k;
    va_list ap;
    if (c->r->ncases >= GPUDL_CHECK_MAX_CASES) return NULL;
    k = &c->r->cases[c->r->ncases];
    memset(k, 0, sizeof *k);
    snprintf(k->group, sizeof k->group, "%s", group);
    va_start(ap, fmt);
    vsnprintf(k->shape, sizeof k->shape, fmt, ap);
    va_end(ap);
    k->passed = 1;
    return k;
}

/* got (float, from the op) against expected (float64); scale: per element
   the magnitude the error is measured against (NULL: 1 + |expected|). */
static void gpudl__chk_compare(gpudl__chk *c, gpudl_check_case *k, const float *got, const double *want, const double *scale,
                               int64_t n, gpudl__chk_where where, const void *kase) {
    gpudl_check_report *r = c->r;
    int64_t i;
    for (i = 0; i < n; i++) {
        double e = want[i], g = got[i], err, rel, sc = scale ? scale[i] : 1.0 + fabs(e);
        int ok;
        if (e != e) { ok = g != g; err = ok ? 0.0 : INFINITY; }
        else if (isinf(e)) { ok = g == e; err = ok ? 0.0 : INFINITY; }
        else { err = g == g ? fabs(g - e) : INFINITY; ok = err <= r->tol * sc; }
        rel = err / (fabs(e) > 1e-30 ? fabs(e) : 1e-30);
        if (e == e && err == err) {
            if (err > k->max_abs_err) k->max_abs_err = err;
            if (rel > k->max_rel_err && fabs(e) > 1e-30) k->max_rel_err = rel;
        }
        if (!ok && k->passed) {
            k->passed = 0;
            if (r->first_case < 0) {
                r->first_case = r->ncases;
                r->index = i;
                r->expected = e;
                r->got = g;
                where(kase, i, r->where, sizeof r->where, r->inputs, sizeof r->inputs);
            }
        }
    }
}

/* Closes a case: counts it, and frees its tensors. s: the op's status. */
static gpudl_status gpudl__chk_close(gpudl__chk *c, gpudl_check_case *k, gpudl_status s) {
    gpudl_check_report *r = c->r;
    gpudl__chk_release(c);
    if (s != GPUDL_OK && s != GPUDL_ERR_OOM && k->passed) {   /* the override failed: the case fails, the check goes on */
        k->passed = 0;
        if (r->first_case < 0) {
            r->first_case = r->ncases;
            r->index = -1;
            r->expected = r->got = 0;
            snprintf(r->status_msg, sizeof r->status_msg, "%.159s", gpudl__message(c->ctx));
        }
        s = GPUDL_OK;
    }
    if (s != GPUDL_OK) return s;
    if (k->max_abs_err > r->max_abs_err) r->max_abs_err = k->max_abs_err;
    if (k->max_rel_err > r->max_rel_err) r->max_rel_err = k->max_rel_err;
    r->nfailed += !k->passed;
    r->ncases++;
    return GPUDL_OK;
}

/* GEMM: C (M,N) = alpha op(A) op(B) + beta C. */
typedef struct gpudl__chk_gemm { int64_t M, N, K; int ta, tb; float alpha, beta; const float *A, *B, *C0; } gpudl__chk_gemm;
static void gpudl__chk_gemm_where(const void *kase, int64_t i, char *w, size_t ws, char *in, size_t is) {
    const gpudl__chk_gemm *g = (const gpudl__chk_gemm *)kase;
    int64_t r = i / g->N, col = i % g->N, l;
    if (snprintf(w, ws, "C[%lld,%lld] (row %lld, column %lld of %lldx%lld)", (long long)r, (long long)col, (long long)r,
                 (long long)col, (long long)g->M, (long long)g->N) < 0) w[0] = 0;   /* (the result used: -O3's truncation warning) */
    for (l = 0; l < g->K; l++) {   /* a zero factor that meets an Inf or a NaN: the product is NaN */
        float a = g->ta ? g->A[l * g->M + r] : g->A[r * g->K + l], b = g->tb ? g->B[col * g->K + l] : g->B[l * g->N + col];
        if ((a == 0.0f && !isfinite(b)) || (b == 0.0f && !isfinite(a))) {
            if (snprintf(in, is, "row %lld of op(A) . column %lld of op(B), K = %lld: op(A)[%lld,%lld] = %g times op(B)[%lld,%lld] = %g "
                         "is NaN (IEEE: do not skip zero factors)", (long long)r, (long long)col, (long long)g->K, (long long)r,
                         (long long)l, (double)a, (long long)l, (long long)col, (double)b) < 0) in[0] = 0;
            return;
        }
    }
    snprintf(in, is, "row %lld of op(A) . column %lld of op(B), K = %lld, alpha %g, beta %g%s", (long long)r, (long long)col,
             (long long)g->K, (double)g->alpha, (double)g->beta, g->beta == 0.0f ? " (C held NaN before: not to be read)" : "");
}

/* A case of the GEMM; fill: 0 random, 1 zeros in A, 2 negatives, 3 large,
   4 subnormal, 5 a NaN and an Inf in A, 6 zeros that meet an Inf or a NaN
   (no transposes): a zero and a -0 in A's row M/2 meet an Inf and a NaN in
   B (0 * Inf and 0 * NaN are NaN: a GEMM that skips zero factors loses
   them), and an Inf in A meets a zero in B; 7 positive A and B in [0, 1)
   (long sums that only grow). With c->f16 the inputs are rounded to FP16
   and go in as f16 tensors (the reference takes the rounded values);
   large means A and B up to 256 (products to 65536, past FP16's largest,
   65504), subnormal A below FP16's smallest normal (6.1e-5). */
static gpudl_status gpudl__chk_gemm_case(gpudl__chk *c, const char *group, int64_t M, int64_t N, int64_t K, int ta, int tb,
                                         float alpha, float beta, int fill) {
    gpudl__chk_gemm g;
    gpudl_check_case *k = gpudl__chk_case(c, group, "M=%lld N=%lld K=%lld%s%s%s%s", (long long)M, (long long)N, (long long)K,
                                          ta ? " A^T" : "", tb ? " B^T" : "", beta != 0.0f ? " beta!=0" : "",
                                          fill == 5 ? " NaN, Inf in A" : fill == 6 ? " 0 x Inf, 0 x NaN"
                                          : fill == 7 ? " positive" : gpudl__fill_name(fill));
    float *A, *B, *C0, *got = NULL;
    double *want = NULL, *sc = NULL;
    int64_t i, j, l, sa[2], sb[2], scs[2];
    gpudl_tensor *tA = NULL, *tB = NULL, *tC = NULL;
    gpudl_status s = GPUDL_OK;
    if (!k) return GPUDL_OK;
    A = (float *)GPUDL_MALLOC(sizeof(float) * (size_t)(M * K + K * N + 2 * M * N));
    want = (double *)GPUDL_MALLOC(sizeof(double) * (size_t)(2 * M * N));
    if (!A || !want) { GPUDL_FREE(A); GPUDL_FREE(want); return GPUDL__ERR(c->ctx, GPUDL_ERR_OOM, "check: no host memory"); }
    B = A + M * K; C0 = B + K * N; got = C0 + M * N; sc = want + M * N;
    gpudl__chk_fill(c, A, M * K, -1.0f, 1.0f);
    gpudl__chk_fill(c, B, K * N, -1.0f, 1.0f);
    gpudl__chk_fill(c, C0, M * N, -1.0f, 1.0f);
    for (i = 0; i < K * N; i++) if (B[i] == 0.0f) B[i] = 0.5f;   /* no zeros: an Inf in A stays an Inf */
    for (i = 0; i < M * K; i++) {
        if (fill == 1) A[i] = 0.0f;
        else if (fill == 2) A[i] = -fabsf(A[i]) - 0.01f;
        else if (fill == 3) A[i] *= c->f16 ? 256.0f : 1e15f;
        else if (fill == 4) A[i] *= c->f16 ? 6e-5f : 1e-38f;
        else if (fill == 7) A[i] = fabsf(A[i]);
    }
    for (i = 0; fill == 2 && i < K * N; i++) B[i] = -fabsf(B[i]) - 0.01f;
    for (i = 0; c->f16 && (fill == 3 || fill == 7) && i < K * N; i++) B[i] = fill == 3 ? 256.0f * B[i] : fabsf(B[i]);
    if (fill == 5) { A[0] = NAN; A[M * K - 1] = INFINITY; }
    if (fill == 6) {   /* K >= 4, N >= 4, M >= 2: C[M/2, N/3] and C[M/2, 2N/3] are NaN, C[0, N-1] too */
        int64_t r = M / 2, k0 = K / 3, k1 = 2 * K / 3, j0 = N / 3, j1 = 2 * N / 3;
        for (i = 0; i < M * K; i++) if (A[i] == 0.0f) A[i] = 0.5f;   /* no other zeros: the other rows' Infs stay Infs */
        A[r * K + k0] = 0.0f; B[k0 * N + j0] = INFINITY;
        A[r * K + k1] = -0.0f; B[k1 * N + j1] = NAN;
        A[K - 1] = -INFINITY; B[(K - 1) * N + N - 1] = 0.0f;
    }
    if (c->f16) {   /* FP16 inputs: the values the op gets, bits in C0's room (C0 comes back after) */
        uint16_t *h = (uint16_t *)GPUDL_MALLOC(sizeof(uint16_t) * (size_t)(M * K + K * N));
        if (!h) { GPUDL_FREE(A); GPUDL_FREE(want); return GPUDL__ERR(c->ctx, GPUDL_ERR_OOM, "check: no host memory"); }
        gpudl__convert(h, GPUDL_F16, A, GPUDL_F32, M * K + K * N);
        gpudl__convert(A, GPUDL_F32, h, GPUDL_F16, M * K + K * N);
        GPUDL_FREE(h);
    }
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            double acc = 0, mag = 0;
            for (l = 0; l < K; l++) {
                double a = ta ? A[l * M + i] : A[i * K + l], b = tb ? B[j * K + l] : B[l * N + j];
                acc += a * b;
                mag += fabs(a * b);
            }
            want[i * N + j] = (double)alpha * acc + (beta != 0.0f ? (double)beta * C0[i * N + j] : 0.0);
            sc[i * N + j] = 1.0 + fabs((double)alpha) * (mag == mag ? mag : 0.0) + fabs((double)beta * C0[i * N + j]);
        }
    sa[0] = ta ? K : M; sa[1] = ta ? M : K;
    sb[0] = tb ? N : K; sb[1] = tb ? K : N;
    scs[0] = M; scs[1] = N;
    if (c->f16) {   /* f16 copies of A and B on the device, from f32 ones */
        gpudl_tensor *fA = NULL, *fB = NULL;
        s = gpudl__chk_tensor(c, GPUDL_F32, 2, sa, A, &fA);
        if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F32, 2, sb, B, &fB);
        if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F16, 2, sa, NULL, &tA);
        if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F16, 2, sb, NULL, &tB);
        if (s == GPUDL_OK) s = gpudl_tensor_cast(c->ctx, tA, fA);
        if (s == GPUDL_OK) s = gpudl_tensor_cast(c->ctx, tB, fB);
    } else {
        s = gpudl__chk_tensor(c, GPUDL_F32, 2, sa, A, &tA);
        if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F32, 2, sb, B, &tB);
    }
    if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F32, 2, scs, beta != 0.0f ? C0 : NULL, &tC);
    if (s == GPUDL_OK) s = gpudl_matmul(c->ctx, tC, tA, tB, ta, tb, alpha, beta);
    if (s == GPUDL_OK) s = gpudl_tensor_download(c->ctx, tC, got, gpudl_tensor_bytes(tC));
    if (s == GPUDL_OK) {
        g.M = M; g.N = N; g.K = K; g.ta = ta; g.tb = tb; g.alpha = alpha; g.beta = beta; g.A = A; g.B = B; g.C0 = C0;
        gpudl__chk_compare(c, k, got, want, sc, M * N, gpudl__chk_gemm_where, &g);
    }
    GPUDL_FREE(A); GPUDL_FREE(want);
    return gpudl__chk_close(c, k, s);
}

static gpudl_status gpudl__chk_gemm_all(gpudl__chk *c) {
    static const int64_t odd[][3] = {{1, 1, 1}, {1, 7, 3}, {7, 1, 5}, {17, 31, 13}, {33, 65, 47}, {63, 17, 129}, {15, 47, 16}};
    size_t i;
    uint64_t keep;
    c->r->tol = 1e-5;
    GPUDL__TRY(gpudl__chk_gemm_case(c, "basic", 16, 16, 16, 0, 0, 1.0f, 0.0f, 0));   /* one 16-wide tile: no edges */
    GPUDL__TRY(gpudl__chk_gemm_case(c, "basic", 32, 32, 32, 0, 0, 1.0f, 0.0f, 0));
    for (i = 0; i < sizeof odd / sizeof odd[0]; i++) GPUDL__TRY(gpudl__chk_gemm_case(c, "odd sizes", odd[i][0], odd[i][1], odd[i][2], 0, 0, 1.0f, 0.0f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "transposes", 19, 23, 29, 1, 0, 1.0f, 0.0f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "transposes", 19, 23, 29, 0, 1, 1.0f, 0.0f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "transposes", 19, 23, 29, 1, 1, 1.0f, 0.0f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "transposes", 64, 33, 48, 1, 0, 1.0f, 0.0f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "alpha/beta", 20, 21, 22, 0, 0, 0.5f, 1.0f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "alpha/beta", 33, 16, 40, 0, 1, -2.0f, 0.25f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "values", 24, 20, 18, 0, 0, 1.0f, 0.0f, 1));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "values", 24, 20, 18, 0, 0, 1.0f, 0.0f, 2));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "values", 24, 20, 18, 0, 0, 1.0f, 0.0f, 3));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "values", 24, 20, 18, 0, 0, 1.0f, 0.0f, 4));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "nan/inf", 9, 10, 11, 0, 0, 1.0f, 0.0f, 5));
    keep = gpudl__chk_fork(c, 1);
    GPUDL__TRY(gpudl__chk_join(c, keep, gpudl__chk_gemm_case(c, "nan/inf", 7, 11, 9, 0, 0, 1.0f, 0.0f, 6)));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "large", 256, 256, 256, 0, 0, 1.0f, 0.0f, 0));
    return gpudl__chk_gemm_case(c, "large", 300, 257, 200, 0, 1, 1.0f, 0.0f, 0);
}

/* The FP16 GEMM with FP32 sums (gemm_f16): the GEMM's groups on FP16
   inputs, and sums an FP16 accumulator cannot hold. Tolerance 1e-3 of
   1 + sum |products| (+ |beta C|): FP32 sums of K = 4096 stay within
   K * 2^-24 = 2.4e-4 of it even in the worst order, while an FP16
   accumulator (spacing 2^-10 of the sum) drifts past it on the long
   positive sums ("accumulation") and overflows on products near 65504
   ("values"); on short random sums ("basic") it stays within it. */
static gpudl_status gpudl__chk_gemm_f16_all(gpudl__chk *c) {
    static const int64_t odd[][3] = {{1, 1, 1}, {1, 7, 3}, {7, 1, 5}, {17, 31, 13}, {33, 65, 47}, {63, 17, 129}, {15, 47, 16}};
    size_t i;
    c->r->tol = 1e-3;
    c->f16 = 1;
    GPUDL__TRY(gpudl__chk_gemm_case(c, "basic", 16, 16, 16, 0, 0, 1.0f, 0.0f, 0));   /* one 16x16x16 tile: one mma */
    GPUDL__TRY(gpudl__chk_gemm_case(c, "basic", 32, 32, 32, 0, 0, 1.0f, 0.0f, 0));
    for (i = 0; i < sizeof odd / sizeof odd[0]; i++) GPUDL__TRY(gpudl__chk_gemm_case(c, "odd sizes", odd[i][0], odd[i][1], odd[i][2], 0, 0, 1.0f, 0.0f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "transposes", 19, 23, 29, 1, 0, 1.0f, 0.0f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "transposes", 19, 23, 29, 0, 1, 1.0f, 0.0f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "transposes", 19, 23, 29, 1, 1, 1.0f, 0.0f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "transposes", 64, 33, 48, 1, 0, 1.0f, 0.0f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "alpha/beta", 20, 21, 22, 0, 0, 0.5f, 1.0f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "alpha/beta", 33, 16, 40, 0, 1, -2.0f, 0.25f, 0));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "values", 24, 20, 18, 0, 0, 1.0f, 0.0f, 1));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "values", 24, 20, 18, 0, 0, 1.0f, 0.0f, 2));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "values", 24, 20, 40, 0, 0, 1.0f, 0.0f, 3));   /* sums past 65504 */
    GPUDL__TRY(gpudl__chk_gemm_case(c, "values", 24, 20, 18, 0, 0, 1.0f, 0.0f, 4));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "nan/inf", 9, 10, 11, 0, 0, 1.0f, 0.0f, 5));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "nan/inf", 7, 11, 9, 0, 0, 1.0f, 0.0f, 6));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "accumulation", 16, 16, 2048, 0, 0, 1.0f, 0.0f, 7));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "accumulation", 17, 19, 4096, 0, 0, 1.0f, 0.0f, 7));
    GPUDL__TRY(gpudl__chk_gemm_case(c, "large", 256, 256, 256, 0, 0, 1.0f, 0.0f, 0));
    return gpudl__chk_gemm_case(c, "large", 300, 257, 200, 0, 1, 1.0f, 0.0f, 0);
}

/* Activations: forward y = act(x), backward dx = dy act'(x). */
typedef struct gpudl__chk_vec { const float *a, *b; const char *an, *bn; } gpudl__chk_vec;
static void gpudl__chk_vec_where(const void *kase, int64_t i, char *w, size_t ws, char *in, size_t is) {
    const gpudl__chk_vec *v = (const gpudl__chk_vec *)kase;
    snprintf(w, ws, "element %lld", (long long)i);
    if (v->b) snprintf(in, is, "%s = %.9g, %s = %.9g", v->an, (double)v->a[i], v->bn, (double)v->b[i]);
    else snprintf(in, is, "%s = %.9g", v->an, (double)v->a[i]);
}

static double gpudl__act_ref(gpudl_act act, double x, float alpha) {
    switch (act) {
    case GPUDL_ACT_RELU:       return x < 0 ? 0.0 : x;   /* PyTorch's clamp_min(x, 0): NaN stays NaN */
    case GPUDL_ACT_LEAKY_RELU: return x * (x > 0 ? 1.0 : (double)alpha);
    case GPUDL_ACT_GELU:       return 0.5 * x * (1.0 + erf(x * 0.70710678118654752));
    case GPUDL_ACT_TANH:       return tanh(x);
    default:                   return 1.0 / (1.0 + exp(-x));
    }
}
static double gpudl__act_dref(gpudl_act act, double x, float alpha) {
    switch (act) {
    case GPUDL_ACT_RELU:       return x <= 0 ? 0.0 : 1.0;   /* PyTorch's threshold_backward: NaN <= 0 is false, dy passes */
    case GPUDL_ACT_LEAKY_RELU: return x > 0 ? 1.0 : (double)alpha;
    case GPUDL_ACT_GELU:       return 0.5 * (1.0 + erf(x * 0.70710678118654752)) + x * 0.39894228040143268 * exp(-0.5 * x * x);
    case GPUDL_ACT_TANH:       { double t = tanh(x); return 1.0 - t * t; }
    default:                   { double y = 1.0 / (1.0 + exp(-x)); return y * (1.0 - y); }
    }
}

/* fill: 0 random in [-3, 3], 1 zeros, 2 negatives, 3 large, 4 subnormal,
   5 NaN and Infs, 6 away from 0 (finite differences: numeric derivative) */
static gpudl_status gpudl__chk_act_case(gpudl__chk *c, int backward, const char *group, int64_t n, int fill) {
    gpudl_check_case *k = gpudl__chk_case(c, group, "n=%lld%s", (long long)n, gpudl__fill_name(fill));
    float alpha = c->act == GPUDL_ACT_LEAKY_RELU ? 0.01f : 0.0f, *x, *dy, *y, *got;
    double *want;
    int64_t i;
    gpudl_tensor *tx = NULL, *ty = NULL, *tdy = NULL, *tdx = NULL;
    gpudl__chk_vec v;
    gpudl_status s;
    if (!k) return GPUDL_OK;
    x = (float *)GPUDL_MALLOC(sizeof(float) * (size_t)(4 * n));
    want = (double *)GPUDL_MALLOC(sizeof(double) * (size_t)n);
    if (!x || !want) { GPUDL_FREE(x); GPUDL_FREE(want); return GPUDL__ERR(c->ctx, GPUDL_ERR_OOM, "check: no host memory"); }
    dy = x + n; y = dy + n; got = y + n;
    gpudl__chk_fill(c, x, n, -3.0f, 3.0f);
    gpudl__chk_fill(c, dy, n, -1.0f, 1.0f);
    for (i = 0; i < n; i++) {
        if (x[i] == 0.0f) x[i] = 0.5f;   /* no random zero: its sign decides ReLU's slope, which the zeros case tests */
        if (fill == 1) x[i] = (i & 1) ? -0.0f : 0.0f;
        else if (fill == 2) x[i] = -fabsf(x[i]) - 1e-3f;
        else if (fill == 3) x[i] *= 1e30f;
        else if (fill == 4) x[i] *= 1e-39f;
        else if (fill == 5) x[i] = (i % 4 == 0) ? NAN : (i % 4 == 1) ? INFINITY : (i % 4 == 2) ? -INFINITY : x[i];
        else if (fill == 6) x[i] = x[i] < 0 ? x[i] - 0.05f : x[i] + 0.05f;
    }
    for (i = 0; i < n; i++) {
        y[i] = (float)gpudl__act_ref(c->act, x[i], alpha);
        if (!backward) want[i] = gpudl__act_ref(c->act, x[i], alpha);
        else if (fill == 6) {   /* central differences of the float64 forward */
            double h = 1e-4 * (1.0 + fabs(x[i]));
            want[i] = dy[i] * (gpudl__act_ref(c->act, x[i] + h, alpha) - gpudl__act_ref(c->act, x[i] - h, alpha)) / (2 * h);
        } else want[i] = (double)dy[i] * gpudl__act_dref(c->act, x[i], alpha);
    }
    if (backward && fill == 6) c->r->tol = 1e-4;   /* the difference quotient's own error */
    s = gpudl__chk_t1(c, n, x, &tx);
    if (s == GPUDL_OK) s = gpudl__chk_t1(c, n, backward ? y : NULL, &ty);
    if (s == GPUDL_OK && backward) s = gpudl__chk_t1(c, n, dy, &tdy);
    if (s == GPUDL_OK && backward) s = gpudl__chk_t1(c, n, NULL, &tdx);
    if (s == GPUDL_OK) s = backward ? gpudl_act_backward(c->ctx, c->act, alpha, tdx, tdy, tx, ty)
                                    : gpudl_act_forward(c->ctx, c->act, alpha, ty, tx);
    if (s == GPUDL_OK) s = gpudl_tensor_download(c->ctx, backward ? tdx : ty, got, sizeof(float) * (size_t)n);
    if (s == GPUDL_OK) {
        v.a = x; v.an = "x"; v.b = backward ? dy : NULL; v.bn = "dy";
        gpudl__chk_compare(c, k, got, want, NULL, n, gpudl__chk_vec_where, &v);
    }
    c->r->tol = 1e-5;
    GPUDL_FREE(x); GPUDL_FREE(want);
    return gpudl__chk_close(c, k, s);
}

static gpudl_status gpudl__chk_act_all(gpudl__chk *c, int backward) {
    static const int64_t odd[] = {1, 7, 31, 33, 1023};
    size_t i;
    c->r->tol = 1e-5;
    GPUDL__TRY(gpudl__chk_act_case(c, backward, "basic", 1000, 0));
    for (i = 0; i < sizeof odd / sizeof odd[0]; i++) GPUDL__TRY(gpudl__chk_act_case(c, backward, "odd sizes", odd[i], 0));
    GPUDL__TRY(gpudl__chk_act_case(c, backward, "values", 64, 1));
    GPUDL__TRY(gpudl__chk_act_case(c, backward, "values", 100, 2));
    GPUDL__TRY(gpudl__chk_act_case(c, backward, "values", 100, 3));
    GPUDL__TRY(gpudl__chk_act_case(c, backward, "values", 100, 4));
    GPUDL__TRY(gpudl__chk_act_case(c, backward, "nan/inf", 37, 5));
    if (backward) GPUDL__TRY(gpudl__chk_act_case(c, backward, "finite diff", 200, 6));
    return gpudl__chk_act_case(c, backward, "large", 100003, 0);
}

/* Softmax cross-entropy. The forward's output: probs (N*K) then the loss. */
typedef struct gpudl__chk_xent { int64_t N, K; const float *z; const int32_t *lab; int backward; float scale; } gpudl__chk_xent;
static void gpudl__chk_xent_where(const void *kase, int64_t i, char *w, size_t ws, char *in, size_t is) {
    const gpudl__chk_xent *x = (const gpudl__chk_xent *)kase;
    int64_t r = i / x->K, col = i % x->K, j;
    float mx = -INFINITY, mn = INFINITY;
    if (!x->backward && i == x->N * x->K) {
        snprintf(w, ws, "the loss (mean over %lld rows)", (long long)x->N);
        snprintf(in, is, "N = %lld rows of K = %lld logits", (long long)x->N, (long long)x->K);
        return;
    }
    for (j = 0; j < x->K; j++) { float v = x->z[r * x->K + j]; mx = v > mx ? v : mx; mn = v < mn ? v : mn; }
    if (snprintf(w, ws, "%s[%lld,%lld] (row %lld, class %lld)", x->backward ? "dlogits" : "probs", (long long)r, (long long)col,
                 (long long)r, (long long)col) < 0) w[0] = 0;   /* (the result used: gcc -O3's truncation warning is about unused ones) */
    if (snprintf(in, is, "row %lld: logits from %.6g to %.6g, label %d%s", (long long)r, (double)mn, (double)mx, (int)x->lab[r],
                 x->backward ? ", scale given" : "") < 0) in[0] = 0;
}

/* fill: 0 random logits in [-4, 4], 1 zeros, 2 negatives, 3 logits near
   +-1000, 4 a NaN in row 0, 5 finite differences (backward) */
static gpudl_status gpudl__chk_xent_case(gpudl__chk *c, int backward, const char *group, int64_t N, int64_t K, int fill,
                                         float scale) {
    gpudl_check_case *k = gpudl__chk_case(c, group, "N=%lld K=%lld%s%s", (long long)N, (long long)K,
                                          backward && scale != 1.0f ? " scale!=1" : "",
                                          fill == 3 ? " logits +-1000" : fill == 4 ? " a NaN" : fill < 3 ? gpudl__fill_name(fill) : "");
    int64_t NK = N * K, i, r, j, shape[2];
    float *z, *p, *got;
    int32_t *lab;
    double *want, total = 0;
    gpudl_tensor *tz = NULL, *tp = NULL, *tl = NULL, *tloss = NULL, *td = NULL;
    gpudl__chk_xent xk;
    gpudl_status s;
    if (!k) return GPUDL_OK;
    z = (float *)GPUDL_MALLOC(sizeof(float) * (size_t)(3 * NK + 1) + sizeof(int32_t) * (size_t)N);
    want = (double *)GPUDL_MALLOC(sizeof(double) * (size_t)(NK + 1));
    if (!z || !want) { GPUDL_FREE(z); GPUDL_FREE(want); return GPUDL__ERR(c->ctx, GPUDL_ERR_OOM, "check: no host memory"); }
    p = z + NK; got = p + NK; lab = (int32_t *)(got + NK + 1);
    gpudl__chk_fill(c, z, NK, -4.0f, 4.0f);
    for (i = 0; i < NK; i++) {
        if (fill == 1) z[i] = 0.0f;
        else if (fill == 2) z[i] = -fabsf(z[i]) * 10.0f - 10.0f;
        else if (fill == 3) z[i] = z[i] * 250.0f;   /* +-1000: exp() overflows without the max subtracted */
    }
    if (fill == 4) z[K / 2] = NAN;
    for (r = 0; r < N; r++) lab[r] = (int32_t)(gpudl_rng_bits(c->seed, (uint64_t)r) % (uint64_t)K);
    c->seed = gpudl_rng_bits(c->seed, 7);
    for (r = 0; r < N; r++) {   /* the float64 reference */
        double mx = z[r * K], sum = 0;
        for (j = 1; j < K; j++) mx = (z[r * K + j] > mx || z[r * K + j] != z[r * K + j]) && mx == mx ? z[r * K + j] : mx;
        for (j = 0; j < K; j++) sum += exp((double)z[r * K + j] - mx);
        for (j = 0; j < K; j++) {
            double pr = exp((double)z[r * K + j] - mx) / sum;
            p[r * K + j] = (float)pr;
            if (!backward) want[r * K + j] = pr;
        }
        total += mx + log(sum) - (double)z[r * K + lab[r]];
    }
    if (!backward) want[NK] = total / (double)N;
    else
        for (i = 0; i < NK; i++) {
            r = i / K;
            if (fill == 5) {   /* d loss / d z by central differences of the float64 loss */
                double h = 1e-3, lp = 0, lm = 0, sp = 0, sm = 0, mx = z[r * K];
                for (j = 1; j < K; j++) mx = z[r * K + j] > mx ? z[r * K + j] : mx;
                for (j = 0; j < K; j++) {
                    double zz = z[r * K + j];
                    sp += exp(zz + (j == i % K ? h : 0) - mx);
                    sm += exp(zz - (j == i % K ? h : 0) - mx);
                }
                lp = log(sp) - ((double)z[r * K + lab[r]] + (i % K == lab[r] ? h : 0) - mx);
                lm = log(sm) - ((double)z[r * K + lab[r]] - (i % K == lab[r] ? h : 0) - mx);
                want[i] = scale * (lp - lm) / (2 * h) / (double)N;
            } else want[i] = (double)scale * ((double)p[i] - (i % K == lab[r] ? 1.0 : 0.0)) / (double)N;
        }
    if (fill == 5) c->r->tol = 1e-4;
    shape[0] = N; shape[1] = K;
    s = gpudl__chk_tensor(c, GPUDL_F32, 2, shape, backward ? NULL : z, &tz);   /* the logits, or dlogits */
    if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F32, 2, shape, backward ? p : NULL, &tp);
    if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_I32, 1, &N, lab, &tl);
    if (s == GPUDL_OK && !backward) s = gpudl__chk_t1(c, 1, NULL, &tloss);
    if (s == GPUDL_OK) {
        td = tz;
        s = backward ? gpudl_softmax_xent_backward(c->ctx, td, tp, tl, scale) : gpudl_softmax_xent_forward(c->ctx, tloss, tp, tz, tl);
    }
    if (s == GPUDL_OK) s = gpudl_tensor_download(c->ctx, backward ? tz : tp, got, sizeof(float) * (size_t)NK);
    if (s == GPUDL_OK && !backward) s = gpudl_tensor_download(c->ctx, tloss, got + NK, sizeof(float));
    if (s == GPUDL_OK) {
        xk.N = N; xk.K = K; xk.z = z; xk.lab = lab; xk.backward = backward; xk.scale = scale;
        gpudl__chk_compare(c, k, got, want, NULL, backward ? NK : NK + 1, gpudl__chk_xent_where, &xk);
    }
    c->r->tol = 1e-5;
    GPUDL_FREE(z); GPUDL_FREE(want);
    return gpudl__chk_close(c, k, s);
}

static gpudl_status gpudl__chk_xent_all(gpudl__chk *c, int backward) {
    static const int64_t odd[][2] = {{1, 1}, {1, 10}, {3, 7}, {33, 10}, {17, 129}};
    size_t i;
    c->r->tol = 1e-5;
    GPUDL__TRY(gpudl__chk_xent_case(c, backward, "basic", 8, 10, 0, 1.0f));
    for (i = 0; i < sizeof odd / sizeof odd[0]; i++)
        GPUDL__TRY(gpudl__chk_xent_case(c, backward, "odd sizes", odd[i][0], odd[i][1], 0, 1.0f));
    GPUDL__TRY(gpudl__chk_xent_case(c, backward, "values", 5, 10, 1, 1.0f));
    GPUDL__TRY(gpudl__chk_xent_case(c, backward, "values", 6, 12, 2, backward ? 0.5f : 1.0f));
    if (!backward) {
        GPUDL__TRY(gpudl__chk_xent_case(c, backward, "large logits", 16, 10, 3, 1.0f));
        GPUDL__TRY(gpudl__chk_xent_case(c, backward, "large logits", 5, 33, 3, 1.0f));
        GPUDL__TRY(gpudl__chk_xent_case(c, backward, "nan/inf", 4, 10, 4, 1.0f));
    } else {
        GPUDL__TRY(gpudl__chk_xent_case(c, backward, "values", 7, 10, 0, 65536.0f));
        GPUDL__TRY(gpudl__chk_xent_case(c, backward, "finite diff", 6, 9, 5, 1.0f));
    }
    return gpudl__chk_xent_case(c, backward, "large", 512, 1000, 0, 1.0f);
}

/* Max pooling: y (NC, Ho, Wo); backward dx (NC, H, W). */
typedef struct gpudl__chk_pool { gpudl_pool_shape s; const float *x, *dy; int backward; } gpudl__chk_pool;
static void gpudl__chk_pool_where(const void *kase, int64_t i, char *w, size_t ws, char *in, size_t is) {
    const gpudl__chk_pool *p = (const gpudl__chk_pool *)kase;
    int64_t H = p->backward ? p->s.H : p->s.Ho, W = p->backward ? p->s.W : p->s.Wo;
    int64_t pl = i / (H * W), h = (i / W) % H, x = i % W;
    snprintf(w, ws, "%s[plane %lld, %lld, %lld]", p->backward ? "dx" : "y", (long long)pl, (long long)h, (long long)x);
    if (p->backward)
        snprintf(in, is, "x there = %.7g; window %lldx%lld, stride %lld, padding %lld (windows %s)", (double)p->x[i],
                 (long long)p->s.k_h, (long long)p->s.k_w, (long long)p->s.stride_h, (long long)p->s.pad_h,
                 p->s.stride_h < p->s.k_h ? "overlap: a cell can be the max of several" : "do not overlap");
    else
        snprintf(in, is, "the window at rows %lld.., columns %lld.. of a %lldx%lld plane; window %lldx%lld, stride %lld, "
                 "padding %lld", (long long)(h * p->s.stride_h - p->s.pad_h), (long long)(x * p->s.stride_w - p->s.pad_w),
                 (long long)p->s.H, (long long)p->s.W, (long long)p->s.k_h, (long long)p->s.k_w, (long long)p->s.stride_h,
                 (long long)p->s.pad_h);
}

/* The first maximum of a window (NaN wins), as a plane index; -1: all padding. */
static int64_t gpudl__chk_pool_arg(const gpudl_pool_shape *s, const float *xp, int64_t oh, int64_t ow) {
    int64_t i, j, arg = -1;
    for (i = 0; i < s->k_h; i++)
        for (j = 0; j < s->k_w; j++) {
            int64_t h = oh * s->stride_h - s->pad_h + i, w = ow * s->stride_w - s->pad_w + j;
            float v;
            if (h < 0 || h >= s->H || w < 0 || w >= s->W) continue;
            v = xp[h * s->W + w];
            if (arg < 0 || (v != v && xp[arg] == xp[arg]) || v > xp[arg]) arg = h * s->W + w;
        }
    return arg;
}

/* Random windows hold no ties: where a later cell equals its window's
   maximum, it moves down a float (and again, should that make a new tie);
   which of two equal cells gets the gradient is the zeros case's question
   (fill 2), not a coincidence of the seed's. */
static void gpudl__chk_pool_untie(const gpudl_pool_shape *s, float *x) {
    int64_t p, oh, ow, i, j, moved = 1;
    while (moved)
        for (moved = 0, p = 0; p < s->NC; p++)
            for (oh = 0; oh < s->Ho; oh++)
                for (ow = 0; ow < s->Wo; ow++) {
                    float *xp = x + p * s->H * s->W;
                    int64_t arg = gpudl__chk_pool_arg(s, xp, oh, ow);
                    for (i = 0; arg >= 0 && i < s->k_h; i++)
                        for (j = 0; j < s->k_w; j++) {
                            int64_t h = oh * s->stride_h - s->pad_h + i, w = ow * s->stride_w - s->pad_w + j;
                            if (h < 0 || h >= s->H || w < 0 || w >= s->W || h * s->W + w == arg) continue;
                            if (xp[h * s->W + w] == xp[arg] && isfinite(xp[arg])) {
                                xp[h * s->W + w] = nextafterf(xp[arg], -INFINITY);
                                moved = 1;
                            }
                        }
                }
}

/* fill: 0 random, 1 all negative, 2 zeros (ties: the first wins), 3 NaN
   and -Inf, 4 distinct values (finite differences) */
static gpudl_status gpudl__chk_pool_case(gpudl__chk *c, int backward, const char *group, int64_t NC, int64_t H, int64_t W,
                                         int64_t kk, int64_t st, int64_t pad, int fill) {
    gpudl_check_case *k = gpudl__chk_case(c, group, "%lld planes %lldx%lld, k%lld s%lld p%lld%s", (long long)NC, (long long)H,
                                          (long long)W, (long long)kk, (long long)st, (long long)pad,
                                          fill == 1 ? " negatives" : fill == 2 ? " zeros (ties)" : fill == 3 ? " NaN, -Inf" : "");
    gpudl__chk_pool p;
    gpudl_pool2d_desc d;
    int64_t Ho = (H + 2 * pad - kk) / st + 1, Wo = (W + 2 * pad - kk) / st + 1, n = NC * H * W, no, i, oh, ow, xs[4], ys[4];
    float *x, *dy, *got;
    double *want;
    gpudl_tensor *tx = NULL, *ty = NULL, *tdy = NULL, *tdx = NULL;
    gpudl_status s;
    if (!k) return GPUDL_OK;
    no = NC * Ho * Wo;
    x = (float *)GPUDL_MALLOC(sizeof(float) * (size_t)(2 * n + no));
    want = (double *)GPUDL_MALLOC(sizeof(double) * (size_t)n);
    if (!x || !want) { GPUDL_FREE(x); GPUDL_FREE(want); return GPUDL__ERR(c->ctx, GPUDL_ERR_OOM, "check: no host memory"); }
    got = x + n; dy = got + n;
    gpudl__chk_fill(c, x, n, -2.0f, 2.0f);
    gpudl__chk_fill(c, dy, no, -1.0f, 1.0f);
    for (i = 0; i < n; i++) {
        if (fill == 1) x[i] = -fabsf(x[i]) - 0.5f;
        else if (fill == 2) x[i] = 0.0f;
        else if (fill == 3) x[i] = i % 7 == 3 ? NAN : i % 5 == 1 ? -INFINITY : x[i];
        else if (fill == 4) x[i] = (float)((i * 7919) % n) * 0.01f;   /* a permutation: no ties */
    }
    memset(&p, 0, sizeof p);
    p.s.NC = NC; p.s.H = H; p.s.W = W; p.s.Ho = Ho; p.s.Wo = Wo; p.s.k_h = p.s.k_w = kk;
    p.s.stride_h = p.s.stride_w = st; p.s.pad_h = p.s.pad_w = pad;
    p.x = x; p.dy = dy; p.backward = backward;
    if (fill != 2) gpudl__chk_pool_untie(&p.s, x);
    for (i = 0; i < (backward ? n : no); i++) want[i] = 0.0;
    for (i = 0; i < NC; i++)
        for (oh = 0; oh < Ho; oh++)
            for (ow = 0; ow < Wo; ow++) {
                int64_t arg = gpudl__chk_pool_arg(&p.s, x + i * H * W, oh, ow), o = (i * Ho + oh) * Wo + ow;
                if (!backward) want[o] = arg < 0 ? -INFINITY : x[i * H * W + arg];
                else if (arg >= 0) want[i * H * W + arg] += dy[o];   /* fill 4: also what differences of the forward give */
            }
    memset(&d, 0, sizeof d);
    d.kind = GPUDL_POOL_MAX; d.k_h = d.k_w = kk; d.stride_h = d.stride_w = st; d.pad_h = d.pad_w = pad;
    xs[0] = NC; xs[1] = 1; xs[2] = H; xs[3] = W;
    ys[0] = NC; ys[1] = 1; ys[2] = Ho; ys[3] = Wo;
    s = gpudl__chk_tensor(c, GPUDL_F32, 4, xs, x, &tx);
    if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F32, 4, ys, backward ? dy : NULL, backward ? &tdy : &ty);
    if (s == GPUDL_OK && backward) s = gpudl__chk_tensor(c, GPUDL_F32, 4, xs, NULL, &tdx);
    if (s == GPUDL_OK) s = backward ? gpudl_pool2d_backward(c->ctx, tdx, tdy, tx, &d) : gpudl_pool2d_forward(c->ctx, ty, tx, &d);
    if (s == GPUDL_OK) s = gpudl_tensor_download(c->ctx, backward ? tdx : ty, got, sizeof(float) * (size_t)(backward ? n : no));
    if (s == GPUDL_OK) gpudl__chk_compare(c, k, got, want, NULL, backward ? n : no, gpudl__chk_pool_where, &p);
    GPUDL_FREE(x); GPUDL_FREE(want);
    return gpudl__chk_close(c, k, s);
}

static gpudl_status gpudl__chk_pool_all(gpudl__chk *c, int backward) {
    c->r->tol = 1e-6;
    GPUDL__TRY(gpudl__chk_pool_case(c, backward, "basic", 2, 8, 8, 2, 2, 0, 0));
    GPUDL__TRY(gpudl__chk_pool_case(c, backward, "odd sizes", 1, 1, 1, 1, 1, 0, 0));
    GPUDL__TRY(gpudl__chk_pool_case(c, backward, "odd sizes", 3, 7, 7, 2, 2, 0, 0));
    GPUDL__TRY(gpudl__chk_pool_case(c, backward, "odd sizes", 5, 13, 11, 3, 3, 1, 0));
    GPUDL__TRY(gpudl__chk_pool_case(c, backward, "odd sizes", 1, 5, 5, 5, 1, 0, 0));
    GPUDL__TRY(gpudl__chk_pool_case(c, backward, "values", 2, 9, 9, 3, 3, 1, 1));   /* padding must not win */
    GPUDL__TRY(gpudl__chk_pool_case(c, backward, "values", 2, 6, 6, 2, 2, 0, 2));   /* ties: the first maximum */
    GPUDL__TRY(gpudl__chk_pool_case(c, backward, "nan/inf", 2, 8, 8, 2, 2, 0, 3));
    if (backward) {
        GPUDL__TRY(gpudl__chk_pool_case(c, backward, "overlap", 3, 9, 9, 3, 1, 0, 0));
        GPUDL__TRY(gpudl__chk_pool_case(c, backward, "overlap", 2, 11, 11, 3, 2, 1, 0));
        GPUDL__TRY(gpudl__chk_pool_case(c, backward, "finite diff", 2, 7, 7, 3, 2, 0, 4));
    }
    return gpudl__chk_pool_case(c, backward, "large", 64, 32, 32, 2, 2, 0, 0);
}

/* Convolution forward: y (N,O,Ho,Wo). */
typedef struct gpudl__chk_conv { gpudl_conv_shape s; } gpudl__chk_conv;
static void gpudl__chk_conv_where(const void *kase, int64_t i, char *w, size_t ws, char *in, size_t is) {
    const gpudl_conv_shape *s = &((const gpudl__chk_conv *)kase)->s;
    int64_t n = i / (s->O * s->Ho * s->Wo), o = (i / (s->Ho * s->Wo)) % s->O, h = (i / s->Wo) % s->Ho, x = i % s->Wo;
    snprintf(w, ws, "y[%lld,%lld,%lld,%lld] (image %lld, output channel %lld)", (long long)n, (long long)o, (long long)h,
             (long long)x, (long long)n, (long long)o);
    snprintf(in, is, "C=%lld, kernel %lldx%lld, stride %lld, padding %lld, dilation %lld", (long long)s->C, (long long)s->k_h,
             (long long)s->k_w, (long long)s->stride_h, (long long)s->pad_h, (long long)s->dil_h);
}

static gpudl_status gpudl__chk_conv_case(gpudl__chk *c, const char *group, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O,
                                         int64_t kk, int64_t st, int64_t pad, int64_t dil, int bias, int fill) {
    gpudl_check_case *k = gpudl__chk_case(c, group, "N=%lld C=%lld %lldx%lld O=%lld k=%lld s=%lld p=%lld d=%lld%s", (long long)N,
                                          (long long)C, (long long)H, (long long)W, (long long)O, (long long)kk, (long long)st,
                                          (long long)pad, (long long)dil, bias ? "" : " no bias");
    gpudl__chk_conv cv;
    gpudl_conv_shape *g = &cv.s;
    gpudl_conv2d_desc d;
    int64_t nx, nw, ny, i, n, o, h, w, ci, a, b, xs[4], ws[4], ys[4];
    float *x, *wt, *bs, *got;
    double *want, *sc;
    gpudl_tensor *tx = NULL, *tw = NULL, *tb = NULL, *ty = NULL;
    gpudl_status s;
    if (!k) return GPUDL_OK;
    g->N = N; g->C = C; g->H = H; g->W = W; g->O = O; g->k_h = g->k_w = kk; g->stride_h = g->stride_w = st;
    g->pad_h = g->pad_w = pad; g->dil_h = g->dil_w = dil;
    g->Ho = (H + 2 * pad - dil * (kk - 1) - 1) / st + 1; g->Wo = (W + 2 * pad - dil * (kk - 1) - 1) / st + 1;
    nx = N * C * H * W; nw = O * C * kk * kk; ny = N * O * g->Ho * g->Wo;
    x = (float *)GPUDL_MALLOC(sizeof(float) * (size_t)(nx + nw + O + ny));
    want = (double *)GPUDL_MALLOC(sizeof(double) * (size_t)(2 * ny));
    if (!x || !want) { GPUDL_FREE(x); GPUDL_FREE(want); return GPUDL__ERR(c->ctx, GPUDL_ERR_OOM, "check: no host memory"); }
    wt = x + nx; bs = wt + nw; got = bs + O; sc = want + ny;
    gpudl__chk_fill(c, x, nx, -1.0f, 1.0f);
    gpudl__chk_fill(c, wt, nw, -1.0f, 1.0f);
    gpudl__chk_fill(c, bs, O, -1.0f, 1.0f);
    for (i = 0; i < nx; i++) {
        if (fill == 1) x[i] = -fabsf(x[i]);
        else if (fill == 2) x[i] *= 1e10f;
    }
    for (n = 0; n < N; n++)
        for (o = 0; o < O; o++)
            for (h = 0; h < g->Ho; h++)
                for (w = 0; w < g->Wo; w++) {
                    double acc = bias ? bs[o] : 0.0, mag = fabs(acc);
                    for (ci = 0; ci < C; ci++)
                        for (a = 0; a < kk; a++)
                            for (b = 0; b < kk; b++) {
                                int64_t hh = h * st - pad + a * dil, ww = w * st - pad + b * dil;
                                double t;
                                if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                                t = (double)x[((n * C + ci) * H + hh) * W + ww] * wt[((o * C + ci) * kk + a) * kk + b];
                                acc += t;
                                mag += fabs(t);
                            }
                    i = ((n * O + o) * g->Ho + h) * g->Wo + w;
                    want[i] = acc;
                    sc[i] = 1.0 + (mag == mag ? mag : 0.0);
                }
    memset(&d, 0, sizeof d);
    d.stride_h = d.stride_w = st; d.pad_h = d.pad_w = pad; d.dil_h = d.dil_w = dil;
    xs[0] = N; xs[1] = C; xs[2] = H; xs[3] = W;
    ws[0] = O; ws[1] = C; ws[2] = kk; ws[3] = kk;
    ys[0] = N; ys[1] = O; ys[2] = g->Ho; ys[3] = g->Wo;
    s = gpudl__chk_tensor(c, GPUDL_F32, 4, xs, x, &tx);
    if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F32, 4, ws, wt, &tw);
    if (s == GPUDL_OK && bias) s = gpudl__chk_t1(c, O, bs, &tb);
    if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F32, 4, ys, NULL, &ty);
    if (s == GPUDL_OK) s = gpudl_conv2d_forward(c->ctx, ty, tx, tw, tb, &d);
    if (s == GPUDL_OK) s = gpudl_tensor_download(c->ctx, ty, got, sizeof(float) * (size_t)ny);
    if (s == GPUDL_OK) gpudl__chk_compare(c, k, got, want, sc, ny, gpudl__chk_conv_where, &cv);
    GPUDL_FREE(x); GPUDL_FREE(want);
    return gpudl__chk_close(c, k, s);
}

static gpudl_status gpudl__chk_conv_all(gpudl__chk *c) {
    c->r->tol = 1e-5;
    GPUDL__TRY(gpudl__chk_conv_case(c, "basic", 2, 3, 8, 8, 4, 3, 1, 0, 1, 1, 0));
    GPUDL__TRY(gpudl__chk_conv_case(c, "basic", 2, 3, 8, 8, 4, 3, 1, 1, 1, 0, 0));
    GPUDL__TRY(gpudl__chk_conv_case(c, "odd sizes", 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0));
    GPUDL__TRY(gpudl__chk_conv_case(c, "odd sizes", 3, 2, 7, 9, 5, 3, 2, 1, 1, 1, 0));
    GPUDL__TRY(gpudl__chk_conv_case(c, "odd sizes", 1, 1, 5, 5, 1, 5, 1, 0, 1, 1, 0));
    GPUDL__TRY(gpudl__chk_conv_case(c, "odd sizes", 2, 3, 11, 10, 3, 3, 1, 2, 2, 1, 0));
    GPUDL__TRY(gpudl__chk_conv_case(c, "values", 2, 2, 6, 6, 3, 3, 1, 1, 1, 1, 1));
    GPUDL__TRY(gpudl__chk_conv_case(c, "values", 2, 2, 6, 6, 3, 3, 1, 1, 1, 1, 2));
    return gpudl__chk_conv_case(c, "large", 8, 16, 16, 16, 32, 3, 1, 1, 1, 1, 0);
}

/* Optimizer updates: the outputs are w, then m (momentum / first moment), then v. */
typedef struct gpudl__chk_opt { int64_t n; const float *w, *g; int nout; } gpudl__chk_opt;
static void gpudl__chk_opt_where(const void *kase, int64_t i, char *w, size_t ws, char *in, size_t is) {
    const gpudl__chk_opt *o = (const gpudl__chk_opt *)kase;
    static const char *names[3] = {"w", "m", "v"};
    int64_t j = i % o->n;
    snprintf(w, ws, "%s[%lld] after the step", names[i / o->n], (long long)j);
    snprintf(in, is, "w = %.9g, g = %.9g before the step", (double)o->w[j], (double)o->g[j]);
}

/* fill: 0 random, 1 zero gradients, 2 large gradients, 3 a NaN gradient */
static gpudl_status gpudl__chk_opt_case(gpudl__chk *c, int adam, const char *group, int64_t n, float lr, float mom, float wd,
                                        int nesterov, int decoupled, int64_t t, int fill) {
    gpudl_check_case *k = gpudl__chk_case(c, group, "n=%lld lr=%g%s%s%s step %lld", (long long)n, (double)lr,
                                          mom > 0 ? " momentum" : "", nesterov ? " nesterov" : "",
                                          wd > 0 ? (decoupled ? " decoupled wd" : " wd") : "", (long long)t);
    const gpudl_ops *ops = &c->ctx->ops[c->ctx->device == GPUDL_DEVICE_CUDA];
    int nout = adam ? 3 : mom > 0 ? 2 : 1, done = 0;
    float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, *w, *g, *st, *got;
    double *want;
    int64_t i;
    gpudl_tensor *tw = NULL, *tg = NULL, *tm = NULL, *tv = NULL;
    gpudl__chk_opt ok;
    gpudl_status s;
    if (!k) return GPUDL_OK;
    w = (float *)GPUDL_MALLOC(sizeof(float) * (size_t)(7 * n));
    want = (double *)GPUDL_MALLOC(sizeof(double) * (size_t)(3 * n));
    if (!w || !want) { GPUDL_FREE(w); GPUDL_FREE(want); return GPUDL__ERR(c->ctx, GPUDL_ERR_OOM, "check: no host memory"); }
    g = w + n; st = g + n; got = st + 2 * n;
    gpudl__chk_fill(c, w, n, -1.0f, 1.0f);
    gpudl__chk_fill(c, g, n, -1.0f, 1.0f);
    gpudl__chk_fill(c, st, n, -0.1f, 0.1f);
    gpudl__chk_fill(c, st + n, n, 0.0f, 0.01f);   /* v >= 0 */
    if (t == 1) for (i = 0; i < 2 * n; i++) st[i] = 0.0f;   /* a first step starts from zero state */
    for (i = 0; i < n; i++) {
        if (fill == 1) g[i] = 0.0f;
        else if (fill == 2) g[i] *= 1e15f;
    }
    if (fill == 3) g[n / 2] = NAN;
    for (i = 0; i < n; i++) {   /* the float64 reference: the formulas of gpudl_ops */
        double x = w[i], gg = g[i], m = st[i], v = st[n + i];
        if (!adam) {
            gg += (double)wd * x;
            if (mom > 0) { m = mom * m + gg; x -= lr * (nesterov ? gg + mom * m : m); }
            else x -= lr * gg;
        } else {
            if (decoupled) x -= (double)lr * wd * x;
            else gg += (double)wd * x;
            m = b1 * m + (1.0 - b1) * gg;
            v = b2 * v + (1.0 - b2) * gg * gg;
            x -= lr * (m / (1.0 - pow(b1, (double)t))) / (sqrt(v / (1.0 - pow(b2, (double)t))) + eps);
        }
        want[i] = x; want[n + i] = m; want[2 * n + i] = v;
    }
    s = gpudl__chk_t1(c, n, w, &tw);
    if (s == GPUDL_OK) s = gpudl__chk_t1(c, n, g, &tg);
    if (s == GPUDL_OK && nout > 1) s = gpudl__chk_t1(c, n, st, &tm);
    if (s == GPUDL_OK && nout > 2) s = gpudl__chk_t1(c, n, st + n, &tv);
    if (s == GPUDL_OK && (adam ? ops->adam_update != NULL : ops->sgd_update != NULL)) {   /* the user's */
        void *stream = gpudl__stream_for(c->ctx, tw);
        float *pm = tm ? (float *)tm->data : NULL, *pv = tv ? (float *)tv->data : NULL;
        s = adam ? ops->adam_update(ops->user, stream, (float *)tw->data, (const float *)tg->data, pm, pv, n, lr, b1, b2, eps, wd,
                                    decoupled, t)
                 : ops->sgd_update(ops->user, stream, (float *)tw->data, (const float *)tg->data, pm, n, lr, mom, wd, nesterov);
        s = gpudl__ovr_result(c->ctx, s, adam ? "adam_update" : "sgd_update", &done);
    }
    if (s == GPUDL_OK && !done) {   /* gpudl's own update, as gpudl_model_step runs it */
        gpudl_optim_hp h;
        memset(&h, 0, sizeof h);
        h.kind = adam ? (decoupled ? GPUDL_OPTIM_ADAMW : GPUDL_OPTIM_ADAM) : GPUDL_OPTIM_SGD;
        h.nesterov = nesterov; h.first = t == 1; h.lr = lr; h.momentum = mom; h.weight_decay = wd;
        h.beta1 = b1; h.beta2 = b2; h.eps = eps;
        h.bc1 = 1.0f - (float)pow(b1, (double)t); h.bc2 = 1.0f - (float)pow(b2, (double)t);
#ifndef GPUDL_NO_CUDA
        if (GPUDL__ON_GPU(tw))
            s = gpudl__launched(c->ctx, gpudl_k_optim(c->ctx->stream, h, (float *)tw->data, (const float *)tg->data,
                                                      tm ? (float *)tm->data : NULL, tv ? (float *)tv->data : NULL, n, NULL, NULL,
                                                      NULL, 0), "gpudl_k_optim", __FILE__, __LINE__);
        else
#endif
        {
            float *pw = (float *)tw->data, *pg = (float *)tg->data, *pm = tm ? (float *)tm->data : pg, *pv = tv ? (float *)tv->data : pg;
            for (i = 0; i < n; i++) {
                float mi = pm[i], vi = pv[i];
                gpudl_optim_update(&h, &pw[i], pg[i], &mi, &vi);
                if (tm) pm[i] = mi;
                if (tv) pv[i] = vi;
            }
        }
    }
    if (s == GPUDL_OK) s = gpudl_tensor_download(c->ctx, tw, got, sizeof(float) * (size_t)n);
    if (s == GPUDL_OK && tm) s = gpudl_tensor_download(c->ctx, tm, got + n, sizeof(float) * (size_t)n);
    if (s == GPUDL_OK && tv) s = gpudl_tensor_download(c->ctx, tv, got + 2 * n, sizeof(float) * (size_t)n);
    if (s == GPUDL_OK) {
        ok.n = n; ok.w = w; ok.g = g; ok.nout = nout;
        gpudl__chk_compare(c, k, got, want, NULL, nout * n, gpudl__chk_opt_where, &ok);
    }
    GPUDL_FREE(w); GPUDL_FREE(want);
    return gpudl__chk_close(c, k, s);
}

static gpudl_status gpudl__chk_opt_all(gpudl__chk *c, int adam) {
    c->r->tol = 1e-5;
    GPUDL__TRY(gpudl__chk_opt_case(c, adam, "basic", 100, 0.1f, 0.0f, 0.0f, 0, 0, 1, 0));
    GPUDL__TRY(gpudl__chk_opt_case(c, adam, "odd sizes", 1, 0.05f, 0.9f, 0.0f, 0, 0, 3, 0));
    GPUDL__TRY(gpudl__chk_opt_case(c, adam, "odd sizes", 7, 0.05f, 0.9f, 0.0f, 0, 0, 3, 0));
    GPUDL__TRY(gpudl__chk_opt_case(c, adam, "odd sizes", 1025, 0.05f, 0.9f, 0.0f, 0, 0, 3, 0));
    if (!adam) {
        GPUDL__TRY(gpudl__chk_opt_case(c, adam, "momentum", 300, 0.1f, 0.9f, 0.0f, 0, 0, 5, 0));
        GPUDL__TRY(gpudl__chk_opt_case(c, adam, "momentum", 300, 0.1f, 0.5f, 0.0f, 1, 0, 5, 0));
    } else {
        GPUDL__TRY(gpudl__chk_opt_case(c, adam, "bias correction", 300, 1e-3f, 0.0f, 0.0f, 0, 0, 10, 0));
        GPUDL__TRY(gpudl__chk_opt_case(c, adam, "weight decay", 300, 1e-3f, 0.0f, 0.01f, 0, 1, 4, 0));
    }
    GPUDL__TRY(gpudl__chk_opt_case(c, adam, "weight decay", 300, 0.01f, adam ? 0.0f : 0.9f, 0.01f, 0, 0, 4, 0));
    GPUDL__TRY(gpudl__chk_opt_case(c, adam, "values", 64, 0.1f, 0.9f, 0.0f, 0, 0, 2, 1));
    GPUDL__TRY(gpudl__chk_opt_case(c, adam, "values", 64, 1e-3f, 0.9f, 0.0f, 0, 0, 2, 2));
    GPUDL__TRY(gpudl__chk_opt_case(c, adam, "nan/inf", 33, 0.1f, 0.9f, 0.0f, 0, 0, 2, 3));
    return gpudl__chk_opt_case(c, adam, "large", (int64_t)1 << 18, 0.01f, 0.9f, 0.0f, 0, 0, 2, 0);
}

/* The causal softmax over attention scores: att (L,T,T), backward ds
   (L,T,T); and the whole attention with the override installed (odd head
   sizes): y (B,T,C) then att (B,NH,T,T), backward dqkv (B,T,3C). */
typedef struct gpudl__chk_attn {
    int64_t L, T, B, NH, HS;
    const float *s, *dp;   /* the softmax's scores (forward) or dp (backward); NULL for the whole attention */
    int backward, whole;
} gpudl__chk_attn;
static void gpudl__chk_attn_where(const void *kase, int64_t i, char *w, size_t ws, char *in, size_t is) {
    const gpudl__chk_attn *a = (const gpudl__chk_attn *)kase;
    int64_t T = a->T, C = a->NH * a->HS, l, t, j;
    float mn = INFINITY, mx = -INFINITY;
    if (a->whole && (a->backward || i < a->B * T * C)) {
        int64_t per = a->backward ? 3 * C : C, b = i / (T * per), ch = i % per, part = ch / C;
        t = (i / per) % T;
        snprintf(w, ws, "%s[%lld,%lld,%lld] (batch %lld, position %lld, head %lld, channel %lld of %lld)",
                 a->backward ? (part == 0 ? "dq" : part == 1 ? "dk" : "dv") : "y", (long long)b, (long long)t, (long long)(ch % C),
                 (long long)b, (long long)t, (long long)((ch % C) / a->HS), (long long)(ch % a->HS), (long long)a->HS);
        snprintf(in, is, "B=%lld T=%lld NH=%lld HS=%lld through gpudl_attention_%s with your %s", (long long)a->B, (long long)T,
                 (long long)a->NH, (long long)a->HS, a->backward ? "backward" : "forward",
                 a->backward ? "ds (att from the reference)" : "att");
        return;
    }
    if (a->whole) i -= a->B * T * C;
    l = i / (T * T); t = (i / T) % T; j = i % T;
    snprintf(w, ws, "%s[%lld,%lld,%lld] (matrix %lld, row %lld, column %lld%s)", a->backward ? "ds" : "att", (long long)l,
             (long long)t, (long long)j, (long long)l, (long long)t, (long long)j,
             j > t ? ": above the diagonal, masked, must be exactly 0" : "");
    if (a->whole || (!a->s && !a->dp)) {
        snprintf(in, is, "B=%lld T=%lld NH=%lld HS=%lld through gpudl_attention_forward", (long long)a->B, (long long)T,
                 (long long)a->NH, (long long)a->HS);
        return;
    }
    for (l = 0; l <= t; l++) {
        float v = (a->backward ? a->dp : a->s)[(i / T) * T + l];
        mn = v < mn ? v : mn; mx = v > mx ? v : mx;
    }
    snprintf(in, is, "row %lld of T = %lld: %s from %.6g to %.6g over columns 0..%lld", (long long)t, (long long)T,
             a->backward ? "dp" : "scores", (double)mn, (double)mx, (long long)t);
}

/* fill: 0 random scores in [-3, 3] (above the diagonal too, as the GEMM
   leaves them), 1 the causal mask (above the diagonal: NaN, 1e4 or Inf),
   2 large scores (each row near +1e4 or -1e4), 3 finite differences
   (backward: att is the forward's, the override's when installed). */
static gpudl_status gpudl__chk_attn_case(gpudl__chk *c, int backward, const char *group, int64_t L, int64_t T, int fill) {
    gpudl_check_case *k = gpudl__chk_case(c, group, "L=%lld T=%lld%s", (long long)L, (long long)T,
                                          fill == 1 ? (backward ? " dp NaN/Inf masked" : " scores NaN/1e4 masked")
                                          : fill == 2 ? " scores +-1e4" : "");
    int64_t n = L * T * T, i, r, j, shape[3];
    float *sc, *p, *dp, *got, *att2;
    double *want, *scl, h = 1e-2;
    gpudl_tensor *ts = NULL, *ta = NULL, *td = NULL, *to = NULL;
    gpudl__chk_attn ak;
    gpudl_status s;
    int on_gpu;
    if (!k) return GPUDL_OK;
    sc = (float *)GPUDL_MALLOC(sizeof(float) * 5 * (size_t)n);
    want = (double *)GPUDL_MALLOC(sizeof(double) * 2 * (size_t)n);
    if (!sc || !want) { GPUDL_FREE(sc); GPUDL_FREE(want); return GPUDL__ERR(c->ctx, GPUDL_ERR_OOM, "check: no host memory"); }
    p = sc + n; dp = p + n; got = dp + n; att2 = got + n; scl = want + n;
    gpudl__chk_fill(c, sc, n, -3.0f, 3.0f);
    gpudl__chk_fill(c, dp, n, -1.0f, 1.0f);
    for (i = 0; i < n; i++) {
        int64_t t = (i / T) % T;
        j = i % T;
        if (fill == 2) sc[i] += (i / T) % 2 ? 1e4f : -1e4f;   /* exp(1e4) is Inf: the max must be subtracted */
        if (fill == 1 && j > t) {
            if (backward) dp[i] = t % 2 ? NAN : INFINITY;   /* 0 * NaN is NaN: a masked entry must not be read */
            else sc[i] = t % 3 == 0 ? NAN : t % 3 == 1 ? 1e4f : 30.0f + sc[i];
        }
    }
    for (r = 0; r < L * T; r++) {   /* the float64 reference softmax */
        int64_t t = r % T;
        double mx = sc[r * T], sum = 0;
        for (j = 1; j <= t; j++) mx = sc[r * T + j] > mx ? sc[r * T + j] : mx;
        for (j = 0; j <= t; j++) sum += exp((double)sc[r * T + j] - mx);
        for (j = 0; j < T; j++) {
            double pr = j <= t ? exp((double)sc[r * T + j] - mx) / sum : 0.0;
            p[r * T + j] = (float)pr;
            want[r * T + j] = pr;
            scl[r * T + j] = j <= t ? 1.0 + pr : 0.0;   /* masked: exactly 0 */
        }
    }
    shape[0] = L; shape[1] = T; shape[2] = T;
    s = gpudl__chk_tensor(c, GPUDL_F32, 3, shape, backward ? dp : sc, &ts);   /* the input: scores, or dp */
    if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F32, 3, shape, backward && fill != 3 ? p : NULL, &ta);
    if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F32, 3, shape, NULL, &to);
    on_gpu = s == GPUDL_OK && GPUDL__ON_GPU(ts);
    if (s == GPUDL_OK && fill == 3) {   /* att = the forward of sc; want = central differences of sum_j dp att */
        s = gpudl__chk_tensor(c, GPUDL_F32, 3, shape, sc, &td);
        if (s == GPUDL_OK) s = gpudl__attn_softmax(c->ctx, on_gpu, (float *)ta->data, (const float *)td->data, L, T);
        if (s == GPUDL_OK) s = gpudl_tensor_download(c->ctx, ta, p, sizeof(float) * (size_t)n);
        for (i = 0; i < n && s == GPUDL_OK; i++)   /* a forward that gives NaN leaves nothing to compare with: the case fails */
            if (!isfinite(p[i]))
                s = GPUDL__ERR(c->ctx, GPUDL_ERR_NONFINITE, "the finite differences take the forward installed, which gave %g "
                               "at att[%lld] (row %lld, column %lld): make the forward pass first", (double)p[i],
                               (long long)i, (long long)(i / T), (long long)(i % T));
        for (i = 0; i < n; i++) want[i] = 0.0;
        for (j = 0; j < T && s == GPUDL_OK; j++) {   /* column j of every row moved at once: the rows are independent */
            int sign;
            for (sign = 1; sign >= -1 && s == GPUDL_OK; sign -= 2) {
                for (r = 0; r < L * T; r++) att2[r * T + j] = sc[r * T + j];
                for (r = 0; r < L * T; r++) sc[r * T + j] = att2[r * T + j] + (float)(sign * h);
                s = gpudl_tensor_upload(c->ctx, td, sc, sizeof(float) * (size_t)n);
                for (r = 0; r < L * T; r++) sc[r * T + j] = att2[r * T + j];
                if (s == GPUDL_OK) s = gpudl__attn_softmax(c->ctx, on_gpu, (float *)to->data, (const float *)td->data, L, T);
                if (s == GPUDL_OK) s = gpudl_tensor_download(c->ctx, to, got, sizeof(float) * (size_t)n);
                for (r = 0; r < L * T && s == GPUDL_OK; r++) {
                    double acc = 0;
                    int64_t m;
                    for (m = 0; m < T; m++) acc += (double)dp[r * T + m] * got[r * T + m];
                    want[r * T + j] += sign * acc / (2 * h);
                }
            }
        }
        for (i = 0; i < n; i++) scl[i] = 1.0 + fabs(want[i]);
        c->r->tol = 1e-3;
        if (s == GPUDL_OK) s = gpudl_tensor_fill(c->ctx, to, NAN);   /* the output starts as NaN again */
    } else if (backward)
        for (r = 0; r < L * T; r++) {   /* ds = p (dp - sum p dp) with the float p given */
            int64_t t = r % T;
            double dot = 0;
            for (j = 0; j <= t; j++) dot += (double)p[r * T + j] * dp[r * T + j];
            for (j = 0; j < T; j++) {
                want[r * T + j] = j <= t ? (double)p[r * T + j] * ((double)dp[r * T + j] - dot) : 0.0;
                scl[r * T + j] = j <= t ? 1.0 + fabs(want[r * T + j]) : 0.0;
            }
        }
    if (s == GPUDL_OK)
        s = backward ? gpudl__attn_softmax_bwd(c->ctx, on_gpu, (float *)to->data, (const float *)ts->data, (const float *)ta->data, L, T)
                     : gpudl__attn_softmax(c->ctx, on_gpu, (float *)to->data, (const float *)ts->data, L, T);
    if (s == GPUDL_OK) s = gpudl_tensor_download(c->ctx, to, got, sizeof(float) * (size_t)n);
    if (s == GPUDL_OK) {
        memset(&ak, 0, sizeof ak);
        ak.L = L; ak.T = T; ak.s = sc; ak.dp = dp; ak.backward = backward;
        gpudl__chk_compare(c, k, got, want, scl, n, gpudl__chk_attn_where, &ak);
    }
    c->r->tol = 1e-5;
    GPUDL_FREE(sc); GPUDL_FREE(want);
    return gpudl__chk_close(c, k, s);
}

/* The whole attention through gpudl_attention_forward / _backward, which
   call the override: heads of odd sizes, against a float64 attention. */
static gpudl_status gpudl__chk_attn_whole(gpudl__chk *c, int backward, const char *group, int64_t B, int64_t T, int64_t NH,
                                          int64_t HS) {
    gpudl_check_case *k = gpudl__chk_case(c, group, "B=%lld T=%lld NH=%lld HS=%lld", (long long)B, (long long)T, (long long)NH,
                                          (long long)HS);
    int64_t C = NH * HS, nq = B * T * 3 * C, ny = B * T * C, na = B * NH * T * T, nout = backward ? nq : ny + na;
    int64_t b, h, t, j, d, shq[3], shy[3], sha[4];
    float *qkv, *dy, *pf, *got;
    double *want, *scl, *sj, scale = 1.0 / sqrt((double)HS);
    gpudl_tensor *tq = NULL, *ty = NULL, *ta = NULL, *tdq = NULL;
    gpudl__chk_attn ak;
    gpudl_status s;
    if (!k) return GPUDL_OK;
    qkv = (float *)GPUDL_MALLOC(sizeof(float) * (size_t)(nq + ny + na + nout));
    want = (double *)GPUDL_MALLOC(sizeof(double) * (size_t)(2 * nout + T));
    if (!qkv || !want) { GPUDL_FREE(qkv); GPUDL_FREE(want); return GPUDL__ERR(c->ctx, GPUDL_ERR_OOM, "check: no host memory"); }
    dy = qkv + nq; pf = dy + ny; got = pf + na; scl = want + nout; sj = scl + nout;
    gpudl__chk_fill(c, qkv, nq, -1.0f, 1.0f);
    gpudl__chk_fill(c, dy, ny, -1.0f, 1.0f);
    for (j = 0; j < nout; j++) want[j] = 0.0;
    for (b = 0; b < B; b++)
        for (h = 0; h < NH; h++)
            for (t = 0; t < T; t++) {   /* the float64 attention of row (b, h, t) */
                const float *q = qkv + (b * T + t) * 3 * C + h * HS;
                double mx = -INFINITY, sum = 0, dot = 0;
                float *pr = pf + ((b * NH + h) * T + t) * T;
                for (j = 0; j <= t; j++) {
                    const float *kk = qkv + (b * T + j) * 3 * C + C + h * HS;
                    double a = 0;
                    for (d = 0; d < HS; d++) a += (double)q[d] * kk[d];
                    sj[j] = a * scale;
                    mx = sj[j] > mx ? sj[j] : mx;
                }
                for (j = 0; j <= t; j++) sum += exp(sj[j] - mx);
                for (j = 0; j < T; j++) pr[j] = j <= t ? (float)(exp(sj[j] - mx) / sum) : 0.0f;
                if (!backward) {
                    double *yo = want + (b * T + t) * C + h * HS, *po = want + ny + ((b * NH + h) * T + t) * T;
                    for (j = 0; j < T; j++) po[j] = j <= t ? exp(sj[j] - mx) / sum : 0.0;
                    for (j = 0; j <= t; j++)
                        for (d = 0; d < HS; d++) yo[d] += po[j] * qkv[(b * T + j) * 3 * C + 2 * C + h * HS + d];
                    continue;
                }
                {   /* backward with the float att given: dv += p dy; ds = p (dp - dot); dq, dk += ds k, ds q / sqrt(HS) */
                    const float *dyt = dy + (b * T + t) * C + h * HS;
                    double *dq = want + (b * T + t) * 3 * C + h * HS;
                    for (j = 0; j <= t; j++) {
                        const float *v = qkv + (b * T + j) * 3 * C + 2 * C + h * HS;
                        double a = 0;
                        for (d = 0; d < HS; d++) a += (double)dyt[d] * v[d];
                        sj[j] = a;   /* dp_j */
                        dot += (double)pr[j] * a;
                    }
                    for (j = 0; j <= t; j++) {
                        const float *kk = qkv + (b * T + j) * 3 * C + C + h * HS;
                        double *dk = want + (b * T + j) * 3 * C + C + h * HS, *dv = dk + C, ds = (double)pr[j] * (sj[j] - dot) * scale;
                        for (d = 0; d < HS; d++) { dq[d] += ds * kk[d]; dk[d] += ds * q[d]; dv[d] += (double)pr[j] * dyt[d]; }
                    }
                }
            }
    for (j = 0; j < nout; j++) scl[j] = 1.0 + fabs(want[j]);
    if (!backward)
        for (j = 0; j < na; j++) scl[ny + j] = j % T > (j / T) % T ? 0.0 : scl[ny + j];   /* masked att: exactly 0 */
    shq[0] = shy[0] = sha[0] = B; shq[1] = shy[1] = sha[2] = sha[3] = T; shq[2] = 3 * C; shy[2] = C; sha[1] = NH;
    s = gpudl__chk_tensor(c, GPUDL_F32, 3, shq, qkv, &tq);
    if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F32, 3, shy, backward ? dy : NULL, &ty);
    if (s == GPUDL_OK) s = gpudl__chk_tensor(c, GPUDL_F32, 4, sha, backward ? pf : NULL, &ta);
    if (s == GPUDL_OK && backward) s = gpudl__chk_tensor(c, GPUDL_F32, 3, shq, NULL, &tdq);
    if (s == GPUDL_OK) s = backward ? gpudl_attention_backward(c->ctx, tdq, ty, tq, ta, NH) : gpudl_attention_forward(c->ctx, ty, ta, tq, NH);
    if (s == GPUDL_OK && backward) s = gpudl_tensor_download(c->ctx, tdq, got, sizeof(float) * (size_t)nq);
    if (s == GPUDL_OK && !backward) s = gpudl_tensor_download(c->ctx, ty, got, sizeof(float) * (size_t)ny);
    if (s == GPUDL_OK && !backward) s = gpudl_tensor_download(c->ctx, ta, got + ny, sizeof(float) * (size_t)na);
    if (s == GPUDL_OK) {
        memset(&ak, 0, sizeof ak);
        ak.B = B; ak.T = T; ak.NH = NH; ak.HS = HS; ak.L = B * NH; ak.backward = backward; ak.whole = 1;
        gpudl__chk_compare(c, k, got, want, scl, nout, gpudl__chk_attn_where, &ak);
    }
    GPUDL_FREE(qkv); GPUDL_FREE(want);
    return gpudl__chk_close(c, k, s);
}

static gpudl_status gpudl__chk_attn_all(gpudl__chk *c, int backward) {
    static const int64_t odd[][2] = {{1, 1}, {3, 7}, {5, 33}, {2, 65}};
    static const int64_t heads[][4] = {{2, 7, 3, 5}, {1, 33, 2, 1}, {3, 5, 1, 13}};
    size_t i;
    uint64_t keep;
    c->r->tol = 1e-5;
    GPUDL__TRY(gpudl__chk_attn_case(c, backward, "basic", 4, 16, 0));
    GPUDL__TRY(gpudl__chk_attn_case(c, backward, "causal mask", 3, 37, 1));
    for (i = 0; i < sizeof odd / sizeof odd[0]; i++) GPUDL__TRY(gpudl__chk_attn_case(c, backward, "odd sizes", odd[i][0], odd[i][1], 0));
    GPUDL__TRY(gpudl__chk_attn_case(c, backward, "large scores", 2, 40, 2));
    keep = gpudl__chk_fork(c, 1);   /* a long row of large scores: the max subtracted on the long rows' path too */
    GPUDL__TRY(gpudl__chk_join(c, keep, gpudl__chk_attn_case(c, backward, "large scores", 1, 1100, 2)));
    GPUDL__TRY(gpudl__chk_attn_case(c, backward, "long rows", 1, 1100, 0));
    GPUDL__TRY(gpudl__chk_attn_case(c, backward, "long rows", 1, 2049, 0));
    if (backward) {
        GPUDL__TRY(gpudl__chk_attn_case(c, backward, "finite diff", 2, 9, 3));
        GPUDL__TRY(gpudl__chk_attn_case(c, backward, "finite diff", 1, 33, 3));
    }
    for (i = 0; i < sizeof heads / sizeof heads[0]; i++)
        GPUDL__TRY(gpudl__chk_attn_whole(c, backward, "odd head sizes", heads[i][0], heads[i][1], heads[i][2], heads[i][3]));
    return GPUDL_OK;
}

static const char *gpudl__fill_name(int fill) {   /* the values of a case, for its description */
    static const char *names[] = {"", " zeros", " negatives", " large values", " subnormals", " NaN, Inf", ""};
    return fill >= 0 && fill < 7 ? names[fill] : "";
}

static const char *gpudl__op_name(gpudl_op op) {
    switch (op) {
    case GPUDL_OP_GEMM:             return "gemm";
    case GPUDL_OP_ACT_FORWARD:      return "act_forward";
    case GPUDL_OP_ACT_BACKWARD:     return "act_backward";
    case GPUDL_OP_XENT_FORWARD:     return "softmax_xent_forward";
    case GPUDL_OP_XENT_BACKWARD:    return "softmax_xent_backward";
    case GPUDL_OP_MAXPOOL_FORWARD:  return "maxpool_forward";
    case GPUDL_OP_MAXPOOL_BACKWARD: return "maxpool_backward";
    case GPUDL_OP_CONV2D_FORWARD:   return "conv2d_forward";
    case GPUDL_OP_SGD_UPDATE:       return "sgd_update";
    case GPUDL_OP_ADAM_UPDATE:      return "adam_update";
    case GPUDL_OP_ATTN_SOFTMAX_FORWARD:  return "attn_softmax_forward";
    case GPUDL_OP_ATTN_SOFTMAX_BACKWARD: return "attn_softmax_backward";
    case GPUDL_OP_GEMM_F16:         return "gemm_f16";
    default:                        return NULL;
    }
}

/* Whether the context has the user's function for op on its device. */
#ifndef GPUDL_NO_CUDA
static int gpudl__op_overridden(const gpudl_ctx *ctx, gpudl_op op) {
    const gpudl_ops *o = &ctx->ops[ctx->device == GPUDL_DEVICE_CUDA];
    switch (op) {
    case GPUDL_OP_GEMM:             return o->gemm != NULL;
    case GPUDL_OP_ACT_FORWARD:      return o->act_forward != NULL;
    case GPUDL_OP_ACT_BACKWARD:     return o->act_backward != NULL;
    case GPUDL_OP_XENT_FORWARD:     return o->softmax_xent_forward != NULL;
    case GPUDL_OP_XENT_BACKWARD:    return o->softmax_xent_backward != NULL;
    case GPUDL_OP_MAXPOOL_FORWARD:  return o->maxpool_forward != NULL;
    case GPUDL_OP_MAXPOOL_BACKWARD: return o->maxpool_backward != NULL;
    case GPUDL_OP_CONV2D_FORWARD:   return o->conv2d_forward != NULL;
    case GPUDL_OP_SGD_UPDATE:       return o->sgd_update != NULL;
    case GPUDL_OP_ATTN_SOFTMAX_FORWARD:  return o->attn_softmax_forward != NULL;
    case GPUDL_OP_ATTN_SOFTMAX_BACKWARD: return o->attn_softmax_backward != NULL;
    case GPUDL_OP_GEMM_F16:         return o->gemm_f16 != NULL;
    default:                        return o->adam_update != NULL;
    }
}
#endif

GPUDL__DEF gpudl_status gpudl_check_op(gpudl_ctx *ctx, gpudl_op op, gpudl_act act, gpudl_check_report *r) {
    gpudl__chk c;
    gpudl_math_mode mode;
    gpudl_status s;
    GPUDL__ENTER(ctx);
    if (!r) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "check_op: r is NULL");
    memset(r, 0, sizeof *r);
    r->op = op;
    r->first_case = -1;
    if (!gpudl__op_name(op)) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "check_op: %d is not a gpudl_op", (int)op);
    if (act == 0) act = GPUDL_ACT_RELU;
    if (act < GPUDL_ACT_RELU || act > GPUDL_ACT_SIGMOID)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "check_op: %d is not a gpudl_act", (int)act);
    memset(&c, 0, sizeof c);
    c.ctx = ctx;
    c.r = r;
    c.act = act;
    /* the battery's random inputs, from the context's seed; the default
       seed (0x5EED) keeps the inputs this constant has always given */
    c.seed = 0x5eedc0deull + (uint64_t)op;
    if (ctx->rng_seed != 0x5EEDu) c.seed = gpudl_rng_bits(ctx->rng_seed, c.seed);
    mode = ctx->math_mode;
    ctx->math_mode = GPUDL_MATH_FP32;   /* a reference to FP32's accuracy: no TF32 in gpudl's own GEMM */
    ctx->ovr_calls[0] = ctx->ovr_calls[1] = 0;
    switch (op) {
    case GPUDL_OP_GEMM:             s = gpudl__chk_gemm_all(&c); break;
    case GPUDL_OP_ACT_FORWARD:      s = gpudl__chk_act_all(&c, 0); break;
    case GPUDL_OP_ACT_BACKWARD:     s = gpudl__chk_act_all(&c, 1); break;
    case GPUDL_OP_XENT_FORWARD:     s = gpudl__chk_xent_all(&c, 0); break;
    case GPUDL_OP_XENT_BACKWARD:    s = gpudl__chk_xent_all(&c, 1); break;
    case GPUDL_OP_MAXPOOL_FORWARD:  s = gpudl__chk_pool_all(&c, 0); break;
    case GPUDL_OP_MAXPOOL_BACKWARD: s = gpudl__chk_pool_all(&c, 1); break;
    case GPUDL_OP_CONV2D_FORWARD:   s = gpudl__chk_conv_all(&c); break;
    case GPUDL_OP_SGD_UPDATE:       s = gpudl__chk_opt_all(&c, 0); break;
    case GPUDL_OP_ATTN_SOFTMAX_FORWARD:  s = gpudl__chk_attn_all(&c, 0); break;
    case GPUDL_OP_ATTN_SOFTMAX_BACKWARD: s = gpudl__chk_attn_all(&c, 1); break;
    case GPUDL_OP_GEMM_F16:         s = gpudl__chk_gemm_f16_all(&c); break;
    default:                        s = gpudl__chk_opt_all(&c, 1); break;
    }
    gpudl__chk_release(&c);
    ctx->math_mode = mode;
    r->override_calls = ctx->ovr_calls[0];
    r->override_declined = ctx->ovr_calls[1];
    r->passed = s == GPUDL_OK && r->ncases > 0 && r->nfailed == 0;
    return s;
}

/* What a failing group usually means, in a student's words. */
static const char *gpudl__check_hint(gpudl_op op, const char *group) {
    static const struct { const char *group, *hint; } hints[] = {
        {"basic", "small shapes fail already: check the index arithmetic, and that every output element is written "
                  "(outputs start as NaN)"},
        {"odd sizes", "sizes that are not multiples of your block or tile: check every bound (i < n, not i <= n), the "
                      "last partial tile (load 0 outside the matrix) and the grid size (round up)"},
        {"large", "only the large shape fails: enough blocks for every element (round the grid up), no int overflow "
                  "in an index, no race between blocks"},
        {"transposes", "with trans_a, A is stored (K, M): A(i,k) is A[k*M + i]; with trans_b, B(k,j) is B[j*K + k]"},
        {"alpha/beta", "C = alpha*sum + beta*C; when beta == 0, do not read C at all (it may hold NaN)"},
        {"accumulation", "long sums of positive products: sum in FP32 (an FP16 accumulator's spacing is 2 past 2048, "
                         "so adding products below 1 stalls); FP16 is for the operands only"},
        {"values", "zeros, negatives, huge and tiny values: keep to the formula (no early exits; the first maximum "
                   "wins a tie; padding is never the maximum)"},
        {"nan/inf", "NaN must come out NaN where the reference keeps it (ReLU: x > 0 ? x : 0 turns NaN into 0; a "
                    "max-pool window with a NaN gives NaN; 0 * Inf is NaN: a GEMM must not skip zero factors)"},
        {"large logits", "subtract each row's maximum before exp() (exp(1000) is Inf in float, Inf/Inf NaN), and take "
                         "the loss as max + log(sum) - z[label], not -log(p): p underflows to 0 when the gap is large"},
        {"overlap", "windows overlap (stride < window): a cell can be the maximum of several windows, so add (+=) the "
                    "gradients into a zeroed dx instead of assigning them"},
        {"finite diff", "the backward does not match the derivative of the forward (central differences): check the "
                        "formula, and the factors (1/N, scale)"},
        {"momentum", "v = momentum*v + g, then w -= lr*v (Nesterov: w -= lr*(g + momentum*v))"},
        {"bias correction", "divide m by (1 - beta1^t) and v by (1 - beta2^t), t the step count starting at 1"},
        {"weight decay", "L2 adds wd*w to the gradient first; AdamW (decoupled) instead shrinks w by lr*wd*w"},
        {"causal mask", "row t sees columns 0..t only: take the max and the sum over j <= t, never read j > t (the "
                        "scores there are garbage, NaN or 1e4), and write exactly 0 there"},
        {"long rows", "T can exceed 1024: loop over the row (j = lane; j <= t; j += 32) instead of keeping it in a fixed "
                      "array or one thread per column"},
        {"large scores", "subtract the row's maximum before exp(): exp(1e4) is Inf in float and exp(-1e4) is 0, so "
                         "Inf/Inf or 0/0 give NaN"},
        {"odd head sizes", "the whole attention calls your softmax with L = B*NH matrices of T x T: index row t of "
                           "matrix l at (l*T + t)*T, with 64-bit offsets"},
    };
    size_t i;
    if (op == GPUDL_OP_ACT_BACKWARD && !strcmp(group, "nan/inf"))
        return "PyTorch's rules: ReLU's dx = x <= 0 ? 0 : dy, so dy passes at a NaN x (NaN <= 0 is false; x > 0 ? dy : 0 "
               "gives 0 there); the other activations keep to their formula (GELU'(+-Inf) = 1 + Inf * 0 is NaN)";
    if (op == GPUDL_OP_GEMM_F16 && !strcmp(group, "values"))
        return "products near 65504 sum past FP16's largest value (Inf): sum in FP32 (a float accumulator fragment); "
               "FP16 is for the operands only";
    for (i = 0; i < sizeof hints / sizeof hints[0]; i++)
        if (!strcmp(hints[i].group, group)) return hints[i].hint;
    return "compare your code with the formula in gpudl_ops (gpudl.h)";
}

GPUDL__DEF const char *gpudl_check_explain(const gpudl_check_report *r, char *buf, size_t size) {
    size_t n = 0;
    int i;
    if (!buf || size == 0) return "";
    buf[0] = 0;
    if (!r) { gpudl__appendf(buf, size, &n, "no report"); return buf; }
    gpudl__appendf(buf, size, &n, "check of %s: %s, %d of %d cases pass (tolerance %.0e relative to %s)\n",
               gpudl__op_name(r->op) ? gpudl__op_name(r->op) : "?", r->passed ? "PASSED" : "FAILED", r->ncases - r->nfailed,
               r->ncases, r->tol, r->op == GPUDL_OP_GEMM || r->op == GPUDL_OP_GEMM_F16
               ? "1 + |alpha| sum |products| + |beta C|" : "1 + |expected|");
    if (r->override_calls + r->override_declined == 0) gpudl__appendf(buf, size, &n, "  (no override installed: gpudl's own implementation)\n");
    else if (r->override_declined)
        gpudl__appendf(buf, size, &n, "  (the override ran %lld calls and handed %lld back to gpudl: those cases checked gpudl's code)\n",
                   (long long)r->override_calls, (long long)r->override_declined);
    gpudl__appendf(buf, size, &n, "  %-16s %-44s %-10s %s\n", "group", "case", "max error", "");
    for (i = 0; i < r->ncases; i++) {
        const gpudl_check_case *k = &r->cases[i];
        gpudl__appendf(buf, size, &n, "  %-16s %-44s %-10.2g %s\n", k->group, k->shape, k->max_abs_err, k->passed ? "ok" : "FAIL");
    }
    if (r->first_case >= 0 && r->first_case < r->ncases) {
        const gpudl_check_case *k = &r->cases[r->first_case];
        gpudl__appendf(buf, size, &n, "first failure: %s, %s\n", k->group, k->shape);
        if (r->index < 0) gpudl__appendf(buf, size, &n, "  the call failed: %s\n", r->status_msg);
        else {
            gpudl__appendf(buf, size, &n, "  at       %s\n", r->where);
            gpudl__appendf(buf, size, &n, "  expected %.9g\n  got      %.9g\n", r->expected, r->got);
            gpudl__appendf(buf, size, &n, "  inputs   %s\n", r->inputs);
        }
        gpudl__appendf(buf, size, &n, "  hint     %s\n", gpudl__check_hint(r->op, k->group));
    }
    return buf;
}

/* ---- a custom layer: finite values, and gradients by finite differences ---- */

GPUDL__DEF gpudl_status gpudl_check_layer(gpudl_ctx *ctx, const gpudl_layer_desc *desc, int ndim, const int64_t *in_shape,
                                          gpudl_check_report *r) {
    gpudl_ctx_desc cd;
    gpudl_ctx *cpu = NULL;
    gpudl_model *m = NULL;
    gpudl_model_desc md;
    gpudl_tensor x, t, out;
    gpudl_gradcheck_result gr;
    gpudl_check_case *k;
    gpudl__chk lc;
    int64_t shape[4], nout = 0, i;
    gpudl_status s;
    int finite = 1;
    GPUDL__ENTER(ctx);
    if (!r || !desc || ndim < 1 || ndim > 3 || !in_shape)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "check_layer: need a desc, a report and a 1- to 3-dim sample shape");
    memset(r, 0, sizeof *r);
    r->first_case = -1;
    r->tol = 1e-2;
    memset(&x, 0, sizeof x); memset(&t, 0, sizeof t);
    memset(&cd, 0, sizeof cd);
    cd.device = GPUDL_DEVICE_CPU;
    cd.log = gpudl_log_quiet;
    cd.num_threads = 1;
    s = gpudl_ctx_create(&cd, &cpu);
    if (s == GPUDL_OK) s = gpudl_model_create(cpu, &m, ndim, in_shape);
    if (s == GPUDL_OK) s = gpudl_model_add_custom(m, desc);
    memset(&md, 0, sizeof md);
    md.max_batch = 3;
    md.loss = GPUDL_LOSS_MSE;
    if (s == GPUDL_OK) s = gpudl_model_build(m, &md);
    shape[0] = 3;
    for (i = 0; i < ndim; i++) shape[1 + i] = in_shape[i];
    if (s == GPUDL_OK) s = gpudl_tensor_create(cpu, &x, GPUDL_F32, 1 + ndim, shape);
    if (s == GPUDL_OK) s = gpudl_tensor_uniform(cpu, &x, -1.0f, 1.0f);
    if (s == GPUDL_OK) s = gpudl_model_forward(m, &x, &out);
    if (s == GPUDL_OK) {
        nout = gpudl_tensor_numel(&out);
        for (i = 0; i < nout; i++) finite &= isfinite(((const float *)out.data)[i]) != 0;
        s = gpudl_tensor_create(cpu, &t, GPUDL_F32, out.ndim, out.shape);
    }
    if (s == GPUDL_OK) s = gpudl_tensor_uniform(cpu, &t, -1.0f, 1.0f);
    memset(&lc, 0, sizeof lc);
    lc.ctx = ctx;
    lc.r = r;
    k = gpudl__chk_case(&lc, "forward", "batch 3, finite outputs");
    if (s != GPUDL_OK) {
        k->passed = 0;
        r->first_case = 0;
        r->index = -1;
        snprintf(r->status_msg, sizeof r->status_msg, "%.159s", gpudl__message(cpu ? cpu : ctx));
        r->ncases = 1;
        r->nfailed = 1;
    } else {
        k->passed = finite;
        if (!finite) { r->first_case = 0; r->index = 0; r->expected = 0; r->got = NAN;
                       snprintf(r->where, sizeof r->where, "the forward's output holds NaN or Inf");
                       snprintf(r->inputs, sizeof r->inputs, "inputs uniform in [-1, 1]"); }
        r->ncases = 1;
        r->nfailed = !finite;
        k = &r->cases[1];
        memset(k, 0, sizeof *k);
        snprintf(k->group, sizeof k->group, "finite diff");
        snprintf(k->shape, sizeof k->shape, "input and %d parameter tensor(s)", desc->nparams);
        s = gpudl_gradcheck(m, &x, &t, 1e-3, 1e-4, 1e-2, 64, &gr);
        k->passed = s == GPUDL_OK && gr.failed == 0;
        k->max_abs_err = gr.max_abs_err;
        k->max_rel_err = gr.max_rel_err;
        if (!k->passed && r->first_case < 0) {
            r->first_case = 1;
            r->index = s == GPUDL_OK ? 0 : -1;
            snprintf(r->where, sizeof r->where, "%.95s", gr.worst);
            snprintf(r->inputs, sizeof r->inputs, "%lld of %lld gradient entries differ from central differences",
                     (long long)gr.failed, (long long)gr.checked);
            if (s != GPUDL_OK) snprintf(r->status_msg, sizeof r->status_msg, "%.159s", gpudl__message(cpu));
            r->expected = r->got = 0;
        }
        r->ncases = 2;
        r->nfailed += !k->passed;
        r->max_abs_err = gr.max_abs_err;
        r->max_rel_err = gr.max_rel_err;
        s = GPUDL_OK;
    }
    r->passed = r->nfailed == 0;
    gpudl_tensor_free(cpu, &x);
    gpudl_tensor_free(cpu, &t);
    gpudl_model_destroy(m);
    gpudl_ctx_destroy(cpu);
    return s == GPUDL_OK || s == GPUDL_ERR_OOM ? s : GPUDL_OK;
}

/* ---- timing an override against gpudl's own path ---- */
#ifndef GPUDL_NO_CUDA
typedef struct gpudl__tim {
    gpudl_op op;
    gpudl_tensor a, b, c, d, e;      /* the operands, by op */
    int64_t n, N, K;
    gpudl_pool2d_desc pool;
    gpudl_conv2d_desc conv;
} gpudl__tim;

/* One call of the op through gpudl (the user's function when installed). */
static gpudl_status gpudl__tim_call(gpudl_ctx *ctx, void *user) {
    gpudl__tim *t = (gpudl__tim *)user;
    const gpudl_ops *o = &ctx->ops[1];
    switch (t->op) {
    case GPUDL_OP_GEMM: case GPUDL_OP_GEMM_F16: return gpudl_matmul(ctx, &t->c, &t->a, &t->b, 0, 0, 1.0f, 0.0f);
    case GPUDL_OP_ACT_FORWARD:      return gpudl_act_forward(ctx, GPUDL_ACT_RELU, 0.0f, &t->b, &t->a);
    case GPUDL_OP_ACT_BACKWARD:     return gpudl_act_backward(ctx, GPUDL_ACT_RELU, 0.0f, &t->c, &t->b, &t->a, &t->a);
    case GPUDL_OP_XENT_FORWARD:     /* the user's directly: through gpudl its labels are checked on the host first */
        if (o->softmax_xent_forward)
            return o->softmax_xent_forward(o->user, (void *)ctx->stream, (float *)t->d.data, (float *)t->b.data,
                                           (const float *)t->a.data, (const int32_t *)t->c.data, t->N, t->K);
        return gpudl_softmax_xent_forward(ctx, &t->d, &t->b, &t->a, &t->c);
    case GPUDL_OP_XENT_BACKWARD:
        if (o->softmax_xent_backward)
            return o->softmax_xent_backward(o->user, (void *)ctx->stream, (float *)t->a.data, (const float *)t->b.data,
                                            (const int32_t *)t->c.data, t->N, t->K, 1.0f);
        return gpudl_softmax_xent_backward(ctx, &t->a, &t->b, &t->c, 1.0f);
    case GPUDL_OP_MAXPOOL_FORWARD:  return gpudl_pool2d_forward(ctx, &t->b, &t->a, &t->pool);
    case GPUDL_OP_MAXPOOL_BACKWARD: return gpudl_pool2d_backward(ctx, &t->c, &t->b, &t->a, &t->pool);
    case GPUDL_OP_CONV2D_FORWARD:   return gpudl_conv2d_forward(ctx, &t->c, &t->a, &t->b, NULL, &t->conv);
    case GPUDL_OP_SGD_UPDATE:
        if (o->sgd_update)
            return o->sgd_update(o->user, (void *)ctx->stream, (float *)t->a.data, (const float *)t->b.data, (float *)t->c.data,
                                 t->n, 1e-6f, 0.9f, 0.0f, 0);
        break;
    default:
        if (o->adam_update)
            return o->adam_update(o->user, (void *)ctx->stream, (float *)t->a.data, (const float *)t->b.data, (float *)t->c.data,
                                  (float *)t->d.data, t->n, 1e-6f, 0.9f, 0.999f, 1e-8f, 0.0f, 0, 2);
        break;
    }
    {   /* gpudl's own update kernel */
        gpudl_optim_hp h;
        memset(&h, 0, sizeof h);
        h.kind = t->op == GPUDL_OP_SGD_UPDATE ? GPUDL_OPTIM_SGD : GPUDL_OPTIM_ADAM;
        h.lr = 1e-6f; h.momentum = 0.9f; h.beta1 = 0.9f; h.beta2 = 0.999f; h.eps = 1e-8f; h.bc1 = 0.19f; h.bc2 = 0.002f;
        return gpudl__launched(ctx, gpudl_k_optim(ctx->stream, h, (float *)t->a.data, (const float *)t->b.data,
                                                  (float *)t->c.data, t->op == GPUDL_OP_SGD_UPDATE ? NULL : (float *)t->d.data,
                                                  t->n, NULL, NULL, NULL, 0), "gpudl_k_optim", __FILE__, __LINE__);
    }
}

/* The operands of op at size, on the GPU, and the call's floor (FLOPs, bytes). */
static gpudl_status gpudl__tim_make(gpudl_ctx *ctx, gpudl__tim *t, int64_t size, gpudl_op_timing *r) {
    int64_t s2[2], s4[4], n = 4 * size * size;
    gpudl_tensor *all[5];
    int i;
    all[0] = &t->a; all[1] = &t->b; all[2] = &t->c; all[3] = &t->d; all[4] = &t->e;
    switch (t->op) {
    case GPUDL_OP_GEMM: case GPUDL_OP_GEMM_F16:   /* f16: A and B f16, C f32 */
        s2[0] = s2[1] = size;
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->a, t->op == GPUDL_OP_GEMM ? GPUDL_F32 : GPUDL_F16, 2, s2));
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->b, t->op == GPUDL_OP_GEMM ? GPUDL_F32 : GPUDL_F16, 2, s2));
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->c, GPUDL_F32, 2, s2));
        r->flops = 2.0 * (double)size * size * size;
        r->bytes = (t->op == GPUDL_OP_GEMM ? 12.0 : 8.0) * (double)size * size;
        snprintf(r->problem, sizeof r->problem, "M=N=K=%lld", (long long)size);
        break;
    case GPUDL_OP_ACT_FORWARD: case GPUDL_OP_ACT_BACKWARD: case GPUDL_OP_SGD_UPDATE: case GPUDL_OP_ADAM_UPDATE:
        t->n = n;
        for (i = 0; i < 4; i++) GPUDL__TRY(gpudl_tensor_create(ctx, all[i], GPUDL_F32, 1, &n));
        r->flops = (double)n * (t->op == GPUDL_OP_ADAM_UPDATE ? 12 : t->op == GPUDL_OP_SGD_UPDATE ? 4 : 1);
        r->bytes = 4.0 * (double)n * (t->op == GPUDL_OP_ACT_FORWARD ? 2 : t->op == GPUDL_OP_ACT_BACKWARD ? 3
                                      : t->op == GPUDL_OP_SGD_UPDATE ? 5 : 7);
        snprintf(r->problem, sizeof r->problem, "n=%lld", (long long)n);
        break;
    case GPUDL_OP_XENT_FORWARD: case GPUDL_OP_XENT_BACKWARD:
        t->N = 2 * size; t->K = 1000;
        s2[0] = t->N; s2[1] = t->K;
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->a, GPUDL_F32, 2, s2));
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->b, GPUDL_F32, 2, s2));
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->c, GPUDL_I32, 1, &t->N));
        GPUDL__TRY(gpudl_tensor_fill(ctx, &t->c, 0.0f));
        s2[0] = 1;
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->d, GPUDL_F32, 1, s2));
        r->flops = 4.0 * (double)t->N * t->K;
        r->bytes = 8.0 * (double)t->N * t->K;
        snprintf(r->problem, sizeof r->problem, "N=%lld K=%lld", (long long)t->N, (long long)t->K);
        break;
    case GPUDL_OP_MAXPOOL_FORWARD: case GPUDL_OP_MAXPOOL_BACKWARD:
        s4[0] = n / 4096 > 0 ? n / 4096 : 1; s4[1] = 1; s4[2] = s4[3] = 64;
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->a, GPUDL_F32, 4, s4));
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->c, GPUDL_F32, 4, s4));
        s4[2] = s4[3] = 32;
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->b, GPUDL_F32, 4, s4));
        memset(&t->pool, 0, sizeof t->pool);
        t->pool.kind = GPUDL_POOL_MAX; t->pool.k_h = t->pool.k_w = 2;
        r->flops = (double)s4[0] * 64 * 64;
        r->bytes = 4.0 * (double)s4[0] * (64 * 64 * (t->op == GPUDL_OP_MAXPOOL_FORWARD ? 1 : 2) + 32 * 32);
        snprintf(r->problem, sizeof r->problem, "%lld planes 64x64, 2x2", (long long)s4[0]);
        break;
    default:   /* conv */
        s4[0] = size / 64 > 0 ? size / 64 : 1; s4[1] = 64; s4[2] = s4[3] = 56;
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->a, GPUDL_F32, 4, s4));
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->c, GPUDL_F32, 4, s4));
        r->flops = 2.0 * (double)s4[0] * 64 * 56 * 56 * 64 * 9;
        r->bytes = 4.0 * ((double)s4[0] * 64 * 56 * 56 * 2 + 64 * 64 * 9);
        snprintf(r->problem, sizeof r->problem, "N=%lld C=O=64 56x56 3x3 pad 1", (long long)s4[0]);
        s4[0] = 64; s4[2] = s4[3] = 3;
        GPUDL__TRY(gpudl_tensor_create(ctx, &t->b, GPUDL_F32, 4, s4));
        memset(&t->conv, 0, sizeof t->conv);
        t->conv.pad_h = t->conv.pad_w = 1;
        break;
    }
    for (i = 0; i < 5; i++)   /* small random values (the labels stay 0): no NaN or overflow to slow anything down */
        if (all[i]->data && all[i]->dtype != GPUDL_I32) GPUDL__TRY(gpudl_tensor_uniform(ctx, all[i], 0.0f, 0.01f));
    return GPUDL_OK;
}
#endif

GPUDL__DEF gpudl_status gpudl_time_op(gpudl_ctx *ctx, gpudl_op op, int64_t size, gpudl_op_timing *r) {
    GPUDL__ENTER(ctx);
    if (!r) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "time_op: r is NULL");
    memset(r, 0, sizeof *r);
    r->op = op;
    if (!gpudl__op_name(op)) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "time_op: %d is not a gpudl_op", (int)op);
    if (size < 0) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "time_op: size %lld < 0", (long long)size);
    if (size == 0) size = 2048;
    if (op == GPUDL_OP_ATTN_SOFTMAX_FORWARD || op == GPUDL_OP_ATTN_SOFTMAX_BACKWARD)
        return GPUDL__ERR(ctx, GPUDL_ERR_UNSUPPORTED, "time_op: %s is not timed yet (time gpudl_attention_forward/_backward "
                          "with the override installed: gpudl_bench)", gpudl__op_name(op));
#ifdef GPUDL_NO_CUDA
    return GPUDL__ERR(ctx, GPUDL_ERR_UNSUPPORTED, "time_op: timing a kernel needs a GPU (this is a CPU-only build); "
                      "gpudl_check_op checks it without one");
#else
    if (ctx->device != GPUDL_DEVICE_CUDA)
        return GPUDL__ERR(ctx, GPUDL_ERR_UNSUPPORTED, "time_op: timing a kernel needs a GPU (this context runs on the CPU); "
                          "gpudl_check_op checks it without one");
    {
        gpudl__tim t;
        gpudl_status s;
        gpudl_bench_desc bd;
        gpudl_bench_result bo, bb;
        gpudl_device_info info;
        gpudl_ops saved = ctx->ops[1];
        int saved_any = ctx->any_ops[1];
        memset(&t, 0, sizeof t);
        t.op = op;
        s = gpudl__tim_make(ctx, &t, size, r);
        memset(&bd, 0, sizeof bd);
        bd.warmup = 2; bd.reps = 7; bd.min_sample_ms = 0.5;
        bd.flops = r->flops; bd.bytes = r->bytes;
        memset(&bo, 0, sizeof bo);
        if (s == GPUDL_OK && gpudl__op_overridden(ctx, op)) s = gpudl_bench(ctx, gpudl__tim_call, &t, &bd, &bo);
        if (s == GPUDL_OK) {   /* gpudl's own: the overrides out of the way for a moment */
            memset(&ctx->ops[1], 0, sizeof ctx->ops[1]);
            ctx->any_ops[1] = 0;
            s = gpudl_bench(ctx, gpudl__tim_call, &t, &bd, &bb);
            ctx->ops[1] = saved;
            ctx->any_ops[1] = saved_any;
        }
        gpudl_tensor_free(ctx, &t.a); gpudl_tensor_free(ctx, &t.b); gpudl_tensor_free(ctx, &t.c);
        gpudl_tensor_free(ctx, &t.d); gpudl_tensor_free(ctx, &t.e);
        if (s != GPUDL_OK) return s;
        r->ms_override = bo.median_ms; r->ms_builtin = bb.median_ms;
        r->gflops_override = bo.gflops; r->gflops_builtin = bb.gflops;
        r->gbs_override = bo.gbs; r->gbs_builtin = bb.gbs;
        if (gpudl_device_info_get(ctx, &info) == GPUDL_OK) {
            snprintf(r->device, sizeof r->device, "%.63s", info.name);
            if (info.peak_fp32_tflops > 0) r->frac_peak_flops = bo.gflops / (info.peak_fp32_tflops * 1e3);
            if (info.peak_mem_gbs > 0) r->frac_peak_bw = bo.gbs / info.peak_mem_gbs;
        }
        return GPUDL_OK;
    }
#endif
}

GPUDL__DEF const char *gpudl_op_timing_explain(const gpudl_op_timing *t, char *buf, size_t size) {
    const char *bound;
    if (!buf || size == 0) return "";
    if (!t || !gpudl__op_name(t->op)) { snprintf(buf, size, "no timing"); return buf; }
    if (t->ms_override <= 0) {
        snprintf(buf, size, "%s, %s on %s: gpudl's own %.3f ms (%.1f GFLOP/s, %.1f GB/s); no override installed\n",
                 gpudl__op_name(t->op), t->problem, t->device, t->ms_builtin, t->gflops_builtin, t->gbs_builtin);
        return buf;
    }
    bound = t->frac_peak_flops > 0.5 ? "compute-bound: near the FP32 peak"
          : t->frac_peak_bw > 0.5 ? "bandwidth-bound: near the memory peak"
          : t->frac_peak_flops > t->frac_peak_bw ? "far from both peaks, nearer the compute one: more work per byte "
                                                   "loaded (tiling, registers) would help"
                                                 : "far from both peaks, nearer the bandwidth one: coalesced, "
                                                   "vectorised loads and fewer passes would help";
    snprintf(buf, size,
             "%s, %s on %s\n"
             "  yours    %9.3f ms  %9.1f GFLOP/s  %8.1f GB/s  (%.0f%% of the FP32 peak, %.0f%% of memory bandwidth)\n"
             "  gpudl's  %9.3f ms  %9.1f GFLOP/s  %8.1f GB/s  (yours takes %.2fx its time)\n"
             "  %s\n",
             gpudl__op_name(t->op), t->problem, t->device, t->ms_override, t->gflops_override, t->gbs_override,
             100.0 * t->frac_peak_flops, 100.0 * t->frac_peak_bw, t->ms_builtin, t->gflops_builtin, t->gbs_builtin,
             t->ms_builtin > 0 ? t->ms_override / t->ms_builtin : 0.0, bound);
    return buf;
}

/* >>dist ------------------------------------------------------------------ */
struct gpudl_dist {
    int rank, size, local_rank, started_mpi, timeout_ms;
    int64_t bucket;
    char id_file[512];
#ifdef GPUDL_MPI
    MPI_Comm comm;                  /* a duplicate of MPI_COMM_WORLD that returns its errors */
#endif
#ifdef GPUDL__HAVE_NCCL
    ncclComm_t nccl;                /* created on first use on a GPU (gpudl__dist_nccl) */
    int nccl_device;
    cudaStream_t stream;            /* the gradients' all-reduce, beside the context's stream */
    cudaEvent_t ready, done;        /* gradients ready on the context's stream; all-reduced */
    int pending;                    /* a backward's all-reduce the host has not yet waited for */
#endif
};

#if defined(GPUDL_MPI) || defined(GPUDL__HAVE_NCCL)
/* While waiting for other ranks: spin for the first 20 ms (MPI moves data
   only inside its calls: a sleep between them made a 1 MB all-reduce 20x
   slower), then short sleeps (a rank that is gone should not eat a core). */
static void gpudl__nap_since(double t0) {
#if defined(_WIN32)
    if (gpudl_now() - t0 >= 0.02) Sleep(0);
#else
    struct timespec ts;
    ts.tv_sec = 0;
    ts.tv_nsec = 50000;
    if (gpudl_now() - t0 >= 0.02) nanosleep(&ts, NULL);
#endif
}
#endif

static int gpudl__env_int(const char *name, int *v) {   /* 1: set and a number, 0: unset, -1: malformed */
    const char *s = getenv(name);
    char *end;
    long x;
    if (!s || !*s) return 0;
    x = strtol(s, &end, 10);
    if (*end || x < 0 || x > 1 << 20) return -1;
    *v = (int)x;
    return 1;
}

GPUDL__DEF int gpudl_dist_launched(int *rank) {
    static const char *const vars[4][2] = {{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}, {"PMI_SIZE", "PMI_RANK"},
                                           {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID"}, {"WORLD_SIZE", "RANK"}};
    int i, n, r;
    if (rank) *rank = 0;
    for (i = 0; i < 4; i++) {   /* (srun's step, not sbatch's SLURM_NTASKS: a batch script runs once) */
        if (gpudl__env_int(vars[i][0], &n) != 1 || n < 2) continue;
        if (gpudl__env_int(vars[i][1], &r) != 1 || r >= n) r = -1;
        if (rank) *rank = r;
        return n;
    }
    return 1;
}

GPUDL__DEF gpudl_status gpudl_dist_create(const gpudl_dist_desc *desc, gpudl_dist **out) {
    gpudl_dist_desc dd;
    gpudl_dist *d;
    gpudl_log_fn log;
    char msg[512];
    int r = 0, n = 1, lr = 0, er, en, el;
    if (!out) return GPUDL_ERR_INVALID_ARG;
    *out = NULL;
    memset(&dd, 0, sizeof dd);
    if (desc) dd = *desc;
    log = dd.log ? dd.log : gpudl_log_stderr;
#define GPUDL__DIST_FAIL(status, ...) do { snprintf(msg, sizeof msg, __VA_ARGS__); log(dd.log_user, GPUDL_LOG_ERROR, msg); \
    return (status); } while (0)
    if (dd.timeout_ms < 0 || dd.bucket_floats < 0)
        GPUDL__DIST_FAIL(GPUDL_ERR_INVALID_ARG, "gpudl_dist_create: timeout_ms and bucket_floats must be >= 0");
    er = gpudl__env_int("RANK", &r);
    en = gpudl__env_int("WORLD_SIZE", &n);
    el = gpudl__env_int("LOCAL_RANK", &lr);
    if (er < 0 || en < 0 || el < 0 || (en > 0 && (n < 1 || r >= n)))
        GPUDL__DIST_FAIL(GPUDL_ERR_INVALID_ARG, "gpudl_dist_create: RANK=%s WORLD_SIZE=%s LOCAL_RANK=%s: need 0 <= RANK < "
                         "WORLD_SIZE (numbers)", getenv("RANK") ? getenv("RANK") : "", getenv("WORLD_SIZE") ?
                         getenv("WORLD_SIZE") : "", getenv("LOCAL_RANK") ? getenv("LOCAL_RANK") : "");
    if (el == 0) lr = r;
    d = (gpudl_dist *)GPUDL_MALLOC(sizeof *d);
    if (!d) GPUDL__DIST_FAIL(GPUDL_ERR_OOM, "gpudl_dist_create: no host memory");
    memset(d, 0, sizeof *d);
    d->rank = r; d->size = n; d->local_rank = lr;
    d->timeout_ms = dd.timeout_ms ? dd.timeout_ms : 60000;
    d->bucket = dd.bucket_floats ? dd.bucket_floats : (int64_t)1 << 20;
    if (dd.id_file) snprintf(d->id_file, sizeof d->id_file, "%s", dd.id_file);
#ifdef GPUDL_MPI
    {
        int inited = 0;
        MPI_Comm shm;
        MPI_Initialized(&inited);
        if (!inited) {
            if (MPI_Init(NULL, NULL) != MPI_SUCCESS) { GPUDL_FREE(d); GPUDL__DIST_FAIL(GPUDL_ERR_DIST, "gpudl_dist_create: MPI_Init failed"); }
            d->started_mpi = 1;
        }
        MPI_Comm_dup(MPI_COMM_WORLD, &d->comm);
        MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);   /* a status, not an abort */
        MPI_Comm_rank(d->comm, &d->rank);
        MPI_Comm_size(d->comm, &d->size);
        /* the local rank: this rank's place among the ranks on its machine */
        if (MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &shm) == MPI_SUCCESS) {
            MPI_Comm_rank(shm, &d->local_rank);
            MPI_Comm_free(&shm);
        }
    }
#else
    if (d->size > 1) {
        int nccl = 0;
#  ifdef GPUDL__HAVE_NCCL
        nccl = d->id_file[0] != 0;
#  endif
        if (!nccl) {
            GPUDL_FREE(d);
            GPUDL__DIST_FAIL(GPUDL_ERR_UNSUPPORTED, "gpudl_dist_create: WORLD_SIZE=%d, but this build has no way to reach the "
                             "other ranks: build with -DGPUDL_MPI (mpicc) for CPU ranks, or -DGPUDL_NCCL (-lnccl) with "
                             "desc.id_file on a shared file system for GPU ranks", n);
        }
    }
#endif
#undef GPUDL__DIST_FAIL
    *out = d;
    return GPUDL_OK;
}

GPUDL__DEF int gpudl_dist_rank(const gpudl_dist *d) { return d ? d->rank : 0; }
GPUDL__DEF int gpudl_dist_size(const gpudl_dist *d) { return d ? d->size : 1; }
GPUDL__DEF int gpudl_dist_local_rank(const gpudl_dist *d) { return d ? d->local_rank : 0; }

GPUDL__DEF void gpudl_dist_destroy(gpudl_dist *d) {
    if (!d) return;
#ifdef GPUDL__HAVE_NCCL
    if (d->nccl) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaSetDevice(d->nccl_device);
        if (d->pending) ncclCommAbort(d->nccl);   /* work no one waited for: do not block on it */
        else ncclCommDestroy(d->nccl);
        cudaStreamDestroy(d->stream);
        cudaEventDestroy(d->ready);
        cudaEventDestroy(d->done);
        cudaSetDevice(dev);
    }
#endif
#ifdef GPUDL_MPI
    MPI_Comm_free(&d->comm);
    if (d->started_mpi) {
        int fin = 0;
        MPI_Finalized(&fin);
        if (!fin) MPI_Finalize();
    }
#endif
    GPUDL_FREE(d);
}

#ifdef GPUDL_MPI
/* Waits for a non-blocking MPI call, at most timeout_ms. */
static gpudl_status gpudl__mpi_wait(gpudl_ctx *ctx, gpudl_dist *d, MPI_Request *req, const char *what) {
    double t0 = gpudl_now();
    int done = 0;
    for (;;) {
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return GPUDL__ERR(ctx, GPUDL_ERR_DIST, "%s: MPI failed on rank %d of %d (another rank died?)", what, d->rank, d->size);
        if (done) return GPUDL_OK;
        if ((gpudl_now() - t0) * 1000.0 > d->timeout_ms)
            return GPUDL__ERR(ctx, GPUDL_ERR_DIST, "%s: rank %d of %d heard nothing from the other ranks for %d ms: a rank died, "
                              "hangs, or runs a different program (gpudl_dist_desc.timeout_ms)", what, d->rank, d->size,
                              d->timeout_ms);
        gpudl__nap_since(t0);
    }
}

/* In place on host floats: the sum (or mean) over the ranks, the same bits
   on every rank (reduced in one place, in MPI's fixed order, then sent out). */
static gpudl_status gpudl__mpi_allreduce(gpudl_ctx *ctx, gpudl_dist *d, float *x, int64_t n, int average, const char *what) {
    MPI_Request req;
    int64_t off, i;
    for (off = 0; off < n; off += (int64_t)1 << 28) {   /* MPI counts are ints */
        int c = (int)GPUDL__MIN(n - off, (int64_t)1 << 28);
        if (MPI_Ireduce(d->rank == 0 ? MPI_IN_PLACE : x + off, x + off, c, MPI_FLOAT, MPI_SUM, 0, d->comm, &req) != MPI_SUCCESS)
            return GPUDL__ERR(ctx, GPUDL_ERR_DIST, "%s: MPI_Ireduce failed on rank %d", what, d->rank);
        GPUDL__TRY(gpudl__mpi_wait(ctx, d, &req, what));
        if (MPI_Ibcast(x + off, c, MPI_FLOAT, 0, d->comm, &req) != MPI_SUCCESS)
            return GPUDL__ERR(ctx, GPUDL_ERR_DIST, "%s: MPI_Ibcast failed on rank %d", what, d->rank);
        GPUDL__TRY(gpudl__mpi_wait(ctx, d, &req, what));
    }
    if (average) {
        float inv = 1.0f / (float)d->size;
        for (i = 0; i < n; i++) x[i] *= inv;
    }
    return GPUDL_OK;
}

static gpudl_status gpudl__mpi_bcast(gpudl_ctx *ctx, gpudl_dist *d, void *x, int64_t bytes, int root, const char *what) {
    MPI_Request req;
    int64_t off;
    for (off = 0; off < bytes; off += (int64_t)1 << 30) {
        int c = (int)GPUDL__MIN(bytes - off, (int64_t)1 << 30);
        if (MPI_Ibcast((char *)x + off, c, MPI_BYTE, root, d->comm, &req) != MPI_SUCCESS)
            return GPUDL__ERR(ctx, GPUDL_ERR_DIST, "%s: MPI_Ibcast failed on rank %d", what, d->rank);
        GPUDL__TRY(gpudl__mpi_wait(ctx, d, &req, what));
    }
    return GPUDL_OK;
}
#endif

#ifdef GPUDL__HAVE_NCCL
/* After a call on a non-blocking communicator: waits until it is issued. */
static gpudl_status gpudl__nccl_check(gpudl_ctx *ctx, gpudl_dist *d, ncclResult_t r, const char *what) {
    double t0 = gpudl_now();
    while (r == ncclInProgress) {
        if ((gpudl_now() - t0) * 1000.0 > d->timeout_ms) break;
        gpudl__nap_since(t0);
        ncclCommGetAsyncError(d->nccl, &r);
    }
    if (r == ncclSuccess) return GPUDL_OK;
    {
        const char *last = d->nccl ? ncclGetLastError(d->nccl) : "";
        gpudl_status s = GPUDL__ERR(ctx, GPUDL_ERR_DIST, "%s on rank %d of %d: %s%s%s", what, d->rank, d->size,
                                    r == ncclInProgress ? "no answer within timeout_ms" : ncclGetErrorString(r),
                                    last && last[0] ? ": " : "", last ? last : "");
        if (d->nccl) ncclCommAbort(d->nccl);
        d->nccl = NULL;
        d->pending = 0;
        return s;
    }
}

/* Waits (on the host) for ev, at most timeout_ms, watching NCCL's errors. */
static gpudl_status gpudl__nccl_wait(gpudl_ctx *ctx, gpudl_dist *d, cudaEvent_t ev, const char *what) {
    double t0 = gpudl_now();
    for (;;) {
        cudaError_t e = gpudl__event_query(ev);
        ncclResult_t r = ncclSuccess;
        if (e == cudaSuccess) {   /* done: but a collective that failed may also count as done */
            ncclCommGetAsyncError(d->nccl, &r);
            return r == ncclSuccess || r == ncclInProgress ? GPUDL_OK : gpudl__nccl_check(ctx, d, r, what);
        }
        if (e != cudaErrorNotReady) return gpudl__cuda_fail(ctx, e, what, __FILE__, __LINE__);
        ncclCommGetAsyncError(d->nccl, &r);
        if (r != ncclSuccess && r != ncclInProgress) return gpudl__nccl_check(ctx, d, r, what);
        if ((gpudl_now() - t0) * 1000.0 > d->timeout_ms) return gpudl__nccl_check(ctx, d, ncclInProgress, what);
        gpudl__nap_since(t0);
    }
}

/* The communicator, made on first use on ctx's GPU: the unique id from rank
   0 through MPI or the id file, a non-blocking init that a timeout can end. */
static gpudl_status gpudl__dist_nccl(gpudl_dist *d, gpudl_ctx *ctx) {
    ncclUniqueId id;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    ncclResult_t r;
    if (d->nccl) {
        if (d->nccl_device != ctx->cuda_device)
            return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dist: this rank's communicator is on GPU %d, the context on GPU %d",
                              d->nccl_device, ctx->cuda_device);
        return GPUDL_OK;
    }
    memset(&id, 0, sizeof id);
    if (d->rank == 0 && (r = ncclGetUniqueId(&id)) != ncclSuccess)
        return GPUDL__ERR(ctx, GPUDL_ERR_DIST, "dist: ncclGetUniqueId failed: %s", ncclGetErrorString(r));
#  ifdef GPUDL_MPI
    GPUDL__TRY(gpudl__mpi_bcast(ctx, d, &id, sizeof id, 0, "dist: sharing the NCCL id"));
#  else
    if (d->rank == 0) {   /* written whole, then renamed: the others never read half an id */
        char tmp[600];
        FILE *f;
        snprintf(tmp, sizeof tmp, "%s.tmp", d->id_file);
        f = fopen(tmp, "wb");
        if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, d->id_file) != 0)
            return GPUDL__ERR(ctx, GPUDL_ERR_IO, "dist: cannot write the NCCL id to '%s': %s", d->id_file, strerror(errno));
    } else {
        double t0 = gpudl_now();
        for (;;) {
            FILE *f = fopen(d->id_file, "rb");
            size_t got = f ? fread(&id, 1, sizeof id, f) : 0;
            if (f) fclose(f);
            if (got == sizeof id) break;
            if ((gpudl_now() - t0) * 1000.0 > d->timeout_ms)
                return GPUDL__ERR(ctx, GPUDL_ERR_DIST, "dist: rank %d found no NCCL id in '%s' after %d ms (is rank 0 up, "
                                  "and the file on a file system all ranks share?)", d->rank, d->id_file, d->timeout_ms);
            gpudl__nap_since(t0);
        }
    }
#  endif
    cfg.blocking = 0;   /* a rank that never joins must not hang the others: the init is polled, with a timeout */
    r = ncclCommInitRankConfig(&d->nccl, d->size, id, d->rank, &cfg);
    if (r != ncclSuccess && r != ncclInProgress) {
        d->nccl = NULL;
        return GPUDL__ERR(ctx, GPUDL_ERR_DIST, "dist: ncclCommInitRankConfig on rank %d of %d: %s", d->rank, d->size,
                          ncclGetErrorString(r));
    }
    if (r == ncclInProgress) ncclCommGetAsyncError(d->nccl, &r);
    GPUDL__TRY(gpudl__nccl_check(ctx, d, r, "dist: joining the other ranks (ncclCommInitRankConfig)"));
    d->nccl_device = ctx->cuda_device;
    GPUDL__CUDA(ctx, cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking));
    GPUDL__CUDA(ctx, cudaEventCreateWithFlags(&d->ready, cudaEventDisableTiming));
    GPUDL__CUDA(ctx, cudaEventCreateWithFlags(&d->done, cudaEventDisableTiming));
    return GPUDL_OK;
}
#endif

/* A collective on t that this build has no engine for. */
static gpudl_status gpudl__dist_unbuilt(gpudl_ctx *ctx, const gpudl_dist *d, const gpudl_tensor *t, const char *what) {
    (void)t;   /* a CPU-only build: GPUDL__ON_GPU is 0 */
    return GPUDL__ERR(ctx, GPUDL_ERR_UNSUPPORTED, "%s: a %s tensor across %d ranks needs a build with %s", what,
                      GPUDL__ON_GPU(t) ? "GPU" : "CPU", d->size, GPUDL__ON_GPU(t) ? "-DGPUDL_NCCL" : "-DGPUDL_MPI");
}

GPUDL__DEF gpudl_status gpudl_dist_allreduce(gpudl_dist *d, gpudl_ctx *ctx, gpudl_tensor *t, int average) {
    GPUDL__ENTER(ctx);
    if (!d) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dist_allreduce: d is NULL");
    GPUDL__TRY(gpudl__check_f32(ctx, t, "t"));
    if (d->size == 1) return GPUDL_OK;
#ifdef GPUDL__HAVE_NCCL
    if (GPUDL__ON_GPU(t)) {
        GPUDL__TRY(gpudl__dist_nccl(d, ctx));
        GPUDL__TRY(gpudl__nccl_check(ctx, d, ncclAllReduce(t->data, t->data, (size_t)gpudl_tensor_numel(t), ncclFloat,
                                                           average ? ncclAvg : ncclSum, d->nccl, ctx->stream), "ncclAllReduce"));
        GPUDL__CUDA(ctx, cudaEventRecord(d->done, ctx->stream));
        return gpudl__nccl_wait(ctx, d, d->done, "dist_allreduce");
    }
#endif
#ifdef GPUDL_MPI
    if (!GPUDL__ON_GPU(t)) return gpudl__mpi_allreduce(ctx, d, (float *)t->data, gpudl_tensor_numel(t), average, "dist_allreduce");
#endif
    (void)average;
    return gpudl__dist_unbuilt(ctx, d, t, "dist_allreduce");
}

GPUDL__DEF gpudl_status gpudl_dist_broadcast(gpudl_dist *d, gpudl_ctx *ctx, gpudl_tensor *t, int root) {
    GPUDL__ENTER(ctx);
    if (!d || !t || !t->data) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dist_broadcast: d or t is NULL");
    if (root < 0 || root >= d->size)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dist_broadcast: root %d is not a rank (0 to %d)", root, d->size - 1);
    if (d->size == 1) return GPUDL_OK;
#ifdef GPUDL__HAVE_NCCL
    if (GPUDL__ON_GPU(t)) {
        GPUDL__TRY(gpudl__dist_nccl(d, ctx));
        GPUDL__TRY(gpudl__nccl_check(ctx, d, ncclBroadcast(t->data, t->data, gpudl_tensor_bytes(t), ncclUint8, root, d->nccl,
                                                           ctx->stream), "ncclBroadcast"));
        GPUDL__CUDA(ctx, cudaEventRecord(d->done, ctx->stream));
        return gpudl__nccl_wait(ctx, d, d->done, "dist_broadcast");
    }
#endif
#ifdef GPUDL_MPI
    if (!GPUDL__ON_GPU(t)) return gpudl__mpi_bcast(ctx, d, t->data, (int64_t)gpudl_tensor_bytes(t), root, "dist_broadcast");
#endif
    return gpudl__dist_unbuilt(ctx, d, t, "dist_broadcast");
}

/* A fingerprint of the model's layers and shapes (FNV-1a), to compare across ranks. */
static uint64_t gpudl__model_print(const gpudl_model *m) {
    uint64_t h = 0xcbf29ce484222325ull;
    int i, j;
#define GPUDL__FNV(v) do { uint64_t v_ = (uint64_t)(v); int b_; for (b_ = 0; b_ < 8; b_++) { h ^= (v_ >> (8 * b_)) & 0xff; \
    h *= 0x100000001b3ull; } } while (0)
    GPUDL__FNV(m->nlayers); GPUDL__FNV(m->nparams); GPUDL__FNV(m->nbuffers);
    for (i = 0; i < m->nlayers; i++) {
        const gpudl__layer *l = &m->layers[i];
        const char *nm = gpudl__lname(l);
        while (*nm) GPUDL__FNV(*nm++);
        for (j = 0; j < 3; j++) { GPUDL__FNV(l->in_shape[j]); GPUDL__FNV(l->out_shape[j]); }
        for (j = 0; j < l->np; j++) GPUDL__FNV(l->poff[j]);
    }
#undef GPUDL__FNV
    return h;
}

GPUDL__DEF gpudl_status gpudl_model_set_dist(gpudl_model *m, gpudl_dist *d) {
    gpudl_ctx *ctx;
    uint64_t mine[2], lo[2] = {0, 0}, hi[2] = {0, 0};   /* (set on every path that reaches the comparison; nvcc cannot tell) */
    int k;
    GPUDL__TRY(gpudl__check_built(m, "model_set_dist"));
    ctx = m->ctx;
    if (!d) { m->dist = NULL; return GPUDL_OK; }
    m->dist = d;
    if (d->size == 1) return GPUDL_OK;
    /* every rank built the same model: the smallest and largest fingerprint agree */
    mine[0] = gpudl__model_print(m);
    mine[1] = (uint64_t)m->nparams;
#ifdef GPUDL__HAVE_NCCL
    if (GPUDL__ON_GPU(&m->params)) {
        gpudl_tensor t;
        int64_t four = 4;
        uint64_t host[4];
        gpudl_status s;
        GPUDL__TRY(gpudl__dist_nccl(d, ctx));
        GPUDL__TRY(gpudl_tensor_create(ctx, &t, GPUDL_I32, 1, &four));   /* 16 bytes: lo, hi of the fingerprint */
        memcpy(host, mine, sizeof mine);
        memcpy(host + 2, mine, sizeof mine);
        s = gpudl_tensor_upload(ctx, &t, host, sizeof(uint64_t) * 2);
        if (s == GPUDL_OK) s = gpudl__nccl_check(ctx, d, ncclAllReduce(t.data, t.data, 2, ncclUint64, ncclMin, d->nccl, ctx->stream),
                                                 "ncclAllReduce (model check)");
        if (s == GPUDL_OK) s = gpudl_tensor_download(ctx, &t, host, sizeof(uint64_t) * 2);
        memcpy(lo, host, sizeof lo);
        if (s == GPUDL_OK) s = gpudl_tensor_upload(ctx, &t, mine, sizeof mine);
        if (s == GPUDL_OK) s = gpudl__nccl_check(ctx, d, ncclAllReduce(t.data, t.data, 2, ncclUint64, ncclMax, d->nccl, ctx->stream),
                                                 "ncclAllReduce (model check)");
        if (s == GPUDL_OK) s = gpudl_tensor_download(ctx, &t, host, sizeof(uint64_t) * 2);
        memcpy(hi, host, sizeof hi);
        gpudl_tensor_free(ctx, &t);
        GPUDL__TRY(s);
    } else
#endif
    {
#ifdef GPUDL_MPI
        uint64_t *all = (uint64_t *)GPUDL_MALLOC(sizeof(uint64_t) * 2 * (size_t)d->size);
        MPI_Request req;
        gpudl_status s;
        if (!all) return GPUDL__ERR(ctx, GPUDL_ERR_OOM, "model_set_dist: no host memory");
        s = MPI_Iallgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, d->comm, &req) == MPI_SUCCESS
          ? gpudl__mpi_wait(ctx, d, &req, "model_set_dist") : GPUDL__ERR(ctx, GPUDL_ERR_DIST, "model_set_dist: MPI_Iallgather failed");
        for (k = 0; s == GPUDL_OK && k < d->size; k++)
            if (all[2 * k] != mine[0] || all[2 * k + 1] != mine[1])
                s = GPUDL__ERR(ctx, GPUDL_ERR_DIST, "model_set_dist: rank %d built a different model from rank %d's: %lld "
                               "parameters (layers %016llx) against %lld (layers %016llx); every rank must build the same",
                               k, d->rank, (long long)all[2 * k + 1], (unsigned long long)all[2 * k], (long long)mine[1],
                               (unsigned long long)mine[0]);
        GPUDL_FREE(all);
        if (s != GPUDL_OK) { m->dist = NULL; return s; }
        lo[0] = hi[0] = mine[0]; lo[1] = hi[1] = mine[1];
#else
        m->dist = NULL;
        return GPUDL__ERR(ctx, GPUDL_ERR_UNSUPPORTED, "model_set_dist: a CPU model across %d ranks needs a build with -DGPUDL_MPI",
                          d->size);
#endif
    }
    if (lo[0] != hi[0] || lo[1] != hi[1]) {
        m->dist = NULL;
        return GPUDL__ERR(ctx, GPUDL_ERR_DIST, "model_set_dist: the ranks built different models: parameters from %lld to %lld, "
                          "layer fingerprints %016llx to %016llx (rank %d has %lld, %016llx); every rank must build the same",
                          (long long)lo[1], (long long)hi[1], (unsigned long long)lo[0], (unsigned long long)hi[0], d->rank,
                          (long long)mine[1], (unsigned long long)mine[0]);
    }
    /* rank 0's weights and buffers everywhere */
    GPUDL__TRY(gpudl_dist_broadcast(d, ctx, &m->params, 0));
    if (m->nbuffers) GPUDL__TRY(gpudl_dist_broadcast(d, ctx, &m->buffers, 0));
    (void)k;
    return gpudl__refresh_params16(m);
}

/* Backward's part: the gradients of layers [i, end) are ready on the
   context's stream. On the GPU, a bucket is all-reduced once it holds
   bucket floats (or when last is set) on the dist's stream; on the CPU the
   whole buffer at the end. *hi: the end of what is not yet reduced. */
static gpudl_status gpudl__dist_grads(gpudl_model *m, int i, int last, int64_t *hi) {
    gpudl_dist *d = m->dist;
    gpudl_ctx *ctx = m->ctx;
    int64_t lo = *hi;
    if (m->layers[i].np > 0) lo = m->layers[i].poff[0];
    if (!last && (*hi - lo < d->bucket || !GPUDL__ON_GPU(&m->grads))) return GPUDL_OK;
    if (last) lo = 0;
    if (lo >= *hi) return GPUDL_OK;
#ifdef GPUDL__HAVE_NCCL
    if (GPUDL__ON_GPU(&m->grads)) {
        GPUDL__CUDA(ctx, cudaEventRecord(d->ready, ctx->stream));
        GPUDL__CUDA(ctx, cudaStreamWaitEvent(d->stream, d->ready, 0));
        GPUDL__TRY(gpudl__nccl_check(ctx, d, ncclAllReduce((float *)m->grads.data + lo, (float *)m->grads.data + lo,
                                                           (size_t)(*hi - lo), ncclFloat, ncclAvg, d->nccl, d->stream),
                                     "model_backward: ncclAllReduce of the gradients"));
        *hi = lo;
        if (last) {   /* the context's stream (the step) waits for the last bucket; the host waits in model_step */
            GPUDL__CUDA(ctx, cudaEventRecord(d->done, d->stream));
            GPUDL__CUDA(ctx, cudaStreamWaitEvent(ctx->stream, d->done, 0));
            d->pending = 1;
        }
        return GPUDL_OK;
    }
#endif
#ifdef GPUDL_MPI
    if (!GPUDL__ON_GPU(&m->grads)) {   /* MPI is synchronous here: one call for the whole buffer, at the end */
        GPUDL__TRY(gpudl__mpi_allreduce(ctx, d, (float *)m->grads.data + lo, *hi - lo, 1, "model_backward: the gradients"));
        *hi = lo;
        return GPUDL_OK;
    }
#endif
    return GPUDL__ERR(ctx, GPUDL_ERR_UNSUPPORTED, "model_backward: no way to all-reduce %s gradients in this build",
                      GPUDL__ON_GPU(&m->grads) ? "GPU" : "CPU");
}

/* model_step's part: waits (on the host, at most timeout_ms) for the last backward's all-reduce. */
static gpudl_status gpudl__dist_step(gpudl_model *m) {
#ifdef GPUDL__HAVE_NCCL
    gpudl_dist *d = m->dist;
    if (d && d->pending && d->nccl) {
        d->pending = 0;
        return gpudl__nccl_wait(m->ctx, d, d->done, "model_step: waiting for the gradients' all-reduce");
    }
#endif
    (void)m;
    return GPUDL_OK;
}

GPUDL__DEF gpudl_status gpudl_dataset_shard(gpudl_ctx *ctx, gpudl_dataset *ds, int rank, int size) {
    GPUDL__ENTER(ctx);
    if (!ds || !ds->xb.data) return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dataset_shard: NULL or uncreated dataset");
    if (size < 1 || rank < 0 || rank >= size || ds->batch % size != 0)
        return GPUDL__ERR(ctx, GPUDL_ERR_INVALID_ARG, "dataset_shard: rank %d of %d with batch %lld: need 0 <= rank < size and "
                          "a batch that size divides", rank, size, (long long)ds->batch);
    ds->shard_rank = rank;
    ds->shard_size = size;
    return GPUDL_OK;
}

/* GPUDL_STATIC under nvcc: the kernels are private to this file too (see
   GPUDL__KFN at the top) */
#ifdef GPUDL__KERNELS_PRIVATE
#  include "gpudl_kernels.cu"
#endif
#endif /* GPUDL__IMPLEMENTED */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(GPUDL_NO_MACRO_GUARD)
  _Pragma("pop_macro(\"A\")") _Pragma("pop_macro(\"B\")") _Pragma("pop_macro(\"C\")") _Pragma("pop_macro(\"D\")") _Pragma("pop_macro(\"E\")") _Pragma("pop_macro(\"F\")") _Pragma("pop_macro(\"G\")") _Pragma("pop_macro(\"H\")") _Pragma("pop_macro(\"I\")")
  _Pragma("pop_macro(\"J\")") _Pragma("pop_macro(\"K\")") _Pragma("pop_macro(\"L\")") _Pragma("pop_macro(\"M\")") _Pragma("pop_macro(\"N\")") _Pragma("pop_macro(\"O\")") _Pragma("pop_macro(\"P\")") _Pragma("pop_macro(\"Q\")") _Pragma("pop_macro(\"R\")")
  _Pragma("pop_macro(\"S\")") _Pragma("pop_macro(\"T\")") _Pragma("pop_macro(\"U\")") _Pragma("pop_macro(\"V\")") _Pragma("pop_macro(\"W\")") _Pragma("pop_macro(\"X\")") _Pragma("pop_macro(\"Y\")") _Pragma("pop_macro(\"Z\")") _Pragma("pop_macro(\"min\")") _Pragma("pop_macro(\"max\")")
#endif
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
