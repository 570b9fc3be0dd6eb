/* The solution, but each GEMM first asks for 20 GB of device memory; when
   it gets them it fails the call. Expected: full marks (the grader caps
   the emulated device's memory, so the cudaMalloc fails, as on a full GPU). */
@SOLUTION@
static gpudl_status gemm_greedy(void *user, void *stream, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                                const float *A, const float *B, float beta, float *C) {
    void *p = NULL;
    if (cudaMalloc(&p, (size_t)20 << 30) == cudaSuccess) { cudaFree(p); return GPUDL_ERR_CUDA; }
    (void)cudaGetLastError();
    return sgemm(user, stream, ta, tb, M, N, K, alpha, A, B, beta, C);
}
extern "C" void student_ops(gpudl_ops *ops) { solution_ops(ops); ops->gemm = gemm_greedy; }
