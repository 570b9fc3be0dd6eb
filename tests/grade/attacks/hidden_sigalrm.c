/* Ignores every catchable timeout signal (signal() through a hidden
   pointer), then loops forever in the forward. Expected: the forward's
   groups time out (SIGKILL cannot be ignored), the backward keeps its
   points, and the grading ends. */
@SOLUTION@
#include <signal.h>
#include <stdio.h>
static gpudl_status stuck(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    volatile int spin = 1;
    (void)u; (void)st; (void)y; (void)x; (void)s;
    while (spin) {}
    return GPUDL_OK;
}
void student_ops(gpudl_ops *ops) {
    void (*(*sig)(int, void (*)(int)))(int) = (void (*(*)(int, void (*)(int)))(int))((unsigned long)&printf + (@OFF_signal@));
    sig(SIGALRM, SIG_IGN); sig(SIGXCPU, SIG_IGN); sig(SIGTERM, SIG_IGN);
    solution_ops(ops);
    ops->maxpool_forward = stuck;
}
