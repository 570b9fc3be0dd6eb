/* The solution, except that the forward loops forever on the large case
   (64 planes or more). Expected: "maxpool forward: large" lost to the
   timeout; every other group keeps its points. */
@SOLUTION@
static gpudl_status fwd_loops_when_large(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    volatile int spin = 1;
    if (s->NC >= 64) while (spin) {}
    return maxpool_forward(u, st, y, x, s);
}
void student_ops(gpudl_ops *ops) { solution_ops(ops); ops->maxpool_forward = fwd_loops_when_large; }
