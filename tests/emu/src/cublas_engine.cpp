/* cublas_engine.cpp - GEMM arithmetic, number formats, handle registry and
   status strings shared by the emulated cuBLAS and cuBLASLt.

   Numerics (the documented behaviour; see cublas_engine.h):
   - Inputs are read in their storage type and, for the FAST compute types,
     rounded to TF32 / FP16 / BF16 with round-to-nearest-even (the cuBLAS
     documentation of CUBLAS_COMPUTE_32F_FAST_TF32 and of
     CUBLAS_TF32_TENSOR_OP_MATH: "input conversions round to nearest even").
   - Products are accumulated in the compute type: float for the 32F types,
     double for 64F, int32 (wrapping) for 32I; for 16F every multiply-add
     is rounded to half, the least precision the documentation allows.
   - alpha * acc + beta * C (+ bias) is formed in the scale type, then the
     epilogue applied, then the value rounded to nearest even into D's
     type. beta == 0 never reads C, so NaN in C does not propagate. */
#include "cublas_engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef CUEMU_WITH_CBLAS
#include <cblas.h>
#endif

namespace cuemu {
namespace blas {

/* >>types */
size_t tsize(T t) {
    switch (t) {
    case T::F64: return 8;
    case T::F32: case T::I32: return 4;
    case T::F16: case T::BF16: return 2;
    case T::I8: return 1;
    }
    return 1;
}

const char *tname(T t) {
    switch (t) {
    case T::F32: return "CUDA_R_32F";
    case T::F64: return "CUDA_R_64F";
    case T::F16: return "CUDA_R_16F";
    case T::BF16: return "CUDA_R_16BF";
    case T::I8: return "CUDA_R_8I";
    case T::I32: return "CUDA_R_32I";
    }
    return "?";
}

bool from_cuda(int cuda_type, T *out) {
    switch (cuda_type) {   /* values of cudaDataType_t (library_types.h) */
    case 0: *out = T::F32; return true;   /* CUDA_R_32F */
    case 1: *out = T::F64; return true;   /* CUDA_R_64F */
    case 2: *out = T::F16; return true;   /* CUDA_R_16F */
    case 3: *out = T::I8; return true;    /* CUDA_R_8I */
    case 10: *out = T::I32; return true;  /* CUDA_R_32I */
    case 14: *out = T::BF16; return true; /* CUDA_R_16BF */
    default: return false;
    }
}

/* >>type plans (cublasComputeType_t values) */
bool tf32_allowed() {
    /* cuBLAS documentation: NVIDIA_TF32_OVERRIDE=0 overrides any default
       or programmatic configuration; no TF32 tensor-core acceleration. */
    const char *e = getenv("NVIDIA_TF32_OVERRIDE");
    return !(e && strcmp(e, "0") == 0);
}

static bool valid_compute(int c) {
    switch (c) {
    case 64: case 65: case 68: case 69: case 70: case 71: case 72: case 73:
    case 74: case 75: case 77: case 78: case 79: return true;
    default: return false;
    }
}

int plan_types(int compute, int scale, int atype, int btype, int ctype, bool lt, int cc_major, TypePlan *out) {
    const int ok = 0, invalid = 7, unsupported = 15;
    if (!valid_compute(compute)) return invalid;
    for (int t : {atype, btype, ctype})
        if (t < 0 || t > 33) return invalid;            /* not a cudaDataType_t */
    if (scale >= 0 && scale > 33) return invalid;
    T a, b, c;
    if (!from_cuda(atype, &a) || !from_cuda(btype, &b) || !from_cuda(ctype, &c) || a != b) return unsupported;
    TypePlan p;
    p.a = a;
    p.c = c;
    switch (compute) {
    case 64: case 65:                                     /* 16F */
        if (a != T::F16 || c != T::F16) return unsupported;
        p.scale = T::F16; p.acc = Acc::F16;
        break;
    case 72: case 73:                                     /* 32I */
        if (a != T::I8 || c != T::I32) return unsupported;
        p.scale = T::I32; p.acc = Acc::I32;
        break;
    case 68: case 69: {                                   /* 32F */
        bool row = (a == T::BF16 && (c == T::BF16 || c == T::F32)) || (a == T::F16 && (c == T::F16 || c == T::F32)) ||
                   (a == T::I8 && c == T::F32) || (a == T::F32 && c == T::F32);
        if (!row) return unsupported;
        p.scale = T::F32; p.acc = Acc::F32;
        break;
    }
    case 74: case 75: case 77: case 78:                   /* 32F_FAST_*, 32F_EMULATED_16BFX9 */
        if (a != T::F32 || c != T::F32) return unsupported;
        p.scale = T::F32; p.acc = Acc::F32;
        if (compute == 74 && cc_major >= 7) p.rnd = Rnd::F16;
        if (compute == 75 && cc_major >= 8) p.rnd = Rnd::BF16;
        if (compute == 77 && cc_major >= 8 && tf32_allowed()) p.rnd = Rnd::TF32;
        break;
    case 70: case 71: case 79:                            /* 64F */
        if (compute == 79 && !lt) return unsupported;     /* not in the cublasGemmEx table */
        if (a != T::F64 || c != T::F64) return unsupported;
        p.scale = T::F64; p.acc = Acc::F64;
        break;
    }
    if (scale >= 0) {
        T s;
        if (!from_cuda(scale, &s) || s != p.scale) return unsupported;
    }
    *out = p;
    return ok;
}

/* >>conversions */
static inline uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float half_to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) return bitsf(sign | 0x7f800000u | (m << 13));
    if (e != 0) return bitsf(sign | ((e + 112) << 23) | (m << 13));
    /* subnormal: m * 2^-24, exact in float */
    float v = float(m) * (1.0f / 16777216.0f);
    return sign ? -v : v;
}

uint16_t float_to_half(float f) {
    uint32_t x = fbits(f);
    uint16_t sign = uint16_t((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return 0x7fff;               /* NaN: canonical */
    if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00); /* >= 65520: Inf */
    uint32_t e = ax >> 23;
    if (e >= 113) {                                      /* normal half */
        uint32_t h = ((e - 112) << 10) | ((ax & 0x7fffff) >> 13);
        uint32_t rem = ax & 0x1fff;
        if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
        return uint16_t(sign | h);
    }
    /* subnormal half (unit 2^-24) or zero */
    uint32_t mant = (ax & 0x7fffff) | (e ? 0x800000u : 0);
    int shift = 126 - int(e ? e : 1);
    if (shift >= 32) return sign;
    uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return uint16_t(sign | q);
}

float bf16_to_float(uint16_t h) { return bitsf(uint32_t(h) << 16); }

uint16_t float_to_bf16(float f) {
    uint32_t x = fbits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fff;  /* NaN: canonical */
    x += 0x7fffu + ((x >> 16) & 1);
    return uint16_t(x >> 16);
}

/* TF32: FP32's exponent, 10 explicit mantissa bits. */
float round_tf32(float f) {
    uint32_t x = fbits(f);
    if ((x & 0x7f800000u) == 0x7f800000u) return f;      /* Inf, NaN */
    x += 0xfffu + ((x >> 13) & 1);
    return bitsf(x & 0xffffe000u);
}

float round_input(float f, Rnd r) {
    switch (r) {
    case Rnd::TF32: return round_tf32(f);
    case Rnd::F16: return half_to_float(float_to_half(f));
    case Rnd::BF16: return bf16_to_float(float_to_bf16(f));
    case Rnd::None: break;
    }
    return f;
}

static inline float rh(float f) { return half_to_float(float_to_half(f)); }

/* >>element access */
static inline double load_d(T t, const char *base, int64_t i) {
    switch (t) {
    case T::F64: { double v; memcpy(&v, base + i * 8, 8); return v; }
    case T::F32: { float v; memcpy(&v, base + i * 4, 4); return v; }
    case T::F16: { uint16_t v; memcpy(&v, base + i * 2, 2); return half_to_float(v); }
    case T::BF16: { uint16_t v; memcpy(&v, base + i * 2, 2); return bf16_to_float(v); }
    case T::I8: return double(int8_t(base[i]));
    case T::I32: { int32_t v; memcpy(&v, base + i * 4, 4); return v; }
    }
    return 0;
}
static inline float load_f(T t, const char *base, int64_t i) {
    if (t == T::F32) { float v; memcpy(&v, base + i * 4, 4); return v; }
    return float(load_d(t, base, i));
}
static inline int32_t load_i(T t, const char *base, int64_t i) {
    if (t == T::I8) return int8_t(base[i]);
    int32_t v; memcpy(&v, base + i * 4, 4); return v;
}
static inline void store_f(T t, char *base, int64_t i, float v) {
    switch (t) {
    case T::F32: memcpy(base + i * 4, &v, 4); return;
    case T::F16: { uint16_t h = float_to_half(v); memcpy(base + i * 2, &h, 2); return; }
    case T::BF16: { uint16_t h = float_to_bf16(v); memcpy(base + i * 2, &h, 2); return; }
    case T::F64: { double d = v; memcpy(base + i * 8, &d, 8); return; }
    default: return;
    }
}

int64_t span_bytes(const Mat &M) {
    if (M.rows <= 0 || M.cols <= 0) return 0;
    return (offset(M, M.rows - 1, M.cols - 1) + 1) * int64_t(tsize(M.type));
}

/* >>handles */
static std::mutex g_handle_mu;
static std::unordered_map<const void *, int> &handles() {
    static std::unordered_map<const void *, int> h;
    return h;
}
void handle_register(const void *h, int dev) {
    std::lock_guard<std::mutex> l(g_handle_mu);
    handles()[h] = dev;
}
void handle_unregister(const void *h) {
    std::lock_guard<std::mutex> l(g_handle_mu);
    handles().erase(h);
}
bool handle_lookup(const void *h, int *dev) {
    std::lock_guard<std::mutex> l(g_handle_mu);
    auto it = handles().find(h);
    if (it == handles().end()) return false;
    if (dev) *dev = it->second;
    return true;
}

/* >>status strings (values of cublasStatus_t) */
const char *status_name(int s) {
    switch (s) {
    case 0: return "CUBLAS_STATUS_SUCCESS";
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}
const char *status_string(int s) {
    switch (s) {
    case 0: return "success";
    case 1: return "the library was not initialized";
    case 3: return "resource allocation failed";
    case 7: return "an invalid value was passed as an argument";
    case 8: return "the device lacks a required architectural feature";
    case 11: return "an access to GPU memory failed";
    case 13: return "the GPU program failed to execute";
    case 14: return "an internal operation failed";
    case 15: return "the requested functionality is not supported";
    case 16: return "the requested functionality needs a license";
    }
    return "unknown cuBLAS status";
}

bool cblas_enabled() {
#ifdef CUEMU_WITH_CBLAS
    const char *e = getenv("CUEMU_CBLAS");
    return !(e && strcmp(e, "0") == 0);
#else
    return false;
#endif
}

/* ---- the run ---------------------------------------------------------- */
namespace {

struct Scal { double a, b; int32_t ia, ib; };

/* Pointers of one batch. */
struct Ptrs { const char *A, *B, *C; char *D; const char *bias; char *aux; };

std::string batch_label(const Problem &p, int64_t b) {
    if (p.batch <= 1) return std::string();
    return " (batch " + std::to_string(b) + ")";
}

bool read_scalar(const Problem &p, const void *q, const char *what, double *d, int32_t *i) {
    size_t es = tsize(p.scale);
    std::string why;
    if (!device_range(p.dev, q, es, &why)) {
        fault(cudaErrorIllegalAddress, "%s: %s (device pointer mode): %s", p.api, what, why.c_str());
        return false;
    }
    if (uintptr_t(q) % es) {
        fault(cudaErrorMisalignedAddress, "%s: %s at %p is not aligned to %zu bytes", p.api, what, q, es);
        return false;
    }
    if (p.scale == T::I32) *i = load_i(T::I32, static_cast<const char *>(q), 0);
    else *d = load_d(p.scale, static_cast<const char *>(q), 0);
    return true;
}

bool read_scalars(const Problem &p, Scal *s) {
    *s = Scal{p.alpha, p.beta, p.ialpha, p.ibeta};
    if (!p.scalars_on_device) return true;
    return read_scalar(p, p.alpha_ptr, "alpha", &s->a, &s->ia) &&
           read_scalar(p, p.beta_ptr, "beta", &s->b, &s->ib);
}

bool alpha_is_zero(const Problem &p, const Scal &s) {
    return p.scale == T::I32 ? s.ia == 0 : s.a == 0;
}
bool beta_is_zero(const Problem &p, const Scal &s) {
    return p.scale == T::I32 ? s.ib == 0 : s.b == 0;
}

const char *batch_ptr(const Mat &M, int64_t b) {
    if (M.array) return static_cast<const char *>(M.array[b]);
    return M.ptr + b * M.stride * int64_t(tsize(M.type));
}

bool check_range(const Problem &p, const char *what, int64_t b, const void *ptr, int64_t bytes, size_t align) {
    if (bytes <= 0) return true;
    std::string why;
    if (!device_range(p.dev, ptr, size_t(bytes), &why)) {
        fault(cudaErrorIllegalAddress, "%s: %s%s: %s", p.api, what, batch_label(p, b).c_str(), why.c_str());
        return false;
    }
    if (align > 1 && uintptr_t(ptr) % align) {
        fault(cudaErrorMisalignedAddress, "%s: %s%s at %p is not aligned to %zu bytes", p.api, what,
              batch_label(p, b).c_str(), ptr, align);
        return false;
    }
    return true;
}

/* The alignment rule the documentation gives for pointer-array batches
   under fast math (cublas<t>gemmBatched, cublasGemmBatchedEx). */
bool check_fast_align(const Problem &p, const char *what, int64_t b, const void *ptr) {
    size_t need = 1;
    if (p.align_k16 && p.k % p.align_k16 == 0) need = 16;
    else if (p.align_k2 && p.k % 2 == 0) need = 4;
    if (need > 1 && uintptr_t(ptr) % need) {
        fault(cudaErrorMisalignedAddress,
              "%s: %s%s at %p: with k = %lld and fast math the pointers must be %zu-byte aligned", p.api, what,
              batch_label(p, b).c_str(), ptr, (long long)p.k, need);
        return false;
    }
    return true;
}

bool resolve(const Problem &p, int64_t b, bool use_ab, bool read_c, Ptrs *q) {
    q->A = batch_ptr(p.A, b);
    q->B = batch_ptr(p.B, b);
    q->C = p.c_given ? batch_ptr(p.C, b) : nullptr;
    q->D = const_cast<char *>(batch_ptr(p.D, b));
    q->bias = p.bias ? p.bias + b * p.bias_stride * int64_t(tsize(p.bias_type)) : nullptr;
    q->aux = nullptr;
    if (use_ab) {
        if (!check_range(p, p.A.name, b, q->A, span_bytes(p.A), tsize(p.A.type))) return false;
        if (!check_range(p, p.B.name, b, q->B, span_bytes(p.B), tsize(p.B.type))) return false;
        if (p.A.array && !check_fast_align(p, p.A.name, b, q->A)) return false;
        if (p.B.array && !check_fast_align(p, p.B.name, b, q->B)) return false;
    }
    if (read_c && !check_range(p, p.C.name, b, q->C, span_bytes(p.C), tsize(p.C.type))) return false;
    if (!check_range(p, p.D.name, b, q->D, span_bytes(p.D), tsize(p.D.type))) return false;
    if (p.D.array && !check_fast_align(p, p.D.name, b, q->D)) return false;
    if (q->bias) {
        int64_t len = p.bgrad == 2 ? p.n : p.m;
        size_t align = std::max<size_t>(tsize(p.bias_type), p.bias_align);
        if (!check_range(p, p.bgrad || p.dbias ? "bias gradient" : "bias", b, q->bias,
                         len * int64_t(tsize(p.bias_type)), align))
            return false;
    }
    if (p.aux != Problem::Aux::None) {
        bool mask = p.aux == Problem::Aux::ReluMaskOut || p.aux == Problem::Aux::DReluMaskIn;
        int64_t last = p.aux_ld * (p.n - 1) + p.m;   /* bits or elements up to the last one used */
        int64_t bytes = mask ? (last + 7) / 8 : last * int64_t(tsize(p.aux_type));
        q->aux = p.aux_ptr + b * (mask ? p.aux_stride / 8 : p.aux_stride * int64_t(tsize(p.aux_type)));
        if (!check_range(p, mask ? "epilogue ReLU mask" : "epilogue GELU input", b, q->aux, bytes, 16)) return false;
    }
    return true;
}

/* >>gather: op(X) into a dense column-major rows x cols buffer */
template <typename F>
void gather(const Mat &M, const char *base, int64_t rows, int64_t cols, Rnd rnd, F *out) {
    for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = 0; r < rows; ++r) {
            int64_t off = M.trans ? offset(M, c, r) : offset(M, r, c);
            F v;
            if constexpr (sizeof(F) == 8) v = F(load_d(M.type, base, off));
            else if constexpr (std::is_same<F, int32_t>::value) v = load_i(M.type, base, off);
            else v = round_input(load_f(M.type, base, off), rnd);
            out[r + c * rows] = v;
        }
}

/* >>kernels: C(m x n) = sum over p in [p0, p1) of A(:, p) * B(p, :),
   A m x k and B k x n dense column-major. Columns of C in [j0, j1). */
template <typename F>
void mm_cols(int64_t m, int64_t k, const F *A, const F *B, F *C, int64_t j0, int64_t j1, int64_t p0, int64_t p1) {
    enum { NB = 8, MB = 256 };
    F acc[NB][MB];
    for (int64_t jb = j0; jb < j1; jb += NB) {
        int nb = int(std::min<int64_t>(NB, j1 - jb));
        for (int64_t i0 = 0; i0 < m; i0 += MB) {
            int mb = int(std::min<int64_t>(MB, m - i0));
            for (int jj = 0; jj < nb; ++jj)
                for (int i = 0; i < mb; ++i) acc[jj][i] = 0;
            for (int64_t p = p0; p < p1; ++p) {
                const F *a = A + i0 + p * m;
                for (int jj = 0; jj < nb; ++jj) {
                    F bv = B[p + (jb + jj) * k];
                    F *c = acc[jj];
                    for (int i = 0; i < mb; ++i) c[i] += a[i] * bv;
                }
            }
            for (int jj = 0; jj < nb; ++jj)
                for (int i = 0; i < mb; ++i) C[i0 + i + (jb + jj) * m] = acc[jj][i];
        }
    }
}

/* Half accumulation: every multiply-add rounded to half. */
void mm_half(int64_t m, int64_t k, const float *A, const float *B, float *C, int64_t j0, int64_t j1, int64_t p0,
             int64_t p1) {
    for (int64_t j = j0; j < j1; ++j)
        for (int64_t i = 0; i < m; ++i) {
            float s = 0;
            for (int64_t p = p0; p < p1; ++p) s = rh(fmaf(A[i + p * m], B[p + j * k], s));
            C[i + j * m] = s;
        }
}

/* int32 accumulation, wrapping like the hardware. */
void mm_int(int64_t m, int64_t k, const int32_t *A, const int32_t *B, int32_t *C, int64_t j0, int64_t j1, int64_t p0,
            int64_t p1) {
    for (int64_t j = j0; j < j1; ++j)
        for (int64_t i = 0; i < m; ++i) {
            uint32_t s = 0;
            for (int64_t p = p0; p < p1; ++p) s += uint32_t(A[i + p * m]) * uint32_t(B[p + j * k]);
            C[i + j * m] = int32_t(s);
        }
}

template <typename F>
void partial(const Problem &p, bool parallel, const F *A, const F *B, F *C, int64_t p0, int64_t p1) {
    int64_t m = p.m, n = p.n, k = p.k;
    auto body = [&](int64_t j0, int64_t j1) {
        if constexpr (std::is_same<F, int32_t>::value) mm_int(m, k, A, B, C, j0, j1, p0, p1);
        else if constexpr (std::is_same<F, float>::value) {
            if (p.acc == Acc::F16) mm_half(m, k, A, B, C, j0, j1, p0, p1);
            else mm_cols(m, k, A, B, C, j0, j1, p0, p1);
        } else mm_cols(m, k, A, B, C, j0, j1, p0, p1);
    };
    if (!parallel) { body(0, n); return; }
    int64_t per_col = std::max<int64_t>(1, m * (p1 - p0));
    int64_t grain = std::max<int64_t>(8, (int64_t(1) << 20) / per_col);
    parallel_for(n, grain, body);
}

#ifdef CUEMU_WITH_CBLAS
/* OpenBLAS straight on the operands (no rounding, F32 or F64 storage). */
bool cblas_direct_ok(const Problem &p) {
    if (!p.use_cblas || p.rnd != Rnd::None) return false;
    if (p.acc == Acc::F32) return p.A.type == T::F32 && p.B.type == T::F32;
    if (p.acc == Acc::F64) return p.A.type == T::F64 && p.B.type == T::F64;
    return false;
}

template <typename F>
void cblas_mm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const F *A, int64_t lda,
              const F *B, int64_t ldb, F *C, int64_t ldc) {
    if constexpr (sizeof(F) == 8)
        cblas_dgemm(CblasColMajor, ta, tb, int(m), int(n), int(k), 1.0, A, int(lda), B, int(ldb), 0.0, C, int(ldc));
    else
        cblas_sgemm(CblasColMajor, ta, tb, int(m), int(n), int(k), 1.0f, A, int(lda), B, int(ldb), 0.0f, C,
                    int(ldc));
}

/* op(X) of a stored operand as (transpose flag, ld) for column-major BLAS:
   a row-major matrix is the transpose of a column-major one. */
CBLAS_TRANSPOSE cblas_op(const Mat &M) { return (M.trans != M.row_major) ? CblasTrans : CblasNoTrans; }

template <typename F>
void partial_direct(const Problem &p, const Ptrs &q, F *C, int64_t p0, int64_t p1) {
    const F *A = reinterpret_cast<const F *>(q.A) + (p.A.trans ? offset(p.A, p0, 0) : offset(p.A, 0, p0));
    const F *B = reinterpret_cast<const F *>(q.B) + (p.B.trans ? offset(p.B, 0, p0) : offset(p.B, p0, 0));
    cblas_mm<F>(cblas_op(p.A), cblas_op(p.B), p.m, p.n, p1 - p0, A, p.A.ld, B, p.B.ld, C, p.m);
}
#endif

/* Computes the accumulator of one batch: acc = op(A) op(B), in F. */
template <typename F>
void accumulate(const Problem &p, const Ptrs &q, bool parallel, std::vector<F> &acc) {
    int64_t m = p.m, n = p.n, k = p.k;
    acc.assign(size_t(m * n), F(0));
    int64_t k1 = p.splitk > 1 ? k / 2 : k;
    F *ws = reinterpret_cast<F *>(p.workspace);  /* second partial sum */
#ifdef CUEMU_WITH_CBLAS
    if constexpr (!std::is_same<F, int32_t>::value) {
        if (cblas_direct_ok(p)) {
            partial_direct<F>(p, q, acc.data(), 0, k1);
            if (k1 < k) {
                partial_direct<F>(p, q, ws, k1, k);
                for (int64_t i = 0; i < m * n; ++i) acc[size_t(i)] += ws[i];
            }
            return;
        }
    }
#endif
    std::vector<F> Ag(size_t(m * k)), Bg(size_t(k * n));
    gather(p.A, q.A, m, k, p.rnd, Ag.data());
    gather(p.B, q.B, k, n, p.rnd, Bg.data());
#ifdef CUEMU_WITH_CBLAS
    if constexpr (!std::is_same<F, int32_t>::value) {
        if (p.use_cblas && p.acc != Acc::F16) {
            cblas_mm<F>(CblasNoTrans, CblasNoTrans, m, n, k1, Ag.data(), m, Bg.data(), k, acc.data(), m);
            if (k1 < k) {
                cblas_mm<F>(CblasNoTrans, CblasNoTrans, m, n, k - k1, Ag.data() + k1 * m, m, Bg.data() + k1, k, ws,
                            m);
                for (int64_t i = 0; i < m * n; ++i) acc[size_t(i)] += ws[i];
            }
            return;
        }
    }
#endif
    partial<F>(p, parallel, Ag.data(), Bg.data(), acc.data(), 0, k1);
    if (k1 < k) {
        partial<F>(p, parallel, Ag.data(), Bg.data(), ws, k1, k);
        for (int64_t i = 0; i < m * n; ++i) acc[size_t(i)] += ws[i];
    }
}

template <typename F>
F activate(Act a, F v) {
    switch (a) {
    case Act::Relu:
        /* max(x, 0) as the GPU's fmax computes it: a NaN input gives 0
           (cuBLASLt documents x := max(x, 0) and says nothing of NaN). */
        return std::isnan(v) ? F(0) : (v > F(0) ? v : F(0));
    case Act::Gelu: {
        /* The tanh form of GELU (cuBLASLt documents only "GELU(x)"). */
        const F c = F(0.7978845608028654), d = F(0.044715);
        return F(0.5) * v * (F(1) + std::tanh(c * (v + d * v * v * v)));
    }
    case Act::None: break;
    }
    return v;
}

/* d GELU(x) / dx of the tanh form above. */
float gelu_grad(float x) {
    const float c = 0.7978845608028654f, d = 0.044715f;
    float t = std::tanh(c * (x + d * x * x * x));
    return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * c * (1.f + 3.f * d * x * x);
}

/* The AUX epilogues' side of one element (i, j) of D, v its value before
   the activation (forward) or the matmul's result (backward). */
float aux_element(const Problem &p, const Ptrs &q, int64_t i, int64_t j, float v) {
    using Aux = Problem::Aux;
    int64_t at = i + j * p.aux_ld;
    switch (p.aux) {
    case Aux::ReluMaskOut: {
        unsigned char bit = (unsigned char)(1u << (at % 8)), &byte = reinterpret_cast<unsigned char &>(q.aux[at / 8]);
        byte = v > 0.f ? (unsigned char)(byte | bit) : (unsigned char)(byte & ~bit);
        return v;
    }
    case Aux::GeluInputOut: store_f(p.aux_type, q.aux, at, v); return v;
    case Aux::DReluMaskIn: return (q.aux[at / 8] >> (at % 8)) & 1 ? v : 0.f;
    case Aux::DGeluInputIn: return v * gelu_grad(load_f(p.aux_type, q.aux, at));
    case Aux::None: break;
    }
    return v;
}

/* DRELU_BGRAD / DGELU_BGRAD: the bias gradient, the sums of D's rows as
   stored, in float, stored in the bias type. */
void d_bias_grad(const Problem &p, const Ptrs &q) {
    char *out = const_cast<char *>(q.bias);
    for (int64_t i = 0; i < p.m; ++i) {
        float sum = 0;
        for (int64_t j = 0; j < p.n; ++j) sum += load_f(p.D.type, q.D, offset(p.D, i, j));
        store_f(p.bias_type, out, i, sum);
    }
}

/* Bias gradient: sums of op(A) rows (bgrad 1) or op(B) columns (bgrad 2)
   over k, accumulated in float (double for F64), stored in the bias type. */
void bias_grad(const Problem &p, const Ptrs &q) {
    bool rows = p.bgrad == 1;
    const Mat &M = rows ? p.A : p.B;
    const char *base = rows ? q.A : q.B;
    int64_t len = rows ? p.m : p.n;
    char *out = const_cast<char *>(q.bias);
    for (int64_t i = 0; i < len; ++i) {
        double sd = 0;
        float sf = 0;
        for (int64_t t = 0; t < p.k; ++t) {
            int64_t r = rows ? i : t, c = rows ? t : i;  /* element of op(M) */
            int64_t off = M.trans ? offset(M, c, r) : offset(M, r, c);
            if (p.acc == Acc::F64) sd += load_d(M.type, base, off);
            else sf += round_input(load_f(M.type, base, off), p.rnd);
        }
        if (p.bias_type == T::F64) { memcpy(out + i * 8, &sd, 8); continue; }
        store_f(p.bias_type, out, i, p.acc == Acc::F64 ? float(sd) : sf);
    }
}

/* >>epilogue: D = act(alpha * acc + beta * C + bias), in the scale type */
void epilogue_float(const Problem &p, const Scal &s, const Ptrs &q, const float *acc, bool use_ab, bool read_c,
                    int64_t j0, int64_t j1) {
    const bool half_math = p.scale == T::F16;
    const float a = float(s.a), b = float(s.b);
    for (int64_t j = j0; j < j1; ++j)
        for (int64_t i = 0; i < p.m; ++i) {
            float v = use_ab ? a * acc[i + j * p.m] : 0.f;
            if (half_math) v = rh(v);
            if (read_c) {
                float c = load_f(p.C.type, q.C, offset(p.C, i, j));
                float t = half_math ? rh(b * c) : b * c;
                v = use_ab ? v + t : t;
                if (half_math) v = rh(v);
            }
            if (q.bias && !p.bgrad && !p.dbias) {
                v += load_f(p.bias_type, q.bias, i);
                if (half_math) v = rh(v);
            }
            if (q.aux) v = aux_element(p, q, i, j, v);
            v = activate(p.act, v);
            store_f(p.D.type, q.D, offset(p.D, i, j), v);
        }
}

void epilogue_double(const Problem &p, const Scal &s, const Ptrs &q, const double *acc, bool use_ab, bool read_c,
                     int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
        for (int64_t i = 0; i < p.m; ++i) {
            double v = use_ab ? s.a * acc[i + j * p.m] : 0.0;
            if (read_c) {
                double t = s.b * load_d(p.C.type, q.C, offset(p.C, i, j));
                v = use_ab ? v + t : t;
            }
            if (q.bias && !p.bgrad && !p.dbias) v += load_d(p.bias_type, q.bias, i);
            v = activate(p.act, v);
            memcpy(q.D + offset(p.D, i, j) * 8, &v, 8);
        }
}

void epilogue_int(const Problem &p, const Scal &s, const Ptrs &q, const int32_t *acc, bool use_ab, bool read_c,
                  int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
        for (int64_t i = 0; i < p.m; ++i) {
            uint32_t v = use_ab ? uint32_t(s.ia) * uint32_t(acc[i + j * p.m]) : 0u;
            if (read_c) v += uint32_t(s.ib) * uint32_t(load_i(p.C.type, q.C, offset(p.C, i, j)));
            int32_t r = int32_t(v);
            memcpy(q.D + offset(p.D, i, j) * 4, &r, 4);
        }
}

template <typename F>
void finish(const Problem &p, const Scal &s, const Ptrs &q, const F *acc, bool use_ab, bool read_c, bool parallel) {
    auto body = [&](int64_t j0, int64_t j1) {
        if constexpr (std::is_same<F, int32_t>::value) epilogue_int(p, s, q, acc, use_ab, read_c, j0, j1);
        else if constexpr (std::is_same<F, double>::value) epilogue_double(p, s, q, acc, use_ab, read_c, j0, j1);
        else epilogue_float(p, s, q, acc, use_ab, read_c, j0, j1);
    };
    if (parallel) parallel_for(p.n, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, p.m)), body);
    else body(0, p.n);
}

template <typename F>
void one_batch(const Problem &p, const Scal &s, const Ptrs &q, bool use_ab, bool read_c, bool parallel) {
    std::vector<F> acc;
    if (use_ab) accumulate<F>(p, q, parallel, acc);
    if (p.bgrad && q.bias) bias_grad(p, q);
    finish<F>(p, s, q, acc.data(), use_ab, read_c, parallel);
    if (p.dbias && q.bias) d_bias_grad(p, q);
}

void dispatch_batch(const Problem &p, const Scal &s, const Ptrs &q, bool use_ab, bool read_c, bool parallel) {
    switch (p.acc) {
    case Acc::F64: one_batch<double>(p, s, q, use_ab, read_c, parallel); break;
    case Acc::I32: one_batch<int32_t>(p, s, q, use_ab, read_c, parallel); break;
    default: one_batch<float>(p, s, q, use_ab, read_c, parallel); break;
    }
}

}  // namespace

void run(const Problem &p) {
    if (p.m <= 0 || p.n <= 0 || p.batch <= 0) return;
    Scal s;
    if (!read_scalars(p, &s)) return;
    bool use_ab = p.k > 0 && !(p.blas_alpha_zero_skips_ab && alpha_is_zero(p, s));
    bool read_c = p.c_given && !beta_is_zero(p, s);
    /* Reference BLAS: with A, B unread and beta == 1, C is left as it is. */
    bool beta_one = p.scale == T::I32 ? s.ib == 1 : s.b == 1;
    if (p.blas_alpha_zero_skips_ab && !use_ab && beta_one && p.C.ptr == p.D.ptr && p.C.array == p.D.array)
        return;
    for (const Mat *M : {&p.A, &p.B, &p.C, &p.D})
        if (M->array && !check_range(p, (std::string(M->name) + " pointer array").c_str(), 0, M->array,
                                     p.batch * int64_t(sizeof(void *)), sizeof(void *)))
            return;
    if (p.user_ws_bytes &&
        !check_range(p, "workspace (cublasSetWorkspace)", 0, p.user_ws, int64_t(p.user_ws_bytes), 1))
        return;
    if (p.splitk > 1 && use_ab &&
        !check_range(p, "workspace", 0, p.workspace, int64_t(p.ws_bytes), 1))
        return;
    std::vector<Ptrs> ptrs(size_t(p.batch));
    for (int64_t b = 0; b < p.batch; ++b)
        if (!resolve(p, b, use_ab, read_c, &ptrs[size_t(b)])) return;
    /* Many small matrices: one task per batch; else parallel inside. */
    bool small = p.m * p.n * std::max<int64_t>(p.k, 1) < (int64_t(1) << 18);
    if (small && p.batch > 1 && !p.use_cblas && p.splitk == 1) {
        parallel_for(p.batch, 1, [&](int64_t b0, int64_t b1) {
            for (int64_t b = b0; b < b1; ++b) dispatch_batch(p, s, ptrs[size_t(b)], use_ab, read_c, false);
        });
        return;
    }
    for (int64_t b = 0; b < p.batch; ++b) dispatch_batch(p, s, ptrs[size_t(b)], use_ab, read_c, true);
}

}  // namespace blas
}  // namespace cuemu
