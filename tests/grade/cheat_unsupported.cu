/* cheat_unsupported.cu - for tests/grade_test.sh: a GEMM that hands every
   call back to gpudl (GPUDL_ERR_UNSUPPORTED), so that gpudl's own GEMM
   would do the work. It must score 0, not gpudl's full marks. */
#include "gpudl.h"

static gpudl_status lazy_gemm(void *user, void *stream, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                              const float *A, const float *B, float beta, float *C) {
    (void)user; (void)stream; (void)trans_a; (void)trans_b; (void)M; (void)N; (void)K;
    (void)alpha; (void)A; (void)B; (void)beta; (void)C;
    return GPUDL_ERR_UNSUPPORTED;
}

extern "C" void student_ops(gpudl_ops *ops) { ops->gemm = lazy_gemm; }
