/* cublas_engine.h - the arithmetic shared by the emulated cuBLAS
   (cublas.cpp) and cuBLASLt (cublaslt.cpp). Private to tests/emu/src; C++17.

   A GEMM is described once, on the host, as a Problem (shapes, operand
   layouts, types, how inputs are rounded, what the epilogue does), checked
   by the API function, and then run() inside work queued with enqueue():
   run() checks every byte range it will touch with device_range() and
   raises a device fault instead of touching invalid memory. */
#ifndef CUEMU_CUBLAS_ENGINE_H
#define CUEMU_CUBLAS_ENGINE_H

#include "internal.h"
#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace cuemu {
namespace blas {

/* The int value of an enum argument, read without an enum-typed load: a
   caller may pass any value (C code does), and in C++ loading an enum
   object outside its type's range is undefined. */
template <typename E>
inline int raw(const E &e) {
    static_assert(sizeof(E) == sizeof(int), "enum arguments are int-sized");
    int v;
    memcpy(&v, &e, sizeof v);
    return v;
}

/* >>types: the element types the engine reads and writes */
enum class T : uint8_t { F32, F64, F16, BF16, I8, I32 };
size_t tsize(T t);
const char *tname(T t);
/* Maps a cudaDataType_t value (CUDA_R_*) to T; false for the others. */
bool from_cuda(int cuda_type, T *out);

/* How products are accumulated (the compute type) and how inputs are
   rounded before they are multiplied (the FAST_* compute types). */
enum class Acc : uint8_t { F32, F64, F16, I32 };
enum class Rnd : uint8_t { None, TF32, F16, BF16 };
enum class Act : uint8_t { None, Relu, Gelu };

/* >>conversions: round to nearest even; NaN becomes the canonical NaN */
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);
float round_tf32(float f);
float round_input(float f, Rnd r);

/* >>type plans: the compute type / scale type / Atype=Btype / Ctype rows
   of the cublasGemmEx (lt = false) and cublasLtMatmul (lt = true) tables.
   scale < 0: take the table's scale type. cc_major: the device's compute
   capability, which decides whether the FAST types round at all (TF32
   and BF16 tensor cores from 8.0, FP16 from 7.0). Returns a cublasStatus_t
   value: 0, 7 (a value that is no enumerator) or 15 (a combination the
   table does not list, or one the emulator lacks: complex, FP8, FP4). */
struct TypePlan {
    T a = T::F32, c = T::F32, scale = T::F32;
    Acc acc = Acc::F32;
    Rnd rnd = Rnd::None;
};
int plan_types(int compute, int scale, int atype, int btype, int ctype, bool lt, int cc_major, TypePlan *out);
/* NVIDIA_TF32_OVERRIDE=0 in the environment: no TF32 anywhere. */
bool tf32_allowed();

/* One operand as stored in memory. op() (trans) applies to A and B only. */
struct Mat {
    const char *name = "?";          /* "A", "B", "C", "D" in messages */
    const char *ptr = nullptr;       /* the first matrix (strided batches) */
    const void *const *array = nullptr; /* pointer array in device memory */
    T type = T::F32;
    int64_t rows = 0, cols = 0, ld = 0;
    bool row_major = false;
    bool trans = false;
    int64_t stride = 0;              /* elements from one batch to the next */
};

struct Problem {
    const char *api = "?";
    int dev = 0;
    int64_t m = 0, n = 0, k = 0, batch = 1;
    Mat A, B, C, D;                  /* C may be D (in place) */
    bool c_given = true;             /* false: no C operand at all */
    T scale = T::F32;                /* type of alpha and beta */
    Acc acc = Acc::F32;
    Rnd rnd = Rnd::None;
    /* alpha and beta: read at call time (host pointer mode) or inside the
       work from device memory (device pointer mode). */
    bool scalars_on_device = false;
    const void *alpha_ptr = nullptr, *beta_ptr = nullptr;
    double alpha = 1, beta = 0;      /* F32, F64, F16 scale types */
    int32_t ialpha = 1, ibeta = 0;   /* I32 scale type */
    /* Reference-BLAS quick paths (cuBLAS): alpha == 0 or k == 0 leaves A
       and B unread. beta == 0 never reads C (both libraries). */
    bool blas_alpha_zero_skips_ab = false;
    /* Pointer-array batches: the documented alignment rule for fast math
       (ptr % 16 when k % align_k16 == 0, ptr % 4 when k % 2 == 0). */
    int align_k16 = 0;
    bool align_k2 = false;
    /* Epilogue (cuBLASLt): D = act(alpha*op(A)op(B) + beta*C + bias). */
    Act act = Act::None;
    const char *bias = nullptr;      /* length m, device memory */
    T bias_type = T::F32;
    int64_t bias_stride = 0;         /* elements from one batch to the next */
    unsigned bias_align = 0;         /* alignment the chosen algo assumes */
    int bgrad = 0;                   /* 1: sum of op(A) over k (length m), 2: of op(B) (length n) */
    /* The auxiliary output or input of the AUX and gradient epilogues
       (cublasLt.h, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER): a ReLU bit
       mask, bit r + c * aux_ld of the batch's mask set where the value
       before the ReLU was > 0; or GELU's input, in aux_type. */
    enum class Aux : uint8_t { None, ReluMaskOut, GeluInputOut, DReluMaskIn, DGeluInputIn } aux = Aux::None;
    char *aux_ptr = nullptr;
    int64_t aux_ld = 0, aux_stride = 0;   /* bits for a mask, elements for GELU's input */
    T aux_type = T::F32;
    bool dbias = false;              /* DRELU_BGRAD / DGELU_BGRAD: bias = row sums of D (length m) */
    /* Split-K: 2 partial sums over halves of k, the second kept in the
       workspace (which must then hold ws_bytes). */
    int splitk = 1;
    char *workspace = nullptr;
    size_t ws_bytes = 0;
    /* A workspace given with cublasSetWorkspace(): the library's to use
       during the call, so it must be valid device memory when the work
       runs (checked as a kernel touching it would be). */
    const void *user_ws = nullptr;
    size_t user_ws_bytes = 0;
    bool use_cblas = false;
};

/* Runs the problem; call only from queued work. */
void run(const Problem &p);

/* Whether the OpenBLAS path is compiled in and not disabled with
   CUEMU_CBLAS=0 in the environment. Read on the host at call time. */
bool cblas_enabled();

/* Element offset of (r, c) of a stored matrix. */
inline int64_t offset(const Mat &M, int64_t r, int64_t c) {
    return M.row_major ? r * M.ld + c : r + c * M.ld;
}
/* Bytes spanned by one rows x cols matrix (0 for an empty one). */
int64_t span_bytes(const Mat &M);

/* >>handles: every live cuBLAS and cuBLASLt handle, with its device; a
   cublasHandle_t may be passed where a cublasLtHandle_t is expected. */
void handle_register(const void *h, int dev);
void handle_unregister(const void *h);
bool handle_lookup(const void *h, int *dev);

/* >>status strings (cublasGetStatusName/String, cublasLt* likewise) */
const char *status_name(int status);
const char *status_string(int status);

}  // namespace blas
}  // namespace cuemu

#endif
