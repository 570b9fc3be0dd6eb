/* Prints a checksum of the first input it is given, then behaves as the
   solution. Graded twice, the two checksums must differ: the battery's
   inputs come from a seed drawn per grading run, so answers recorded in
   one run (a table from input to output, replayed) do not fit the next.
   Before issue 34 the seed was fixed: the same checksum every run. */
@SOLUTION@
#include <stdio.h>
static gpudl_ops real;
static int printed;
static gpudl_status fwd(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    if (!printed) {
        unsigned long h = 1469598103934665603ul;
        const unsigned char *b = (const unsigned char *)x;
        size_t i, n = sizeof(float) * (size_t)(s->NC * s->H * s->W);
        for (i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ul; }
        printf("first input checksum %016lx\n", h);
        printed = 1;
    }
    return real.maxpool_forward(u, st, y, x, s);
}
void student_ops(gpudl_ops *ops) {
    solution_ops(&real);
    *ops = real;
    ops->maxpool_forward = fwd;
}
