/* cublaslt.cpp - the emulated cuBLASLt: handles, descriptors, heuristics,
   algorithm queries and cublasLtMatmul with its epilogues.

   Written from the cuBLASLt API reference (docs.nvidia.com/cuda/cublas,
   chapter 3) and the attribute descriptions of cuBLAS 13.1's cublasLt.h.

   The algorithm model. Two algorithms exist for every supported problem:
     id 0  no workspace;
     id 1  split-K in two halves of k, the second partial sum kept in the
           workspace (round_up(m * n * sizeof(accumulator), 256) bytes);
           only for FP32 / FP64 accumulation, offered by the heuristic first
           when the preference's MAX_WORKSPACE_BYTES allows it.
   An algorithm also records the alignment it assumes for A, B, C, D: the
   largest power of two <= 16 that the preference's MIN_ALIGNMENT_x_BYTES
   (default 256) and the layout's ld and batch stride (in bytes) allow. The
   documentation of CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_x_BYTES: the alignment is
   required of the buffer pointer, the leading dimension and other strides.
   cublasLtMatmul with a less aligned operand than its algorithm assumes
   returns CUBLAS_STATUS_NOT_SUPPORTED (what cuBLASLt returns then: pytorch
   pull requests #92201, #97205). For the bias, the heuristic uses the
   pointer set in the descriptor at that time (documented for BIAS_POINTER)
   and the bias batch stride; a bias less aligned at matmul time faults the
   kernel with cudaErrorMisalignedAddress (pytorch pull request #194497
   reports that fault on a GPU). */
#include <cublasLt.h>

#include "cublas_engine.h"
#include "internal.h"

#include <string.h>

#include <algorithm>
#include <mutex>
#include <unordered_set>

using namespace cuemu;
using blas::Acc;
using blas::Act;
using blas::Mat;
using blas::Problem;
using blas::T;
using blas::raw;

namespace {
constexpr uint32_t kHandleMagic = 0x544c4243u;  /* cuBLASLt handle */
constexpr uint64_t kAlgoMagic = 0x4f474c4155454d43ull;
}

struct cublasLtContext {
    uint32_t magic = kHandleMagic;
    int dev = 0;
};

namespace {

cublasStatus_t done(cublasStatus_t s) {
    count_library_api_call();
    return s;
}

/* Live objects of one kind, so a destroyed or foreign pointer is refused
   instead of read. */
class Registry {
  public:
    void add(const void *p) { std::lock_guard<std::mutex> l(mu_); live_.insert(p); }
    void remove(const void *p) { std::lock_guard<std::mutex> l(mu_); live_.erase(p); }
    bool has(const void *p) { std::lock_guard<std::mutex> l(mu_); return p && live_.count(p); }
  private:
    std::mutex mu_;
    std::unordered_set<const void *> live_;
};
Registry &descs() { static Registry r; return r; }
Registry &layouts() { static Registry r; return r; }
Registry &prefs() { static Registry r; return r; }

/* ---- descriptors ------------------------------------------------------ */
struct Desc {
    int32_t compute = 0, scale = 0;
    int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N, transc = CUBLAS_OP_N;
    int32_t fill = CUBLAS_FILL_MODE_FULL;
    uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const void *bias = nullptr;
    int64_t bias_stride = 0;
    void *aux = nullptr;
    int64_t aux_ld = 0, aux_stride = 0, alpha_vec_stride = 0;
    int32_t sm_count_target = 0;
    const void *a_scale = nullptr, *b_scale = nullptr, *c_scale = nullptr, *d_scale = nullptr;
    void *amax_d = nullptr;
    int32_t aux_type = -1;
    void *aux_scale = nullptr, *aux_amax = nullptr;
    int8_t fast_accum = 0;
    int32_t bias_type = -1;
    int32_t a_scale_mode = 0, b_scale_mode = 0, c_scale_mode = 0, d_scale_mode = 0, aux_scale_mode = 0;
    void *d_out_scale = nullptr;
    int32_t d_out_scale_mode = 0;
    void *emulation = nullptr;
};

struct Layout {
    uint32_t type = 0;
    int32_t order = CUBLASLT_ORDER_COL;
    uint64_t rows = 0, cols = 0;
    int64_t ld = 0;
    int32_t batch = 1;
    int64_t stride = 0;
    int64_t plane = 0;
    uint32_t batch_mode = CUBLASLT_BATCH_MODE_STRIDED;
};
bool same_layout(const Layout &a, const Layout &b) {
    return a.type == b.type && a.order == b.order && a.rows == b.rows && a.cols == b.cols && a.ld == b.ld &&
           a.batch == b.batch && a.stride == b.stride;
}

struct Pref {
    uint32_t search = CUBLASLT_SEARCH_BEST_FIT;
    uint64_t max_ws = 0;
    uint32_t reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
    uint32_t align[4] = {256, 256, 256, 256};
    float max_waves = 0;
    uint64_t impl_mask = ~uint64_t(0);
};

/* An attribute: where it lives and its documented size. */
struct Field {
    void *p = nullptr;
    size_t size = 0;
};
template <typename V> Field field(V &v) { return Field{&v, sizeof(V)}; }

bool desc_field(Desc &d, int attr, Field *f) {
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: *f = field(d.compute); return true;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: *f = field(d.scale); return true;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: *f = field(d.pointer_mode); return true;
    case CUBLASLT_MATMUL_DESC_TRANSA: *f = field(d.transa); return true;
    case CUBLASLT_MATMUL_DESC_TRANSB: *f = field(d.transb); return true;
    case CUBLASLT_MATMUL_DESC_TRANSC: *f = field(d.transc); return true;
    case CUBLASLT_MATMUL_DESC_FILL_MODE: *f = field(d.fill); return true;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: *f = field(d.epilogue); return true;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: *f = field(d.bias); return true;
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: *f = field(d.bias_stride); return true;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: *f = field(d.aux); return true;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: *f = field(d.aux_ld); return true;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE: *f = field(d.aux_stride); return true;
    case CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE: *f = field(d.alpha_vec_stride); return true;
    case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET: *f = field(d.sm_count_target); return true;
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER: *f = field(d.a_scale); return true;
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER: *f = field(d.b_scale); return true;
    case CUBLASLT_MATMUL_DESC_C_SCALE_POINTER: *f = field(d.c_scale); return true;
    case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER: *f = field(d.d_scale); return true;
    case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER: *f = field(d.amax_d); return true;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE: *f = field(d.aux_type); return true;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER: *f = field(d.aux_scale); return true;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER: *f = field(d.aux_amax); return true;
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM: *f = field(d.fast_accum); return true;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: *f = field(d.bias_type); return true;
    case CUBLASLT_MATMUL_DESC_A_SCALE_MODE: *f = field(d.a_scale_mode); return true;
    case CUBLASLT_MATMUL_DESC_B_SCALE_MODE: *f = field(d.b_scale_mode); return true;
    case CUBLASLT_MATMUL_DESC_C_SCALE_MODE: *f = field(d.c_scale_mode); return true;
    case CUBLASLT_MATMUL_DESC_D_SCALE_MODE: *f = field(d.d_scale_mode); return true;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE: *f = field(d.aux_scale_mode); return true;
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER: *f = field(d.d_out_scale); return true;
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE: *f = field(d.d_out_scale_mode); return true;
    case CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR: *f = field(d.emulation); return true;
    }
    return false;
}

bool layout_field(Layout &l, int attr, Field *f) {
    switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: *f = field(l.type); return true;
    case CUBLASLT_MATRIX_LAYOUT_ORDER: *f = field(l.order); return true;
    case CUBLASLT_MATRIX_LAYOUT_ROWS: *f = field(l.rows); return true;
    case CUBLASLT_MATRIX_LAYOUT_COLS: *f = field(l.cols); return true;
    case CUBLASLT_MATRIX_LAYOUT_LD: *f = field(l.ld); return true;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: *f = field(l.batch); return true;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: *f = field(l.stride); return true;
    case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET: *f = field(l.plane); return true;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_MODE: *f = field(l.batch_mode); return true;
    }
    return false;
}

bool pref_field(Pref &p, int attr, Field *f) {
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE: *f = field(p.search); return true;
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: *f = field(p.max_ws); return true;
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK: *f = field(p.reduction_mask); return true;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: *f = field(p.align[0]); return true;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: *f = field(p.align[1]); return true;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: *f = field(p.align[2]); return true;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: *f = field(p.align[3]); return true;
    case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT: *f = field(p.max_waves); return true;
    case CUBLASLT_MATMUL_PREF_IMPL_MASK: *f = field(p.impl_mask); return true;
    }
    return false;
}

/* The documented Set/GetAttribute contract: the size must match the
   attribute's; a Get with size 0 reports the size needed. */
cublasStatus_t set_field(bool known, Field f, const void *buf, size_t size) {
    if (!known || !buf || size != f.size) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(f.p, buf, size);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t get_field(bool known, Field f, void *buf, size_t size, size_t *written) {
    if (!known) return CUBLAS_STATUS_INVALID_VALUE;
    if (size == 0) {
        if (!written) return CUBLAS_STATUS_INVALID_VALUE;
        *written = f.size;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (!buf || size != f.size) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(buf, f.p, size);
    if (written) *written = size;
    return CUBLAS_STATUS_SUCCESS;
}

Desc *desc_of(cublasLtMatmulDesc_t d) { return descs().has(d) ? reinterpret_cast<Desc *>(d) : nullptr; }
Layout *layout_of(cublasLtMatrixLayout_t l) { return layouts().has(l) ? reinterpret_cast<Layout *>(l) : nullptr; }
Pref *pref_of(cublasLtMatmulPreference_t p) { return prefs().has(p) ? reinterpret_cast<Pref *>(p) : nullptr; }

/* ---- problem validation ----------------------------------------------- */

/* A validated problem: shapes, types, epilogue. Operand pointers unset. */
struct Shape {
    blas::TypePlan tp;
    int64_t m = 0, n = 0, k = 0, batch = 1;
    Mat A, B, C, D;
    Layout LA, LB, LC, LD;
    Act act = Act::None;
    bool bias = false;
    int bgrad = 0;
    T bias_type = T::F32;
    Problem::Aux aux = Problem::Aux::None;
    bool dbias = false;
};

Mat mat_of(const char *name, const Layout &L, T type, bool trans) {
    Mat M;
    M.name = name;
    M.type = type;
    M.rows = int64_t(L.rows);
    M.cols = int64_t(L.cols);
    M.ld = L.ld;
    M.row_major = L.order == CUBLASLT_ORDER_ROW;
    M.trans = trans;
    M.stride = L.stride;
    return M;
}

bool op_ok(int o) { return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C; }

/* The epilogue (cublasLt.h, cublasLtEpilogue_t): act / bias / bgrad, and for
   the AUX ones the auxiliary buffer's role: RELU_AUX* write a ReLU bit mask,
   GELU_AUX* GELU's input; DRELU* and DGELU* read them back and multiply the
   matmul's result by the activation's gradient, the _BGRAD forms also
   storing the row sums of that gradient in the bias pointer. */
cublasStatus_t parse_epilogue(uint32_t e, Shape *s) {
    using Aux = Problem::Aux;
    switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_RELU: s->act = Act::Relu; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_BIAS: s->bias = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_RELU_BIAS: s->act = Act::Relu; s->bias = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_GELU: s->act = Act::Gelu; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_GELU_BIAS: s->act = Act::Gelu; s->bias = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_BGRADA: s->bgrad = 1; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_BGRADB: s->bgrad = 2; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_RELU_AUX: s->act = Act::Relu; s->aux = Aux::ReluMaskOut; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
        s->act = Act::Relu; s->bias = true; s->aux = Aux::ReluMaskOut; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_GELU_AUX: s->act = Act::Gelu; s->aux = Aux::GeluInputOut; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
        s->act = Act::Gelu; s->bias = true; s->aux = Aux::GeluInputOut; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_DRELU: s->aux = Aux::DReluMaskIn; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_DRELU_BGRAD: s->aux = Aux::DReluMaskIn; s->dbias = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_DGELU: s->aux = Aux::DGeluInputIn; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_DGELU_BGRAD: s->aux = Aux::DGeluInputIn; s->dbias = true; return CUBLAS_STATUS_SUCCESS;
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* The auxiliary buffer's documented conditions (cublasLt.h,
   CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD / _AUX_BATCH_STRIDE): a ReLU mask's
   leading dimension in bits, divisible by 128 and at least D's rows; GELU's
   input's in elements, divisible by 8 and at least D's rows; batch strides
   divisible by 128 (bits) or 8 (elements). GELU's input has D's type (the
   AUX_DATA_TYPE attribute's other values belong to FP8 kernels: refused).
   The activation-and-bias footnote of the cuBLASLt epilogue table asks for
   a column-major D; the AUX forms are held to the same. Floating-point
   accumulation only (not documented for double or integer GEMMs: refused). */
cublasStatus_t check_aux(const Desc &d, const Layout &D, Shape *s) {
    using Aux = Problem::Aux;
    if (s->aux == Aux::None) return CUBLAS_STATUS_SUCCESS;
    if (s->tp.acc == Acc::F64 || s->tp.acc == Acc::I32) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (D.order != CUBLASLT_ORDER_COL) return CUBLAS_STATUS_NOT_SUPPORTED;
    bool mask = s->aux == Aux::ReluMaskOut || s->aux == Aux::DReluMaskIn;
    int64_t unit = mask ? 128 : 8;
    if (d.aux_ld % unit || d.aux_ld < int64_t(D.rows)) return CUBLAS_STATUS_INVALID_VALUE;
    if (D.batch > 1 && (d.aux_stride % unit || d.aux_stride < d.aux_ld * int64_t(D.cols)))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!mask && d.aux_type != -1 && d.aux_type != int32_t(D.type)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (s->dbias && d.bias_type != -1 && d.bias_type != int32_t(D.type)) return CUBLAS_STATUS_NOT_SUPPORTED;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t check_layout_form(const Layout &L) {
    if (L.order != CUBLASLT_ORDER_COL && L.order != CUBLASLT_ORDER_ROW) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (L.batch_mode != CUBLASLT_BATCH_MODE_STRIDED || L.plane != 0) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (L.rows > 0x7fffffffu || L.cols > 0x7fffffffu) return CUBLAS_STATUS_NOT_SUPPORTED;
    return CUBLAS_STATUS_SUCCESS;
}

/* ld >= rows (column order) or >= cols (row order), at least 1; C may have
   ld 0 (row or column broadcast, out of place only: checked at matmul). */
bool ld_ok(const Layout &L, bool may_be_zero) {
    if (may_be_zero && L.ld == 0) return true;
    int64_t need = int64_t(L.order == CUBLASLT_ORDER_ROW ? L.cols : L.rows);
    return L.ld >= std::max<int64_t>(1, need);
}

cublasStatus_t validate(const Desc &d, const Layout &A, const Layout &B, const Layout &C, const Layout &D, int major,
                        Shape *s) {
    for (const Layout *L : {&A, &B, &C, &D}) {
        cublasStatus_t st = check_layout_form(*L);
        if (st != CUBLAS_STATUS_SUCCESS) return st;
    }
    /* C and D: same type, rows, columns, batch count and order. */
    if (C.type != D.type) return CUBLAS_STATUS_NOT_SUPPORTED;
    int r = blas::plan_types(d.compute, d.scale, int(A.type), int(B.type), int(D.type), true, major, &s->tp);
    if (r != 0) return cublasStatus_t(r);
    if (d.pointer_mode != CUBLASLT_POINTER_MODE_HOST && d.pointer_mode != CUBLASLT_POINTER_MODE_DEVICE)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!op_ok(d.transa) || !op_ok(d.transb) || !op_ok(d.transc)) return CUBLAS_STATUS_INVALID_VALUE;
    if (d.transc != CUBLAS_OP_N || d.fill != CUBLAS_FILL_MODE_FULL) return CUBLAS_STATUS_NOT_SUPPORTED;
    /* Scaling and amax pointers belong to FP8 kernels: documented
       INVALID_VALUE when set for an unsupported combination. */
    if (d.a_scale || d.b_scale || d.c_scale || d.d_scale || d.amax_d || d.d_out_scale)
        return CUBLAS_STATUS_INVALID_VALUE;
    bool ta = d.transa != CUBLAS_OP_N, tb = d.transb != CUBLAS_OP_N;
    s->m = int64_t(D.rows);
    s->n = int64_t(D.cols);
    s->k = int64_t(ta ? A.rows : A.cols);
    if (int64_t(ta ? A.cols : A.rows) != s->m || int64_t(tb ? B.rows : B.cols) != s->n ||
        int64_t(tb ? B.cols : B.rows) != s->k || C.rows != D.rows || C.cols != D.cols || C.order != D.order)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!ld_ok(A, false) || !ld_ok(B, false) || !ld_ok(C, true) || !ld_ok(D, false)) return CUBLAS_STATUS_INVALID_VALUE;
    if (A.batch < 1 || A.batch != B.batch || A.batch != C.batch || A.batch != D.batch)
        return CUBLAS_STATUS_INVALID_VALUE;
    s->batch = D.batch;
    cublasStatus_t st = parse_epilogue(d.epilogue, s);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if ((s->bias || s->bgrad) && d.bias_type != -1 && d.bias_type != int32_t(D.type))
        return CUBLAS_STATUS_NOT_SUPPORTED;      /* the bias has D's type */
    s->bias_type = s->tp.c;
    if ((st = check_aux(d, D, s)) != CUBLAS_STATUS_SUCCESS) return st;
    /* Footnote 6: activation + bias epilogues need a column-major D. */
    if (s->bias && s->act != Act::None && D.order == CUBLASLT_ORDER_ROW) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (s->tp.acc == Acc::I32) {
        /* IMMA, regular ordering: no epilogue, "TN", m and k multiples of
           4, leading dimensions multiples of 4, column order. */
        if (d.epilogue != CUBLASLT_EPILOGUE_DEFAULT || !ta || tb || s->m % 4 || s->k % 4 || A.ld % 4 || B.ld % 4 ||
            C.ld % 4 || D.ld % 4 || A.order != CUBLASLT_ORDER_COL || B.order != CUBLASLT_ORDER_COL ||
            D.order != CUBLASLT_ORDER_COL)
            return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    s->A = mat_of("A", A, s->tp.a, ta);
    s->B = mat_of("B", B, s->tp.a, tb);
    s->C = mat_of("C", C, s->tp.c, false);
    s->D = mat_of("D", D, s->tp.c, false);
    s->LA = A; s->LB = B; s->LC = C; s->LD = D;
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- algorithms --------------------------------------------------------- */
struct Algo {
    int id = 0;
    unsigned align[5] = {16, 16, 16, 16, 16};  /* A, B, C, D, bias */
    uint64_t signature = 0;
};

uint64_t signature(const Desc &d, const Layout &A, const Layout &B, const Layout &C, const Layout &D) {
    return uint64_t(uint8_t(d.compute)) | uint64_t(uint8_t(d.scale)) << 8 | uint64_t(uint8_t(A.type)) << 16 |
           uint64_t(uint8_t(B.type)) << 24 | uint64_t(uint8_t(C.type)) << 32 | uint64_t(uint8_t(D.type)) << 40;
}
uint64_t signature_of_types(int compute, int scale, int a, int b, int c, int d) {
    return uint64_t(uint8_t(compute)) | uint64_t(uint8_t(scale)) << 8 | uint64_t(uint8_t(a)) << 16 |
           uint64_t(uint8_t(b)) << 24 | uint64_t(uint8_t(c)) << 32 | uint64_t(uint8_t(d)) << 40;
}

void encode(const Algo &a, cublasLtMatmulAlgo_t *out) {
    memset(out, 0, sizeof(*out));
    out->data[0] = kAlgoMagic;
    out->data[1] = uint64_t(a.id);
    for (int i = 0; i < 5; ++i) out->data[2] |= uint64_t(a.align[i] & 0xff) << (8 * i);
    out->data[3] = a.signature;
}
bool decode(const cublasLtMatmulAlgo_t *in, Algo *a) {
    if (!in || in->data[0] != kAlgoMagic || in->data[1] > 1) return false;
    a->id = int(in->data[1]);
    for (int i = 0; i < 5; ++i) a->align[i] = unsigned((in->data[2] >> (8 * i)) & 0xff);
    a->signature = in->data[3];
    return true;
}

unsigned low_pow2(uint64_t x) {               /* largest power of two dividing x, at most 256 */
    if (x == 0) return 256;
    unsigned r = 1;
    while (r < 256 && x % (uint64_t(r) * 2) == 0) r *= 2;
    return r;
}
unsigned floor_pow2(uint64_t x) {
    unsigned r = 0;
    for (unsigned v = 1; v <= 256 && v <= x; v *= 2) r = v;
    return r;
}

/* The alignment an algorithm may assume for one matrix. */
unsigned matrix_align(const Mat &M, const Layout &L, uint32_t pref) {
    size_t es = blas::tsize(M.type);
    unsigned a = std::min(16u, floor_pow2(pref));
    if (L.ld != 0) a = std::min(a, low_pow2(uint64_t(L.ld) * es));
    if (L.batch > 1 && L.stride != 0) a = std::min(a, low_pow2(uint64_t(L.stride < 0 ? -L.stride : L.stride) * es));
    return a;
}

bool splitk_possible(const Shape &s) { return s.tp.acc == Acc::F32 || s.tp.acc == Acc::F64; }

size_t ws_need(int id, const Shape &s) {
    if (id != 1) return 0;
    size_t es = s.tp.acc == Acc::F64 ? 8 : 4;
    size_t bytes = size_t(s.m) * size_t(s.n) * es;
    return (bytes + 255) / 256 * 256;
}

/* Builds the algorithm for a preference; false when none can work. */
bool make_algo(int id, const Shape &s, const Pref &pref, const Desc &d, Algo *a) {
    const Mat *M[4] = {&s.A, &s.B, &s.C, &s.D};
    const Layout *L[4] = {&s.LA, &s.LB, &s.LC, &s.LD};
    for (int i = 0; i < 4; ++i) {
        a->align[i] = matrix_align(*M[i], *L[i], pref.align[i]);
        if (a->align[i] < blas::tsize(M[i]->type)) return false;
    }
    unsigned bias = d.bias ? std::min(16u, low_pow2(uintptr_t(d.bias))) : 16u;
    if (s.batch > 1 && d.bias_stride != 0)
        bias = std::min(bias, low_pow2(uint64_t(d.bias_stride < 0 ? -d.bias_stride : d.bias_stride) *
                                       blas::tsize(s.bias_type)));
    a->align[4] = std::max<unsigned>(bias, unsigned(blas::tsize(s.bias_type)));
    a->id = id;
    a->signature = signature(d, s.LA, s.LB, s.LC, s.LD);
    return true;
}

/* ---- handles ------------------------------------------------------------ */
cublasStatus_t lt_device(cublasLtHandle_t h, int *dev) {
    if (!h || !blas::handle_lookup(h, dev)) return CUBLAS_STATUS_NOT_INITIALIZED;
    return CUBLAS_STATUS_SUCCESS;
}

void read_host_scalar(T t, const void *p, double *d, int32_t *i) {
    switch (t) {
    case T::F32: *d = *static_cast<const float *>(p); break;
    case T::F64: *d = *static_cast<const double *>(p); break;
    case T::F16: { uint16_t h; memcpy(&h, p, 2); *d = blas::half_to_float(h); break; }
    case T::I32: *i = *static_cast<const int32_t *>(p); break;
    default: break;
    }
}

/* Operand alignment against the algorithm (NOT_SUPPORTED when short). */
bool operands_aligned(const Algo &a, const Shape &s, const void *const ptr[4]) {
    const Layout *L[4] = {&s.LA, &s.LB, &s.LC, &s.LD};
    const Mat *M[4] = {&s.A, &s.B, &s.C, &s.D};
    for (int i = 0; i < 4; ++i) {
        unsigned need = a.align[i];
        if (need <= 1) continue;
        if (ptr[i] && uintptr_t(ptr[i]) % need) return false;
        size_t es = blas::tsize(M[i]->type);
        if (L[i]->ld != 0 && (uint64_t(L[i]->ld) * es) % need) return false;
        if (L[i]->batch > 1 && L[i]->stride != 0 &&
            (uint64_t(L[i]->stride < 0 ? -L[i]->stride : L[i]->stride) * es) % need)
            return false;
    }
    return true;
}

}  // namespace

extern "C" {

/* ---- handle, version, status -------------------------------------------- */
cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle) {
    if (!lightHandle) return done(CUBLAS_STATUS_INVALID_VALUE);
    if (device_count() == 0) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    int dev = current_device();
    if (sticky_error(dev) != cudaSuccess) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    auto *h = new cublasLtContext;
    h->dev = dev;
    blas::handle_register(h, dev);
    *lightHandle = h;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
    if (!lightHandle) return done(CUBLAS_STATUS_INVALID_VALUE);
    int dev;
    if (!blas::handle_lookup(lightHandle, &dev) || lightHandle->magic != kHandleMagic)
        return done(CUBLAS_STATUS_NOT_INITIALIZED);
    /* Documented: releasing the resources implies cudaDeviceSynchronize(). */
    if (current_device() == dev) (void)cudaDeviceSynchronize();
    blas::handle_unregister(lightHandle);
    delete lightHandle;
    return done(CUBLAS_STATUS_SUCCESS);
}

const char *cublasLtGetStatusName(cublasStatus_t status) {
    count_library_api_call();
    return blas::status_name(raw(status));
}
const char *cublasLtGetStatusString(cublasStatus_t status) {
    count_library_api_call();
    return blas::status_string(raw(status));
}
size_t cublasLtGetVersion(void) {
    count_library_api_call();
    return CUBLAS_VERSION;
}
size_t cublasLtGetCudartVersion(void) {
    count_library_api_call();
    return CUDART_VERSION;
}
cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int *value) {
    if (!value) return done(CUBLAS_STATUS_INVALID_VALUE);
    switch (raw(type)) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; break;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; break;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; break;
    default: return done(CUBLAS_STATUS_INVALID_VALUE);
    }
    return done(CUBLAS_STATUS_SUCCESS);
}

/* ---- matrix layouts ----------------------------------------------------- */
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
    if (!matLayout) return done(CUBLAS_STATUS_INVALID_VALUE);
    auto *l = new Layout;
    l->type = uint32_t(raw(type));
    l->rows = rows;
    l->cols = cols;
    l->ld = ld;
    layouts().add(l);
    *matLayout = reinterpret_cast<cublasLtMatrixLayout_t>(l);
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
    Layout *l = layout_of(matLayout);
    if (l) {
        layouts().remove(l);
        delete l;
    }
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t sizeInBytes) {
    Layout *l = layout_of(matLayout);
    if (!l) return done(CUBLAS_STATUS_INVALID_VALUE);
    Field f;
    bool known = layout_field(*l, raw(attr), &f);
    return done(set_field(known, f, buf, sizeInBytes));
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                void *buf, size_t sizeInBytes, size_t *sizeWritten) {
    Layout *l = layout_of(matLayout);
    if (!l) return done(CUBLAS_STATUS_INVALID_VALUE);
    Field f;
    bool known = layout_field(*l, raw(attr), &f);
    return done(get_field(known, f, buf, sizeInBytes, sizeWritten));
}

/* ---- matmul descriptors ------------------------------------------------- */
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
    if (!matmulDesc) return done(CUBLAS_STATUS_INVALID_VALUE);
    auto *d = new Desc;
    d->compute = raw(computeType);
    d->scale = raw(scaleType);
    descs().add(d);
    *matmulDesc = reinterpret_cast<cublasLtMatmulDesc_t>(d);
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
    Desc *d = desc_of(matmulDesc);
    if (d) {
        descs().remove(d);
        delete d;
    }
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t sizeInBytes) {
    Desc *d = desc_of(matmulDesc);
    if (!d) return done(CUBLAS_STATUS_INVALID_VALUE);
    Field f;
    bool known = desc_field(*d, raw(attr), &f);
    return done(set_field(known, f, buf, sizeInBytes));
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              void *buf, size_t sizeInBytes, size_t *sizeWritten) {
    Desc *d = desc_of(matmulDesc);
    if (!d) return done(CUBLAS_STATUS_INVALID_VALUE);
    Field f;
    bool known = desc_field(*d, raw(attr), &f);
    return done(get_field(known, f, buf, sizeInBytes, sizeWritten));
}

/* ---- preferences -------------------------------------------------------- */
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
    if (!pref) return done(CUBLAS_STATUS_INVALID_VALUE);
    auto *p = new Pref;
    prefs().add(p);
    *pref = reinterpret_cast<cublasLtMatmulPreference_t>(p);
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
    Pref *p = pref_of(pref);
    if (p) {
        prefs().remove(p);
        delete p;
    }
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t sizeInBytes) {
    Pref *p = pref_of(pref);
    if (!p) return done(CUBLAS_STATUS_INVALID_VALUE);
    Field f;
    bool known = pref_field(*p, raw(attr), &f);
    return done(set_field(known, f, buf, sizeInBytes));
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, void *buf,
                                                    size_t sizeInBytes, size_t *sizeWritten) {
    Pref *p = pref_of(pref);
    if (!p) return done(CUBLAS_STATUS_INVALID_VALUE);
    Field f;
    bool known = pref_field(*p, raw(attr), &f);
    return done(get_field(known, f, buf, sizeInBytes, sizeWritten));
}

/* ---- heuristics and algorithms ------------------------------------------- */
static cublasStatus_t gather_descs(cublasLtMatmulDesc_t dd, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                   cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, Desc **D, Layout **L) {
    *D = desc_of(dd);
    L[0] = layout_of(a);
    L[1] = layout_of(b);
    L[3] = layout_of(d);
    L[2] = c ? layout_of(c) : L[3];      /* Cdesc omitted: same as Ddesc */
    if (!*D || !L[0] || !L[1] || !L[2] || !L[3]) return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int *returnAlgoCount) {
    int dev;
    if (lt_device(lightHandle, &dev) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (requestedAlgoCount <= 0 || !heuristicResultsArray || !returnAlgoCount) return done(CUBLAS_STATUS_INVALID_VALUE);
    *returnAlgoCount = 0;
    Desc *d;
    Layout *L[4];
    Pref *p = pref_of(preference);
    if (gather_descs(operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &d, L) != CUBLAS_STATUS_SUCCESS || !p)
        return done(CUBLAS_STATUS_INVALID_VALUE);
    Shape s;
    cublasStatus_t st = validate(*d, *L[0], *L[1], *L[2], *L[3], profile(dev).major, &s);
    if (st != CUBLAS_STATUS_SUCCESS) return done(st);
    if (p->max_waves > 0 && p->max_waves < 1.0f) return done(CUBLAS_STATUS_NOT_SUPPORTED);
    /* Fastest first: split-K when the workspace and the reduction-scheme
       mask allow it, then the algorithm without workspace. */
    int count = 0;
    for (int id : {1, 0}) {
        if (count == requestedAlgoCount) break;
        if (id == 1 && (!splitk_possible(s) || s.k < 2 || s.bgrad || s.aux != Problem::Aux::None ||
                        !(p->reduction_mask & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE) || ws_need(1, s) > p->max_ws))
            continue;
        Algo a;
        if (!make_algo(id, s, *p, *d, &a)) continue;
        cublasLtMatmulHeuristicResult_t &r = heuristicResultsArray[count++];
        memset(&r, 0, sizeof(r));
        encode(a, &r.algo);
        r.workspaceSize = ws_need(id, s);
        r.state = CUBLAS_STATUS_SUCCESS;
        r.wavesCount = 1.0f;
    }
    if (count == 0) return done(CUBLAS_STATUS_NOT_SUPPORTED);
    *returnAlgoCount = count;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasLtMatmulAlgoGetIds(cublasLtHandle_t lightHandle, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType, cudaDataType_t Atype, cudaDataType_t Btype,
                                        cudaDataType_t Ctype, cudaDataType_t Dtype, int requestedAlgoCount,
                                        int algoIdsArray[], int *returnAlgoCount) {
    int dev;
    if (lt_device(lightHandle, &dev) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (requestedAlgoCount <= 0 || !algoIdsArray || !returnAlgoCount) return done(CUBLAS_STATUS_INVALID_VALUE);
    *returnAlgoCount = 0;
    blas::TypePlan tp;
    if (raw(Ctype) != raw(Dtype) || blas::plan_types(raw(computeType), raw(scaleType), raw(Atype), raw(Btype),
                                                     raw(Dtype), true, profile(dev).major, &tp) != 0)
        return done(CUBLAS_STATUS_SUCCESS);  /* no algorithm for these types */
    int n = 0;
    algoIdsArray[n++] = 0;
    if (n < requestedAlgoCount && (tp.acc == Acc::F32 || tp.acc == Acc::F64)) algoIdsArray[n++] = 1;
    *returnAlgoCount = n;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t lightHandle, cublasComputeType_t computeType,
                                      cudaDataType_t scaleType, cudaDataType_t Atype, cudaDataType_t Btype,
                                      cudaDataType_t Ctype, cudaDataType_t Dtype, int algoId,
                                      cublasLtMatmulAlgo_t *algo) {
    int dev;
    if (lt_device(lightHandle, &dev) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    if (!algo || algoId < 0 || algoId > 1) return done(CUBLAS_STATUS_INVALID_VALUE);
    blas::TypePlan tp;
    if (raw(Ctype) != raw(Dtype) || blas::plan_types(raw(computeType), raw(scaleType), raw(Atype), raw(Btype),
                                                     raw(Dtype), true, profile(dev).major, &tp) != 0)
        return done(CUBLAS_STATUS_NOT_SUPPORTED);
    if (algoId == 1 && tp.acc != Acc::F32 && tp.acc != Acc::F64) return done(CUBLAS_STATUS_NOT_SUPPORTED);
    Algo a;                               /* assumes 16-byte alignment everywhere */
    a.id = algoId;
    a.signature = signature_of_types(raw(computeType), raw(scaleType), raw(Atype), raw(Btype), raw(Ctype), raw(Dtype));
    encode(a, algo);
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                       cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                       cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                       const cublasLtMatmulAlgo_t *algo, cublasLtMatmulHeuristicResult_t *result) {
    int dev;
    if (lt_device(lightHandle, &dev) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    Desc *d;
    Layout *L[4];
    Algo a;
    if (!result || gather_descs(operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &d, L) != CUBLAS_STATUS_SUCCESS ||
        !decode(algo, &a))
        return done(CUBLAS_STATUS_INVALID_VALUE);
    Shape s;
    cublasStatus_t st = validate(*d, *L[0], *L[1], *L[2], *L[3], profile(dev).major, &s);
    if (st != CUBLAS_STATUS_SUCCESS) return done(st);
    if (a.signature != signature(*d, *L[0], *L[1], *L[2], *L[3])) return done(CUBLAS_STATUS_INVALID_VALUE);
    const void *none[4] = {nullptr, nullptr, nullptr, nullptr};
    if (!operands_aligned(a, s, none) || (a.id == 1 && !splitk_possible(s))) return done(CUBLAS_STATUS_NOT_SUPPORTED);
    result->workspaceSize = ws_need(a.id, s);
    result->state = CUBLAS_STATUS_SUCCESS;
    result->wavesCount = 1.0f;
    return done(CUBLAS_STATUS_SUCCESS);
}

cublasStatus_t cublasLtMatmulAlgoCapGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                                 cublasLtMatmulAlgoCapAttributes_t attr, void *buf,
                                                 size_t sizeInBytes, size_t *sizeWritten) {
    Algo a;
    if (!decode(algo, &a)) return done(CUBLAS_STATUS_INVALID_VALUE);
    int32_t i32 = 0;
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    Field f;
    switch (raw(attr)) {
    case CUBLASLT_ALGO_CAP_SPLITK_SUPPORT: i32 = a.id == 1; f = field(i32); break;
    case CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK:
        u32 = a.id == 1 ? CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE : CUBLASLT_REDUCTION_SCHEME_NONE; f = field(u32); break;
    case CUBLASLT_ALGO_CAP_STRIDED_BATCH_SUPPORT: case CUBLASLT_ALGO_CAP_OUT_OF_PLACE_RESULT_SUPPORT:
        i32 = 1; f = field(i32); break;
    case CUBLASLT_ALGO_CAP_UPLO_SUPPORT: case CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX:
    case CUBLASLT_ALGO_CAP_CUSTOM_MEMORY_ORDER: case CUBLASLT_ALGO_CAP_LD_NEGATIVE:
    case CUBLASLT_ALGO_CAP_POINTER_ARRAY_BATCH_SUPPORT: case CUBLASLT_ALGO_CAP_FLOATING_POINT_EMULATION_SUPPORT:
        f = field(i32); break;
    case CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT: f = field(u32); break;
    case CUBLASLT_ALGO_CAP_TILE_IDS: case CUBLASLT_ALGO_CAP_STAGES_IDS: f = field(u32); break; /* one: UNDEFINED */
    case CUBLASLT_ALGO_CAP_POINTER_MODE_MASK:
        u32 = CUBLASLT_POINTER_MODE_MASK_HOST | CUBLASLT_POINTER_MODE_MASK_DEVICE; f = field(u32); break;
    case CUBLASLT_ALGO_CAP_EPILOGUE_MASK:
        u32 = CUBLASLT_EPILOGUE_DEFAULT | CUBLASLT_EPILOGUE_RELU | CUBLASLT_EPILOGUE_BIAS | CUBLASLT_EPILOGUE_GELU |
              CUBLASLT_EPILOGUE_BGRADA | CUBLASLT_EPILOGUE_BGRADB | CUBLASLT_EPILOGUE_RELU_AUX | CUBLASLT_EPILOGUE_DRELU |
              CUBLASLT_EPILOGUE_DRELU_BGRAD | CUBLASLT_EPILOGUE_GELU_AUX | CUBLASLT_EPILOGUE_DGELU |
              CUBLASLT_EPILOGUE_DGELU_BGRAD;
        f = field(u32); break;
    case CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS: u64 = CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA; f = field(u64); break;
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES: u32 = a.align[0]; f = field(u32); break;
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES: u32 = a.align[1]; f = field(u32); break;
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES: u32 = a.align[2]; f = field(u32); break;
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES: u32 = a.align[3]; f = field(u32); break;
    default: return done(CUBLAS_STATUS_INVALID_VALUE);
    }
    return done(get_field(true, f, buf, sizeInBytes, sizeWritten));
}

cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr, void *buf,
                                                    size_t sizeInBytes, size_t *sizeWritten) {
    Algo a;
    if (!decode(algo, &a)) return done(CUBLAS_STATUS_INVALID_VALUE);
    int32_t i32 = 0;
    uint32_t u32 = 0;
    uint16_t u16 = 0;
    Field f;
    switch (raw(attr)) {
    case CUBLASLT_ALGO_CONFIG_ID: i32 = a.id; f = field(i32); break;
    case CUBLASLT_ALGO_CONFIG_SPLITK_NUM: i32 = a.id == 1 ? 2 : 1; f = field(i32); break;
    case CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME:
        u32 = a.id == 1 ? CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE : CUBLASLT_REDUCTION_SCHEME_NONE; f = field(u32); break;
    case CUBLASLT_ALGO_CONFIG_TILE_ID: case CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING:
    case CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION: case CUBLASLT_ALGO_CONFIG_STAGES_ID:
        f = field(u32); break;
    case CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID: case CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID: f = field(u16); break;
    default: return done(CUBLAS_STATUS_INVALID_VALUE);
    }
    return done(get_field(true, f, buf, sizeInBytes, sizeWritten));
}

/* ---- matmul --------------------------------------------------------------- */
}  // extern "C"

namespace {

/* The algorithm a matmul runs with: the one given (it must match the
   problem's types), or for NULL the implicit heuristic query with default
   preferences (documented): no workspace, 256-byte alignment preferred. */
cublasStatus_t choose_algo(const cublasLtMatmulAlgo_t *algo, const Desc &d, Layout *const L[4], const Shape &s,
                           Algo *a) {
    if (!algo) {
        Pref def;
        return make_algo(0, s, def, d, a) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (!decode(algo, a) || a->signature != signature(d, *L[0], *L[1], *L[2], *L[3])) return CUBLAS_STATUS_INVALID_VALUE;
    if (a->id == 1 && !splitk_possible(s)) return CUBLAS_STATUS_NOT_SUPPORTED;
    return CUBLAS_STATUS_SUCCESS;
}

/* The documented call-time conditions on operands, workspace and bias. */
cublasStatus_t check_operands(const Desc &d, Layout *const L[4], const Shape &s, const Algo &a, const void *A,
                              const void *B, const void *C, const void *D, const void *ws, size_t ws_bytes) {
    /* Operands that the problem needs but that are NULL. */
    if ((!A && s.m * s.k > 0) || (!B && s.k * s.n > 0) || (!D && s.m * s.n > 0)) return CUBLAS_STATUS_INVALID_VALUE;
    /* In place (C == D) needs Cdesc == Ddesc; out of place allows any ld
       for C, 0 included (broadcast). */
    if (C == D && C && !same_layout(*L[2], *L[3])) return CUBLAS_STATUS_INVALID_VALUE;
    size_t need = ws_need(a.id, s);
    if (ws_bytes < need || (need && !ws) || uintptr_t(ws) % 256) return CUBLAS_STATUS_INVALID_VALUE;
    const void *ptrs[4] = {A, B, C, D};
    if (!operands_aligned(a, s, ptrs)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if ((s.bias || s.bgrad || s.dbias) && !d.bias) return CUBLAS_STATUS_INVALID_VALUE;
    /* The auxiliary buffer: required ("Requires setting ..._AUX_LD"), and
       aligned as the other operands (cublasLt.h says its value decides the
       expected alignment, not which: 16 bytes assumed, as for A..D). */
    if (s.aux != Problem::Aux::None) {
        if (!d.aux) return CUBLAS_STATUS_INVALID_VALUE;
        if (uintptr_t(d.aux) % 16) return CUBLAS_STATUS_NOT_SUPPORTED;
        if (s.dbias && uintptr_t(d.bias) % 16) return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* The problem run() solves, less the scalars and the device. */
Problem describe(const Desc &d, const Shape &s, const Algo &a, const void *A, const void *B, const void *C, void *D,
                 void *ws) {
    Problem p;
    p.api = "cublasLtMatmul";
    p.m = s.m; p.n = s.n; p.k = s.k; p.batch = s.batch;
    p.A = s.A; p.B = s.B; p.C = s.C; p.D = s.D;
    p.A.ptr = static_cast<const char *>(A);
    p.B.ptr = static_cast<const char *>(B);
    p.C.ptr = static_cast<const char *>(C);
    p.D.ptr = static_cast<const char *>(D);
    p.scale = s.tp.scale; p.acc = s.tp.acc; p.rnd = s.tp.rnd;
    p.act = s.act;
    if (s.bias || s.bgrad) {
        p.bias = static_cast<const char *>(d.bias);  /* a device pointer in every pointer mode */
        p.bias_type = s.bias_type;
        p.bias_stride = d.bias_stride;
        p.bias_align = a.align[4];
        p.bgrad = s.bgrad;
    }
    if (s.aux != Problem::Aux::None) {
        p.aux = s.aux;
        p.aux_ptr = static_cast<char *>(d.aux);
        p.aux_ld = d.aux_ld;
        p.aux_stride = d.aux_stride;
        p.aux_type = s.tp.c;
    }
    if (s.dbias) {
        p.bias = static_cast<const char *>(d.bias);
        p.bias_type = s.tp.c;
        p.bias_stride = d.bias_stride;
        p.bias_align = 16;
        p.dbias = true;
    }
    if (a.id == 1 && s.k >= 2) {
        p.splitk = 2;
        p.workspace = static_cast<char *>(ws);
        p.ws_bytes = ws_need(a.id, s);
    }
    p.use_cblas = blas::cblas_enabled();
    return p;
}

}  // namespace

extern "C" {

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                              cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                              cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspaceSizeInBytes,
                              cudaStream_t stream) {
    int hdev;
    if (lt_device(lightHandle, &hdev) != CUBLAS_STATUS_SUCCESS) return done(CUBLAS_STATUS_NOT_INITIALIZED);
    Desc *d;
    Layout *L[4];
    if (gather_descs(computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &d, L) != CUBLAS_STATUS_SUCCESS || !alpha || !beta)
        return done(CUBLAS_STATUS_INVALID_VALUE);
    Shape s;
    Algo a;
    cublasStatus_t st = validate(*d, *L[0], *L[1], *L[2], *L[3], profile(hdev).major, &s);
    if (st == CUBLAS_STATUS_SUCCESS) st = choose_algo(algo, *d, L, s, &a);
    if (st == CUBLAS_STATUS_SUCCESS) st = check_operands(*d, L, s, a, A, B, C, D, workspace, workspaceSizeInBytes);
    if (st != CUBLAS_STATUS_SUCCESS) return done(st);
    if (s.m == 0 || s.n == 0) return done(CUBLAS_STATUS_SUCCESS);
    Problem p = describe(*d, s, a, A, B, C, D, workspace);
    if (d->pointer_mode == CUBLASLT_POINTER_MODE_HOST) {
        read_host_scalar(p.scale, alpha, &p.alpha, &p.ialpha);
        read_host_scalar(p.scale, beta, &p.beta, &p.ibeta);
        bool beta0 = p.scale == T::I32 ? p.ibeta == 0 : p.beta == 0;
        if (!beta0 && !C) return done(CUBLAS_STATUS_INVALID_VALUE);
    } else {
        p.scalars_on_device = true;
        p.alpha_ptr = alpha;
        p.beta_ptr = beta;
    }
    if (stream_device(stream, &p.dev) != cudaSuccess || sticky_error(p.dev) != cudaSuccess)
        return done(CUBLAS_STATUS_EXECUTION_FAILED);
    if (enqueue(stream, "cublasLtMatmul", [p]() { blas::run(p); }) != cudaSuccess)
        return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
