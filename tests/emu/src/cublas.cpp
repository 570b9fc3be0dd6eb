/* cublas.cpp - the emulated cuBLAS (v2 API): handles, GEMM in its typed /
   Ex / batched / strided-batched forms, and level-1/2 routines.

   Written from the cuBLAS 13 documentation (docs.nvidia.com/cuda/cublas,
   sections 2.2-2.8). Every function checks its arguments at call time and
   returns the status the documentation's "Return value" table gives; work
   that would run on the GPU is queued with enqueue() and checks the memory
   it touches there (an invalid pointer faults the device with
   cudaErrorIllegalAddress, as a kernel would). Host-pointer-mode scalars are
   read at call time, device-pointer-mode ones inside the queued work. */
#include <cublas_api.h>

#include "cublas_engine.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>
#include <algorithm>

using namespace cuemu;
using blas::Acc;
using blas::Mat;
using blas::Problem;
using blas::Rnd;
using blas::T;
using blas::raw;

namespace {
constexpr uint32_t kMagic = 0x53424c43u; /* a cuBLAS handle (cuBLASLt's differ) */
}

struct cublasContext {
    uint32_t magic = kMagic;
    int dev = 0;
    cudaStream_t stream = nullptr;
    cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
    cublasAtomicsMode_t atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    int sm_count_target = 0;
    cublasEmulationStrategy_t emulation = CUBLAS_EMULATION_STRATEGY_DEFAULT;
    void *default_ws = nullptr;     /* the default workspace pool */
    void *user_ws = nullptr;        /* cublasSetWorkspace() */
    size_t user_ws_bytes = 0;
};

namespace {

/* A call that queued no device work. */
cublasStatus_t done(cublasStatus_t s) {
    count_library_api_call();
    return s;
}

cublasContext *lookup(cublasHandle_t h) {
    if (!h || !blas::handle_lookup(h, nullptr) || h->magic != kMagic) return nullptr;
    return h;
}

bool op_ok(int o) { return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C; }

/* The device the handle's stream belongs to, or why a launch would fail. */
cublasStatus_t launch_device(const cublasContext *ctx, int *dev) {
    if (stream_device(ctx->stream, dev) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
    /* A device in an error state rejects kernel launches: the
       documentation's "the function failed to launch on the GPU". */
    if (sticky_error(*dev) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t submit(const cublasContext *ctx, const char *name, std::function<void()> fn) {
    if (enqueue(ctx->stream, name, std::move(fn)) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- GEMM ------------------------------------------------------------- */

/* One GEMM call, whatever the entry point. */
struct GemmCall {
    const char *api;
    int ta, tb;                         /* cublasOperation_t values */
    int m, n, k;
    const void *alpha, *beta;
    const void *A, *B;
    void *C;
    const void *const *Aarr = nullptr, *const *Barr = nullptr;
    void *const *Carr = nullptr;
    bool batched_ptrs = false;          /* pointer-array form */
    int lda, ldb, ldc;
    long long sA = 0, sB = 0, sC = 0;
    int batch = 1;
    int atype, btype, ctype;            /* cudaDataType_t values */
    int compute;                        /* cublasComputeType_t value */
    int algo = CUBLAS_GEMM_DEFAULT;
    bool typed_single = false;          /* S routines: math mode picks the compute */
    bool fast_align_rule_sgemm = false; /* cublasSgemmBatched's rule */
    bool fast_align_rule_ex = false;    /* cublasGemmBatchedEx's rule */
    int min_cc_major = 5, min_cc_minor = 0;
};

bool algo_ok(int a) {
    return a == CUBLAS_GEMM_DEFAULT || (a >= CUBLAS_GEMM_ALGO0 && a <= CUBLAS_GEMM_ALGO23) ||
           a == CUBLAS_GEMM_DEFAULT_TENSOR_OP || (a >= CUBLAS_GEMM_ALGO0_TENSOR_OP && a <= CUBLAS_GEMM_ALGO15_TENSOR_OP) ||
           a == CUBLAS_GEMM_AUTOTUNE;
}
bool algo_tensor_op(int a) { return a >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && a <= CUBLAS_GEMM_ALGO15_TENSOR_OP; }

/* The documented INVALID_VALUE conditions shared by every GEMM. */
cublasStatus_t check_dims(const GemmCall &g) {
    if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
    if (!op_ok(g.ta) || !op_ok(g.tb)) return CUBLAS_STATUS_INVALID_VALUE;
    int rows_a = g.ta == CUBLAS_OP_N ? g.m : g.k, rows_b = g.tb == CUBLAS_OP_N ? g.k : g.n;
    if (g.lda < (rows_a > 1 ? rows_a : 1) || g.ldb < (rows_b > 1 ? rows_b : 1) || g.ldc < (g.m > 1 ? g.m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!g.alpha || !g.beta) return CUBLAS_STATUS_INVALID_VALUE;
    if (!algo_ok(g.algo)) return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

/* Effective input rounding for single precision under the math mode
   (cublasMath_t): CUBLAS_TF32_TENSOR_OP_MATH lets FP32 routines and
   CUBLAS_COMPUTE_32F use TF32; the deprecated CUBLAS_TENSOR_OP_MATH (and,
   before sm_80 where cublasGemmAlgo_t still matters, the *_TENSOR_OP algos)
   the FAST_16F type. CUBLAS_PEDANTIC_MATH and the _PEDANTIC types: FP32. */
Rnd single_rounding(const cublasContext *ctx, const GemmCall &g, int major) {
    if (g.compute != CUBLAS_COMPUTE_32F) return Rnd::None;
    int mode = int(ctx->math) & 0xf;
    if (mode == CUBLAS_TF32_TENSOR_OP_MATH && major >= 8 && blas::tf32_allowed()) return Rnd::TF32;
    if (mode == CUBLAS_TENSOR_OP_MATH && major >= 7) return Rnd::F16;
    if (algo_tensor_op(g.algo) && major >= 7 && major < 8) return Rnd::F16;
    return Rnd::None;
}

/* Reads a host scalar of the scale type into the problem. */
void host_scalars(const GemmCall &g, T scale, Problem *p) {
    switch (scale) {
    case T::F32: p->alpha = *static_cast<const float *>(g.alpha); p->beta = *static_cast<const float *>(g.beta); break;
    case T::F64: p->alpha = *static_cast<const double *>(g.alpha); p->beta = *static_cast<const double *>(g.beta); break;
    case T::F16: {
        uint16_t a, b;
        memcpy(&a, g.alpha, 2);
        memcpy(&b, g.beta, 2);
        p->alpha = blas::half_to_float(a);
        p->beta = blas::half_to_float(b);
        break;
    }
    case T::I32:
        p->ialpha = *static_cast<const int32_t *>(g.alpha);
        p->ibeta = *static_cast<const int32_t *>(g.beta);
        break;
    default: break;
    }
}

Mat operand(const char *name, T type, int op, int64_t rows_op, int64_t cols_op, int ld, long long stride) {
    Mat M;
    M.name = name;
    M.type = type;
    M.trans = op != CUBLAS_OP_N;
    M.rows = M.trans ? cols_op : rows_op;
    M.cols = M.trans ? rows_op : cols_op;
    M.ld = ld;
    M.stride = stride;
    return M;
}

/* Call-time checks (documented return values) and the type plan. */
cublasStatus_t plan(const cublasContext *ctx, const GemmCall &g, blas::TypePlan *tp) {
    cublasStatus_t st = check_dims(g);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    const Profile &prof = profile(ctx->dev);
    if (prof.major < g.min_cc_major || (prof.major == g.min_cc_major && prof.minor < g.min_cc_minor))
        return CUBLAS_STATUS_ARCH_MISMATCH;
    int r = blas::plan_types(g.compute, -1, g.atype, g.btype, g.ctype, false, prof.major, tp);
    if (r != 0) return cublasStatus_t(r);
    if (g.typed_single && tp->a == T::F32 && g.compute == CUBLAS_COMPUTE_32F)
        tp->rnd = single_rounding(ctx, g, prof.major);
    if (tp->acc == Acc::I32) {
        /* 32I: A, B 4-byte aligned, lda and ldb multiples of 4. */
        if (g.lda % 4 || g.ldb % 4) return CUBLAS_STATUS_NOT_SUPPORTED;
        if (!g.batched_ptrs && (uintptr_t(g.A) % 4 || uintptr_t(g.B) % 4)) return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* The operands and arithmetic of the call (scalars and device apart). */
Problem describe(const GemmCall &g, const blas::TypePlan &tp) {
    Problem p;
    p.api = g.api;
    p.m = g.m; p.n = g.n; p.k = g.k; p.batch = g.batch;
    p.scale = tp.scale; p.acc = tp.acc; p.rnd = tp.rnd;
    p.blas_alpha_zero_skips_ab = true;  /* reference BLAS semantics (netlib sgemm) */
    p.A = operand("A", tp.a, g.ta, g.m, g.k, g.lda, g.sA);
    p.B = operand("B", tp.a, g.tb, g.k, g.n, g.ldb, g.sB);
    p.C = operand("C", tp.c, CUBLAS_OP_N, g.m, g.n, g.ldc, g.sC);
    if (g.batched_ptrs) {
        p.A.array = g.Aarr;
        p.B.array = g.Barr;
        p.C.array = reinterpret_cast<const void *const *>(g.Carr);
        bool fast = tp.rnd != Rnd::None || tp.a == T::F16 || tp.a == T::BF16 ||
                    (g.compute >= CUBLAS_COMPUTE_32F_FAST_16F && g.compute <= CUBLAS_COMPUTE_32F_FAST_TF32);
        if (g.fast_align_rule_ex && fast) { p.align_k16 = 8; p.align_k2 = true; }
        if (g.fast_align_rule_sgemm && tp.rnd != Rnd::None) p.align_k16 = 4;
    } else {
        p.A.ptr = static_cast<const char *>(g.A);
        p.B.ptr = static_cast<const char *>(g.B);
        p.C.ptr = static_cast<const char *>(g.C);
    }
    p.D = p.C;                          /* in place: C = alpha op(A) op(B) + beta C */
    return p;
}

cublasStatus_t gemm(cublasHandle_t handle, const GemmCall &g) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    blas::TypePlan tp;
    cublasStatus_t st = plan(ctx, g, &tp);
    if (st != CUBLAS_STATUS_SUCCESS) return done(st);
    if (g.m == 0 || g.n == 0 || g.batch == 0) return done(CUBLAS_STATUS_SUCCESS);
    Problem p = describe(g, tp);
    if (ctx->pointer_mode == CUBLAS_POINTER_MODE_HOST) {
        host_scalars(g, tp.scale, &p);
        bool i32 = tp.scale == T::I32;
        bool beta0 = i32 ? p.ibeta == 0 : p.beta == 0, alpha0 = i32 ? p.ialpha == 0 : p.alpha == 0;
        bool beta1 = i32 ? p.ibeta == 1 : p.beta == 1;
        if (!beta0 && !g.C && !g.batched_ptrs) return done(CUBLAS_STATUS_INVALID_VALUE);
        /* Reference BLAS quick return: C unchanged. */
        if ((alpha0 || g.k == 0) && beta1) return done(CUBLAS_STATUS_SUCCESS);
    } else {
        p.scalars_on_device = true;
        p.alpha_ptr = g.alpha;
        p.beta_ptr = g.beta;
    }
    p.user_ws = ctx->user_ws;
    p.user_ws_bytes = ctx->user_ws ? ctx->user_ws_bytes : 0;
    p.use_cblas = blas::cblas_enabled();
    st = launch_device(ctx, &p.dev);
    if (st != CUBLAS_STATUS_SUCCESS) return done(st);
    return submit(ctx, g.api, [p]() { blas::run(p); });
}

GemmCall typed_call(const char *api, int ta, int tb, int m, int n, int k, const void *alpha,
                    const void *A, int lda, const void *B, int ldb, const void *beta, void *C, int ldc, int type,
                    int compute) {
    GemmCall g;
    g.api = api; g.ta = ta; g.tb = tb; g.m = m; g.n = n; g.k = k;
    g.alpha = alpha; g.beta = beta; g.A = A; g.B = B; g.C = C;
    g.lda = lda; g.ldb = ldb; g.ldc = ldc;
    g.atype = g.btype = g.ctype = type;
    g.compute = compute;
    return g;
}

/* The compute type a typed routine runs with (PEDANTIC math mode picks
   the _PEDANTIC type; numerically the same here). */
int typed_compute(cublasHandle_t h, int normal, int pedantic) {
    cublasContext *ctx = lookup(h);
    return ctx && (int(ctx->math) & 0xf) == CUBLAS_PEDANTIC_MATH ? pedantic : normal;
}

/* ---- level 1 and 2 ------------------------------------------------------ */

/* Bytes spanned by n elements at increment inc (either sign). */
int64_t vec_bytes(int n, int inc, size_t es) {
    if (n <= 0) return 0;
    int64_t a = inc < 0 ? -int64_t(inc) : int64_t(inc);
    return (1 + int64_t(n - 1) * a) * int64_t(es);
}

/* Index of element i of a vector of n at increment inc (reference BLAS:
   a negative increment walks the vector from its end). */
inline int64_t vidx(int64_t i, int n, int inc) { return inc >= 0 ? i * inc : (int64_t(n) - 1 - i) * -int64_t(inc); }

bool vec_ok(int dev, const char *api, const char *what, const void *p, int64_t bytes, size_t es) {
    std::string why;
    if (bytes > 0 && !device_range(dev, p, size_t(bytes), &why)) {
        fault(cudaErrorIllegalAddress, "%s: %s: %s", api, what, why.c_str());
        return false;
    }
    if (bytes > 0 && uintptr_t(p) % es) {
        fault(cudaErrorMisalignedAddress, "%s: %s at %p is not aligned to %zu bytes", api, what, p, es);
        return false;
    }
    return true;
}

template <typename F>
bool dev_scalar(int dev, const char *api, const char *what, const F *p, F *out) {
    if (!vec_ok(dev, api, what, p, sizeof(F), sizeof(F))) return false;
    *out = *p;
    return true;
}

/* Common entry of level-1/2 routines: handle, then the launch device. */
cublasStatus_t begin(cublasHandle_t h, cublasContext **ctx) {
    *ctx = lookup(h);
    return *ctx ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

template <typename F>
cublasStatus_t axpy(const char *api, cublasHandle_t h, int n, const F *alpha, const F *x, int incx, F *y, int incy) {
    cublasContext *ctx;
    if (begin(h, &ctx) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (n <= 0) return done(CUBLAS_STATUS_SUCCESS);           /* reference BLAS quick return */
    bool dev_mode = ctx->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    F a = 0;
    if (!dev_mode) {
        a = *alpha;
        if (a == F(0)) return done(CUBLAS_STATUS_SUCCESS);  /* reference BLAS: y unchanged */
    }
    int dev;
    cublasStatus_t st = launch_device(ctx, &dev);
    if (st != CUBLAS_STATUS_SUCCESS) return done(st);
    return submit(ctx, api, [=]() {
        F s = a;
        if (dev_mode && !dev_scalar(dev, api, "alpha (device pointer mode)", alpha, &s)) return;
        if (dev_mode && s == F(0)) return;
        if (!vec_ok(dev, api, "x", x, vec_bytes(n, incx, sizeof(F)), sizeof(F)) ||
            !vec_ok(dev, api, "y", y, vec_bytes(n, incy, sizeof(F)), sizeof(F)))
            return;
        for (int64_t i = 0; i < n; ++i) y[vidx(i, n, incy)] += s * x[vidx(i, n, incx)];
    });
}

template <typename F>
cublasStatus_t scal(const char *api, cublasHandle_t h, int n, const F *alpha, F *x, int incx) {
    cublasContext *ctx;
    if (begin(h, &ctx) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (n <= 0 || incx <= 0) return done(CUBLAS_STATUS_SUCCESS); /* reference BLAS quick return */
    bool dev_mode = ctx->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    F a = dev_mode ? F(0) : *alpha;
    int dev;
    cublasStatus_t st = launch_device(ctx, &dev);
    if (st != CUBLAS_STATUS_SUCCESS) return done(st);
    return submit(ctx, api, [=]() {
        F s = a;
        if (dev_mode && !dev_scalar(dev, api, "alpha (device pointer mode)", alpha, &s)) return;
        if (!vec_ok(dev, api, "x", x, vec_bytes(n, incx, sizeof(F)), sizeof(F))) return;
        for (int64_t i = 0; i < n; ++i) x[i * incx] *= s;
    });
}

/* A reduction's result: written by the queued work to device memory
   (device pointer mode) or, in host pointer mode, handed back to the host,
   which blocks until the work has run (documentation, "Scalar
   Parameters": these functions block the CPU in host pointer mode).
   TODO(runtime): internal.h offers no host wait; this uses the public
   cudaStreamSynchronize, which the runtime counts as a host wait. */
template <typename R>
cublasStatus_t reduce(const char *api, cublasContext *ctx, R *result, std::function<bool(int, R *)> body) {
    bool dev_mode = ctx->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    int dev;
    cublasStatus_t st = launch_device(ctx, &dev);
    if (st != CUBLAS_STATUS_SUCCESS) return done(st);
    if (dev_mode) {
        return submit(ctx, api, [=]() {
            R v{};
            if (!body(dev, &v)) return;
            if (!vec_ok(dev, api, "result (device pointer mode)", result, sizeof(R), sizeof(R))) return;
            *result = v;
        });
    }
    auto box = std::make_shared<R>();
    auto ok = std::make_shared<bool>(false);
    st = submit(ctx, api, [=]() { *ok = body(dev, box.get()); });
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if (cudaStreamSynchronize(ctx->stream) != cudaSuccess || !*ok) return CUBLAS_STATUS_EXECUTION_FAILED;
    *result = *box;                      /* host code writes the host result */
    return CUBLAS_STATUS_SUCCESS;
}

template <typename F>
cublasStatus_t dot(const char *api, cublasHandle_t h, int n, const F *x, int incx, const F *y, int incy, F *result) {
    cublasContext *ctx;
    if (begin(h, &ctx) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    /* Not in dot's table (it is in nrm2's and amax's); a NULL result
       could only crash, so it is rejected like theirs. */
    if (!result) return done(CUBLAS_STATUS_INVALID_VALUE);
    return reduce<F>(api, ctx, result, [=](int dev, F *out) {
        *out = F(0);                     /* n <= 0: 0 */
        if (n <= 0) return true;
        if (!vec_ok(dev, api, "x", x, vec_bytes(n, incx, sizeof(F)), sizeof(F)) ||
            !vec_ok(dev, api, "y", y, vec_bytes(n, incy, sizeof(F)), sizeof(F)))
            return false;
        double s = 0;                    /* accumulated in double, rounded once */
        for (int64_t i = 0; i < n; ++i) s += double(x[vidx(i, n, incx)]) * double(y[vidx(i, n, incy)]);
        *out = F(s);
        return true;
    });
}

template <typename F>
cublasStatus_t nrm2(const char *api, cublasHandle_t h, int n, const F *x, int incx, F *result) {
    cublasContext *ctx;
    if (begin(h, &ctx) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (!result) return done(CUBLAS_STATUS_INVALID_VALUE);
    return reduce<F>(api, ctx, result, [=](int dev, F *out) {
        *out = F(0);                     /* n <= 0 or incx <= 0: 0 */
        if (n <= 0 || incx <= 0) return true;
        if (!vec_ok(dev, api, "x", x, vec_bytes(n, incx, sizeof(F)), sizeof(F))) return false;
        /* Scaled by the largest magnitude, so no intermediate overflow or
           underflow (the documentation's "multiphase accumulation"). */
        long double big = 0;
        for (int64_t i = 0; i < n; ++i) big = fmaxl(big, fabsl((long double)x[i * incx]));
        if (big == 0 || isinf(big)) { *out = F(big); return true; }
        long double s = 0;
        for (int64_t i = 0; i < n; ++i) {
            long double t = x[i * incx] / big;
            s += t * t;
        }
        *out = F(big * sqrtl(s));
        return true;
    });
}

/* I<t>amax / I<t>amin: the first index (1-based) of the largest or
   smallest |x|, as the reference BLAS loop finds it: a NaN never compares
   larger or smaller. n <= 0 or incx <= 0: 0. */
template <typename F>
cublasStatus_t iamax_min(const char *api, cublasHandle_t h, int n, const F *x, int incx, int *result, bool max) {
    cublasContext *ctx;
    if (begin(h, &ctx) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (!result) return done(CUBLAS_STATUS_INVALID_VALUE);
    return reduce<int>(api, ctx, result, [=](int dev, int *out) {
        *out = 0;
        if (n <= 0 || incx <= 0) return true;
        if (!vec_ok(dev, api, "x", x, vec_bytes(n, incx, sizeof(F)), sizeof(F))) return false;
        F best = fabs(x[0]);
        int at = 1;
        for (int64_t i = 1; i < n; ++i) {
            F v = fabs(x[i * incx]);
            if (max ? v > best : v < best) { best = v; at = int(i + 1); }
        }
        *out = at;
        return true;
    });
}

/* <t>asum: sum of |x|, accumulated in double. n <= 0 or incx <= 0: 0. */
template <typename F>
cublasStatus_t asum(const char *api, cublasHandle_t h, int n, const F *x, int incx, F *result) {
    cublasContext *ctx;
    if (begin(h, &ctx) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (!result) return done(CUBLAS_STATUS_INVALID_VALUE);
    return reduce<F>(api, ctx, result, [=](int dev, F *out) {
        *out = F(0);
        if (n <= 0 || incx <= 0) return true;
        if (!vec_ok(dev, api, "x", x, vec_bytes(n, incx, sizeof(F)), sizeof(F))) return false;
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += fabs(double(x[i * incx]));
        *out = F(s);
        return true;
    });
}

/* <t>copy (y = x) and <t>swap (x <-> y); n <= 0: nothing. */
template <typename F>
cublasStatus_t copy_swap(const char *api, cublasHandle_t h, int n, F *x, int incx, F *y, int incy, bool swap) {
    cublasContext *ctx;
    if (begin(h, &ctx) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (n <= 0) return done(CUBLAS_STATUS_SUCCESS);
    int dev;
    cublasStatus_t st = launch_device(ctx, &dev);
    if (st != CUBLAS_STATUS_SUCCESS) return done(st);
    return submit(ctx, api, [=]() {
        if (!vec_ok(dev, api, "x", x, vec_bytes(n, incx, sizeof(F)), sizeof(F)) ||
            !vec_ok(dev, api, "y", y, vec_bytes(n, incy, sizeof(F)), sizeof(F)))
            return;
        for (int64_t i = 0; i < n; ++i) {
            F &xi = x[vidx(i, n, incx)], &yi = y[vidx(i, n, incy)];
            F t = yi;
            yi = xi;
            if (swap) xi = t;
        }
    });
}

/* cublasSet/GetVector/Matrix: strided copies with cudaMemcpy2D, as the
   library does; an error from the copy is MAPPING_ERROR (documented: "an
   error accessing GPU memory"). */
cublasStatus_t copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                      cudaMemcpyKind kind, const cudaStream_t *stream) {
    cudaError_t e = stream ? cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, *stream)
                           : cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
    return done(e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_MAPPING_ERROR);
}

cublasStatus_t vector_copy(int n, int es, const void *x, int incx, void *y, int incy, cudaMemcpyKind kind,
                           const cudaStream_t *stream) {
    if (incx <= 0 || incy <= 0 || es <= 0) return done(CUBLAS_STATUS_INVALID_VALUE);
    if (n <= 0) return done(CUBLAS_STATUS_SUCCESS);
    return copy2d(y, size_t(incy) * es, x, size_t(incx) * es, size_t(es), size_t(n), kind, stream);
}

cublasStatus_t matrix_copy(int rows, int cols, int es, const void *A, int lda, void *B, int ldb, cudaMemcpyKind kind,
                           const cudaStream_t *stream) {
    if (rows < 0 || cols < 0 || es <= 0 || lda <= 0 || ldb <= 0) return done(CUBLAS_STATUS_INVALID_VALUE);
    if (rows == 0 || cols == 0) return done(CUBLAS_STATUS_SUCCESS);
    return copy2d(B, size_t(ldb) * es, A, size_t(lda) * es, size_t(rows) * es, size_t(cols), kind, stream);
}

template <typename F>
cublasStatus_t gemv(const char *api, cublasHandle_t h, int trans, int m, int n, const F *alpha,
                    const F *A, int lda, const F *x, int incx, const F *beta, F *y, int incy) {
    cublasContext *ctx;
    if (begin(h, &ctx) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    /* Documented: m < 0, n < 0, incx == 0, incy == 0. Also the parameter
       table's lda >= max(1, m) and a valid trans (as the reference BLAS). */
    if (m < 0 || n < 0 || incx == 0 || incy == 0 || !op_ok(trans) || lda < (m > 1 ? m : 1))
        return done(CUBLAS_STATUS_INVALID_VALUE);
    if (m == 0 || n == 0) return done(CUBLAS_STATUS_SUCCESS);
    bool dev_mode = ctx->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    F a = 0, b = 0;
    if (!dev_mode) {
        a = *alpha;
        b = *beta;
        if (a == F(0) && b == F(1)) return done(CUBLAS_STATUS_SUCCESS);
    }
    int dev;
    cublasStatus_t st = launch_device(ctx, &dev);
    if (st != CUBLAS_STATUS_SUCCESS) return done(st);
    return submit(ctx, api, [=]() {
        F sa = a, sb = b;
        if (dev_mode && (!dev_scalar(dev, api, "alpha (device pointer mode)", alpha, &sa) ||
                         !dev_scalar(dev, api, "beta (device pointer mode)", beta, &sb)))
            return;
        bool tr = trans != CUBLAS_OP_N;
        int lenx = tr ? m : n, leny = tr ? n : m;
        bool use_a = sa != F(0);
        if (use_a && (!vec_ok(dev, api, "A", A, (int64_t(n - 1) * lda + m) * int64_t(sizeof(F)), sizeof(F)) ||
                      !vec_ok(dev, api, "x", x, vec_bytes(lenx, incx, sizeof(F)), sizeof(F))))
            return;
        if (!vec_ok(dev, api, "y", y, vec_bytes(leny, incy, sizeof(F)), sizeof(F))) return;
        parallel_for(leny, 256, [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i) {
                F t = 0;
                if (use_a)
                    for (int64_t j = 0; j < lenx; ++j)
                        t += (tr ? A[j + i * lda] : A[i + j * lda]) * x[vidx(j, lenx, incx)];
                F &yi = y[vidx(i, leny, incy)];
                /* beta == 0: y is not read (it need not be valid input). */
                yi = sb == F(0) ? sa * t : (use_a ? sa * t + sb * yi : sb * yi);
            }
        });
    });
}

/* ---- batched LU (cuBLAS docs, "BLAS-like Extension": cublas<t>getrfBatched,
   cublas<t>getriBatched) ---------------------------------------------------
   getrf factors each n x n A[i] (column-major, lda) in place as
   P * A = L * U, L unit lower triangular, by Gaussian elimination with
   partial pivoting (row interchanges); P holds n ints per matrix, LAPACK's
   ipiv: P[j] = k (1-based) means row j was swapped with row k. P == NULL:
   no pivoting. info[i] = 0, or k > 0 when U(k,k) is exactly zero (the
   first such k; the factorization still completes, as LAPACK's getf2).
   getri computes C[i] = inv(A[i]) out of place from getrf's output (the
   same P, or NULL when getrf had none); info[i] = k > 0 when U(k,k) is
   zero (C[i] is then not written). INVALID_VALUE: n < 0, batchSize < 0,
   lda < max(1, n), ldc < max(1, n). */
template <typename F>
bool batch_ptrs(int dev, const char *api, const char *what, const void *arr, int batch, std::vector<F *> *out) {
    if (!vec_ok(dev, api, what, arr, int64_t(batch) * int64_t(sizeof(void *)), sizeof(void *))) return false;
    F *const *a = static_cast<F *const *>(arr);
    out->assign(a, a + batch);
    return true;
}

template <typename F>
cublasStatus_t getrf_batched(const char *api, cublasHandle_t h, int n, F *const A[], int lda, int *P, int *info, int batch) {
    cublasContext *ctx;
    if (begin(h, &ctx) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (n < 0 || batch < 0 || lda < (n > 1 ? n : 1)) return done(CUBLAS_STATUS_INVALID_VALUE);
    if (n == 0 || batch == 0) return done(CUBLAS_STATUS_SUCCESS);
    int dev;
    cublasStatus_t st = launch_device(ctx, &dev);
    if (st != CUBLAS_STATUS_SUCCESS) return done(st);
    return submit(ctx, api, [=]() {
        std::vector<F *> mats;
        if (!batch_ptrs<F>(dev, api, "Aarray", (const void *)A, batch, &mats)) return;
        if (!vec_ok(dev, api, "info", info, int64_t(batch) * int64_t(sizeof(int)), sizeof(int))) return;
        if (P && !vec_ok(dev, api, "P", P, int64_t(batch) * n * int64_t(sizeof(int)), sizeof(int))) return;
        int64_t bytes = (int64_t(n - 1) * lda + n) * int64_t(sizeof(F));
        for (int b = 0; b < batch; b++)
            if (!vec_ok(dev, api, "Aarray[i]", mats[size_t(b)], bytes, sizeof(F))) return;
        parallel_for(batch, 64, [&](int64_t b0, int64_t b1) {
            for (int64_t b = b0; b < b1; ++b) {
                F *a = mats[size_t(b)];
                int *piv = P ? P + b * n : nullptr;
                int first_zero = 0;
                for (int j = 0; j < n; j++) {
                    int p = j;
                    if (piv) {
                        for (int i = j + 1; i < n; i++)
                            if (fabs(double(a[i + int64_t(j) * lda])) > fabs(double(a[p + int64_t(j) * lda]))) p = i;
                        piv[j] = p + 1;
                        if (p != j)
                            for (int c = 0; c < n; c++) std::swap(a[j + int64_t(c) * lda], a[p + int64_t(c) * lda]);
                    }
                    F d = a[j + int64_t(j) * lda];
                    if (d == F(0)) {
                        if (!first_zero) first_zero = j + 1;
                        continue;
                    }
                    for (int i = j + 1; i < n; i++) a[i + int64_t(j) * lda] /= d;
                    for (int c = j + 1; c < n; c++) {
                        F u = a[j + int64_t(c) * lda];
                        for (int i = j + 1; i < n; i++) a[i + int64_t(c) * lda] -= a[i + int64_t(j) * lda] * u;
                    }
                }
                info[b] = first_zero;
            }
        });
    });
}

template <typename F>
cublasStatus_t getri_batched(const char *api, cublasHandle_t h, int n, const F *const A[], int lda, const int *P,
                             F *const C[], int ldc, int *info, int batch) {
    cublasContext *ctx;
    if (begin(h, &ctx) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (n < 0 || batch < 0 || lda < (n > 1 ? n : 1) || ldc < (n > 1 ? n : 1)) return done(CUBLAS_STATUS_INVALID_VALUE);
    if (n == 0 || batch == 0) return done(CUBLAS_STATUS_SUCCESS);
    int dev;
    cublasStatus_t st = launch_device(ctx, &dev);
    if (st != CUBLAS_STATUS_SUCCESS) return done(st);
    return submit(ctx, api, [=]() {
        std::vector<F *> as, cs;
        if (!batch_ptrs<F>(dev, api, "Aarray", (const void *)A, batch, &as) ||
            !batch_ptrs<F>(dev, api, "Carray", (const void *)C, batch, &cs))
            return;
        if (!vec_ok(dev, api, "info", info, int64_t(batch) * int64_t(sizeof(int)), sizeof(int))) return;
        if (P && !vec_ok(dev, api, "P", P, int64_t(batch) * n * int64_t(sizeof(int)), sizeof(int))) return;
        int64_t abytes = (int64_t(n - 1) * lda + n) * int64_t(sizeof(F)), cbytes = (int64_t(n - 1) * ldc + n) * int64_t(sizeof(F));
        for (int b = 0; b < batch; b++)
            if (!vec_ok(dev, api, "Aarray[i]", as[size_t(b)], abytes, sizeof(F)) ||
                !vec_ok(dev, api, "Carray[i]", cs[size_t(b)], cbytes, sizeof(F)))
                return;
        parallel_for(batch, 64, [&](int64_t b0, int64_t b1) {
            std::vector<F> col(size_t(n), F(0));
            for (int64_t b = b0; b < b1; ++b) {
                const F *a = as[size_t(b)];
                F *c = cs[size_t(b)];
                int zero = 0;
                for (int j = 0; j < n && !zero; j++)
                    if (a[j + int64_t(j) * lda] == F(0)) zero = j + 1;
                info[b] = zero;
                if (zero) continue;
                /* column k of inv(A) solves L U x = P e_k: the interchanges in order */
                for (int k = 0; k < n; k++) {
                    std::fill(col.begin(), col.end(), F(0));
                    col[size_t(k)] = F(1);
                    if (P)
                        for (int j = 0; j < n; j++) {
                            int p = P[b * n + j] - 1;
                            if (p >= 0 && p < n && p != j) std::swap(col[size_t(j)], col[size_t(p)]);
                        }
                    for (int j = 0; j < n; j++)
                        for (int i = j + 1; i < n; i++) col[size_t(i)] -= a[i + int64_t(j) * lda] * col[size_t(j)];
                    for (int j = n - 1; j >= 0; j--) {
                        col[size_t(j)] /= a[j + int64_t(j) * lda];
                        for (int i = 0; i < j; i++) col[size_t(i)] -= a[i + int64_t(j) * lda] * col[size_t(j)];
                    }
                    for (int i = 0; i < n; i++) c[i + int64_t(k) * ldc] = col[size_t(i)];
                }
            }
        });
    });
}

}  // namespace

/* ---- helper functions --------------------------------------------------- */
extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
    if (!handle) return done(CUBLAS_STATUS_INVALID_VALUE);
    if (device_count() == 0) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    int dev = current_device();
    if (sticky_error(dev) != cudaSuccess) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    auto *ctx = new cublasContext;
    ctx->dev = dev;
    /* The default workspace pool: 32 MiB on Hopper and Blackwell, else
       4 MiB (documentation of cublasSetWorkspace). */
    size_t ws = profile(dev).major >= 9 ? (size_t(32) << 20) : (size_t(4) << 20);
    ctx->default_ws = internal_alloc(dev, ws);
    if (!ctx->default_ws) {
        delete ctx;
        return done(CUBLAS_STATUS_ALLOC_FAILED);
    }
    blas::handle_register(ctx, dev);
    *handle = ctx;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    /* Documented: releasing the resources implies cudaDeviceSynchronize(). */
    if (current_device() == ctx->dev) (void)cudaDeviceSynchronize();
    blas::handle_unregister(ctx);
    internal_free(ctx->default_ws);
    delete ctx;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t, int *version) {
    /* May be called with a NULL handle. */
    if (!version) return done(CUBLAS_STATUS_INVALID_VALUE);
    *version = CUBLAS_VERSION;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value) {
    if (!value) return done(CUBLAS_STATUS_INVALID_VALUE);
    switch (raw(type)) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; break;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; break;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; break;
    default: return done(CUBLAS_STATUS_INVALID_VALUE);
    }
    return done(CUBLAS_STATUS_SUCCESS);
}

size_t cublasGetCudartVersion(void) {
    count_library_api_call();
    return CUDART_VERSION;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace, size_t workspaceSizeInBytes) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (uintptr_t(workspace) % 256) return done(CUBLAS_STATUS_INVALID_VALUE);
    /* The emulated routines need no workspace (never ALLOC_FAILED); the
       GEMMs check that it is valid device memory when they run. */
    ctx->user_ws = workspace;
    ctx->user_ws_bytes = workspaceSizeInBytes;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    ctx->stream = streamId;
    ctx->user_ws = nullptr;              /* documented: back to the default pool */
    ctx->user_ws_bytes = 0;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (!streamId) return done(CUBLAS_STATUS_INVALID_VALUE);
    *streamId = ctx->stream;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (!mode) return done(CUBLAS_STATUS_INVALID_VALUE);
    *mode = ctx->pointer_mode;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    int v = raw(mode);
    if (v != CUBLAS_POINTER_MODE_HOST && v != CUBLAS_POINTER_MODE_DEVICE) return done(CUBLAS_STATUS_INVALID_VALUE);
    ctx->pointer_mode = cublasPointerMode_t(v);
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t *mode) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (!mode) return done(CUBLAS_STATUS_INVALID_VALUE);
    *mode = ctx->atomics;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    /* The routines here have no atomics variant: the mode is only
       remembered. A value that is no mode: INVALID_VALUE (undocumented). */
    int v = raw(mode);
    if (v != CUBLAS_ATOMICS_NOT_ALLOWED && v != CUBLAS_ATOMICS_ALLOWED) return done(CUBLAS_STATUS_INVALID_VALUE);
    ctx->atomics = cublasAtomicsMode_t(v);
    return done(CUBLAS_STATUS_SUCCESS);
}

/* cublasSetMathMode: one of the modes, optionally with
   CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION or'ed in (not with the
   deprecated CUBLAS_TENSOR_OP_MATH), and a single-precision mode may be
   combined with CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH. */
static bool math_mode_ok(int mode) {
    if (mode & ~0x1f) return false;
    int single = mode & 0x7, fp64 = mode & 0x8, flag = mode & 0x10;
    if (single > CUBLAS_FP32_EMULATED_BF16X9_MATH) return false;
    if (single == CUBLAS_TENSOR_OP_MATH && (fp64 || flag)) return false;
    return true;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (!mode) return done(CUBLAS_STATUS_INVALID_VALUE);
    *mode = ctx->math;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    int v = raw(mode);
    if (!math_mode_ok(v)) return done(CUBLAS_STATUS_INVALID_VALUE);
    ctx->math = cublasMath_t(v);
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasGetSmCountTarget(cublasHandle_t handle, int *smCountTarget) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (!smCountTarget) return done(CUBLAS_STATUS_INVALID_VALUE);
    *smCountTarget = ctx->sm_count_target;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int smCountTarget) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (smCountTarget < 0 || smCountTarget > profile(ctx->dev).sms) return done(CUBLAS_STATUS_INVALID_VALUE);
    ctx->sm_count_target = smCountTarget;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasGetEmulationStrategy(cublasHandle_t handle, cublasEmulationStrategy_t *emulationStrategy) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (!emulationStrategy) return done(CUBLAS_STATUS_INVALID_VALUE);
    *emulationStrategy = ctx->emulation;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasSetEmulationStrategy(cublasHandle_t handle, cublasEmulationStrategy_t emulationStrategy) {
    cublasContext *ctx = lookup(handle);
    if (!ctx) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    int v = raw(emulationStrategy);
    if (v < 0 || v > CUBLAS_EMULATION_STRATEGY_EAGER) return done(CUBLAS_STATUS_INVALID_VALUE);
    ctx->emulation = cublasEmulationStrategy_t(v);
    return done(CUBLAS_STATUS_SUCCESS);
}

const char *cublasGetStatusName(cublasStatus_t status) {
    count_library_api_call();
    return blas::status_name(raw(status));
}

const char *cublasGetStatusString(cublasStatus_t status) {
    count_library_api_call();
    return blas::status_string(raw(status));
}

/* ---- host <-> device copies ------------------------------------------------ */
cublasStatus_t cublasSetVector(int n, int elemSize, const void *x, int incx, void *devicePtr, int incy) {
    return vector_copy(n, elemSize, x, incx, devicePtr, incy, cudaMemcpyHostToDevice, nullptr);
}
cublasStatus_t cublasGetVector(int n, int elemSize, const void *x, int incx, void *y, int incy) {
    return vector_copy(n, elemSize, x, incx, y, incy, cudaMemcpyDeviceToHost, nullptr);
}
cublasStatus_t cublasSetMatrix(int rows, int cols, int elemSize, const void *A, int lda, void *B, int ldb) {
    return matrix_copy(rows, cols, elemSize, A, lda, B, ldb, cudaMemcpyHostToDevice, nullptr);
}
cublasStatus_t cublasGetMatrix(int rows, int cols, int elemSize, const void *A, int lda, void *B, int ldb) {
    return matrix_copy(rows, cols, elemSize, A, lda, B, ldb, cudaMemcpyDeviceToHost, nullptr);
}
cublasStatus_t cublasSetVectorAsync(int n, int elemSize, const void *hostPtr, int incx, void *devicePtr, int incy,
                                    cudaStream_t stream) {
    return vector_copy(n, elemSize, hostPtr, incx, devicePtr, incy, cudaMemcpyHostToDevice, &stream);
}
cublasStatus_t cublasGetVectorAsync(int n, int elemSize, const void *devicePtr, int incx, void *hostPtr, int incy,
                                    cudaStream_t stream) {
    return vector_copy(n, elemSize, devicePtr, incx, hostPtr, incy, cudaMemcpyDeviceToHost, &stream);
}
cublasStatus_t cublasSetMatrixAsync(int rows, int cols, int elemSize, const void *A, int lda, void *B, int ldb,
                                    cudaStream_t stream) {
    return matrix_copy(rows, cols, elemSize, A, lda, B, ldb, cudaMemcpyHostToDevice, &stream);
}
cublasStatus_t cublasGetMatrixAsync(int rows, int cols, int elemSize, const void *A, int lda, void *B, int ldb,
                                    cudaStream_t stream) {
    return matrix_copy(rows, cols, elemSize, A, lda, B, ldb, cudaMemcpyDeviceToHost, &stream);
}

/* ---- level 1 ------------------------------------------------------------- */
cublasStatus_t cublasSnrm2_v2(cublasHandle_t h, int n, const float *x, int incx, float *result) {
    return nrm2<float>("cublasSnrm2", h, n, x, incx, result);
}
cublasStatus_t cublasDnrm2_v2(cublasHandle_t h, int n, const double *x, int incx, double *result) {
    return nrm2<double>("cublasDnrm2", h, n, x, incx, result);
}
cublasStatus_t cublasSdot_v2(cublasHandle_t h, int n, const float *x, int incx, const float *y, int incy,
                             float *result) {
    return dot<float>("cublasSdot", h, n, x, incx, y, incy, result);
}
cublasStatus_t cublasDdot_v2(cublasHandle_t h, int n, const double *x, int incx, const double *y, int incy,
                             double *result) {
    return dot<double>("cublasDdot", h, n, x, incx, y, incy, result);
}
cublasStatus_t cublasSscal_v2(cublasHandle_t h, int n, const float *alpha, float *x, int incx) {
    return scal<float>("cublasSscal", h, n, alpha, x, incx);
}
cublasStatus_t cublasDscal_v2(cublasHandle_t h, int n, const double *alpha, double *x, int incx) {
    return scal<double>("cublasDscal", h, n, alpha, x, incx);
}
cublasStatus_t cublasSaxpy_v2(cublasHandle_t h, int n, const float *alpha, const float *x, int incx, float *y,
                              int incy) {
    return axpy<float>("cublasSaxpy", h, n, alpha, x, incx, y, incy);
}
cublasStatus_t cublasDaxpy_v2(cublasHandle_t h, int n, const double *alpha, const double *x, int incx, double *y,
                              int incy) {
    return axpy<double>("cublasDaxpy", h, n, alpha, x, incx, y, incy);
}
cublasStatus_t cublasIsamax_v2(cublasHandle_t h, int n, const float *x, int incx, int *result) {
    return iamax_min<float>("cublasIsamax", h, n, x, incx, result, true);
}
cublasStatus_t cublasIdamax_v2(cublasHandle_t h, int n, const double *x, int incx, int *result) {
    return iamax_min<double>("cublasIdamax", h, n, x, incx, result, true);
}
cublasStatus_t cublasIsamin_v2(cublasHandle_t h, int n, const float *x, int incx, int *result) {
    return iamax_min<float>("cublasIsamin", h, n, x, incx, result, false);
}
cublasStatus_t cublasIdamin_v2(cublasHandle_t h, int n, const double *x, int incx, int *result) {
    return iamax_min<double>("cublasIdamin", h, n, x, incx, result, false);
}
cublasStatus_t cublasSasum_v2(cublasHandle_t h, int n, const float *x, int incx, float *result) {
    return asum<float>("cublasSasum", h, n, x, incx, result);
}
cublasStatus_t cublasDasum_v2(cublasHandle_t h, int n, const double *x, int incx, double *result) {
    return asum<double>("cublasDasum", h, n, x, incx, result);
}
cublasStatus_t cublasScopy_v2(cublasHandle_t h, int n, const float *x, int incx, float *y, int incy) {
    return copy_swap<float>("cublasScopy", h, n, const_cast<float *>(x), incx, y, incy, false);
}
cublasStatus_t cublasDcopy_v2(cublasHandle_t h, int n, const double *x, int incx, double *y, int incy) {
    return copy_swap<double>("cublasDcopy", h, n, const_cast<double *>(x), incx, y, incy, false);
}
cublasStatus_t cublasSswap_v2(cublasHandle_t h, int n, float *x, int incx, float *y, int incy) {
    return copy_swap<float>("cublasSswap", h, n, x, incx, y, incy, true);
}
cublasStatus_t cublasDswap_v2(cublasHandle_t h, int n, double *x, int incx, double *y, int incy) {
    return copy_swap<double>("cublasDswap", h, n, x, incx, y, incy, true);
}

/* ---- level 2 ------------------------------------------------------------- */
cublasStatus_t cublasSgemv_v2(cublasHandle_t h, cublasOperation_t trans, int m, int n, const float *alpha,
                              const float *A, int lda, const float *x, int incx, const float *beta, float *y,
                              int incy) {
    return gemv<float>("cublasSgemv", h, raw(trans), m, n, alpha, A, lda, x, incx, beta, y, incy);
}
cublasStatus_t cublasDgemv_v2(cublasHandle_t h, cublasOperation_t trans, int m, int n, const double *alpha,
                              const double *A, int lda, const double *x, int incx, const double *beta, double *y,
                              int incy) {
    return gemv<double>("cublasDgemv", h, raw(trans), m, n, alpha, A, lda, x, incx, beta, y, incy);
}

/* ---- level 3 ------------------------------------------------------------- */
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float *alpha, const float *A, int lda, const float *B, int ldb,
                              const float *beta, float *C, int ldc) {
    GemmCall g = typed_call("cublasSgemm", raw(ta), raw(tb), m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, CUDA_R_32F,
                            typed_compute(h, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC));
    g.typed_single = true;
    return gemm(h, g);
}

cublasStatus_t cublasDgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const double *alpha, const double *A, int lda, const double *B, int ldb,
                              const double *beta, double *C, int ldc) {
    GemmCall g = typed_call("cublasDgemm", raw(ta), raw(tb), m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, CUDA_R_64F,
                            typed_compute(h, CUBLAS_COMPUTE_64F, CUBLAS_COMPUTE_64F_PEDANTIC));
    return gemm(h, g);
}

cublasStatus_t cublasHgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const __half *alpha, const __half *A, int lda, const __half *B, int ldb,
                           const __half *beta, __half *C, int ldc) {
    GemmCall g = typed_call("cublasHgemm", raw(ta), raw(tb), m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, CUDA_R_16F,
                            typed_compute(h, CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_16F_PEDANTIC));
    g.min_cc_major = 5;                  /* half math: compute capability 5.3 */
    g.min_cc_minor = 3;
    return gemm(h, g);
}

cublasStatus_t cublasSgemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                             const float *alpha, const void *A, cudaDataType Atype, int lda, const void *B,
                             cudaDataType Btype, int ldb, const float *beta, void *C, cudaDataType Ctype, int ldc) {
    GemmCall g = typed_call("cublasSgemmEx", raw(ta), raw(tb), m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, CUDA_R_32F,
                            typed_compute(h, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC));
    g.atype = raw(Atype);
    g.btype = raw(Btype);
    g.ctype = raw(Ctype);
    g.typed_single = true;
    return gemm(h, g);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    GemmCall g = typed_call("cublasGemmEx", raw(ta), raw(tb), m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, raw(Atype),
                            raw(computeType));
    g.btype = raw(Btype);
    g.ctype = raw(Ctype);
    g.algo = raw(algo);
    g.typed_single = true;               /* CUBLAS_COMPUTE_32F follows the math mode */
    return gemm(h, g);
}

static GemmCall batched_call(const char *api, int ta, int tb, int m, int n, int k,
                             const void *alpha, const void *const *A, int lda, const void *const *B, int ldb,
                             const void *beta, void *const *C, int ldc, int batch, int type, int compute) {
    GemmCall g = typed_call(api, ta, tb, m, n, k, alpha, nullptr, lda, nullptr, ldb, beta, nullptr, ldc, type, compute);
    g.Aarr = A;
    g.Barr = B;
    g.Carr = C;
    g.batched_ptrs = true;
    g.batch = batch;
    return g;
}

cublasStatus_t cublasSgemmBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                  const float *alpha, const float *const Aarray[], int lda,
                                  const float *const Barray[], int ldb, const float *beta, float *const Carray[],
                                  int ldc, int batchCount) {
    GemmCall g = batched_call("cublasSgemmBatched", raw(ta), raw(tb), m, n, k, alpha,
                              reinterpret_cast<const void *const *>(Aarray), lda,
                              reinterpret_cast<const void *const *>(Barray), ldb, beta,
                              reinterpret_cast<void *const *>(Carray), ldc, batchCount, CUDA_R_32F,
                              typed_compute(h, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC));
    g.typed_single = true;
    g.fast_align_rule_sgemm = true;
    return gemm(h, g);
}

cublasStatus_t cublasDgemmBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                  const double *alpha, const double *const Aarray[], int lda,
                                  const double *const Barray[], int ldb, const double *beta, double *const Carray[],
                                  int ldc, int batchCount) {
    GemmCall g = batched_call("cublasDgemmBatched", raw(ta), raw(tb), m, n, k, alpha,
                              reinterpret_cast<const void *const *>(Aarray), lda,
                              reinterpret_cast<const void *const *>(Barray), ldb, beta,
                              reinterpret_cast<void *const *>(Carray), ldc, batchCount, CUDA_R_64F,
                              typed_compute(h, CUBLAS_COMPUTE_64F, CUBLAS_COMPUTE_64F_PEDANTIC));
    return gemm(h, g);
}

cublasStatus_t cublasHgemmBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                  const __half *alpha, const __half *const Aarray[], int lda,
                                  const __half *const Barray[], int ldb, const __half *beta, __half *const Carray[],
                                  int ldc, int batchCount) {
    GemmCall g = batched_call("cublasHgemmBatched", raw(ta), raw(tb), m, n, k, alpha,
                              reinterpret_cast<const void *const *>(Aarray), lda,
                              reinterpret_cast<const void *const *>(Barray), ldb, beta,
                              reinterpret_cast<void *const *>(Carray), ldc, batchCount, CUDA_R_16F,
                              typed_compute(h, CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_16F_PEDANTIC));
    g.min_cc_major = 5;
    g.min_cc_minor = 3;
    return gemm(h, g);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const void *alpha, const void *const Aarray[], cudaDataType Atype, int lda,
                                   const void *const Barray[], cudaDataType Btype, int ldb, const void *beta,
                                   void *const Carray[], cudaDataType Ctype, int ldc, int batchCount,
                                   cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    GemmCall g = batched_call("cublasGemmBatchedEx", raw(ta), raw(tb), m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray,
                              ldc, batchCount, raw(Atype), raw(computeType));
    g.btype = raw(Btype);
    g.ctype = raw(Ctype);
    g.algo = raw(algo);
    g.typed_single = true;
    g.fast_align_rule_ex = true;
    return gemm(h, g);
}

static GemmCall strided_call(const char *api, int ta, int tb, int m, int n, int k,
                             const void *alpha, const void *A, int lda, long long sA, const void *B, int ldb,
                             long long sB, const void *beta, void *C, int ldc, long long sC, int batch, int type,
                             int compute) {
    GemmCall g = typed_call(api, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, type, compute);
    g.sA = sA;
    g.sB = sB;
    g.sC = sC;
    g.batch = batch;
    return g;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long int strideA,
                                         const float *B, int ldb, long long int strideB, const float *beta, float *C,
                                         int ldc, long long int strideC, int batchCount) {
    GemmCall g = strided_call("cublasSgemmStridedBatched", raw(ta), raw(tb), m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
                              beta, C, ldc, strideC, batchCount, CUDA_R_32F,
                              typed_compute(h, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC));
    g.typed_single = true;
    return gemm(h, g);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double *alpha, const double *A, int lda, long long int strideA,
                                         const double *B, int ldb, long long int strideB, const double *beta,
                                         double *C, int ldc, long long int strideC, int batchCount) {
    GemmCall g = strided_call("cublasDgemmStridedBatched", raw(ta), raw(tb), m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
                              beta, C, ldc, strideC, batchCount, CUDA_R_64F,
                              typed_compute(h, CUBLAS_COMPUTE_64F, CUBLAS_COMPUTE_64F_PEDANTIC));
    return gemm(h, g);
}

cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const __half *alpha, const __half *A, int lda, long long int strideA,
                                         const __half *B, int ldb, long long int strideB, const __half *beta,
                                         __half *C, int ldc, long long int strideC, int batchCount) {
    GemmCall g = strided_call("cublasHgemmStridedBatched", raw(ta), raw(tb), m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
                              beta, C, ldc, strideC, batchCount, CUDA_R_16F,
                              typed_compute(h, CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_16F_PEDANTIC));
    g.min_cc_major = 5;
    g.min_cc_minor = 3;
    return gemm(h, g);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
                                          long long int strideA, const void *B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void *beta, void *C, cudaDataType Ctype,
                                          int ldc, long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    GemmCall g = strided_call("cublasGemmStridedBatchedEx", raw(ta), raw(tb), m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
                              beta, C, ldc, strideC, batchCount, raw(Atype), raw(computeType));
    g.btype = raw(Btype);
    g.ctype = raw(Ctype);
    g.algo = raw(algo);
    g.typed_single = true;
    return gemm(h, g);
}

/* batched LU: cuBLAS docs, cublas<t>getrfBatched / cublas<t>getriBatched */
cublasStatus_t cublasSgetrfBatched(cublasHandle_t h, int n, float *const A[], int lda, int *P, int *info, int batchSize) {
    return getrf_batched<float>("cublasSgetrfBatched", h, n, A, lda, P, info, batchSize);
}
cublasStatus_t cublasDgetrfBatched(cublasHandle_t h, int n, double *const A[], int lda, int *P, int *info, int batchSize) {
    return getrf_batched<double>("cublasDgetrfBatched", h, n, A, lda, P, info, batchSize);
}
cublasStatus_t cublasSgetriBatched(cublasHandle_t h, int n, const float *const A[], int lda, const int *P, float *const C[],
                                   int ldc, int *info, int batchSize) {
    return getri_batched<float>("cublasSgetriBatched", h, n, A, lda, P, C, ldc, info, batchSize);
}
cublasStatus_t cublasDgetriBatched(cublasHandle_t h, int n, const double *const A[], int lda, const int *P, double *const C[],
                                   int ldc, int *info, int batchSize) {
    return getri_batched<double>("cublasDgetriBatched", h, n, A, lda, P, C, ldc, info, batchSize);
}

}  // extern "C"
