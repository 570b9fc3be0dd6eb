/* tc_declines.cu - for tests/grade_test.sh: a gemm_f16 that hands every
   call back to gpudl (GPUDL_ERR_UNSUPPORTED). It scores 0, and its
   training run is gpudl's own FP16 path (cuBLAS, or the emulated
   device's): the accuracy the solution's run must reach. */
#include "gpudl.h"

static gpudl_status declines(void *user, void *stream, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                             const uint16_t *A, const uint16_t *B, float beta, float *C) {
    (void)user; (void)stream; (void)trans_a; (void)trans_b; (void)M; (void)N; (void)K;
    (void)alpha; (void)A; (void)B; (void)beta; (void)C;
    return GPUDL_ERR_UNSUPPORTED;
}

extern "C" void student_ops(gpudl_ops *ops) { ops->gemm_f16 = declines; }
