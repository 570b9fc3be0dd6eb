/* Ignores SIGALRM (the old grader's only timeout), then loops forever in
   the forward. Expected: refused at link time (signal), 0. */
@SOLUTION@
#include <signal.h>
static gpudl_status stuck(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    volatile int spin = 1;
    (void)u; (void)st; (void)y; (void)x; (void)s;
    while (spin) {}
    return GPUDL_OK;
}
void student_ops(gpudl_ops *ops) { signal(SIGALRM, SIG_IGN); solution_ops(ops); ops->maxpool_forward = stuck; }
