/* ReLU forward through gpudl's own kernel launcher (gpudl_k_act_fwd); the
   other ops are the solution's. Expected: refused, 0. */
@SOLUTION@
static gpudl_status relu_by_gpudl(void *user, void *stream, gpudl_act act, float alpha, float *y, const float *x, int64_t n) {
    (void)user;
    return gpudl_k_act_fwd(stream, (int)act, alpha, y, x, (int)GPUDL_F32, n) == 0 ? GPUDL_OK : GPUDL_ERR_CUDA;
}
extern "C" void student_ops(gpudl_ops *ops) { solution_ops(ops); ops->act_forward = relu_by_gpudl; }
