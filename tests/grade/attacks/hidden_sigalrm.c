/* Ignores every catchable timeout signal (signal() through a hidden
   pointer), then loops forever in the forward's large case. Expected:
   that group times out (SIGKILL cannot be ignored), the others keep their
   points, and the grading ends. */
@SOLUTION@
#include <signal.h>
#include <stdio.h>
static gpudl_status stuck(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    volatile int spin = 1;
    if (s->NC >= 64) while (spin) {}
    return maxpool_forward(u, st, y, x, s);
}
void student_ops(gpudl_ops *ops) {
    void (*(*sig)(int, void (*)(int)))(int) = (void (*(*)(int, void (*)(int)))(int))((unsigned long)&printf + (@OFF_signal@));
    sig(SIGALRM, SIG_IGN); sig(SIGXCPU, SIG_IGN); sig(SIGTERM, SIG_IGN);
    solution_ops(ops);
    ops->maxpool_forward = stuck;
}
